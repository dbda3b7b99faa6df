// The VS Code extension test: tokenizes Runnel with the extension's TextMate
// grammar, through the libraries VS Code uses (vscode-textmate,
// vscode-oniguruma; npm ci in this folder installs them), and checks
//   - the extension manifest and language configuration,
//   - the class of every character of every token of fixture.rnl against
//     fixture.expected (see expectations.js for the classes),
//   - that no script of examples/, stdlib/, tests/grammar/ or editors/test
//     leaves a string or a bracket unterminated or holds an invalid token,
//   - and that an unterminated string is reported as one.
'use strict';

const fs = require('fs');
const path = require('path');
const expectations = require('./expectations');

const root = path.resolve(__dirname, '..', '..');
const extension = path.join(root, 'editors', 'vscode');

let vsctm, oniguruma;
try {
  vsctm = require('vscode-textmate');
  oniguruma = require('vscode-oniguruma');
} catch (e) {
  console.error(`textmate_test: ${e.message}\nrun \`npm ci\` in editors/test (the test editors.npm_setup does)`);
  process.exit(1);
}

const failures = [];
const fail = (message) => failures.push(message);

// Innermost first; the first scope matching a rule gives the class.
// Punctuation of strings and comments takes the class of what it delimits.
const SCOPE_CLASSES = [
  [/^invalid\./, 'invalid'],
  [/^punctuation\.definition\.(string|comment)\./, null],
  [/^comment\./, 'comment'],
  [/^constant\.character\.escape\./, 'escape'],
  [/^string\.quoted\.double\.device-spec\./, 'device'],
  [/^string\./, 'string'],
  [/^constant\.numeric\./, 'number'],
  [/^constant\.language\./, 'constant'],
  [/^support\.type\.dtype\./, 'dtype'],
  [/^support\.function\.builtin\./, 'builtin'],
  [/^entity\.name\.function\./, 'function'],
  [/^storage\.type\./, 'declaration'],
  [/^keyword\.control\.conditional\./, 'conditional'],
  [/^keyword\.control\.loop\./, 'repeat'],
  [/^keyword\.control\.flow\./, 'flow'],
  [/^keyword\.control\.run\./, 'run'],
  [/^keyword\.control\.import\./, 'import'],
  [/^keyword\.other\.block\./, 'block'],
  [/^keyword\.operator\.logical\./, 'logical'],
  [/^keyword\.operator\./, 'operator'],
];

function classOf(scopes) {
  for (let i = scopes.length - 1; i >= 0; i--) {
    for (const [re, cls] of SCOPE_CLASSES) {
      if (!re.test(scopes[i])) continue;
      if (cls) return cls;
      break;
    }
  }
  return 'plain';
}

async function loadGrammar() {
  const wasm = fs.readFileSync(require.resolve('vscode-oniguruma/release/onig.wasm'));
  await oniguruma.loadWASM(wasm.buffer.slice(wasm.byteOffset, wasm.byteOffset + wasm.byteLength));
  const manifest = JSON.parse(fs.readFileSync(path.join(extension, 'package.json'), 'utf8'));
  const contribution = manifest.contributes.grammars.find((g) => g.language === 'runnel');
  const grammarFile = path.join(extension, contribution.path);
  const registry = new vsctm.Registry({
    onigLib: Promise.resolve({
      createOnigScanner: (patterns) => new oniguruma.OnigScanner(patterns),
      createOnigString: (s) => new oniguruma.OnigString(s),
    }),
    loadGrammar: async (scopeName) => scopeName === contribution.scopeName ?
        vsctm.parseRawGrammar(fs.readFileSync(grammarFile, 'utf8'), grammarFile) : null,
  });
  return registry.loadGrammar(contribution.scopeName);
}

// [{line, tokens}] for each line of text, and the state after the last one.
function tokenize(grammar, text) {
  let stack = vsctm.INITIAL;
  const lines = text.replace(/\n$/, '').split('\n').map((line) => {
    const result = grammar.tokenizeLine(line, stack);
    stack = result.ruleStack;
    return {line, tokens: result.tokens};
  });
  return {lines, stack};
}

function checkManifest() {
  const manifest = JSON.parse(fs.readFileSync(path.join(extension, 'package.json'), 'utf8'));
  const language = (manifest.contributes.languages || []).find((l) => l.id === 'runnel');
  if (!language) return fail('package.json: no language with id `runnel`');
  if (!(language.extensions || []).includes('.rnl')) fail('package.json: language runnel lacks extension .rnl');
  const grammar = (manifest.contributes.grammars || []).find((g) => g.language === 'runnel');
  if (!grammar || grammar.scopeName !== 'source.runnel') fail('package.json: no grammar source.runnel for runnel');
  if (!fs.existsSync(path.join(extension, grammar.path))) fail(`package.json: no grammar file ${grammar.path}`);
  const config = JSON.parse(fs.readFileSync(path.join(extension, language.configuration), 'utf8'));
  if (config.comments.lineComment !== '#') fail('language-configuration.json: line comment is not #');
  const pairs = config.autoClosingPairs.map((p) => p.open + p.close);
  for (const p of ['{}', '[]', '()', '""']) {
    if (!pairs.includes(p)) fail(`language-configuration.json: no auto-closing pair ${p}`);
  }
  const rules = config.indentationRules;
  const increase = new RegExp(rules.increaseIndentPattern), decrease = new RegExp(rules.decreaseIndentPattern);
  for (const [line, inc, dec] of [
    ['def f(x) {', true, false], ['    let y = f(a,', true, false], ['} else {', true, true],
    ['}', false, true], ['let s = "{"', false, false], ['let x = 1  # {', false, false],
    ['    ])', false, true], ['let r = {x: 1}', false, false],
  ]) {
    if (increase.test(line) !== inc) fail(`increaseIndentPattern ${inc ? 'misses' : 'matches'} ${line}`);
    if (decrease.test(line) !== dec) fail(`decreaseIndentPattern ${dec ? 'misses' : 'matches'} ${line}`);
  }
  for (const rule of config.onEnterRules || []) new RegExp(rule.beforeText);
  if (config.folding && config.folding.markers) {
    new RegExp(config.folding.markers.start);
    new RegExp(config.folding.markers.end);
  }
}

function checkFixture(grammar) {
  const fixture = path.join(__dirname, 'fixture.rnl');
  const {lines} = tokenize(grammar, fs.readFileSync(fixture, 'utf8'));
  let checked = 0;
  for (const e of expectations.read(path.join(__dirname, 'fixture.expected'))) {
    const {line, tokens} = lines[e.line - 1];
    const at = `fixture.rnl:${e.line}:${e.col}`;
    if (line.substr(e.col - 1, e.length) !== e.text) {
      fail(`${at}: fixture.expected says ${JSON.stringify(e.text)}, the file has ` +
           `${JSON.stringify(line.substr(e.col - 1, e.length))}`);
      continue;
    }
    for (let i = e.col - 1; i < e.col - 1 + e.length; i++) {
      const token = tokens.find((t) => t.startIndex <= i && i < t.endIndex);
      const cls = classOf(token.scopes);
      checked++;
      if (cls !== e.cls) {
        fail(`${at}: ${JSON.stringify(e.text)} should be ${e.cls}, column ${i + 1} is ${cls} ` +
             `(${token.scopes.slice(1).join(' ')})`);
        break;
      }
    }
  }
  return checked;
}

// Problems of a script: unterminated strings and brackets, invalid tokens.
function problems(grammar, file) {
  const {lines, stack} = tokenize(grammar, fs.readFileSync(file, 'utf8'));
  const found = [];
  lines.forEach(({tokens}, n) => {
    for (const t of tokens) {
      const invalid = t.scopes.find((s) => s.startsWith('invalid.'));
      if (invalid) found.push(`${n + 1}:${t.startIndex + 1}: ${invalid}`);
    }
  });
  if (stack.depth !== vsctm.INITIAL.depth) {
    found.push(`the file ends inside a string or bracket (rule stack depth ${stack.depth})`);
  }
  return found;
}

function scripts() {
  const out = [];
  const walk = (dir) => {
    if (!fs.existsSync(dir)) return;
    for (const entry of fs.readdirSync(dir, {withFileTypes: true})) {
      const p = path.join(dir, entry.name);
      if (entry.isDirectory() && entry.name !== 'node_modules' && entry.name !== 'errors') walk(p);
      else if (entry.isFile() && entry.name.endsWith('.rnl')) out.push(p);
    }
  };
  for (const dir of ['examples', 'stdlib', 'tests/grammar', 'editors/test']) walk(path.join(root, dir));
  return out.sort();
}

async function main() {
  checkManifest();
  const grammar = await loadGrammar();
  const checked = checkFixture(grammar);
  const files = scripts();
  for (const file of files) {
    for (const p of problems(grammar, file)) fail(`${path.relative(root, file)}:${p}`);
  }
  // The check above must be able to fail.
  const broken = path.join(root, 'tests/grammar/errors/unterminated_string.rnl');
  if (problems(grammar, broken).length === 0) fail(`${path.relative(root, broken)}: not reported as unterminated`);

  for (const f of failures) console.log(`FAIL ${f}`);
  console.log(`textmate: ${checked} fixture characters, ${files.length} scripts: ` +
              (failures.length ? `${failures.length} failures` : 'ok'));
  process.exit(failures.length ? 1 : 0);
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
