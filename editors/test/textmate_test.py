"""The VS Code extension test: tokenizes Runnel with the extension's TextMate
grammar (textmate.py: VS Code's algorithm over Oniguruma) and checks

  - the extension manifest and language configuration,
  - the class of every character of every token of fixture.rnl against
    fixture.expected (see expectations.js for the classes),
  - that no script of examples/, stdlib/, tests/grammar/ or editors/test
    leaves a string or a bracket unterminated or holds an invalid token,
  - that an unterminated string is reported as one, and that renaming a
    scope of the grammar fails the fixture check.

Run with the editors environment (scripts/venv.sh editors); run_test.sh
textmate does. `--grammar FILE` tokenizes with another grammar file (to
show that a wrong scope fails the test).
"""
import json
import os
import re
import sys

import textmate

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
EXTENSION = os.path.join(ROOT, "editors", "vscode")

# Innermost first; the first scope matching a rule gives the class.
# Punctuation of strings and comments takes the class of what it delimits.
SCOPE_CLASSES = [
    (r"^invalid\.", "invalid"),
    (r"^punctuation\.definition\.(string|comment)\.", None),
    (r"^comment\.", "comment"),
    (r"^constant\.character\.escape\.", "escape"),
    (r"^string\.quoted\.double\.device-spec\.", "device"),
    (r"^string\.", "string"),
    (r"^constant\.numeric\.", "number"),
    (r"^constant\.language\.", "constant"),
    (r"^support\.type\.dtype\.", "dtype"),
    (r"^support\.function\.builtin\.", "builtin"),
    (r"^entity\.name\.function\.", "function"),
    (r"^storage\.type\.", "declaration"),
    (r"^keyword\.control\.conditional\.", "conditional"),
    (r"^keyword\.control\.loop\.", "repeat"),
    (r"^keyword\.control\.flow\.", "flow"),
    (r"^keyword\.control\.run\.", "run"),
    (r"^keyword\.control\.import\.", "import"),
    (r"^keyword\.other\.block\.", "block"),
    (r"^keyword\.operator\.logical\.", "logical"),
    (r"^keyword\.operator\.", "operator"),
]
SCOPE_CLASSES = [(re.compile(p), c) for p, c in SCOPE_CLASSES]


def class_of(scopes):
    for scope in reversed(scopes):
        for pattern, cls in SCOPE_CLASSES:
            if pattern.search(scope):
                if cls:
                    return cls
                break
    return "plain"


def read_expected(path):
    """fixture.expected: [(line, col, length, cls, text)], 1-based."""
    out = []
    with open(path, encoding="utf-8") as fh:
        for row in fh.read().split("\n"):
            if not row:
                continue
            pos, length, cls, *text = row.split("\t")
            line, col = (int(x) for x in pos.split(":"))
            out.append((line, col, int(length), cls, "\t".join(text)))
    return out


def load_json(*parts):
    with open(os.path.join(*parts), encoding="utf-8") as fh:
        return json.load(fh)


def check_manifest(fail):
    manifest = load_json(EXTENSION, "package.json")
    contributes = manifest.get("contributes", {})
    language = next((l for l in contributes.get("languages", [])
                     if l.get("id") == "runnel"), None)
    if not language:
        return fail("package.json: no language with id `runnel`")
    if ".rnl" not in language.get("extensions", []):
        fail("package.json: language runnel lacks extension .rnl")
    grammar = next((g for g in contributes.get("grammars", [])
                    if g.get("language") == "runnel"), None)
    if not grammar or grammar.get("scopeName") != "source.runnel":
        return fail("package.json: no grammar source.runnel for runnel")
    if not os.path.exists(os.path.join(EXTENSION, grammar["path"])):
        fail(f"package.json: no grammar file {grammar['path']}")
    # The language server through the Generic LSP Client extension
    # (zsol.vscode-glspc): `runnel lsp` for the runnel language.
    defaults = contributes.get("configurationDefaults", {})
    if (defaults.get("glspc.server.command") != "runnel"
            or defaults.get("glspc.server.commandArguments") != ["lsp"]
            or "runnel" not in defaults.get("glspc.server.languageId", [])):
        fail("package.json: the generic LSP client is not set to run "
             "`runnel lsp` for runnel")
    config = load_json(EXTENSION, language["configuration"])
    if config["comments"]["lineComment"] != "#":
        fail("language-configuration.json: line comment is not #")
    pairs = [p["open"] + p["close"] for p in config["autoClosingPairs"]]
    for p in ("{}", "[]", "()", '""'):
        if p not in pairs:
            fail(f"language-configuration.json: no auto-closing pair {p}")
    # VS Code's patterns are JavaScript regular expressions; these use
    # nothing whose meaning differs in Python's.
    rules = config["indentationRules"]
    increase = re.compile(rules["increaseIndentPattern"])
    decrease = re.compile(rules["decreaseIndentPattern"])
    for line, inc, dec in [
            ("def f(x) {", True, False), ("    let y = f(a,", True, False),
            ("} else {", True, True), ("}", False, True),
            ('let s = "{"', False, False), ("let x = 1  # {", False, False),
            ("    ])", False, True), ("let r = {x: 1}", False, False)]:
        if bool(increase.search(line)) != inc:
            fail(f"increaseIndentPattern {'misses' if inc else 'matches'} {line}")
        if bool(decrease.search(line)) != dec:
            fail(f"decreaseIndentPattern {'misses' if dec else 'matches'} {line}")
    for rule in config.get("onEnterRules", []):
        re.compile(rule["beforeText"])
    markers = config.get("folding", {}).get("markers")
    if markers:
        re.compile(markers["start"])
        re.compile(markers["end"])


def check_fixture(grammar, fail):
    with open(os.path.join(HERE, "fixture.rnl"), encoding="utf-8") as fh:
        lines, _ = grammar.tokenize(fh.read())
    checked = 0
    for line_no, col, length, cls, text in read_expected(
            os.path.join(HERE, "fixture.expected")):
        line, tokens = lines[line_no - 1]
        at = f"fixture.rnl:{line_no}:{col}"
        if line[col - 1:col - 1 + length] != text:
            fail(f"{at}: fixture.expected says {text!r}, the file has "
                 f"{line[col - 1:col - 1 + length]!r}")
            continue
        for i in range(col - 1, col - 1 + length):
            token = next(t for t in tokens if t.start <= i < t.end)
            got = class_of(token.scopes)
            checked += 1
            if got != cls:
                fail(f"{at}: {text!r} should be {cls}, column {i + 1} is "
                     f"{got} ({' '.join(token.scopes[1:])})")
                break
    return checked


def problems(grammar, path):
    """Unterminated strings and brackets, invalid tokens of a script."""
    with open(path, encoding="utf-8") as fh:
        lines, stack = grammar.tokenize(fh.read())
    found = []
    for n, (_, tokens) in enumerate(lines, 1):
        for t in tokens:
            invalid = next((s for s in t.scopes if s.startswith("invalid.")),
                           None)
            if invalid:
                found.append(f"{n}:{t.start + 1}: {invalid}")
    if len(stack) != len(grammar.initial()):
        found.append("the file ends inside a string or bracket (rule stack "
                     f"depth {len(stack)})")
    return found


def scripts():
    out = []
    for top in ("examples", "stdlib", "tests/grammar", "editors/test"):
        for dirpath, dirnames, filenames in os.walk(os.path.join(ROOT, top)):
            dirnames[:] = [d for d in dirnames if d != "errors"]
            out += [os.path.join(dirpath, f) for f in filenames
                    if f.endswith(".rnl")]
    return sorted(out)


def main(argv):
    failures = []
    fail = failures.append
    check_manifest(fail)
    manifest = load_json(EXTENSION, "package.json")
    contribution = next(g for g in manifest["contributes"]["grammars"]
                        if g["language"] == "runnel")
    grammar_file = os.path.join(EXTENSION, contribution["path"])
    if "--grammar" in argv:
        grammar_file = argv[argv.index("--grammar") + 1]
    with open(grammar_file, encoding="utf-8") as fh:
        source = fh.read()
    grammar = textmate.Grammar(json.loads(source))
    checked = check_fixture(grammar, fail)
    # The fixture check must be able to fail: a grammar with one scope
    # renamed (the dtypes' and the loops') must give failures.
    for scope in ("support.type.dtype.runnel", "keyword.control.loop.runnel"):
        wrong = textmate.Grammar(json.loads(source.replace(scope, "x.runnel")))
        caught = []
        check_fixture(wrong, caught.append)
        if not caught:
            fail(f"renaming the scope {scope} went unnoticed")
    files = scripts()
    for path in files:
        for p in problems(grammar, path):
            fail(f"{os.path.relpath(path, ROOT)}:{p}")
    # The check above must be able to fail.
    broken = os.path.join(ROOT, "tests/grammar/errors/unterminated_string.rnl")
    if not problems(grammar, broken):
        fail(f"{os.path.relpath(broken, ROOT)}: not reported as unterminated")
    for f in failures:
        print(f"FAIL {f}")
    print(f"textmate: {checked} fixture characters, {len(files)} scripts: " +
          (f"{len(failures)} failures" if failures else "ok"))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
