#!/usr/bin/env bash
# Ctrl-C (SIGINT) during training: `runnel run` stops between steps, says
# "interrupted" where the script was and exits 1, and the checkpoint the
# script saved every few steps is whole: a fresh process restores it.
# Then Ctrl-C while a run waits in a dequeue of an empty queue and a runner
# waits to enqueue into a full one (docs/queues.md): both stop at once.
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

# Runs SCRIPT until FILE exists (and, with BLOCKED, until its main thread
# sleeps: the run it started waits), sends Ctrl-C, and expects it to end
# within LIMIT tenths of a second, with status 1 and an "interrupted"
# diagnostic in the script.
interrupt() {
  local script=$1 file=$2 limit=$3 blocked=${4:-}
  "$runnel" run "$script" --threads 2 > out.txt 2> err.txt &
  local pid=$!
  ready() {
    [[ -s "$file" ]] || return 1
    [[ -z "$blocked" ]] && return 0
    # The main thread's state (/proc/PID/stat's third field): S once the
    # script, having printed, waits in its run.
    [[ "$(awk '{ print $3 }' "/proc/$pid/stat" 2>/dev/null)" == S ]]
  }
  for _ in $(seq 600); do
    ready && break
    sleep 0.1
  done
  ready || fail "$script: not ready ($file, blocked: ${blocked:-no}) after 60 s"
  kill -INT "$pid"
  for _ in $(seq "$limit"); do
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.1
  done
  if kill -0 "$pid" 2>/dev/null; then
    kill -KILL "$pid"
    fail "$script: still running $((limit / 10)) s after Ctrl-C"
  fi
  wait "$pid"
  local status=$?
  [[ $status -eq 1 ]] || fail "$script: exit status $status, expected 1"
  grep -q "$script:[0-9]*:[0-9]*: error: interrupted" err.txt ||
    fail "$script: no 'interrupted' diagnostic"
}

interrupt train.rnl model.ckpt 600
leftover=$(ls -A | grep -v -x -e train.rnl -e check.rnl -e model.ckpt -e err.txt -e out.txt)
[[ -z "$leftover" ]] || fail "files left behind: $leftover"
"$runnel" run check.rnl --threads 2 > out.txt 2>&1 || { cat out.txt; fail "restore"; }
echo "interrupted after $(cat out.txt) steps; checkpoint restored"

cat > blocked.rnl <<'RNL'
let empty = queue(capacity = 2, dtypes = f32, shapes = [])
let full = queue(capacity = 1, dtypes = f32, shapes = [])
runner(full, enqueue(full, 1.0), threads = 2)
print("waiting")
let v = run dequeue(empty)
RNL
interrupt blocked.rnl out.txt 50 blocked
grep -q "blocked.rnl:5:9: error: interrupted" err.txt ||
  fail "blocked.rnl: 'interrupted' not at the waiting run"
echo "a waiting dequeue and runner stopped within 5 s of Ctrl-C"
