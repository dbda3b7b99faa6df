#!/usr/bin/env bash
# Fuzzes the parser and `runnel check` with the libFuzzer targets of fuzz/,
# seeded with every .rnl script of tests/ and examples/.
#
#   fuzz/run_fuzz.sh [options] FUZZ_DIR      (FUZZ_DIR: build/fuzz/targets)
#     --seconds N     how long to fuzz (default 60)
#     --target NAME   check_fuzzer (default), parse_fuzzer, or both:
#                     check_fuzzer three quarters of the time (it is the
#                     slower, and starts by running every seed), then
#                     parse_fuzzer
#     --fresh         start from the seeds alone, in a temporary corpus,
#                     with a fixed random seed: what `make test` runs
#     --keep-going    after a crash, save it and go on (libFuzzer's fork
#                     mode); otherwise the first crash stops the run
#
# The corpus grows in FUZZ_DIR/corpus/TARGET between runs (not with
# --fresh). A crash is saved as FUZZ_DIR/artifacts/TARGET-crash-* (also
# leak-, oom-, timeout-); `FUZZ_DIR/TARGET FILE` runs it again. Exit status:
# 0 when nothing was found.
set -uo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(dirname "$here")"
seconds=60 targets=(check_fuzzer) fresh=0 keep_going=0
while (($#)); do
  case "$1" in
    --seconds) seconds="$2"; shift 2 ;;
    --target) [[ $2 == both ]] && targets=(check_fuzzer parse_fuzzer) || targets=("$2"); shift 2 ;;
    --fresh) fresh=1; shift ;;
    --keep-going) keep_going=1; shift ;;
    -*) echo "run_fuzz.sh: unknown option $1" >&2; exit 2 ;;
    *) break ;;
  esac
done
if (($# != 1)); then
  sed -n '2,18p' "$0" | sed 's/^# \{0,1\}//' >&2
  exit 2
fi
fuzz_dir="$(cd "$1" && pwd)" || exit 2

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
# The seeds: libFuzzer reads every file of a directory, so only the scripts.
mkdir -p "$work/seeds"
find "$root/tests" "$root/examples" -name '*.rnl' -print0 |
  while IFS= read -r -d '' f; do
    cp "$f" "$work/seeds/$(echo "$f" | md5sum | cut -c1-12)-$(basename "$f")"
  done
# The dictionary: the grammar's keywords and punctuation, the builtins, the
# dtypes, and numbers at the edges of sizes and integer types.
{
  grep -oP "^[A-Z_]+\s*:\s*'\K[^']+(?=')" "$root/grammar/Runnel.g4"
  grep -oP '^\| `\K[A-Za-z_0-9]+(?=` \|)' "$root/docs/ops.md"  # ops and builtins
  printf '%s\n' f16 bf16 f32 f64 i8 u8 i32 i64 bool '# ' '    '
  printf '%s\n' 100000 1000000000 2147483647 2147483648 4294967296 \
    9223372036854775807 9223372036854775808 1e30 1e309 nan inf -0.0
} | sed '/^$/d; s/\\/\\\\/g; s/"/\\"/g; s/.*/"&"/' | sort -u >"$work/runnel.dict"
echo '"\x0A"' >>"$work/runnel.dict"

# Sizes are bounded: an input, a process's memory and one allocation (a
# larger one fails as it would on a machine without the memory). Checking
# reads imports from tests/scripts and the standard library.
export ASAN_OPTIONS="allocator_may_return_null=1:max_allocation_size_mb=256:malloc_context_size=10:quarantine_size_mb=64${ASAN_OPTIONS:+:$ASAN_OPTIONS}"
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1${UBSAN_OPTIONS:+:$UBSAN_OPTIONS}"
export RUNNEL_STDLIB_PATH="$root/tests/scripts/lib/std:$root/stdlib"
cd "$root/tests/scripts" || exit 2
mkdir -p "$fuzz_dir/artifacts"

status=0
for target in "${targets[@]}"; do
  each=$seconds
  if ((${#targets[@]} > 1)); then
    [[ $target == check_fuzzer ]] && each=$((seconds * 3 / 4)) || each=$((seconds / 4))
  fi
  if [[ ! -x "$fuzz_dir/$target" ]]; then
    echo "run_fuzz.sh: no $fuzz_dir/$target; build it first (make build)" >&2
    exit 2
  fi
  if ((fresh)); then
    corpus="$work/corpus-$target"
    options=(-seed=1)
  else
    corpus="$fuzz_dir/corpus/$target"
    options=()
  fi
  mkdir -p "$corpus"
  if ((keep_going)); then
    options+=(-fork=1 -ignore_crashes=1 -ignore_timeouts=1 -ignore_ooms=1)
  fi
  before=$(ls "$fuzz_dir/artifacts" | wc -l)
  echo "run_fuzz.sh: $target for ${each}s, corpus $corpus"
  "$fuzz_dir/$target" "${options[@]}" -max_total_time="$each" \
    -max_len=8192 -timeout=30 -rss_limit_mb=2048 -dict="$work/runnel.dict" \
    -print_final_stats=1 -artifact_prefix="$fuzz_dir/artifacts/$target-" \
    "$corpus" "$work/seeds" 2>&1 |
    sed '/^###### Recommended dictionary/,/^###### End of recommended/d' |
    grep -vE '^#[0-9]+\s+(NEW|REDUCE|pulse)|^\s+NEW_FUNC|^INFO: (libFuzzer|Running with|Loaded|Seed)'
  rc=${PIPESTATUS[0]}
  found=$(($(ls "$fuzz_dir/artifacts" | wc -l) - before))
  if ((rc != 0 || found > 0)); then
    echo "run_fuzz.sh: $target found $found problem(s) (exit status $rc):"
    ls -t "$fuzz_dir/artifacts" | head -n "$found" | sed "s|^|  $fuzz_dir/artifacts/|"
    echo "  (each runs again, from tests/scripts, with: $fuzz_dir/$target FILE;"
    echo "  most also with: runnel check FILE)"
    status=1
  fi
done
exit $status
