// Makes fixture.expected, the highlighting class of every token of
// fixture.rnl, from the grammar's own tokens:
//
//   java ParseCheck --tokens fixture.rnl | node expectations.js > fixture.expected
//   ... | node expectations.js --check    (fails when fixture.expected differs)
//
// tests/grammar/build_java.sh builds ParseCheck; editors/test/fixture_test.sh
// runs the check. Each line of fixture.expected is
//   LINE:COL <tab> LENGTH <tab> CLASS <tab> TEXT
// (1-based, in characters), CLASS one of CLASSES below; whitespace between
// tokens is not listed. The editor tests assert CLASS at every character.
'use strict';

const fs = require('fs');
const path = require('path');
const vocabulary = require('./vocabulary');

const CLASSES = [
  'comment', 'string', 'escape', 'device', 'number', 'constant', 'dtype', 'builtin',
  'function', 'declaration', 'conditional', 'repeat', 'flow', 'run', 'import', 'block',
  'logical', 'operator', 'plain',
];

const OPERATORS = new Set([
  'POW', 'STAR', 'DSLASH', 'SLASH', 'PERCENT', 'AT', 'PLUS', 'MINUS', 'EQ', 'NE', 'LE', 'LT',
  'GE', 'GT', 'ARROW', 'ASSIGN', 'COLON_ASSIGN', 'PLUS_ASSIGN', 'MINUS_ASSIGN', 'STAR_ASSIGN',
  'SLASH_ASSIGN', 'DOTDOT', 'QUESTION',
]);
const PUNCTUATION = new Set([
  'COMMA', 'DOT', 'COLON', 'SEMI', 'LPAREN', 'RPAREN', 'LBRACK', 'RBRACK', 'LBRACE', 'RBRACE',
]);
const TRIVIA = new Set(['NEWLINE', 'COMMENT', 'WS']);

function unescape(text) {
  return text.replace(/\\(.)/g, (_, c) => ({n: '\n', t: '\t', r: '\r', '\\': '\\'})[c]);
}

// tokens: [{line, col, type, text}] as ParseCheck --tokens prints them.
function classify(tokens, vocab) {
  const out = [];
  const emit = (line, col, text, cls) => out.push({line, col, text, cls});
  const significant = tokens.filter((t) => !TRIVIA.has(t.type));
  const index = new Map(significant.map((t, i) => [t, i]));

  for (const t of tokens) {
    if (TRIVIA.has(t.type)) {
      // Comments live in NEWLINE tokens (`  # note\n`) and in COMMENT.
      let line = t.line, col = t.col;
      for (const part of t.text.split('\n')) {
        const hash = part.indexOf('#');
        if (hash >= 0) emit(line, col + hash, part.slice(hash).replace(/\r$/, ''), 'comment');
        line++, col = 1;
      }
      continue;
    }
    const i = index.get(t);
    const prev = significant[i - 1], next = significant[i + 1];
    const afterDot = prev && prev.type === 'DOT';
    const isName = next && next.type === 'ASSIGN';  // a named argument or a binding
    const category = vocab.categoryOf[t.text];
    if (category && t.type === t.text.toUpperCase()) {
      emit(t.line, t.col, t.text, afterDot || (isName && category !== 'constant') ? 'plain' : category);
    } else if (t.type === 'ID') {
      let cls = 'plain';
      if (prev && prev.type === 'DEF') cls = 'function';
      else if (afterDot) cls = 'plain';
      else if (vocab.dtypes.includes(t.text)) cls = 'dtype';
      else if (vocab.builtins.includes(t.text) && !isName) cls = 'builtin';
      emit(t.line, t.col, t.text, cls);
    } else if (t.type === 'INT' || t.type === 'FLOAT') {
      emit(t.line, t.col, t.text, 'number');
    } else if (t.type === 'STRING') {
      const cls = prev && prev.type === 'DEVICE' ? 'device' : 'string';
      // Escapes are their own class; the rest of the string is `cls`.
      const re = /\\[nt\\"]/g;
      let at = 0;
      for (let m; (m = re.exec(t.text));) {
        if (m.index > at) emit(t.line, t.col + at, t.text.slice(at, m.index), cls);
        emit(t.line, t.col + m.index, m[0], 'escape');
        at = m.index + m[0].length;
      }
      emit(t.line, t.col + at, t.text.slice(at), cls);
    } else if (OPERATORS.has(t.type)) {
      emit(t.line, t.col, t.text, 'operator');
    } else if (PUNCTUATION.has(t.type)) {
      emit(t.line, t.col, t.text, 'plain');
    } else {
      throw new Error(`${t.line}:${t.col}: token type ${t.type} has no highlighting class`);
    }
  }
  out.sort((a, b) => a.line - b.line || a.col - b.col);
  return out;
}

function parseTokens(dump) {
  return dump.split('\n').filter((l) => l).map((l) => {
    const [line, col, type, text] = l.split('\t');
    return {line: +line, col: +col, type, text: unescape(text)};
  });
}

function format(expected) {
  return expected.map((e) => `${e.line}:${e.col}\t${e.text.length}\t${e.cls}\t${e.text}\n`).join('');
}

// Reads fixture.expected: [{line, col, length, cls, text}].
function read(file) {
  return fs.readFileSync(file, 'utf8').split('\n').filter((l) => l).map((l) => {
    const [pos, length, cls, ...text] = l.split('\t');
    const [line, col] = pos.split(':').map(Number);
    if (!CLASSES.includes(cls)) throw new Error(`${file}: unknown class ${cls}`);
    return {line, col, length: +length, cls, text: text.join('\t')};
  });
}

module.exports = {CLASSES, read, classify, parseTokens, format};

if (require.main === module) {
  const check = process.argv.includes('--check');
  const expectedFile = path.join(__dirname, 'fixture.expected');
  const made = format(classify(parseTokens(fs.readFileSync(0, 'utf8')), vocabulary.load()));
  if (!check) {
    process.stdout.write(made);
  } else if (fs.readFileSync(expectedFile, 'utf8') !== made) {
    fs.writeFileSync('/dev/stderr', 'editors/test/fixture.expected is out of date with the grammar\'s ' +
        'tokens of fixture.rnl; regenerate it (see editors/test/fixture_test.sh --update) and ' +
        'review the diff.\n');
    process.exit(1);
  } else {
    console.log(`fixture.expected matches the grammar's ${made.split('\n').length - 1} tokens of fixture.rnl`);
  }
}
