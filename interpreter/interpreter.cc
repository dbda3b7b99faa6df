// Statements and expressions: the evaluator proper. Graph building, `run`
// and declarations live in graph_builder.cc, modules in modules.cc, the
// builtin functions in builtins.cc.
#include "interpreter/interpreter.h"

#include <pthread.h>

#include <algorithm>
#include <cmath>
#include <cstring>

#include "interpreter/builtins.h"
#include "interpreter/diag.h"
#include "interpreter/indexing.h"
#include "interpreter/restore.h"
#include "runtime/errors.h"
#include "runtime/status_macros.h"
#include "runtime/strings.h"

namespace runnel::interp {
namespace {

using lang::BinaryOp;
using lang::ExprKind;
using lang::StmtKind;

constexpr int kMaxCallDepth = 1000;

// Whether this thread's stack is nearly used up: deep recursion in a script
// becomes a diagnostic, whatever the stack size of the calling thread.
bool StackLow() {
  static thread_local bool looked = false;
  static thread_local const char* low = nullptr;
  if (!looked) {
    looked = true;
    pthread_attr_t attr;
    void* addr = nullptr;
    size_t size = 0;
    if (pthread_getattr_np(pthread_self(), &attr) == 0) {
      pthread_attr_getstack(&attr, &addr, &size);
      pthread_attr_destroy(&attr);
    }
    low = static_cast<const char*>(addr);
  }
  if (low == nullptr) return false;
  char here;
  return &here - low < 256 * 1024;
}

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

// ---- construction and top level --------------------------------------------

Interpreter::Interpreter(Options options, lang::DiagnosticSink* sink)
    : options_(std::move(options)),
      sink_(sink),
      builder_(
          EagerOptions{.num_threads = options_.threads, .seed = options_.seed}),
      reporter_(std::make_unique<Reporter>(options_.err, options_.check_mode)) {
  builtins_ = std::make_shared<Env>(nullptr, true);
  for (const Builtin& b : Builtins()) {
    auto f = std::make_shared<Function>();
    f->name = b.name;
    f->builtin = &b;
    builtins_->Define(b.name, Binding{Value::OfFunction(std::move(f)),
                                      BindingKind::kBuiltin, SourceSpan{}});
  }
  for (DType d : kAllDTypes) {
    builtins_->Define(std::string(DTypeName(d)),
                      Binding{Value::OfDType(d), BindingKind::kBuiltin, {}});
  }
  globals_ = std::make_shared<Env>(builtins_, true);
  env_ = globals_;
}

Interpreter::~Interpreter() {
  // Break the cycles between scopes and the functions defined in them.
  for (const std::weak_ptr<Env>& closure : closures_) {
    if (std::shared_ptr<Env> env = closure.lock()) env->Clear();
  }
}

void Interpreter::NoteClosure(const std::shared_ptr<Env>& env) {
  if (!closures_.empty() && closures_.back().lock() == env) return;
  if (closures_.size() >= prune_closures_at_) {
    std::erase_if(closures_,
                  [](const std::weak_ptr<Env>& e) { return e.expired(); });
    prune_closures_at_ = 2 * closures_.size() + 64;
  }
  closures_.push_back(env);
}

std::vector<std::string> Interpreter::BuiltinNames() {
  std::vector<std::string> names;
  for (const Builtin& b : Builtins()) names.push_back(b.name);
  return names;
}

int Interpreter::RunFile(const std::string& path) {
  absl::StatusOr<std::shared_ptr<lang::SourceFile>> src =
      lang::SourceFile::Read(path);
  if (!src.ok()) {
    lang::Diagnostic d;
    d.message = std::string(ToStd(src.status().message()));
    sink_->Report(d);
    return kExitUsage;
  }
  return RunSource(path, (*src)->text());
}

int Interpreter::Report(const absl::Status& status) {
  if (status.ok()) return kExitOk;
  if (std::optional<int> code = ExitCodeOf(status)) return *code;
  sink_->Report(ToDiagnostic(status, SourceSpan{}));
  return kExitError;
}

absl::StatusOr<Value> Interpreter::Evaluate(
    std::shared_ptr<const lang::Program> program, size_t first) {
  kept_.push_back(program);
  Restore<std::shared_ptr<Env>> env(&env_, globals_);
  signal_ = Signal::kNone;
  Value last;
  absl::Status s = ExecStmts(program->stmts, &last, first);
  signal_ = Signal::kNone;
  if (!s.ok()) return s;
  return last;
}

absl::Status Interpreter::CheckInterrupt(const SourceSpan& span) {
  if (interrupted_.exchange(false)) return ErrorAt(span, "interrupted");
  return absl::OkStatus();
}

// ---- statements -------------------------------------------------------------

absl::Status Interpreter::ExecBlock(const lang::Block& block, Value* value) {
  Restore<std::shared_ptr<Env>> env(&env_, std::make_shared<Env>(env_, false));
  return ExecStmts(block.stmts, value);
}

absl::Status Interpreter::ExecStmts(const std::vector<lang::StmtPtr>& stmts,
                                    Value* value, size_t first) {
  *value = Value();
  for (size_t i = first; i < stmts.size(); ++i) {
    *value = Value();
    // Builtins report their own allocation failures; this catches the
    // tensors the evaluator makes itself (literals, stacking).
    RN_RETURN_IF_ERROR(OutOfMemoryAsError(
        [&] { return Exec(*stmts[i], value); }, stmts[i]->span, ""));
    if (signal_ != Signal::kNone) return absl::OkStatus();
  }
  return absl::OkStatus();
}

absl::Status Interpreter::Exec(const lang::Stmt& stmt, Value* value) {
  switch (stmt.kind) {
    case StmtKind::kLet: {
      const auto& s = static_cast<const lang::LetStmt&>(stmt);
      std::string hint =
          s.pattern.kind == lang::Pattern::Kind::kName ? s.pattern.name : "";
      RN_ASSIGN_OR_RETURN(Value v, Eval(*s.value, hint));
      return BindPattern(s.pattern, AsNamed(std::move(v)), BindingKind::kLet);
    }
    case StmtKind::kVar:
      return DeclareVar(static_cast<const lang::VarStmt&>(stmt));
    case StmtKind::kInput:
      return DeclareInput(static_cast<const lang::InputStmt&>(stmt));
    case StmtKind::kDef: {
      const auto& s = static_cast<const lang::DefStmt&>(stmt);
      auto f = std::make_shared<Function>();
      f->name = s.name;
      f->def = &s;
      f->closure = env_;
      NoteClosure(env_);
      f->span = s.name_span.known() ? s.name_span : s.span;
      env_->Define(s.name, Binding{Value::OfFunction(std::move(f)),
                                   BindingKind::kDef, s.span});
      return absl::OkStatus();
    }
    case StmtKind::kImport:
      return ExecImport(static_cast<const lang::ImportStmt&>(stmt));
    case StmtKind::kReturn: {
      const auto& s = static_cast<const lang::ReturnStmt&>(stmt);
      if (function_depth_ == 0) {
        return ErrorAt(stmt.span, "'return' outside a function");
      }
      Value v;
      if (s.value) {
        RN_ASSIGN_OR_RETURN(v, Eval(*s.value));
      }
      return_value_ = std::move(v);
      signal_ = Signal::kReturn;
      return absl::OkStatus();
    }
    case StmtKind::kBreak:
    case StmtKind::kContinue: {
      const bool brk = stmt.kind == StmtKind::kBreak;
      if (loop_depth_ == 0) {
        return ErrorAt(stmt.span, StrCat("'", brk ? "break" : "continue",
                                         "' outside a for loop"));
      }
      signal_ = brk ? Signal::kBreak : Signal::kContinue;
      return absl::OkStatus();
    }
    case StmtKind::kFor:
      return ExecFor(static_cast<const lang::ForStmt&>(stmt));
    case StmtKind::kScope:
    case StmtKind::kDevice:
    case StmtKind::kAfter:
      return ExecAnnotate(static_cast<const lang::AnnotateStmt&>(stmt));
    case StmtKind::kRebind:
      return ExecRebind(static_cast<const lang::RebindStmt&>(stmt));
    case StmtKind::kExpr: {
      const auto& s = static_cast<const lang::ExprStmt&>(stmt);
      if (s.expr->kind == ExprKind::kIf) {
        RN_ASSIGN_OR_RETURN(
            *value, EvalIf(static_cast<const lang::IfExpr&>(*s.expr), true));
        return absl::OkStatus();
      }
      RN_ASSIGN_OR_RETURN(*value, Eval(*s.expr));
      return absl::OkStatus();
    }
  }
  return ErrorAt(stmt.span, "unknown statement");
}

absl::Status Interpreter::ExecFor(const lang::ForStmt& s) {
  RN_ASSIGN_OR_RETURN(Value iterable, Eval(*s.iterable));
  if (iterable.is_symbolic()) {
    return ErrorAt(s.iterable->span,
                   "a for loop runs on the host and needs a concrete value; "
                   "this tensor is symbolic (in-graph loops over tensors are "
                   "not supported yet)");
  }
  RN_ASSIGN_OR_RETURN(std::unique_ptr<Iterator> it,
                      Iterate(iterable, s.iterable->span));
  Restore<int> depth(&loop_depth_, loop_depth_ + 1);
  while (true) {
    RN_RETURN_IF_ERROR(CheckInterrupt(s.span));
    RN_ASSIGN_OR_RETURN(std::optional<Value> item, it->Next());
    if (!item) break;
    const int64_t runs_before = runs_;
    Restore<std::shared_ptr<Env>> env(&env_,
                                      std::make_shared<Env>(env_, false));
    RN_RETURN_IF_ERROR(BindPattern(s.var, *item, BindingKind::kLet));
    Value ignored;
    RN_RETURN_IF_ERROR(ExecStmts(s.body.stmts, &ignored));
    if (signal_ == Signal::kReturn) return absl::OkStatus();
    const Signal sig = signal_;
    signal_ = Signal::kNone;
    if (sig == Signal::kBreak) break;
    // Check mode runs a driver loop (one that reaches `run`) once.
    if (check_mode() && runs_ != runs_before) break;
  }
  return absl::OkStatus();
}

absl::Status Interpreter::ExecAnnotate(const lang::AnnotateStmt& s) {
  RN_ASSIGN_OR_RETURN(Value arg, Eval(*s.arg));
  Value ignored;
  switch (s.kind) {
    case StmtKind::kScope: {
      if (arg.kind() != ValueKind::kString) {
        return ErrorAt(s.arg->span, StrCat("a scope name must be a string, "
                                           "got ",
                                           DescribeValue(arg)));
      }
      const std::string& name = arg.str();
      bool ok = !name.empty() && name.front() != '/' && name.back() != '/';
      for (char c : name) {
        if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '_' ||
              c == '-' || c == '.' || c == '/')) {
          ok = false;
        }
      }
      if (!ok) {
        return ErrorAt(s.arg->span,
                       StrCat("invalid scope name \"", name,
                              "\": use letters, digits, '_', '-', '.' and "
                              "inner '/'"));
      }
      BuildScope scope = builder_.OpenScope(name, /*unique=*/false);
      return ExecStmts(s.body.stmts, &ignored);
    }
    case StmtKind::kDevice: {
      if (arg.kind() != ValueKind::kString) {
        return ErrorAt(s.arg->span, StrCat("a device spec must be a string, "
                                           "got ",
                                           DescribeValue(arg)));
      }
      absl::StatusOr<DeviceSpec> spec = DeviceSpec::Parse(arg.str());
      if (!spec.ok()) {
        return ErrorAt(s.arg->span,
                       std::string(ToStd(spec.status().message())));
      }
      BuildScope device = builder_.OnDevice(*spec);
      return ExecStmts(s.body.stmts, &ignored);
    }
    default: {
      std::vector<Node*> nodes;
      RN_RETURN_IF_ERROR(builder_.CollectNodes(arg, s.arg->span, &nodes));
      BuildScope after = builder_.After(nodes);
      return ExecStmts(s.body.stmts, &ignored);
    }
  }
}

absl::Status Interpreter::ExecRebind(const lang::RebindStmt& s) {
  std::string hint =
      s.pattern.kind == lang::Pattern::Kind::kName ? s.pattern.name : "";
  // Check the names before evaluating, so `w = ...` on a var says so first.
  std::vector<const lang::Pattern*> stack = {&s.pattern};
  while (!stack.empty()) {
    const lang::Pattern* p = stack.back();
    stack.pop_back();
    if (p->kind == lang::Pattern::Kind::kTuple) {
      for (const lang::Pattern& e : p->elements) stack.push_back(&e);
      continue;
    }
    if (p->kind != lang::Pattern::Kind::kName) continue;
    bool crossed = false;
    Binding* b = env_->FindForRebind(p->name, &crossed);
    if (b == nullptr) {
      if (crossed) {
        return ErrorAt(p->span,
                       StrCat("cannot rebind '", p->name,
                              "': it belongs to an enclosing function or the "
                              "builtins; bind a new name with 'let ",
                              p->name, " = ...'"));
      }
      absl::Status st = UnknownName(p->name, p->span);
      return AddNote(st, p->span,
                     StrCat("'=' rebinds an existing name; declare a new one "
                            "with 'let ",
                            p->name, " = ...'"));
    }
    switch (b->kind) {
      case BindingKind::kVar:
      case BindingKind::kState: {
        lang::Diagnostic d;
        d.message = StrCat("cannot rebind ", BindingKindName(b->kind), " '",
                           p->name, "' with '='; use '", p->name,
                           " := ...' to assign it a new value");
        d.span = s.span;
        d.caret_col = 0;
        d.notes.push_back(Note(b->span, StrCat(p->name, " declared here")));
        return DiagStatus(std::move(d));
      }
      case BindingKind::kInput: {
        lang::Diagnostic d;
        d.message = StrCat("cannot rebind input '", p->name,
                           "': inputs get their values from 'run ... with'");
        d.span = s.span;
        d.notes.push_back(Note(b->span, StrCat(p->name, " declared here")));
        return DiagStatus(std::move(d));
      }
      case BindingKind::kDef:
      case BindingKind::kImport:
      case BindingKind::kBuiltin:
        return ErrorAt(s.span,
                       StrCat("cannot rebind ", BindingKindName(b->kind), " '",
                              p->name, "'; bind a new name with 'let'"));
      default:
        break;
    }
  }
  RN_ASSIGN_OR_RETURN(Value v, Eval(*s.value, hint));
  std::vector<Bound> bound;
  RN_RETURN_IF_ERROR(MatchPattern(s.pattern, AsNamed(std::move(v)), &bound));
  for (Bound& b : bound) {
    bool crossed = false;
    Binding* binding = env_->FindForRebind(b.name, &crossed);
    if (binding != nullptr) binding->value = std::move(b.value);
  }
  return absl::OkStatus();
}

absl::Status Interpreter::MatchPattern(const lang::Pattern& p, const Value& v,
                                       std::vector<Bound>* out) {
  switch (p.kind) {
    case lang::Pattern::Kind::kDiscard:
      return absl::OkStatus();
    case lang::Pattern::Kind::kName:
      if (p.name == "_") return absl::OkStatus();
      out->push_back(Bound{p.name, v, p.span});
      return absl::OkStatus();
    case lang::Pattern::Kind::kTuple:
      break;
  }
  std::vector<Value> items;
  if (v.is_sequence()) {
    items = v.items();
  } else if (v.is_concrete() && v.tensor().rank() > 0) {
    // A concrete tensor destructures along its first axis.
    RN_ASSIGN_OR_RETURN(std::unique_ptr<Iterator> it, Iterate(v, p.span));
    while (true) {
      RN_ASSIGN_OR_RETURN(std::optional<Value> item, it->Next());
      if (!item) break;
      items.push_back(std::move(*item));
    }
  } else {
    return ErrorAt(p.span, StrCat("cannot destructure ", DescribeValue(v),
                                  " into ", p.elements.size(), " names"));
  }
  if (items.size() != p.elements.size()) {
    return ErrorAt(p.span,
                   StrCat("cannot destructure ", items.size(), " values into ",
                          p.elements.size(), " names"));
  }
  for (size_t i = 0; i < items.size(); ++i) {
    RN_RETURN_IF_ERROR(MatchPattern(p.elements[i], items[i], out));
  }
  return absl::OkStatus();
}

absl::Status Interpreter::BindPattern(const lang::Pattern& p, const Value& v,
                                      BindingKind kind) {
  std::vector<Bound> bound;
  RN_RETURN_IF_ERROR(MatchPattern(p, v, &bound));
  for (Bound& b : bound) {
    env_->Define(b.name, Binding{std::move(b.value), kind, b.span});
  }
  return absl::OkStatus();
}

// ---- declarations -----------------------------------------------------------

absl::StatusOr<Shape> Interpreter::EvalTypeShape(const lang::TypeAnnotation& t,
                                                 DType* dtype) {
  std::optional<DType> d = DTypeFromName(t.dtype);
  if (!d) {
    std::vector<std::string> names;
    for (DType x : kAllDTypes) names.emplace_back(DTypeName(x));
    lang::Diagnostic diag;
    diag.message = StrCat("unknown dtype '", t.dtype, "'");
    diag.span = t.span;
    std::string best = ClosestName(t.dtype, names);
    diag.notes.push_back(Note(
        SourceSpan{}, best.empty()
                          ? "dtypes are f16 bf16 f32 f64 i8 u8 i32 i64 bool"
                          : StrCat("did you mean '", best, "'?")));
    return DiagStatus(std::move(diag));
  }
  *dtype = *d;
  if (!t.has_dims) return Shape::UnknownRank();
  std::vector<int64_t> dims;
  for (const lang::ExprPtr& e : t.dims) {
    if (e == nullptr) {
      dims.push_back(kUnknownDim);
      continue;
    }
    RN_ASSIGN_OR_RETURN(Value v, Eval(*e));
    std::optional<int64_t> n = v.AsInt();
    if (!n || v.tensor().rank() != 0 || *n < 0) {
      return ErrorAt(e->span,
                     StrCat("a dimension must be a concrete integer >= 0 or "
                            "'?', got ",
                            v.is_concrete() ? v.tensor().ValuesString()
                                            : DescribeValue(v)));
    }
    dims.push_back(*n);
  }
  return Shape(dims);
}

absl::Status Interpreter::DeclareInput(const lang::InputStmt& s) {
  DType dtype;
  RN_ASSIGN_OR_RETURN(Shape shape, EvalTypeShape(s.type, &dtype));
  const SourceSpan& decl = s.span;
  OpSite site{decl, 0, ""};
  NodeSpec spec;
  spec.attrs = {{"dtype", dtype}, {"shape", shape}};
  std::vector<Value> inputs;
  if (s.default_value) {
    RN_ASSIGN_OR_RETURN(Value v, Eval(*s.default_value));
    RN_ASSIGN_OR_RETURN(
        v, builder_.ToTensor(v, s.default_value->span, "the default"));
    if (v.tensor_dtype() != dtype) {
      if (v.is_symbolic() || !v.literal()) {
        return ErrorAt(
            s.default_value->span,
            StrCat("the default is ", DescribeValue(v), " but input '", s.name,
                   "' is ", DTypeName(dtype)));
      }
      RN_ASSIGN_OR_RETURN(Tensor t, builder_.Cast(v.tensor(), dtype));
      v = Value::Concrete(t);
    }
    RN_ASSIGN_OR_RETURN(NodeOut o, builder_.ToGraph(v, s.default_value->span));
    spec.op = "placeholder_with_default";
    spec.inputs = {o};
    inputs.push_back(v);
  } else {
    spec.op = "placeholder";
  }
  spec.name = builder_.NewNodeName(s.name);
  RN_ASSIGN_OR_RETURN(Node * node,
                      builder_.AddNode(std::move(spec), site, inputs));
  env_->Define(s.name,
               Binding{Value::Symbolic({node, 0}), BindingKind::kInput, decl});
  return absl::OkStatus();
}

absl::Status Interpreter::DeclareVar(const lang::VarStmt& s) {
  const char* what = s.is_state ? "state" : "var";
  RN_ASSIGN_OR_RETURN(Value init, Eval(*s.init));
  RN_ASSIGN_OR_RETURN(init, builder_.ToTensor(init, s.init->span,
                                              StrCat("the initializer of ",
                                                     what, " '", s.name, "'")));
  if (s.type) {
    DType dtype;
    RN_ASSIGN_OR_RETURN(Shape shape, EvalTypeShape(*s.type, &dtype));
    if (init.tensor_dtype() != dtype) {
      if (init.is_concrete()) {
        RN_ASSIGN_OR_RETURN(Tensor t, builder_.Cast(init.tensor(), dtype));
        init = Value::Concrete(t);
      } else {
        return ErrorAt(
            s.init->span,
            StrCat(what, " '", s.name, "' is declared ", DTypeName(dtype),
                   " but its initializer is ", DescribeValue(init)));
      }
    }
    // `var b: f32[10] = 0.0` broadcasts the initializer to the declared
    // shape.
    if (!shape.unknown_rank() && shape.IsFullyDefined() &&
        !init.tensor_shape().unknown_rank() && init.tensor_shape() != shape) {
      RN_ASSIGN_OR_RETURN(
          init, builder_.ApplyOp(
                    "broadcast_to",
                    {init, Value::Concrete(Tensor::OfDims(shape.dims()))}, {},
                    OpSite(s.init->span)));
    }
    if (!shape.IsCompatibleWith(init.tensor_shape()) &&
        !(init.tensor_shape().unknown_rank())) {
      return ErrorAt(s.init->span,
                     StrCat(what, " '", s.name, "' is declared ",
                            DTypeName(dtype), shape.ToString(),
                            " but its initializer is ", DescribeValue(init)));
    }
  }
  const bool trainable = !s.is_state && IsFloating(init.tensor_dtype());
  RN_ASSIGN_OR_RETURN(Value v,
                      builder_.MakeVariable(s.name, init, trainable, s.span));
  env_->Define(
      s.name,
      Binding{v, s.is_state ? BindingKind::kState : BindingKind::kVar, s.span});
  return absl::OkStatus();
}

// ---- expressions ------------------------------------------------------------

absl::Status Interpreter::UnknownName(const std::string& name,
                                      const SourceSpan& span) {
  lang::Diagnostic d;
  d.message = StrCat("unknown name '", name, "'");
  d.span = span;
  std::vector<std::string> names;
  env_->CollectNames(&names);
  std::string best = ClosestName(name, names);
  if (!best.empty()) {
    d.notes.push_back(Note(SourceSpan{}, StrCat("did you mean '", best, "'?")));
  }
  return DiagStatus(std::move(d));
}

absl::StatusOr<Value> Interpreter::Eval(const lang::Expr& e,
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
                     "a range needs concrete bounds; this one is symbolic "
                     "(in-graph loops are not supported yet)",
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

absl::StatusOr<Value> Interpreter::Call(const Value& callee,
                                        std::vector<Value> args,
                                        std::vector<SourceSpan> arg_spans,
                                        std::vector<Field> named,
                                        std::vector<SourceSpan> named_spans,
                                        const SourceSpan& span,
                                        const std::string& name_hint) {
  if (callee.kind() != ValueKind::kFunction) {
    return ErrorAt(span, StrCat("cannot call ", DescribeValue(callee)));
  }
  const Function& f = *callee.function();
  while (arg_spans.size() < args.size()) arg_spans.push_back(span);
  while (named_spans.size() < named.size()) named_spans.push_back(span);
  if (f.builtin != nullptr) {
    return CallBuiltin(*f.builtin, std::move(args), std::move(arg_spans),
                       std::move(named), std::move(named_spans), span,
                       name_hint);
  }
  return CallUser(f, std::move(args), std::move(arg_spans), std::move(named),
                  std::move(named_spans), span);
}

namespace {

std::string ParamList(const std::vector<std::string>& names) {
  std::string s;
  for (size_t i = 0; i < names.size(); ++i) {
    s += (i ? ", " : "") + names[i];
  }
  return s;
}

// "takes 2 arguments (x, units)" / "takes 2 to 3 arguments (...)".
std::string ArityText(int required, int total,
                      const std::vector<std::string>& names) {
  std::string count =
      required == total ? StrCat(total) : StrCat(required, " to ", total);
  return StrCat("takes ", count, total == 1 ? " argument" : " arguments", " (",
                ParamList(names), ")");
}

}  // namespace

absl::StatusOr<Value> Interpreter::CallBuiltin(
    const Builtin& b, std::vector<Value> args,
    std::vector<SourceSpan> arg_spans, std::vector<Field> named,
    std::vector<SourceSpan> named_spans, const SourceSpan& span,
    const std::string& hint) {
  CallArgs call;
  call.builtin = &b;
  call.span = span;
  call.hint = hint;
  const size_t n = b.params.size();
  call.values.resize(n);
  call.given.assign(n, false);
  call.spans.assign(n, span);
  std::vector<std::string> names;
  int required = 0;
  for (const BuiltinParam& p : b.params) {
    names.push_back(p.name);
    if (p.required) ++required;
  }
  for (size_t i = 0; i < args.size(); ++i) {
    if (i < n) {
      call.values[i] = std::move(args[i]);
      call.given[i] = true;
      call.spans[i] = arg_spans[i];
    } else if (b.variadic) {
      call.rest.push_back(std::move(args[i]));
      call.rest_spans.push_back(arg_spans[i]);
    } else {
      return ErrorAt(
          span,
          StrCat(b.name, "() ", ArityText(required, static_cast<int>(n), names),
                 ", got ", args.size()));
    }
  }
  for (size_t j = 0; j < named.size(); ++j) {
    auto it = std::find(names.begin(), names.end(), named[j].first);
    if (it == names.end()) {
      if (b.kwargs) {
        call.named.push_back(std::move(named[j]));
        call.named_spans.push_back(named_spans[j]);
        continue;
      }
      lang::Diagnostic d;
      d.message =
          StrCat(b.name, "() has no parameter named '", named[j].first, "'");
      d.span = named_spans[j];
      std::string best = ClosestName(named[j].first, names);
      d.notes.push_back(Note(
          SourceSpan{},
          best.empty() ? StrCat(b.name, "() takes (", ParamList(names), ")")
                       : StrCat("did you mean '", best, "'?")));
      return DiagStatus(std::move(d));
    }
    const size_t i = it - names.begin();
    if (call.given[i]) {
      return ErrorAt(named_spans[j],
                     StrCat(b.name, "() got two values for '", names[i], "'"));
    }
    call.values[i] = std::move(named[j].second);
    call.given[i] = true;
    call.spans[i] = named_spans[j];
  }
  for (size_t i = 0; i < n; ++i) {
    if (call.given[i]) continue;
    if (b.params[i].required) {
      return ErrorAt(
          span, StrCat(b.name, "() is missing argument '", names[i], "' (it ",
                       ArityText(required, static_cast<int>(n), names), ")"));
    }
    call.values[i] = b.params[i].default_value;
  }
  absl::StatusOr<Value> out =
      OutOfMemoryAsError([&] { return b.fn(*this, call); }, span, b.name);
  if (!out.ok() && !DiagOf(out.status()) && !ExitCodeOf(out.status())) {
    lang::Diagnostic d = ToDiagnostic(out.status(), span);
    if (!SpanOf(out.status())) d.span = span;
    return DiagStatus(std::move(d));
  }
  return out;
}

absl::StatusOr<Value> Interpreter::CallUser(const Function& f,
                                            std::vector<Value> args,
                                            std::vector<SourceSpan> arg_spans,
                                            std::vector<Field> named,
                                            std::vector<SourceSpan> named_spans,
                                            const SourceSpan& span) {
  const std::vector<lang::Param>& params = f.params();
  std::vector<std::string> names;
  int required = 0;
  for (const lang::Param& p : params) {
    names.push_back(p.name);
    if (!p.default_value) ++required;
  }
  const std::string shown = f.def ? f.name + "()" : "the function";
  auto with_decl = [&](absl::Status s) {
    return AddNote(std::move(s), f.span,
                   StrCat(f.def ? f.name : "the function", " declared here"));
  };
  if (args.size() > params.size()) {
    return with_decl(ErrorAt(
        span,
        StrCat(shown, " ",
               ArityText(required, static_cast<int>(params.size()), names),
               ", got ", args.size())));
  }
  if (call_depth_ >= kMaxCallDepth || StackLow()) {
    return ErrorAt(span,
                   StrCat("too many nested calls (more than ", kMaxCallDepth,
                          "): is the recursion missing a base case?"));
  }
  auto env = std::make_shared<Env>(f.closure, true);
  std::vector<bool> given(params.size(), false);
  std::vector<Value> values(params.size());
  for (size_t i = 0; i < args.size(); ++i) {
    values[i] = std::move(args[i]);
    given[i] = true;
  }
  for (size_t j = 0; j < named.size(); ++j) {
    auto it = std::find(names.begin(), names.end(), named[j].first);
    if (it == names.end()) {
      lang::Diagnostic d;
      d.message =
          StrCat(shown, " has no parameter named '", named[j].first, "'");
      d.span = named_spans[j];
      std::string best = ClosestName(named[j].first, names);
      if (!best.empty()) {
        d.notes.push_back(
            Note(SourceSpan{}, StrCat("did you mean '", best, "'?")));
      }
      return with_decl(DiagStatus(std::move(d)));
    }
    const size_t i = it - names.begin();
    if (given[i]) {
      return ErrorAt(named_spans[j],
                     StrCat(shown, " got two values for '", names[i], "'"));
    }
    values[i] = std::move(named[j].second);
    given[i] = true;
  }
  Restore<int> depth(&call_depth_, call_depth_ + 1);
  Restore<std::shared_ptr<Env>> scope_env(&env_, env);
  for (size_t i = 0; i < params.size(); ++i) {
    if (!given[i]) {
      if (!params[i].default_value) {
        return with_decl(ErrorAt(
            span,
            StrCat(shown, " is missing argument '", names[i], "' (it ",
                   ArityText(required, static_cast<int>(params.size()), names),
                   ")")));
      }
      // Defaults are evaluated at the call, and may use earlier parameters.
      RN_ASSIGN_OR_RETURN(values[i], Eval(*params[i].default_value));
    }
    env->Define(names[i],
                Binding{values[i], BindingKind::kParam, params[i].span});
  }
  // A `def` call opens a name scope, reserved when it makes its first node.
  const bool opens_scope = f.def != nullptr;
  std::optional<BuildScope> scope;
  if (opens_scope) scope.emplace(builder_.OpenScope(f.name, /*unique=*/true));
  Restore<int> loops(&loop_depth_, 0);
  Restore<int> fdepth(&function_depth_, function_depth_ + 1);
  absl::StatusOr<Value> result;
  const lang::Block* block = nullptr;
  const lang::Expr* body = nullptr;
  if (f.def != nullptr) {
    block = f.def->body_block ? &*f.def->body_block : nullptr;
    body = f.def->body_expr.get();
  } else {
    block = f.lambda->body_block ? &*f.lambda->body_block : nullptr;
    body = f.lambda->body_expr.get();
  }
  if (block != nullptr) {
    Value v;
    absl::Status s = ExecStmts(block->stmts, &v);
    if (!s.ok()) {
      result = s;
    } else if (signal_ == Signal::kReturn) {
      result = std::move(return_value_);
      return_value_ = Value();
    } else {
      result = std::move(v);
    }
    signal_ = Signal::kNone;
  } else if (body != nullptr) {
    result = Eval(*body);
  }
  scope.reset();
  if (!result.ok() && !ExitCodeOf(result.status())) {
    std::optional<lang::Diagnostic> d = DiagOf(result.status());
    // Say where the failing call came from (a few levels deep at most).
    const std::string note =
        StrCat("in this call to ", f.def ? f.name : "a function");
    // Recursion repeats one call site: say it once.
    const bool repeated = d && !d->notes.empty() &&
                          d->notes.back().message == note &&
                          d->notes.back().span.line == span.line &&
                          d->notes.back().span.col == span.col &&
                          d->notes.back().span.file == span.file;
    if (!repeated && (!d || d->notes.size() < 4)) {
      return AddNote(result.status(), span, note);
    }
  }
  return result;
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
      if (name == "name") {
        if (!target.is_symbolic()) return Value();
        std::string n = target.out().node->name();
        if (target.out().index != 0) n += StrCat(":", target.out().index);
        return Value::String(n);
      }
      return no_member({"shape", "dtype", "rank", "name"});
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

absl::StatusOr<Value> Interpreter::EvalIf(const lang::IfExpr& e,
                                          bool statement) {
  RN_ASSIGN_OR_RETURN(Value cond, Eval(*e.cond));
  if (cond.is_symbolic()) {
    return ErrorAt(e.cond->span,
                   statement
                       ? "the condition of an 'if' statement must be concrete; "
                         "this one is symbolic (in-graph conditionals are not "
                         "supported yet)"
                       : "in-graph conditionals are not supported yet: the "
                         "condition is symbolic");
  }
  bool taken = false;
  RN_RETURN_IF_ERROR(Truthy(cond, e.cond->span, "the condition", &taken));
  Value v;
  if (taken) {
    RN_RETURN_IF_ERROR(ExecBlock(e.then_block, &v));
  } else if (e.else_if) {
    RN_ASSIGN_OR_RETURN(
        v, EvalIf(static_cast<const lang::IfExpr&>(*e.else_if), statement));
  } else if (e.else_block) {
    RN_RETURN_IF_ERROR(ExecBlock(*e.else_block, &v));
  } else if (!statement) {
    v = Value::NoneOfIf(e.span);
  }
  return v;
}

absl::StatusOr<Value> Interpreter::EvalLoop(const lang::LoopExpr& e) {
  RN_ASSIGN_OR_RETURN(Value state, Eval(*e.init));
  if (state.contains_symbolic()) {
    return ErrorAt(e.init->span,
                   "in-graph loops are not supported yet: the initial state "
                   "is symbolic");
  }
  auto step = [&](const std::optional<Value>& item) -> absl::Status {
    Restore<std::shared_ptr<Env>> env(&env_,
                                      std::make_shared<Env>(env_, false));
    RN_RETURN_IF_ERROR(BindPattern(e.state, state, BindingKind::kLet));
    if (item) {
      RN_RETURN_IF_ERROR(BindPattern(e.var, *item, BindingKind::kLet));
    }
    Value v;
    RN_RETURN_IF_ERROR(ExecBlock(e.body, &v));
    if (signal_ != Signal::kNone) {
      if (signal_ == Signal::kReturn) return absl::OkStatus();
      signal_ = Signal::kNone;
    }
    if (v.contains_symbolic()) {
      return ErrorAt(e.body.span,
                     "in-graph loops are not supported yet: the loop body "
                     "gives a symbolic state");
    }
    state = std::move(v);
    return absl::OkStatus();
  };
  if (e.is_for) {
    RN_ASSIGN_OR_RETURN(Value iterable, Eval(*e.iterable));
    if (iterable.is_symbolic()) {
      return ErrorAt(e.iterable->span,
                     "in-graph loops are not supported yet: the loop runs "
                     "over a symbolic tensor");
    }
    RN_ASSIGN_OR_RETURN(std::unique_ptr<Iterator> it,
                        Iterate(iterable, e.iterable->span));
    while (true) {
      RN_RETURN_IF_ERROR(CheckInterrupt(e.span));
      RN_ASSIGN_OR_RETURN(std::optional<Value> item, it->Next());
      if (!item) break;
      const int64_t runs_before = runs_;
      RN_RETURN_IF_ERROR(step(item));
      if (signal_ == Signal::kReturn) return Value();
      if (check_mode() && runs_ != runs_before) break;
    }
    return state;
  }
  while (true) {
    RN_RETURN_IF_ERROR(CheckInterrupt(e.span));
    Value cond;
    {
      Restore<std::shared_ptr<Env>> env(&env_,
                                        std::make_shared<Env>(env_, false));
      RN_RETURN_IF_ERROR(BindPattern(e.state, state, BindingKind::kLet));
      RN_ASSIGN_OR_RETURN(cond, Eval(*e.cond));
    }
    if (cond.is_symbolic()) {
      return ErrorAt(e.cond->span,
                     "in-graph loops are not supported yet: the condition is "
                     "symbolic");
    }
    bool go = false;
    RN_RETURN_IF_ERROR(Truthy(cond, e.cond->span, "the loop condition", &go));
    if (!go) break;
    const int64_t runs_before = runs_;
    RN_RETURN_IF_ERROR(step(std::nullopt));
    if (signal_ == Signal::kReturn) return Value();
    if (check_mode() && runs_ != runs_before) break;
  }
  return state;
}

absl::StatusOr<Value> Interpreter::EvalRun(const lang::RunExpr& e) {
  RN_RETURN_IF_ERROR(CheckInterrupt(e.span));
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
