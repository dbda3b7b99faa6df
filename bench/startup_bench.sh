#!/usr/bin/env bash
# Startup benchmark: `runnel run` on a one-line script, against the peer
# `python3 -c 'import torch'`, in the same invocation. Reports the median
# wall time of N runs and the peak RSS (max resident set, per process).
#
#   bash bench/startup_bench.sh BUILD_DIR [--runs 20]
#
# Wall time and max RSS come from os.wait4 in a /usr/bin/python3 driver
# (per-child rusage), so nothing needs to be installed.
set -u
if [[ $# -lt 1 || ! -d "$1" ]]; then
  echo "usage: bash bench/startup_bench.sh BUILD_DIR [--runs N]" >&2
  exit 2
fi
build_dir=$1
shift
runs=20
while [[ $# -gt 0 ]]; do
  case $1 in
    --runs) runs=$2; shift 2 ;;
    *) shift ;;  # run_all.sh may pass benchmark arguments (--threads N)
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

exec /usr/bin/python3 - "$runnel" "$tmp/one.rnl" "$runs" <<'PY'
import os, statistics, subprocess, sys, time

runnel, script, runs = sys.argv[1], sys.argv[2], int(sys.argv[3])

def measure(cmd, n):
    """Median wall ms and max peak RSS (KB) over n runs of cmd."""
    walls, rss = [], []
    for _ in range(n):
        t0 = time.perf_counter()
        p = subprocess.Popen(cmd, stdout=subprocess.DEVNULL)
        _, status, ru = os.wait4(p.pid, 0)
        walls.append((time.perf_counter() - t0) * 1e3)
        p.returncode = os.waitstatus_to_exitcode(status)
        if p.returncode != 0:
            return None
        rss.append(ru.ru_maxrss)
    return statistics.median(walls), max(rss)

# One warm-up each, so the page cache holds the binaries and libraries.
subprocess.run([runnel, "run", script], stdout=subprocess.DEVNULL)
r = measure([runnel, "run", script], runs)
if r is None:
    print(f"startup: runnel run failed on {script}", file=sys.stderr)
    sys.exit(1)
rt, rm = r
line = f"startup: runnel {rt:.1f} ms, {rm / 1024:.1f} MB peak"

peer_cmd = ["/usr/bin/python3", "-c", "import torch"]
if subprocess.run(peer_cmd, stdout=subprocess.DEVNULL,
                  stderr=subprocess.DEVNULL).returncode == 0:
    pt, pm = measure(peer_cmd, max(3, runs // 4))
    line += (f"; python3 -c 'import torch' {pt:.0f} ms, {pm / 1024:.0f} MB peak"
             f"; ratio {rt / pt:.3f}x time, {rm / pm:.3f}x memory")
else:
    line += "; peer unavailable (no torch under /usr/bin/python3)"
print(line)
print(f"  ({runs} runnel runs; aim: under 20 ms and 30 MB: "
      f"{'met' if rt < 20 and rm / 1024 < 30 else 'NOT met'})")
PY
