#!/usr/bin/env bash
# Makes (once) the Python virtual environment NAME from requirements/NAME.txt
# (exact pins) at build/venv/NAME, with Debian's python3, and prints its
# python. Reused while the requirements file is unchanged: the environment
# keeps a copy of the file it was made from. Never touches the system Python.
#
#   bash scripts/venv.sh editors     # the editor tests' tools
#   bash scripts/venv.sh bench       # the benchmarks' peers (several GB)
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
name=${1:?usage: venv.sh NAME}
req="$root/requirements/$name.txt"
[[ -f $req ]] || { echo "venv.sh: no $req" >&2; exit 2; }
dir="$root/build/venv/$name"
# Prints the environment's python and exits when it is made and current.
use_if_current() {
  if [[ -x $dir/bin/python && -f $dir/requirements.txt ]] && cmp -s "$req" "$dir/requirements.txt"; then
    echo "$dir/bin/python"
    exit 0
  fi
}
use_if_current
# One maker at a time (ctest may start two tests that need the same one).
mkdir -p "$root/build/venv"
exec 9>"$root/build/venv/.$name.lock"
flock 9
use_if_current
[[ -x /usr/bin/python3 ]] || { echo "venv.sh: /usr/bin/python3 missing; run \`make setup\`" >&2; exit 1; }
echo "venv.sh: making $dir from requirements/$name.txt" >&2
rm -rf "$dir"
/usr/bin/python3 -m venv "$dir" >&2
start=$SECONDS
"$dir/bin/pip" install --quiet --no-input --require-virtualenv -r "$req" >&2
cp "$req" "$dir/requirements.txt"
echo "venv.sh: $name ready in $((SECONDS - start)) s" >&2
echo "$dir/bin/python"
