// The evaluator's top level, statements and declarations. Expressions are
// in expressions.cc, calls in calls.cc, `run` in run.cc, imports in
// modules.cc; every node is made through the GraphBuilder.
#include "interpreter/interpreter.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "absl/cleanup/cleanup.h"
#include "base/errors.h"
#include "base/status_macros.h"
#include "base/strings.h"
#include "interpreter/builtins.h"
#include "interpreter/diag.h"
#include "interpreter/indexing.h"
#include "interpreter/large_stack.h"
#include "interpreter/observer.h"
#include "interpreter/restore.h"
#include "interpreter/runners.h"
#include "interpreter/summaries.h"

namespace runnel::interp {
namespace {

using lang::ExprKind;
using lang::StmtKind;

}  // namespace

// ---- construction and top level --------------------------------------------

Interpreter::Interpreter(Options options, lang::DiagnosticSink* sink)
    : options_(std::move(options)),
      sink_(sink),
      builder_(
          EagerOptions{.num_threads = options_.threads, .seed = options_.seed}),
      modules_(options_, sink),
      reporter_(std::make_unique<Reporter>(options_.err, options_.check_mode)) {
  host_ = std::make_unique<RunHost>(options_, builder_.graph_ptr());
  if (options_.cluster != nullptr) {
    for (const std::string& d : options_.cluster->remote_devices()) {
      if (d.rfind("/job:ps/task:0/", 0) == 0) {
        builder_.set_global_step_device(*DeviceSpec::Parse("/job:ps/task:0"));
      }
    }
  }
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
  host_->StopRunners().IgnoreError();
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
  modules_.Keep(program);
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
      Define(
          *env_, s.name,
          Binding{Value::OfFunction(std::move(f)), BindingKind::kDef, s.span});
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
      return DroppedUpdate(s, *value);
    }
  }
  return ErrorAt(stmt.span, "unknown statement");
}

absl::Status Interpreter::DroppedUpdate(const lang::ExprStmt& s,
                                        const Value& value) const {
  // In a branch or loop body the update runs with it (an effect of the
  // control flow); in a function the caller may use the value.
  if (s.expr->kind != ExprKind::kAssign || function_depth_ > 0 ||
      builder_.context().cf != nullptr || !value.is_symbolic()) {
    return absl::OkStatus();
  }
  const std::string& op = value.out().node->op();
  if (op != "assign" && op != "assign_add" && op != "assign_sub") {
    return absl::OkStatus();
  }
  const auto& e = static_cast<const lang::AssignExpr&>(*s.expr);
  const std::string name =
      e.target->kind == ExprKind::kName
          ? static_cast<const lang::NameExpr&>(*e.target).name
          : "w";
  const char* text = e.op == lang::AssignOp::kAssign ? ":="
                     : e.op == lang::AssignOp::kAdd  ? "+="
                                                     : "-=";
  return ErrorAt(
      s.span,
      StrCat("'", name, " ", text,
             " ...' builds an update that happens only when run, and this "
             "statement drops it, so it would never happen; run it "
             "(run (",
             name, " ", text, " ...)), or bind it (let update = (", name, " ",
             text, " ...)) and run that"));
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
  builder_.EnterHostLoop();
  absl::Cleanup left = [&] { builder_.ExitHostLoop(); };
  int64_t growing = 0;  // iterations in a row that added nodes and ran
  while (true) {
    RN_RETURN_IF_ERROR(CheckInterrupt(s.span));
    RN_ASSIGN_OR_RETURN(std::optional<Value> item, it->Next());
    if (!item) break;
    builder_.NextHostIteration();
    const int64_t runs_before = host_->runs();
    const int nodes_before = graph().num_nodes();
    absl::Cleanup grown = [&] {
      growing =
          graph().num_nodes() > nodes_before && host_->runs() > runs_before
              ? growing + 1
              : 0;
      if (growing == kGrowingIterations) WarnGraphGrows(s, nodes_before);
    };
    Restore<std::shared_ptr<Env>> env(&env_,
                                      std::make_shared<Env>(env_, false));
    RN_RETURN_IF_ERROR(BindPattern(s.var, *item, BindingKind::kLet));
    Value ignored;
    absl::Status body = ExecStmts(s.body.stmts, &ignored);
    if (IsEndOfData(body)) break;  // a queue closed: like the data's end
    RN_RETURN_IF_ERROR(body);
    if (signal_ == Signal::kReturn) return absl::OkStatus();
    const Signal sig = signal_;
    signal_ = Signal::kNone;
    if (sig == Signal::kBreak) break;
    // Check mode runs a driver loop (one that reaches `run`) once.
    if (check_mode() && host_->runs() != runs_before) break;
  }
  return absl::OkStatus();
}

void Interpreter::WarnGraphGrows(const lang::ForStmt& s, int nodes_before) {
  if (!warned_growth_.insert(&s).second) return;
  lang::Diagnostic d;
  d.severity = lang::Severity::kWarning;
  d.message = StrCat(
      "this loop has added nodes to the graph and run it at each of its last ",
      kGrowingIterations, " iterations (", graph().num_nodes() - nodes_before,
      " in the last; the graph holds ", graph().num_nodes(),
      " now): each iteration builds new ops, and the session prepares each "
      "new graph again; build the ops once before the loop and only run "
      "them inside it, feeding what changes");
  d.span = s.span;
  sink_->Report(d);
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
      RN_RETURN_IF_ERROR(CheckDevice(builder_.device(), s.arg->span));
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

// A `device` block no device of the session matches is an error at its
// spec, or with --soft-placement a warning there (the placer then puts its
// nodes where the cost model says).
absl::Status Interpreter::CheckDevice(const DeviceSpec& spec,
                                      const SourceSpan& span) {
  const DeviceSet& devices = host_->session().devices();
  if (!devices.Matching(spec).empty()) return absl::OkStatus();
  const std::string what = StrCat("no device matches ", spec.ToString(),
                                  " (devices: ", devices.Describe(), ")");
  if (!options_.soft_placement) {
    return ErrorAt(span, StrCat(what,
                                "; run with --soft-placement to place its "
                                "nodes elsewhere"));
  }
  lang::Diagnostic d;
  d.severity = lang::Severity::kWarning;
  d.message = StrCat(what, "; its nodes are placed by the cost model");
  d.span = span;
  sink_->Report(d);
  return absl::OkStatus();
}

bool Interpreter::CanSwap() const {
  const DeviceSet& devices = host_->session().devices();
  for (int i = 0; i < devices.num_local(); ++i) {
    if (devices.device(i)->SwapsToHost()) return true;
  }
  return false;
}

void Interpreter::WarnNoSwap(const SourceSpan& span) {
  if (CanSwap()) return;
  lang::Diagnostic d;
  d.severity = lang::Severity::kWarning;
  d.message = StrCat(
      "swap_memory: no device of this session keeps its memory apart from "
      "the host's (devices: ",
      host_->session().devices().Describe(),
      "), so the loop's saved values are in host memory already and stay "
      "where they are");
  d.span = span;
  sink_->Report(d);
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
    Define(*env_, b.name, Binding{std::move(b.value), kind, b.span});
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
      RN_ASSIGN_OR_RETURN(Tensor t, builder_.LiteralAs(v, dtype));
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
  Define(*env_, s.name,
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
  Define(
      *env_, s.name,
      Binding{v, s.is_state ? BindingKind::kState : BindingKind::kVar, s.span});
  return absl::OkStatus();
}

void Interpreter::Define(Env& env, const std::string& name, Binding b) {
  if (options_.observer != nullptr) options_.observer->Bound(name, b);
  env.Define(name, std::move(b));
}

}  // namespace runnel::interp
