// Parsing Runnel scripts (docs/language.md §2-§5) into the AST of lang/ast.h.
//
//   auto file = SourceFile::Read("model.rnl");          // lang/source.h
//   ParseResult r = Parse(**file);
//   if (!r.errors.empty()) { for (auto& d : r.errors) sink.Report(d); ... }
//   Interpret(*r.program);
//
// Syntax errors are Diagnostics in plain words, each with its span and, for
// an unclosed bracket, a note at the opening one (docs/language.md §7):
//   model.rnl:3:14: error: expected an expression after '+'
//   model.rnl:7:1: error: expected ')' to close '(' opened at 5:9
//   model.rnl:5:9: note: '(' opened here
// Parsing recovers after an error, so one run reports the independent
// mistakes of a whole file, in source order.
//
// Spans count lines from 1 and columns in bytes from 1, as diagnostics
// render them. Parse and IsIncomplete keep no state between calls; they
// share only the generated parser's prediction cache, which the ANTLR
// runtime locks, so separate threads may parse separate files at once.
#ifndef RUNNEL_LANG_PARSER_H_
#define RUNNEL_LANG_PARSER_H_

#include <functional>
#include <memory>
#include <string_view>
#include <vector>

#include "lang/ast.h"
#include "lang/diagnostics.h"
#include "lang/source.h"

namespace runnel::lang {

struct ParseResult {
  // Never null. With errors, it holds what recovery could make of the script
  // (unparsable expressions become NoneExprs): fit for an editor's outline,
  // not for running.
  std::unique_ptr<Program> program;
  std::vector<Diagnostic> errors;  // in source order
  // The generated parser's tree and tokens, which `program` no longer
  // needs. Freeing them takes a while for a large file: a caller in a hurry
  // may move this out and drop it on another thread. (It also holds the
  // statements handed out of a parse that failed; see below.)
  std::shared_ptr<void> parse_tree;

  bool ok() const { return errors.empty(); }
};

// Parses the whole of `file`; spans name file.path().
ParseResult Parse(const SourceFile& file);

// Called with each top-level statement of a script as soon as it is parsed,
// in source order, while the parse goes on; `imports` tells whether the
// statement holds an `import`, at any depth.
using StatementCallback = std::function<void(const Stmt& stmt, bool imports)>;

// Parse, handing statements out as it goes, on the calling thread: a caller
// may work on them on another thread while the rest is parsed. (The lexer
// then runs on the calling thread too, never on one of its own.)
//
// Statements are handed out only while no error is known. When the result
// has errors, those handed out are not in result.program, which is built as
// Parse(file) builds it: whatever was done with them is void. They stay
// valid as long as result.program and result.parse_tree.
ParseResult Parse(const SourceFile& file,
                  const StatementCallback& on_statement);

// For the REPL: whether `text` stops in the middle of a statement, so that
// it should read another line (`...` prompt) rather than run it. True inside
// an open `(`, `[` or `{` (an unterminated block or record) and after a token
// that continues the line (a binary operator, `,`, `=`, `=>`, `{`); false for
// complete input and for input with a lexical error, which Parse reports.
bool IsIncomplete(std::string_view text);

}  // namespace runnel::lang

#endif  // RUNNEL_LANG_PARSER_H_
