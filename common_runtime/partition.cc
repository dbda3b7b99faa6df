#include "common_runtime/partition.h"

#include <algorithm>
#include <tuple>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "base/errors.h"
#include "base/status_macros.h"
#include "base/strings.h"
#include "common_runtime/control_flow.h"

namespace runnel {
namespace {

constexpr int64_t kMinF16Elements = 1024;

class Partitioner {
 public:
  Partitioner(const Graph& graph, const PartitionOptions& options)
      : graph_(graph), options_(options), copy_of_(graph.num_nodes()) {}

  absl::StatusOr<std::vector<GraphPartition>> Run() {
    RN_ASSIGN_OR_RETURN(frames_, FrameMap::Build(graph_));
    std::vector<std::tuple<const Node*, int, NodeOut>> back_edges;
    for (const Node* n : graph_.nodes()) {
      if (n->assigned_device().empty()) {
        return AttachNode(absl::InternalError(StrCat(
                              "'", n->name(), "' has no device assigned")),
                          n->name(), n->span());
      }
      const int p = Part(n->assigned_device());
      const std::string& frame = frames_.frame_of(n);
      // Every device with nodes of a loop runs the loop's iterations.
      if (!frame.empty())
        RN_RETURN_IF_ERROR(Control(frame, p, n->span()).status());
      NodeSpec spec = n->SpecWithoutInputs();
      for (int i = 0; i < n->num_inputs(); ++i) {
        const NodeOut& in = n->input(i);
        if (copy_of_[in.node->id()] == nullptr) {  // a loop's back edge
          back_edges.emplace_back(n, i, in);
          spec.inputs.push_back(spec.inputs.front());
          continue;
        }
        RN_ASSIGN_OR_RETURN(NodeOut m, Transfer(in, p));
        spec.inputs.push_back(m);
      }
      for (const Node* c : n->control_inputs()) {
        RN_ASSIGN_OR_RETURN(Node * m, ControlTransfer(c, p));
        spec.control_inputs.push_back(m);
      }
      RN_ASSIGN_OR_RETURN(copy_of_[n->id()], Add(p, std::move(spec)));
    }
    for (auto& [n, i, in] : back_edges) {
      if (in.node->assigned_device() != n->assigned_device()) {
        return AttachNode(
            absl::UnimplementedError(
                StrCat("a loop's back edge crosses devices ('", in.node->name(),
                       "' on ", in.node->assigned_device(), ", '", n->name(),
                       "' on ", n->assigned_device(), ")")),
            n->name(), n->span());
      }
      const int p = Part(n->assigned_device());
      RN_RETURN_IF_ERROR(parts_[p].graph->UpdateInput(
          copy_of_[n->id()], i, {copy_of_[in.node->id()], in.index}));
    }
    // Each copy of a loop's control takes the loop's condition.
    for (const auto& [frame, p, main, cond, span] : condition_sends_) {
      const std::string edge = StrCat(cond->name(), ":0");
      RN_RETURN_IF_ERROR(
          Add(main, {.name = Name(edge, p, "send"),
                     .op = "_send",
                     .inputs = {{copy_of_[cond->id()], 0}},
                     .attrs = {{"edge", edge},
                               {"send_device", parts_[main].device},
                               {"recv_device", parts_[p].device}},
                     .span = span})
              .status());
      ++parts_[main].num_sends;
    }
    return std::move(parts_);
  }

 private:
  int Part(const std::string& device) {
    auto [it, fresh] =
        part_of_.emplace(device, static_cast<int>(parts_.size()));
    if (fresh) parts_.push_back({device, std::make_shared<Graph>()});
    return it->second;
  }

  absl::StatusOr<Node*> Add(int p, NodeSpec spec) {
    RN_ASSIGN_OR_RETURN(Node * n, parts_[p].graph->AddNode(std::move(spec)));
    n->set_assigned_device(parts_[p].device);
    return n;
  }

  // `in` as seen from partition p: itself, or the output of the _recv of
  // a pair made the first time p needs it.
  absl::StatusOr<NodeOut> Transfer(const NodeOut& in, int p) {
    const int src = Part(in.node->assigned_device());
    const NodeOut local{copy_of_[in.node->id()], in.index};
    if (src == p) return local;
    auto key = std::make_tuple(in.node->id(), in.index, p);
    auto it = recv_of_.find(key);
    if (it != recv_of_.end()) return it->second;
    if (in.node->op() == "const" && in.node->control_inputs().empty()) {
      // A constant is copied, not sent: cheaper, and never rounded by an
      // f16 transfer (an eps of 1e-8 would become 0).
      RN_ASSIGN_OR_RETURN(Node * c,
                          Add(p, {.name = Name(in.node->name(), p, "copy"),
                                  .op = "const",
                                  .attrs = in.node->attrs(),
                                  .span = in.node->span()}));
      recv_of_.emplace(key, NodeOut{c, 0});
      return NodeOut{c, 0};
    }
    const DType dtype = in.node->output_dtype(in.index);
    // Small tensors (scalars, biases, an optimizer's step factors) cross in
    // full precision: f16 would save little and could round a tiny value
    // (a denominator's eps) to zero.
    const int64_t elements = in.node->output_shape(in.index).num_elements();
    const bool cast = options_.f16_transfers && dtype == DType::kF32 &&
                      (elements < 0 || elements >= kMinF16Elements);
    const std::string edge = StrCat(in.node->name(), ":", in.index);
    NodeOut value = local;
    if (cast) {
      RN_ASSIGN_OR_RETURN(Node * c, Add(src, {.name = Name(edge, p, "to_f16"),
                                              .op = "cast",
                                              .inputs = {local},
                                              .attrs = {{"dtype", DType::kF16}},
                                              .span = in.node->span()}));
      value = {c, 0};
    }
    RN_ASSIGN_OR_RETURN(NodeOut out,
                        Pair(edge, src, p, value, cast ? DType::kF16 : dtype,
                             in.node->output_shape(in.index),
                             frames_.frame_of(in.node), in.node->span()));
    if (cast) {
      RN_ASSIGN_OR_RETURN(Node * c, Add(p, {.name = Name(edge, p, "to_f32"),
                                            .op = "cast",
                                            .inputs = {out},
                                            .attrs = {{"dtype", DType::kF32}},
                                            .span = in.node->span()}));
      out = {c, 0};
    }
    recv_of_.emplace(key, out);
    return out;
  }

  // A control edge from `c` into partition p: a placeholder scalar that
  // runs after c on c's device, sent to p.
  absl::StatusOr<Node*> ControlTransfer(const Node* c, int p) {
    const int src = Part(c->assigned_device());
    if (src == p) return copy_of_[c->id()];
    auto key = std::make_tuple(c->id(), -1, p);
    auto it = recv_of_.find(key);
    if (it != recv_of_.end()) return it->second.node;
    const std::string edge = StrCat(c->name(), ":control");
    RN_ASSIGN_OR_RETURN(
        Node * token,
        Add(src, {.name = Name(edge, p, "token"),
                  .op = "const",
                  .control_inputs = {copy_of_[c->id()]},
                  .attrs = {{"value", Tensor::Scalar<int32_t>(0)}},
                  .span = c->span()}));
    RN_ASSIGN_OR_RETURN(NodeOut out,
                        Pair(edge, src, p, {token, 0}, DType::kI32, Shape{},
                             frames_.frame_of(c), c->span()));
    recv_of_.emplace(key, out);
    return out.node;
  }

  // A _send in `src` and its _recv in `dst`. In a loop's frame the
  // receive runs once per iteration, the last (where the condition fails)
  // included, as every node of the frame does: a control input from the
  // loop's merge on `dst` puts it there.
  absl::StatusOr<NodeOut> Pair(const std::string& edge, int src, int dst,
                               NodeOut value, DType dtype, const Shape& shape,
                               const std::string& frame,
                               const SourceSpan& span) {
    std::vector<Node*> control;
    if (!frame.empty()) {
      RN_ASSIGN_OR_RETURN(LoopControl loop, Control(frame, dst, span));
      control.push_back(loop.merge);
    }
    AttrMap ends = {{"edge", edge},
                    {"send_device", parts_[src].device},
                    {"recv_device", parts_[dst].device}};
    AttrMap send_attrs = ends;
    RN_RETURN_IF_ERROR(Add(src, {.name = Name(edge, dst, "send"),
                                 .op = "_send",
                                 .inputs = {value},
                                 .attrs = std::move(send_attrs),
                                 .span = span})
                           .status());
    AttrMap recv_attrs = std::move(ends);
    recv_attrs.insert({{"dtype", dtype}, {"shape", shape}});
    RN_ASSIGN_OR_RETURN(Node * recv, Add(dst, {.name = Name(edge, dst, "recv"),
                                               .op = "_recv",
                                               .control_inputs = control,
                                               .attrs = std::move(recv_attrs),
                                               .span = span}));
    ++parts_[src].num_sends;
    ++parts_[dst].num_recvs;
    return NodeOut{recv, 0};
  }

  // A loop's merge on partition p (live in every iteration) and its pivot
  // (live in those that run the body): the loop's own on its device; on
  // another, those of a copy of the loop's control made for p, whose switch
  // takes, each iteration, the loop condition sent from the loop's device
  // (added at the end, once the condition exists), so both stop together.
  struct LoopControl {
    Node* merge = nullptr;
    Node* pivot = nullptr;
  };
  absl::StatusOr<LoopControl> Control(const std::string& frame, int p,
                                      const SourceSpan& span) {
    const FrameMap::Loop* loop = frames_.loop(frame);
    if (loop == nullptr || loop->counter_body == nullptr) {
      return absl::InternalError(StrCat("loop '", frame, "' has no counter"));
    }
    const Node* pivot = loop->counter_body;
    const Node* sw = pivot->input(0).node;
    const int main = Part(pivot->assigned_device());
    if (p == main) {
      return LoopControl{copy_of_[sw->input(0).node->id()],
                         copy_of_[pivot->id()]};
    }
    auto key = std::make_pair(frame, p);
    auto it = loops_.find(key);
    if (it != loops_.end()) return it->second;
    // A nested loop's copy starts once per iteration of the enclosing
    // loop that runs its body on p: its seed hangs off that loop's pivot
    // there (a copy of the enclosing control first, if p has none yet).
    // The frame ids of the runs agree across devices, since each is made
    // from the frame's name and the parent's id and iteration.
    std::vector<Node*> seed_control;
    if (const std::string& parent = frames_.parent_of(frame); !parent.empty()) {
      RN_ASSIGN_OR_RETURN(LoopControl outer, Control(parent, p, span));
      seed_control.push_back(outer.pivot);
    }
    const Node* cond = sw->input(1).node;  // loop_cond
    const std::string base = StrCat("_loop_control/", frame, "/to_", p, "/");
    RN_ASSIGN_OR_RETURN(
        Node * seed, Add(p, {.name = base + "seed",
                             .op = "const",
                             .control_inputs = std::move(seed_control),
                             .attrs = {{"value", Tensor::Scalar<int32_t>(0)}},
                             .span = span}));
    AttrMap enter_attrs = loop->counter_enter->attrs();
    enter_attrs.erase("_loop_counter");
    RN_ASSIGN_OR_RETURN(Node * enter, Add(p, {.name = base + "enter",
                                              .op = "enter",
                                              .inputs = {{seed, 0}},
                                              .attrs = std::move(enter_attrs),
                                              .span = span}));
    RN_ASSIGN_OR_RETURN(Node * merge,
                        Add(p, {.name = base + "merge",
                                .op = "merge",
                                .inputs = {{enter, 0}, {enter, 0}},
                                .span = span}));
    const std::string edge = StrCat(cond->name(), ":0");
    RN_ASSIGN_OR_RETURN(Node * pred,
                        Add(p, {.name = Name(edge, p, "recv"),
                                .op = "_recv",
                                .control_inputs = {merge},
                                .attrs = {{"edge", edge},
                                          {"send_device", parts_[main].device},
                                          {"recv_device", parts_[p].device},
                                          {"dtype", DType::kBool},
                                          {"shape", Shape{}}},
                                .span = span}));
    ++parts_[p].num_recvs;
    condition_sends_.emplace_back(frame, p, main, cond, span);
    RN_ASSIGN_OR_RETURN(Node * s, Add(p, {.name = base + "switch",
                                          .op = "switch",
                                          .inputs = {{merge, 0}, {pred, 0}},
                                          .span = span}));
    RN_ASSIGN_OR_RETURN(Node * body, Add(p, {.name = base + "pivot",
                                             .op = "identity",
                                             .inputs = {{s, 1}},
                                             .span = span}));
    RN_ASSIGN_OR_RETURN(Node * next, Add(p, {.name = base + "next",
                                             .op = "next_iteration",
                                             .inputs = {{body, 0}},
                                             .span = span}));
    RN_RETURN_IF_ERROR(parts_[p].graph->UpdateInput(merge, 1, {next, 0}));
    RN_RETURN_IF_ERROR(Add(p, {.name = base + "exit",
                               .op = "exit",
                               .inputs = {{s, 0}},
                               .span = span})
                           .status());
    LoopControl made{merge, body};
    loops_.emplace(key, made);
    return made;
  }

  // "_send/layer1/h:0/to_1": unique per edge, receiving partition and role.
  static std::string Name(const std::string& edge, int dst,
                          std::string_view role) {
    // No ':' in node names: "node:index" names tensors (GraphDef inputs).
    std::string e = edge;
    std::replace(e.begin(), e.end(), ':', '.');
    return StrCat("_", role, "/", e, "/to_", dst);
  }

  const Graph& graph_;
  const PartitionOptions& options_;
  std::vector<Node*> copy_of_;
  std::vector<GraphPartition> parts_;
  absl::flat_hash_map<std::string, int> part_of_;
  absl::flat_hash_map<std::tuple<int, int, int>, NodeOut> recv_of_;
  FrameMap frames_;
  absl::flat_hash_map<std::pair<std::string, int>, LoopControl> loops_;
  std::vector<std::tuple<std::string, int, int, const Node*, SourceSpan>>
      condition_sends_;
};

}  // namespace

absl::StatusOr<std::vector<GraphPartition>> PartitionGraph(
    const Graph& graph, const PartitionOptions& options) {
  return Partitioner(graph, options).Run();
}

}  // namespace runnel
