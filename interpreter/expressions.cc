// Expressions: names, literals, operators, calls, indexing, members,
// `run` and assignments. `if` and `loop` are if_loop.cc's.
#include <algorithm>
#include <cctype>
#include <cmath>
#include <filesystem>
#include <functional>

#include "absl/strings/ascii.h"
#include "base/errors.h"
#include "base/status_macros.h"
#include "base/strings.h"
#include "common_runtime/gradients.h"
#include "interpreter/builtins.h"
#include "interpreter/control_flow.h"
#include "interpreter/diag.h"
#include "interpreter/indexing.h"
#include "interpreter/interpreter.h"
#include "interpreter/large_stack.h"
#include "interpreter/observer.h"
#include "interpreter/restore.h"

namespace runnel::interp {
namespace {

using lang::BinaryOp;
using lang::ExprKind;
using lang::StmtKind;

const char* OpNameOf(BinaryOp op) {
  switch (op) {
    case BinaryOp::kAdd:
      return "add";
    case BinaryOp::kSub:
      return "sub";
    case BinaryOp::kMul:
      return "mul";
    case BinaryOp::kDiv:
      return "div";
    case BinaryOp::kFloorDiv:
      return "floordiv";
    case BinaryOp::kMod:
      return "mod";
    case BinaryOp::kPow:
      return "pow";
    case BinaryOp::kMatMul:
      return "matmul";
    case BinaryOp::kEq:
      return "equal";
    case BinaryOp::kNe:
      return "not_equal";
    case BinaryOp::kLt:
      return "less";
    case BinaryOp::kLe:
      return "less_equal";
    case BinaryOp::kGt:
      return "greater";
    case BinaryOp::kGe:
      return "greater_equal";
    case BinaryOp::kAnd:
      return "logical_and";
    case BinaryOp::kOr:
      return "logical_or";
    case BinaryOp::kRange:
      return "range";
  }
  return "?";
}

// The caret column for an operator inside `whole`, when on its first line.
int CaretAt(const SourceSpan& whole, const SourceSpan& op) {
  return op.known() && op.line == whole.line ? op.col : 0;
}

bool IsVariable(const Value& v) {
  return v.is_symbolic() && v.out().node->op() == "variable";
}

}  // namespace

// ---- expressions ------------------------------------------------------------

absl::Status Interpreter::UnknownName(const std::string& name,
                                      const SourceSpan& span) {
  lang::Diagnostic d;
  d.message = StrCat("unknown name '", name, "'");
  d.span = span;
  // Declared further down the same file: used before its declaration.
  if (std::optional<SourceSpan> later = LaterDeclaration(name, span)) {
    d.message = StrCat("'", name, "' is used before its declaration");
    d.notes.push_back(Note(*later, StrCat(name, " is declared here, later")));
    return DiagStatus(std::move(d));
  }
  std::string hint;
  if (name == "True" || name == "False" || name == "None") {
    hint = StrCat("did you mean '", absl::AsciiStrToLower(name), "'?");
  } else if (modules_.IsStdlibModule(name, span)) {
    hint =
        StrCat("'", name, "' is a module of the standard library: add 'import ",
               name, "' before this line");
  } else {
    std::vector<std::string> names;
    env_->CollectNames(&names);
    std::string best = ClosestName(name, names);
    if (!best.empty()) hint = StrCat("did you mean '", best, "'?");
  }
  if (!hint.empty()) d.notes.push_back(Note(SourceSpan{}, hint));
  return DiagStatus(std::move(d));
}

std::optional<SourceSpan> Interpreter::LaterDeclaration(
    const std::string& name, const SourceSpan& use) const {
  if (!use.known()) return std::nullopt;
  std::optional<SourceSpan> found;
  auto after = [&](const SourceSpan& s) {
    return s.file == use.file &&
           (s.line > use.line || (s.line == use.line && s.col > use.col));
  };
  auto declares = [&](const SourceSpan& at, const std::string& declared) {
    if (!found && declared == name && after(at)) found = at;
  };
  std::function<void(const lang::Pattern&)> pattern =
      [&](const lang::Pattern& p) {
        if (p.kind == lang::Pattern::Kind::kName) declares(p.span, p.name);
        for (const lang::Pattern& e : p.elements) pattern(e);
      };
  auto visit = [&](const lang::Stmt& s) {
    switch (s.kind) {
      case StmtKind::kLet:
        pattern(static_cast<const lang::LetStmt&>(s).pattern);
        return;
      case StmtKind::kVar: {
        const auto& v = static_cast<const lang::VarStmt&>(s);
        declares(v.name_span, v.name);
        return;
      }
      case StmtKind::kInput: {
        const auto& in = static_cast<const lang::InputStmt&>(s);
        declares(in.name_span, in.name);
        return;
      }
      case StmtKind::kDef: {
        const auto& def = static_cast<const lang::DefStmt&>(s);
        declares(def.name_span, def.name);
        return;
      }
      default:
        return;
    }
  };
  // Top-level declarations only: a later local of some function body is
  // another name.
  for (const auto& program : modules_.kept()) {
    for (const lang::StmtPtr& s : program->stmts) visit(*s);
  }
  return found;
}

absl::StatusOr<Value> Interpreter::Eval(const lang::Expr& e,
                                        const std::string& hint) {
  absl::StatusOr<Value> v = EvalExpr(e, hint);
  if (options_.observer != nullptr && v.ok()) {
    options_.observer->Evaluated(e, *v);
  }
  return v;
}

absl::StatusOr<Value> Interpreter::EvalExpr(const lang::Expr& e,
                                            const std::string& hint) {
  if (StackLow()) {
    return ErrorAt(e.span,
                   "too many nested calls or expressions: the interpreter's "
                   "stack is used up");
  }
  switch (e.kind) {
    case ExprKind::kInt: {
      const int64_t v = static_cast<const lang::IntExpr&>(e).value;
      if (v > INT32_MAX || v < INT32_MIN) {
        return Value::Concrete(Tensor::Scalar<int64_t>(v), true);
      }
      return Value::Int(v);
    }
    case ExprKind::kFloat:
      return Value::Float(static_cast<const lang::FloatExpr&>(e).value);
    case ExprKind::kString:
      return Value::String(static_cast<const lang::StringExpr&>(e).value);
    case ExprKind::kBool:
      return Value::Bool(static_cast<const lang::BoolExpr&>(e).value);
    case ExprKind::kNone:
      return Value();
    case ExprKind::kName:
      return EvalName(static_cast<const lang::NameExpr&>(e));
    case ExprKind::kList:
    case ExprKind::kTuple:
      return EvalList(static_cast<const lang::SequenceExpr&>(e));
    case ExprKind::kRecord: {
      const auto& r = static_cast<const lang::RecordExpr&>(e);
      std::vector<Field> fields;
      for (const auto& f : r.fields) {
        for (const Field& prev : fields) {
          if (prev.first == f.name) {
            return ErrorAt(f.span,
                           StrCat("field '", f.name, "' is given twice"));
          }
        }
        RN_ASSIGN_OR_RETURN(Value v, Eval(*f.value));
        fields.emplace_back(f.name, std::move(v));
      }
      return Value::Record(std::move(fields));
    }
    case ExprKind::kUnary:
      return EvalUnary(static_cast<const lang::UnaryExpr&>(e), hint);
    case ExprKind::kBinary:
      return EvalBinary(static_cast<const lang::BinaryExpr&>(e), hint);
    case ExprKind::kCall:
      return EvalCall(static_cast<const lang::CallExpr&>(e), hint);
    case ExprKind::kIndex:
      return EvalIndex(static_cast<const lang::IndexExpr&>(e), hint);
    case ExprKind::kMember:
      return EvalMember(static_cast<const lang::MemberExpr&>(e));
    case ExprKind::kIf:
      return EvalIf(static_cast<const lang::IfExpr&>(e), false);
    case ExprKind::kLoop:
      return EvalLoop(static_cast<const lang::LoopExpr&>(e));
    case ExprKind::kLambda: {
      auto f = std::make_shared<Function>();
      f->name = "<lambda>";
      f->lambda = &static_cast<const lang::LambdaExpr&>(e);
      f->closure = env_;
      NoteClosure(env_);
      f->span = e.span;
      return Value::OfFunction(std::move(f));
    }
    case ExprKind::kRun:
      return EvalRun(static_cast<const lang::RunExpr&>(e));
    case ExprKind::kAssign:
      return EvalAssign(static_cast<const lang::AssignExpr&>(e), hint);
  }
  return ErrorAt(e.span, "unknown expression");
}

absl::StatusOr<Value> Interpreter::EvalName(const lang::NameExpr& e) {
  if (e.name == "_") {
    return ErrorAt(e.span, "'_' discards a value; it cannot be read");
  }
  Binding* b = env_->Find(e.name);
  if (b == nullptr) return UnknownName(e.name, e.span);
  return b->value;
}

absl::StatusOr<Value> Interpreter::EvalList(const lang::SequenceExpr& e) {
  std::vector<Value> items;
  for (const lang::ExprPtr& el : e.elements) {
    RN_ASSIGN_OR_RETURN(Value v, Eval(*el));
    items.push_back(std::move(v));
  }
  if (e.kind == ExprKind::kTuple) return Value::Tuple(std::move(items));
  bool all_tensors = !items.empty();
  for (const Value& v : items) {
    if (!v.is_concrete()) all_tensors = false;
  }
  if (all_tensors) {
    // Named tensors of different shapes stay a list, as symbolic ones do,
    // for concat([a, b]); a ragged nest of bare literals ([[1, 2], [3]]) is
    // a broken tensor literal, which TryStack reports.
    bool ragged = false, all_literal = true;
    for (const Value& v : items) {
      if (!v.literal()) all_literal = false;
      if (v.tensor().shape() != items[0].tensor().shape()) ragged = true;
    }
    if (ragged && !all_literal) return Value::List(std::move(items));
    RN_ASSIGN_OR_RETURN(std::optional<Value> t,
                        builder_.TryStack(items, e.span));
    if (t) return *t;
  }
  return Value::List(std::move(items));
}

absl::StatusOr<Value> Interpreter::EvalUnary(const lang::UnaryExpr& e,
                                             const std::string& hint) {
  RN_ASSIGN_OR_RETURN(Value v, Eval(*e.operand));
  RN_RETURN_IF_ERROR(UsedNoneOfIf(v, e.span));
  OpSite site{e.span, e.span.col, hint};
  if (e.op == lang::UnaryOp::kNeg) {
    if (!v.is_tensor() && !v.is_sequence()) {
      return ErrorAt(e.span, StrCat("cannot negate ", DescribeValue(v)),
                     e.span.col);
    }
    return builder_.ApplyOp("neg", {v}, {}, site);
  }
  if (v.is_concrete() && v.tensor().dtype() == DType::kBool &&
      v.tensor().num_elements() == 1 && v.tensor().rank() == 0) {
    return Value::Bool(!v.tensor().data<bool>()[0]);
  }
  if (!v.is_tensor()) {
    return ErrorAt(e.span,
                   StrCat("'not' needs a bool tensor, got ", DescribeValue(v)),
                   e.span.col);
  }
  return builder_.ApplyOp("logical_not", {v}, {}, site);
}

absl::Status Interpreter::Truthy(const Value& v, const SourceSpan& span,
                                 std::string_view what, bool* out) {
  if (v.is_symbolic()) {
    return ErrorAt(span, StrCat(what, " is symbolic"));
  }
  if (v.is_none()) {
    *out = false;
    return absl::OkStatus();
  }
  if (!v.is_concrete()) {
    return ErrorAt(span,
                   StrCat(what, " must be a bool, got ", DescribeValue(v)));
  }
  if (v.tensor().num_elements() != 1) {
    return ErrorAt(
        span, StrCat(what, " must be a single value, got ", DescribeValue(v),
                     "; reduce it with all() or any()"));
  }
  *out = *v.AsDouble() != 0;
  return absl::OkStatus();
}

absl::StatusOr<Value> Interpreter::BinaryOnValues(BinaryOp op, const Value& a,
                                                  const Value& b,
                                                  const OpSite& site) {
  const bool eq = op == BinaryOp::kEq, ne = op == BinaryOp::kNe;
  auto kinds_error = [&]() {
    RN_RETURN_IF_ERROR(UsedNoneOfIf(a, site.span));
    RN_RETURN_IF_ERROR(UsedNoneOfIf(b, site.span));
    return ErrorAt(site.span,
                   StrCat("unsupported operands for '", lang::BinaryOpText(op),
                          "': ", DescribeValue(a), " and ", DescribeValue(b)),
                   site.caret);
  };
  // Strings, dtypes and none compare on the host; strings join with `+`.
  const bool host_a = a.kind() == ValueKind::kString ||
                      a.kind() == ValueKind::kDType || a.is_none();
  const bool host_b = b.kind() == ValueKind::kString ||
                      b.kind() == ValueKind::kDType || b.is_none();
  if (host_a || host_b) {
    if (op == BinaryOp::kAdd && a.kind() == ValueKind::kString &&
        b.kind() == ValueKind::kString) {
      return Value::String(a.str() + b.str());
    }
    if (!eq && !ne) return kinds_error();
    bool same = a.kind() == b.kind();
    if (same && a.kind() == ValueKind::kString) same = a.str() == b.str();
    if (same && a.kind() == ValueKind::kDType) {
      same = a.dtype_value() == b.dtype_value();
    }
    return Value::Bool(eq ? same : !same);
  }
  if (op == BinaryOp::kAdd && a.is_sequence() && b.is_sequence() &&
      a.kind() == b.kind()) {
    std::optional<Value> ta, tb;
    std::vector<Value> items = a.items();
    items.insert(items.end(), b.items().begin(), b.items().end());
    return a.kind() == ValueKind::kTuple ? Value::Tuple(std::move(items))
                                         : Value::List(std::move(items));
  }
  auto tensorish = [](const Value& v) {
    return v.is_tensor() || v.is_sequence();
  };
  if (!tensorish(a) || !tensorish(b)) return kinds_error();
  // `[] + [x]`: `[x]` is a tensor, so `+` adds element-wise, and an empty
  // operand broadcasts the sum to nothing, silently losing `x`. Whoever
  // writes it is building a list.
  auto empty_list = [](const Value& v) {
    return v.is_sequence() && v.items().empty();
  };
  auto has_elements = [](const Value& v) {
    if (v.is_sequence()) return !v.items().empty();
    const Shape shape = v.tensor_shape();
    return shape.unknown_rank() || !shape.IsFullyDefined() ||
           shape.num_elements() > 0;
  };
  if (op == BinaryOp::kAdd && ((empty_list(a) && has_elements(b)) ||
                               (empty_list(b) && has_elements(a)))) {
    return ErrorAt(
        site.span,
        StrCat("'+' of [] and ", DescribeValue(empty_list(a) ? b : a),
               " adds element-wise, and the empty operand makes the sum "
               "empty; to build a list, collect a tuple (acc = acc + (x,)) "
               "or join tensors with concat([a, b])"),
        site.caret);
  }
  return builder_.ApplyOp(OpNameOf(op), {a, b}, {}, site);
}

absl::StatusOr<Value> Interpreter::EvalBinary(const lang::BinaryExpr& e,
                                              const std::string& hint) {
  OpSite site{e.span, CaretAt(e.span, e.op_span), hint};
  RN_ASSIGN_OR_RETURN(Value a, Eval(*e.lhs));
  if (e.op == BinaryOp::kAnd || e.op == BinaryOp::kOr) {
    if (a.is_concrete() && a.tensor().dtype() == DType::kBool &&
        a.tensor().rank() == 0) {
      const bool lhs = a.tensor().data<bool>()[0];
      if (e.op == BinaryOp::kAnd && !lhs) return a;
      if (e.op == BinaryOp::kOr && lhs) return a;
    }
    RN_ASSIGN_OR_RETURN(Value b, Eval(*e.rhs));
    if (!a.is_tensor() || !b.is_tensor()) {
      return ErrorAt(
          e.span,
          StrCat("'", lang::BinaryOpText(e.op), "' needs bool tensors, got ",
                 DescribeValue(a), " and ", DescribeValue(b)),
          site.caret);
    }
    return builder_.ApplyOp(OpNameOf(e.op), {a, b}, {}, site);
  }
  RN_ASSIGN_OR_RETURN(Value b, Eval(*e.rhs));
  if (e.op == BinaryOp::kRange) {
    std::optional<int64_t> lo = a.AsInt(), hi = b.AsInt();
    if (a.is_symbolic() || b.is_symbolic()) {
      return ErrorAt(e.span,
                     "a range value needs concrete bounds; this one is "
                     "symbolic (a symbolic range can drive a `loop ... for`, "
                     "which then runs in the graph)",
                     site.caret);
    }
    if (!lo || !hi || a.tensor().rank() != 0 || b.tensor().rank() != 0) {
      return ErrorAt(e.span,
                     StrCat("a range needs integer bounds, got ",
                            DescribeValue(a), " and ", DescribeValue(b)),
                     site.caret);
    }
    return Value::Range(*lo, *hi);
  }
  return BinaryOnValues(e.op, a, b, site);
}

absl::StatusOr<Value> Interpreter::EvalCall(const lang::CallExpr& e,
                                            const std::string& hint) {
  RN_ASSIGN_OR_RETURN(Value callee, Eval(*e.callee));
  std::vector<Value> args;
  std::vector<SourceSpan> spans;
  std::vector<Field> named;
  std::vector<SourceSpan> named_spans;
  for (const lang::Arg& a : e.args) {
    RN_ASSIGN_OR_RETURN(Value v, Eval(*a.value));
    const SourceSpan& span = a.span.known() ? a.span : a.value->span;
    if (a.name.empty()) {
      if (!named.empty()) {
        return ErrorAt(span,
                       "a positional argument cannot follow named arguments");
      }
      args.push_back(std::move(v));
      spans.push_back(span);
    } else {
      for (const Field& f : named) {
        if (f.first == a.name) {
          return ErrorAt(span,
                         StrCat("argument '", a.name, "' is given twice"));
        }
      }
      named.emplace_back(a.name, std::move(v));
      named_spans.push_back(span);
    }
  }
  if (callee.kind() != ValueKind::kFunction) {
    return ErrorAt(e.callee->span,
                   StrCat("cannot call ", DescribeValue(callee)));
  }
  return Call(callee, std::move(args), std::move(spans), std::move(named),
              std::move(named_spans), e.span, hint);
}

absl::StatusOr<Value> Interpreter::EvalIndex(const lang::IndexExpr& e,
                                             const std::string& hint) {
  RN_ASSIGN_OR_RETURN(Value target, Eval(*e.target));
  std::vector<Subscript> subs;
  for (const lang::Subscript& s : e.subscripts) {
    Subscript sub;
    sub.is_slice = s.is_slice;
    sub.span = s.span.known() ? s.span : e.span;
    if (s.is_slice) {
      if (s.lo) {
        RN_ASSIGN_OR_RETURN(sub.lo, Eval(*s.lo));
      }
      if (s.hi) {
        RN_ASSIGN_OR_RETURN(sub.hi, Eval(*s.hi));
      }
      if (s.step) {
        RN_ASSIGN_OR_RETURN(sub.step, Eval(*s.step));
      }
    } else {
      RN_ASSIGN_OR_RETURN(sub.index, Eval(*s.index));
    }
    subs.push_back(std::move(sub));
  }
  return Index(builder_, target, subs, OpSite{e.span, 0, hint});
}

// A sparse gradient's members (docs/sparse.md): `is_sparse`, and its rows
// as `indices` (a vector) and `values` (one row per index).
absl::StatusOr<Value> Interpreter::SparseMember(const Value& target,
                                                const std::string& name,
                                                const SourceSpan& span) {
  std::optional<SparseGradient> sparse =
      target.is_symbolic() ? AsSparseGradient(target.out()) : std::nullopt;
  if (name == "is_sparse") return Value::Bool(sparse.has_value());
  if (!sparse) {
    return ErrorAt(
        span, StrCat("'", name, "' needs a sparse gradient (",
                     "the gradient of a gather), got ", DescribeValue(target)));
  }
  if (name == "indices") {
    return builder_.ApplyOp("reshape",
                            {Value::Symbolic(sparse->indices),
                             Value::Concrete(Tensor::OfDims({-1}))},
                            {}, OpSite(span));
  }
  const Shape& params = sparse->params.node->output(sparse->params.index).shape;
  std::optional<std::vector<int64_t>> rows = SparseRowsShape(params);
  if (!rows) {
    return ErrorAt(span, StrCat("the rows of this sparse gradient have no "
                                "static shape: ",
                                params.ToString()));
  }
  return builder_.ApplyOp(
      "reshape",
      {Value::Symbolic(sparse->values), Value::Concrete(Tensor::OfDims(*rows))},
      {}, OpSite(span));
}

absl::StatusOr<Value> Interpreter::EvalMember(const lang::MemberExpr& e) {
  RN_ASSIGN_OR_RETURN(Value target, Eval(*e.target));
  const std::string& name = e.name;
  auto no_member = [&](const std::vector<std::string>& options) {
    lang::Diagnostic d;
    d.message = StrCat(DescribeValue(target), " has no member '", name, "'");
    d.span = e.span;
    std::string best = ClosestName(name, options);
    if (!best.empty()) {
      d.notes.push_back(
          Note(SourceSpan{}, StrCat("did you mean '", best, "'?")));
    }
    return DiagStatus(std::move(d));
  };
  switch (target.kind()) {
    case ValueKind::kModule: {
      const Module& m = *target.module();
      if (!name.empty() && name[0] == '_') {
        return ErrorAt(
            e.span, StrCat("'", name, "' is private to module '", m.name, "'"));
      }
      Binding* b = m.env->FindLocal(name);
      if (b == nullptr) {
        std::vector<std::string> names;
        for (const std::string& n : m.env->Names()) {
          if (!n.empty() && n[0] != '_') names.push_back(n);
        }
        lang::Diagnostic d;
        d.message = StrCat("module '", m.name, "' has no member '", name, "'");
        d.span = e.span;
        std::string best = ClosestName(name, names);
        if (!best.empty()) {
          d.notes.push_back(
              Note(SourceSpan{}, StrCat("did you mean '", best, "'?")));
        }
        return DiagStatus(std::move(d));
      }
      return b->value;
    }
    case ValueKind::kRecord: {
      if (const Value* v = target.FindField(name)) return *v;
      std::vector<std::string> names;
      for (const Field& f : target.fields()) names.push_back(f.first);
      return no_member(names);
    }
    case ValueKind::kDataset: {
      for (const auto& [n, t] : target.dataset()->columns) {
        if (n == name) return Value::Concrete(t);
      }
      std::vector<std::string> names;
      for (const auto& [n, t] : target.dataset()->columns) names.push_back(n);
      return no_member(names);
    }
    case ValueKind::kTensor:
    case ValueKind::kSymbolic: {
      if (name == "shape") {
        Shape s = target.tensor_shape();
        if (s.unknown_rank()) {
          return ErrorAt(e.span, "the rank of this tensor is not known");
        }
        return Value::Concrete(Tensor::OfDims(s.dims()));
      }
      if (name == "dtype") return Value::OfDType(target.tensor_dtype());
      if (name == "rank") {
        Shape s = target.tensor_shape();
        if (s.unknown_rank()) {
          return ErrorAt(e.span, "the rank of this tensor is not known");
        }
        return Value::Int(s.rank(), false);
      }
      if (name == "is_sparse" || name == "indices" || name == "values") {
        return SparseMember(target, name, e.span);
      }
      if (name == "name") {
        if (!target.is_symbolic()) return Value();
        std::string n = target.out().node->name();
        if (target.out().index != 0) n += StrCat(":", target.out().index);
        return Value::String(n);
      }
      return no_member(
          {"shape", "dtype", "rank", "name", "is_sparse", "indices", "values"});
    }
    case ValueKind::kOp:
      if (name == "name") return Value::String(target.node()->name());
      return no_member({"name"});
    case ValueKind::kFunction:
      if (name == "name") return Value::String(target.function()->name);
      return no_member({"name"});
    default:
      return no_member({});
  }
}

absl::StatusOr<Value> Interpreter::EvalRun(const lang::RunExpr& e) {
  RN_RETURN_IF_ERROR(CheckInterrupt(e.span));
  if (builder_.context().cf != nullptr) {
    return ErrorAt(e.span,
                   "'run' inside an in-graph loop or 'if': the graph is being "
                   "built here and cannot run until the construct is "
                   "complete; run its result after it");
  }
  RN_ASSIGN_OR_RETURN(Value fetches, Eval(*e.fetches));
  if (e.feeds) {
    RN_ASSIGN_OR_RETURN(Value feeds, Eval(*e.feeds));
    return RunFetches(fetches, &feeds, e);
  }
  return RunFetches(fetches, nullptr, e);
}

absl::StatusOr<Value> Interpreter::EvalAssign(const lang::AssignExpr& e,
                                              const std::string& hint) {
  using lang::AssignOp;
  static const char* kText[] = {":=", "+=", "-=", "*=", "/="};
  const char* text = kText[static_cast<int>(e.op)];
  OpSite site{e.span, 0, hint};
  Binding* binding = nullptr;
  std::string name;
  Value target;
  if (e.target->kind == ExprKind::kName) {
    name = static_cast<const lang::NameExpr&>(*e.target).name;
    binding = env_->Find(name);
    if (binding == nullptr) return UnknownName(name, e.target->span);
    target = binding->value;
  } else {
    RN_ASSIGN_OR_RETURN(target, Eval(*e.target));
  }
  const bool is_var = binding ? (binding->kind == BindingKind::kVar ||
                                 binding->kind == BindingKind::kState)
                              : IsVariable(target);
  if (is_var) {
    if (e.op == AssignOp::kMul || e.op == AssignOp::kDiv) {
      return ErrorAt(
          e.span,
          StrCat("'", text, "' cannot update a var or state; write '",
                 name.empty() ? "w" : name, " := ", name.empty() ? "w" : name,
                 e.op == AssignOp::kMul ? " * " : " / ", "...'"));
    }
    RN_ASSIGN_OR_RETURN(Value v, Eval(*e.value));
    const char* op = e.op == AssignOp::kAssign ? "assign"
                     : e.op == AssignOp::kAdd  ? "assign_add"
                                               : "assign_sub";
    return builder_.Assign(op, target, v, site);
  }
  if (binding == nullptr) {
    return ErrorAt(e.target->span,
                   StrCat("'", text,
                          "' needs a var, a state or a let name "
                          "on its left, got ",
                          DescribeValue(target)));
  }
  switch (binding->kind) {
    case BindingKind::kLet:
    case BindingKind::kParam:
      break;
    default: {
      lang::Diagnostic d;
      d.message = StrCat("cannot assign to ", BindingKindName(binding->kind),
                         " '", name, "' with '", text, "'");
      d.span = e.span;
      if (binding->span.known()) {
        d.notes.push_back(Note(binding->span, StrCat(name, " declared here")));
      }
      return DiagStatus(std::move(d));
    }
  }
  if (e.op == AssignOp::kAssign) {
    return ErrorAt(
        e.span, StrCat("':=' assigns to a var or state, but '", name, "' is a ",
                       BindingKindName(binding->kind), " binding; use '", name,
                       " = ...' to rebind it"));
  }
  bool crossed = false;
  Binding* local = env_->FindForRebind(name, &crossed);
  if (local == nullptr) {
    return ErrorAt(e.span, StrCat("cannot rebind '", name,
                                  "': it belongs to an enclosing function"));
  }
  RN_ASSIGN_OR_RETURN(Value v, Eval(*e.value));
  BinaryOp op = e.op == AssignOp::kAdd   ? BinaryOp::kAdd
                : e.op == AssignOp::kSub ? BinaryOp::kSub
                : e.op == AssignOp::kMul ? BinaryOp::kMul
                                         : BinaryOp::kDiv;
  RN_ASSIGN_OR_RETURN(Value result, BinaryOnValues(op, local->value, v, site));
  // Evaluating the value may have rebound names; look the binding up again.
  local = env_->FindForRebind(name, &crossed);
  if (local != nullptr) local->value = result;
  return result;
}

}  // namespace runnel::interp
