// GraphBuilder: the one place that applies ops and makes graph nodes.
//
//   GraphBuilder b({.num_threads = 2, .seed = 0});
//   auto x = b.ApplyOp("add", {Value::Int(1), y}, {}, OpSite{span});
//   {
//     BuildScope s = b.OpenScope("encoder", /*unique=*/false);
//     BuildScope d = b.OnDevice(spec);
//     ...  // nodes made here are named encoder/... and placed by `spec`
//   }      // the build context is back as it was
//
// It owns the graph, the eager context that runs ops on concrete values, and
// one BuildContext value: the name scopes, the device and the control
// dependencies that new nodes get. A BuildScope guard saves that value and
// restores it as a unit, whatever happens in between (errors, returns).
//
// ApplyOp decides the concrete/symbolic rule of docs/language.md §1: an op
// whose tensor inputs are all concrete runs now, eagerly; any symbolic input
// makes a node instead. Bare literals among inputs that share a dtype (the
// op's dtype groups) take the dtype of the others.
//
// The Interpreter evaluates the AST and calls this class; nothing here knows
// about statements, expressions or environments. Errors are diagnostics
// (interpreter/diag.h) at the OpSite or span they are given.
#ifndef RUNNEL_INTERPRETER_GRAPH_BUILDER_H_
#define RUNNEL_INTERPRETER_GRAPH_BUILDER_H_

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/status/statusor.h"
#include "common_runtime/control_flow.h"
#include "common_runtime/eager.h"
#include "framework/device_spec.h"
#include "framework/graph.h"
#include "framework/op_registry.h"
#include "interpreter/value.h"

namespace runnel::interp {

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

// One open name scope. A function's scope is resolved lazily: it takes its
// unique name (`dense`, `dense_1`) when the first node is made inside it, so
// a call that makes no node reserves no name. Frames are shared between
// copies of a context, so a resolution made while an inner scope is open
// outlives that scope.
struct ScopeFrame {
  std::string base;
  bool unique = true;  // made unique when resolved (function scopes)
  bool resolved = false;
  std::string path;  // the full scope path once resolved
};

// A branch of an in-graph `if` or the body of an in-graph `loop` while it
// is built. Nodes made inside belong to it; a value from an enclosing
// context is imported once per context: through `enter` into a loop body
// (visible in every iteration), through `switch` into a branch (dead when
// the branch is not taken). Nodes with no inputs take the pivot as a
// control input so that they run in the branch or iteration.
struct CfContext {
  enum class Kind { kBranch, kLoop };
  Kind kind = Kind::kBranch;
  CfContext* parent = nullptr;    // nullptr: the top level
  WhileBuilder* loop = nullptr;   // kLoop
  Node* branch_switch = nullptr;  // kBranch: switch(pred, pred)
  int branch = 0;                 // kBranch: 1 = the `if` side
  Node* pivot = nullptr;
  absl::flat_hash_map<NodeOut, NodeOut> imported;
  // Stateful nodes made here (assignments): they run with the branch or
  // iteration even when no value depends on them.
  std::vector<Node*> effects;
};

// What a new node gets from the blocks around the code that makes it.
struct BuildContext {
  std::vector<std::shared_ptr<ScopeFrame>> scopes;  // `scope`, calls, modules
  DeviceSpec device;                                // `device` blocks
  std::vector<Node*> control;                       // `after` blocks
  CfContext* cf = nullptr;  // the in-graph branch or loop body, if any
};

// An op computed now on concrete inputs whose value must be computed again
// at every run of a graph it reaches: a random draw (each run draws anew,
// docs/language.md), and what is computed from one on the host
// (`mu + random_normal([4])` with `mu` an input). The first ToGraph of one
// of its values makes its node, once, in the context the script made it in.
struct DeferredOp {
  std::string op;
  std::vector<Value> inputs;
  AttrMap attrs;
  BuildContext context;
  OpSite site;
  int depth = 1;         // ops from the draw: 1 for the draw itself
  Node* node = nullptr;  // made by the first ToGraph
};
// Host ops past a draw that a graph can still redo; a longer chain (a host
// loop summing draws) would keep every step's inputs, so its value is
// refused by the graph instead (DeferredOp with an empty op).
inline constexpr int kMaxDeferredDepth = 64;

class GraphBuilder;

// Restores the builder's BuildContext when it goes out of scope.
class [[nodiscard]] BuildScope {
 public:
  explicit BuildScope(GraphBuilder* b);
  BuildScope(BuildScope&& o) noexcept
      : builder_(std::exchange(o.builder_, nullptr)),
        saved_(std::move(o.saved_)) {}
  BuildScope(const BuildScope&) = delete;
  BuildScope& operator=(const BuildScope&) = delete;
  BuildScope& operator=(BuildScope&&) = delete;
  ~BuildScope();

 private:
  GraphBuilder* builder_;
  BuildContext saved_;
};

class GraphBuilder {
 public:
  explicit GraphBuilder(EagerOptions eager_options);
  GraphBuilder(const GraphBuilder&) = delete;
  GraphBuilder& operator=(const GraphBuilder&) = delete;

  Graph& graph() { return *graph_; }
  const std::shared_ptr<Graph>& graph_ptr() const { return graph_; }
  EagerContext& eager() { return *eager_; }

  // ---- the build context -----------------------------------------------
  const BuildContext& context() const { return context_; }
  // Each returns a guard that restores the context as it was before.
  BuildScope OpenScope(std::string base, bool unique);
  BuildScope OnDevice(const DeviceSpec& spec);
  // The device spec of the innermost `device` block ("" fields: any).
  const DeviceSpec& device() const {
    return context_.device;
  }  // refines the current device
  BuildScope After(const std::vector<Node*>& nodes);
  // An empty context (top-level names, no device, no dependencies), or
  // `context` itself.
  BuildScope Replace(BuildContext context = {});
  // Nodes made inside belong to `cf` (nullptr: the top level). The `after`
  // dependencies of enclosing blocks gate the construct's entry instead of
  // every node inside.
  BuildScope InControlFlow(CfContext* cf);

  // ---- in-graph control flow -------------------------------------------
  CfContext* NewCfContext(CfContext::Kind kind, CfContext* parent);
  // The context a node was made in (nullptr: the top level).
  CfContext* ContextOf(const Node* n) const;
  // `v` as seen from inside `cf`: imported through the contexts between.
  // An error when v was made inside a branch or loop body that does not
  // enclose cf (a value cannot leave its loop but through the loop's
  // result).
  absl::StatusOr<NodeOut> Import(NodeOut v, CfContext* cf,
                                 const SourceSpan& span);
  // Adds `spec` as is (no imports) as a node of `cf`, its name made unique.
  absl::StatusOr<Node*> AddRaw(NodeSpec spec, CfContext* cf);
  // What a WhileBuilder makes its nodes with: nodes of `body`, and exits
  // in its parent.
  NodeMaker MakerFor(CfContext* body);

  // ---- names -------------------------------------------------------------
  // The scope path for a new node (reserving lazy function scopes when
  // `reserve`), and a unique node name in it.
  std::string ScopePath(bool reserve);
  std::string NewNodeName(const std::string& base);
  // `first`, or `first_N` when that is taken.
  std::string UniqueName(const std::string& first);

  // ---- applying ops --------------------------------------------------------
  // Applies registered op `op` eagerly when every tensor input is concrete,
  // else as a new graph node. Bare literals take the dtype of the tensors
  // they meet. Errors point at `site`.
  absl::StatusOr<Value> ApplyOp(const std::string& op,
                                std::vector<Value> inputs, AttrMap attrs,
                                const OpSite& site);
  // The same for ops with several outputs (a tuple of values comes back).
  absl::StatusOr<std::vector<Value>> ApplyOpN(const std::string& op,
                                              std::vector<Value> inputs,
                                              AttrMap attrs, const OpSite& site,
                                              std::vector<Node*> control = {});
  // Whether the code being built is in an in-graph loop's body (perhaps in
  // a branch in it).
  bool InLoopBody() const;
  // The first draw's index, from a random_reserve node, for a draw of
  // random op `op` on `inputs` in a loop's body (ApplyOpN makes the op's
  // replay, NAME_at); `stream` names the draw's node.
  absl::StatusOr<Value> ReserveDraws(const std::string& op,
                                     const std::vector<Value>& inputs,
                                     const AttrMap& attrs,
                                     const std::string& stream,
                                     const OpSite& site);
  // Casts the bare literals among `inputs` that share a dtype with other
  // inputs of `def`'s op (its dtype groups) to that dtype.
  absl::Status Promote(const OpDef& def, std::vector<Value>* inputs,
                       const OpSite& site);
  // The same for the inputs `idx` of one group.
  absl::Status PromoteGroup(const std::string& op, const std::vector<int>& idx,
                            std::vector<Value>* inputs, const OpSite& site);
  // A host `for` loop's run: entered, each iteration begun, left
  // (Interpreter::ExecFor). Nodes are reused across its iterations only.
  void EnterHostLoop() { host_loops_.emplace_back(++host_loop_runs_, 0); }
  void NextHostIteration() { ++host_loops_.back().second; }
  void ExitHostLoop() { host_loops_.pop_back(); }

  // The key under which a pure node made outside in-graph bodies may be
  // reused: its source position, op, device, inputs and attributes
  // (exactly); empty when it must not be shared.
  std::string ReuseKey(const NodeSpec& spec, const SourceSpan& span) const;
  // The node made under `key` in an earlier iteration of the innermost
  // host loop and not yet used in this one (marked used now); null when
  // none. A node is never shared within one iteration, nor outside loops:
  // two bindings alive at once stay two nodes (a feed of one must not
  // change the other).
  Node* Reuse(const std::string& key);
  // Records `node` as made under `key` in the current iteration.
  void Remember(const std::string& key, Node* node);
  // Adds a node in the current context (device, control dependencies). An
  // error points at `site`, with notes at the declarations of `inputs`.
  absl::StatusOr<Node*> AddNode(NodeSpec spec, const OpSite& site,
                                const std::vector<Value>& inputs);

  // ---- conversions ----------------------------------------------------------
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
  // The nodes a value names for control dependencies (ops, symbolic
  // tensors, lists of them).
  absl::Status CollectNodes(const Value& v, const SourceSpan& span,
                            std::vector<Node*>* out);
  // Casts a concrete tensor eagerly.
  absl::StatusOr<Tensor> Cast(const Tensor& t, DType dtype);
  // A literal as `dtype`: a float literal from its exact value
  // (Value::exact_f64), so `0.1` meets an f64 tensor as the f64 nearest 0.1.
  absl::StatusOr<Tensor> LiteralAs(const Value& v, DType dtype);
  // A tensor from numbers and concrete tensors of one shape; nullopt when
  // some item is not a concrete tensor (then it is a list).
  absl::StatusOr<std::optional<Value>> TryStack(const std::vector<Value>& items,
                                                const SourceSpan& span);
  // Literal arithmetic on a float literal again in f64: the exact value of
  // the literal result (Value::exact_f64); none when no float literal is
  // among `inputs` or f64 cannot run it.
  absl::StatusOr<std::optional<Tensor>> ExactLiteralResult(
      const std::string& op, const std::vector<Value>& inputs,
      const AttrMap& attrs);
  // The node of a deferred op (DeferredOp), made the first time.
  absl::StatusOr<Node*> Materialize(DeferredOp& d);
  // A const node holding `t` (one per tensor buffer).
  absl::StatusOr<Node*> ConstNode(const Tensor& t, const SourceSpan& span);

  // ---- variables ------------------------------------------------------------
  // A new `variable` node (var/state/global_step) named `name` in the
  // current scope, initialised by `init`.
  absl::StatusOr<Value> MakeVariable(const std::string& name, const Value& init,
                                     bool trainable, const SourceSpan& span);
  // A `read_variable` of `var` made in the current context (device, control
  // dependencies). Reads outside `after` blocks are shared.
  absl::StatusOr<NodeOut> ReadVariable(Node* var, const SourceSpan& span);
  // An `assign`, `assign_add` or `assign_sub` node updating variable
  // `target`; the value broadcasts to the variable's shape.
  absl::StatusOr<Value> Assign(const std::string& op, const Value& target,
                               const Value& value, const OpSite& site);
  // A `state` named `<var's name>/<slot>` (`dense/w/adam_m`; `_1`, ...
  // when taken) at the top level whatever scopes are open, on `var`'s
  // device: an optimizer's slot. It starts as `initial`, a concrete tensor,
  // or (when `initial` is none) as zeros shaped like `var`. The name depends
  // only on the variable and the slot, so checkpoint keys do not change when
  // the stdlib is written differently inside.
  absl::StatusOr<Value> MakeSlot(const Value& var, const std::string& slot,
                                 const Value& initial, const SourceSpan& span);
  // The `state` counting training steps (`global_step()`), made on first
  // use at the top level of the graph (on `global_step_device` when set: in
  // a cluster, the first parameter server, so that it counts every
  // worker's steps).
  absl::StatusOr<Value> GlobalStep(const SourceSpan& span);
  void set_global_step_device(DeviceSpec spec) {
    global_step_device_ = std::move(spec);
  }
  const std::vector<Node*>& variables() const { return variables_; }

 private:
  friend class BuildScope;

  std::shared_ptr<Graph> graph_;
  std::unique_ptr<EagerContext> eager_;
  BuildContext context_;

  // Node names and reserved scope paths.
  absl::flat_hash_set<std::string> taken_;
  // For each base name, the last suffix N a NAME_N made unique with: names
  // are never freed, so the search for a free NAME_N resumes after it
  // (without this, the search is quadratic in the nodes of one base name).
  absl::flat_hash_map<std::string, int> last_suffix_;
  // Const nodes by tensor buffer, dtype and shape.
  std::map<std::tuple<const void*, int, std::string>, Node*> const_cache_;
  // Pure nodes by ReuseKey, with the host loop and iteration that last
  // used each (Reuse).
  struct Reusable {
    Node* node;
    uint64_t loop;
    uint64_t iteration;
  };
  absl::flat_hash_map<std::string, std::vector<Reusable>> reusable_;
  // The host loops running, innermost last: an id per loop run, and the
  // current iteration.
  std::vector<std::pair<uint64_t, uint64_t>> host_loops_;
  uint64_t host_loop_runs_ = 0;
  // Reads made outside `after` blocks, by variable and device.
  absl::flat_hash_map<std::pair<Node*, std::string>, Node*> read_cache_;
  std::vector<Node*> variables_;
  Value global_step_;
  DeviceSpec global_step_device_;
  std::vector<std::unique_ptr<CfContext>> cf_contexts_;
  absl::flat_hash_map<const Node*, CfContext*> node_cf_;
  // The switch that brings an outer value into the branches of one `if`.
  absl::flat_hash_map<std::pair<NodeOut, Node*>, Node*> branch_switches_;
};

// An error at the `if` when `v` is the none of an `if` without `else` (a
// note points at `use`); OK for any other value.
absl::Status UsedNoneOfIf(const Value& v, const SourceSpan& use);

bool IsVariableNode(const Node* n);

}  // namespace runnel::interp

#endif  // RUNNEL_INTERPRETER_GRAPH_BUILDER_H_
