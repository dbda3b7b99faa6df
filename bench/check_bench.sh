#!/usr/bin/env bash
# `runnel check` benchmark: generates (in a temp dir) a 10,000-line Runnel
# script that builds a large graph (layers of matmul/relu, var and state
# declarations, inputs, arithmetic) and times `runnel check` on it, median
# of several runs. Peer, alternating rounds in the same invocation: Python's
# own parser (ast.parse, timed inside one /usr/bin/python3 process, with its
# garbage collector on and off, the faster kept) on a Python file of the
# same structure, line for line. The peer only parses; runnel check parses,
# evaluates the script and builds and shape-checks the graph. The floor is
# starting an empty process (/bin/true), which runnel check's time includes.
#
#   bash bench/check_bench.sh BUILD_DIR [--runs 5] [--lines 10000]
#            [--rounds 6]
set -u
if [[ $# -lt 1 || ! -d "$1" ]]; then
  echo "usage: bash bench/check_bench.sh BUILD_DIR [--runs N] [--lines N]" >&2
  exit 2
fi
build_dir=$1
shift
runs=5
lines=10000
rounds=6
while [[ $# -gt 0 ]]; do
  case $1 in
    --runs) runs=$2; shift 2 ;;
    --rounds) rounds=$2; shift 2 ;;
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

exec /usr/bin/python3 - "$here" "$runnel" "$tmp/big" "$runs" "$rounds" <<'PY'
import statistics, subprocess, sys, time

sys.path.insert(0, sys.argv[1])
import peer

runnel, prefix = sys.argv[2], sys.argv[3]
runs, rounds = int(sys.argv[4]), int(sys.argv[5])
rnl, py = prefix + ".rnl", prefix + ".py"
nlines = sum(1 for _ in open(rnl))

# The peer: Python's parser on the twin file, timed in its own process.
PARSE = """
import ast, gc, statistics, sys, time
src = open(sys.argv[1]).read()
if "--no-gc" in sys.argv:
    gc.disable()
ast.parse(src)
t = []
for _ in range(int(sys.argv[2])):
    t0 = time.perf_counter()
    ast.parse(src)
    t.append(time.perf_counter() - t0)
print("RESULT check", statistics.median(t))
"""


def runnel_side(_):
    times = []
    for _ in range(runs):
        t0 = time.perf_counter()
        r = subprocess.run([runnel, "check", rnl], stdout=subprocess.DEVNULL,
                           stderr=subprocess.PIPE, text=True)
        times.append(time.perf_counter() - t0)
        if r.returncode != 0:
            sys.exit(f"check: runnel check failed:\n{r.stderr[:2000]}")
    return {"check": statistics.median(times)}


# Neither TensorFlow nor PyTorch checks a model before running it: the
# peer is Python's own parser.
parser = peer.Peer("ast.parse", [peer.PYTHON, "-c", PARSE, py, str(max(runs, 5))],
                   [peer.Config({}, (), "gc on"),
                    peer.Config({}, ("--no-gc",), "gc off")])
ours, theirs = peer.compare(
    "check", None, runnel_side, [parser], rounds,
    {"check": f"runnel check {nlines} lines (whole process: parse + graph "
              f"build + shape check) vs python3 ast.parse (parse only)"})
rt = statistics.median(ours["check"])
pt = statistics.median(theirs["ast.parse"]["check"])
print(f"  runnel {nlines / rt:,.0f} lines/s, ast.parse {nlines / pt:,.0f} "
      f"lines/s; floor: starting an empty process (/bin/true) "
      f"{peer.fmt_time(peer.spawn_floor())}")
print(f"  (median of {runs} per round; aim: under 300 ms: "
      f"{'met' if rt < 0.3 else 'NOT met'})")
PY
