// The words editors highlight, read from their sources of truth:
//   keywords  from the lexer rules `NAME : 'word' ...;` of grammar/Runnel.g4,
//   builtins  from the list the build writes from the builtin table
//             (build/builtins.list, by scripts/gen_ops_doc.py from
//             `runnel ops --json`; $RUNNEL_BUILTINS_LIST names another),
//   dtypes    from the table in framework/dtype_table.h (its "name" column).
// Each keyword belongs to one editor category below; a keyword the grammar
// gains without a category here is an error, so the editors cannot miss it.
'use strict';

const fs = require('fs');
const path = require('path');

const root = path.resolve(__dirname, '..', '..');

// Editor categories of the keywords (docs/language.md §2).
const KEYWORD_CATEGORIES = {
  declaration: ['let', 'var', 'state', 'input', 'def', 'fn'],
  conditional: ['if', 'else'],
  repeat: ['loop', 'while', 'for', 'in'],
  flow: ['return', 'break', 'continue'],
  run: ['run', 'with'],
  import: ['import', 'as'],
  block: ['device', 'scope', 'after'],
  logical: ['and', 'or', 'not'],
  constant: ['true', 'false', 'none'],
};

function readKeywords(grammarText) {
  const keywords = [];
  // A lexer rule whose body is one lowercase word, optionally with an action.
  const rule = /^([A-Z][A-Z_]*)\s*:\s*'([a-z_][a-z0-9_]*)'\s*(\{[^}]*\}\s*)?;/gm;
  for (let m; (m = rule.exec(grammarText));) keywords.push(m[2]);
  return keywords;
}

function readList(text) {
  return text.split('\n').map((l) => l.replace(/#.*/, '').trim()).filter((l) => l);
}

function readDTypes(headerText) {
  // The table's rows: X(Name, "name", ...) inside RUNNEL_DTYPES.
  const names = [...headerText.matchAll(/^\s*X\(\s*\w+\s*,\s*"([a-z0-9]+)"/gm)].map((m) => m[1]);
  if (names.length === 0) {
    throw new Error('framework/dtype_table.h: no `X(Name, "name", ...)` rows found');
  }
  return names;
}

// The generated builtin list: $RUNNEL_BUILTINS_LIST, else build/builtins.list.
function builtinsListPath() {
  return process.env.RUNNEL_BUILTINS_LIST || path.join(root, 'build', 'builtins.list');
}

function load() {
  const read = (p) => fs.readFileSync(path.join(root, p), 'utf8');
  const keywords = readKeywords(read('grammar/Runnel.g4'));
  const listPath = builtinsListPath();
  if (!fs.existsSync(listPath)) {
    throw new Error(`${listPath} not found: build runnel first (cmake --build build), ` +
                    'which writes it from `runnel ops --json`, or set RUNNEL_BUILTINS_LIST');
  }
  const builtins = readList(fs.readFileSync(listPath, 'utf8'));
  const dtypes = readDTypes(read('framework/dtype_table.h'));
  const errors = [];

  const categoryOf = {};
  for (const [category, words] of Object.entries(KEYWORD_CATEGORIES)) {
    for (const w of words) categoryOf[w] = category;
  }
  for (const k of keywords) {
    if (!categoryOf[k]) {
      errors.push(`keyword '${k}' of grammar/Runnel.g4 has no editor category: ` +
                  `add it to KEYWORD_CATEGORIES in editors/test/vocabulary.js`);
    }
  }
  for (const k of Object.keys(categoryOf)) {
    if (!keywords.includes(k)) {
      errors.push(`'${k}' in KEYWORD_CATEGORIES (editors/test/vocabulary.js) is not a keyword of grammar/Runnel.g4`);
    }
  }
  const seen = new Set();
  for (const b of builtins) {
    if (!/^[A-Za-z_][A-Za-z0-9_]*$/.test(b)) errors.push(`builtin '${b}' is not a name`);
    if (seen.has(b)) errors.push(`builtin '${b}' appears twice`);
    if (keywords.includes(b)) errors.push(`builtin '${b}' is a keyword`);
    if (dtypes.includes(b)) errors.push(`builtin '${b}' is a dtype`);
    seen.add(b);
  }
  if (errors.length) throw new Error(errors.join('\n'));

  const byCategory = {};
  for (const category of Object.keys(KEYWORD_CATEGORIES)) {
    byCategory[category] = keywords.filter((k) => categoryOf[k] === category);
  }
  return {keywords, categoryOf, byCategory, builtins, dtypes};
}

module.exports = {load, root, readKeywords, readDTypes, builtinsListPath, KEYWORD_CATEGORIES};

if (require.main === module) {
  const v = load();
  console.log(JSON.stringify({keywords: v.byCategory, builtins: v.builtins, dtypes: v.dtypes}, null, 2));
}
