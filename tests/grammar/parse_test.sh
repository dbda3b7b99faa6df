#!/usr/bin/env bash
# The grammar test: grammar/Runnel.g4 generates the C++ target without a
# warning, and its Java target
#   - parses every script of tests/grammar, editors/test, examples and stdlib,
#   - rejects every script of tests/grammar/errors,
#   - gives the parse trees of tests/grammar/trees.txt,
#   - and ANTLR's TestRig parses the complete script of docs/language.md §9
#     (complete_script.rnl) without an error.
# Usage: parse_test.sh [WORKDIR]   (exit status 77: skipped, no JDK)
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
work="${1:-${TMPDIR:-/tmp}/runnel-grammar-java-$(id -u)}"
cd "$root"

status=0
classpath="$(bash tests/grammar/build_java.sh "$work")" || exit $?

echo "== C++ target"
cpp_out="$(mktemp -d)"
trap 'rm -rf "$cpp_out"' EXIT
messages="$(antlr4 -Dlanguage=Cpp -visitor -no-listener -Xexact-output-dir -o "$cpp_out" grammar/Runnel.g4 2>&1)" || status=1
if [[ -n $messages ]]; then
  echo "$messages"
  echo "FAIL: antlr4 -Dlanguage=Cpp printed warnings or errors"
  status=1
elif [[ ! -f $cpp_out/RunnelLexer.cpp || ! -f $cpp_out/RunnelParser.cpp || ! -f $cpp_out/RunnelVisitor.h ]]; then
  echo "FAIL: antlr4 -Dlanguage=Cpp did not write the lexer, parser and visitor"
  status=1
else
  echo "generated without warnings"
fi

echo "== scripts that must parse"
mapfile -t scripts < <(find tests/grammar editors/test examples stdlib -name '*.rnl' \
  -not -path 'tests/grammar/errors/*' 2>/dev/null | sort)
java -cp "$classpath" ParseCheck "${scripts[@]}" || status=1

echo "== scripts that must not parse"
java -cp "$classpath" ParseCheck --expect-errors tests/grammar/errors/*.rnl || status=1

echo "== parse trees"
java -cp "$classpath" ParseCheck --trees tests/grammar/trees.txt || status=1

echo "== TestRig"
tool_jar=/usr/share/java/antlr4.jar
if [[ -f $tool_jar ]]; then
  rig="$(java -cp "$classpath:$tool_jar" org.antlr.v4.gui.TestRig Runnel program -tree \
    tests/grammar/complete_script.rnl 2>&1)" || status=1
  # TestRig reports syntax errors as `line L:C message`.
  if grep -Eq '^line [0-9]+:[0-9]+ ' <<<"$rig" || [[ $rig != "(program "* ]]; then
    echo "$rig"
    echo "FAIL: TestRig reported errors on tests/grammar/complete_script.rnl"
    status=1
  else
    echo "tests/grammar/complete_script.rnl: ok (${#rig} characters of tree)"
  fi
else
  echo "no $tool_jar, TestRig check left out"
fi

((status == 0)) && echo "PASS" || echo "FAIL"
exit $status
