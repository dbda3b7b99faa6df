#include "lang/parser.h"

#include <algorithm>
#include <set>
#include <string>
#include <utility>

#include "antlr4-runtime.h"
#include "grammar/RunnelParser.h"
#include "lang/ast_builder.h"
#include "lang/lexer.h"
#include "lang/syntax_errors.h"
#include "runtime/strings.h"

namespace runnel::lang {
namespace {

using antlr4::Token;
using L = grammar::RunnelLexer;

// Far more nesting than any script needs; deeper would risk the stack of the
// recursive-descent parser.
constexpr int kMaxNesting = 100;
constexpr int kMaxPrefixRun = 1000;

// A UTF-8 byte order mark becomes three spaces: same bytes, same spans.
std::string WithoutByteOrderMark(std::string text) {
  if (text.rfind("\xEF\xBB\xBF", 0) == 0) text.replace(0, 3, "   ");
  return text;
}

Diagnostic Error(SourceSpan span, std::string message) {
  Diagnostic d;
  d.span = std::move(span);
  d.message = std::move(message);
  return d;
}

}  // namespace

ParseResult Parse(const SourceFile& file) {
  ParseResult result;
  const std::string text = WithoutByteOrderMark(file.text());
  SourcePositions positions(file.path(), text);
  size_t bad = 0;
  if (!IsValidUtf8(text, &bad)) {
    result.program = std::make_unique<Program>();
    result.program->file = file.path();
    result.errors.push_back(
        Error(positions.ByteSpan(bad, bad),
              fmt::format("invalid UTF-8 (byte 0x{:02X}): scripts must be "
                          "UTF-8 text",
                          static_cast<unsigned char>(text[bad]))));
    return result;
  }

  std::vector<Diagnostic> lex_errors;
  std::vector<Diagnostic> parse_errors;
  antlr4::ANTLRInputStream input(text);
  Lexer lexer(&input, &positions, &lex_errors);
  lexer.removeErrorListeners();
  antlr4::CommonTokenStream tokens(&lexer);
  tokens.fill();

  // Each open bracket and each prefix operator costs the recursive-descent
  // parser stack: refuse absurd nesting rather than overflow.
  int depth = 0;
  int prefix_run = 0;
  for (Token* t : tokens.getTokens()) {
    if (t->getChannel() != Token::DEFAULT_CHANNEL) continue;
    const size_t type = t->getType();
    prefix_run = type == L::MINUS || type == L::NOT ? prefix_run + 1 : 0;
    std::string too_deep;
    if (type == L::LPAREN || type == L::LBRACK || type == L::LBRACE) {
      if (++depth > kMaxNesting) {
        too_deep = StrCat("brackets nested more than ", kMaxNesting,
                          " deep; split the expression up");
      }
    } else if (type == L::RPAREN || type == L::RBRACK || type == L::RBRACE) {
      depth = std::max(0, depth - 1);
    } else if (prefix_run > kMaxPrefixRun) {
      too_deep = StrCat("more than ", kMaxPrefixRun,
                        " '-' and 'not' operators in a row");
    }
    if (!too_deep.empty()) {
      result.program = std::make_unique<Program>();
      result.program->file = file.path();
      result.errors.push_back(Error(positions.Span(t), std::move(too_deep)));
      return result;
    }
  }

  grammar::RunnelParser parser(&tokens);
  parser.removeErrorListeners();
  parser.setErrorHandler(
      std::make_shared<SyntaxErrorStrategy>(&positions, &parse_errors));
  grammar::RunnelParser::ProgramContext* tree = parser.program();
  AstBuilder builder(&positions, &parse_errors);
  result.program = builder.Build(tree);

  // A lexical error usually garbles the rest of its line for the parser:
  // report the lexical error alone there.
  std::set<int> lex_error_lines;
  for (Diagnostic& d : lex_errors) {
    lex_error_lines.insert(d.span.line);
    result.errors.push_back(std::move(d));
  }
  for (Diagnostic& d : parse_errors) {
    if (!lex_error_lines.contains(d.span.line)) {
      result.errors.push_back(std::move(d));
    }
  }
  std::stable_sort(result.errors.begin(), result.errors.end(),
                   [](const Diagnostic& a, const Diagnostic& b) {
                     return std::pair(a.span.line, a.span.col) <
                            std::pair(b.span.line, b.span.col);
                   });
  return result;
}

bool IsIncomplete(std::string_view text_in) {
  const std::string text = WithoutByteOrderMark(std::string(text_in));
  size_t bad = 0;
  if (!IsValidUtf8(text, &bad)) return false;
  SourcePositions positions("", text);
  std::vector<Diagnostic> errors;
  antlr4::ANTLRInputStream input(text);
  Lexer lexer(&input, &positions, &errors);
  lexer.removeErrorListeners();
  bool any = false;
  size_t last_end = 0;  // character index just past the last visible token
  for (;;) {
    std::unique_ptr<Token> t = lexer.nextToken();
    if (t->getType() == Token::EOF) break;
    if (t->getChannel() == Token::DEFAULT_CHANNEL) {
      any = true;
      last_end = t->getStopIndex() + 1;
    }
  }
  if (!errors.empty()) return false;
  if (lexer.bracketDepth > 0) return true;
  return any && lexer.continuationEnd == static_cast<long>(last_end);
}

}  // namespace runnel::lang
