// Syntax errors in plain words (docs/language.md §7), and recovery so that one
// run reports every independent mistake of a script.
//
// Internal to lang/. SyntaxErrorStrategy replaces ANTLR's messages ("no
// viable alternative", "mismatched input ... expecting {...}") with ones
// that say what was expected where:
//   expected an expression after '+'
//   expected ')' to close '(' opened at 3:9        (and a note at the '(')
//   missing '=' in let statement
//   expected a newline or ';' before 'let'
//   unexpected '}'
// It keeps ANTLR's recovery (single-token insertion and deletion, then
// skipping to a token that can follow) with three changes: skipping steps
// over whole bracketed groups; an error between statements skips the rest of
// that statement, up to the next newline or ';'; and a newline that a
// continuation token hid (`let a = 1 +` then `let b = 2`) ends the broken
// statement, so the next line parses on its own. Of the errors in one
// statement only the first is reported: the others are mostly its
// consequences.
#ifndef RUNNEL_LANG_SYNTAX_ERRORS_H_
#define RUNNEL_LANG_SYNTAX_ERRORS_H_

#include <vector>

#include "antlr4-runtime.h"
#include "lang/diagnostics.h"
#include "lang/lexer.h"

namespace runnel::lang {

class SyntaxErrorStrategy : public antlr4::DefaultErrorStrategy {
 public:
  // Errors are appended to `errors`; `positions` must outlive the parse.
  SyntaxErrorStrategy(const SourcePositions* positions,
                      std::vector<Diagnostic>* errors)
      : positions_(positions), errors_(errors) {}

  void sync(antlr4::Parser* parser) override;

 protected:
  void reportNoViableAlternative(
      antlr4::Parser* parser, const antlr4::NoViableAltException& e) override;
  void reportInputMismatch(antlr4::Parser* parser,
                           const antlr4::InputMismatchException& e) override;
  void reportFailedPredicate(
      antlr4::Parser* parser,
      const antlr4::FailedPredicateException& e) override;
  void reportUnwantedToken(antlr4::Parser* parser) override;
  void reportMissingToken(antlr4::Parser* parser) override;
  void consumeUntil(antlr4::Parser* parser,
                    const antlr4::misc::IntervalSet& set) override;
  antlr4::Token* singleTokenDeletion(antlr4::Parser* parser) override;

 private:
  struct Site;
  void Report(const Site& site);
  // Whether an error at `span` (for `site`) is reported: not a second one
  // at one place, nor a later one in the statement of the last, which is
  // most likely its consequence; if so, notes it as the last. A statement
  // that ended too early ends after `ended_after` (else nullptr).
  bool Records(const Site& site, const SourceSpan& span,
               antlr4::Token* ended_after);
  // Whether token type `t` may come next within the rule at ATN `state`:
  // the parser asks before every decision.
  bool MayComeNext(antlr4::Parser* parser, size_t state, size_t t);

  const SourcePositions* positions_;
  std::vector<Diagnostic>* errors_;
  // Where the statement of the last error may end at the earliest: the token
  // index of the error, or of what follows the last token before it.
  size_t last_error_token_ = INVALID_INDEX;
  // The innermost statement of the last error, if any; the parser owns it.
  antlr4::ParserRuleContext* last_error_statement_ = nullptr;
  // MayComeNext's answers, by state and token type; empty until asked.
  std::vector<std::vector<bool>> next_tokens_;
};

}  // namespace runnel::lang

#endif  // RUNNEL_LANG_SYNTAX_ERRORS_H_
