#!/usr/bin/env bash
# Runs every benchmark binary (an executable named *_bench) in a build
# directory, one after another, passing any further arguments to each; then
# every script benchmark, bench/*_bench.sh (run with bash) and
# bench/*_bench.py (run with /usr/bin/python3), with the build directory as
# its first argument and the further arguments after it.
#
#   bash bench/run_all.sh build-release [--threads 2]
#
# Run from the repository root. Every benchmark compares with its peers,
# TensorFlow and PyTorch, the same way (bench/peer.py): each peer at its
# fastest configuration, printed; alternating rounds; medians, the median of
# the per-round ratios against the best peer, and the arithmetic floor where
# there is one. Every result is recorded, and docs/performance.md is written
# from them at the end (bench/report.py). Exits non-zero if any benchmark
# fails (the page lists the failed ones).
set -u
if [[ $# -lt 1 || ! -d "$1" ]]; then
  echo "usage: bash bench/run_all.sh BUILD_DIR [ARGS...]" >&2
  exit 2
fi
build_dir=$1
shift
status=0
found=0
failed=()
script_dir=$(cd "$(dirname "$0")" && pwd)
# The results, one JSON line a workload; a file given in the environment is
# appended to and kept (to write the page from a partial run).
if [[ -z ${RUNNEL_BENCH_RESULTS:-} ]]; then
  RUNNEL_BENCH_RESULTS=$(mktemp)
  trap 'rm -f "$RUNNEL_BENCH_RESULTS"' EXIT
fi
export RUNNEL_BENCH_RESULTS
for bench in "$build_dir"/*_bench; do
  [[ -f "$bench" && -x "$bench" ]] || continue
  found=1
  echo "== $(basename "$bench")"
  if ! "$bench" "$@"; then
    echo "!! $(basename "$bench") failed" >&2
    failed+=("$(basename "$bench")")
    status=1
  fi
done
if [[ $found -eq 0 ]]; then
  echo "no *_bench executables in $build_dir (build them first)" >&2
  status=1
fi
for bench in "$script_dir"/*_bench.sh "$script_dir"/*_bench.py; do
  [[ -f "$bench" ]] || continue
  echo "== $(basename "$bench")"
  case $bench in
    *.sh) runner=bash ;;
    *) runner=/usr/bin/python3 ;;
  esac
  if ! "$runner" "$bench" "$build_dir" "$@"; then
    echo "!! $(basename "$bench") failed" >&2
    failed+=("$(basename "$bench")")
    status=1
  fi
done
# The twins and the transfer benchmark, for their step times only.
for extra in "charlm_twin.py --no-train" "fortune_twin.py --no-train" \
    "transformer_twin.py --no-train" "resnet_twin.py" \
    "cluster_transfer.py"; do
  read -r script flags <<<"$extra"
  echo "== $script"
  # shellcheck disable=SC2086
  if ! /usr/bin/python3 "$script_dir/$script" "$build_dir" $flags "$@"; then
    echo "!! $script failed" >&2
    failed+=("$script")
    status=1
  fi
done
/usr/bin/python3 "$script_dir/report.py" "$RUNNEL_BENCH_RESULTS" \
  "$script_dir/../docs/performance.md" "${failed[@]}" || status=1
exit $status
