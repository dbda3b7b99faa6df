#include "lang/ast_walk.h"

namespace runnel::lang {
namespace {

// Calls `on_expr` on every expression.
class Walker {
 public:
  explicit Walker(const ExprVisitor& on_expr) : on_expr_(on_expr) {}

  void Stmts(const std::vector<StmtPtr>& stmts) const {
    for (const StmtPtr& s : stmts) Statement(*s);
  }

 private:
  void Walk(const ExprPtr& e) const {
    if (e != nullptr) Expression(*e);
  }
  void Body(const Block& b) const { Stmts(b.stmts); }
  void Params(const std::vector<Param>& params) const {
    for (const Param& p : params) Walk(p.default_value);
  }
  void Type(const TypeAnnotation& type) const {
    for (const ExprPtr& d : type.dims) Walk(d);
  }

  void Statement(const Stmt& s) const {
    switch (s.kind) {
      case StmtKind::kLet:
        Walk(static_cast<const LetStmt&>(s).value);
        return;
      case StmtKind::kVar: {
        const auto& v = static_cast<const VarStmt&>(s);
        if (v.type) Type(*v.type);
        Walk(v.init);
        return;
      }
      case StmtKind::kInput: {
        const auto& in = static_cast<const InputStmt&>(s);
        Type(in.type);
        Walk(in.default_value);
        return;
      }
      case StmtKind::kDef: {
        const auto& d = static_cast<const DefStmt&>(s);
        Params(d.params);
        Walk(d.body_expr);
        if (d.body_block) Body(*d.body_block);
        return;
      }
      case StmtKind::kReturn:
        Walk(static_cast<const ReturnStmt&>(s).value);
        return;
      case StmtKind::kFor: {
        const auto& f = static_cast<const ForStmt&>(s);
        Walk(f.iterable);
        Body(f.body);
        return;
      }
      case StmtKind::kScope:
      case StmtKind::kDevice:
      case StmtKind::kAfter: {
        const auto& a = static_cast<const AnnotateStmt&>(s);
        Walk(a.arg);
        Body(a.body);
        return;
      }
      case StmtKind::kRebind:
        Walk(static_cast<const RebindStmt&>(s).value);
        return;
      case StmtKind::kExpr:
        Walk(static_cast<const ExprStmt&>(s).expr);
        return;
      case StmtKind::kImport:
      case StmtKind::kBreak:
      case StmtKind::kContinue:
        return;
    }
  }

  void Expression(const Expr& e) const {
    on_expr_(e);
    switch (e.kind) {
      case ExprKind::kInt:
      case ExprKind::kFloat:
      case ExprKind::kString:
      case ExprKind::kBool:
      case ExprKind::kNone:
      case ExprKind::kName:
        return;
      case ExprKind::kList:
      case ExprKind::kTuple:
        for (const ExprPtr& x : static_cast<const SequenceExpr&>(e).elements) {
          Walk(x);
        }
        return;
      case ExprKind::kRecord:
        for (const auto& f : static_cast<const RecordExpr&>(e).fields) {
          Walk(f.value);
        }
        return;
      case ExprKind::kUnary:
        Walk(static_cast<const UnaryExpr&>(e).operand);
        return;
      case ExprKind::kBinary: {
        const auto& b = static_cast<const BinaryExpr&>(e);
        Walk(b.lhs);
        Walk(b.rhs);
        return;
      }
      case ExprKind::kCall: {
        const auto& c = static_cast<const CallExpr&>(e);
        Walk(c.callee);
        for (const Arg& a : c.args) Walk(a.value);
        return;
      }
      case ExprKind::kIndex: {
        const auto& x = static_cast<const IndexExpr&>(e);
        Walk(x.target);
        for (const Subscript& s : x.subscripts) {
          Walk(s.index);
          Walk(s.lo);
          Walk(s.hi);
          Walk(s.step);
        }
        return;
      }
      case ExprKind::kMember:
        Walk(static_cast<const MemberExpr&>(e).target);
        return;
      case ExprKind::kIf: {
        const auto& i = static_cast<const IfExpr&>(e);
        Walk(i.cond);
        Body(i.then_block);
        if (i.else_block) Body(*i.else_block);
        Walk(i.else_if);
        return;
      }
      case ExprKind::kLoop: {
        const auto& l = static_cast<const LoopExpr&>(e);
        Walk(l.init);
        Walk(l.iterable);
        Walk(l.cond);
        Walk(l.option_value);
        Body(l.body);
        return;
      }
      case ExprKind::kLambda: {
        const auto& l = static_cast<const LambdaExpr&>(e);
        Params(l.params);
        Walk(l.body_expr);
        if (l.body_block) Body(*l.body_block);
        return;
      }
      case ExprKind::kRun: {
        const auto& r = static_cast<const RunExpr&>(e);
        Walk(r.fetches);
        Walk(r.feeds);
        return;
      }
      case ExprKind::kAssign: {
        const auto& a = static_cast<const AssignExpr&>(e);
        Walk(a.target);
        Walk(a.value);
        return;
      }
    }
  }

  const ExprVisitor& on_expr_;
};

}  // namespace

void WalkExprs(const Program& program, const ExprVisitor& visit) {
  Walker(visit).Stmts(program.stmts);
}

}  // namespace runnel::lang
