// The lexer of Runnel scripts: ANTLR's generated RunnelLexer
// (grammar/Runnel.g4) plus lexical error reporting, and the mapping from
// ANTLR's token positions to source spans.
//
// Internal to lang/ (it includes ANTLR headers): lang/parser.h is the public
// interface. ANTLR counts characters (code points) and columns from 0; spans
// count bytes and columns from 1, as diagnostics render them.
//
// Lexical errors are reported in plain words ("unexpected character '$'",
// "unterminated string") and recovered from without disturbing the parser:
// a bad character is skipped, and a malformed string still becomes one STRING
// token, so one mistake gives one error.
#ifndef RUNNEL_LANG_LEXER_H_
#define RUNNEL_LANG_LEXER_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "base/source_span.h"
#include "grammar/RunnelLexer.h"
#include "lang/diagnostics.h"

namespace runnel::lang {

// Checks that `text` is UTF-8 as ANTLR's input stream accepts it; on failure
// sets `*bad_offset` to the first offending byte.
bool IsValidUtf8(std::string_view text, size_t* bad_offset);

// Maps ANTLR character indices (code points) to byte offsets, lines and
// columns of one text. The text must be valid UTF-8 and outlive this object.
// Not thread-safe, even its const methods: it caches the line found last.
class SourcePositions {
 public:
  SourcePositions(std::string path, std::string_view text);
  SourcePositions(const SourcePositions&) = delete;
  SourcePositions& operator=(const SourcePositions&) = delete;

  const std::string& path() const { return path_; }
  const FileName& file() const { return file_; }
  std::string_view text() const { return text_; }

  // The span of the tokens `first` through `last` (inclusive). An empty or
  // reversed range gives the span of `first`'s first character.
  SourceSpan Span(const antlr4::Token* first, const antlr4::Token* last) const;
  SourceSpan Span(const antlr4::Token* t) const { return Span(t, t); }
  // One column just past the end of `t`: where something after it is missing.
  SourceSpan After(const antlr4::Token* t) const;
  // Characters [first, last] by code point index.
  SourceSpan CharSpan(size_t first, size_t last) const;
  // The byte span [first, last] (inclusive).
  SourceSpan ByteSpan(size_t first, size_t last) const;
  // The text of the code points [first, last].
  std::string_view CharText(size_t first, size_t last) const;

 private:
  size_t ByteOf(size_t char_index) const;
  size_t StartByte(const antlr4::Token* t) const;
  size_t EndByte(const antlr4::Token* t) const;  // last byte, inclusive
  void LineCol(size_t byte, int* line, int* col) const;

  std::string path_;
  FileName file_;  // path_, interned once for all the spans
  std::string_view text_;
  std::vector<uint32_t> byte_of_char_;  // one per code point, plus the end
  std::vector<size_t> line_starts_;     // byte offset of each line
  mutable size_t last_line_ = 0;        // index of the line found last
};

// ANTLR's input stream of a text (its code points), readable in place by
// the lexer's inner loop.
class SourceStream : public antlr4::ANTLRInputStream {
 public:
  using ANTLRInputStream::ANTLRInputStream;
  const char32_t* chars() const { return _data.data(); }
  size_t length() const { return _data.size(); }
  size_t& position() { return p; }
};

// RunnelLexer with lexical errors appended to `errors` as Diagnostics, and
// without the white space and comment tokens (nothing reads them).
//
// It also keeps an unclosed ( or [ from running into the rest of the file:
// at a line break inside one, when the next line starts a statement (`let`,
// `def`, ... that no expression can hold), it takes the brackets as closed
// and puts the line break on the default channel. The parser then reports
// the unclosed bracket there, and the statements after it parse on their
// own. A newline on the default channel inside ( or [ therefore means that
// the brackets open there were never closed.
class Lexer : public grammar::RunnelLexer {
 public:
  Lexer(SourceStream* input, const SourcePositions* positions,
        std::vector<Diagnostic>* errors);

  std::unique_ptr<antlr4::Token> nextToken() override;
  size_t getLine() const override;
  size_t getCharPositionInLine() override;
  void notifyListeners(const antlr4::LexerNoViableAltException& e) override;
  void recover(const antlr4::LexerNoViableAltException& e) override;

 private:
  std::unique_ptr<antlr4::Token> NextToken();
  // At an opening quote: when the string is unterminated or has an unknown
  // escape, reports it and returns the string as a STRING token anyway.
  std::unique_ptr<antlr4::Token> MalformedString();
  // Whether the line after the newline just lexed starts a statement that
  // no expression can hold: `let x`, not `let = 1` (a named argument).
  bool NextLineStartsStatement();
  void AddError(SourceSpan span, std::string message);

  antlr4::atn::LexerATNSimulator* simulator_;  // also _interpreter
  const SourcePositions* positions_;
  std::vector<Diagnostic>* errors_;
  std::vector<size_t> open_;  // token types of the open brackets
  size_t last_type_ = 0;      // of the last token on the default channel
  // The last "unexpected character" error, extended over a run of them.
  size_t bad_run_first_ = 0;
  size_t bad_run_last_ = 0;
  int bad_run_index_ = -1;
};

}  // namespace runnel::lang

#endif  // RUNNEL_LANG_LEXER_H_
