#include "framework/graph_def.h"

#include <algorithm>
#include <cstring>

#include "absl/container/flat_hash_map.h"
#include "base/errors.h"
#include "base/status_macros.h"
#include "base/strings.h"

namespace runnel {
void ShapeToProto(const Shape& s, proto::ShapeProto* p) {
  p->set_unknown_rank(s.unknown_rank());
  for (int64_t d : s.dims()) p->add_dim(d);
}

Shape ShapeFromProto(const proto::ShapeProto& p) {
  if (p.unknown_rank()) return Shape::UnknownRank();
  return Shape(std::vector<int64_t>(p.dim().begin(), p.dim().end()));
}

absl::StatusOr<DType> DTypeFromProto(const std::string& name) {
  std::optional<DType> d = DTypeFromName(name);
  if (!d)
    return absl::InvalidArgumentError(StrCat("unknown dtype '", name, "'"));
  return *d;
}

namespace {

proto::AttrValueProto AttrToProto(const AttrValue& v) {
  proto::AttrValueProto p;
  struct Visitor {
    proto::AttrValueProto* p;
    void operator()(int64_t i) { p->set_i(i); }
    void operator()(double f) { p->set_f(f); }
    void operator()(bool b) { p->set_b(b); }
    void operator()(const std::string& s) { p->set_s(s); }
    void operator()(DType d) { p->set_dtype(std::string(DTypeName(d))); }
    void operator()(const Shape& s) { ShapeToProto(s, p->mutable_shape()); }
    void operator()(const std::vector<int64_t>& v) {
      for (int64_t x : v) p->mutable_ints()->add_value(x);
    }
    void operator()(const Tensor& t) { *p->mutable_tensor() = ToProto(t); }
  };
  std::visit(Visitor{&p}, v);
  return p;
}

absl::StatusOr<AttrValue> AttrFromProto(const proto::AttrValueProto& p) {
  switch (p.value_case()) {
    case proto::AttrValueProto::kI:
      return AttrValue(p.i());
    case proto::AttrValueProto::kF:
      return AttrValue(p.f());
    case proto::AttrValueProto::kB:
      return AttrValue(p.b());
    case proto::AttrValueProto::kS:
      return AttrValue(p.s());
    case proto::AttrValueProto::kDtype: {
      RN_ASSIGN_OR_RETURN(DType d, DTypeFromProto(p.dtype()));
      return AttrValue(d);
    }
    case proto::AttrValueProto::kShape:
      return AttrValue(ShapeFromProto(p.shape()));
    case proto::AttrValueProto::kInts:
      return AttrValue(std::vector<int64_t>(p.ints().value().begin(),
                                            p.ints().value().end()));
    case proto::AttrValueProto::kTensor: {
      RN_ASSIGN_OR_RETURN(Tensor t, FromProto(p.tensor()));
      return AttrValue(std::move(t));
    }
    case proto::AttrValueProto::VALUE_NOT_SET:
      break;
  }
  return absl::InvalidArgumentError("attribute without a value");
}

}  // namespace

proto::TensorProto ToProto(const Tensor& t) {
  proto::TensorProto p;
  p.set_dtype(std::string(DTypeName(t.dtype())));
  ShapeToProto(t.shape(), p.mutable_shape());
  p.set_content(static_cast<const char*>(t.raw_data()), t.bytes());
  return p;
}

absl::StatusOr<Tensor> FromProto(const proto::TensorProto& p) {
  RN_ASSIGN_OR_RETURN(DType d, DTypeFromProto(p.dtype()));
  Shape s = ShapeFromProto(p.shape());
  if (!s.IsFullyDefined()) {
    return absl::InvalidArgumentError("tensor with an undefined shape");
  }
  Tensor t(d, s);
  if (p.content().size() != t.bytes()) {
    return absl::InvalidArgumentError(
        StrCat("tensor content has ", p.content().size(), " bytes, expected ",
               t.bytes(), " for ", DTypeName(d), s.ToString()));
  }
  std::memcpy(t.raw_data(), p.content().data(), t.bytes());
  return t;
}

proto::GraphDef ToGraphDef(const Graph& graph) {
  proto::GraphDef def;
  def.set_version(1);
  for (const Node* n : graph.nodes()) {
    proto::NodeDef* nd = def.add_node();
    nd->set_name(n->name());
    nd->set_op(n->op());
    for (const NodeOut& in : n->inputs()) {
      nd->add_input(StrCat(in.node->name(), ":", in.index));
    }
    for (const Node* c : n->control_inputs()) nd->add_input("^" + c->name());
    for (const auto& [name, value] : n->attrs()) {
      (*nd->mutable_attr())[name] = AttrToProto(value);
    }
    nd->set_device(n->requested_device());
    nd->set_assigned_device(n->assigned_device());
    const SourceSpan& s = n->span();
    proto::SourceSpanProto* sp = nd->mutable_span();
    sp->set_file(s.file);
    sp->set_line(s.line);
    sp->set_col(s.col);
    sp->set_end_line(s.end_line);
    sp->set_end_col(s.end_col);
  }
  return def;
}

absl::Status FromGraphDef(const proto::GraphDef& def, Graph* graph) {
  absl::flat_hash_map<std::string, const proto::NodeDef*> by_name;
  for (const proto::NodeDef& nd : def.node()) {
    if (!by_name.emplace(nd.name(), &nd).second) {
      return absl::InvalidArgumentError(
          StrCat("GraphDef has two nodes named '", nd.name(), "'"));
    }
  }
  // Depth-first so inputs are added before their consumers; loops' back
  // edges last.
  struct BackEdge {
    std::string merge;
    int input;
    std::string src;
    int index;
  };
  std::vector<BackEdge> back_edges;
  enum class Mark { kNone, kVisiting, kDone };
  absl::flat_hash_map<std::string, Mark> marks;
  std::function<absl::Status(const proto::NodeDef&)> add =
      [&](const proto::NodeDef& nd) -> absl::Status {
    Mark& m = marks[nd.name()];
    if (m == Mark::kDone) return absl::OkStatus();
    if (m == Mark::kVisiting) {
      return absl::InvalidArgumentError(
          StrCat("GraphDef has a cycle through '", nd.name(), "'"));
    }
    m = Mark::kVisiting;
    NodeSpec spec;
    spec.name = nd.name();
    spec.op = nd.op();
    spec.device = nd.device();
    spec.span = {nd.span().file(), nd.span().line(), nd.span().col(),
                 nd.span().end_line(), nd.span().end_col()};
    std::vector<int> back;  // inputs that are a loop's back edge
    for (const std::string& in : nd.input()) {
      bool control = !in.empty() && in[0] == '^';
      RN_ASSIGN_OR_RETURN(auto parsed,
                          ParseTensorName(control ? in.substr(1) : in));
      auto it = by_name.find(parsed.first);
      if (it == by_name.end()) {
        return absl::InvalidArgumentError(
            StrCat("node '", nd.name(), "' has input '", in,
                   "', which is not in the GraphDef"));
      }
      // A loop's merge takes its next_iteration, made from the body after
      // it: that edge closes the loop, and is set once the body exists.
      if (!control && nd.op() == "merge" &&
          it->second->op() == "next_iteration") {
        back.push_back(static_cast<int>(spec.inputs.size()));
        back_edges.push_back({nd.name(), static_cast<int>(spec.inputs.size()),
                              parsed.first, parsed.second});
        spec.inputs.push_back({});
        continue;
      }
      RN_RETURN_IF_ERROR(add(*it->second));
      Node* src = graph->FindNode(parsed.first);
      if (control) {
        spec.control_inputs.push_back(src);
      } else {
        spec.inputs.push_back({src, parsed.second});
      }
    }
    if (!back.empty()) {
      // Until then the merge takes its entry twice (same dtype and shape).
      auto entry = std::find_if(spec.inputs.begin(), spec.inputs.end(),
                                [](const NodeOut& o) { return o.node; });
      if (entry == spec.inputs.end()) {
        return absl::InvalidArgumentError(StrCat(
            "merge '", nd.name(), "' has no input from outside its loop"));
      }
      for (int i : back) spec.inputs[i] = *entry;
    }
    for (const auto& [name, value] : nd.attr()) {
      absl::StatusOr<AttrValue> v = AttrFromProto(value);
      if (!v.ok()) {
        return absl::InvalidArgumentError(
            StrCat("node '", nd.name(), "' attribute '", name,
                   "': ", ToStd(v.status().message())));
      }
      spec.attrs[name] = *std::move(v);
    }
    RN_ASSIGN_OR_RETURN(Node * n, graph->AddNode(std::move(spec)));
    n->set_assigned_device(nd.assigned_device());
    m = Mark::kDone;
    return absl::OkStatus();
  };
  for (const proto::NodeDef& nd : def.node()) RN_RETURN_IF_ERROR(add(nd));
  for (const BackEdge& e : back_edges) {
    RN_RETURN_IF_ERROR(graph->UpdateInput(graph->FindNode(e.merge), e.input,
                                          {graph->FindNode(e.src), e.index}));
  }
  return absl::OkStatus();
}

}  // namespace runnel
