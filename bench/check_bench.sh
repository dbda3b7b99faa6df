#!/usr/bin/env bash
# `runnel check` benchmark: generates (in a temp dir) a 10,000-line Runnel
# script that builds a large graph (layers of matmul/relu, var and state
# declarations, inputs, arithmetic) and times `runnel check` on it, median
# of several runs. Peer, in the same invocation: Python's own parser
# (ast.parse, timed inside one /usr/bin/python3 process) on a Python file of
# the same structure, line for line. The peer only parses; runnel check
# parses, evaluates the script and builds and shape-checks the graph.
#
#   bash bench/check_bench.sh BUILD_DIR [--runs 5] [--lines 10000]
set -u
if [[ $# -lt 1 || ! -d "$1" ]]; then
  echo "usage: bash bench/check_bench.sh BUILD_DIR [--runs N] [--lines N]" >&2
  exit 2
fi
build_dir=$1
shift
runs=5
lines=10000
while [[ $# -gt 0 ]]; do
  case $1 in
    --runs) runs=$2; shift 2 ;;
    --lines) lines=$2; shift 2 ;;
    *) shift ;;  # run_all.sh may pass benchmark arguments (--threads N)
  esac
done
runnel=$build_dir/runnel
[[ -x "$runnel" ]] || runnel=$build_dir/interpreter/runnel
if [[ ! -x "$runnel" ]]; then
  echo "no runnel binary in $build_dir (build it first)" >&2
  exit 1
fi
here=$(cd "$(dirname "$0")" && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
/usr/bin/python3 "$here/gen_check_scripts.py" "$tmp/big" "$lines" || exit 1

exec /usr/bin/python3 - "$runnel" "$tmp/big" "$runs" <<'PY'
import statistics, subprocess, sys, time

runnel, prefix, runs = sys.argv[1], sys.argv[2], int(sys.argv[3])
rnl, py = prefix + ".rnl", prefix + ".py"
nlines = sum(1 for _ in open(rnl))

times = []
for _ in range(runs):
    t0 = time.perf_counter()
    r = subprocess.run([runnel, "check", rnl], stdout=subprocess.DEVNULL,
                       stderr=subprocess.PIPE, text=True)
    times.append((time.perf_counter() - t0) * 1e3)
    if r.returncode != 0:
        print(f"check: runnel check failed:\n{r.stderr[:2000]}", file=sys.stderr)
        sys.exit(1)
rt = statistics.median(times)

# Peer: Python's parser on the twin file, timed inside this process.
import ast
src = open(py).read()
ast.parse(src)
pts = []
for _ in range(max(runs, 5)):
    t0 = time.perf_counter()
    ast.parse(src)
    pts.append((time.perf_counter() - t0) * 1e3)
pt = statistics.median(pts)

print(f"check: runnel check {nlines} lines {rt:.0f} ms "
      f"({nlines / rt * 1e3:,.0f} lines/s, whole process: parse + graph build + "
      f"shape check); python3 ast.parse {nlines} lines {pt:.1f} ms "
      f"({nlines / pt * 1e3:,.0f} lines/s, parse only); ratio {rt / pt:.1f}x time")
print(f"  (median of {runs}; aim: under 300 ms: "
      f"{'met' if rt < 300 else 'NOT met'})")
PY
