#include "lang/ast_builder.h"

#include <charconv>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <utility>

#include "runtime/strings.h"

namespace runnel::lang {

namespace {
using L = grammar::RunnelLexer;

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

SourceSpan AstBuilder::Span(antlr4::ParserRuleContext* c) const {
  antlr4::Token* start = c->getStart();
  if (start == nullptr) return SourceSpan{positions_->path()};
  return positions_->Span(start, c->getStop());
}

SourceSpan AstBuilder::Span(antlr4::tree::TerminalNode* n) const {
  return positions_->Span(n->getSymbol());
}

std::string AstBuilder::Text(antlr4::tree::TerminalNode* n) const {
  return n == nullptr ? std::string() : n->getText();
}

void AstBuilder::Error(SourceSpan span, std::string message) {
  Diagnostic d;
  d.span = std::move(span);
  d.message = std::move(message);
  errors_->push_back(std::move(d));
}

ExprPtr AstBuilder::Placeholder(antlr4::ParserRuleContext* c) {
  return Make<NoneExpr>(c != nullptr ? Span(c)
                                     : SourceSpan{positions_->path()});
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
// Statements

std::unique_ptr<Program> AstBuilder::Build(G::ProgramContext* tree) {
  auto program = std::make_unique<Program>();
  program->file = positions_->path();
  if (tree == nullptr) return program;
  for (G::StatementContext* s : tree->statement()) {
    if (StmtPtr stmt = Statement(s)) program->stmts.push_back(std::move(stmt));
  }
  return program;
}

Block AstBuilder::BuildBlock(G::BlockContext* c) {
  Block block;
  if (c == nullptr) return block;
  block.span = Span(c);
  for (G::StatementContext* s : c->statement()) {
    if (StmtPtr stmt = Statement(s)) block.stmts.push_back(std::move(stmt));
  }
  return block;
}

StmtPtr AstBuilder::Statement(G::StatementContext* c) {
  if (c == nullptr) return nullptr;
  const SourceSpan span = Span(c);
  auto make = [&](auto stmt) {
    stmt->span = span;
    return stmt;
  };
  if (auto* s = dynamic_cast<G::LetStatementContext*>(c)) {
    auto stmt = make(std::make_unique<LetStmt>());
    stmt->pattern = BuildPattern(s->pattern());
    stmt->value = Expression(s->expression());
    return stmt;
  }
  if (dynamic_cast<G::VarStatementContext*>(c) ||
      dynamic_cast<G::StateStatementContext*>(c)) {
    auto stmt = make(std::make_unique<VarStmt>());
    antlr4::tree::TerminalNode* id;
    G::TypeContext* type;
    G::ExpressionContext* init;
    if (auto* s = dynamic_cast<G::VarStatementContext*>(c)) {
      id = s->ID(), type = s->type(), init = s->expression();
    } else {
      auto* t = static_cast<G::StateStatementContext*>(c);
      stmt->is_state = true;
      id = t->ID(), type = t->type(), init = t->expression();
    }
    if (id != nullptr) {
      stmt->name = Text(id);
      stmt->name_span = Span(id);
    }
    if (type != nullptr) stmt->type = Type(type);
    stmt->init = Expression(init);
    return stmt;
  }
  if (auto* s = dynamic_cast<G::InputStatementContext*>(c)) {
    auto stmt = make(std::make_unique<InputStmt>());
    if (s->ID() != nullptr) {
      stmt->name = Text(s->ID());
      stmt->name_span = Span(s->ID());
    }
    stmt->type = Type(s->type());
    if (s->expression() != nullptr) {
      stmt->default_value = Expression(s->expression());
    }
    return stmt;
  }
  if (auto* s = dynamic_cast<G::DefStatementContext*>(c)) {
    auto stmt = make(std::make_unique<DefStmt>());
    if (s->ID() != nullptr) {
      stmt->name = Text(s->ID());
      stmt->name_span = Span(s->ID());
    }
    stmt->params = Params(s->parameters());
    if (s->block() != nullptr) {
      stmt->body_block = BuildBlock(s->block());
    } else {
      stmt->body_expr = Expression(s->expression());
    }
    return stmt;
  }
  if (auto* s = dynamic_cast<G::ImportModuleContext*>(c)) {
    auto stmt = make(std::make_unique<ImportStmt>());
    std::vector<antlr4::tree::TerminalNode*> ids = s->ID();
    if (!ids.empty()) stmt->module = Text(ids[0]);
    stmt->alias = ids.size() > 1 ? Text(ids[1]) : stmt->module;
    return stmt;
  }
  if (auto* s = dynamic_cast<G::ImportFileContext*>(c)) {
    auto stmt = make(std::make_unique<ImportStmt>());
    stmt->path = DecodeStringLiteral(Text(s->STRING()));
    stmt->alias = Text(s->ID());
    return stmt;
  }
  if (auto* s = dynamic_cast<G::ReturnStatementContext*>(c)) {
    auto stmt = make(std::make_unique<ReturnStmt>());
    if (s->expression() != nullptr) stmt->value = Expression(s->expression());
    return stmt;
  }
  if (dynamic_cast<G::BreakStatementContext*>(c)) {
    return make(std::make_unique<JumpStmt>(StmtKind::kBreak));
  }
  if (dynamic_cast<G::ContinueStatementContext*>(c)) {
    return make(std::make_unique<JumpStmt>(StmtKind::kContinue));
  }
  if (auto* s = dynamic_cast<G::ForStatementContext*>(c)) {
    auto stmt = make(std::make_unique<ForStmt>());
    stmt->var = BuildPattern(s->pattern());
    stmt->iterable = Expression(s->expression());
    stmt->body = BuildBlock(s->block());
    return stmt;
  }
  auto annotate = [&](StmtKind kind, G::ExpressionContext* arg,
                      G::BlockContext* body) {
    auto stmt = make(std::make_unique<AnnotateStmt>(kind));
    stmt->arg = Expression(arg);
    stmt->body = BuildBlock(body);
    return stmt;
  };
  if (auto* s = dynamic_cast<G::ScopeStatementContext*>(c)) {
    return annotate(StmtKind::kScope, s->expression(), s->block());
  }
  if (auto* s = dynamic_cast<G::DeviceStatementContext*>(c)) {
    return annotate(StmtKind::kDevice, s->expression(), s->block());
  }
  if (auto* s = dynamic_cast<G::AfterStatementContext*>(c)) {
    return annotate(StmtKind::kAfter, s->expression(), s->block());
  }
  if (auto* s = dynamic_cast<G::RebindStatementContext*>(c)) {
    auto stmt = make(std::make_unique<RebindStmt>());
    stmt->pattern = BuildPattern(s->pattern());
    stmt->value = Expression(s->expression());
    return stmt;
  }
  if (auto* s = dynamic_cast<G::ExpressionStatementContext*>(c)) {
    auto stmt = make(std::make_unique<ExprStmt>());
    stmt->expr = Expression(s->expression());
    return stmt;
  }
  return nullptr;  // nothing recognisable: the error is already reported
}

Pattern AstBuilder::BuildPattern(G::PatternContext* c) {
  Pattern p;
  if (c == nullptr) return p;
  p.span = Span(c);
  if (auto* n = dynamic_cast<G::NamePatternContext*>(c)) {
    p.name = Text(n->ID());
    p.kind = p.name == "_" ? Pattern::Kind::kDiscard : Pattern::Kind::kName;
  } else if (auto* t = dynamic_cast<G::TuplePatternContext*>(c)) {
    p.kind = Pattern::Kind::kTuple;
    for (G::PatternContext* e : t->pattern()) {
      p.elements.push_back(BuildPattern(e));
    }
  }
  return p;
}

TypeAnnotation AstBuilder::Type(G::TypeContext* c) {
  TypeAnnotation type;
  if (c == nullptr) return type;
  type.span = Span(c);
  type.dtype = Text(c->ID());
  type.has_dims = c->LBRACK() != nullptr;
  for (G::DimensionContext* d : c->dimension()) {
    type.dims.push_back(d->QUESTION() != nullptr ? nullptr
                                                 : Expression(d->expression()));
  }
  return type;
}

std::vector<Param> AstBuilder::Params(G::ParametersContext* c) {
  std::vector<Param> params;
  if (c == nullptr) return params;
  for (G::ParameterContext* p : c->parameter()) {
    Param param;
    param.name = Text(p->ID());
    param.span = Span(p);
    if (p->expression() != nullptr) {
      param.default_value = Expression(p->expression());
    }
    params.push_back(std::move(param));
  }
  return params;
}

// ---------------------------------------------------------------------------
// Expressions, loosest first

ExprPtr AstBuilder::Expression(G::ExpressionContext* c) {
  if (c == nullptr) return Placeholder(nullptr);
  if (auto* e = dynamic_cast<G::OperatorExpressionContext*>(c)) {
    return Disjunction(e->disjunction());
  }
  if (auto* e = dynamic_cast<G::ConditionalExpressionContext*>(c)) {
    return If(e->ifExpression());
  }
  if (auto* e = dynamic_cast<G::LambdaExpressionContext*>(c)) {
    auto lambda = Make<LambdaExpr>(Span(c));
    lambda->params = Params(e->parameters());
    if (e->block() != nullptr) {
      lambda->body_block = BuildBlock(e->block());
    } else {
      lambda->body_expr = Expression(e->expression());
    }
    return lambda;
  }
  if (auto* e = dynamic_cast<G::LoopExpressionContext*>(c)) {
    auto loop = Make<LoopExpr>(Span(c));
    loop->state = BuildPattern(e->pattern());
    loop->init = Expression(e->expression());
    if (auto* head = dynamic_cast<G::ForLoopHeadContext*>(e->loopHead())) {
      loop->is_for = true;
      loop->var = BuildPattern(head->pattern());
      loop->iterable = Expression(head->expression());
    } else if (auto* head =
                   dynamic_cast<G::WhileLoopHeadContext*>(e->loopHead())) {
      loop->is_for = false;
      loop->cond = Expression(head->expression());
    }
    loop->body = BuildBlock(e->block());
    return loop;
  }
  if (auto* e = dynamic_cast<G::RunExpressionContext*>(c)) {
    auto run = Make<RunExpr>(Span(c));
    std::vector<G::ExpressionContext*> parts = e->expression();
    run->fetches = Expression(parts.empty() ? nullptr : parts[0]);
    if (parts.size() > 1) run->feeds = Expression(parts[1]);
    return run;
  }
  if (auto* e = dynamic_cast<G::AssignExpressionContext*>(c)) {
    auto assign = Make<AssignExpr>(Span(c));
    assign->op = AssignOpOf(e->op != nullptr ? e->op->getType() : 0);
    assign->target = Postfix(e->postfix());
    assign->value = Expression(e->expression());
    return assign;
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

// The left-recursive rules (`a or b or c`) nest their contexts to the left;
// they are unwound iteratively so that long chains cost no deep recursion.
ExprPtr AstBuilder::Disjunction(G::DisjunctionContext* c) {
  if (c == nullptr) return Placeholder(nullptr);
  std::vector<G::DisjunctionContext*> chain;
  for (G::DisjunctionContext* d = c; d != nullptr && d->OR() != nullptr;
       d = d->disjunction()) {
    chain.push_back(d);
  }
  G::DisjunctionContext* first =
      chain.empty() ? c : chain.back()->disjunction();
  ExprPtr e = first != nullptr ? Conjunction(first->conjunction())
                               : Placeholder(nullptr);
  for (size_t i = chain.size(); i-- > 0;) {
    G::DisjunctionContext* d = chain[i];
    e = Binary(BinaryOp::kOr, std::move(e), Conjunction(d->conjunction()),
               d->OR()->getSymbol(), d);
  }
  return e;
}

ExprPtr AstBuilder::Conjunction(G::ConjunctionContext* c) {
  if (c == nullptr) return Placeholder(nullptr);
  std::vector<G::ConjunctionContext*> chain;
  for (G::ConjunctionContext* d = c; d != nullptr && d->AND() != nullptr;
       d = d->conjunction()) {
    chain.push_back(d);
  }
  G::ConjunctionContext* first =
      chain.empty() ? c : chain.back()->conjunction();
  ExprPtr e =
      first != nullptr ? Negation(first->negation()) : Placeholder(nullptr);
  for (size_t i = chain.size(); i-- > 0;) {
    G::ConjunctionContext* d = chain[i];
    e = Binary(BinaryOp::kAnd, std::move(e), Negation(d->negation()),
               d->AND()->getSymbol(), d);
  }
  return e;
}

ExprPtr AstBuilder::Negation(G::NegationContext* c) {
  if (c == nullptr) return Placeholder(nullptr);
  if (c->NOT() != nullptr) {
    auto e = Make<UnaryExpr>(Span(c));
    e->op = UnaryOp::kNot;
    e->operand = Negation(c->negation());
    return e;
  }
  return Comparison(c->comparison());
}

ExprPtr AstBuilder::Comparison(G::ComparisonContext* c) {
  if (c == nullptr) return Placeholder(nullptr);
  std::vector<G::RangeContext*> operands = c->range();
  if (operands.empty()) return Placeholder(c);
  if (operands.size() == 1 || c->op == nullptr) return Range(operands[0]);
  return Binary(BinaryOpOf(c->op->getType()), Range(operands[0]),
                Range(operands[1]), c->op, c);
}

ExprPtr AstBuilder::Range(G::RangeContext* c) {
  if (c == nullptr) return Placeholder(nullptr);
  std::vector<G::AdditiveContext*> operands = c->additive();
  if (operands.empty()) return Placeholder(c);
  if (operands.size() == 1) return Additive(operands[0]);
  return Binary(BinaryOp::kRange, Additive(operands[0]), Additive(operands[1]),
                c->DOTDOT() != nullptr ? c->DOTDOT()->getSymbol() : nullptr, c);
}

ExprPtr AstBuilder::Additive(G::AdditiveContext* c) {
  if (c == nullptr) return Placeholder(nullptr);
  std::vector<G::AdditiveContext*> chain;
  for (G::AdditiveContext* d = c; d != nullptr && d->additive() != nullptr;
       d = d->additive()) {
    chain.push_back(d);
  }
  G::AdditiveContext* first = chain.empty() ? c : chain.back()->additive();
  ExprPtr e = Multiplicative(first->multiplicative());
  for (size_t i = chain.size(); i-- > 0;) {
    G::AdditiveContext* d = chain[i];
    e = Binary(BinaryOpOf(d->op != nullptr ? d->op->getType() : 0),
               std::move(e), Multiplicative(d->multiplicative()), d->op, d);
  }
  return e;
}

ExprPtr AstBuilder::Multiplicative(G::MultiplicativeContext* c) {
  if (c == nullptr) return Placeholder(nullptr);
  std::vector<G::MultiplicativeContext*> chain;
  for (G::MultiplicativeContext* d = c;
       d != nullptr && d->multiplicative() != nullptr;
       d = d->multiplicative()) {
    chain.push_back(d);
  }
  G::MultiplicativeContext* first =
      chain.empty() ? c : chain.back()->multiplicative();
  ExprPtr e = Unary(first->unary());
  for (size_t i = chain.size(); i-- > 0;) {
    G::MultiplicativeContext* d = chain[i];
    e = Binary(BinaryOpOf(d->op != nullptr ? d->op->getType() : 0),
               std::move(e), Unary(d->unary()), d->op, d);
  }
  return e;
}

ExprPtr AstBuilder::Unary(G::UnaryContext* c) {
  if (c == nullptr) return Placeholder(nullptr);
  if (c->MINUS() != nullptr) {
    auto e = Make<UnaryExpr>(Span(c));
    e->op = UnaryOp::kNeg;
    e->operand = Unary(c->unary());
    return e;
  }
  return Power(c->power());
}

ExprPtr AstBuilder::Power(G::PowerContext* c) {
  if (c == nullptr) return Placeholder(nullptr);
  ExprPtr base = Postfix(c->postfix());
  if (c->POW() == nullptr) return base;
  return Binary(BinaryOp::kPow, std::move(base), Unary(c->unary()),
                c->POW()->getSymbol(), c);
}

ExprPtr AstBuilder::Postfix(G::PostfixContext* c) {
  if (c == nullptr) return Placeholder(nullptr);
  // Unwind `f(a)[0].x` from the innermost (leftmost) part outwards.
  std::vector<G::PostfixContext*> chain;
  G::PostfixContext* d = c;
  while (d != nullptr && !dynamic_cast<G::PrimaryPostfixContext*>(d)) {
    chain.push_back(d);
    if (auto* call = dynamic_cast<G::CallPostfixContext*>(d)) {
      d = call->postfix();
    } else if (auto* index = dynamic_cast<G::IndexPostfixContext*>(d)) {
      d = index->postfix();
    } else if (auto* member = dynamic_cast<G::MemberPostfixContext*>(d)) {
      d = member->postfix();
    } else {
      chain.pop_back();
      break;
    }
  }
  ExprPtr e;
  if (auto* primary = dynamic_cast<G::PrimaryPostfixContext*>(d)) {
    e = Primary(primary->primary());
  } else {
    e = Placeholder(d != nullptr ? d : c);
  }
  for (size_t i = chain.size(); i-- > 0;) {
    G::PostfixContext* p = chain[i];
    if (auto* call = dynamic_cast<G::CallPostfixContext*>(p)) {
      auto callee = Make<CallExpr>(Span(p));
      callee->callee = std::move(e);
      if (G::ArgumentsContext* args = call->arguments()) {
        for (G::ArgumentContext* a : args->argument()) {
          Arg arg;
          arg.span = Span(a);
          if (auto* named = dynamic_cast<G::NamedArgumentContext*>(a)) {
            arg.name = named->name() != nullptr ? named->name()->getText() : "";
            arg.value = Expression(named->expression());
          } else if (auto* pos =
                         dynamic_cast<G::PositionalArgumentContext*>(a)) {
            arg.value = Expression(pos->expression());
          } else {
            arg.value = Placeholder(a);
          }
          callee->args.push_back(std::move(arg));
        }
      }
      e = std::move(callee);
    } else if (auto* index = dynamic_cast<G::IndexPostfixContext*>(p)) {
      auto indexed = Make<IndexExpr>(Span(p));
      indexed->target = std::move(e);
      for (G::SubscriptContext* s : index->subscript()) {
        indexed->subscripts.push_back(BuildSubscript(s));
      }
      e = std::move(indexed);
    } else if (auto* member = dynamic_cast<G::MemberPostfixContext*>(p)) {
      auto m = Make<MemberExpr>(Span(p));
      m->target = std::move(e);
      m->name = member->name() != nullptr ? member->name()->getText() : "";
      e = std::move(m);
    }
  }
  return e;
}

Subscript AstBuilder::BuildSubscript(G::SubscriptContext* c) {
  Subscript s;
  s.span = Span(c);
  if (auto* index = dynamic_cast<G::IndexSubscriptContext*>(c)) {
    s.index = Expression(index->expression());
  } else if (auto* slice = dynamic_cast<G::SliceSubscriptContext*>(c)) {
    s.is_slice = true;
    if (slice->lo != nullptr) s.lo = Expression(slice->lo);
    if (slice->hi != nullptr) s.hi = Expression(slice->hi);
    if (slice->step != nullptr) s.step = Expression(slice->step);
  } else {
    s.index = Placeholder(c);
  }
  return s;
}

ExprPtr AstBuilder::Primary(G::PrimaryContext* c) {
  if (c == nullptr) return Placeholder(nullptr);
  if (auto* p = dynamic_cast<G::NameReferenceContext*>(c)) {
    auto e = Make<NameExpr>(Span(c));
    e->name = Text(p->ID());
    return e;
  }
  if (auto* p = dynamic_cast<G::IntLiteralContext*>(c)) return IntLiteral(p);
  if (auto* p = dynamic_cast<G::FloatLiteralContext*>(c)) {
    return FloatLiteral(p);
  }
  if (auto* p = dynamic_cast<G::StringLiteralContext*>(c)) {
    auto e = Make<StringExpr>(Span(c));
    e->value = DecodeStringLiteral(Text(p->STRING()));
    return e;
  }
  if (auto* p = dynamic_cast<G::BoolLiteralContext*>(c)) {
    auto e = Make<BoolExpr>(Span(c));
    e->value = p->TRUE() != nullptr;
    return e;
  }
  if (dynamic_cast<G::NoneLiteralContext*>(c)) return Make<NoneExpr>(Span(c));
  if (auto* p = dynamic_cast<G::ParenthesizedContext*>(c)) {
    return Expression(p->expression());
  }
  auto sequence = [&](ExprKind kind,
                      const std::vector<G::ExpressionContext*>& elements) {
    auto e = std::make_unique<SequenceExpr>(kind);
    e->span = Span(c);
    for (G::ExpressionContext* x : elements) {
      e->elements.push_back(Expression(x));
    }
    return e;
  };
  if (auto* p = dynamic_cast<G::TupleLiteralContext*>(c)) {
    return sequence(ExprKind::kTuple, p->expression());
  }
  if (auto* p = dynamic_cast<G::ListLiteralContext*>(c)) {
    return sequence(ExprKind::kList, p->expression());
  }
  if (auto* p = dynamic_cast<G::RecordLiteralContext*>(c)) {
    auto e = Make<RecordExpr>(Span(c));
    for (G::FieldContext* f : p->field()) {
      RecordExpr::Field field;
      field.name = f->name() != nullptr ? f->name()->getText() : "";
      field.span = Span(f);
      field.value = Expression(f->expression());
      e->fields.push_back(std::move(field));
    }
    return e;
  }
  return Placeholder(c);
}

ExprPtr AstBuilder::IntLiteral(G::IntLiteralContext* c) {
  auto e = Make<IntExpr>(Span(c));
  const std::string text = Text(c->INT());
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
  const std::string text = Text(c->FLOAT());
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
