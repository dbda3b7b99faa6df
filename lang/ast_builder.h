// Builds the AST of lang/ast.h from ANTLR's parse tree of a script, giving
// every node its source span. Build it after parsing, with the parser's
// errors already in `errors`.
//
// Internal to lang/ (it includes the generated parser): lang/parser.h is the
// public interface. The builder tolerates the partial trees that error
// recovery leaves: a missing or unparsable expression becomes a NoneExpr
// placeholder spanning what was there. It also reports the errors that only
// show once a token's text is read (integer literals too large for i64,
// float literals out of range) and those the grammar leaves to it so that
// one token of lookahead decides: the left side of `=` must be a pattern,
// that of `:=` an operand; comparisons and `..` do not chain.
#ifndef RUNNEL_LANG_AST_BUILDER_H_
#define RUNNEL_LANG_AST_BUILDER_H_

#include <memory>
#include <string>
#include <string_view>
#include <typeinfo>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
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
      : positions_(positions),
        errors_(errors),
        syntax_errors_(errors->size()) {}
  AstBuilder(const AstBuilder&) = delete;
  AstBuilder& operator=(const AstBuilder&) = delete;

  std::unique_ptr<Program> Build(grammar::RunnelParser::ProgramContext* tree);
  // One statement, for a parse that hands statements out as it goes.
  StmtPtr BuildStatement(grammar::RunnelParser::StatementContext* c) {
    return Statement(c);
  }
  // How many import statements have been built so far.
  int imports() const { return imports_; }

 private:
  using G = grammar::RunnelParser;

  // Which alternative of the left-recursive rules `logical` and `operation`
  // a context is.
  enum class LogicalAlt {
    kOperand,
    kConjunction,
    kDisjunction,
    kNegation,
    kOther
  };
  enum class OperationAlt {
    kName,
    kCall,
    kInt,
    kFloat,
    kMember,
    kAdditive,
    kMultiplicative,
    kComparison,
    kRange,
    kString,
    kIndex,
    kParenthesized,
    kList,
    kUnary,
    kPower,
    kBool,
    kNone,
    kRecord,
    kOther
  };
  LogicalAlt AltOf(G::LogicalContext* c);
  OperationAlt AltOf(G::OperationContext* c);
  static LogicalAlt FindAlt(G::LogicalContext* c);
  static OperationAlt FindAlt(G::OperationContext* c);
  // The operand of an expression without operators, or null.
  G::OperationContext* Operand(G::LogicalContext* c);
  G::OperationContext* Operand(G::ExpressionContext* c);
  // Whether `c` is a name, a literal, a call, an index, a member or a
  // bracketed expression: what may stand left of `:=` (docs/language.md §4).
  bool IsOperand(G::OperationContext* c);

  // A context's children as the generated accessors find them (One is
  // getRuleContext, All getRuleContexts, Tok getToken), and As<T> for
  // dynamic_cast<T*>, but with what a dynamic_cast would say looked up once
  // per pair of classes: the accessors' dynamic_casts, one or two per child,
  // were half of building.
  template <typename T>
  T* As(antlr4::tree::ParseTree* p);
  template <typename T>
  T* One(antlr4::ParserRuleContext* c, size_t i = 0);
  template <typename T>
  std::vector<T*> All(antlr4::ParserRuleContext* c);
  antlr4::tree::TerminalNode* Tok(antlr4::ParserRuleContext* c, size_t type);

  StmtPtr Statement(G::StatementContext* c);
  StmtPtr VarStatement(G::StatementContext* c, const SourceSpan& span);
  StmtPtr DefStatement(G::DefStatementContext* s, const SourceSpan& span);
  Block BuildBlock(G::BlockContext* c);
  Pattern BuildPattern(G::PatternContext* c);
  // The pattern that the left side of `x = e` or `(a, b) = e` stands for;
  // what is not a pattern is reported when `report` is true, and gives `_`.
  Pattern ExpressionPattern(G::ExpressionContext* c, bool report);
  TypeAnnotation Type(G::TypeContext* c);
  std::vector<Param> Params(G::ParametersContext* c);

  ExprPtr Expression(G::ExpressionContext* c);
  ExprPtr If(G::IfExpressionContext* c);
  ExprPtr Logical(G::LogicalContext* c);
  ExprPtr Operation(G::OperationContext* c);
  ExprPtr Primary(G::OperationContext* c, OperationAlt alt);
  // A tuple or list literal.
  ExprPtr Sequence(ExprKind kind,
                   const std::vector<G::ExpressionContext*>& elements,
                   G::OperationContext* c);
  std::vector<Arg> Arguments(G::CallPostfixContext* c);
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
  // Whether the parser reported an error inside `span` (or just past it).
  // After a syntax error there, the builder's own checks of what the grammar
  // lets through would only confuse.
  bool HasSyntaxErrorWithin(const SourceSpan& span) const;

  const SourcePositions* positions_;
  std::vector<Diagnostic>* errors_;
  size_t syntax_errors_;  // errors_ holds the parser's errors first
  int imports_ = 0;
  // `for` statements around the statement being built, within the current
  // function body: a `break` or `continue` needs one.
  int for_depth_ = 0;
  // The alternative of each context class seen, by the class's type_info:
  // a chain of failing dynamic_casts per context would cost more than the
  // rest of building.
  std::vector<std::pair<const std::type_info*, LogicalAlt>> logical_alts_;
  // For As: by (class of the object, class cast to).
  absl::flat_hash_map<std::pair<const std::type_info*, const std::type_info*>,
                      bool>
      is_a_;
  std::vector<std::pair<const std::type_info*, OperationAlt>> operation_alts_;
};

// The child lookups, here so that both files of the builder
// (ast_builder.cc, ast_builder_statements.cc) instantiate them.
template <typename T>
T* AstBuilder::As(antlr4::tree::ParseTree* p) {
  if (p == nullptr) return nullptr;
  auto [it, added] = is_a_.try_emplace({&typeid(*p), &typeid(T)}, false);
  if (added) it->second = dynamic_cast<T*>(p) != nullptr;
  return it->second ? static_cast<T*>(p) : nullptr;
}

template <typename T>
T* AstBuilder::One(antlr4::ParserRuleContext* c, size_t i) {
  for (antlr4::tree::ParseTree* child : c->children) {
    if (T* t = As<T>(child); t != nullptr && i-- == 0) return t;
  }
  return nullptr;
}

template <typename T>
std::vector<T*> AstBuilder::All(antlr4::ParserRuleContext* c) {
  std::vector<T*> all;
  for (antlr4::tree::ParseTree* child : c->children) {
    if (T* t = As<T>(child)) all.push_back(t);
  }
  return all;
}

}  // namespace runnel::lang

#endif  // RUNNEL_LANG_AST_BUILDER_H_
