"""A TextMate tokenizer: VS Code's algorithm, line by line with a rule
stack, over Oniguruma (the regular-expression engine VS Code uses, through
onigurumacffi from requirements/editors.txt).

Why not a library: textmate-grammar-python 0.6.1, the PyPI port of
vscode-textmate, took 15 s of CPU for the 79-line fixture and had not
finished stdlib/nn.rnl after 10 minutes (it tries every pattern at every
position); the other PyPI engines tokenize lines without a rule stack, so
they cannot see a string left open. This one follows vscode-textmate's
rules for the features TextMate grammars of this kind use:

  - each line is matched with a "\\n" appended, as VS Code does;
  - at each position the current rule's patterns (includes expanded:
    `#name`, `$self`, `$base`) and, first, its `end` are searched together;
    the earliest match wins, ties going to the earlier pattern;
  - `match` rules give `name` and `captures`; `begin`/`end` rules push a
    frame whose `name` covers begin, content and end, `beginCaptures` /
    `endCaptures` (or `captures`) naming the groups, and whose `end` may
    refer to the begin's groups (\\1);
  - a capture with `patterns` is tokenized with them, over the text up
    to the capture's end;
  - a match that is empty and pushes nothing ends the line's scan (VS
    Code's guard against endless loops).

Unsupported keys (`while`, `contentName`, `applyEndPatternLast`,
`injections`) raise an error, so a grammar that
grows past this engine fails the test instead of passing it wrongly.
"""
import re

import onigurumacffi

_UNSUPPORTED = ("while", "contentName", "applyEndPatternLast", "injections",
                "injectionSelector")
_BACKREF = re.compile(r"\\(\d+)")


def _participates(m, group):
    """Whether `group` of match `m` took part (Oniguruma gives -1 if not)."""
    begs = m._begs  # pylint: disable=protected-access
    return group < len(begs) and begs[group] >= 0


class Token:
    """Characters [start, end) of a line and their scopes, outermost first."""

    __slots__ = ("start", "end", "scopes")

    def __init__(self, start, end, scopes):
        self.start, self.end, self.scopes = start, end, scopes


class _Frame:
    """A begin/end rule in force: its rule, its resolved end pattern and the
    scopes of everything inside it."""

    def __init__(self, rule, end, scopes):
        self.rule, self.end, self.scopes = rule, end, scopes


class Grammar:
    """A grammar (the parsed JSON of a .tmLanguage.json file)."""

    def __init__(self, grammar):
        self.grammar = grammar
        self.scope = grammar["scopeName"]
        self._check(grammar)
        self._sets = {}  # (id of rule, end pattern) -> (regset, entries)

    def _check(self, rule):
        if isinstance(rule, dict):
            for key in _UNSUPPORTED:
                if key in rule:
                    raise ValueError(f"textmate.py does not support `{key}`")
            for value in rule.values():
                self._check(value)
        elif isinstance(rule, list):
            for value in rule:
                self._check(value)

    def _expand(self, patterns, seen):
        """The match and begin rules of `patterns`, includes resolved."""
        out = []
        for p in patterns:
            if "include" in p:
                ref = p["include"]
                if ref in ("$self", "$base"):
                    target = self.grammar
                elif ref.startswith("#"):
                    target = self.grammar.get("repository", {}).get(ref[1:])
                    if target is None:
                        raise ValueError(f"no repository entry {ref}")
                else:
                    raise ValueError(f"include of another grammar: {ref}")
                if id(target) in seen:
                    continue
                out += self._expand([target], seen | {id(target)})
            elif "match" in p or "begin" in p:
                out.append(p)
            else:
                out += self._expand(p.get("patterns", []), seen)
        return out

    def _scanner(self, rule, end):
        """The patterns searched together inside `rule`: its end first."""
        key = (id(rule), end)
        if key not in self._sets:
            entries = ([("end", None)] if end is not None else []) + [
                ("rule", p) for p in self._expand(rule.get("patterns", []),
                                                  {id(rule)})]
            sources = [end if kind == "end" else
                       (p["match"] if "match" in p else p["begin"])
                       for kind, p in entries]
            self._sets[key] = (onigurumacffi.compile_regset(*sources)
                               if sources else None, entries)
        return self._sets[key]

    def initial(self):
        """The rule stack at the start of a file."""
        return (_Frame(self.grammar, None, [self.scope]),)

    def tokenize_line(self, line, stack):
        """([Token], stack after the line): every character of `line` in
        exactly one token, in order."""
        scopes = [None] * len(line)
        stack = self._scan(line + "\n", 0, list(stack), scopes)
        tokens = []
        for i, s in enumerate(scopes):
            if tokens and tokens[-1].scopes == s:
                tokens[-1].end = i + 1
            else:
                tokens.append(Token(i, i + 1, s))
        return tokens, tuple(stack)

    def _scan(self, text, pos, stack, scopes):
        """Matches `text` from `pos` with `stack`, writing each character's
        scopes into `scopes` (as long as the line); returns the stack."""
        def paint(start, end, names):
            for i in range(start, min(end, len(scopes))):
                scopes[i] = names

        def paint_match(m, base, captures):
            # Each character takes base, then every named capture that
            # covers it, in the order of the groups (group 0 first); a
            # capture with patterns is tokenized with them, as VS Code does.
            paint(*m.span(), base)
            for group, cap in sorted(captures.items(), key=lambda c: int(c[0])):
                g = int(group)
                if not _participates(m, g):
                    continue
                s, e = m.span(g)
                for i in range(s, min(e, len(scopes))):
                    scopes[i] = scopes[i] + ([cap["name"]] if "name" in cap else [])
                if "patterns" in cap and s < e:
                    inner = [_Frame({"patterns": cap["patterns"]}, None,
                                    scopes[s] if s < len(scopes) else base)]
                    self._scan(text[:e], s, inner, scopes)

        while pos <= len(text):
            frame = stack[-1]
            regset, entries = self._scanner(frame.rule, frame.end)
            index, m = regset.search(text, pos) if regset else (-1, None)
            if m is None:
                paint(pos, len(text), frame.scopes)
                break
            start, end = m.span()
            paint(pos, start, frame.scopes)
            kind, rule = entries[index]
            pushed = popped = False
            if kind == "end":
                caps = frame.rule.get("endCaptures", frame.rule.get("captures", {}))
                paint_match(m, frame.scopes, caps)
                if len(stack) > 1:
                    stack.pop()
                    popped = True
            elif "match" in rule:
                base = frame.scopes + ([rule["name"]] if "name" in rule else [])
                paint_match(m, base, rule.get("captures", {}))
            else:
                inside = frame.scopes + ([rule["name"]] if "name" in rule else [])
                caps = rule.get("beginCaptures", rule.get("captures", {}))
                paint_match(m, inside, caps)
                end_src = _BACKREF.sub(
                    lambda b: re.escape(m.group(int(b.group(1))) or ""),
                    rule["end"])
                stack.append(_Frame(rule, end_src, inside))
                pushed = True
            if end == start and not pushed and not popped:
                paint(end, len(text), stack[-1].scopes)
                break
            if end == start and pushed and len(stack) > 2 and \
                    stack[-2].rule is rule:
                # A zero-width begin inside itself would push for ever.
                stack.pop()
                paint(end, len(text), stack[-1].scopes)
                break
            pos = end
        return stack

    def tokenize(self, text):
        """[(line, [Token])] for each line of `text`, and the final stack."""
        stack = self.initial()
        lines = []
        body = text[:-1] if text.endswith("\n") else text
        for line in body.split("\n"):
            tokens, stack = self.tokenize_line(line, stack)
            lines.append((line, tokens))
        return lines, stack
