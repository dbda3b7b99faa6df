#!/usr/bin/env bash
# Runs every ```rnl block of Markdown files (docs/*.md, README.md) as a
# script with `runnel run` in a fresh directory; each must exit 0. Blocks
# fenced as ```rnl-norun are shown to readers but not run (fragments,
# examples of errors).
#
#   run_doc_examples.sh RUNNEL DOC.md...
set -uo pipefail
runnel="$(cd "$(dirname "$1")" && pwd)/$(basename "$1")"
shift
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
status=0
total=0
for doc in "$@"; do
  rm -rf "$work/examples" && mkdir "$work/examples"
  awk -v dir="$work/examples" '
    /^```rnl[ \t]*$/ { n++; file = sprintf("%s/example_%02d.rnl", dir, n);
                       inside = 1; printf "" > file; next }
    /^```/ && inside { inside = 0; close(file); next }
    inside { print > file }
  ' "$doc"
  count=0
  for f in "$work"/examples/example_*.rnl; do
    [[ -e "$f" ]] || continue
    count=$((count + 1))
    if ! out="$(cd "$work/examples" && "$runnel" run "$f" --threads 2 2>&1)"; then
      echo "FAIL: example $(basename "$f") of $doc:"
      sed 's/^/    /' "$f"
      echo "  output:"
      echo "$out" | sed 's/^/    /'
      status=1
    fi
  done
  echo "$count examples run from $doc"
  total=$((total + count))
done
[[ $total -gt 0 ]] || { echo "no \`\`\`rnl examples found in $*"; exit 1; }
exit $status
