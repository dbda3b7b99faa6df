// Builds the AST of lang/ast.h from ANTLR's parse tree of a script, giving
// every node its source span.
//
// Internal to lang/ (it includes the generated parser): lang/parser.h is the
// public interface. The builder tolerates the partial trees that error
// recovery leaves: a missing or unparsable expression becomes a NoneExpr
// placeholder spanning what was there. It also reports the errors that only
// show once a token's text is read: integer literals too large for i64 and
// float literals out of range.
#ifndef RUNNEL_LANG_AST_BUILDER_H_
#define RUNNEL_LANG_AST_BUILDER_H_

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "grammar/RunnelParser.h"
#include "lang/ast.h"
#include "lang/diagnostics.h"
#include "lang/lexer.h"

namespace runnel::lang {

// The value of a string literal as written (with its quotes): escapes
// decoded. Tolerates an unterminated literal and unknown escapes, which the
// lexer has already reported; those keep their backslash.
std::string DecodeStringLiteral(std::string_view literal);

class AstBuilder {
 public:
  // Errors are appended to `errors`; `positions` must outlive the builder.
  AstBuilder(const SourcePositions* positions, std::vector<Diagnostic>* errors)
      : positions_(positions), errors_(errors) {}
  AstBuilder(const AstBuilder&) = delete;
  AstBuilder& operator=(const AstBuilder&) = delete;

  std::unique_ptr<Program> Build(grammar::RunnelParser::ProgramContext* tree);

 private:
  using G = grammar::RunnelParser;

  StmtPtr Statement(G::StatementContext* c);
  Block BuildBlock(G::BlockContext* c);
  Pattern BuildPattern(G::PatternContext* c);
  TypeAnnotation Type(G::TypeContext* c);
  std::vector<Param> Params(G::ParametersContext* c);

  ExprPtr Expression(G::ExpressionContext* c);
  ExprPtr If(G::IfExpressionContext* c);
  ExprPtr Disjunction(G::DisjunctionContext* c);
  ExprPtr Conjunction(G::ConjunctionContext* c);
  ExprPtr Negation(G::NegationContext* c);
  ExprPtr Comparison(G::ComparisonContext* c);
  ExprPtr Range(G::RangeContext* c);
  ExprPtr Additive(G::AdditiveContext* c);
  ExprPtr Multiplicative(G::MultiplicativeContext* c);
  ExprPtr Unary(G::UnaryContext* c);
  ExprPtr Power(G::PowerContext* c);
  ExprPtr Postfix(G::PostfixContext* c);
  ExprPtr Primary(G::PrimaryContext* c);
  ExprPtr IntLiteral(G::IntLiteralContext* c);
  ExprPtr FloatLiteral(G::FloatLiteralContext* c);
  Subscript BuildSubscript(G::SubscriptContext* c);

  ExprPtr Binary(BinaryOp op, ExprPtr lhs, ExprPtr rhs, antlr4::Token* op_token,
                 antlr4::ParserRuleContext* c);
  // What stands for a piece of the tree that error recovery left out.
  ExprPtr Placeholder(antlr4::ParserRuleContext* c);

  SourceSpan Span(antlr4::ParserRuleContext* c) const;
  SourceSpan Span(antlr4::tree::TerminalNode* n) const;
  std::string Text(antlr4::tree::TerminalNode* n) const;
  void Error(SourceSpan span, std::string message);

  const SourcePositions* positions_;
  std::vector<Diagnostic>* errors_;
};

}  // namespace runnel::lang

#endif  // RUNNEL_LANG_AST_BUILDER_H_
