#!/usr/bin/env bash
# Ctrl-C (SIGINT) during training: `runnel run` stops between steps, says
# "interrupted" where the script was and exits 1, and the checkpoint the
# script saved every few steps is whole: a fresh process restores it.
#
#   interrupt_test.sh RUNNEL
set -uo pipefail
runnel=$1
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$work"
cat > train.rnl <<'RNL'
var w = zeros([512, 512])
let step = (w += 1.0)
for i in 0..100000000 {
    run step
    if i % 20 == 0 { save("model.ckpt") }
}
RNL
cat > check.rnl <<'RNL'
var w = ones([512, 512])
restore("model.ckpt")
let v = run w
assert(v[0, 0] >= 1.0, "the restored step count")
assert(allclose(v, v[0, 0]), "every element from one step: no torn file")
print(v[0, 0])
RNL
fail() { echo "FAIL: $*"; cat err.txt 2>/dev/null; exit 1; }

"$runnel" run train.rnl --threads 2 2> err.txt &
pid=$!
for _ in $(seq 600); do
  [[ -f model.ckpt ]] && break
  sleep 0.1
done
[[ -f model.ckpt ]] || fail "no checkpoint after 60 s"
sleep 0.5
kill -INT "$pid"
for _ in $(seq 600); do
  kill -0 "$pid" 2>/dev/null || break
  sleep 0.1
done
if kill -0 "$pid" 2>/dev/null; then
  kill -KILL "$pid"
  fail "still running 60 s after Ctrl-C"
fi
wait "$pid"
status=$?
[[ $status -eq 1 ]] || fail "exit status $status, expected 1"
grep -q "train.rnl:[0-9]*:[0-9]*: error: interrupted" err.txt ||
  fail "no 'interrupted' diagnostic"
leftover=$(ls -A | grep -v -x -e train.rnl -e check.rnl -e model.ckpt -e err.txt)
[[ -z "$leftover" ]] || fail "files left behind: $leftover"
"$runnel" run check.rnl --threads 2 > out.txt 2>&1 || { cat out.txt; fail "restore"; }
echo "interrupted after $(cat out.txt) steps; checkpoint restored"
