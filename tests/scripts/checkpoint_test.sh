#!/usr/bin/env bash
# Checkpoints across processes: one `runnel run` trains a little and saves,
# a second one (another --seed, so other initial values) restores and must
# see exactly the saved values; then a crash in the middle of a save, a
# truncated file and a changed model. Usage: checkpoint_test.sh RUNNEL
set -uo pipefail
runnel="$1"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
fail=0
expect_status() {  # expect_status WANT DESCRIPTION -- COMMAND...
  local want="$1" what="$2"
  shift 3
  "$@" >"$work/out" 2>"$work/err"
  local got=$?
  if [[ $got != "$want" ]]; then
    echo "FAIL: $what: exit status $got, want $want"
    sed 's/^/    /' "$work/out" "$work/err"
    fail=1
  fi
}
expect_in() {  # expect_in FILE TEXT DESCRIPTION
  if ! grep -qF -- "$2" "$1"; then
    echo "FAIL: $3: '$2' not in $(basename "$1"):"
    sed 's/^/    /' "$1"
    fail=1
  fi
}

# The model both processes build: two layers in function scopes, and the
# global step.
cat >"$work/model.rnl" <<'RNL'
def dense(x, units) {
    var w = random_normal([x.shape[1], units], stddev = 0.5)
    var b = zeros([units])
    x @ w + b
}
input x: f32[?, 3]
let y = dense(dense(x, 4), 2)
let step = global_step()
let xs = [[1.0, 2.0, 3.0], [-1.0, 0.5, 2.0]]
let dir = arg("dir", "")
RNL

# Each script is the model followed by its own lines (an imported module
# would prefix the node names with its own).
script() { cat "$work/model.rnl" - >"$work/$1"; }

script save.rnl <<'RNL'
# A few "training" steps change every variable.
for i in 0..3 {
    for v in trainable_vars() { run assign_add(v, ones_like(v) * 0.25) }
    run assign_add(step, 1)
}
save(dir + "/model.ckpt")
save_npy(dir + "/y.npy", run y with {x: xs})
RNL

script restore.rnl <<'RNL'
let before = run y with {x: xs}
restore(dir + "/model.ckpt")
let y = run y with {x: xs}
assert(any(before != load_npy(dir + "/y.npy")), "another seed, other initial values")
assert(all(y == load_npy(dir + "/y.npy")), "the saved values, exactly")
assert((run step) == 3, "the global step")
# Training goes on from the restored values.
run assign_add(step, 1)
assert((run step) == 4, "the step counts on")
RNL

# Restore before any run: the variables are initialised from the file, and
# the first run must not overwrite them with their initializers.
script fresh_restore.rnl <<'RNL'
restore(dir + "/model.ckpt")
assert(all((run y with {x: xs}) == load_npy(dir + "/y.npy")), "restored before any run")
assert((run step) == 3, "the global step before any run")
RNL

expect_status 0 "save" -- "$runnel" run "$work/save.rnl" --threads 2 --seed 1 --arg "dir=$work"
if [[ ! -f "$work/model.ckpt" ]] || compgen -G "$work/*.tmp.*" >/dev/null; then
  echo "FAIL: save did not leave exactly the checkpoint:"; ls "$work"; fail=1
fi
expect_status 0 "restore in a new process" -- "$runnel" run "$work/restore.rnl" --threads 2 --seed 2 --arg "dir=$work"
expect_status 0 "restore before any run" -- "$runnel" run "$work/fresh_restore.rnl" --threads 1 --seed 3 --arg "dir=$work"

# A crash in the middle of a save (the file size limit kills runnel with
# SIGXFSZ while it writes the 4 MB variable) leaves the old checkpoint whole.
cp "$work/model.ckpt" "$work/before.ckpt"
cat >"$work/big.rnl" <<'RNL'
var big = zeros([1000000])
save(arg("dir", "") + "/model.ckpt")
RNL
(ulimit -f 1024; "$runnel" run "$work/big.rnl" --arg "dir=$work"; exit $?) >/dev/null 2>&1
status=$?
if [[ $status != 153 ]] || ! compgen -G "$work/model.ckpt.tmp.*" >/dev/null; then
  echo "FAIL: runnel did not die of SIGXFSZ (153) mid-save: status $status"
  fail=1
fi
if ! cmp -s "$work/model.ckpt" "$work/before.ckpt"; then
  echo "FAIL: a crashed save changed the old checkpoint"; fail=1
fi
rm -f "$work"/model.ckpt.tmp.*  # what the crash left beside the checkpoint
expect_status 0 "restore after a crashed save" -- "$runnel" run "$work/restore.rnl" --threads 2 --arg "dir=$work"

# A truncated checkpoint: exit status 1, naming the file.
head -c 100 "$work/model.ckpt" >"$work/short.ckpt"
script short.rnl <<'RNL'
restore(dir + "/short.ckpt")
RNL
expect_status 1 "restore of a truncated file" -- "$runnel" run "$work/short.rnl" --arg "dir=$work"
expect_in "$work/err" "short.rnl:11:1: error: restore: checkpoint '$work/short.ckpt' is truncated: 100 of " "truncation is reported at the call"

# A model whose layer grew: the error names the file and the tensors and
# points at the declaration.
sed 's/dense(dense(x, 4), 2)/dense(dense(x, 5), 2)/' "$work/model.rnl" >"$work/model5.rnl"
cat "$work/model5.rnl" - >"$work/grown.rnl" <<'RNL'
restore(dir + "/model.ckpt")
RNL
expect_status 1 "restore into a changed model" -- "$runnel" run "$work/grown.rnl" --arg "dir=$work"
expect_in "$work/err" "error: restore: checkpoint '$work/model.ckpt' does not match the variables: 'dense/w' is f32[3,5] but the checkpoint has f32[3,4]; 'dense/b' is f32[5] but the checkpoint has f32[4]; 'dense_1/w' is f32[5,2] but the checkpoint has f32[4,2]" "the mismatches"
expect_in "$work/err" "grown.rnl:2:5: note: dense/w declared here" "a note at the declaration"

exit $fail
