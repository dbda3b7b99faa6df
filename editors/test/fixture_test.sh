#!/usr/bin/env bash
# Checks that fixture.expected, the highlighting the editor tests expect at
# every token of fixture.rnl, is what the grammar's lexer makes of it.
# Usage: fixture_test.sh [--update] [WORKDIR]   (exit status 77: skipped, no JDK)
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"
update=0
if [[ ${1:-} == --update ]]; then update=1; shift; fi
command -v node >/dev/null || { echo "fixture_test: node not found (make setup installs it)" >&2; exit 1; }
classpath="$(bash "$root/tests/grammar/build_java.sh" "$@")" || exit $?
tokens="$(java -cp "$classpath" ParseCheck --tokens "$here/fixture.rnl")"
if ((update)); then
  node "$here/expectations.js" <<<"$tokens" >"$here/fixture.expected"
  echo "wrote $here/fixture.expected"
else
  node "$here/expectations.js" --check <<<"$tokens"
fi
