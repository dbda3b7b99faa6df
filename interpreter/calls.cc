// Calls: argument binding (calls.h), builtins and user functions.
#include "interpreter/calls.h"

#include <algorithm>
#include <optional>

#include "base/errors.h"
#include "base/status_macros.h"
#include "base/strings.h"
#include "interpreter/builtins.h"
#include "interpreter/diag.h"
#include "interpreter/interpreter.h"
#include "interpreter/large_stack.h"
#include "interpreter/restore.h"

namespace runnel::interp {
namespace {

constexpr int kMaxCallDepth = 1000;

std::string ParamList(const std::vector<std::string>& names) {
  std::string s;
  for (size_t i = 0; i < names.size(); ++i) {
    s += (i ? ", " : "") + names[i];
  }
  return s;
}

// "takes 2 arguments (x, units)" / "takes 2 to 3 arguments (...)".
std::string ArityText(const Signature& sig) {
  const int total = static_cast<int>(sig.names.size());
  const int required = static_cast<int>(
      std::count(sig.required.begin(), sig.required.end(), true));
  std::string count =
      required == total ? StrCat(total) : StrCat(required, " to ", total);
  return StrCat("takes ", count, total == 1 ? " argument" : " arguments", " (",
                ParamList(sig.names), ")");
}

}  // namespace

absl::StatusOr<BoundArguments> BindArguments(const Signature& sig,
                                             Arguments args,
                                             const SourceSpan& call) {
  const size_t n = sig.names.size();
  BoundArguments out;
  out.values.resize(n);
  out.given.assign(n, false);
  out.spans.assign(n, call);
  for (size_t i = 0; i < args.positional.size(); ++i) {
    const SourceSpan& span =
        i < args.positional_spans.size() ? args.positional_spans[i] : call;
    if (i < n) {
      out.values[i] = std::move(args.positional[i]);
      out.given[i] = true;
      out.spans[i] = span;
    } else if (sig.variadic) {
      out.rest.push_back(std::move(args.positional[i]));
      out.rest_spans.push_back(span);
    } else {
      return ErrorAt(call, StrCat(sig.shown, " ", ArityText(sig), ", got ",
                                  args.positional.size()));
    }
  }
  for (size_t j = 0; j < args.named.size(); ++j) {
    const SourceSpan& span =
        j < args.named_spans.size() ? args.named_spans[j] : call;
    const std::string& name = args.named[j].first;
    auto it = std::find(sig.names.begin(), sig.names.end(), name);
    if (it == sig.names.end()) {
      if (sig.kwargs) {
        out.extra_named.push_back(std::move(args.named[j]));
        out.extra_named_spans.push_back(span);
        continue;
      }
      lang::Diagnostic d;
      d.message = StrCat(sig.shown, " has no parameter named '", name, "'");
      d.span = span;
      std::string best = ClosestName(name, sig.names);
      d.notes.push_back(Note(
          SourceSpan{}, best.empty() ? StrCat(sig.shown, " takes (",
                                              ParamList(sig.names), ")")
                                     : StrCat("did you mean '", best, "'?")));
      return DiagStatus(std::move(d));
    }
    const size_t i = it - sig.names.begin();
    if (out.given[i]) {
      return ErrorAt(
          span, StrCat(sig.shown, " got two values for '", sig.names[i], "'"));
    }
    out.values[i] = std::move(args.named[j].second);
    out.given[i] = true;
    out.spans[i] = span;
  }
  for (size_t i = 0; i < n; ++i) {
    if (!out.given[i] && sig.required[i]) {
      return ErrorAt(call, StrCat(sig.shown, " is missing argument '",
                                  sig.names[i], "' (it ", ArityText(sig), ")"));
    }
  }
  return out;
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
  Arguments a{std::move(args), std::move(arg_spans), std::move(named),
              std::move(named_spans)};
  if (f.builtin != nullptr) {
    return CallBuiltin(*f.builtin, std::move(a), span, name_hint);
  }
  return CallUser(f, std::move(a), span);
}

absl::StatusOr<Value> Interpreter::CallBuiltin(const Builtin& b, Arguments args,
                                               const SourceSpan& span,
                                               const std::string& hint) {
  Signature sig;
  sig.shown = b.name + "()";
  sig.variadic = b.variadic;
  sig.kwargs = b.kwargs;
  for (const BuiltinParam& p : b.params) {
    sig.names.push_back(p.name);
    sig.required.push_back(p.required);
  }
  RN_ASSIGN_OR_RETURN(BoundArguments bound,
                      BindArguments(sig, std::move(args), span));
  CallArgs call;
  call.builtin = &b;
  call.span = span;
  call.hint = hint;
  call.values = std::move(bound.values);
  call.given = std::move(bound.given);
  call.spans = std::move(bound.spans);
  call.rest = std::move(bound.rest);
  call.rest_spans = std::move(bound.rest_spans);
  call.named = std::move(bound.extra_named);
  call.named_spans = std::move(bound.extra_named_spans);
  for (size_t i = 0; i < b.params.size(); ++i) {
    if (!call.given[i]) call.values[i] = b.params[i].default_value;
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

absl::StatusOr<Value> Interpreter::CallUser(const Function& f, Arguments args,
                                            const SourceSpan& span) {
  const std::vector<lang::Param>& params = f.params();
  Signature sig;
  sig.shown = f.def ? f.name + "()" : "the function";
  for (const lang::Param& p : params) {
    sig.names.push_back(p.name);
    sig.required.push_back(!p.default_value);
  }
  auto with_decl = [&](absl::Status s) {
    return AddNote(std::move(s), f.span,
                   StrCat(f.def ? f.name : "the function", " declared here"));
  };
  absl::StatusOr<BoundArguments> bound =
      BindArguments(sig, std::move(args), span);
  if (!bound.ok()) return with_decl(bound.status());
  if (call_depth_ >= kMaxCallDepth || StackLow()) {
    return ErrorAt(span,
                   StrCat("too many nested calls (more than ", kMaxCallDepth,
                          "): is the recursion missing a base case?"));
  }
  auto env = std::make_shared<Env>(f.closure, true);
  Restore<int> depth(&call_depth_, call_depth_ + 1);
  Restore<std::shared_ptr<Env>> scope_env(&env_, env);
  for (size_t i = 0; i < params.size(); ++i) {
    if (!bound->given[i]) {
      // Defaults are evaluated at the call, and may use earlier parameters.
      RN_ASSIGN_OR_RETURN(bound->values[i], Eval(*params[i].default_value));
    }
    Define(*env, sig.names[i],
           Binding{std::move(bound->values[i]), BindingKind::kParam,
                   params[i].span});
  }
  absl::StatusOr<Value> result = EvalBody(f);
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

absl::StatusOr<Value> Interpreter::EvalBody(const Function& f) {
  // A `def` call opens a name scope, reserved when it makes its first node.
  std::optional<BuildScope> scope;
  if (f.def != nullptr) {
    scope.emplace(builder_.OpenScope(f.name, /*unique=*/true));
  }
  Restore<int> loops(&loop_depth_, 0);
  Restore<int> fdepth(&function_depth_, function_depth_ + 1);
  const lang::Block* block = nullptr;
  const lang::Expr* body = nullptr;
  if (f.def != nullptr) {
    block = f.def->body_block ? &*f.def->body_block : nullptr;
    body = f.def->body_expr.get();
  } else {
    block = f.lambda->body_block ? &*f.lambda->body_block : nullptr;
    body = f.lambda->body_expr.get();
  }
  if (block == nullptr) {
    if (body == nullptr) return Value();
    return Eval(*body);
  }
  Value v;
  absl::Status s = ExecStmts(block->stmts, &v);
  const Signal signal = std::exchange(signal_, Signal::kNone);
  if (!s.ok()) return s;
  if (signal == Signal::kReturn) return std::exchange(return_value_, Value());
  return v;
}

}  // namespace runnel::interp
