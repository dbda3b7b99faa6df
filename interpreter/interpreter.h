// The Runnel interpreter: evaluates a script's AST (lang/ast.h).
//
//   lang::DiagnosticSink sink(stderr);
//   Interpreter interp({.seed = 0}, &sink);
//   int exit_status = interp.RunFile("model.rnl");
//
// Values follow the concrete/symbolic rule of docs/language.md §1: an op whose
// tensor operands are all concrete runs now, through EagerContext;
// any symbolic operand adds a node to the interpreter's one Graph instead
// (ApplyOp is the single place that decides). `run` executes parts of the
// graph in one Session that lives as long as the interpreter, so
// variables keep their values across runs.
//
// Errors are lang::Diagnostics carried by absl::Status (interpreter/diag.h)
// and reported through the sink; nothing a script does aborts the process.
//
// In check mode (`runnel check`, `runnel graph`) the script is evaluated to
// build the whole graph, but `run` executes nothing: it checks its fetches
// and feeds (including missing feeds) and returns zeros of the fetched
// shapes; a host loop stops after the first iteration that reached a `run`;
// print, progress, report, save_npy and assert do nothing.
//
// Not thread-safe: one interpreter is driven by one thread.
#ifndef RUNNEL_INTERPRETER_INTERPRETER_H_
#define RUNNEL_INTERPRETER_INTERPRETER_H_

#include <atomic>
#include <cstdio>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/status/statusor.h"
#include "common_runtime/cluster_context.h"
#include "common_runtime/eager.h"
#include "common_runtime/session.h"
#include "framework/device_spec.h"
#include "framework/graph.h"
#include "interpreter/calls.h"
#include "interpreter/graph_builder.h"
#include "interpreter/iteration.h"
#include "interpreter/module_loader.h"
#include "interpreter/options.h"
#include "interpreter/progress.h"
#include "interpreter/run_host.h"
#include "interpreter/value.h"
#include "lang/ast.h"
#include "lang/diagnostics.h"
#include "lang/parser.h"
#include "lang/source.h"

namespace runnel::interp {

struct CallArgs;
class Runners;
class Summaries;

class Interpreter {
 public:
  Interpreter(Options options, lang::DiagnosticSink* sink);
  ~Interpreter();
  Interpreter(const Interpreter&) = delete;
  Interpreter& operator=(const Interpreter&) = delete;

  // Parses `path` (reporting every syntax error, exit status 2), then
  // evaluates it. Returns the process exit status.
  int RunFile(const std::string& path);
  // The same for source text under the name `path` (tests, `-e`).
  int RunSource(const std::string& path, std::string text);

  // Evaluates a parsed program in the persistent global scope (the REPL
  // calls this once per input: lang::Parse, sink().AddSource(file) so
  // diagnostics can quote it, then Evaluate). Returns the value of a
  // trailing expression statement (none otherwise). The interpreter keeps
  // the program alive: functions point into it. After an error the global
  // scope keeps what was bound before it. Statements before `first` are
  // taken as evaluated already.
  absl::StatusOr<Value> Evaluate(std::shared_ptr<const lang::Program> program,
                                 size_t first = 0);
  // Reports `status` through the sink; returns the exit status it means.
  int Report(const absl::Status& status);

  Graph& graph() { return builder_.graph(); }
  const std::shared_ptr<Graph>& graph_ptr() const {
    return builder_.graph_ptr();
  }
  Env& globals() { return *globals_; }
  lang::DiagnosticSink& sink() { return *sink_; }
  const Options& options() const { return options_; }
  bool check_mode() const { return options_.check_mode; }
  // Asks a running evaluation to stop at the next loop iteration or `run`.
  void Interrupt() { interrupted_ = true; }
  // Forgets an Interrupt() nothing noticed (the REPL, between inputs).
  void ClearInterrupt() { interrupted_ = false; }

  // The names bound by builtins (the table of builtins.cc, the dtypes not
  // included).
  static std::vector<std::string> BuiltinNames();

  // Graph building: every op, node, variable and name goes through it.
  GraphBuilder& builder() { return builder_; }

  // Calls a function value with positional and named arguments.
  absl::StatusOr<Value> Call(const Value& callee, std::vector<Value> args,
                             std::vector<SourceSpan> arg_spans,
                             std::vector<Field> named,
                             std::vector<SourceSpan> named_spans,
                             const SourceSpan& span,
                             const std::string& name_hint = "");

  // What runs the script's `run`s (run_host.h): the session, which holds
  // the variables' values, made on first use; the runner threads of
  // `runner(...)`; the --trace and --checkpoint-dir schedules. It lives as
  // long as the interpreter.
  RunHost& host() { return *host_; }

  // Member `name` of stdlib module `module` (loaded on first use, not bound
  // to a name): builtins that forward to the stdlib.
  absl::StatusOr<Value> StdlibMember(const std::string& module,
                                     const std::string& name,
                                     const SourceSpan& span);

  Reporter& reporter() { return *reporter_; }
  // With --logdir (and not checking): the TensorBoard event file; else
  // nullptr.
  Summaries* summaries() { return summaries_.get(); }
  // `--arg name=value`, or nullptr.
  const std::string* FindArg(const std::string& name) const;
  EagerContext& eager() { return builder_.eager(); }

  // Imports: where they resolve, the files parsed and modules loaded.
  ModuleLoader& modules() { return modules_; }

  // Whether a device of the session keeps a loop's saved values in host
  // memory when asked (a GPU: Device::SwapsToHost).
  bool CanSwap() const;
  // `swap_memory = true` at `span` in a session where no device swaps: a
  // warning there that the values stay where they are, in host memory.
  void WarnNoSwap(const SourceSpan& span);

 private:
  enum class Signal { kNone, kBreak, kContinue, kReturn };

  // ---- statements and expressions (interpreter.cc) -------------------------
  absl::Status ExecBlock(const lang::Block& block, Value* value);
  absl::Status ExecStmts(const std::vector<lang::StmtPtr>& stmts, Value* value,
                         size_t first = 0);
  absl::Status Exec(const lang::Stmt& stmt, Value* value);
  absl::Status ExecFor(const lang::ForStmt& s);
  // Once per loop: a host loop whose every iteration of the last
  // kGrowingIterations added nodes and ran (the graph grows without bound).
  static constexpr int64_t kGrowingIterations = 100;
  void WarnGraphGrows(const lang::ForStmt& s, int nodes_before);
  // A statement `w += 1` outside control flow and functions builds an
  // update that nothing can run: an error that says how to run it.
  absl::Status DroppedUpdate(const lang::ExprStmt& s, const Value& value) const;
  absl::Status ExecAnnotate(const lang::AnnotateStmt& s);
  absl::Status CheckDevice(const DeviceSpec& spec, const SourceSpan& span);

  absl::Status ExecRebind(const lang::RebindStmt& s);
  absl::Status ExecImport(const lang::ImportStmt& s);
  absl::StatusOr<Value> Eval(const lang::Expr& e, const std::string& hint = "");
  absl::StatusOr<Value> EvalExpr(const lang::Expr& e, const std::string& hint);
  // Binds `name` in `env`, telling the observer.
  void Define(Env& env, const std::string& name, Binding b);
  absl::StatusOr<Value> EvalName(const lang::NameExpr& e);
  absl::StatusOr<Value> EvalList(const lang::SequenceExpr& e);
  absl::StatusOr<Value> EvalUnary(const lang::UnaryExpr& e,
                                  const std::string& hint);
  absl::StatusOr<Value> EvalBinary(const lang::BinaryExpr& e,
                                   const std::string& hint);
  absl::StatusOr<Value> EvalCall(const lang::CallExpr& e,
                                 const std::string& hint);
  absl::StatusOr<Value> EvalIndex(const lang::IndexExpr& e,
                                  const std::string& hint);
  absl::StatusOr<Value> EvalMember(const lang::MemberExpr& e);
  absl::StatusOr<Value> SparseMember(const Value& target,
                                     const std::string& name,
                                     const SourceSpan& span);
  absl::StatusOr<Value> EvalIf(const lang::IfExpr& e, bool statement);
  absl::StatusOr<Value> EvalLoop(const lang::LoopExpr& e);
  absl::StatusOr<Value> EvalGraphIf(const lang::IfExpr& e, const Value& cond);
  absl::StatusOr<std::optional<std::pair<Value, Value>>> EvalBounds(
      const lang::Expr& iterable);
  absl::StatusOr<Value> EvalGraphLoop(const lang::LoopExpr& e,
                                      const Value& init,
                                      const std::pair<Value, Value>* bounds,
                                      const Value* over);
  absl::StatusOr<Value> EvalRun(const lang::RunExpr& e);
  absl::StatusOr<Value> EvalAssign(const lang::AssignExpr& e,
                                   const std::string& hint);
  // ---- calls (calls.cc)
  // ------------------------------------------------------
  absl::StatusOr<Value> CallUser(const Function& f, Arguments args,
                                 const SourceSpan& span);
  absl::StatusOr<Value> CallBuiltin(const Builtin& b, Arguments args,
                                    const SourceSpan& span,
                                    const std::string& hint);
  // A user function's body, in the scope of its bound parameters.
  absl::StatusOr<Value> EvalBody(const Function& f);
  struct Bound {
    std::string name;
    Value value;
    SourceSpan span;
  };
  absl::Status MatchPattern(const lang::Pattern& p, const Value& v,
                            std::vector<Bound>* out);
  absl::Status BindPattern(const lang::Pattern& p, const Value& v,
                           BindingKind kind);
  absl::Status Truthy(const Value& v, const SourceSpan& span,
                      std::string_view what, bool* out);
  absl::StatusOr<Value> BinaryOnValues(lang::BinaryOp op, const Value& a,
                                       const Value& b, const OpSite& site);
  absl::Status UnknownName(const std::string& name, const SourceSpan& span);
  absl::Status CheckInterrupt(const SourceSpan& span);

  // ---- declarations (interpreter.cc) ----------------------------------------
  absl::Status DeclareInput(const lang::InputStmt& s);
  absl::Status DeclareVar(const lang::VarStmt& s);
  absl::StatusOr<Shape> EvalTypeShape(const lang::TypeAnnotation& t,
                                      DType* dtype);

  // ---- run (run.cc) -------------------------------------------------------
  absl::StatusOr<Value> RunFetches(const Value& fetches, const Value* feeds,
                                   const lang::RunExpr& e);
  // The tensors and ops `fetches` names, depth first (RebuildResults walks
  // the same way).
  absl::Status CollectFetches(const Value& fetches, const SourceSpan& span,
                              std::vector<NodeOut>* outs,
                              std::vector<Node*>* targets);
  // `run ... with feeds`: each field checked against the input it names and
  // converted to its dtype.
  absl::StatusOr<Session::Feeds> ConvertFeeds(const Value& feeds,
                                              const lang::RunExpr& e);
  // A run whose enqueue_many holds more elements than its queue can, with
  // nothing to dequeue them meanwhile, would wait forever: refused.
  absl::Status CheckEnqueuesCanFinish(const std::vector<NodeOut>& outs,
                                      const std::vector<Node*>& targets,
                                      const Session::Feeds& feeds,
                                      const lang::RunExpr& e);
  // Check mode: no run; a missing feed is an error, zeros stand in for the
  // fetched values.
  absl::StatusOr<std::vector<Tensor>> CheckRun(
      const std::vector<NodeOut>& outs, const std::vector<Node*>& targets,
      const Session::Feeds& feeds, const lang::RunExpr& e);
  // A run in the session; its errors as diagnostics at the run.
  absl::StatusOr<std::vector<Tensor>> SessionRun(
      const std::vector<NodeOut>& outs, const std::vector<Node*>& targets,
      const Session::Feeds& feeds, const lang::RunExpr& e);

  // ---- modules
  // ---------------------------------------------------------------
  // Check mode: what ParseWhileEvaluating evaluated of a script.
  struct Streamed {
    size_t done = 0;       // statements evaluated, from the first
    bool stopped = false;  // at an error (status) or a top-level return
    absl::Status status;
  };
  lang::ParseResult ParseWhileEvaluating(const lang::SourceFile& src,
                                         Streamed* streamed);
  // Loads (or finds) the module `s` imports; binds nothing.
  absl::StatusOr<std::shared_ptr<Module>> LoadModule(const lang::ImportStmt& s);
  // For `unknown name` errors: where `name` is declared after `use` in the
  // same file, if it is; whether `import name` would find a module.
  std::optional<SourceSpan> LaterDeclaration(const std::string& name,
                                             const SourceSpan& use) const;

  Options options_;
  lang::DiagnosticSink* sink_;
  GraphBuilder builder_;
  ModuleLoader modules_;
  std::unique_ptr<RunHost> host_;
  std::unique_ptr<Reporter> reporter_;
  std::unique_ptr<Summaries> summaries_;
  std::shared_ptr<Env> builtins_;
  std::shared_ptr<Env> globals_;
  std::shared_ptr<Env> env_;  // the current lexical scope

  // Control flow.
  Signal signal_ = Signal::kNone;
  Value return_value_;
  int call_depth_ = 0;
  int loop_depth_ = 0;  // `for` loops of the current function
  std::set<const lang::ForStmt*> warned_growth_;  // WarnGraphGrows
  int function_depth_ = 0;  // user function bodies being evaluated
  std::atomic<bool> interrupted_{false};

  // The scopes functions close over: a function bound in its own closure
  // keeps it alive, so ~Interpreter clears them to free both.
  void NoteClosure(const std::shared_ptr<Env>& env);
  std::vector<std::weak_ptr<Env>> closures_;
  size_t prune_closures_at_ = 64;
};

}  // namespace runnel::interp

#endif  // RUNNEL_INTERPRETER_INTERPRETER_H_
