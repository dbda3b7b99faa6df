// The abstract syntax tree of a Runnel script (docs/language.md §2-§5).
//
// lang/parser.h builds it from the ANTLR parse tree; the interpreter walks
// it. Every node has the source span it came from, so any error found while
// evaluating — and any graph node made — points back at the script. Nodes
// are owned by their parent through unique_ptr; a Program owns the tree.
// Dispatch on `kind` and static_cast to the concrete type.
#ifndef RUNNEL_LANG_AST_H_
#define RUNNEL_LANG_AST_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "base/source_span.h"

namespace runnel::lang {

struct Expr;
struct Stmt;
using ExprPtr = std::unique_ptr<Expr>;
using StmtPtr = std::unique_ptr<Stmt>;

// `{ stmt; stmt; expr }` — its value is the last statement's, when that is
// an expression statement, else none.
struct Block {
  std::vector<StmtPtr> stmts;
  SourceSpan span;
};

// `x`, `_`, `(a, (b, _))`
struct Pattern {
  enum class Kind { kName, kDiscard, kTuple } kind = Kind::kName;
  std::string name;               // kName
  std::vector<Pattern> elements;  // kTuple
  SourceSpan span;
};

// `f32[?, 784]`; `dims` empty with has_dims false for a bare dtype.
struct TypeAnnotation {
  std::string dtype;
  bool has_dims = false;
  std::vector<ExprPtr> dims;  // nullptr = `?`
  SourceSpan span;
};

struct Param {
  std::string name;
  ExprPtr default_value;  // may be null
  SourceSpan span;
};

struct Arg {
  std::string name;  // empty = positional
  ExprPtr value;
  SourceSpan span;
};

// ---------------------------------------------------------------------------
// Expressions

enum class ExprKind {
  kInt,
  kFloat,
  kString,
  kBool,
  kNone,
  kName,
  kList,
  kTuple,
  kRecord,
  kUnary,
  kBinary,
  kCall,
  kIndex,
  kMember,
  kIf,
  kLoop,
  kLambda,
  kRun,
  kAssign,
};

struct Expr {
  explicit Expr(ExprKind k) : kind(k) {}
  virtual ~Expr() = default;
  const ExprKind kind;
  SourceSpan span;
};

struct IntExpr : Expr {
  IntExpr() : Expr(ExprKind::kInt) {}
  int64_t value = 0;
};
struct FloatExpr : Expr {
  FloatExpr() : Expr(ExprKind::kFloat) {}
  double value = 0;
};
struct StringExpr : Expr {
  StringExpr() : Expr(ExprKind::kString) {}
  std::string value;  // escapes already decoded
};
struct BoolExpr : Expr {
  BoolExpr() : Expr(ExprKind::kBool) {}
  bool value = false;
};
struct NoneExpr : Expr {
  NoneExpr() : Expr(ExprKind::kNone) {}
};
struct NameExpr : Expr {
  NameExpr() : Expr(ExprKind::kName) {}
  std::string name;
};
// `[a, b]` (a tensor literal or a list, decided by the values) and `(a, b)`.
struct SequenceExpr : Expr {
  explicit SequenceExpr(ExprKind k) : Expr(k) {}
  std::vector<ExprPtr> elements;
};
struct RecordExpr : Expr {
  RecordExpr() : Expr(ExprKind::kRecord) {}
  struct Field {
    std::string name;
    ExprPtr value;
    SourceSpan span;
  };
  std::vector<Field> fields;
};

enum class UnaryOp { kNeg, kNot };
struct UnaryExpr : Expr {
  UnaryExpr() : Expr(ExprKind::kUnary) {}
  UnaryOp op = UnaryOp::kNeg;
  ExprPtr operand;
};

enum class BinaryOp {
  kAdd,
  kSub,
  kMul,
  kDiv,
  kFloorDiv,
  kMod,
  kPow,
  kMatMul,
  kEq,
  kNe,
  kLt,
  kLe,
  kGt,
  kGe,
  kAnd,
  kOr,
  kRange,
};
// The operator as written: "+", "@", "and", "..".
const char* BinaryOpText(BinaryOp op);

struct BinaryExpr : Expr {
  BinaryExpr() : Expr(ExprKind::kBinary) {}
  BinaryOp op = BinaryOp::kAdd;
  ExprPtr lhs, rhs;
  SourceSpan op_span;  // the operator token, for the caret
};

struct CallExpr : Expr {
  CallExpr() : Expr(ExprKind::kCall) {}
  ExprPtr callee;
  std::vector<Arg> args;
};

// One subscript: an index `i`, or a slice `lo:hi:step` (parts optional).
struct Subscript {
  bool is_slice = false;
  ExprPtr index;         // !is_slice
  ExprPtr lo, hi, step;  // is_slice; each may be null
  SourceSpan span;
};
struct IndexExpr : Expr {
  IndexExpr() : Expr(ExprKind::kIndex) {}
  ExprPtr target;
  std::vector<Subscript> subscripts;
};

struct MemberExpr : Expr {
  MemberExpr() : Expr(ExprKind::kMember) {}
  ExprPtr target;
  std::string name;
};

// `if c { } else { }`; `else_if` holds a chained `else if`.
struct IfExpr : Expr {
  IfExpr() : Expr(ExprKind::kIf) {}
  ExprPtr cond;
  Block then_block;
  std::optional<Block> else_block;
  ExprPtr else_if;  // an IfExpr, or null
};

// `loop PATTERN = INIT for P in ITER { }` / `loop PATTERN = INIT while C { }`
struct LoopExpr : Expr {
  LoopExpr() : Expr(ExprKind::kLoop) {}
  Pattern state;
  ExprPtr init;
  bool is_for = true;
  Pattern var;       // is_for
  ExprPtr iterable;  // is_for
  ExprPtr cond;      // !is_for
  // `with NAME = VALUE` before the body (`checkpoint`), or none.
  std::string option;
  SourceSpan option_span;
  ExprPtr option_value;
  Block body;
};

struct LambdaExpr : Expr {
  LambdaExpr() : Expr(ExprKind::kLambda) {}
  std::vector<Param> params;
  ExprPtr body_expr;                // `fn(x) => e`
  std::optional<Block> body_block;  // `fn(x) { ... }`
};

struct RunExpr : Expr {
  RunExpr() : Expr(ExprKind::kRun) {}
  ExprPtr fetches;
  ExprPtr feeds;  // may be null
};

// `target := v`, `+=`, `-=`, `*=`, `/=`.
enum class AssignOp { kAssign, kAdd, kSub, kMul, kDiv };
const char* AssignOpText(AssignOp op);
struct AssignExpr : Expr {
  AssignExpr() : Expr(ExprKind::kAssign) {}
  AssignOp op = AssignOp::kAssign;
  ExprPtr target;
  ExprPtr value;
};

// ---------------------------------------------------------------------------
// Statements

enum class StmtKind {
  kLet,
  kVar,
  kInput,
  kDef,
  kImport,
  kReturn,
  kBreak,
  kContinue,
  kFor,
  kScope,
  kDevice,
  kAfter,
  kRebind,
  kExpr,
};

struct Stmt {
  explicit Stmt(StmtKind k) : kind(k) {}
  virtual ~Stmt() = default;
  const StmtKind kind;
  SourceSpan span;
};

struct LetStmt : Stmt {
  LetStmt() : Stmt(StmtKind::kLet) {}
  Pattern pattern;
  ExprPtr value;
};
// `var` and `state` (is_state).
struct VarStmt : Stmt {
  VarStmt() : Stmt(StmtKind::kVar) {}
  bool is_state = false;
  std::string name;
  SourceSpan name_span;
  std::optional<TypeAnnotation> type;
  ExprPtr init;
};
struct InputStmt : Stmt {
  InputStmt() : Stmt(StmtKind::kInput) {}
  std::string name;
  SourceSpan name_span;
  TypeAnnotation type;
  ExprPtr default_value;  // may be null
};
struct DefStmt : Stmt {
  DefStmt() : Stmt(StmtKind::kDef) {}
  std::string name;
  SourceSpan name_span;
  std::vector<Param> params;
  ExprPtr body_expr;                // `def f(x) = e`
  std::optional<Block> body_block;  // `def f(x) { ... }`
};
struct ImportStmt : Stmt {
  ImportStmt() : Stmt(StmtKind::kImport) {}
  std::string module;  // `import nn` (empty for a file import)
  std::string path;    // `import "lib/x.rnl" as x`
  std::string alias;   // name bound; = module when not given
};
struct ReturnStmt : Stmt {
  ReturnStmt() : Stmt(StmtKind::kReturn) {}
  ExprPtr value;  // may be null
};
struct JumpStmt : Stmt {  // break / continue
  explicit JumpStmt(StmtKind k) : Stmt(k) {}
};
struct ForStmt : Stmt {
  ForStmt() : Stmt(StmtKind::kFor) {}
  Pattern var;
  ExprPtr iterable;
  Block body;
};
// `scope E { }`, `device E { }`, `after E { }`.
struct AnnotateStmt : Stmt {
  explicit AnnotateStmt(StmtKind k) : Stmt(k) {}
  ExprPtr arg;
  Block body;
};
// `pattern = expr` rebinding an existing name.
struct RebindStmt : Stmt {
  RebindStmt() : Stmt(StmtKind::kRebind) {}
  Pattern pattern;
  ExprPtr value;
};
struct ExprStmt : Stmt {
  ExprStmt() : Stmt(StmtKind::kExpr) {}
  ExprPtr expr;
};

struct Program {
  std::string file;
  std::vector<StmtPtr> stmts;
};

}  // namespace runnel::lang

#endif  // RUNNEL_LANG_AST_H_
