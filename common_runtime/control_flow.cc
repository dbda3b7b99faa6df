#include "common_runtime/control_flow.h"

#include "base/errors.h"
#include "base/status_macros.h"
#include "base/strings.h"

namespace runnel {

bool IsEnter(const Node* n) { return n->op() == "enter"; }
bool IsExit(const Node* n) { return n->op() == "exit"; }
bool IsMerge(const Node* n) { return n->op() == "merge"; }
bool IsSwitch(const Node* n) { return n->op() == "switch"; }
bool IsNextIteration(const Node* n) { return n->op() == "next_iteration"; }
bool IsControlFlow(const Node* n) {
  return IsEnter(n) || IsExit(n) || IsMerge(n) || IsSwitch(n) ||
         IsNextIteration(n);
}
bool IsBackEdge(const Node* n, int input) {
  return IsMerge(n) && IsNextIteration(n->input(input).node);
}

// ---- WhileBuilder -----------------------------------------------------------

WhileBuilder::WhileBuilder(Graph* graph, NodeMaker make, ToParent to_parent,
                           std::string frame_name, std::string scope,
                           SourceSpan span, int parallel_iterations)
    : graph_(graph),
      make_(std::move(make)),
      to_parent_(std::move(to_parent)),
      frame_(std::move(frame_name)),
      scope_(std::move(scope)),
      span_(std::move(span)),
      parallel_iterations_(parallel_iterations) {}

absl::StatusOr<Node*> WhileBuilder::Make(std::string op, std::string base,
                                         std::vector<NodeOut> inputs,
                                         AttrMap attrs,
                                         std::vector<Node*> control,
                                         bool in_parent) {
  NodeSpec spec;
  spec.name = scope_.empty() ? base : StrCat(scope_, "/", base);
  spec.op = std::move(op);
  spec.inputs = std::move(inputs);
  spec.attrs = std::move(attrs);
  spec.control_inputs = std::move(control);
  spec.span = span_;
  return make_(std::move(spec), in_parent);
}

absl::StatusOr<NodeOut> WhileBuilder::Constant(int value, const char* name) {
  RN_ASSIGN_OR_RETURN(
      Node * c,
      graph_->AddConst(Tensor::ScalarOf(DType::kI32, value),
                       graph_->UniqueName(
                           StrCat(scope_.empty() ? "" : scope_ + "/", name))));
  return to_parent_({c, 0});
}

absl::StatusOr<std::vector<NodeOut>> WhileBuilder::Begin(
    const std::vector<NodeOut>& init,
    const std::vector<std::optional<Shape>>& shapes,
    const std::vector<Node*>& control) {
  RN_ASSIGN_OR_RETURN(NodeOut zero, Constant(0, "counter_start"));
  std::vector<NodeOut> vars{zero};
  vars.insert(vars.end(), init.begin(), init.end());
  std::vector<NodeOut> tops;
  for (size_t k = 0; k < vars.size(); ++k) {
    AttrMap attrs{{"frame_name", frame_},
                  {"parallel_iterations", int64_t{parallel_iterations_}}};
    if (k == 0) {
      attrs["_loop_counter"] = true;
      for (const auto& [name, value] : counter_attrs_) attrs[name] = value;
    }
    RN_ASSIGN_OR_RETURN(Node * enter,
                        Make("enter", "enter", {vars[k]}, attrs, control));
    AttrMap merge_attrs;
    if (k > 0 && shapes[k - 1]) merge_attrs["shape"] = *shapes[k - 1];
    RN_ASSIGN_OR_RETURN(Node * merge,
                        Make("merge", "merge", {{enter, 0}, {enter, 0}},
                             std::move(merge_attrs)));
    merges_.push_back(merge);
    tops.push_back({merge, 0});
  }
  return tops;
}

absl::StatusOr<std::vector<NodeOut>> WhileBuilder::Condition(NodeOut pred) {
  RN_ASSIGN_OR_RETURN(Node * cond, Make("loop_cond", "loop_cond", {pred}));
  for (Node* merge : merges_) {
    RN_ASSIGN_OR_RETURN(Node * sw,
                        Make("switch", "switch", {{merge, 0}, {cond, 0}}));
    switches_.push_back(sw);
    RN_ASSIGN_OR_RETURN(Node * in, Make("identity", "body", {{sw, 1}}));
    body_.push_back({in, 0});
  }
  pivot_ = body_[0].node;
  return body_;
}

absl::StatusOr<std::vector<NodeOut>> WhileBuilder::Finish(
    const std::vector<NodeOut>& next, const std::vector<Node*>& effects) {
  RN_ASSIGN_OR_RETURN(NodeOut one, Constant(1, "counter_step"));
  RN_ASSIGN_OR_RETURN(NodeOut step, EnterInvariant(one));
  RN_ASSIGN_OR_RETURN(Node * inc,
                      Make("add", "counter_next", {body_[0], step}));
  std::vector<NodeOut> values{{inc, 0}};
  values.insert(values.end(), next.begin(), next.end());
  std::vector<NodeOut> exits;
  for (size_t k = 0; k < values.size(); ++k) {
    RN_ASSIGN_OR_RETURN(
        Node * ni, Make("next_iteration", "next_iteration", {values[k]}, {},
                        k == 0 ? effects : std::vector<Node*>{}));
    if (k == 0) counter_next_ = ni;
    RN_RETURN_IF_ERROR(graph_->UpdateInput(merges_[k], 1, {ni, 0}));
    RN_ASSIGN_OR_RETURN(Node * exit, Make("exit", "exit", {{switches_[k], 0}},
                                          {}, {}, /*in_parent=*/true));
    exits.push_back({exit, 0});
  }
  return exits;
}

absl::Status WhileBuilder::EnterTripCount(NodeOut n) {
  return Make("enter", "trip_count", {n},
              {{"frame_name", frame_},
               {"is_constant", true},
               {"_trip_count", true},
               {"parallel_iterations", int64_t{parallel_iterations_}}})
      .status();
}

absl::StatusOr<NodeOut> WhileBuilder::EnterInvariant(NodeOut v) {
  auto it = invariants_.find(v);
  if (it != invariants_.end()) return it->second;
  RN_ASSIGN_OR_RETURN(
      Node * enter,
      Make("enter", "enter", {v},
           {{"frame_name", frame_},
            {"is_constant", true},
            {"parallel_iterations", int64_t{parallel_iterations_}}}));
  invariants_[v] = {enter, 0};
  return NodeOut{enter, 0};
}

// ---- FrameMap ---------------------------------------------------------------

absl::StatusOr<FrameMap> FrameMap::Build(const Graph& graph) {
  FrameMap m;
  // Creation order visits every input before its consumer, except a
  // loop's back edge, which frames ignore (merge takes its enter's frame).
  for (Node* n : graph.nodes()) {
    for (int i = 0; i < n->num_inputs(); ++i) {
      m.consumers_[n->input(i).node].push_back({n, i});
    }
    std::string frame;
    if (n->num_inputs() > 0) {
      frame = m.frame_of(n->input(0).node);
    } else if (!n->control_inputs().empty()) {
      frame = m.frame_of(n->control_inputs()[0]);
    }
    if (IsEnter(n)) {
      RN_ASSIGN_OR_RETURN(std::string child,
                          n->attr<std::string>("frame_name"));
      m.parent_[child] = frame;
      Loop& loop = m.loops_[child];
      loop.enters.push_back(n);
      if (n->attrs().contains("_loop_counter")) loop.counter_enter = n;
      frame = child;
    } else if (IsExit(n)) {
      m.loops_[frame].exits.push_back(n);
      frame = m.parent_of(frame);
    }
    m.frame_[n] = std::move(frame);
  }
  // The counter: enter -> merge -> switch -> (exit, identity -> add ->
  // next_iteration).
  for (auto& [name, loop] : m.loops_) {
    if (loop.counter_enter == nullptr) continue;
    for (auto [merge, i] : m.consumers(loop.counter_enter)) {
      if (!IsMerge(merge)) continue;
      loop.counter_next = merge->input(1).node;
      for (auto [sw, j] : m.consumers(merge)) {
        if (!IsSwitch(sw)) continue;
        for (auto [c, k] : m.consumers(sw)) {
          if (IsExit(c)) loop.counter_exit = c;
          if (c->op() == "identity") loop.counter_body = c;
        }
      }
    }
  }
  return m;
}

const std::string& FrameMap::frame_of(const Node* n) const {
  static const std::string* root = new std::string;
  auto it = frame_.find(n);
  return it == frame_.end() ? *root : it->second;
}

const std::string& FrameMap::parent_of(const std::string& frame) const {
  static const std::string* root = new std::string;
  auto it = parent_.find(frame);
  return it == parent_.end() ? *root : it->second;
}

void FrameMap::set(const Node* n, std::string frame) {
  frame_[n] = std::move(frame);
}

const FrameMap::Loop* FrameMap::loop(const std::string& frame) const {
  auto it = loops_.find(frame);
  return it == loops_.end() ? nullptr : &it->second;
}

const std::vector<std::pair<Node*, int>>& FrameMap::consumers(
    const Node* n) const {
  static const auto* none = new std::vector<std::pair<Node*, int>>;
  auto it = consumers_.find(n);
  return it == consumers_.end() ? *none : it->second;
}

}  // namespace runnel
