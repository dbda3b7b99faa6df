#!/usr/bin/env bash
# Runs every ```rnl block of a Markdown file (docs/language.md) as a script
# with `runnel run`; each must exit 0. Blocks fenced as ```rnl-norun are
# shown to readers but not run (fragments, examples of errors).
#
#   run_doc_examples.sh RUNNEL docs/language.md
set -uo pipefail
runnel="$(cd "$(dirname "$1")" && pwd)/$(basename "$1")"
doc="$2"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
awk -v dir="$work" '
  /^```rnl[ \t]*$/ { n++; file = sprintf("%s/example_%02d.rnl", dir, n);
                     start = NR; inside = 1; printf "" > file; next }
  /^```/ && inside { inside = 0; close(file); next }
  inside { print > file }
' "$doc"
status=0
count=0
for f in "$work"/example_*.rnl; do
  [[ -e "$f" ]] || continue
  count=$((count + 1))
  if ! out="$(cd "$work" && "$runnel" run "$f" --threads 2 2>&1)"; then
    echo "FAIL: example $(basename "$f") of $doc:"
    sed 's/^/    /' "$f"
    echo "  output:"
    echo "$out" | sed 's/^/    /'
    status=1
  fi
done
echo "$count examples run from $doc"
[[ $count -gt 0 ]] || { echo "no \`\`\`rnl examples found in $doc"; exit 1; }
exit $status
