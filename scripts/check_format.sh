#!/usr/bin/env bash
# Fails, naming the files, when any tracked C++ source differs from clang-format's output.
set -euo pipefail
cd "$(git rev-parse --show-toplevel)"
bad=()
while IFS= read -r f; do
  [[ -f $f ]] || continue
  clang-format --dry-run --Werror "$f" >/dev/null 2>&1 || bad+=("$f")
done < <(git ls-files --cached --others --exclude-standard '*.h' '*.cc')
if ((${#bad[@]})); then
  echo "check-format: not clang-formatted (run 'make format'):" >&2
  printf '  %s\n' "${bad[@]}" >&2
  exit 1
fi
echo "check-format: ok"
