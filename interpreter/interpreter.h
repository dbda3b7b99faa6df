// The Runnel interpreter: evaluates a script's AST (lang/ast.h).
//
//   lang::DiagnosticSink sink(stderr);
//   Interpreter interp({.seed = 0}, &sink);
//   int exit_status = interp.RunFile("model.rnl");
//
// Values follow the concrete/symbolic rule of docs/language.md §1: an op whose
// tensor operands are all concrete runs now, through runtime::EagerContext;
// any symbolic operand adds a node to the interpreter's one Graph instead
// (ApplyOp is the single place that decides). `run` executes parts of the
// graph in one runtime::Session that lives as long as the interpreter, so
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
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/status/statusor.h"
#include "interpreter/progress.h"
#include "interpreter/value.h"
#include "lang/ast.h"
#include "lang/diagnostics.h"
#include "lang/parser.h"
#include "lang/source.h"
#include "runtime/device_spec.h"
#include "runtime/eager.h"
#include "runtime/graph.h"
#include "runtime/session.h"

namespace runnel::interp {

struct Options {
  uint64_t seed = 0;
  int threads = 0;                                        // 0 = all cores
  std::vector<std::pair<std::string, std::string>> args;  // --arg k=v
  std::string metrics_file;
  bool check_mode = false;
  std::FILE* out = stdout;  // print
  std::FILE* err = stderr;  // progress bars
  // Where `import NAME` looks: "" = $RUNNEL_STDLIB_PATH, else the build's
  // stdlib directory.
  std::string stdlib_dir;
};

// Exit statuses (docs/language.md §7).
inline constexpr int kExitOk = 0;
inline constexpr int kExitError = 1;
inline constexpr int kExitUsage = 2;

struct CallArgs;

// Where an op is applied: the span to point at (caret inside it), and the
// name a new node should take (`let NAME = ...`), if any.
struct OpSite {
  OpSite() = default;
  OpSite(SourceSpan s, int c = 0, std::string hint = "")
      : span(std::move(s)), caret(c), name_hint(std::move(hint)) {}
  SourceSpan span;
  int caret = 0;
  std::string name_hint;
};

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

  Graph& graph() { return *graph_; }
  const std::shared_ptr<Graph>& graph_ptr() const { return graph_; }
  Env& globals() { return *globals_; }
  lang::DiagnosticSink& sink() { return *sink_; }
  const Options& options() const { return options_; }
  bool check_mode() const { return options_.check_mode; }
  // Asks a running evaluation to stop at the next loop iteration or `run`.
  void Interrupt() { interrupted_ = true; }
  // Forgets an Interrupt() nothing noticed (the REPL, between inputs).
  void ClearInterrupt() { interrupted_ = false; }

  // The names bound by builtins (the table of builtins.cc, the dtypes not
  // included), and the contents of interpreter/builtins.list.
  static std::vector<std::string> BuiltinNames();
  static std::vector<std::string> BuiltinsListNames();

  // ---- used by the builtins ------------------------------------------------

  // Applies registered op `op` (docs/language.md §1): eagerly when every tensor
  // input is concrete, else as a new graph node. Bare literals take the
  // dtype of the tensors they meet. Errors point at `site`.
  absl::StatusOr<Value> ApplyOp(const std::string& op,
                                std::vector<Value> inputs, AttrMap attrs,
                                const OpSite& site);
  // The same for ops with several outputs (a tuple of values comes back).
  absl::StatusOr<std::vector<Value>> ApplyOpN(const std::string& op,
                                              std::vector<Value> inputs,
                                              AttrMap attrs, const OpSite& site,
                                              std::vector<Node*> control = {});
  // A tensor value from a tensor, or from a list/tuple of numbers or
  // concrete tensors (stacked). `what` names the argument in errors.
  absl::StatusOr<Value> ToTensor(const Value& v, const SourceSpan& span,
                                 std::string_view what);
  // A concrete tensor of `dtype` from a value (literals are cast).
  absl::StatusOr<Tensor> ToConcrete(const Value& v, DType dtype,
                                    const SourceSpan& span,
                                    std::string_view what);
  // A symbolic tensor for `v` (concrete values become const nodes).
  absl::StatusOr<NodeOut> ToGraph(const Value& v, const SourceSpan& span);
  // The node a value names for control dependencies (ops, symbolic
  // tensors, lists of them).
  absl::Status CollectNodes(const Value& v, const SourceSpan& span,
                            std::vector<Node*>* out);
  // Casts a concrete tensor eagerly.
  absl::StatusOr<Tensor> Cast(const Tensor& t, DType dtype);

  // Calls a function value with positional and named arguments.
  absl::StatusOr<Value> Call(const Value& callee, std::vector<Value> args,
                             std::vector<SourceSpan> arg_spans,
                             std::vector<Field> named,
                             std::vector<SourceSpan> named_spans,
                             const SourceSpan& span,
                             const std::string& name_hint = "");

  // An `assign`, `assign_add` or `assign_sub` node updating variable
  // `target`; the value broadcasts to the variable's shape.
  absl::StatusOr<Value> Assign(const std::string& op, const Value& target,
                               const Value& value, const OpSite& site);
  // A new `variable` node (var/state/global_step) named `name` in the
  // current scope, initialised by `init`.
  absl::StatusOr<Value> MakeVariable(const std::string& name, const Value& init,
                                     bool trainable, const SourceSpan& span);
  const std::vector<Node*>& variables() const { return variables_; }
  // The `state` counting training steps (`global_step()`), made on first
  // use at the top level of the graph.
  absl::StatusOr<Value> GlobalStep(const SourceSpan& span);

  // An iterator over a value (`for`): ranges, lists, tuples, tensors (axis
  // 0), datasets (rows as records), iterables.
  absl::StatusOr<std::unique_ptr<Iterator>> Iterate(const Value& v,
                                                    const SourceSpan& span);
  // Element count of what Iterate would give, -1 when unknown.
  int64_t IterationCount(const Value& v);

  // The session `run` executes in, made on first use: it holds the
  // variables' values (save and restore read and set them there).
  Session& session();

  Reporter& reporter() { return *reporter_; }
  // `--arg name=value`, or nullptr.
  const std::string* FindArg(const std::string& name) const;
  EagerContext& eager() { return *eager_; }

 private:
  friend struct Scope;
  struct ScopeFrame {
    std::string base;
    bool unique = true;  // made unique when resolved (function scopes)
    bool resolved = false;
    std::string path;  // the full scope path once resolved
  };
  static ScopeFrame MakeFrame(std::string base, bool unique) {
    ScopeFrame f;
    f.base = std::move(base);
    f.unique = unique;
    return f;
  }
  enum class Signal { kNone, kBreak, kContinue, kReturn };

  // ---- statements and expressions (interpreter.cc) -------------------------
  absl::Status ExecBlock(const lang::Block& block, Value* value);
  absl::Status ExecStmts(const std::vector<lang::StmtPtr>& stmts, Value* value,
                         size_t first = 0);
  absl::Status Exec(const lang::Stmt& stmt, Value* value);
  absl::Status ExecFor(const lang::ForStmt& s);
  absl::Status ExecAnnotate(const lang::AnnotateStmt& s);
  absl::Status ExecRebind(const lang::RebindStmt& s);
  absl::Status ExecImport(const lang::ImportStmt& s);
  absl::StatusOr<Value> Eval(const lang::Expr& e, const std::string& hint = "");
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
  absl::StatusOr<Value> EvalIf(const lang::IfExpr& e, bool statement);
  absl::StatusOr<Value> EvalLoop(const lang::LoopExpr& e);
  absl::StatusOr<Value> EvalRun(const lang::RunExpr& e);
  absl::StatusOr<Value> EvalAssign(const lang::AssignExpr& e,
                                   const std::string& hint);
  absl::StatusOr<Value> CallUser(const Function& f, std::vector<Value> args,
                                 std::vector<SourceSpan> arg_spans,
                                 std::vector<Field> named,
                                 std::vector<SourceSpan> named_spans,
                                 const SourceSpan& span);
  absl::StatusOr<Value> CallBuiltin(const Builtin& b, std::vector<Value> args,
                                    std::vector<SourceSpan> arg_spans,
                                    std::vector<Field> named,
                                    std::vector<SourceSpan> named_spans,
                                    const SourceSpan& span,
                                    const std::string& hint);
  struct Bound {
    std::string name;
    Value value;
    SourceSpan span;
  };
  absl::Status MatchPattern(const lang::Pattern& p, const Value& v,
                            std::vector<Bound>* out);
  absl::Status BindPattern(const lang::Pattern& p, const Value& v,
                           BindingKind kind);
  // A tensor from numbers and concrete tensors of one shape; nullopt when
  // some item is not a concrete tensor (then it is a list).
  absl::StatusOr<std::optional<Value>> TryStack(const std::vector<Value>& items,
                                                const SourceSpan& span);
  absl::Status Truthy(const Value& v, const SourceSpan& span,
                      std::string_view what, bool* out);
  absl::StatusOr<Value> BinaryOnValues(lang::BinaryOp op, const Value& a,
                                       const Value& b, const OpSite& site);
  absl::Status UnknownName(const std::string& name, const SourceSpan& span);
  // An error at the `if` when `v` is the none of an `if` without `else`
  // (a note points at `use`); OK for any other value.
  absl::Status UsedNoneOfIf(const Value& v, const SourceSpan& use);
  absl::Status CheckInterrupt(const SourceSpan& span);

  // ---- declarations, graph building and run (graph_builder.cc) -------------
  absl::Status DeclareInput(const lang::InputStmt& s);
  absl::Status DeclareVar(const lang::VarStmt& s);
  absl::StatusOr<Shape> EvalTypeShape(const lang::TypeAnnotation& t,
                                      DType* dtype);
  // The scope path for a new node (reserving lazy function scopes when
  // `reserve`), and a unique node name in it.
  std::string ScopePath(bool reserve);
  std::string NewNodeName(const std::string& base);
  // `first`, or `first_N` when that is taken.
  std::string UniqueName(const std::string& first);
  // A `read_variable` of `var` made in the current build context (device,
  // control dependencies).
  absl::StatusOr<NodeOut> ReadVariable(Node* var, const SourceSpan& span);
  absl::StatusOr<Node*> AddNode(NodeSpec spec, const OpSite& site,
                                const std::vector<Value>& inputs);
  absl::StatusOr<Node*> ConstNode(const Tensor& t, const SourceSpan& span);
  absl::Status Promote(const std::string& op, std::vector<Value>* inputs,
                       const OpSite& site);
  struct Sub {
    bool is_slice = false;
    Value index = {}, lo = {}, hi = {}, step = {};  // none = absent
    SourceSpan span = {};
  };
  absl::StatusOr<Value> Index(const Value& target, const std::vector<Sub>& subs,
                              const OpSite& site);
  // x[s] on `axis` for a subscript with a symbolic index or bound.
  absl::StatusOr<Value> DynamicSubscript(const Value& x, const Sub& s,
                                         int64_t axis, const OpSite& site);
  absl::StatusOr<Value> RunFetches(const Value& fetches, const Value* feeds,
                                   const lang::RunExpr& e);

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
  absl::StatusOr<std::shared_ptr<const lang::Program>> ParseFile(
      const std::string& path, bool* parse_errors);
  void PreloadImports(const lang::Program& program, const std::string& file,
                      bool* parse_errors);
  std::string ResolveImport(const lang::ImportStmt& s, const std::string& file);
  std::string StdlibDir() const;

  Options options_;
  lang::DiagnosticSink* sink_;
  std::shared_ptr<Graph> graph_;
  std::unique_ptr<EagerContext> eager_;
  std::unique_ptr<Session> session_;
  std::unique_ptr<Reporter> reporter_;
  std::shared_ptr<Env> builtins_;
  std::shared_ptr<Env> globals_;
  std::shared_ptr<Env> env_;  // the current lexical scope

  // Naming, devices and control dependencies of new nodes.
  std::vector<ScopeFrame> scopes_;
  // Node names and reserved scope paths.
  absl::flat_hash_set<std::string> taken_;
  // For each base name, the last suffix N a NAME_N made unique with: names
  // are never freed, so the search for a free NAME_N resumes after it
  // (without this, the search is quadratic in the nodes of one base name).
  absl::flat_hash_map<std::string, int> last_suffix_;
  DeviceSpec device_;
  std::vector<Node*> control_;
  std::map<std::tuple<const void*, int, std::string>, Node*> const_cache_;
  // Reads made outside `after` blocks, by variable and device.
  absl::flat_hash_map<std::pair<Node*, std::string>, Node*> read_cache_;
  std::vector<Node*> variables_;
  Value global_step_;

  // Control flow.
  Signal signal_ = Signal::kNone;
  Value return_value_;
  int call_depth_ = 0;
  int loop_depth_ = 0;      // `for` loops of the current function
  int function_depth_ = 0;  // user function bodies being evaluated
  int64_t runs_ = 0;        // `run` expressions evaluated (check mode)
  std::atomic<bool> interrupted_{false};

  // Parsed files and modules, by path.
  std::map<std::string, std::shared_ptr<const lang::Program>> programs_;
  std::map<std::string, std::shared_ptr<Module>> modules_;
  std::vector<std::shared_ptr<const lang::Program>> kept_;
  std::vector<std::shared_ptr<void>> kept_parse_trees_;
  // The scopes functions close over: a function bound in its own closure
  // keeps it alive, so ~Interpreter clears them to free both.
  void NoteClosure(const std::shared_ptr<Env>& env);
  std::vector<std::weak_ptr<Env>> closures_;
  size_t prune_closures_at_ = 64;
};

}  // namespace runnel::interp

#endif  // RUNNEL_INTERPRETER_INTERPRETER_H_
