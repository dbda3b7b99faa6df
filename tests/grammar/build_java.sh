#!/usr/bin/env bash
# Builds the Java target of grammar/Runnel.g4 with tests/grammar/ParseCheck.java
# into OUTDIR (default: a per-user directory under $TMPDIR), unless it is
# already up to date, and prints the classpath to run ParseCheck with.
# Exit status 77 (a skipped test) when no Java compiler or ANTLR runtime jar
# is installed.
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
out="${1:-${TMPDIR:-/tmp}/runnel-grammar-java-$(id -u)}"

for tool in antlr4 java javac; do
  if ! command -v "$tool" >/dev/null; then
    echo "build_java: '$tool' not found; the grammar test needs it (apt-get install antlr4 default-jdk-headless)" >&2
    exit 77
  fi
done
runtime=""
for jar in /usr/share/java/antlr4-runtime.jar /usr/share/java/antlr4-runtime-*.jar; do
  [[ -f $jar ]] && { runtime=$jar; break; }
done
if [[ -z $runtime ]]; then
  echo "build_java: no ANTLR 4 Java runtime jar in /usr/share/java (apt-get install libantlr4-runtime-java)" >&2
  exit 77
fi

mkdir -p "$out"
exec 9>"$out/.lock"
flock 9
stamp="$out/classes/.built"
if [[ ! -f $stamp || $root/grammar/Runnel.g4 -nt $stamp || $root/tests/grammar/ParseCheck.java -nt $stamp ]]; then
  rm -rf "$out/src" "$out/classes"
  mkdir -p "$out/src" "$out/classes"
  antlr4 -Xexact-output-dir -o "$out/src" "$root/grammar/Runnel.g4" >&2
  cp "$root/tests/grammar/ParseCheck.java" "$out/src/"
  javac -nowarn -encoding UTF-8 -cp "$runtime" -d "$out/classes" "$out"/src/*.java >&2
  touch "$stamp"
fi
echo "$out/classes:$runtime"
