#include "lang/ast_builder.h"

#include <charconv>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <utility>

#include "base/strings.h"

namespace runnel::lang {

namespace {
using L = grammar::RunnelLexer;

antlr4::Token* TokenOf(antlr4::tree::TerminalNode* n) {
  return n != nullptr ? n->getSymbol() : nullptr;
}

std::string NameText(grammar::RunnelParser::NameContext* c) {
  return c != nullptr ? c->getText() : "";
}

template <typename T>
std::unique_ptr<T> Make(SourceSpan span) {
  auto e = std::make_unique<T>();
  e->span = std::move(span);
  return e;
}

BinaryOp BinaryOpOf(size_t token_type) {
  switch (token_type) {
    case L::PLUS:
      return BinaryOp::kAdd;
    case L::MINUS:
      return BinaryOp::kSub;
    case L::STAR:
      return BinaryOp::kMul;
    case L::SLASH:
      return BinaryOp::kDiv;
    case L::DSLASH:
      return BinaryOp::kFloorDiv;
    case L::PERCENT:
      return BinaryOp::kMod;
    case L::AT:
      return BinaryOp::kMatMul;
    case L::EQ:
      return BinaryOp::kEq;
    case L::NE:
      return BinaryOp::kNe;
    case L::LT:
      return BinaryOp::kLt;
    case L::LE:
      return BinaryOp::kLe;
    case L::GT:
      return BinaryOp::kGt;
    case L::GE:
      return BinaryOp::kGe;
    default:
      return BinaryOp::kAdd;  // error recovery conjured the operator
  }
}

AssignOp AssignOpOf(size_t token_type) {
  switch (token_type) {
    case L::PLUS_ASSIGN:
      return AssignOp::kAdd;
    case L::MINUS_ASSIGN:
      return AssignOp::kSub;
    case L::STAR_ASSIGN:
      return AssignOp::kMul;
    case L::SLASH_ASSIGN:
      return AssignOp::kDiv;
    default:
      return AssignOp::kAssign;
  }
}

std::string WithoutSeparators(std::string_view digits) {
  std::string out;
  out.reserve(digits.size());
  for (char c : digits) {
    if (c != '_') out += c;
  }
  return out;
}
}  // namespace

std::string DecodeStringLiteral(std::string_view literal) {
  std::string out;
  size_t i = literal.empty() || literal[0] != '"' ? 0 : 1;
  while (i < literal.size()) {
    const char c = literal[i];
    if (c == '"') break;
    if (c == '\\' && i + 1 < literal.size()) {
      const char e = literal[i + 1];
      switch (e) {
        case 'n':
          out += '\n';
          break;
        case 't':
          out += '\t';
          break;
        case '\\':
          out += '\\';
          break;
        case '"':
          out += '"';
          break;
        default:
          out += c;
          out += e;
          break;
      }
      i += 2;
      continue;
    }
    out += c;
    ++i;
  }
  return out;
}

// ---------------------------------------------------------------------------
// Helpers

antlr4::tree::TerminalNode* AstBuilder::Tok(antlr4::ParserRuleContext* c,
                                            size_t type) {
  for (antlr4::tree::ParseTree* child : c->children) {
    auto* t = As<antlr4::tree::TerminalNode>(child);
    if (t != nullptr && t->getSymbol()->getType() == type) return t;
  }
  return nullptr;
}

SourceSpan AstBuilder::Span(antlr4::ParserRuleContext* c) const {
  antlr4::Token* start = c->getStart();
  if (start == nullptr) return SourceSpan{positions_->file()};
  return positions_->Span(start, c->getStop());
}

SourceSpan AstBuilder::Span(antlr4::tree::TerminalNode* n) const {
  return positions_->Span(n->getSymbol());
}

std::string AstBuilder::Text(antlr4::tree::TerminalNode* n) const {
  if (n == nullptr) return std::string();
  // From the UTF-8 source, rather than through ANTLR's UTF-32 copy. Tokens
  // that error recovery conjured are not in the source.
  const antlr4::Token* t = n->getSymbol();
  const size_t start = t->getStartIndex(), stop = t->getStopIndex();
  if (t->getType() == antlr4::Token::EOF || start == INVALID_INDEX ||
      stop == INVALID_INDEX || stop < start) {
    return n->getText();
  }
  return std::string(positions_->CharText(start, stop));
}

void AstBuilder::Error(SourceSpan span, std::string message) {
  Diagnostic d;
  d.span = std::move(span);
  d.message = std::move(message);
  errors_->push_back(std::move(d));
}

bool AstBuilder::HasSyntaxErrorWithin(const SourceSpan& span) const {
  auto before = [](int line, int col, int line2, int col2) {
    return line < line2 || (line == line2 && col <= col2);
  };
  for (size_t i = 0; i < syntax_errors_; ++i) {
    const SourceSpan& e = (*errors_)[i].span;
    // Just past the end too: "expected an expression after '='".
    if (before(span.line, span.col, e.line, e.col) &&
        before(e.line, e.col, span.end_line, span.end_col + 1)) {
      return true;
    }
  }
  return false;
}

namespace {
// What `find` says of `c`, remembered in `seen` for c's class.
template <typename Alt, typename Context>
Alt Lookup(std::vector<std::pair<const std::type_info*, Alt>>* seen, Context* c,
           Alt (*find)(Context*)) {
  const std::type_info* type = &typeid(*c);
  for (const auto& [t, alt] : *seen) {
    if (t == type) return alt;
  }
  const Alt alt = find(c);
  seen->emplace_back(type, alt);
  return alt;
}
}  // namespace

AstBuilder::LogicalAlt AstBuilder::AltOf(G::LogicalContext* c) {
  return Lookup(&logical_alts_, c, &FindAlt);
}

AstBuilder::OperationAlt AstBuilder::AltOf(G::OperationContext* c) {
  return Lookup(&operation_alts_, c, &FindAlt);
}

AstBuilder::LogicalAlt AstBuilder::FindAlt(G::LogicalContext* c) {
  if (dynamic_cast<G::OperandContext*>(c)) return LogicalAlt::kOperand;
  if (dynamic_cast<G::ConjunctionContext*>(c)) return LogicalAlt::kConjunction;
  if (dynamic_cast<G::DisjunctionContext*>(c)) return LogicalAlt::kDisjunction;
  if (dynamic_cast<G::NegationContext*>(c)) return LogicalAlt::kNegation;
  return LogicalAlt::kOther;
}

AstBuilder::OperationAlt AstBuilder::FindAlt(G::OperationContext* c) {
  using A = OperationAlt;
  if (dynamic_cast<G::NameReferenceContext*>(c)) return A::kName;
  if (dynamic_cast<G::CallPostfixContext*>(c)) return A::kCall;
  if (dynamic_cast<G::IntLiteralContext*>(c)) return A::kInt;
  if (dynamic_cast<G::FloatLiteralContext*>(c)) return A::kFloat;
  if (dynamic_cast<G::MemberPostfixContext*>(c)) return A::kMember;
  if (dynamic_cast<G::AdditiveContext*>(c)) return A::kAdditive;
  if (dynamic_cast<G::MultiplicativeContext*>(c)) return A::kMultiplicative;
  if (dynamic_cast<G::ComparisonContext*>(c)) return A::kComparison;
  if (dynamic_cast<G::RangeContext*>(c)) return A::kRange;
  if (dynamic_cast<G::StringLiteralContext*>(c)) return A::kString;
  if (dynamic_cast<G::IndexPostfixContext*>(c)) return A::kIndex;
  if (dynamic_cast<G::ParenthesizedContext*>(c)) return A::kParenthesized;
  if (dynamic_cast<G::ListLiteralContext*>(c)) return A::kList;
  if (dynamic_cast<G::UnaryContext*>(c)) return A::kUnary;
  if (dynamic_cast<G::PowerContext*>(c)) return A::kPower;
  if (dynamic_cast<G::BoolLiteralContext*>(c)) return A::kBool;
  if (dynamic_cast<G::NoneLiteralContext*>(c)) return A::kNone;
  if (dynamic_cast<G::RecordLiteralContext*>(c)) return A::kRecord;
  return A::kOther;
}

AstBuilder::G::OperationContext* AstBuilder::Operand(G::LogicalContext* c) {
  if (c == nullptr || AltOf(c) != LogicalAlt::kOperand) return nullptr;
  G::OperationContext* operation = One<G::OperationContext>(c);
  return IsOperand(operation) ? operation : nullptr;
}

AstBuilder::G::OperationContext* AstBuilder::Operand(G::ExpressionContext* c) {
  auto* e = As<G::OperatorExpressionContext>(c);
  return e != nullptr ? Operand(One<G::LogicalContext>(e)) : nullptr;
}

bool AstBuilder::IsOperand(G::OperationContext* c) {
  if (c == nullptr) return false;
  switch (AltOf(c)) {
    case OperationAlt::kUnary:
    case OperationAlt::kPower:
    case OperationAlt::kMultiplicative:
    case OperationAlt::kAdditive:
    case OperationAlt::kRange:
    case OperationAlt::kComparison:
    case OperationAlt::kOther:
      return false;
    default:
      return true;
  }
}

ExprPtr AstBuilder::Placeholder(antlr4::ParserRuleContext* c) {
  return Make<NoneExpr>(c != nullptr ? Span(c)
                                     : SourceSpan{positions_->file()});
}

ExprPtr AstBuilder::Binary(BinaryOp op, ExprPtr lhs, ExprPtr rhs,
                           antlr4::Token* op_token,
                           antlr4::ParserRuleContext* c) {
  auto e = Make<BinaryExpr>(Span(c));
  e->op = op;
  e->lhs = std::move(lhs);
  e->rhs = std::move(rhs);
  if (op_token != nullptr) e->op_span = positions_->Span(op_token);
  return e;
}

// ---------------------------------------------------------------------------
// Expressions, loosest first

ExprPtr AstBuilder::Expression(G::ExpressionContext* c) {
  if (c == nullptr) return Placeholder(nullptr);
  if (auto* e = As<G::OperatorExpressionContext>(c)) {
    if (e->op == nullptr) return Logical(One<G::LogicalContext>(e));
    auto assign = Make<AssignExpr>(Span(c));
    assign->op = AssignOpOf(e->op->getType());
    // The grammar takes any operand there, so that one token decides.
    if (G::LogicalContext* target = One<G::LogicalContext>(e);
        target != nullptr && Operand(target) == nullptr &&
        !HasSyntaxErrorWithin(assign->span)) {
      Error(Span(target),
            StrCat("'", e->op->getText(),
                   "' needs a var, a state or a let name on its left, not an "
                   "operator expression"));
    }
    assign->target = Logical(One<G::LogicalContext>(e));
    assign->value = Expression(One<G::ExpressionContext>(e));
    return assign;
  }
  if (auto* e = As<G::ConditionalExpressionContext>(c)) {
    return If(e->ifExpression());
  }
  if (auto* e = As<G::LambdaExpressionContext>(c)) {
    auto lambda = Make<LambdaExpr>(Span(c));
    lambda->params = Params(e->parameters());
    const int outer_for_depth = std::exchange(for_depth_, 0);
    if (e->block() != nullptr) {
      lambda->body_block = BuildBlock(e->block());
    } else {
      lambda->body_expr = Expression(e->expression());
    }
    for_depth_ = outer_for_depth;
    return lambda;
  }
  if (auto* e = As<G::LoopExpressionContext>(c)) {
    auto loop = Make<LoopExpr>(Span(c));
    loop->state = BuildPattern(e->pattern());
    loop->init = Expression(e->expression());
    if (auto* head = As<G::ForLoopHeadContext>(e->loopHead())) {
      loop->is_for = true;
      loop->var = BuildPattern(head->pattern());
      loop->iterable = Expression(head->expression());
    } else if (auto* head = As<G::WhileLoopHeadContext>(e->loopHead())) {
      loop->is_for = false;
      loop->cond = Expression(head->expression());
    }
    // (A malformed option, `with` and no name, is a syntax error already.)
    G::LoopOptionContext* o = e->loopOption();
    if (o != nullptr && o->ID() != nullptr) {
      loop->option = o->ID()->getText();
      loop->option_span = Span(o);
      loop->option_value = Expression(o->expression());
    }
    loop->body = BuildBlock(e->block());
    return loop;
  }
  if (auto* e = As<G::RunExpressionContext>(c)) {
    auto run = Make<RunExpr>(Span(c));
    std::vector<G::ExpressionContext*> parts = e->expression();
    run->fetches = Expression(parts.empty() ? nullptr : parts[0]);
    if (parts.size() > 1) run->feeds = Expression(parts[1]);
    return run;
  }
  return Placeholder(c);
}

ExprPtr AstBuilder::If(G::IfExpressionContext* c) {
  if (c == nullptr) return Placeholder(nullptr);
  auto e = Make<IfExpr>(Span(c));
  e->cond = Expression(c->expression());
  std::vector<G::BlockContext*> blocks = c->block();
  if (!blocks.empty()) e->then_block = BuildBlock(blocks[0]);
  if (blocks.size() > 1) e->else_block = BuildBlock(blocks[1]);
  if (c->ifExpression() != nullptr) e->else_if = If(c->ifExpression());
  return e;
}

// The left-recursive rules nest their contexts to the left (`a - b - c`,
// `f(x)[0].y`): the builders walk down that spine in a loop and build the
// expression on the way back up, so that long chains cost no deep recursion.
ExprPtr AstBuilder::Logical(G::LogicalContext* c) {
  struct Step {
    G::LogicalContext* c;
    LogicalAlt alt;
  };
  std::vector<Step> spine;  // outermost first
  LogicalAlt alt = LogicalAlt::kOther;
  while (c != nullptr) {
    alt = AltOf(c);
    G::LogicalContext* left;
    if (alt == LogicalAlt::kConjunction) {
      left = One<G::LogicalContext>(c, 0);
    } else if (alt == LogicalAlt::kDisjunction) {
      left = One<G::LogicalContext>(c, 0);
    } else {
      break;
    }
    spine.push_back({c, alt});
    c = left;
  }
  ExprPtr e;
  if (c == nullptr) {
    e = Placeholder(nullptr);
  } else if (alt == LogicalAlt::kOperand) {
    e = Operation(One<G::OperationContext>(c));
  } else if (alt == LogicalAlt::kNegation) {
    auto* n = static_cast<G::NegationContext*>(c);
    auto neg = Make<UnaryExpr>(Span(c));
    neg->op = UnaryOp::kNot;
    neg->operand = Logical(One<G::LogicalContext>(n));
    e = std::move(neg);
  } else {
    e = Placeholder(c);
  }
  for (size_t i = spine.size(); i-- > 0;) {
    G::LogicalContext* p = spine[i].c;
    switch (spine[i].alt) {
      case LogicalAlt::kConjunction: {
        auto* x = static_cast<G::ConjunctionContext*>(p);
        e = Binary(BinaryOp::kAnd, std::move(e),
                   Logical(One<G::LogicalContext>(x, 1)),
                   TokenOf(Tok(x, L::AND)), x);
        break;
      }
      default: {
        auto* x = static_cast<G::DisjunctionContext*>(p);
        e = Binary(BinaryOp::kOr, std::move(e),
                   Logical(One<G::LogicalContext>(x, 1)),
                   TokenOf(Tok(x, L::OR)), x);
        break;
      }
    }
  }
  return e;
}

ExprPtr AstBuilder::Operation(G::OperationContext* c) {
  struct Step {
    G::OperationContext* c;
    OperationAlt alt;
  };
  std::vector<Step> spine;  // outermost first
  OperationAlt alt = OperationAlt::kOther;
  while (c != nullptr) {
    alt = AltOf(c);
    G::OperationContext* left;
    switch (alt) {
      case OperationAlt::kCall:
        left = One<G::OperationContext>(c);
        break;
      case OperationAlt::kIndex:
        left = One<G::OperationContext>(c);
        break;
      case OperationAlt::kMember:
        left = One<G::OperationContext>(c);
        break;
      case OperationAlt::kPower:
        left = One<G::OperationContext>(c, 0);
        break;
      case OperationAlt::kMultiplicative:
        left = One<G::OperationContext>(c, 0);
        break;
      case OperationAlt::kAdditive:
        left = One<G::OperationContext>(c, 0);
        break;
      case OperationAlt::kRange:
        left = One<G::OperationContext>(c, 0);
        break;
      case OperationAlt::kComparison:
        left = One<G::OperationContext>(c, 0);
        break;
      default:
        left = c;  // an operand: the bottom of the spine
        break;
    }
    if (left == c) break;
    spine.push_back({c, alt});
    c = left;
  }
  ExprPtr e = c != nullptr ? Primary(c, alt) : Placeholder(nullptr);
  // `e op rhs` for an alternative whose operator is labeled `op`.
  auto with_op = [&](auto* x) {
    return Binary(BinaryOpOf(x->op != nullptr ? x->op->getType() : 0),
                  std::move(e), Operation(One<G::OperationContext>(x, 1)),
                  x->op, x);
  };
  for (size_t i = spine.size(); i-- > 0;) {
    G::OperationContext* p = spine[i].c;
    switch (spine[i].alt) {
      case OperationAlt::kCall: {
        auto call = Make<CallExpr>(Span(p));
        call->callee = std::move(e);
        call->args = Arguments(static_cast<G::CallPostfixContext*>(p));
        e = std::move(call);
        break;
      }
      case OperationAlt::kIndex: {
        auto indexed = Make<IndexExpr>(Span(p));
        indexed->target = std::move(e);
        for (G::SubscriptContext* s :
             static_cast<G::IndexPostfixContext*>(p)->subscript()) {
          indexed->subscripts.push_back(BuildSubscript(s));
        }
        e = std::move(indexed);
        break;
      }
      case OperationAlt::kMember: {
        auto* x = static_cast<G::MemberPostfixContext*>(p);
        auto m = Make<MemberExpr>(Span(p));
        m->target = std::move(e);
        m->name = NameText(One<G::NameContext>(x));
        e = std::move(m);
        break;
      }
      case OperationAlt::kPower: {
        auto* x = static_cast<G::PowerContext*>(p);
        e = Binary(BinaryOp::kPow, std::move(e),
                   Operation(One<G::OperationContext>(x, 1)),
                   TokenOf(Tok(x, L::POW)), x);
        break;
      }
      case OperationAlt::kMultiplicative:
        e = with_op(static_cast<G::MultiplicativeContext*>(p));
        break;
      case OperationAlt::kAdditive:
        e = with_op(static_cast<G::AdditiveContext*>(p));
        break;
      // `..` and comparisons do not associate (docs/language.md §5); the
      // grammar leaves that to the builder.
      case OperationAlt::kRange: {
        auto* x = static_cast<G::RangeContext*>(p);
        antlr4::Token* op = TokenOf(Tok(x, L::DOTDOT));
        if (op != nullptr && i + 1 < spine.size() &&
            spine[i + 1].alt == OperationAlt::kRange &&
            !HasSyntaxErrorWithin(Span(x))) {
          Error(positions_->Span(op),
                "ranges do not chain: a range is 'start..stop'");
        }
        e = Binary(BinaryOp::kRange, std::move(e),
                   Operation(One<G::OperationContext>(x, 1)), op, x);
        break;
      }
      default: {
        auto* x = static_cast<G::ComparisonContext*>(p);
        if (x->op != nullptr && i + 1 < spine.size() &&
            spine[i + 1].alt == OperationAlt::kComparison &&
            !HasSyntaxErrorWithin(Span(x))) {
          Error(positions_->Span(x->op),
                "comparisons do not chain: write 'a < b and b < c' instead of "
                "'a < b < c'");
        }
        e = with_op(x);
        break;
      }
    }
  }
  return e;
}

std::vector<Arg> AstBuilder::Arguments(G::CallPostfixContext* c) {
  std::vector<Arg> args;
  G::ArgumentsContext* list = One<G::ArgumentsContext>(c);
  if (list == nullptr) return args;
  for (G::ArgumentContext* a : All<G::ArgumentContext>(list)) {
    Arg arg;
    arg.span = Span(a);
    if (auto* pos = As<G::PositionalArgumentContext>(a)) {
      arg.value = Expression(One<G::ExpressionContext>(pos));
    } else if (auto* named = As<G::NamedArgumentContext>(a)) {
      arg.name = NameText(One<G::NameContext>(named));
      arg.value = Expression(One<G::ExpressionContext>(named));
    } else {
      arg.value = Placeholder(a);
    }
    args.push_back(std::move(arg));
  }
  return args;
}

Subscript AstBuilder::BuildSubscript(G::SubscriptContext* c) {
  Subscript s;
  s.span = Span(c);
  if (auto* index = As<G::IndexSubscriptContext>(c)) {
    s.index = Expression(One<G::ExpressionContext>(index));
  } else if (auto* slice = As<G::SliceSubscriptContext>(c)) {
    s.is_slice = true;
    if (slice->lo != nullptr) s.lo = Expression(slice->lo);
    if (slice->hi != nullptr) s.hi = Expression(slice->hi);
    if (slice->step != nullptr) s.step = Expression(slice->step);
  } else {
    s.index = Placeholder(c);
  }
  return s;
}

ExprPtr AstBuilder::Sequence(ExprKind kind,
                             const std::vector<G::ExpressionContext*>& elements,
                             G::OperationContext* c) {
  auto e = std::make_unique<SequenceExpr>(kind);
  e->span = Span(c);
  for (G::ExpressionContext* x : elements) {
    e->elements.push_back(Expression(x));
  }
  return e;
}

// The operands without operators: literals, names and bracketed forms.
ExprPtr AstBuilder::Primary(G::OperationContext* c, OperationAlt alt) {
  switch (alt) {
    case OperationAlt::kName: {
      auto e = Make<NameExpr>(Span(c));
      e->name = Text(Tok(c, L::ID));
      return e;
    }
    case OperationAlt::kInt:
      return IntLiteral(static_cast<G::IntLiteralContext*>(c));
    case OperationAlt::kFloat:
      return FloatLiteral(static_cast<G::FloatLiteralContext*>(c));
    case OperationAlt::kString: {
      auto e = Make<StringExpr>(Span(c));
      e->value = DecodeStringLiteral(
          Text(static_cast<G::StringLiteralContext*>(c)->STRING()));
      return e;
    }
    case OperationAlt::kUnary: {
      auto e = Make<UnaryExpr>(Span(c));
      e->op = UnaryOp::kNeg;
      e->operand = Operation(One<G::OperationContext>(c));
      return e;
    }
    case OperationAlt::kBool: {
      auto e = Make<BoolExpr>(Span(c));
      e->value = static_cast<G::BoolLiteralContext*>(c)->TRUE() != nullptr;
      return e;
    }
    case OperationAlt::kNone:
      return Make<NoneExpr>(Span(c));
    case OperationAlt::kParenthesized: {
      // `(a)` is `a`; `()`, `(a,)` and `(a, b)` are tuples.
      auto* p = static_cast<G::ParenthesizedContext*>(c);
      std::vector<G::ExpressionContext*> elements =
          All<G::ExpressionContext>(p);
      if (elements.size() == 1 && Tok(p, L::COMMA) == nullptr) {
        return Expression(elements[0]);
      }
      return Sequence(ExprKind::kTuple, elements, c);
    }
    case OperationAlt::kList:
      return Sequence(ExprKind::kList, All<G::ExpressionContext>(c), c);
    case OperationAlt::kRecord: {
      auto e = Make<RecordExpr>(Span(c));
      for (G::FieldContext* f :
           static_cast<G::RecordLiteralContext*>(c)->field()) {
        RecordExpr::Field field;
        field.name = f->name() != nullptr ? f->name()->getText() : "";
        field.span = Span(f);
        field.value = Expression(f->expression());
        e->fields.push_back(std::move(field));
      }
      return e;
    }
    default:
      return Placeholder(c);
  }
}

ExprPtr AstBuilder::IntLiteral(G::IntLiteralContext* c) {
  auto e = Make<IntExpr>(Span(c));
  const std::string text = Text(Tok(c, L::INT));
  const std::string digits = WithoutSeparators(text);
  constexpr uint64_t kMax = std::numeric_limits<int64_t>::max();
  uint64_t value = 0;
  for (char d : digits) {
    const uint64_t digit = static_cast<uint64_t>(d - '0');
    if (d < '0' || d > '9' || value > (kMax - digit) / 10) {
      Error(e->span, StrCat("integer literal ", text,
                            " is too large; the largest integer is ", kMax));
      return e;
    }
    value = value * 10 + digit;
  }
  e->value = static_cast<int64_t>(value);
  return e;
}

ExprPtr AstBuilder::FloatLiteral(G::FloatLiteralContext* c) {
  auto e = Make<FloatExpr>(Span(c));
  const std::string text = Text(Tok(c, L::FLOAT));
  const std::string digits = WithoutSeparators(text);
  double value = 0;
  auto [end, ec] =
      std::from_chars(digits.data(), digits.data() + digits.size(), value);
  if (ec == std::errc::result_out_of_range) {
    // Too small rounds to zero; too large is an error.
    value = std::strtod(digits.c_str(), nullptr);
    if (std::isinf(value)) {
      Error(e->span, StrCat("float literal ", text, " is out of range"));
      value = 0;
    }
  }
  e->value = value;
  return e;
}

}  // namespace runnel::lang
