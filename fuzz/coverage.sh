#!/usr/bin/env bash
# Line coverage of lang/ and interpreter/ by a fuzz corpus: builds the fuzz
# targets for llvm-cov into BUILD/fuzz/coverage (not the sanitizers), runs
# every input of the corpus once, and prints llvm-cov's report.
#
#   fuzz/coverage.sh BUILD [TARGET] [CORPUS_DIR...]
#
# TARGET: check_fuzzer (default) or parse_fuzzer. CORPUS_DIR: default
# BUILD/fuzz/targets/corpus/TARGET and the seeds (every .rnl of tests/ and
# examples/).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(dirname "$here")"
build="$(cd "$1" && pwd)"
target="${2:-check_fuzzer}"
shift $(($# < 2 ? $# : 2))
out="$build/fuzz/coverage"
compiler=()
[[ -f $out/CMakeCache.txt ]] ||
  compiler=(-DCMAKE_CXX_COMPILER="$(command -v clang++-14 || command -v clang++)")
cmake -S "$here/clang" -B "$out" -G Ninja -DRUNNEL_FUZZ_COVERAGE=ON \
  "${compiler[@]}" -DRUNNEL_SOURCE_DIR="$root" -DRUNNEL_BINARY_DIR="$build" \
  -DRUNNEL_RUNTIME_LIB="$build/librunnel_runtime.a" \
  -DRUNNEL_KERNELS_LIB="$build/librunnel_kernels.a" >/dev/null
cmake --build "$out" --target "$target"

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/seeds"
find "$root/tests" "$root/examples" -name '*.rnl' -print0 |
  while IFS= read -r -d '' f; do
    cp "$f" "$work/seeds/$(echo "$f" | md5sum | cut -c1-12)-$(basename "$f")"
  done
corpora=("$@")
if ((${#corpora[@]} == 0)); then
  corpora=("$work/seeds")
  [[ -d $build/fuzz/targets/corpus/$target ]] &&
    corpora+=("$build/fuzz/targets/corpus/$target")
fi
export LLVM_PROFILE_FILE="$work/profile-%p.profraw"
export RUNNEL_STDLIB_PATH="$root/tests/scripts/lib/std:$root/stdlib"
(cd "$root/tests/scripts" &&
  "$out/$target" -runs=0 -max_len=8192 -timeout=30 -rss_limit_mb=4096 \
    "${corpora[@]}" 2>&1 | grep -E '^#[0-9]+\s+(INITED|DONE)' || true)
profdata="$(command -v llvm-profdata-14 || command -v llvm-profdata)"
cov="$(command -v llvm-cov-14 || command -v llvm-cov)"
"$profdata" merge -sparse "$work"/profile-*.profraw -o "$work/all.profdata"
"$cov" report "$out/$target" -instr-profile="$work/all.profdata" \
  "$root/lang" "$root/interpreter" | sed "s|$root/||"
