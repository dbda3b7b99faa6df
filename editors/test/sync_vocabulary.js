// Writes the keyword, constant, dtype and builtin lists of the three editor
// modes from their sources of truth (vocabulary.js):
//   node editors/test/sync_vocabulary.js           rewrite the editor files
//   node editors/test/sync_vocabulary.js --check   fail if any is out of date
// The check is the test editors.vocabulary: adding a keyword to the grammar
// or a builtin to the interpreter without running this fails it. The builtin
// names come from the build's builtins.list (vocabulary.js); after adding a
// builtin, `python3 scripts/gen_ops_doc.py` rewrites docs/ops.md and runs
// this.
'use strict';

const fs = require('fs');
const path = require('path');
const vocabulary = require('./vocabulary');

const FILES = {
  textmate: 'editors/vscode/syntaxes/runnel.tmLanguage.json',
  vim: 'editors/vim/syntax/runnel.vim',
  emacs: 'editors/emacs/runnel-mode.el',
};

// Per keyword category: TextMate scope, Vim group.
const KEYWORD_STYLE = {
  declaration: {scope: 'storage.type.declaration.runnel', vim: 'runnelDeclaration'},
  conditional: {scope: 'keyword.control.conditional.runnel', vim: 'runnelConditional'},
  repeat: {scope: 'keyword.control.loop.runnel', vim: 'runnelRepeat'},
  flow: {scope: 'keyword.control.flow.runnel', vim: 'runnelFlow'},
  run: {scope: 'keyword.control.run.runnel', vim: 'runnelRun'},
  import: {scope: 'keyword.control.import.runnel', vim: 'runnelInclude'},
  block: {scope: 'keyword.other.block.runnel', vim: 'runnelBlock'},
  logical: {scope: 'keyword.operator.logical.runnel', vim: 'runnelLogical'},
  constant: {scope: 'constant.language.runnel', vim: 'runnelConstant'},
};

// A keyword or builtin followed by `=` (not `==`, `=>`) names an argument
// (`trainable_vars(scope = "")`, `random_uniform(s, max = 1)`); after `.`
// (but not after `..`) it names a member (`t.rank`). Neither is highlighted.
function textmate(v, text) {
  const grammar = JSON.parse(text);
  const words = (list) => list.join('|');
  const notAfterDot = '(?<!\\w)(?:(?<=\\.\\.)|(?<!\\.))';
  const notName = '(?!\\s*=(?![=>]))';
  grammar.repository.keywords = {
    patterns: Object.entries(v.byCategory).filter(([c]) => c !== 'constant').map(([c, list]) => ({
      name: KEYWORD_STYLE[c].scope,
      match: `${notAfterDot}(?:${words(list)})(?!\\w)${notName}`,
    })),
  };
  grammar.repository.constants = {
    patterns: [{
      name: KEYWORD_STYLE.constant.scope,
      match: `${notAfterDot}(?:${words(v.byCategory.constant)})(?!\\w)`,
    }],
  };
  grammar.repository.dtypes = {
    patterns: [{name: 'support.type.dtype.runnel', match: `${notAfterDot}(?:${words(v.dtypes)})(?!\\w)`}],
  };
  grammar.repository.builtins = {
    patterns: [{
      name: 'support.function.builtin.runnel',
      match: `${notAfterDot}(?:${words(v.builtins)})(?!\\w)${notName}`,
    }],
  };
  return JSON.stringify(grammar, null, 2) + '\n';
}

function replaceBetween(text, file, begin, end, body) {
  const b = text.indexOf(begin), e = text.indexOf(end);
  if (b < 0 || e < b) throw new Error(`${file}: no generated section (${begin.trim()} ... ${end.trim()})`);
  const from = text.indexOf('\n', b) + 1;
  return text.slice(0, from) + body + text.slice(e);
}

// Wraps `items` joined by `sep` into lines of at most `width` characters,
// every line after the first starting with `indent`.
function wrap(items, sep, first, indent, width = 78) {
  const lines = [];
  let line = first;
  items.forEach((item, i) => {
    const piece = item + (i < items.length - 1 ? sep : '');
    const column = line.length - line.lastIndexOf('\n') - 1;
    if (column + piece.length > width && line !== first && line !== indent) {
      lines.push(line.replace(/\s+$/, ''));
      line = indent;
    }
    line += piece;
  });
  lines.push(line);
  return lines.join('\n');
}

function vim(v, text) {
  const match = (group, list, tail) => {
    const alternatives = list.map((w, i) => (i ? '\\|' : '') + w);
    return wrap(alternatives, '', `syn match ${group} "\\%(\\%(\\.\\.\\)\\@<=\\|\\.\\@<!\\)\\<\\%(`, '      \\') +
        `\\)\\>${tail}"\n`;
  };
  const notName = '\\%(\\s*=[=>]\\@!\\)\\@!';
  let body = '';
  for (const [c, list] of Object.entries(v.byCategory)) {
    body += match(KEYWORD_STYLE[c].vim, list, c === 'constant' ? '' : notName);
  }
  body += match('runnelDType', v.dtypes, '');
  body += match('runnelBuiltin', v.builtins, notName);
  return replaceBetween(text, FILES.vim, '" BEGIN GENERATED', '" END GENERATED', body);
}

function emacs(v, text) {
  const list = (name, words, doc) =>
    wrap(words.map((w) => `"${w}"`), ' ', `(defconst ${name}\n  '(`, '    ') + `)\n  "${doc}")\n`;
  const keywords = Object.entries(v.byCategory).filter(([c]) => c !== 'constant').flatMap(([, w]) => w);
  return replaceBetween(text, FILES.emacs, ';; BEGIN GENERATED', ';; END GENERATED',
      list('runnel-keywords', keywords, 'Runnel keywords (grammar/Runnel.g4), less the constants.') +
      list('runnel-constants', v.byCategory.constant, 'Runnel constant keywords.') +
      list('runnel-dtypes', v.dtypes, 'Runnel dtype names (framework/dtype_table.h).') +
      list('runnel-builtins', v.builtins, 'Runnel builtins (the builtin table, via `runnel ops --json`).'));
}

function main() {
  const check = process.argv.includes('--check');
  let v;
  try {
    v = vocabulary.load();
  } catch (e) {
    console.error(e.message);
    process.exit(1);
  }
  for (const c of Object.keys(v.byCategory)) {
    if (!KEYWORD_STYLE[c]) {
      console.error(`keyword category ${c} has no KEYWORD_STYLE in editors/test/sync_vocabulary.js`);
      process.exit(1);
    }
  }
  const stale = [];
  for (const [kind, make] of [['textmate', textmate], ['vim', vim], ['emacs', emacs]]) {
    const file = path.join(vocabulary.root, FILES[kind]);
    const old = fs.readFileSync(file, 'utf8');
    const made = make(v, old);
    if (made === old) continue;
    stale.push(FILES[kind]);
    if (!check) fs.writeFileSync(file, made);
  }
  const counts = `${v.keywords.length} keywords, ${v.dtypes.length} dtypes, ${v.builtins.length} builtins`;
  if (check && stale.length) {
    console.error(`out of date with grammar/Runnel.g4, the builtins (${vocabulary.builtinsListPath()}) ` +
                  `and framework/dtype_table.h (${counts}):\n  ${stale.join('\n  ')}\n` +
                  'run: python3 scripts/gen_ops_doc.py (or node editors/test/sync_vocabulary.js)');
    process.exit(1);
  }
  console.log(check ? `editor vocabularies are in sync (${counts})` :
                      `${stale.length ? 'updated ' + stale.join(', ') : 'nothing to update'} (${counts})`);
}

main();
