#include "lang/syntax_errors.h"

#include <bitset>
#include <initializer_list>
#include <string>
#include <utility>

#include "base/strings.h"
#include "grammar/RunnelParser.h"

namespace runnel::lang {
namespace {

using antlr4::Parser;
using antlr4::Token;
using L = grammar::RunnelLexer;
using Rules = grammar::RunnelParser;

// Enough errors to fix in one go; past this they are mostly consequences.
constexpr size_t kMaxErrors = 50;

// A set of token types, EOF included.
class TokenSet {
 public:
  TokenSet() = default;
  TokenSet(std::initializer_list<size_t> types) {
    for (size_t t : types) Add(t);
  }
  explicit TokenSet(const antlr4::misc::IntervalSet& set) { Add(set); }

  void Add(size_t t) {
    if (t == Token::EOF) {
      eof_ = true;
    } else if (t < kSize) {
      bits_.set(t);
    }
  }
  void Add(const antlr4::misc::IntervalSet& set) {
    for (ssize_t t : set.toList()) {
      if (t < 0) {
        eof_ = true;
      } else {
        Add(static_cast<size_t>(t));
      }
    }
  }
  void Add(const TokenSet& other) {
    bits_ |= other.bits_;
    eof_ = eof_ || other.eof_;
  }
  void Remove(const TokenSet& other) {
    bits_ &= ~other.bits_;
    if (other.eof_) eof_ = false;
  }
  bool Has(size_t t) const {
    return t == Token::EOF ? eof_ : t < kSize && bits_.test(t);
  }
  bool Intersects(const TokenSet& other) const {
    return (bits_ & other.bits_).any() || (eof_ && other.eof_);
  }
  bool empty() const { return bits_.none() && !eof_; }
  size_t size() const { return bits_.count() + (eof_ ? 1 : 0); }
  // In token-type order, EOF last.
  std::vector<size_t> Types() const {
    std::vector<size_t> out;
    for (size_t t = 0; t < kSize; ++t) {
      if (bits_.test(t)) out.push_back(t);
    }
    if (eof_) out.push_back(Token::EOF);
    return out;
  }

 private:
  static constexpr size_t kSize = 128;
  std::bitset<kSize> bits_;
  bool eof_ = false;
};

const TokenSet& ExpressionStarts() {
  static const TokenSet set = {L::FN,     L::IF,     L::LOOP,   L::RUN,
                               L::NOT,    L::MINUS,  L::INT,    L::FLOAT,
                               L::STRING, L::TRUE,   L::FALSE,  L::NONE,
                               L::ID,     L::LPAREN, L::LBRACK, L::LBRACE};
  return set;
}
const TokenSet& StatementKeywords() {
  static const TokenSet set = {
      L::LET,    L::VAR,   L::STATE, L::INPUT, L::DEF,   L::RETURN,  L::IMPORT,
      L::DEVICE, L::SCOPE, L::AFTER, L::FOR,   L::BREAK, L::CONTINUE};
  return set;
}
bool IsKeyword(size_t t) { return t >= L::LET && t <= L::NOT; }
// Whether keywords are expected as names (grammar rule `name`): keywords
// that start nothing are there.
bool ExpectsNames(const TokenSet& expected) {
  return expected.Has(L::ID) && expected.Has(L::AS) && expected.Has(L::ELSE);
}
// Binary operators, `..` and the operators that continue an expression.
const TokenSet& ContinuingOperators() {
  static const TokenSet set = {
      L::POW, L::STAR, L::DSLASH, L::SLASH, L::PERCENT, L::AT, L::PLUS,
      L::MINUS, L::EQ, L::NE, L::LE, L::LT, L::GE, L::GT, L::AND, L::OR,
      L::DOTDOT, L::COLON_ASSIGN, L::PLUS_ASSIGN, L::MINUS_ASSIGN,
      L::STAR_ASSIGN, L::SLASH_ASSIGN,
      // Postfix call, index and member, and the optional tails of
      // expressions: these are what could come next, rarely what is missing.
      L::LPAREN, L::LBRACK, L::DOT, L::WITH, L::ELSE};
  return set;
}
const TokenSet& StatementEnds() {
  static const TokenSet set = {L::NEWLINE, L::SEMI, Token::EOF};
  return set;
}

bool IsOpener(size_t t) {
  return t == L::LPAREN || t == L::LBRACK || t == L::LBRACE;
}
bool IsCloser(size_t t) {
  return t == L::RPAREN || t == L::RBRACK || t == L::RBRACE;
}
size_t CloserOf(size_t opener) {
  return opener == L::LPAREN   ? L::RPAREN
         : opener == L::LBRACK ? L::RBRACK
                               : L::RBRACE;
}
const char* Text(size_t bracket) {
  switch (bracket) {
    case L::LPAREN:
      return "'('";
    case L::RPAREN:
      return "')'";
    case L::LBRACK:
      return "'['";
    case L::RBRACK:
      return "']'";
    case L::LBRACE:
      return "'{'";
    default:
      return "'}'";
  }
}

// A token as found in the input: 'x', '+', end of line, end of input.
std::string Found(const Token* t) {
  switch (t->getType()) {
    case Token::EOF:
      return "end of input";
    case L::NEWLINE:
      return "end of line";
    default:
      break;
  }
  std::string text = t->getText();
  if (text.size() > 24) text = text.substr(0, 20) + "...";
  return StrCat("'", text, "'");
}

// A token type as expected: 'let', a name, a newline.
std::string Expected(const Parser* parser, size_t t) {
  switch (t) {
    case Token::EOF:
      return "end of input";
    case L::ID:
      return "a name";
    case L::INT:
      return "an integer";
    case L::FLOAT:
      return "a number";
    case L::STRING:
      return "a string";
    case L::NEWLINE:
      return "a newline";
    default:
      return parser->getVocabulary().getLiteralName(t);
  }
}

// "a", "a or b", "a, b or c"
std::string JoinOr(const std::vector<std::string>& words) {
  std::string out;
  for (size_t i = 0; i < words.size(); ++i) {
    if (i > 0) out += i + 1 == words.size() ? " or " : ", ";
    out += words[i];
  }
  return out;
}

// What `expected` means, in as few words as possible: "an expression",
// "',' or ')'". Operators that could continue what came before are left out.
std::vector<std::string> Describe(const Parser* parser, TokenSet expected) {
  std::vector<std::string> words;
  if (ExpectsNames(expected)) {
    // Where keywords are names: a named argument, a member, a field.
    words.push_back(expected.Has(L::INT) ? "an expression" : "a name");
    expected.Remove(ExpressionStarts());
    for (size_t t = L::LET; t <= L::NOT; ++t) expected.Remove({t});
  } else if (expected.Has(L::LET) && expected.Has(L::INT)) {
    words.push_back("a statement");
    expected.Remove(StatementKeywords());
    expected.Remove(ExpressionStarts());
  } else if (expected.Has(L::INT) && expected.Has(L::ID)) {
    words.push_back("an expression");
    expected.Remove(ExpressionStarts());
  } else if (expected.Has(L::ID)) {
    words.push_back("a name");
    expected.Remove({L::ID});
  }
  const bool continuing =
      expected.Has(L::PLUS) || expected.Has(L::STAR) || expected.Has(L::DOT);
  if (continuing) expected.Remove(ContinuingOperators());
  const bool can_end = expected.Intersects(StatementEnds());
  expected.Remove(StatementEnds());
  for (size_t t : expected.Types()) words.push_back(Expected(parser, t));
  if (can_end && words.empty()) words.push_back("a newline or ';'");
  return words;
}

// The construct being parsed, for "missing ':' in input declaration".
std::string Construct(antlr4::RuleContext* ctx) {
  for (auto* c = ctx; c != nullptr;
       c = dynamic_cast<antlr4::RuleContext*>(c->parent)) {
    if (dynamic_cast<Rules::LetStatementContext*>(c)) return "let statement";
    if (dynamic_cast<Rules::VarStatementContext*>(c)) return "var declaration";
    if (dynamic_cast<Rules::StateStatementContext*>(c))
      return "state declaration";
    if (dynamic_cast<Rules::InputStatementContext*>(c))
      return "input declaration";
    if (dynamic_cast<Rules::DefStatementContext*>(c))
      return "function definition";
    if (dynamic_cast<Rules::ImportFileContext*>(c)) return "file import";
    if (dynamic_cast<Rules::ImportModuleContext*>(c)) return "import";
    if (dynamic_cast<Rules::ForStatementContext*>(c)) return "for statement";
    if (dynamic_cast<Rules::LoopExpressionContext*>(c))
      return "loop expression";
    if (dynamic_cast<Rules::LambdaExpressionContext*>(c))
      return "fn expression";
    if (dynamic_cast<Rules::RecordLiteralContext*>(c)) return "record";
    if (dynamic_cast<Rules::ParametersContext*>(c)) return "parameter list";
    if (dynamic_cast<Rules::ArgumentsContext*>(c)) return "argument list";
    if (dynamic_cast<Rules::TypeContext*>(c)) return "type";
    if (dynamic_cast<Rules::IfExpressionContext*>(c)) return "if expression";
    if (dynamic_cast<Rules::RunExpressionContext*>(c)) return "run expression";
  }
  return "";
}

// The default-channel token before `t`, or null.
Token* Previous(Parser* parser, const Token* t) {
  const size_t index = t->getTokenIndex();
  if (index == INVALID_INDEX) return nullptr;
  antlr4::TokenStream* tokens = parser->getTokenStream();
  for (size_t i = index; i-- > 0;) {
    Token* p = tokens->get(i);
    if (p->getChannel() == Token::DEFAULT_CHANNEL) return p;
  }
  return nullptr;
}

// The brackets still open before the token at `index`, innermost last. A
// newline on the default channel inside ( or [ is where the lexer took them
// as never closed (lang/lexer.h).
std::vector<Token*> OpenBrackets(Parser* parser, size_t index) {
  std::vector<Token*> open;
  if (index == INVALID_INDEX) return open;
  antlr4::TokenStream* tokens = parser->getTokenStream();
  for (size_t i = 0; i < index; ++i) {
    Token* p = tokens->get(i);
    if (p->getChannel() != Token::DEFAULT_CHANNEL) continue;
    if (IsOpener(p->getType())) {
      open.push_back(p);
    } else if (IsCloser(p->getType()) && !open.empty() &&
               CloserOf(open.back()->getType()) == p->getType()) {
      open.pop_back();
    } else if (p->getType() == L::NEWLINE) {
      while (!open.empty() && open.back()->getType() != L::LBRACE) {
        open.pop_back();
      }
    }
  }
  return open;
}

// The innermost bracket still open before `t`, or null.
Token* InnermostOpen(Parser* parser, const Token* t) {
  std::vector<Token*> open = OpenBrackets(parser, t->getTokenIndex());
  return open.empty() ? nullptr : open.back();
}

// The tokens that could come next at a parser's dead end: a union over the
// configurations the prediction still had when no alternative matched.
TokenSet ExpectedAtDeadEnd(Parser* parser,
                           const antlr4::NoViableAltException& e) {
  TokenSet set;
  antlr4::atn::ATNConfigSet* configs = e.getDeadEndConfigs();
  if (configs == nullptr) return TokenSet(parser->getExpectedTokens());
  const antlr4::atn::ATN& atn = parser->getATN();
  for (const auto& config : configs->configs) {
    antlr4::atn::ATNState* state = config->state;
    if (state->getStateType() == antlr4::atn::ATNState::RULE_STOP) {
      set.Add(atn.getExpectedTokens(state->stateNumber, e.getCtx()));
      continue;
    }
    for (antlr4::atn::Transition* t : state->transitions) {
      if (!t->isEpsilon()) set.Add(t->label());
    }
  }
  if (set.empty()) set.Add(parser->getExpectedTokens());
  return set;
}

}  // namespace

struct SyntaxErrorStrategy::Site {
  Parser* parser;
  Token* found;
  TokenSet expected;
  antlr4::RuleContext* ctx;
  bool missing = false;  // recovery will insert the one expected token
};

void SyntaxErrorStrategy::Report(const Site& site) {
  if (errors_->size() >= kMaxErrors) return;
  Parser* parser = site.parser;
  const Token* t = site.found;
  const size_t type = t->getType();
  const TokenSet& expected = site.expected;
  Token* prev = Previous(parser, t);
  const bool prev_is_sep = prev == nullptr || prev->getType() == L::NEWLINE ||
                           prev->getType() == L::SEMI;
  // The statement ended (at a newline, `;` or the end of input), or went on
  // over a dropped newline, before it was complete.
  const bool on_next_line = !prev_is_sep && t->getLine() > prev->getLine();
  const bool ended = type == Token::EOF || type == L::NEWLINE ||
                     type == L::SEMI || on_next_line;
  Token* open = InnermostOpen(parser, t);
  const size_t closer = open != nullptr ? CloserOf(open->getType()) : 0;
  const bool wants_expression =
      expected.Has(L::INT) && expected.Has(L::ID) &&
      (!expected.Has(L::LET) || ExpectsNames(expected));
  const bool wants_name = expected.Has(L::ID) && !expected.Has(L::INT);
  const std::string construct = Construct(site.ctx);
  std::vector<std::string> words = Describe(parser, expected);
  if (construct == "type" && wants_name && !words.empty()) {
    words[0] = "a dtype such as f32";
  }
  const std::string what = JoinOr(words);
  const std::string after = prev_is_sep ? "" : StrCat(" after ", Found(prev));

  Diagnostic d;
  d.span = positions_->Span(t);
  const SourceSpan after_prev =
      prev_is_sep ? positions_->Span(t) : positions_->After(prev);
  // Where a closing bracket was due: after the last token before it.
  Token* last = prev;
  while (last != nullptr &&
         (last->getType() == L::NEWLINE || last->getType() == L::SEMI)) {
    last = Previous(parser, last);
  }
  const SourceSpan after_last =
      last != nullptr ? positions_->After(last) : positions_->Span(t);
  auto unclosed = [&](std::string message) {
    d.message = std::move(message);
    Diagnostic note;
    note.severity = Severity::kNote;
    note.span = positions_->Span(open);
    note.message = StrCat(Text(open->getType()), " opened here");
    d.notes.push_back(std::move(note));
  };
  const std::string opened_at =
      open != nullptr ? StrCat(Text(closer), " to close ",
                               Text(open->getType()), " opened at ",
                               open->getLine(), ":", positions_->Span(open).col)
                      : "";
  // Every ( ) and [ ] of the grammar holds a comma-separated list. Past the
  // end of an element that ended a sub-rule (the arguments of a call) the
  // parser expects only the closer, though a ',' would have done as well.
  const bool after_element = open != nullptr && open->getType() != L::LBRACE &&
                             expected.size() == 1 && prev != nullptr &&
                             prev != open && prev->getType() != L::COMMA;
  // A single expected token that recovery can insert, in a known construct.
  const bool one_missing = words.size() == 1 && words[0].front() == '\'' &&
                           !construct.empty() && (site.missing || ended);

  if (ended) {
    d.span = after_prev;
    if (wants_expression && !prev_is_sep) {
      d.message = StrCat("expected an expression", after);
    } else if (open != nullptr &&
               (type == Token::EOF || on_next_line ||
                // Where the lexer took ( or [ as never closed (lexer.h).
                (type == L::NEWLINE && open->getType() != L::LBRACE) ||
                (expected.Has(closer) && !expected.Has(L::COMMA)))) {
      d.span = after_last;
      unclosed(StrCat("expected ", opened_at));
    } else if (one_missing) {
      d.message = StrCat("missing ", words[0], " in ", construct);
    } else if (!what.empty()) {
      d.message = StrCat("expected ", what, after);
    } else {
      d.span = positions_->Span(t);
      d.message = StrCat("unexpected ", Found(t));
    }
    if (prev != nullptr && prev->getType() == L::DOT) {
      Token* before = Previous(parser, prev);
      if (before != nullptr && before->getType() == L::INT &&
          before->getStopIndex() + 1 == prev->getStartIndex()) {
        d.message += StrCat("; write '", before->getText(),
                            ".0' for a floating-point number");
      }
    }
  } else if ((type == L::IF || type == L::FN || type == L::LOOP ||
              type == L::RUN) &&
             wants_expression && !expected.Has(type)) {
    d.message = StrCat("an '", t->getText(),
                       "' expression must be in parentheses when it is an "
                       "operand");
  } else if (wants_expression && !prev_is_sep && !expected.Has(type)) {
    d.message = StrCat("expected an expression", after);
  } else if (IsCloser(type) && open == nullptr) {
    d.message = StrCat("unexpected ", Found(t));
  } else if (IsCloser(type) && type != closer) {
    unclosed(StrCat("mismatched ", Found(t), ": expected ", opened_at));
  } else if (IsKeyword(type) && wants_name && !expected.Has(type)) {
    d.message =
        StrCat("'", t->getText(), "' is a keyword and cannot be a name");
  } else if (type == L::ELSE && !expected.Has(type) && prev_is_sep) {
    d.message =
        "'else' must be on the same line as the '}' that closes the 'if' "
        "block";
  } else if (ContinuingOperators().Has(type) && type != L::MINUS &&
             !expected.Has(type) && prev != nullptr &&
             prev->getType() == L::NEWLINE) {
    d.message = StrCat("unexpected ", Found(t),
                       " at the start of a line; to continue a statement on "
                       "the next line, end this line with the operator");
  } else if (open != nullptr && expected.Has(closer) &&
             (expected.Has(L::COMMA) || after_element)) {
    d.message = StrCat("expected ',' or ", Text(closer), " before ", Found(t));
  } else if (one_missing) {
    d.span = after_prev;
    d.message = StrCat("missing ", words[0], " in ", construct);
  } else if (type == L::QUESTION && !expected.Has(type)) {
    d.message =
        "unexpected '?': for a conditional value write 'if c { a } else { b "
        "}'";
  } else if (expected.Intersects(StatementEnds()) &&
             (ExpressionStarts().Has(type) || StatementKeywords().Has(type))) {
    d.message = StrCat("expected a newline or ';' before ", Found(t));
  } else if (!words.empty() && words.size() <= 3) {
    d.message = StrCat("unexpected ", Found(t), "; expected ", what);
  } else {
    d.message = StrCat("unexpected ", Found(t));
  }

  if (Records(site, d.span, ended ? prev : nullptr)) {
    errors_->push_back(std::move(d));
  }
}

bool SyntaxErrorStrategy::Records(const Site& site, const SourceSpan& span,
                                  Token* ended_after) {
  Parser* parser = site.parser;
  const Token* t = site.found;
  // One error per place: recovery can stumble over the same spot twice.
  if (!errors_->empty() && errors_->back().span.line == span.line &&
      errors_->back().span.col == span.col) {
    return false;
  }
  // A later error in the same statement is most likely a consequence of the
  // first: recovery inside a bracket or an argument list resumes there and
  // then stumbles over the rest of the statement. The statement is the same
  // while the parser is still inside it (a record's lines are not
  // statements); a statement that began after the last error (in a block)
  // is another; else they are the same when no newline or ';' came between.
  auto* statement = dynamic_cast<antlr4::ParserRuleContext*>(site.ctx);
  while (statement != nullptr &&
         statement->getRuleIndex() != Rules::RuleStatement) {
    statement = dynamic_cast<antlr4::ParserRuleContext*>(statement->parent);
  }
  if (statement != nullptr && statement == last_error_statement_) {
    return false;
  }
  const bool began_after =
      statement != nullptr && statement->getStart() != nullptr &&
      last_error_token_ != INVALID_INDEX &&
      statement->getStart()->getTokenIndex() > last_error_token_;
  const size_t index = t->getTokenIndex();
  if (!began_after && index != INVALID_INDEX &&
      last_error_token_ != INVALID_INDEX && index > last_error_token_) {
    bool same_statement = true;
    for (size_t i = last_error_token_; i < index; ++i) {
      const size_t between = parser->getTokenStream()->get(i)->getType();
      const size_t channel = parser->getTokenStream()->get(i)->getChannel();
      if (channel == Token::DEFAULT_CHANNEL &&
          (between == L::NEWLINE || between == L::SEMI)) {
        same_statement = false;
      }
    }
    if (same_statement) return false;
  }
  // A statement that ended too early ends before `t`, at the newline that
  // recovery may turn into a statement end.
  last_error_token_ = ended_after != nullptr && index != INVALID_INDEX
                          ? ended_after->getTokenIndex() + 1
                          : index;
  last_error_statement_ = statement;
  return true;
}

void SyntaxErrorStrategy::reportNoViableAlternative(
    Parser* parser, const antlr4::NoViableAltException& e) {
  Report({parser, e.getOffendingToken(), ExpectedAtDeadEnd(parser, e),
          e.getCtx()});
}

void SyntaxErrorStrategy::reportInputMismatch(
    Parser* parser, const antlr4::InputMismatchException& e) {
  Report({parser, e.getOffendingToken(), TokenSet(e.getExpectedTokens()),
          e.getCtx()});
}

void SyntaxErrorStrategy::reportFailedPredicate(
    Parser* parser, const antlr4::FailedPredicateException& e) {
  // The parser has no predicates; should one appear, say where.
  Report({parser, e.getOffendingToken(), TokenSet(parser->getExpectedTokens()),
          e.getCtx()});
}

void SyntaxErrorStrategy::reportUnwantedToken(Parser* parser) {
  if (inErrorRecoveryMode(parser)) return;
  beginErrorCondition(parser);
  Report({parser, parser->getCurrentToken(),
          TokenSet(getExpectedTokens(parser)), parser->getContext()});
}

void SyntaxErrorStrategy::reportMissingToken(Parser* parser) {
  if (inErrorRecoveryMode(parser)) return;
  beginErrorCondition(parser);
  Report({parser, parser->getCurrentToken(),
          TokenSet(getExpectedTokens(parser)), parser->getContext(),
          /*missing=*/true});
}

namespace {
bool BetweenStatements(Parser* parser) {
  const size_t rule = parser->getContext()->getRuleIndex();
  return rule == Rules::RuleProgram || rule == Rules::RuleBlock;
}
}  // namespace

bool SyntaxErrorStrategy::MayComeNext(Parser* parser, size_t state, size_t t) {
  const antlr4::atn::ATN& atn = parser->getATN();
  if (t > atn.maxTokenType) {  // EOF
    return atn.nextTokens(atn.states[state]).contains(t);
  }
  if (next_tokens_.empty()) next_tokens_.resize(atn.states.size());
  std::vector<bool>& next = next_tokens_[state];
  if (next.empty()) {
    const antlr4::misc::IntervalSet& set = atn.nextTokens(atn.states[state]);
    next.resize(atn.maxTokenType + 1);
    for (size_t k = 0; k <= atn.maxTokenType; ++k) next[k] = set.contains(k);
  }
  return next[t];
}

void SyntaxErrorStrategy::sync(Parser* parser) {
  if (inErrorRecoveryMode(parser)) return;
  // The parser syncs before every decision: settle the common case, a token
  // that can come next within the rule, without copying the set as
  // DefaultErrorStrategy::sync does.
  const antlr4::atn::ATN& atn = parser->getATN();
  const size_t la = parser->getInputStream()->LA(1);
  if (MayComeNext(parser, parser->getState(), la)) return;
  const antlr4::misc::IntervalSet& next =
      atn.nextTokens(atn.states[parser->getState()]);
  if (!BetweenStatements(parser)) {
    if (next.contains(Token::EPSILON)) return;
    antlr4::DefaultErrorStrategy::sync(parser);
    return;
  }
  antlr4::misc::IntervalSet expected = parser->getExpectedTokens();
  if (expected.contains(la)) return;
  // Something that cannot start or end a statement: report it and skip the
  // rest of this statement.
  beginErrorCondition(parser);
  Report({parser, parser->getCurrentToken(), TokenSet(expected),
          parser->getContext()});
  consumeUntil(parser, expected);
}

namespace {
// The newline that a continuation token hid just before the token at
// `index`, when a statement could end there (outside parentheses and
// brackets), or null.
antlr4::WritableToken* HiddenStatementEnd(Parser* parser, size_t index) {
  if (index == INVALID_INDEX) return nullptr;
  antlr4::TokenStream* tokens = parser->getTokenStream();
  Token* newline = nullptr;
  for (size_t i = index; i-- > 0;) {
    Token* t = tokens->get(i);
    if (t->getChannel() == Token::DEFAULT_CHANNEL) break;
    if (t->getType() == L::NEWLINE) {
      newline = t;
      break;
    }
  }
  if (newline == nullptr) return nullptr;
  for (Token* o : OpenBrackets(parser, index)) {
    if (o->getType() != L::LBRACE) return nullptr;
  }
  return dynamic_cast<antlr4::WritableToken*>(newline);
}
}  // namespace

Token* SyntaxErrorStrategy::singleTokenDeletion(Parser* parser) {
  // Deleting the `if` of `1 + if c { a } else { b }`, the `let` of
  // `let a = 1 +` followed by `let b = 2`, or the line break of `a.`
  // followed by `let b = 2` (keywords are member names), would leave the rest
  // to misparse; let recovery skip the whole construct, or end the statement,
  // instead.
  const size_t la = parser->getInputStream()->LA(1);
  if (la == L::IF || la == L::FN || la == L::LOOP || la == L::RUN ||
      la == L::NEWLINE || la == L::SEMI || StatementKeywords().Has(la) ||
      HiddenStatementEnd(parser, parser->getCurrentToken()->getTokenIndex())) {
    return nullptr;
  }
  return antlr4::DefaultErrorStrategy::singleTokenDeletion(parser);
}

void SyntaxErrorStrategy::consumeUntil(Parser* parser,
                                       const antlr4::misc::IntervalSet& set) {
  const bool between_statements = BetweenStatements(parser);
  int depth = 0;
  for (size_t t = parser->getInputStream()->LA(1); t != Token::EOF;
       t = parser->getInputStream()->LA(1)) {
    if (depth == 0 && set.contains(static_cast<size_t>(L::NEWLINE))) {
      Token* current = parser->getCurrentToken();
      if (antlr4::WritableToken* newline =
              HiddenStatementEnd(parser, current->getTokenIndex())) {
        // End the broken statement at the line break before this token.
        newline->setChannel(Token::DEFAULT_CHANNEL);
        parser->getTokenStream()->seek(newline->getTokenIndex());
        break;
      }
    }
    if (depth == 0 && set.contains(t) &&
        (!between_statements || t == L::NEWLINE || t == L::SEMI ||
         t == L::RBRACE)) {
      break;
    }
    if (IsOpener(t)) {
      ++depth;
    } else if (IsCloser(t) && depth > 0) {
      --depth;
    }
    parser->consume();
  }
}

}  // namespace runnel::lang
