// The AST builder's statements, blocks, patterns, types and parameters;
// expressions are ast_builder.cc's.
#include <utility>

#include "base/strings.h"
#include "lang/ast_builder.h"

namespace runnel::lang {
namespace {
using L = grammar::RunnelLexer;
}  // namespace

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
  if (auto* s = As<G::ExpressionStatementContext>(c)) {
    std::vector<G::ExpressionContext*> sides = All<G::ExpressionContext>(s);
    G::ExpressionContext* first = sides.empty() ? nullptr : sides[0];
    if (Tok(s, L::ASSIGN) == nullptr) {
      auto stmt = make(std::make_unique<ExprStmt>());
      stmt->expr = Expression(first);
      return stmt;
    }
    auto stmt = make(std::make_unique<RebindStmt>());
    // A syntax error in the statement would make a confusing second error.
    stmt->pattern = ExpressionPattern(first, !HasSyntaxErrorWithin(span));
    stmt->value = Expression(sides.size() > 1 ? sides[1] : nullptr);
    return stmt;
  }
  if (auto* s = As<G::LetStatementContext>(c)) {
    auto stmt = make(std::make_unique<LetStmt>());
    stmt->pattern = BuildPattern(One<G::PatternContext>(s));
    stmt->value = Expression(One<G::ExpressionContext>(s));
    return stmt;
  }
  if (As<G::VarStatementContext>(c) || As<G::StateStatementContext>(c)) {
    return VarStatement(c, span);
  }
  if (auto* s = As<G::InputStatementContext>(c)) {
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
  if (auto* s = As<G::DefStatementContext>(c)) return DefStatement(s, span);
  if (auto* s = As<G::ImportModuleContext>(c)) {
    ++imports_;
    auto stmt = make(std::make_unique<ImportStmt>());
    std::vector<antlr4::tree::TerminalNode*> ids = s->ID();
    if (!ids.empty()) stmt->module = Text(ids[0]);
    stmt->alias = ids.size() > 1 ? Text(ids[1]) : stmt->module;
    return stmt;
  }
  if (auto* s = As<G::ImportFileContext>(c)) {
    ++imports_;
    auto stmt = make(std::make_unique<ImportStmt>());
    stmt->path = DecodeStringLiteral(Text(s->STRING()));
    stmt->alias = Text(s->ID());
    return stmt;
  }
  if (auto* s = As<G::ReturnStatementContext>(c)) {
    auto stmt = make(std::make_unique<ReturnStmt>());
    if (s->expression() != nullptr) stmt->value = Expression(s->expression());
    return stmt;
  }
  const bool is_break = As<G::BreakStatementContext>(c) != nullptr;
  if (is_break || As<G::ContinueStatementContext>(c) != nullptr) {
    auto stmt = make(std::make_unique<JumpStmt>(
        is_break ? StmtKind::kBreak : StmtKind::kContinue));
    // Found before anything runs (the interpreter would only find it when
    // it got there).
    if (for_depth_ == 0) {
      Error(stmt->span, StrCat("'", is_break ? "break" : "continue",
                               "' outside a for loop"));
    }
    return stmt;
  }
  if (auto* s = As<G::ForStatementContext>(c)) {
    auto stmt = make(std::make_unique<ForStmt>());
    stmt->var = BuildPattern(s->pattern());
    stmt->iterable = Expression(s->expression());
    ++for_depth_;
    stmt->body = BuildBlock(s->block());
    --for_depth_;
    return stmt;
  }
  auto annotate = [&](StmtKind kind, G::ExpressionContext* arg,
                      G::BlockContext* body) {
    auto stmt = make(std::make_unique<AnnotateStmt>(kind));
    stmt->arg = Expression(arg);
    stmt->body = BuildBlock(body);
    return stmt;
  };
  if (auto* s = As<G::ScopeStatementContext>(c)) {
    return annotate(StmtKind::kScope, s->expression(), s->block());
  }
  if (auto* s = As<G::DeviceStatementContext>(c)) {
    return annotate(StmtKind::kDevice, s->expression(), s->block());
  }
  if (auto* s = As<G::AfterStatementContext>(c)) {
    return annotate(StmtKind::kAfter, s->expression(), s->block());
  }
  return nullptr;  // nothing recognisable: the error is already reported
}

// `var` and `state` declarations.
StmtPtr AstBuilder::VarStatement(G::StatementContext* c,
                                 const SourceSpan& span) {
  auto stmt = std::make_unique<VarStmt>();
  stmt->span = span;
  antlr4::tree::TerminalNode* id;
  G::TypeContext* type;
  G::ExpressionContext* init;
  if (auto* s = As<G::VarStatementContext>(c)) {
    id = Tok(s, L::ID), type = One<G::TypeContext>(s);
    init = One<G::ExpressionContext>(s);
  } else {
    auto* t = static_cast<G::StateStatementContext*>(c);
    stmt->is_state = true;
    id = Tok(t, L::ID), type = One<G::TypeContext>(t);
    init = One<G::ExpressionContext>(t);
  }
  if (id != nullptr) {
    stmt->name = Text(id);
    stmt->name_span = Span(id);
  }
  if (type != nullptr) stmt->type = Type(type);
  stmt->init = Expression(init);
  return stmt;
}

StmtPtr AstBuilder::DefStatement(G::DefStatementContext* s,
                                 const SourceSpan& span) {
  auto stmt = std::make_unique<DefStmt>();
  stmt->span = span;
  if (s->ID() != nullptr) {
    stmt->name = Text(s->ID());
    stmt->name_span = Span(s->ID());
  }
  stmt->params = Params(s->parameters());
  const int outer_for_depth = std::exchange(for_depth_, 0);
  if (s->block() != nullptr) {
    stmt->body_block = BuildBlock(s->block());
  } else {
    stmt->body_expr = Expression(s->expression());
  }
  for_depth_ = outer_for_depth;
  return stmt;
}

Pattern AstBuilder::BuildPattern(G::PatternContext* c) {
  Pattern p;
  if (c == nullptr) return p;
  p.span = Span(c);
  if (auto* n = As<G::NamePatternContext>(c)) {
    p.name = Text(Tok(n, L::ID));
    p.kind = p.name == "_" ? Pattern::Kind::kDiscard : Pattern::Kind::kName;
  } else if (auto* t = As<G::TuplePatternContext>(c)) {
    p.kind = Pattern::Kind::kTuple;
    for (G::PatternContext* e : t->pattern()) {
      p.elements.push_back(BuildPattern(e));
    }
  }
  return p;
}

Pattern AstBuilder::ExpressionPattern(G::ExpressionContext* c, bool report) {
  Pattern p;
  if (c == nullptr) return p;
  p.span = Span(c);
  G::OperationContext* operand = Operand(c);
  const OperationAlt alt =
      operand != nullptr ? AltOf(operand) : OperationAlt::kOther;
  if (alt == OperationAlt::kName) {
    p.name = Text(static_cast<G::NameReferenceContext*>(operand)->ID());
    p.kind = p.name == "_" ? Pattern::Kind::kDiscard : Pattern::Kind::kName;
    return p;
  }
  // `(a)` is a tuple of one here, as in `let (a) = ...`.
  if (alt == OperationAlt::kParenthesized) {
    std::vector<G::ExpressionContext*> elements =
        static_cast<G::ParenthesizedContext*>(operand)->expression();
    if (!elements.empty()) {
      p.kind = Pattern::Kind::kTuple;
      for (G::ExpressionContext* e : elements) {
        p.elements.push_back(ExpressionPattern(e, report));
      }
      return p;
    }
  }
  p.kind = Pattern::Kind::kDiscard;
  if (!report) return p;
  std::string what;
  switch (alt) {
    case OperationAlt::kCall:
      what = "a call";
      break;
    case OperationAlt::kMember:
      what = "a member; to assign a var or state, write ':='";
      break;
    case OperationAlt::kIndex:
      what = "an element";
      break;
    case OperationAlt::kInt:
    case OperationAlt::kFloat:
    case OperationAlt::kString:
    case OperationAlt::kBool:
    case OperationAlt::kNone:
      what = "a literal";
      break;
    case OperationAlt::kParenthesized:
      what = "an empty tuple";
      break;
    case OperationAlt::kList:
      what = "a list; write a tuple '(a, b)'";
      break;
    case OperationAlt::kRecord:
      what = "a record";
      break;
    default:
      what = "an expression";
      break;
  }
  Error(p.span,
        StrCat("'=' rebinds names: its left side must be a name or a tuple of "
               "names, not ",
               what));
  return p;
}

TypeAnnotation AstBuilder::Type(G::TypeContext* c) {
  TypeAnnotation type;
  if (c == nullptr) return type;
  type.span = Span(c);
  type.dtype = Text(Tok(c, L::ID));
  type.has_dims = Tok(c, L::LBRACK) != nullptr;
  for (G::DimensionContext* d : All<G::DimensionContext>(c)) {
    type.dims.push_back(Tok(d, L::QUESTION) != nullptr
                            ? nullptr
                            : Expression(One<G::ExpressionContext>(d)));
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

}  // namespace runnel::lang
