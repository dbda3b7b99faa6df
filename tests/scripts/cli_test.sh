#!/usr/bin/env bash
# The `runnel` command line: help, version, usage errors, check, graph and
# metrics. Usage: cli_test.sh RUNNEL
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
    sed 's/^/    /' "$work/err"
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

expect_status 0 "--help" -- "$runnel" --help
expect_in "$work/out" "runnel run FILE" "--help prints usage"
expect_status 0 "--version" -- "$runnel" --version
# The version is the language reference's (docs/language.md).
expect_in "$work/out" "runnel 0.2" "--version"
expect_status 2 "no file" -- "$runnel" run
expect_status 2 "unknown command" -- "$runnel" frobnicate
expect_status 2 "unknown option" -- "$runnel" run x.rnl --frob
expect_status 2 "bad seed" -- "$runnel" run x.rnl --seed minus
expect_status 2 "bad --arg" -- "$runnel" run x.rnl --arg novalue
expect_status 2 "missing script" -- "$runnel" run "$work/none.rnl"
expect_status 0 "the REPL on empty input" -- "$runnel" </dev/null
printf '1 + 2\n' >"$work/repl_in"
expect_status 0 "the REPL on piped input" -- "$runnel" <"$work/repl_in"
expect_in "$work/out" "3" "the piped REPL prints an expression's value"

# summary(): a table of the trainable vars and the totals.
cat >"$work/summary.rnl" <<'RNL'
import nn
input x: f32[?, 4]
let y = nn.dense(nn.dense(x, 3), 2, bias = false)
state count = 0
assert(summary() == 4 * 3 + 3 + 3 * 2, "summary() gives the parameter count")
RNL
expect_status 0 "summary()" -- "$runnel" run "$work/summary.rnl"
expect_in "$work/out" "name       shape  dtype  params  bytes" "summary's header"
expect_in "$work/out" "dense/w    [4,3]  f32        12     48" "summary's first var"
expect_in "$work/out" "dense/b    [3]    f32         3     12" "summary's second var"
expect_in "$work/out" "dense_1/w  [3,2]  f32         6     24" "summary's third var"
expect_in "$work/out" "total: 3 trainable vars, 21 params, 84 bytes" "summary's totals"

cat >"$work/model.rnl" <<'RNL'
input x: f32[?, 3]
var w = ones([3, 2])
let h = relu(x @ w)
let loss = mean(h)
for step in 0..1000000 {
    let l = run loss with {x: [[1.0, 2.0, 3.0]]}
    print("step", step, l)
    report(loss = l, step = step)
}
RNL
expect_status 0 "check" -- "$runnel" check "$work/model.rnl"
if [[ -s "$work/out" ]]; then
  echo "FAIL: check printed output (it runs nothing)"
  fail=1
fi
expect_status 0 "graph to stdout" -- "$runnel" graph "$work/model.rnl"
expect_in "$work/out" "digraph runnel" "graph writes DOT"
expect_in "$work/out" "matmul" "the graph has the matmul"
expect_status 0 "graph -o dot" -- "$runnel" graph "$work/model.rnl" -o "$work/g.dot"
expect_in "$work/g.dot" "digraph runnel" "graph -o writes the file"
# -o names what it writes: DOT text (.dot, .gv) or a picture; DOT text is
# never written into a file named as a picture of another format.
expect_status 1 "graph -o of an unknown format" -- "$runnel" graph "$work/model.rnl" -o "$work/g.txt"
expect_in "$work/err" "name it .dot or .gv for DOT text, or .svg, .png or .pdf" "graph -o names the formats"
if [[ -e "$work/g.txt" ]]; then
  echo "FAIL: graph -o g.txt wrote a file"
  fail=1
fi
rm -f "$work/g.pdf"
"$runnel" graph "$work/model.rnl" -o "$work/g.pdf" >/dev/null 2>&1
if [[ -e "$work/g.pdf" ]] && ! head -c 5 "$work/g.pdf" | grep -q '%PDF-'; then
  echo "FAIL: graph -o g.pdf wrote something that is not a PDF"
  fail=1
fi

# Mistyped options and --arg names are usage errors that suggest the name.
expect_status 2 "a mistyped option" -- "$runnel" run "$work/model.rnl" --metric "$work/m.jsonl"
expect_in "$work/err" "did you mean '--metrics'?" "the closest option"
cat >"$work/args.rnl" <<'RNL'
let steps = arg("steps", 3)
print("steps", steps)
RNL
expect_status 2 "an --arg the script does not read" -- "$runnel" run "$work/args.rnl" --arg step=10
expect_in "$work/err" "--arg step=10: the script reads no arg('step'); did you mean 'steps'?" "the unread --arg named"
if [[ -s "$work/out" ]]; then
  echo "FAIL: the script ran although an --arg is unread"
  fail=1
fi
expect_status 2 "an --arg of a script without args" -- "$runnel" check "$work/model.rnl" --arg steps=1
expect_in "$work/err" "it reads no --arg at all" "a script that reads none"
expect_status 0 "an --arg the script reads" -- "$runnel" run "$work/args.rnl" --arg steps=10
expect_in "$work/out" "steps 10" "the --arg read"
cat >"$work/dyn_args.rnl" <<'RNL'
let name = "steps"
print(arg(name, 1))
RNL
expect_status 0 "an arg() whose name is a value" -- "$runnel" run "$work/dyn_args.rnl" --arg other=1

if command -v dot >/dev/null; then
  expect_status 0 "graph -o svg" -- "$runnel" graph "$work/model.rnl" -o "$work/g.svg"
  expect_in "$work/g.svg" "<svg" "SVG written by dot"
fi

# Graph views: --placed colours by device (one here); --expand must name a
# scope of the graph. Bad --devices and --trace-runs are usage errors.
expect_status 0 "graph --placed" -- "$runnel" graph "$work/model.rnl" --placed
expect_in "$work/out" "on /cpu:0" "--placed names the device"
expect_status 2 "bad --devices" -- "$runnel" run "$work/model.rnl" --devices cpu=2,gpu=two
expect_in "$work/err" "--devices needs cpu=N" "--devices explains itself"
# More GPUs than are visible (none on CI; this test expects fewer than 64).
expect_status 2 "too many GPUs" -- "$runnel" run "$work/model.rnl" --devices gpu=64
expect_in "$work/err" "asked for 64 GPUs but" "--devices gpu=N says what is visible"
expect_status 2 "bad --gpu-memory" -- "$runnel" run "$work/model.rnl" --gpu-memory lots
expect_in "$work/err" "--gpu-memory needs a size" "--gpu-memory explains itself"
expect_status 2 "bad --trace-runs" -- "$runnel" run "$work/model.rnl" --trace-runs 5..2
expect_in "$work/err" "--trace-runs needs A..B" "--trace-runs explains itself"
expect_status 2 "graph --depth 0" -- "$runnel" graph "$work/model.rnl" --depth 0
expect_status 1 "graph --expand of no scope" -- "$runnel" graph "$work/model.rnl" --expand nope
expect_in "$work/err" "the graph has no scope 'nope'" "--expand names the missing scope"
expect_status 0 "graph --all" -- "$runnel" graph "$work/model.rnl" --all --depth 3

cat >"$work/metrics.rnl" <<'RNL'
for i in progress(0..3, "loop") {
    report(loss = 0.5 * i, name = "a")
}
RNL
expect_status 0 "metrics" -- "$runnel" run "$work/metrics.rnl" --metrics "$work/m.jsonl"
lines=$(wc -l <"$work/m.jsonl")
if [[ $lines != 3 ]]; then
  echo "FAIL: --metrics wrote $lines lines, want 3"
  fail=1
fi
expect_in "$work/m.jsonl" '"loss": 1' "metrics values"
expect_in "$work/m.jsonl" '"label": "loop"' "metrics name the progress bar"

# runnel plot: the metrics just written, as a gnuplot script and a picture.
cat >"$work/curves.rnl" <<'RNL'
for i in progress(0..3, "loop") {
    report(loss = 0.5 * i)
}
report(test_acc = 0.75)
RNL
expect_status 0 "metrics for plot" -- "$runnel" run "$work/curves.rnl" --metrics "$work/c.jsonl"
expect_status 0 "plot to stdout" -- "$runnel" plot "$work/c.jsonl"
expect_in "$work/out" 'set title "loss"' "plot writes a panel per metric"
expect_in "$work/out" 'set title "test_acc"' "plot draws the evaluation"
expect_status 0 "plot -o .gp" -- "$runnel" plot "$work/c.jsonl" -o "$work/c.gp"
expect_in "$work/c.gp" "linespoints" "the evaluation is drawn as points"
expect_status 2 "plot without a file" -- "$runnel" plot
expect_status 2 "plot with an unknown option" -- "$runnel" plot "$work/c.jsonl" --frob
expect_status 1 "plot to an unknown format" -- "$runnel" plot "$work/c.jsonl" -o "$work/c.pdf"
expect_in "$work/err" "name it .svg or .png" "plot names the formats"
expect_status 1 "plot of a log with a string metric" -- "$runnel" plot "$work/m.jsonl"
expect_in "$work/err" 'm.jsonl:1: error: metric "name" is not a number' "plot names the line"
if command -v gnuplot >/dev/null; then
  expect_status 0 "plot -o svg" -- "$runnel" plot "$work/c.jsonl" "$work/c.jsonl" -o "$work/c.svg"
  expect_in "$work/c.svg" "<svg" "SVG written by gnuplot"
  # Without gnuplot on PATH the error says what to install, and no file is left.
  rm -f "$work/none.svg"
  expect_status 1 "plot without gnuplot" -- env PATH=/nonexistent "$runnel" plot "$work/c.jsonl" -o "$work/none.svg"
  expect_in "$work/err" "needs gnuplot" "the missing gnuplot is named"
  if [[ -e "$work/none.svg" ]]; then
    echo "FAIL: plot without gnuplot left an output file"
    fail=1
  fi
fi

cat >"$work/bad.rnl" <<'RNL'
let a = (1 +
RNL
expect_status 2 "parse error" -- "$runnel" check "$work/bad.rnl"
cat >"$work/graph_error.rnl" <<'RNL'
input x: f32[2]
let y = x @ x
RNL
rm -f "$work/bad.dot"
expect_status 1 "graph of a bad script" -- "$runnel" graph "$work/graph_error.rnl" -o "$work/bad.dot"
if [[ -e "$work/bad.dot" ]]; then
  echo "FAIL: a failed graph command left an output file"
  fail=1
fi

# A directory where a script should be: an error naming it, exit 2.
mkdir -p "$work/dir.rnl"
for command in run check graph; do
  expect_status 2 "$command of a directory" -- "$runnel" "$command" "$work/dir.rnl"
  expect_in "$work/err" "$work/dir.rnl: cannot open: Is a directory" "$command of a directory"
done
printf ':load %s\n' "$work/dir.rnl" >"$work/repl_in"
expect_status 0 "the REPL's :load of a directory" -- "$runnel" <"$work/repl_in"
expect_in "$work/err" "$work/dir.rnl: cannot open: Is a directory" ":load of a directory"
printf 'import "dir.rnl" as d\n' >"$work/import_dir.rnl"
expect_status 1 "import of a directory" -- "$runnel" run "$work/import_dir.rnl"
expect_in "$work/err" 'cannot import "dir.rnl": ' "import of a directory"
expect_in "$work/err" "dir.rnl: cannot open: Is a directory" "import of a directory"

# A NUL byte in a script: the echoed line goes on past it, escaped, and the
# caret line follows.
printf 'let a = "x\0y" + \0 + 1\n' >"$work/nul.rnl"
expect_status 2 "a NUL byte" -- "$runnel" check "$work/nul.rnl"
expect_in "$work/err" '    1 | let a = "x<U+0000>y" + <U+0000> + 1' "a NUL byte is echoed escaped"
expect_in "$work/err" '      |                        ^~~~~~~~' "the caret under the NUL byte"

# A 100,000-character line is echoed as a window around the caret.
{
  printf 'let a = 1'
  for _ in $(seq 5000); do printf ' + 1 + 2 + 3 + 4 + 5'; done
  printf ' + $'
  for _ in $(seq 5000); do printf ' + 1 + 2 + 3 + 4 + 5'; done
  printf '\n'
} >"$work/long.rnl"
expect_status 2 "a long line" -- "$runnel" check "$work/long.rnl"
expect_in "$work/err" "long.rnl:1:100013: error: unexpected character '\$'" "a long line"
longest=$(awk '{ if (length($0) > n) n = length($0) } END { print n }' "$work/err")
if ((longest > 120)); then
  echo "FAIL: a long line is echoed $longest characters wide"
  fail=1
fi
caret_at=$(grep -F '^' "$work/err" | awk '{ print index($0, "^") }')
dollar_at=$(grep -F '| ...' "$work/err" | awk '{ print index($0, "$") }')
if [[ -z $caret_at || $caret_at != "$dollar_at" ]]; then
  echo "FAIL: the caret (column $caret_at) is not under the '\$' (column $dollar_at)"
  sed 's/^/    /' "$work/err"
  fail=1
fi

# Libraries a script does not use are not loaded (issue 32): the binary
# links neither gRPC (the cluster layer is the module runnel_cluster.so
# beside it) nor oneDNN and OpenMP (loaded at the first convolution or
# large product, kernels/cpu/onednn_loader.cc).
linked=$(ldd "$runnel" | grep -E 'libgrpc|libdnnl|libgomp|libssl|libOpenCL')
if [[ -n $linked ]]; then
  echo "FAIL: runnel links what a plain script does not use:"
  echo "$linked" | sed 's/^/    /'
  fail=1
fi
cat >"$work/conv.rnl" <<'RNL'
let x = ones([1, 4, 4, 1])
let w = ones([2, 2, 1, 1])
let y = conv2d(x, w, strides = [1, 1], padding = "VALID")
assert(all(y == 4.0), "a 2x2 window of ones sums to 4")
RNL
expect_status 0 "a convolution loads oneDNN" -- "$runnel" run "$work/conv.rnl"
# When it cannot load, the op that needed it fails at its line, saying why;
# what does not need it still runs.
mkdir "$work/broken"
: >"$work/broken/libdnnl.so.2"
expect_status 1 "oneDNN that does not load" -- \
  env LD_LIBRARY_PATH="$work/broken" "$runnel" run "$work/conv.rnl"
expect_in "$work/err" "conv.rnl:3:9: error: conv2d: oneDNN: cannot load libdnnl.so.2: $work/broken/libdnnl.so.2: file too short" \
  "oneDNN that does not load"
printf 'assert(1 + 2 == 3, "sums")\n' >"$work/sum.rnl"
expect_status 0 "a script without oneDNN" -- \
  env LD_LIBRARY_PATH="$work/broken" "$runnel" run "$work/sum.rnl"
# Without its module, the cluster commands say which file is missing.
mkdir "$work/bin"
cp "$runnel" "$work/bin/runnel"
expect_status 1 "runnel cluster without runnel_cluster.so" -- \
  "$work/bin/runnel" cluster "$work/sum.rnl" --workers 1
expect_in "$work/err" "cannot load the cluster layer: $work/bin/runnel_cluster.so: cannot open shared object file" \
  "runnel cluster without runnel_cluster.so"
expect_status 1 "runnel server without runnel_cluster.so" -- \
  "$work/bin/runnel" server --cluster "$work/c.json" --job ps --task 0
expect_in "$work/err" "error: cannot load the cluster layer: $work/bin/runnel_cluster.so" \
  "runnel server without runnel_cluster.so"
expect_status 0 "a script without runnel_cluster.so" -- \
  "$work/bin/runnel" run "$work/sum.rnl"
exit $fail
