// GraphBuilder (graph_builder.h): names, the build context, ApplyOp and
// dtype promotion, conversions of values to tensors, constants. Variables,
// slots, assignments and stacking values are graph_builder_values.cc's.
#include "interpreter/graph_builder.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "absl/strings/match.h"
#include "base/errors.h"
#include "base/status_macros.h"
#include "base/strings.h"
#include "framework/op_registry.h"
#include "interpreter/data.h"
#include "interpreter/diag.h"
#include "interpreter/restore.h"

namespace runnel::interp {
namespace {

// The ops that draw random numbers: each run of their node draws anew.
bool IsRandomOp(const std::string& op) {
  return op == "random_normal" || op == "random_uniform" ||
         op == "truncated_normal" || op == "dropout";
}

// Whether a random op's attributes give it a seed of its own (`seed = n`,
// not the global seed's -1).
bool HasExplicitSeed(const AttrMap& attrs) {
  return GetAttrOr<int64_t>(attrs, "seed", -1).value_or(-1) >= 0;
}

// Whether `op` on bare literals gives a bare literal (`x * (1.0 / 3.0)`):
// arithmetic does, and negation; a stateful op (dropout) never does, as its
// result is a new value each time, not a constant.
bool GivesLiteral(const OpDef& def) {
  if (def.stateful) return false;
  return !def.dtype_groups.empty() || def.name == "neg";
}

// An op's input that takes a variable itself rather than its value:
// assign's `ref`, and a fused optimizer update's `ref_m`, ... .
bool IsRefInput(const std::string& name) {
  return name == "ref" || name.starts_with("ref_");
}

}  // namespace

bool IsVariableNode(const Node* n) { return n->op() == "variable"; }

// ---- the build context ------------------------------------------------------

BuildScope::BuildScope(GraphBuilder* b) : builder_(b), saved_(b->context_) {}

BuildScope::~BuildScope() {
  if (builder_ != nullptr) builder_->context_ = std::move(saved_);
}

GraphBuilder::GraphBuilder(EagerOptions eager_options)
    : graph_(std::make_shared<Graph>()),
      eager_(std::make_unique<EagerContext>(eager_options)) {}

BuildScope GraphBuilder::OpenScope(std::string base, bool unique) {
  BuildScope guard(this);
  auto frame = std::make_shared<ScopeFrame>();
  frame->base = std::move(base);
  frame->unique = unique;
  context_.scopes.push_back(std::move(frame));
  return guard;
}

BuildScope GraphBuilder::OnDevice(const DeviceSpec& spec) {
  BuildScope guard(this);
  context_.device = context_.device.Refine(spec);
  return guard;
}

BuildScope GraphBuilder::After(const std::vector<Node*>& nodes) {
  BuildScope guard(this);
  for (Node* n : nodes) {
    if (std::find(context_.control.begin(), context_.control.end(), n) ==
        context_.control.end()) {
      context_.control.push_back(n);
    }
  }
  return guard;
}

BuildScope GraphBuilder::Replace(BuildContext context) {
  BuildScope guard(this);
  context_ = std::move(context);
  return guard;
}

BuildScope GraphBuilder::InControlFlow(CfContext* cf) {
  BuildScope guard(this);
  context_.cf = cf;
  context_.control.clear();
  return guard;
}

// ---- in-graph control flow --------------------------------------------------

CfContext* GraphBuilder::NewCfContext(CfContext::Kind kind, CfContext* parent) {
  cf_contexts_.push_back(std::make_unique<CfContext>());
  CfContext* cf = cf_contexts_.back().get();
  cf->kind = kind;
  cf->parent = parent;
  return cf;
}

CfContext* GraphBuilder::ContextOf(const Node* n) const {
  auto it = node_cf_.find(n);
  return it == node_cf_.end() ? nullptr : it->second;
}

absl::StatusOr<Node*> GraphBuilder::AddRaw(NodeSpec spec, CfContext* cf) {
  spec.name = UniqueName(spec.name);
  if (spec.device.empty()) spec.device = context_.device.ToString();
  const SourceSpan span = spec.span;
  absl::StatusOr<Node*> node = graph_->AddNode(std::move(spec));
  if (!node.ok()) {
    return ErrorAt(span, std::string(ToStd(node.status().message())));
  }
  if (cf != nullptr) node_cf_[*node] = cf;
  return node;
}

NodeMaker GraphBuilder::MakerFor(CfContext* body) {
  return [this, body](NodeSpec spec, bool in_parent) {
    return AddRaw(std::move(spec), in_parent ? body->parent : body);
  };
}

absl::StatusOr<NodeOut> GraphBuilder::Import(NodeOut v, CfContext* cf,
                                             const SourceSpan& span) {
  CfContext* home = ContextOf(v.node);
  if (home == cf) return v;
  if (cf == nullptr) {
    return ErrorAt(span, StrCat("'", v.node->name(),
                                "' was made inside an in-graph loop body or "
                                "branch and cannot be used outside it; use the "
                                "value of the loop or `if` instead"));
  }
  auto it = cf->imported.find(v);
  if (it != cf->imported.end()) return it->second;
  NodeOut inner;
  if (const Tensor* value = v.node->constant_value()) {
    // A constant is made again inside, so shape functions still see its
    // value (a reshape's target shape stays static in a loop body).
    NodeSpec spec;
    spec.name = StrCat(v.node->name(), "/inside");
    spec.op = "const";
    spec.attrs = {{"value", *value}};
    spec.control_inputs = {cf->pivot};
    spec.span = span;
    RN_ASSIGN_OR_RETURN(Node * c, AddRaw(std::move(spec), cf));
    cf->imported[v] = {c, 0};
    return NodeOut{c, 0};
  }
  RN_ASSIGN_OR_RETURN(NodeOut outer, Import(v, cf->parent, span));
  if (cf->kind == CfContext::Kind::kLoop) {
    absl::StatusOr<NodeOut> e = cf->loop->EnterInvariant(outer);
    if (!e.ok()) return ErrorAt(span, std::string(ToStd(e.status().message())));
    inner = *e;
  } else {
    // One switch serves both branches of an `if`: each takes its side.
    Node*& sw = branch_switches_[{outer, cf->branch_switch}];
    if (sw == nullptr) {
      NodeSpec spec;
      spec.name = StrCat(v.node->name(), "/switch");
      spec.op = "switch";
      spec.inputs = {outer, cf->branch_switch->input(1)};
      spec.span = span;
      RN_ASSIGN_OR_RETURN(sw, AddRaw(std::move(spec), cf->parent));
    }
    inner = {sw, cf->branch};
  }
  // The enter or switch output belongs to the context it leads into.
  node_cf_[inner.node] = cf;
  if (cf->kind == CfContext::Kind::kBranch) node_cf_[inner.node] = cf->parent;
  cf->imported[v] = inner;
  return inner;
}

// ---- names and scopes -------------------------------------------------------

std::string GraphBuilder::ScopePath(bool reserve) {
  // Frames resolve in order, so the resolved ones are a prefix: start after
  // the last of them.
  size_t first = context_.scopes.size();
  while (first > 0 && !context_.scopes[first - 1]->resolved) --first;
  std::string path =
      first > 0 ? context_.scopes[first - 1]->path : std::string();
  for (size_t k = first; k < context_.scopes.size(); ++k) {
    ScopeFrame& f = *context_.scopes[k];
    std::string candidate = path.empty() ? f.base : path + "/" + f.base;
    if (!reserve) {
      path = candidate;
      continue;
    }
    if (f.unique) {
      const std::string base = candidate;
      if (taken_.count(candidate) || graph_->FindNode(candidate) != nullptr) {
        int& i = last_suffix_[base];
        do {
          candidate = StrCat(base, "_", ++i);
        } while (taken_.count(candidate) ||
                 graph_->FindNode(candidate) != nullptr);
      }
    }
    taken_.insert(candidate);
    f.resolved = true;
    f.path = candidate;
    path = candidate;
  }
  return path;
}

std::string GraphBuilder::NewNodeName(const std::string& base) {
  const std::string path = ScopePath(true);
  return UniqueName(path.empty() ? base : path + "/" + base);
}

std::string GraphBuilder::UniqueName(const std::string& first) {
  std::string name = first;
  if (taken_.count(name) || graph_->FindNode(name) != nullptr) {
    int& i = last_suffix_[first];
    do {
      name = StrCat(first, "_", ++i);
    } while (taken_.count(name) || graph_->FindNode(name) != nullptr);
  }
  taken_.insert(name);
  return name;
}

namespace {

// `v` exactly, for ReuseKey: a double's bits, a tensor's bytes (an empty
// string for a tensor too large to compare cheaply: not reused).
std::string ExactAttr(const AttrValue& v) {
  if (const double* d = std::get_if<double>(&v)) {
    return std::string(reinterpret_cast<const char*>(d), sizeof(*d));
  }
  if (const Tensor* t = std::get_if<Tensor>(&v)) {
    constexpr size_t kMaxBytes = 4096;
    if (t->raw_data() == nullptr || t->bytes() > kMaxBytes) return {};
    return StrCat(
        DTypeName(t->dtype()), t->shape().ToString(),
        std::string_view(static_cast<const char*>(t->raw_data()), t->bytes()));
  }
  return AttrValueToString(v);
}

}  // namespace

std::string GraphBuilder::ReuseKey(const NodeSpec& spec,
                                   const SourceSpan& span) const {
  // Nodes waiting for others (`after`), made by C++ code, or carrying a
  // seed are never shared.
  if (!span.known() || !spec.control_inputs.empty() ||
      spec.attrs.contains("seed")) {
    return {};
  }
  std::string key =
      StrCat(span.file.str(), ":", span.line, ":", span.col, ":", span.end_line,
             ":", span.end_col, "|", spec.op, "|", spec.device);
  for (const NodeOut& in : spec.inputs) {
    key += StrCat("|", in.node->id(), ":", in.index);
  }
  for (const auto& [name, value] : spec.attrs) {
    std::string exact = ExactAttr(value);
    if (exact.empty() && std::holds_alternative<Tensor>(value)) return {};
    key += StrCat("|", name, "=", value.index(), ":", exact.size(), ":");
    key += exact;
  }
  return key;
}

Node* GraphBuilder::Reuse(const std::string& key) {
  if (key.empty() || host_loops_.empty()) return nullptr;
  auto it = reusable_.find(key);
  if (it == reusable_.end()) return nullptr;
  const auto [loop, iteration] = host_loops_.back();
  for (Reusable& r : it->second) {
    if (r.loop == loop && r.iteration < iteration) {
      r.iteration = iteration;
      return r.node;
    }
  }
  return nullptr;
}

void GraphBuilder::Remember(const std::string& key, Node* node) {
  if (key.empty() || host_loops_.empty()) return;
  const uint64_t loop = host_loops_.back().first;
  const uint64_t iteration = host_loops_.back().second;
  std::vector<Reusable>& made = reusable_[key];
  // Those of an earlier run of a loop are never reused again.
  std::erase_if(made, [&](const Reusable& r) { return r.loop != loop; });
  made.push_back({node, loop, iteration});
}

absl::StatusOr<Node*> GraphBuilder::AddNode(NodeSpec spec, const OpSite& site,
                                            const std::vector<Value>& inputs) {
  spec.span = site.span;
  if (spec.device.empty()) spec.device = context_.device.ToString();
  CfContext* cf = context_.cf;
  const OpDef* def = OpRegistry::Global().Find(spec.op);
  for (size_t i = 0; i < spec.inputs.size(); ++i) {
    NodeOut& in = spec.inputs[i];
    // A variable's updates and reads inside a loop or branch name it: their
    // input is then the imported value, not the variable node.
    // (A fused optimizer update takes more: `ref_m` names `var_m`.)
    if (cf != nullptr && IsVariableNode(in.node) && def != nullptr &&
        i < def->inputs.size() && IsRefInput(def->inputs[i])) {
      spec.attrs["var" + def->inputs[i].substr(3)] = in.node->name();
    }
    RN_ASSIGN_OR_RETURN(in, Import(in, cf, site.span));
  }
  // A node that reads nothing made in the body (only invariants) would also
  // run in the loop's last, dead iteration: the pivot keeps it to the
  // iterations that run.
  bool outer_only = true;
  for (const NodeOut& in : spec.inputs) {
    outer_only = outer_only && in.node->op() == "enter";
  }
  if (cf != nullptr && spec.control_inputs.empty() &&
      (spec.inputs.empty() ||
       (outer_only && cf->kind == CfContext::Kind::kLoop))) {
    spec.control_inputs.push_back(cf->pivot);
  }
  for (Node* c : context_.control) {
    if (std::find(spec.control_inputs.begin(), spec.control_inputs.end(), c) ==
        spec.control_inputs.end()) {
      spec.control_inputs.push_back(c);
    }
  }
  // A pure node made again at the same place of the script, from the same
  // inputs, is the one made before (a host loop that runs `sum(m @ m)` at
  // each iteration builds it once). A node without inputs is a source (an
  // `input` declared in a function called twice is two inputs), never
  // shared; literals are shared by ConstNode.
  const std::string key =
      cf == nullptr && def != nullptr && !def->stateful && !spec.inputs.empty()
          ? ReuseKey(spec, site.span)
          : std::string();
  if (Node* n = Reuse(key)) return n;
  absl::StatusOr<Node*> node = graph_->AddNode(std::move(spec));
  if (node.ok()) {
    Remember(key, *node);
    if (cf != nullptr) {
      node_cf_[*node] = cf;
      if ((*node)->stateful() && (*node)->op() != "read_variable")
        cf->effects.push_back(*node);
    }
    return node;
  }
  lang::Diagnostic d;
  d.message = std::string(ToStd(node.status().message()));
  d.span = site.span;
  d.caret_col = site.caret;
  // Point at the declarations of the inputs the message is about.
  for (const Value& v : inputs) {
    if (!v.is_symbolic()) continue;
    const Node* n = v.out().node;
    if (n->op() == "placeholder" || n->op() == "placeholder_with_default" ||
        IsVariableNode(n)) {
      d.notes.push_back(Note(n->span(), StrCat(n->name(), " declared here")));
    }
  }
  return DiagStatus(std::move(d));
}

absl::StatusOr<NodeOut> GraphBuilder::ReadVariable(Node* var,
                                                   const SourceSpan& span) {
  // Reads outside `after` blocks are interchangeable: one per variable and
  // device serves them all.
  const bool shared = context_.control.empty();
  // One per loop body or branch, too: a read there runs each time it runs.
  auto key =
      std::make_pair(var, StrCat(context_.device.ToString(), "@",
                                 reinterpret_cast<uintptr_t>(context_.cf)));
  if (shared) {
    auto it = read_cache_.find(key);
    if (it != read_cache_.end()) return NodeOut{it->second, 0};
  }
  NodeSpec spec;
  spec.name = UniqueName(var->name() + "/read");
  spec.op = "read_variable";
  spec.inputs = {NodeOut{var, 0}};
  RN_ASSIGN_OR_RETURN(Node * node, AddNode(std::move(spec), OpSite{span}, {}));
  if (shared) read_cache_[key] = node;
  return NodeOut{node, 0};
}

absl::StatusOr<Node*> GraphBuilder::ConstNode(const Tensor& t,
                                              const SourceSpan& span) {
  auto key = std::make_tuple(t.raw_data(), static_cast<int>(t.dtype()),
                             t.shape().ToString());
  if (t.raw_data() != nullptr) {
    auto it = const_cache_.find(key);
    if (it != const_cache_.end()) return it->second;
  }
  NodeSpec spec;
  spec.op = "const";
  spec.attrs = {{"value", t}};
  spec.span = span;
  // A literal made again at the same place with the same value (in a host
  // loop) is the constant made before, as AddNode reuses pure nodes.
  const std::string reuse = ReuseKey(spec, span);
  if (Node* n = Reuse(reuse)) return n;
  spec.name = NewNodeName("const");
  absl::StatusOr<Node*> node = graph_->AddNode(std::move(spec));
  if (!node.ok())
    return ErrorAt(span, std::string(ToStd(node.status().message())));
  if (t.raw_data() != nullptr) const_cache_[key] = *node;
  Remember(reuse, *node);
  return *node;
}

// ---- conversions
// ---------------------------------------------------------------

absl::StatusOr<Tensor> GraphBuilder::Cast(const Tensor& t, DType dtype) {
  if (t.dtype() == dtype) return t;
  return eager_->Execute1("cast", {t}, {{"dtype", dtype}});
}

absl::StatusOr<Tensor> GraphBuilder::LiteralAs(const Value& v, DType dtype) {
  const Tensor* exact = v.exact_f64();
  if (exact != nullptr && IsFloating(dtype)) return Cast(*exact, dtype);
  return Cast(v.tensor(), dtype);
}

absl::StatusOr<Value> GraphBuilder::ToTensor(const Value& v,
                                             const SourceSpan& span,
                                             std::string_view what) {
  if (v.is_tensor()) return v;
  if (v.is_sequence()) {
    if (v.items().empty()) {
      return Value::Concrete(Tensor(DType::kF32, Shape{0}), true);
    }
    RN_ASSIGN_OR_RETURN(std::optional<Value> t, TryStack(v.items(), span));
    if (t) return *t;
    return ErrorAt(span, StrCat(what, " must be a tensor; this ",
                                v.kind() == ValueKind::kList ? "list" : "tuple",
                                " holds values that are not concrete numbers "
                                "(use stack() for symbolic tensors)"));
  }
  RN_RETURN_IF_ERROR(UsedNoneOfIf(v, span));
  return ErrorAt(span,
                 StrCat(what, " must be a tensor, got ", DescribeValue(v)));
}

absl::StatusOr<Tensor> GraphBuilder::ToConcrete(const Value& v, DType dtype,
                                                const SourceSpan& span,
                                                std::string_view what) {
  RN_ASSIGN_OR_RETURN(Value t, ToTensor(v, span, what));
  if (t.is_symbolic()) {
    return ErrorAt(span,
                   StrCat(what, " must be concrete, got ", DescribeValue(t)));
  }
  absl::StatusOr<Tensor> c = LiteralAs(t, dtype);
  if (!c.ok()) {
    return ErrorAt(span, StrCat(what, ": ", ToStd(c.status().message())));
  }
  return c;
}

absl::StatusOr<NodeOut> GraphBuilder::ToGraph(const Value& v,
                                              const SourceSpan& span) {
  if (v.is_symbolic()) return v.out();
  if (v.deferred() != nullptr) {
    RN_ASSIGN_OR_RETURN(Node * n, Materialize(*v.deferred()));
    return NodeOut{n, v.deferred_index()};
  }
  RN_ASSIGN_OR_RETURN(Value t, ToTensor(v, span, "the value"));
  if (t.is_symbolic()) return t.out();
  RN_ASSIGN_OR_RETURN(Node * n, ConstNode(t.tensor(), span));
  return NodeOut{n, 0};
}

absl::Status GraphBuilder::CollectNodes(const Value& v, const SourceSpan& span,
                                        std::vector<Node*>* out) {
  switch (v.kind()) {
    case ValueKind::kNone:
      return absl::OkStatus();
    case ValueKind::kOp:
    case ValueKind::kSymbolic:
      if (std::find(out->begin(), out->end(), v.node()) == out->end()) {
        out->push_back(v.node());
      }
      return absl::OkStatus();
    case ValueKind::kTuple:
    case ValueKind::kList:
      for (const Value& i : v.items()) {
        RN_RETURN_IF_ERROR(CollectNodes(i, span, out));
      }
      return absl::OkStatus();
    case ValueKind::kRecord:
      for (const Field& f : v.fields()) {
        RN_RETURN_IF_ERROR(CollectNodes(f.second, span, out));
      }
      return absl::OkStatus();
    default:
      return ErrorAt(span,
                     StrCat("expected graph ops or symbolic tensors, got ",
                            DescribeValue(v)));
  }
}

// ---- ApplyOp
// ------------------------------------------------------------------

absl::Status GraphBuilder::Promote(const OpDef& def, std::vector<Value>* inputs,
                                   const OpSite& site) {
  // The op's dtype groups (OpDef::dtype_groups), as TensorFlow's type
  // attributes: the inputs of one group share a dtype.
  for (const std::vector<int>& group :
       def.DTypeGroupsFor(static_cast<int>(inputs->size()))) {
    RN_RETURN_IF_ERROR(PromoteGroup(def.name, group, inputs, site));
  }
  return absl::OkStatus();
}

absl::Status GraphBuilder::PromoteGroup(const std::string& op,
                                        const std::vector<int>& idx,
                                        std::vector<Value>* inputs,
                                        const OpSite& site) {
  std::optional<DType> target;
  for (int i : idx) {
    const Value& v = (*inputs)[i];
    if (v.is_tensor() && !(v.is_concrete() && v.literal())) {
      target = v.tensor_dtype();
      break;
    }
  }
  if (!target) {
    // Only literals: ints meet floats as floats (`1 + 2.5`).
    for (int i : idx) {
      DType d = (*inputs)[i].tensor_dtype();
      if (!target || (IsFloating(d) && !IsFloating(*target)) ||
          (d == DType::kI64 && *target == DType::kI32) ||
          (d == DType::kF64 && *target == DType::kF32)) {
        target = d;
      }
    }
  }
  if (!target) return absl::OkStatus();
  for (int i : idx) {
    Value& v = (*inputs)[i];
    if (!v.is_concrete() || !v.literal() || v.tensor().dtype() == *target) {
      continue;
    }
    const DType from = v.tensor().dtype();
    if (*target == DType::kBool || (IsFloating(from) && !IsFloating(*target))) {
      return ErrorAt(
          site.span,
          StrCat(op, ": dtypes differ: ", DTypeName(*target), " and ",
                 DTypeName(from), " (a ", IsFloating(from) ? "float" : "number",
                 " literal); convert with cast(x, ", DTypeName(from), ")"),
          site.caret);
    }
    RN_ASSIGN_OR_RETURN(Tensor t, LiteralAs(v, *target));
    v = Value::Concrete(std::move(t), true);
  }
  return absl::OkStatus();
}

absl::StatusOr<Node*> GraphBuilder::Materialize(DeferredOp& d) {
  if (d.node != nullptr) return d.node;
  if (d.op.empty()) {
    return ErrorAt(
        d.site.span,
        StrCat("this value is computed on the host from a random draw through "
               "more than ",
               kMaxDeferredDepth,
               " operations, too many for the graph to draw it anew at each "
               "run; compute it in the graph (from an input), or keep one "
               "draw fixed in a var"),
        d.site.caret);
  }
  // Made where the script computed the value: its scope, device and `after`
  // blocks, outside any in-graph loop or branch (it was made outside them).
  Restore<BuildContext> there(&context_, d.context);
  NodeSpec spec;
  spec.op = d.op;
  spec.attrs = d.attrs;
  for (const Value& v : d.inputs) {
    RN_ASSIGN_OR_RETURN(NodeOut o, ToGraph(v, d.site.span));
    spec.inputs.push_back(o);
  }
  spec.name = NewNodeName(d.site.name_hint.empty() ? d.op : d.site.name_hint);
  RN_ASSIGN_OR_RETURN(d.node, AddNode(std::move(spec), d.site, d.inputs));
  return d.node;
}

absl::StatusOr<Value> GraphBuilder::ApplyOp(const std::string& op,
                                            std::vector<Value> inputs,
                                            AttrMap attrs, const OpSite& site) {
  RN_ASSIGN_OR_RETURN(std::vector<Value> out,
                      ApplyOpN(op, std::move(inputs), std::move(attrs), site));
  if (out.size() == 1) return out[0];
  if (out.empty()) return Value();
  return Value::Tuple(std::move(out));
}

bool GraphBuilder::InLoopBody() const {
  for (const CfContext* cf = context_.cf; cf != nullptr; cf = cf->parent) {
    if (cf->kind == CfContext::Kind::kLoop) return true;
  }
  return false;
}

// random_reserve for a draw of random op `op` (dropout draws only when
// training at a nonzero rate) from the counter of node `stream`.
absl::StatusOr<Value> GraphBuilder::ReserveDraws(
    const std::string& op, const std::vector<Value>& inputs,
    const AttrMap& attrs, const std::string& stream, const OpSite& site) {
  Value shape = inputs[0], on = Value::Bool(true);
  if (op == "dropout") {
    RN_ASSIGN_OR_RETURN(shape, ApplyOp("shape_of", {inputs[0]}, {}, site));
    RN_ASSIGN_OR_RETURN(
        Value rated,
        ApplyOp("not_equal", {inputs[1], Value::Float(0)}, {}, site));
    RN_ASSIGN_OR_RETURN(on,
                        ApplyOp("logical_and", {inputs[2], rated}, {}, site));
  }
  auto seed = attrs.find("seed");
  return ApplyOp(
      "random_reserve", {shape, on},
      {{"seed", seed != attrs.end() ? seed->second : AttrValue(int64_t{-1})},
       {"stream", stream}},
      site);
}

absl::StatusOr<std::vector<Value>> GraphBuilder::ApplyOpN(
    const std::string& op, std::vector<Value> inputs, AttrMap attrs,
    const OpSite& site, std::vector<Node*> control) {
  const OpDef* def = OpRegistry::Global().Find(op);
  if (def == nullptr) {
    return ErrorAt(site.span, StrCat(op, " is not implemented yet"),
                   site.caret);
  }
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (inputs[i].is_tensor()) continue;
    const std::string what = i < def->inputs.size()
                                 ? StrCat(op, ": input '", def->inputs[i], "'")
                                 : StrCat(op, ": input ", i);
    RN_ASSIGN_OR_RETURN(inputs[i], ToTensor(inputs[i], site.span, what));
  }
  RN_RETURN_IF_ERROR(Promote(*def, &inputs, site));
  bool all_concrete = true, all_literal = !inputs.empty();
  for (const Value& v : inputs) {
    if (!v.is_concrete()) all_concrete = false;
    if (!(v.is_concrete() && v.literal())) all_literal = false;
  }
  // A random draw computed now must also draw anew at each run of a graph
  // it reaches (DeferredOp); in an in-graph loop or branch it is a node of
  // the body, drawn at each iteration.
  const bool random = IsRandomOp(op);
  int deferred_depth = 0;  // the longest chain to a draw among the inputs
  for (const Value& v : inputs) {
    if (v.deferred() != nullptr) {
      deferred_depth = std::max(deferred_depth, v.deferred()->depth);
    }
  }
  const bool defer = context_.cf == nullptr && (random || deferred_depth > 0);
  // Ops without outputs only make sense in the graph (noop, group), and
  // so does an all-reduce between workers (the eager device has no
  // cluster).
  const bool graph_only = op == "noop" || op == "random_reserve" ||
                          op == "all_reduce" || !control.empty() ||
                          (random && context_.cf != nullptr);
  if (all_concrete && !graph_only) {
    const AttrMap attrs_copy = all_literal || defer ? attrs : AttrMap();
    std::vector<Tensor> tensors;
    for (const Value& v : inputs) tensors.push_back(v.tensor());
    // A draw's name keys its stream's counter (kernels/common/random_util.cc):
    // it claims its scope's name, as a node would, so that a layer's first
    // draw does not share the counter of the last layer of that name. A
    // draw with a seed of its own also names its place in the script: two
    // such draws in one scope (two top-level `var`s, say) are two ops and
    // draw the same numbers, where one name would share one counter; each
    // run of one (a host loop's) still draws anew.
    const std::string path = ScopePath(/*reserve=*/random);
    std::string base = site.name_hint.empty() ? op : site.name_hint;
    if (random && HasExplicitSeed(attrs) && site.span.known()) {
      base = StrCat(base, "_at_", site.span.line, "_", site.span.col);
    }
    absl::StatusOr<std::vector<Tensor>> out =
        eager_->Execute(op, std::move(tensors), std::move(attrs),
                        path.empty() ? base : path + "/" + base, site.span);
    if (!out.ok()) {
      lang::Diagnostic d;
      d.message = std::string(ToStd(out.status().message()));
      d.span = site.span;
      d.caret_col = site.caret;
      return DiagStatus(std::move(d));
    }
    std::vector<Value> values;
    // Arithmetic on bare literals gives a bare literal (`x * (1.0 / 3.0)`),
    // which keeps its exact value too when a float literal had one.
    const bool literal = all_literal && GivesLiteral(*def);
    if (literal && out->size() == 1 && IsFloating((*out)[0].dtype())) {
      RN_ASSIGN_OR_RETURN(std::optional<Tensor> exact,
                          ExactLiteralResult(op, inputs, attrs_copy));
      if (exact)
        return std::vector<Value>{
            Value::FloatLiteral(std::move((*out)[0]), std::move(*exact))};
    }
    if (defer) {
      const int depth = deferred_depth + 1;
      auto d = std::make_shared<DeferredOp>(
          depth > kMaxDeferredDepth
              ? DeferredOp{"", {}, {}, {}, site, depth, nullptr}
              : DeferredOp{op, inputs, attrs_copy, context_, site, depth,
                           nullptr});
      for (size_t i = 0; i < out->size(); ++i) {
        values.push_back(
            Value::Deferred(std::move((*out)[i]), d, static_cast<int>(i)));
      }
      return values;
    }
    for (Tensor& t : *out)
      values.push_back(Value::Concrete(std::move(t), literal));
    return values;
  }
  NodeSpec spec;
  spec.op = op;
  if (random && InLoopBody()) {
    // A draw in an in-graph loop's body is two nodes: random_reserve, the
    // stateful one, which reserves from the node's counter the draws a
    // run of the op would, and the op's replay NAME_at, a pure function of
    // its inputs and the first draw's index (framework/ops/random_ops.cc).
    // The draws are those of the op itself; a gradient that recomputes
    // the loop's iterations stores the index, not the draws, and computes
    // them again (common_runtime/backprop.cc).
    spec.name = NewNodeName(site.name_hint.empty() ? op : site.name_hint);
    RN_ASSIGN_OR_RETURN(Value first,
                        ReserveDraws(op, inputs, attrs, spec.name, site));
    inputs.push_back(std::move(first));
    attrs["stream"] = spec.name;
    spec.op = StrCat(op, "_at");
  }
  spec.attrs = std::move(attrs);
  spec.control_inputs = std::move(control);
  for (size_t i = 0; i < inputs.size(); ++i) {
    const Value& v = inputs[i];
    // A var or state used as a tensor is read here, where the script reads
    // it; only an op's `ref` input takes the variable itself.
    const bool ref = i < def->inputs.size() && IsRefInput(def->inputs[i]);
    if (v.is_symbolic() && IsVariableNode(v.out().node) && !ref) {
      RN_ASSIGN_OR_RETURN(NodeOut r, ReadVariable(v.out().node, site.span));
      spec.inputs.push_back(r);
      continue;
    }
    RN_ASSIGN_OR_RETURN(NodeOut o, ToGraph(v, site.span));
    spec.inputs.push_back(o);
  }
  if (spec.name.empty())
    spec.name = NewNodeName(site.name_hint.empty() ? op : site.name_hint);
  RN_ASSIGN_OR_RETURN(Node * node, AddNode(std::move(spec), site, inputs));
  std::vector<Value> values;
  if (node->num_outputs() == 0) {
    values.push_back(Value::Op(node));
  } else {
    for (int i = 0; i < node->num_outputs(); ++i) {
      values.push_back(Value::Symbolic({node, i}));
    }
  }
  return values;
}

}  // namespace runnel::interp
