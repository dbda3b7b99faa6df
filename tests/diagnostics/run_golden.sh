#!/usr/bin/env bash
# Runs one diagnostics test: `runnel run NAME.rnl` from this directory, and
# compares its stderr and exit status with NAME.expected.
#
#   run_golden.sh RUNNEL tests/diagnostics/NAME.rnl
#
# With RUNNEL_UPDATE_GOLDENS=1 (or --update after the arguments) it writes
# NAME.expected instead. A line "# runnel: check" in the script runs
# `runnel check` instead of `runnel run`. A line "# runnel: bytes" runs a
# copy of the script in which each \xNN is the byte NN, for scripts with
# bytes that git should not hold (a NUL, text that is not UTF-8). For
# NAME.args instead of NAME.rnl, the file holds the command line (after
# `runnel`), e.g. for `runnel plot`.
set -uo pipefail
runnel="$(realpath "$1")"
script="$2"
update="${RUNNEL_UPDATE_GOLDENS:-0}"
[[ "${3:-}" == "--update" ]] && update=1
dir="$(cd "$(dirname "$script")" && pwd)"
cd "$dir"
if [[ "$script" == *.args ]]; then
  name="$(basename "$script" .args)"
  read -r -a args <"$name.args"
  actual="$("$runnel" "${args[@]}" 2>&1 >/dev/null)"
  status=$?
else
  name="$(basename "$script" .rnl)"
  command=run
  grep -q '^# runnel: check' "$name.rnl" && command=check
  run_dir="$dir"
  if grep -q '^# runnel: bytes' "$name.rnl"; then
    run_dir="$(mktemp -d)"
    trap 'rm -rf "$run_dir"' EXIT
    perl -pe 's/\\x([0-9A-Fa-f]{2})/chr(hex($1))/ge' "$name.rnl" >"$run_dir/$name.rnl"
  fi
  # "# runnel: devices cpu=2" runs it on those devices (--devices).
  devices="$(sed -n 's/^# runnel: devices //p' "$name.rnl")"
  extra=()
  [[ -n "$devices" ]] && extra=(--devices "$devices")
  actual="$(cd "$run_dir" && "$runnel" "$command" "$name.rnl" --threads 2 "${extra[@]}" 2>&1 >/dev/null)"
  status=$?
fi
# Under `make asan` (allocator_may_return_null=1) AddressSanitizer notes
# each allocation it refuses on stderr; the diagnostic that follows is ours.
actual="$(printf '%s\n' "$actual" | grep -v '^==[0-9]*==WARNING: AddressSanitizer failed to allocate')"
# The standard library's files are named from the source tree's root, so
# that a golden does not depend on where the tree is checked out.
root="$(cd "$dir/../.." && pwd)"
actual="${actual//"$root/stdlib/"/stdlib/}"
actual="$actual
exit status: $status"
if [[ "$update" == 1 ]]; then
  printf '%s\n' "$actual" > "$name.expected"
  echo "wrote $dir/$name.expected"
  exit 0
fi
if [[ ! -f "$name.expected" ]]; then
  echo "missing $dir/$name.expected; run with RUNNEL_UPDATE_GOLDENS=1 to write it"
  printf '%s\n' "$actual"
  exit 1
fi
if ! diff -u "$name.expected" <(printf '%s\n' "$actual"); then
  echo "FAIL: $name: stderr or exit status differ from $name.expected"
  echo "(RUNNEL_UPDATE_GOLDENS=1 ctest -R diagnostics.$name rewrites it)"
  exit 1
fi
