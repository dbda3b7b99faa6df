#!/usr/bin/env bash
# Startup benchmark: `runnel run` on a one-line script, against the peers
# `python -c 'import torch'` (OpenMP passive) and `python -c 'import
# tensorflow'` (TF_CPP_MIN_LOG_LEVEL=2), both from the benchmark
# environment's python (bench/peer.py), alternating rounds in the same
# invocation. Reports each side's median wall time, the median of the
# per-round ratios against the faster peer (recorded for
# docs/performance.md), the peak RSS (max resident set, per process), and
# the floor: starting an empty process (/bin/true).
#
#   bash bench/startup_bench.sh BUILD_DIR [--runs 20] [--rounds 6]
#            [--threads 2]
#
# Wall time and max RSS come from os.wait4 in a /usr/bin/python3 driver
# (per-child rusage).
set -u
if [[ $# -lt 1 || ! -d "$1" ]]; then
  echo "usage: bash bench/startup_bench.sh BUILD_DIR [--runs N]" >&2
  exit 2
fi
build_dir=$1
shift
runs=20
rounds=6
threads=2
while [[ $# -gt 0 ]]; do
  case $1 in
    --runs) runs=$2; shift 2 ;;
    --rounds) rounds=$2; shift 2 ;;
    --threads) threads=$2; shift 2 ;;
    *) shift ;;
  esac
done
runnel=$build_dir/runnel
[[ -x "$runnel" ]] || runnel=$build_dir/interpreter/runnel
if [[ ! -x "$runnel" ]]; then
  echo "no runnel binary in $build_dir (build it first)" >&2
  exit 1
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
echo 'print(1 + 2)' > "$tmp/one.rnl"

here=$(cd "$(dirname "$0")" && pwd)
exec /usr/bin/python3 - "$here" "$runnel" "$tmp/one.rnl" "$runs" "$rounds" \
  "$threads" <<'PY'
import os, statistics, subprocess, sys, time

sys.path.insert(0, sys.argv[1])
import peer

runnel, script = sys.argv[2], sys.argv[3]
runs, rounds, threads = (int(a) for a in sys.argv[4:7])
IMPORTS = {"PyTorch": "import torch", "TensorFlow": "import tensorflow"}
rss = dict.fromkeys(["runnel"] + list(IMPORTS), 0)


def measure(cmd, n, env=None):
    """Median wall seconds over n runs of cmd; records the peak RSS (KB)."""
    walls, peak = [], 0
    for _ in range(n):
        t0 = time.perf_counter()
        p = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, env=env)
        _, status, ru = os.wait4(p.pid, 0)
        walls.append(time.perf_counter() - t0)
        if os.waitstatus_to_exitcode(status) != 0:
            sys.exit(f"startup: {' '.join(cmd)} failed")
        peak = max(peak, ru.ru_maxrss)
    return statistics.median(walls), peak


def runnel_side(_):
    t, rss["runnel"] = measure([runnel, "run", script], runs)
    return {"startup": t}


def import_peer(name, config):
    """A peer whose startup is `python -c '<its import>'`."""
    cmd = [peer.PYTHON, "-c", IMPORTS[name]]

    def side(chosen):
        t, rss[name] = measure(cmd, max(3, runs // 4), chosen.environ())
        return {"startup": t}
    # One warm-up, so the page cache holds the libraries.
    if subprocess.run(cmd, env=config.environ()).returncode != 0:
        sys.exit(f"startup: {name} unavailable under {peer.PYTHON}")
    return peer.Peer(name, side, [config])


subprocess.run([runnel, "run", script], stdout=subprocess.DEVNULL)
peers = [import_peer("PyTorch", peer.torch_configs(threads)[0]),
         import_peer("TensorFlow",
                     peer.Config({"TF_CPP_MIN_LOG_LEVEL": "2"}))]
ours, _ = peer.compare(
    "startup", threads, runnel_side, peers, rounds,
    {"startup": "startup: runnel run print(1 + 2) vs python -c 'import "
                "torch' / 'import tensorflow'"}, unit="start")
floor = peer.spawn_floor()
print(f"  peak RSS: runnel {rss['runnel'] / 1024:.1f} MB, " + ", ".join(
    f"python -c '{IMPORTS[n]}' {rss[n] / 1024:.0f} MB (ratio "
    f"{rss['runnel'] / rss[n]:.3f})" for n in IMPORTS))
print(f"  floor: starting an empty process (/bin/true) "
      f"{peer.fmt_time(floor)}")
rt = statistics.median(ours["startup"]) * 1e3
print(f"  ({runs} runnel runs per round; aim: under 20 ms and 30 MB: "
      f"{'met' if rt < 20 and rss['runnel'] / 1024 < 30 else 'NOT met'})")
PY
