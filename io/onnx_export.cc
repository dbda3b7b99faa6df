#include "io/onnx_export.h"

#include <algorithm>
#include <cstring>
#include <functional>
#include <limits>
#include <map>
#include <optional>
#include <set>

#include "absl/container/flat_hash_map.h"
#include "base/atomic_file.h"
#include "base/status_macros.h"
#include "base/strings.h"
#include "framework/ops/kernel_checks.h"
#include "framework/window.h"
#include "io/onnx.pb.h"
#include "io/onnx_types.h"

namespace runnel {
namespace {

constexpr int64_t kOpset = 17;
constexpr int64_t kIrVersion = 8;  // the IR of opset 17

void SetTensor(const Tensor& t, const std::string& name, onnx::TensorProto* p) {
  p->set_name(name);
  p->set_data_type(OnnxType(t.dtype()));
  for (int64_t d : t.shape().dims()) p->add_dims(d);
  // Little-endian bytes in the element type's size, as raw_data holds them
  // (bool: one byte each).
  p->set_raw_data(
      std::string(static_cast<const char*>(t.raw_data()), t.bytes()));
}

// A node's attributes.
void SetInt(onnx::NodeProto* p, const std::string& name, int64_t v) {
  onnx::AttributeProto* a = p->add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto::INT);
  a->set_i(v);
}
void SetInts(onnx::NodeProto* p, const std::string& name,
             const std::vector<int64_t>& v) {
  onnx::AttributeProto* a = p->add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto::INTS);
  for (int64_t x : v) a->add_ints(x);
}
void SetFloat(onnx::NodeProto* p, const std::string& name, double v) {
  onnx::AttributeProto* a = p->add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto::FLOAT);
  a->set_f(static_cast<float>(v));
}
void SetString(onnx::NodeProto* p, const std::string& name,
               const std::string& v) {
  onnx::AttributeProto* a = p->add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto::STRING);
  a->set_s(v);
}

class Exporter {
 public:
  explicit Exporter(const TensorMap& variables) : variables_(variables) {
    main_ = g_ = model_.mutable_graph();
  }

  absl::Status Run(const std::vector<OnnxExportFetch>& fetches,
                   const std::string& path);

  // The ONNX name of a Runnel value.
  std::string Name(NodeOut v) const {
    auto it = alias_.find(v);
    if (it != alias_.end()) return it->second;
    std::string name =
        v.index == 0 ? v.node->name() : StrCat(v.node->name(), ":", v.index);
    // A fetch's name is its output's: another value of that name moves.
    auto f = fetch_names_.find(name);
    if (f != fetch_names_.end() && !(f->second == v)) name += "/value";
    return name;
  }
  std::string In(const Node& n, int i) const { return Name(n.input(i)); }
  std::string Out(const Node& n, int i = 0) const { return Name(Of(n, i)); }
  void Alias(const Node& n, int i, std::string name) {
    alias_[Of(n, i)] = std::move(name);
  }
  // NodeOut holds a mutable Node*; the exporter only reads through it.
  static NodeOut Of(const Node& n, int i) {
    return NodeOut{const_cast<Node*>(&n), i};
  }

  // Adds a node; `suffix` distinguishes the helper nodes of one Runnel node.
  onnx::NodeProto* Add(const Node& n, const std::string& op,
                       const std::vector<std::string>& inputs,
                       const std::vector<std::string>& outputs,
                       const std::string& suffix = "") {
    onnx::NodeProto* p = g_->add_node();
    p->set_op_type(op);
    p->set_name(suffix.empty() ? n.name() : StrCat(n.name(), "/", suffix));
    for (const std::string& i : inputs) p->add_input(i);
    for (const std::string& o : outputs) p->add_output(o);
    return p;
  }
  // A helper value's name.
  std::string Temp(const Node& n, const std::string& what) {
    return StrCat(n.name(), "/", what);
  }
  std::string Initializer(const Tensor& t, const std::string& name) {
    if (initialized_.insert(name).second)
      SetTensor(t, name, main_->add_initializer());
    return name;
  }
  // Input `i` cast to ONNX type `to` (a new name), or as it is when it
  // has that type.
  std::string Cast(const Node& n, int i, int to) {
    if (OnnxType(n.input_dtype(i)) == to) return In(n, i);
    const std::string name = Temp(n, StrCat("input", i));
    SetInt(Add(n, "Cast", {In(n, i)}, {name}, StrCat("cast", i)), "to", to);
    return name;
  }
  std::string Ints(const Node& n, const std::string& what,
                   const std::vector<int64_t>& v) {
    return Initializer(Tensor::FromVector(v), Temp(n, what));
  }
  absl::Status Refuse(const Node& n, const std::string& what) const {
    std::string where = n.span().ToString();
    return absl::UnimplementedError(StrCat(where.empty() ? "" : where + ": ",
                                           "cannot export '", n.name(), "' (",
                                           n.op(), "): ", what));
  }
  void Input(const Node& n, const std::string& name) {
    onnx::ValueInfoProto* in = g_->add_input();
    Describe(n.output(0), name, in);
  }
  static void Describe(const TensorSpec& spec, const std::string& name,
                       onnx::ValueInfoProto* info) {
    info->set_name(name);
    onnx::TypeProto::Tensor* t = info->mutable_type()->mutable_tensor_type();
    t->set_elem_type(OnnxType(spec.dtype));
    if (spec.shape.unknown_rank()) return;
    onnx::TensorShapeProto* shape = t->mutable_shape();
    for (int64_t d : spec.shape.dims()) {
      auto* dim = shape->add_dim();
      if (d >= 0) dim->set_dim_value(d);
    }
  }
  const TensorMap& variables() const { return variables_; }

 private:
  absl::Status Node_(const Node& n);
  absl::Status FindFrames(const std::vector<const Node*>& order);
  absl::Status FindConds(const std::vector<const Node*>& order);
  absl::Status Ensure(const Node* n);
  absl::Status If(const std::string& pred,
                  const std::vector<const Node*>& order);
  absl::Status Loop(const std::string& frame,
                    const std::vector<const Node*>& order);
  void PruneInitializers();

  const TensorMap& variables_;
  onnx::ModelProto model_;
  onnx::GraphProto* main_;  // the model's graph
  onnx::GraphProto* g_;     // where nodes go: the main graph or a body
  // Each node inside an in-graph loop, with the loop's frame name, and
  // each loop's frame with the frame of the loop around it ("" for none).
  std::map<const Node*, std::string> frame_of_;
  std::map<std::string, std::string> parent_frame_;
  // Each node inside a branch of an in-graph conditional: the name of its
  // predicate's value, and the branch (1 then, 0 else). A conditional's
  // switches and merges are its by the predicate too.
  std::map<const Node*, std::pair<std::string, int>> branch_of_;
  std::map<const Node*, std::string> cond_of_;
  // Each conditional inside a branch of another, by their predicates.
  std::map<std::string, std::string> cond_parent_;
  // Each loop inside a conditional's branch (its frame), with the branch.
  std::map<std::string, std::pair<std::string, int>> frame_branch_;
  // The conditional whose branch a loop (or a loop around it) is in: its
  // predicate, or "".
  std::string CondOfFrame(std::string frame) const;
  // The nodes of op `op` that `where` maps to `name`: a loop's enters
  // (frame_of_, its frame), a conditional's switches (cond_of_, its
  // predicate); a Loop or If goes after what they read.
  std::vector<const Node*> NodesOf(
      const std::string& op, const std::map<const Node*, std::string>& where,
      const std::string& name) const;

  std::set<const Node*> emitted_;
  const std::vector<const Node*>* order_ = nullptr;  // the fetches' nodes
  absl::flat_hash_map<NodeOut, std::string> alias_;
  std::set<std::string> initialized_;
  std::set<std::string> seen_names_;  // the values' names
  std::map<std::string, NodeOut> fetch_names_;
};

using Emit = std::function<absl::Status(Exporter&, const Node&)>;

// An op's `axis` attribute as a list; empty (every axis) when absent.
absl::StatusOr<std::vector<int64_t>> Axes(const Node& n) {
  if (n.attrs().find("axis") == n.attrs().end()) return std::vector<int64_t>{};
  return n.attr<std::vector<int64_t>>("axis");
}

// An NHWC (NDHWC) image op as ONNX's NCHW (NCDHW) one: transposes in and
// out.
absl::Status Windowed(Exporter& e, const Node& n, const std::string& op,
                      const std::string& filters) {
  // The attributes as the op's own shape function and kernels read them.
  const int spatial = WindowRank(n.op());
  const bool three = spatial == 3;
  HW size, strides, dilations;
  bool same = false;
  if (op == "Conv") {
    absl::StatusOr<ConvAttrs> conv = ReadConvAttrs(n.attrs(), spatial);
    if (!conv.ok()) return e.Refuse(n, std::string(conv.status().message()));
    strides = conv->strides;
    dilations = conv->dilations;
    same = conv->same;
  } else {
    absl::StatusOr<PoolAttrs> pool = ReadPoolAttrs(n.attrs(), spatial);
    if (!pool.ok()) return e.Refuse(n, std::string(pool.status().message()));
    size = pool->size;
    strides = pool->strides;
    same = pool->same;
    dilations = pool->dilations;
    if (op == "AveragePool" && dilations != HW{}) {
      return e.Refuse(n, StrCat("dilations (ONNX's AveragePool has them from "
                                "opset 19; exports are opset ",
                                kOpset, ")"));
    }
  }
  // ONNX's spatial lists: [h, w], or [d, h, w].
  auto list = [&](const HW& v) {
    return three ? std::vector<int64_t>{v.d, v.h, v.w}
                 : std::vector<int64_t>{v.h, v.w};
  };
  const std::string x = e.Temp(n, "nchw");
  SetInts(e.Add(n, "Transpose", {e.In(n, 0)}, {x}, "to_nchw"), "perm",
          three ? std::vector<int64_t>{0, 4, 1, 2, 3}
                : std::vector<int64_t>{0, 3, 1, 2});
  std::vector<std::string> inputs = {x};
  if (!filters.empty()) inputs.push_back(filters);
  const std::string y = e.Temp(n, "y_nchw");
  onnx::NodeProto* p = e.Add(n, op, inputs, {y}, StrCat(op));
  if (op != "Conv" && same && dilations != HW{}) {
    // ONNX Runtime's SAME_UPPER leaves a pool's dilations out of its
    // padding: the pads, written out.
    const Shape& xs = n.input(0).node->output(n.input(0).index).shape;
    if (xs.unknown_rank() || xs.rank() != spatial + 2) {
      return e.Refuse(n,
                      "\"same\" padding with dilations on an input of "
                      "unknown rank");
    }
    const std::vector<int64_t> k = list(size), st = list(strides),
                               dil = list(dilations);
    std::vector<int64_t> begins, ends;
    for (int i = 0; i < spatial; ++i) {
      if (xs.dim(1 + i) < 0) {
        return e.Refuse(n,
                        "\"same\" padding with dilations on a spatial size "
                        "not known");
      }
      absl::StatusOr<Windows> w =
          PlaceWindows(xs.dim(1 + i), k[i], st[i], dil[i], true, "window");
      if (!w.ok()) return e.Refuse(n, std::string(w.status().message()));
      begins.push_back(w->pad_begin);
      ends.push_back(w->pad_end);
    }
    begins.insert(begins.end(), ends.begin(), ends.end());
    SetInts(p, "pads", begins);
  } else {
    SetString(p, "auto_pad", same ? "SAME_UPPER" : "VALID");
  }
  if (op == "Conv" || dilations != HW{}) {
    SetInts(p, "dilations", list(dilations));
  }
  if (op != "Conv") {
    SetInts(p, "kernel_shape", list(size));
    if (op == "AveragePool") SetInt(p, "count_include_pad", 0);
  }
  SetInts(p, "strides", list(strides));
  SetInts(e.Add(n, "Transpose", {y}, {e.Out(n)}, "to_nhwc"), "perm",
          three ? std::vector<int64_t>{0, 2, 3, 4, 1}
                : std::vector<int64_t>{0, 2, 3, 1});
  return absl::OkStatus();
}

// The spatial sizes of a transposed convolution's output (`spatial` of
// them): the first operand's shape, or, where it is not known while
// exporting, the constant tail of the shape the builtins conv2d_transpose
// and conv3d_transpose fill it with: fill(concat([batch, [sizes...,
// channels]])). -1 where neither says.
std::vector<int64_t> TransposedSizes(const Node& n, int spatial) {
  const Node& like = *n.input(0).node;
  const Shape& s = like.output(n.input(0).index).shape;
  std::vector<int64_t> out(spatial, -1);
  if (!s.unknown_rank() && s.rank() == spatial + 2) {
    for (int i = 0; i < spatial; ++i) out[i] = s.dim(1 + i);
  }
  if (like.op() != "fill") return out;
  const Node& shape = *like.input(0).node;
  if (shape.op() != "concat" || shape.num_inputs() != 2) return out;
  const Node& tail = *shape.input(1).node;
  if (tail.op() != "const" || tail.constant_value() == nullptr) return out;
  const std::vector<int64_t> v = tail.constant_value()->ToInt64s();
  if (static_cast<int>(v.size()) != spatial + 1) return out;
  for (int i = 0; i < spatial; ++i) {
    if (out[i] < 0) out[i] = v[i];
  }
  return out;
}

// conv2d_backprop_input and conv3d_backprop_input (conv2d_transpose and
// conv3d_transpose): an ONNX ConvTranspose of dy with the forward
// convolution's filters as (O, I, kernel...), the forward's padding as its
// pads, and output_padding making up what the forward's floor dropped, so
// that its output has the shape of the first operand, which must be known.
absl::Status TransposedConv(Exporter& e, const Node& n) {
  const int spatial = WindowRank(n.op());
  const bool three = spatial == 3;
  absl::StatusOr<ConvAttrs> conv = ReadConvAttrs(n.attrs(), spatial);
  if (!conv.ok()) return e.Refuse(n, std::string(conv.status().message()));
  const Shape& f = n.input(1).node->output(n.input(1).index).shape;
  const Shape& dy = n.input(2).node->output(n.input(2).index).shape;
  const int rank = spatial + 2;
  if (f.unknown_rank() || dy.unknown_rank() || f.rank() != rank ||
      dy.rank() != rank) {
    return e.Refuse(n, "a transposed convolution of unknown rank");
  }
  const std::vector<int64_t> sizes = TransposedSizes(n, spatial);
  const int64_t st[3] = {conv->strides.d, conv->strides.h, conv->strides.w};
  const int64_t dil[3] = {conv->dilations.d, conv->dilations.h,
                          conv->dilations.w};
  std::vector<int64_t> strides, dilations, begins, ends, opad;
  for (int i = 0; i < spatial; ++i) {
    const int j = i + 3 - spatial;  // d, h, w
    const int64_t out = sizes[i], in = dy.dim(1 + i), k = f.dim(i);
    if (out < 0 || in < 0 || k < 0) {
      return e.Refuse(n,
                      "a transposed convolution whose output's or input's "
                      "spatial size is not known while exporting");
    }
    // The forward convolution's windows over the output.
    absl::StatusOr<Windows> w =
        PlaceWindows(out, k, st[j], dil[j], conv->same, "filter");
    if (!w.ok()) return e.Refuse(n, std::string(w.status().message()));
    const int64_t full =
        st[j] * (in - 1) + (k - 1) * dil[j] + 1 - w->pad_begin - w->pad_end;
    if (out < full || out - full >= std::max(st[j], dil[j])) {
      return e.Refuse(n, StrCat("a transposed convolution to size ", out,
                                " where the windows give ", full));
    }
    strides.push_back(st[j]);
    dilations.push_back(dil[j]);
    begins.push_back(w->pad_begin);
    ends.push_back(w->pad_end);
    opad.push_back(out - full);
  }
  begins.insert(begins.end(), ends.begin(), ends.end());
  const std::vector<int64_t> to_first =
      three ? std::vector<int64_t>{0, 4, 1, 2, 3}
            : std::vector<int64_t>{0, 3, 1, 2};
  const std::vector<int64_t> to_last = three
                                           ? std::vector<int64_t>{0, 2, 3, 4, 1}
                                           : std::vector<int64_t>{0, 2, 3, 1};
  const std::string xin = e.Temp(n, "nchw");
  SetInts(e.Add(n, "Transpose", {e.In(n, 2)}, {xin}, "to_nchw"), "perm",
          to_first);
  // HWIO (the forward's) as (O, I, H, W): ConvTranspose's (C_in, C_out).
  const std::string w = e.Temp(n, "filters");
  SetInts(e.Add(n, "Transpose", {e.In(n, 1)}, {w}, "filters_to_oihw"), "perm",
          three ? std::vector<int64_t>{4, 3, 0, 1, 2}
                : std::vector<int64_t>{3, 2, 0, 1});
  const std::string y = e.Temp(n, "y_nchw");
  onnx::NodeProto* p = e.Add(n, "ConvTranspose", {xin, w}, {y}, "conv");
  SetInts(p, "strides", strides);
  SetInts(p, "dilations", dilations);
  SetInts(p, "pads", begins);
  SetInts(p, "output_padding", opad);
  SetInts(e.Add(n, "Transpose", {y}, {e.Out(n)}, "to_nhwc"), "perm", to_last);
  return absl::OkStatus();
}

const std::map<std::string, Emit>& Table() {
  static const auto* table = [] {
    auto* t = new std::map<std::string, Emit>;
    auto simple = [t](const std::string& op, const std::string& onnx_op) {
      (*t)[op] = [onnx_op](Exporter& e, const Node& n) {
        std::vector<std::string> ins;
        for (int i = 0; i < n.num_inputs(); ++i) ins.push_back(e.In(n, i));
        e.Add(n, onnx_op, ins, {e.Out(n)});
        return absl::OkStatus();
      };
    };
    for (const auto& [op, onnx_op] :
         std::vector<std::pair<std::string, std::string>>{
             {"relu", "Relu"},
             {"sigmoid", "Sigmoid"},
             {"tanh", "Tanh"},
             {"exp", "Exp"},
             {"log", "Log"},
             {"sqrt", "Sqrt"},
             {"abs", "Abs"},
             {"neg", "Neg"},
             {"floor", "Floor"},
             {"ceil", "Ceil"},
             {"erf", "Erf"},
             {"sin", "Sin"},
             {"cos", "Cos"},
             {"sign", "Sign"},
             {"add", "Add"},
             {"sub", "Sub"},
             {"mul", "Mul"},
             {"maximum", "Max"},
             {"minimum", "Min"},
             {"pow", "Pow"},
             {"equal", "Equal"},
             {"less", "Less"},
             {"greater", "Greater"},
             {"less_equal", "LessOrEqual"},
             {"greater_equal", "GreaterOrEqual"},
             {"logical_and", "And"},
             {"logical_or", "Or"},
             {"logical_not", "Not"},
             {"bias_add", "Add"},
             {"where", "Where"},
             {"softplus", "Softplus"},
             {"range", "Range"}}) {
      simple(op, onnx_op);
    }
    (*t)["div"] = [](Exporter& e, const Node& n) {
      if (!IsFloating(n.input_dtype(0))) return e.Refuse(n, "integer division");
      e.Add(n, "Div", {e.In(n, 0), e.In(n, 1)}, {e.Out(n)});
      return absl::OkStatus();
    };
    (*t)["square"] = [](Exporter& e, const Node& n) {
      e.Add(n, "Mul", {e.In(n, 0), e.In(n, 0)}, {e.Out(n)});
      return absl::OkStatus();
    };
    (*t)["rsqrt"] = [](Exporter& e, const Node& n) {
      const std::string s = e.Temp(n, "sqrt");
      e.Add(n, "Sqrt", {e.In(n, 0)}, {s}, "sqrt");
      e.Add(n, "Reciprocal", {s}, {e.Out(n)});
      return absl::OkStatus();
    };
    (*t)["identity"] = [](Exporter& e, const Node& n) {
      e.Alias(n, 0, e.In(n, 0));
      return absl::OkStatus();
    };
    (*t)["fill"] = [](Exporter& e, const Node& n) {
      // The value broadcast to the shape.
      const std::string shape = e.Temp(n, "shape");
      SetInt(e.Add(n, "Cast", {e.In(n, 0)}, {shape}, "shape"), "to",
             onnx::INT64);
      e.Add(n, "Expand", {e.In(n, 1), shape}, {e.Out(n)});
      return absl::OkStatus();
    };
    (*t)["dynamic_update_index"] = [](Exporter& e, const Node& n) {
      // x with x[i] = value: a ScatterND of one row.
      const std::string i = e.Temp(n, "i64");
      SetInt(e.Add(n, "Cast", {e.In(n, 1)}, {i}, "i64"), "to", onnx::INT64);
      const std::string at = e.Temp(n, "at");
      e.Add(n, "Reshape", {i, e.Ints(n, "one_by_one", {1, 1})}, {at}, "at");
      const std::string row = e.Temp(n, "row");
      e.Add(n, "Unsqueeze", {e.In(n, 2), e.Ints(n, "axis0", {0})}, {row},
            "row");
      e.Add(n, "ScatterND", {e.In(n, 0), at, row}, {e.Out(n)});
      return absl::OkStatus();
    };
    (*t)["dynamic_index"] = [](Exporter& e, const Node& n) {
      // x[i] for a scalar i; ONNX's Gather counts negative indices from the
      // end too.
      SetInt(e.Add(n, "Gather", {e.In(n, 0), e.In(n, 1)}, {e.Out(n)}), "axis",
             0);
      return absl::OkStatus();
    };
    (*t)["strided_slice"] = [](Exporter& e, const Node& n) {
      RN_ASSIGN_OR_RETURN(std::vector<int64_t> begin,
                          n.attr<std::vector<int64_t>>("begin"));
      RN_ASSIGN_OR_RETURN(std::vector<int64_t> end,
                          n.attr<std::vector<int64_t>>("end"));
      std::vector<int64_t> strides =
          n.attr<std::vector<int64_t>>("strides").value_or(
              std::vector<int64_t>(begin.size(), 1));
      const int64_t begin_mask = n.attr<int64_t>("begin_mask").value_or(0);
      const int64_t end_mask = n.attr<int64_t>("end_mask").value_or(0);
      const int64_t shrink = n.attr<int64_t>("shrink_axis_mask").value_or(0);
      if (n.attr<int64_t>("new_axis_mask").value_or(0) != 0) {
        return e.Refuse(n, "a subscript that adds an axis");
      }
      if (end.size() != begin.size() || strides.size() != begin.size()) {
        return e.Refuse(n, "begin, end and strides of different lengths");
      }
      constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
      constexpr int64_t kMin = std::numeric_limits<int64_t>::min();
      std::vector<int64_t> starts, ends, axes, steps, squeeze;
      for (size_t i = 0; i < begin.size(); ++i) {
        const int64_t st = strides[i];
        int64_t b = begin[i], en = end[i];
        if (shrink & (int64_t{1} << i)) {
          // One index: [b, b + 1), then the axis goes.
          en = b == -1 ? kMax : b + 1;
          squeeze.push_back(static_cast<int64_t>(i));
        } else {
          if (begin_mask & (int64_t{1} << i)) b = st > 0 ? 0 : kMax;
          if (end_mask & (int64_t{1} << i)) en = st > 0 ? kMax : kMin;
        }
        starts.push_back(b);
        ends.push_back(en);
        axes.push_back(static_cast<int64_t>(i));
        steps.push_back(st);
      }
      const std::string sliced =
          squeeze.empty() ? e.Out(n) : e.Temp(n, "sliced");
      e.Add(n, "Slice",
            {e.In(n, 0), e.Ints(n, "starts", starts), e.Ints(n, "ends", ends),
             e.Ints(n, "axes", axes), e.Ints(n, "steps", steps)},
            {sliced}, squeeze.empty() ? "" : "slice");
      if (!squeeze.empty()) {
        e.Add(n, "Squeeze", {sliced, e.Ints(n, "squeeze_axes", squeeze)},
              {e.Out(n)});
      }
      return absl::OkStatus();
    };
    (*t)["one_hot"] = [](Exporter& e, const Node& n) {
      RN_ASSIGN_OR_RETURN(int64_t depth, n.attr<int64_t>("depth"));
      const DType dtype = n.output_dtype(0);
      Tensor values(dtype, Shape{2});
      const double off = n.attr<double>("off_value").value_or(0.0);
      const double on = n.attr<double>("on_value").value_or(1.0);
      switch (dtype) {
        case DType::kF32:
          values.data<float>()[0] = off, values.data<float>()[1] = on;
          break;
        case DType::kF64:
          values.data<double>()[0] = off, values.data<double>()[1] = on;
          break;
        case DType::kI32:
          values.data<int32_t>()[0] = static_cast<int32_t>(off);
          values.data<int32_t>()[1] = static_cast<int32_t>(on);
          break;
        case DType::kI64:
          values.data<int64_t>()[0] = static_cast<int64_t>(off);
          values.data<int64_t>()[1] = static_cast<int64_t>(on);
          break;
        default:
          return e.Refuse(n, "a one_hot of that dtype");
      }
      // Runnel gives a row of off_value for a negative index; ONNX would
      // count it from the end, so it is made out of range first. (In i64,
      // the index type every runtime's OneHot takes.)
      const std::string depth_v =
          e.Initializer(Tensor::Scalar(depth), e.Temp(n, "depth"));
      const std::string zero =
          e.Initializer(Tensor::Scalar(int64_t{0}), e.Temp(n, "zero"));
      const std::string i64 = e.Temp(n, "i64");
      SetInt(e.Add(n, "Cast", {e.In(n, 0)}, {i64}, "i64"), "to", onnx::INT64);
      const std::string negative = e.Temp(n, "negative");
      e.Add(n, "Less", {i64, zero}, {negative}, "negative");
      const std::string indices = e.Temp(n, "indices");
      e.Add(n, "Where", {negative, depth_v, i64}, {indices}, "indices");
      SetInt(
          e.Add(n, "OneHot",
                {indices, depth_v, e.Initializer(values, e.Temp(n, "values"))},
                {e.Out(n)}),
          "axis", n.attr<int64_t>("axis").value_or(-1));
      return absl::OkStatus();
    };
    (*t)["shape_of"] = [](Exporter& e, const Node& n) {
      const std::string s = e.Temp(n, "i64");
      e.Add(n, "Shape", {e.In(n, 0)}, {s}, "shape");
      SetInt(e.Add(n, "Cast", {s}, {e.Out(n)}), "to",
             OnnxType(n.output_dtype(0)));
      return absl::OkStatus();
    };
    (*t)["cast"] = [](Exporter& e, const Node& n) {
      SetInt(e.Add(n, "Cast", {e.In(n, 0)}, {e.Out(n)}), "to",
             OnnxType(n.output_dtype(0)));
      return absl::OkStatus();
    };
    (*t)["matmul"] = [](Exporter& e, const Node& n) {
      const bool ta = n.attr<bool>("transpose_a").value_or(false);
      const bool tb = n.attr<bool>("transpose_b").value_or(false);
      std::string a = e.In(n, 0), b = e.In(n, 1);
      for (int i = 0; i < 2; ++i) {
        if (!(i == 0 ? ta : tb)) continue;
        const Shape& s = n.input(i).node->output_shape(n.input(i).index);
        if (s.unknown_rank())
          return e.Refuse(n, "a transposed operand of unknown rank");
        std::vector<int64_t> perm;
        for (int k = 0; k < s.rank(); ++k) perm.push_back(k);
        std::swap(perm[perm.size() - 1], perm[perm.size() - 2]);
        std::string& v = i == 0 ? a : b;
        const std::string tv = e.Temp(n, i == 0 ? "a_t" : "b_t");
        SetInts(e.Add(n, "Transpose", {v}, {tv},
                      i == 0 ? "transpose_a" : "transpose_b"),
                "perm", perm);
        v = tv;
      }
      e.Add(n, "MatMul", {a, b}, {e.Out(n)});
      return absl::OkStatus();
    };
    // matmul_add(acc, a, b), f32 matrices: Gemm's C is the sum, its
    // transA and transB the transposes.
    (*t)["matmul_add"] = [](Exporter& e, const Node& n) {
      onnx::NodeProto* gemm =
          e.Add(n, "Gemm", {e.In(n, 1), e.In(n, 2), e.In(n, 0)}, {e.Out(n)});
      SetInt(gemm, "transA", n.attr<bool>("transpose_a").value_or(false));
      SetInt(gemm, "transB", n.attr<bool>("transpose_b").value_or(false));
      return absl::OkStatus();
    };
    // scaled_dot_product_attention: MatMul(q, k^T) * s, Softmax (with a
    // mask: of Where(keep, scores, -inf), then Where(keep, p, 0), which
    // also zeroes a query that keeps no key), MatMul(p, v); with the
    // layout bthd, q, k and v transposed to bhtd first and the output
    // back.
    (*t)["scaled_dot_product_attention"] = [](Exporter& e, const Node& n) {
      const Shape& q = n.input(0).node->output_shape(n.input(0).index);
      if (q.unknown_rank() || q.dim(q.rank() - 1) < 0) {
        return e.Refuse(n, "attention whose depth d is not known statically");
      }
      RN_ASSIGN_OR_RETURN(const AttentionAttrs attrs, AttentionAttrs::Of(n));
      const double scale = attrs.ScoreFactor(q.dim(q.rank() - 1));
      const bool f64 = n.input_dtype(0) == DType::kF64;
      auto scalar = [&](double v, const std::string& what) {
        return e.Initializer(
            f64 ? Tensor::Scalar(v) : Tensor::Scalar(static_cast<float>(v)),
            e.Temp(n, what));
      };
      std::vector<int64_t> perm, heads;
      for (int i = 0; i < q.rank(); ++i) perm.push_back(i);
      heads = perm;
      std::swap(perm[perm.size() - 1], perm[perm.size() - 2]);
      std::string in[3] = {e.In(n, 0), e.In(n, 1), e.In(n, 2)};
      if (attrs.bthd) {
        std::swap(heads[heads.size() - 3], heads[heads.size() - 2]);
        for (int i = 0; i < 3; ++i) {
          const std::string what = StrCat("bhtd", i);
          const std::string moved = e.Temp(n, what);
          SetInts(e.Add(n, "Transpose", {in[i]}, {moved}, what), "perm", heads);
          in[i] = moved;
        }
      }
      const std::string kt = e.Temp(n, "k_t"), qk = e.Temp(n, "qk"),
                        scores = e.Temp(n, "scores"), p = e.Temp(n, "p");
      SetInts(e.Add(n, "Transpose", {in[1]}, {kt}, "k_t"), "perm", perm);
      e.Add(n, "MatMul", {in[0], kt}, {qk}, "qk");
      e.Add(n, "Mul", {qk, scalar(scale, "scale")}, {scores}, "scores");
      const Node* keep = n.input(3).node;
      const Tensor* all = keep->constant_value();
      if (all != nullptr && all->num_elements() == 1 && all->data<bool>()[0]) {
        SetInt(e.Add(n, "Softmax", {scores}, {p}, "softmax"), "axis", -1);
      } else {
        const std::string masked = e.Temp(n, "masked"), p0 = e.Temp(n, "p0");
        e.Add(n, "Where",
              {e.In(n, 3), scores,
               scalar(-std::numeric_limits<double>::infinity(), "dropped")},
              {masked}, "masked");
        SetInt(e.Add(n, "Softmax", {masked}, {p0}, "softmax"), "axis", -1);
        e.Add(n, "Where", {e.In(n, 3), p0, scalar(0, "zero")}, {p}, "p");
      }
      if (!attrs.bthd) {
        e.Add(n, "MatMul", {p, in[2]}, {e.Out(n)});
        return absl::OkStatus();
      }
      const std::string out = e.Temp(n, "out");
      e.Add(n, "MatMul", {p, in[2]}, {out}, "pv");
      SetInts(e.Add(n, "Transpose", {out}, {e.Out(n)}, "bthd"), "perm", heads);
      return absl::OkStatus();
    };
    for (const char* op : {"softmax", "log_softmax"}) {
      (*t)[op] = [op](Exporter& e, const Node& n) {
        SetInt(e.Add(n, std::string(op) == "softmax" ? "Softmax" : "LogSoftmax",
                     {e.In(n, 0)}, {e.Out(n)}),
               "axis", n.attr<int64_t>("axis").value_or(-1));
        return absl::OkStatus();
      };
    }
    // Per-example losses: opset 13's SoftmaxCrossEntropyLoss without a
    // reduction (labels i32 or i64, as ONNX takes them).
    (*t)["sparse_softmax_cross_entropy"] = [](Exporter& e, const Node& n) {
      SetString(e.Add(n, "SoftmaxCrossEntropyLoss", {e.In(n, 0), e.In(n, 1)},
                      {e.Out(n)}),
                "reduction", "none");
      return absl::OkStatus();
    };
    (*t)["reshape"] = [](Exporter& e, const Node& n) {
      const Node* s = n.input(1).node;
      std::string shape;
      bool zero = false;
      if (const Tensor* c = s->constant_value()) {
        std::vector<int64_t> v = c->ToInt64s();
        zero = std::find(v.begin(), v.end(), 0) != v.end();
        shape = e.Ints(n, "shape", v);
      } else {
        shape = e.Temp(n, "shape");
        SetInt(e.Add(n, "Cast", {e.In(n, 1)}, {shape}, "shape"), "to",
               onnx::INT64);
        zero = true;  // a computed 0 is a dimension of 0, as in Runnel
      }
      onnx::NodeProto* p = e.Add(n, "Reshape", {e.In(n, 0), shape}, {e.Out(n)});
      if (zero) SetInt(p, "allowzero", 1);
      return absl::OkStatus();
    };
    (*t)["transpose"] = [](Exporter& e, const Node& n) {
      onnx::NodeProto* p = e.Add(n, "Transpose", {e.In(n, 0)}, {e.Out(n)});
      if (n.attrs().count("perm")) {
        RN_ASSIGN_OR_RETURN(std::vector<int64_t> perm,
                            n.attr<std::vector<int64_t>>("perm"));
        SetInts(p, "perm", perm);
      }
      return absl::OkStatus();
    };
    (*t)["concat"] = [](Exporter& e, const Node& n) {
      std::vector<std::string> ins;
      for (int i = 0; i < n.num_inputs(); ++i) ins.push_back(e.In(n, i));
      SetInt(e.Add(n, "Concat", ins, {e.Out(n)}), "axis",
             n.attr<int64_t>("axis").value_or(0));
      return absl::OkStatus();
    };
    // Opset 17's Split without its `split` input cuts into as many equal
    // parts as it has outputs, as split's `num` does.
    (*t)["split"] = [](Exporter& e, const Node& n) {
      std::vector<std::string> outs;
      for (int i = 0; i < n.num_outputs(); ++i) outs.push_back(e.Out(n, i));
      SetInt(e.Add(n, "Split", {e.In(n, 0)}, outs), "axis",
             n.attr<int64_t>("axis").value_or(0));
      return absl::OkStatus();
    };
    (*t)["gather"] = [](Exporter& e, const Node& n) {
      SetInt(e.Add(n, "Gather", {e.In(n, 0), e.In(n, 1)}, {e.Out(n)}), "axis",
             n.attr<int64_t>("axis").value_or(0));
      return absl::OkStatus();
    };
    // The index ops (framework/ops/index_ops.cc). Opset 17's scatters
    // combine by "none", "add" and "mul" only, and ScatterND has no
    // batch_dims.
    (*t)["gather_elements"] = [](Exporter& e, const Node& n) {
      SetInt(e.Add(n, "GatherElements", {e.In(n, 0), e.In(n, 1)}, {e.Out(n)}),
             "axis", n.attr<int64_t>("axis").value_or(0));
      return absl::OkStatus();
    };
    (*t)["gather_nd"] = [](Exporter& e, const Node& n) {
      SetInt(e.Add(n, "GatherND", {e.In(n, 0), e.Cast(n, 1, onnx::INT64)},
                   {e.Out(n)}),
             "batch_dims", n.attr<int64_t>("batch_dims").value_or(0));
      return absl::OkStatus();
    };
    for (const char* op : {"scatter_elements", "scatter_nd"}) {
      (*t)[op] = [op](Exporter& e, const Node& n) {
        const std::string how =
            n.attr<std::string>("reduction").value_or("none");
        if (how == "max" || how == "min") {
          return e.Refuse(n, StrCat("reduction \"", how,
                                    "\" (ONNX has it from opset 18; "
                                    "exports are opset ",
                                    kOpset, ")"));
        }
        const bool nd = std::string(op) == "scatter_nd";
        if (nd && n.attr<int64_t>("batch_dims").value_or(0) != 0)
          return e.Refuse(n, "batch_dims (ONNX's ScatterND has none)");
        onnx::NodeProto* p =
            e.Add(n, nd ? "ScatterND" : "ScatterElements",
                  {e.In(n, 0), nd ? e.Cast(n, 1, onnx::INT64) : e.In(n, 1),
                   e.In(n, 2)},
                  {e.Out(n)});
        SetString(p, "reduction", how);
        if (!nd) SetInt(p, "axis", n.attr<int64_t>("axis").value_or(0));
        return absl::OkStatus();
      };
    }
    (*t)["top_k"] = [](Exporter& e, const Node& n) {
      const std::string k = e.Temp(n, "k");
      e.Add(n, "Reshape", {e.Cast(n, 1, onnx::INT64), e.Ints(n, "one", {1})},
            {k}, "k");
      const std::string i64 = e.Temp(n, "i64");
      onnx::NodeProto* p =
          e.Add(n, "TopK", {e.In(n, 0), k}, {e.Out(n, 0), i64});
      SetInt(p, "axis", n.attr<int64_t>("axis").value_or(-1));
      SetInt(p, "largest", n.attr<bool>("largest").value_or(true) ? 1 : 0);
      SetInt(e.Add(n, "Cast", {i64}, {e.Out(n, 1)}, "i32"), "to",
             onnx::INT32);  // Runnel's positions are i32
      return absl::OkStatus();
    };
    (*t)["unique_all"] = [](Exporter& e, const Node& n) {
      onnx::NodeProto* p =
          e.Add(n, "Unique", {e.In(n, 0)},
                {e.Out(n, 0), e.Out(n, 1), e.Out(n, 2), e.Out(n, 3)});
      SetInt(p, "sorted", n.attr<bool>("sorted").value_or(true) ? 1 : 0);
      if (absl::StatusOr<int64_t> axis = n.attr<int64_t>("axis"); axis.ok()) {
        SetInt(p, "axis", *axis);
      }
      return absl::OkStatus();
    };
    (*t)["nonzero"] = [](Exporter& e, const Node& n) {
      const std::string columns = e.Temp(n, "columns");
      e.Add(n, "NonZero", {e.In(n, 0)}, {columns}, "columns");
      e.Add(n, "Transpose", {columns}, {e.Out(n)});
      return absl::OkStatus();
    };
    for (const char* op : {"expand_dims", "squeeze"}) {
      (*t)[op] = [op](Exporter& e, const Node& n) {
        RN_ASSIGN_OR_RETURN(std::vector<int64_t> axes, Axes(n));
        std::vector<std::string> ins = {e.In(n, 0)};
        if (!axes.empty()) ins.push_back(e.Ints(n, "axes", axes));
        e.Add(n, std::string(op) == "expand_dims" ? "Unsqueeze" : "Squeeze",
              ins, {e.Out(n)});
        return absl::OkStatus();
      };
    }
    for (const auto& [op, onnx_op] :
         std::vector<std::pair<std::string, std::string>>{
             {"sum", "ReduceSum"},
             {"mean", "ReduceMean"},
             {"max", "ReduceMax"},
             {"min", "ReduceMin"},
             {"prod", "ReduceProd"}}) {
      (*t)[op] = [onnx_op = onnx_op](Exporter& e, const Node& n) {
        if (n.input_dtype(0) == DType::kBool)
          return e.Refuse(n, "a reduction of bools");
        RN_ASSIGN_OR_RETURN(std::vector<int64_t> axes, Axes(n));
        const bool keep = n.attr<bool>("keepdims").value_or(false);
        std::vector<std::string> ins = {e.In(n, 0)};
        onnx::NodeProto* p;
        if (onnx_op == "ReduceSum") {
          // Opset 13 on: the axes are an input.
          if (!axes.empty()) ins.push_back(e.Ints(n, "axes", axes));
          p = e.Add(n, onnx_op, ins, {e.Out(n)});
        } else {
          p = e.Add(n, onnx_op, ins, {e.Out(n)});
          if (!axes.empty()) SetInts(p, "axes", axes);
        }
        SetInt(p, "keepdims", keep ? 1 : 0);
        return absl::OkStatus();
      };
    }
    for (const char* op : {"argmax", "argmin"}) {
      (*t)[op] = [op](Exporter& e, const Node& n) {
        RN_ASSIGN_OR_RETURN(std::vector<int64_t> axes, Axes(n));
        if (axes.size() != 1)
          return e.Refuse(n, "an argmax over other than one axis");
        const std::string i64 = e.Temp(n, "i64");
        onnx::NodeProto* p =
            e.Add(n, std::string(op) == "argmax" ? "ArgMax" : "ArgMin",
                  {e.In(n, 0)}, {i64}, op);
        SetInt(p, "axis", axes[0]);
        SetInt(p, "keepdims", n.attr<bool>("keepdims").value_or(false) ? 1 : 0);
        SetInt(e.Add(n, "Cast", {i64}, {e.Out(n)}), "to",
               onnx::INT32);  // Runnel's is i32
        return absl::OkStatus();
      };
    }
    (*t)["conv2d"] = [](Exporter& e, const Node& n) {
      const std::string w = e.Temp(n, "oihw");
      SetInts(e.Add(n, "Transpose", {e.In(n, 1)}, {w}, "filters_to_oihw"),
              "perm", {3, 2, 0, 1});
      return Windowed(e, n, "Conv", w);
    };
    (*t)["conv3d"] = [](Exporter& e, const Node& n) {
      const std::string w = e.Temp(n, "oidhw");
      SetInts(e.Add(n, "Transpose", {e.In(n, 1)}, {w}, "filters_to_oidhw"),
              "perm", {4, 3, 0, 1, 2});
      return Windowed(e, n, "Conv", w);
    };
    (*t)["conv2d_backprop_input"] = TransposedConv;
    (*t)["conv3d_backprop_input"] = TransposedConv;
    for (const char* d : {"", "3d"}) {
      (*t)[StrCat("max_pool", d)] = [](Exporter& e, const Node& n) {
        return Windowed(e, n, "MaxPool", "");
      };
      (*t)[StrCat("avg_pool", d)] = [](Exporter& e, const Node& n) {
        return Windowed(e, n, "AveragePool", "");
      };
    }
    // gelu: 0.5 * x * (1 + erf(x / sqrt(2))) (ONNX's Gelu is opset 20).
    (*t)["gelu"] = [](Exporter& e, const Node& n) {
      const DType d = n.input_dtype(0);
      auto c = [&](double v, const char* what) {
        return e.Initializer(Tensor::ScalarOf(d, v), e.Temp(n, what));
      };
      const std::string x = e.In(n, 0), s = e.Temp(n, "scaled"),
                        f = e.Temp(n, "erf"), p = e.Temp(n, "plus_one"),
                        m = e.Temp(n, "times_x");
      e.Add(n, "Mul", {x, c(0.7071067811865476, "rsqrt2")}, {s}, "scaled");
      e.Add(n, "Erf", {s}, {f}, "erf");
      e.Add(n, "Add", {f, c(1, "one")}, {p}, "plus_one");
      e.Add(n, "Mul", {x, p}, {m}, "times_x");
      e.Add(n, "Mul", {m, c(0.5, "half")}, {e.Out(n)});
      return absl::OkStatus();
    };
    // The fused recurrent cells as the element-wise ops they fuse, the
    // gates cut by one Split over the last axis.
    (*t)["lstm_cell"] = [](Exporter& e, const Node& n) {
      auto v = [&](const char* what) { return e.Temp(n, what); };
      auto op = [&](const char* type, std::vector<std::string> in,
                    const std::string& out, const char* what) {
        e.Add(n, type, std::move(in), {out}, what);
      };
      SetInt(e.Add(n, "Split", {e.In(n, 0)},
                   {v("i_in"), v("f_in"), v("g_in"), v("o_in")}, "gates"),
             "axis", -1);
      op("Sigmoid", {v("i_in")}, v("i"), "i");
      op("Sigmoid", {v("f_in")}, v("f"), "f");
      op("Tanh", {v("g_in")}, v("g"), "g");
      op("Sigmoid", {v("o_in")}, v("o"), "o");
      op("Mul", {v("f"), e.In(n, 1)}, v("f_c"), "f_c");
      op("Mul", {v("i"), v("g")}, v("i_g"), "i_g");
      op("Add", {v("f_c"), v("i_g")}, e.Out(n, 1), "c_next");
      op("Tanh", {e.Out(n, 1)}, v("tanh_c"), "tanh_c");
      op("Mul", {v("o"), v("tanh_c")}, e.Out(n, 0), "h");
      return absl::OkStatus();
    };
    // lstm_sequence as ONNX's LSTM over the projected inputs: W a
    // permutation (ONNX's gates are i, o, f, c; ours i, f, g, o), R the
    // recurrent weight's columns in that order, transposed; the bias added
    // to z beforehand; the lengths as sequence_lens. ONNX's LSTM gives no
    // step's c but the last: the outputs saved for the gradient (cs, gates)
    // have no translation (no model reads them).
    (*t)["lstm_sequence"] = [](Exporter& e, const Node& n) {
      const Shape& w_h = n.input(3).node->output_shape(n.input(3).index);
      if (w_h.unknown_rank() || w_h.rank() != 2 || w_h.dim(0) < 0) {
        return e.Refuse(n, "the recurrent weight's size is not known");
      }
      const int64_t u = w_h.dim(0);
      const int64_t ours[4] = {0, 3, 1, 2};  // ONNX's i, o, f, c in ours
      std::vector<int64_t> columns;
      std::vector<float> w(static_cast<size_t>(16 * u * u), 0.0f);
      for (int64_t k = 0; k < 4; ++k) {
        for (int64_t j = 0; j < u; ++j) {
          columns.push_back(ours[k] * u + j);
          w[(k * u + j) * 4 * u + ours[k] * u + j] = 1.0f;
        }
      }
      auto v = [&](const char* what) { return e.Temp(n, what); };
      const std::string wp = e.Initializer(
          Tensor::FromVector(w, Shape({1, 4 * u, 4 * u})), v("W"));
      SetInt(e.Add(n, "Gather", {e.In(n, 3), e.Ints(n, "gate_order", columns)},
                   {v("w_h_columns")}, "w_h_columns"),
             "axis", 1);
      SetInts(e.Add(n, "Transpose", {v("w_h_columns")}, {v("R2")}, "R2"),
              "perm", {1, 0});
      const std::string axis0 = e.Ints(n, "axis0", {0});
      e.Add(n, "Unsqueeze", {v("R2"), axis0}, {v("R")}, "R");
      e.Add(n, "Unsqueeze", {e.In(n, 1), axis0}, {v("h0")}, "h0");
      e.Add(n, "Unsqueeze", {e.In(n, 2), axis0}, {v("c0")}, "c0");
      // The bias, if any, added to z; the lengths follow it.
      const int at = SequenceLengthsInput(n.attrs());
      std::string z = e.In(n, 0);
      if (at == 5) {
        e.Add(n, "Add", {z, e.In(n, 4)}, {v("z_b")}, "z_b");
        z = v("z_b");
      }
      const bool lengths = n.num_inputs() > at;
      std::string seq_lens;
      if (lengths) {
        // sequence_lens: the lengths clipped to [0, time].
        auto scalar = [&](auto value, const char* what) {
          return e.Initializer(Tensor::Scalar(value), v(what));
        };
        const std::string zero = scalar(int32_t{0}, "zero");
        e.Add(n, "Shape", {e.In(n, 0)}, {v("z_shape")}, "z_shape");
        SetInt(
            e.Add(n, "Gather", {v("z_shape"), scalar(int64_t{0}, "time_axis")},
                  {v("time64")}, "time64"),
            "axis", 0);
        SetInt(e.Add(n, "Cast", {v("time64")}, {v("time")}, "time"), "to",
               onnx::INT32);
        e.Add(n, "Clip", {e.In(n, at), zero, v("time")}, {v("seq_lens")},
              "seq_lens");
        seq_lens = v("seq_lens");
        // Where ONNX's outputs stop at a row's length (Y zero past it; a
        // length of 0 its own case), the row keeps its state: the initial
        // one for a length of 0, else its last.
        e.Add(n, "Greater", {seq_lens, zero}, {v("started")}, "started");
        e.Add(n, "Unsqueeze", {v("started"), e.Ints(n, "axis1", {1})},
              {v("started2")}, "started2");
        e.Add(n, "Range", {zero, v("time"), scalar(int32_t{1}, "one")},
              {v("steps")}, "steps");
        e.Add(n, "Unsqueeze", {v("steps"), e.Ints(n, "axis1", {1})},
              {v("steps2")}, "steps2");
        e.Add(n, "Less", {v("steps2"), seq_lens}, {v("live")}, "live");
        e.Add(n, "Unsqueeze", {v("live"), e.Ints(n, "axis2", {2})},
              {v("live3")}, "live3");
      }
      SetInt(e.Add(n, "LSTM", {z, wp, v("R"), "", seq_lens, v("h0"), v("c0")},
                   {v("Y"), v("Y_h"), v("Y_c")}, "lstm"),
             "hidden_size", u);
      const std::string hs = lengths ? v("Y3") : e.Out(n, 0);
      const std::string h = lengths ? v("Y_h2") : e.Out(n, 1);
      const std::string c = lengths ? v("Y_c2") : e.Out(n, 2);
      e.Add(n, "Squeeze", {v("Y"), e.Ints(n, "axis1", {1})}, {hs}, "hs");
      e.Add(n, "Squeeze", {v("Y_h"), axis0}, {h}, "h");
      e.Add(n, "Squeeze", {v("Y_c"), axis0}, {c}, "c");
      if (lengths) {
        e.Add(n, "Where", {v("started2"), h, e.In(n, 1)}, {e.Out(n, 1)},
              "h_kept");
        e.Add(n, "Where", {v("started2"), c, e.In(n, 2)}, {e.Out(n, 2)},
              "c_kept");
        e.Add(n, "Where", {v("live3"), hs, e.Out(n, 1)}, {e.Out(n, 0)},
              "hs_kept");
      }
      return absl::OkStatus();
    };
    (*t)["gru_cell"] = [](Exporter& e, const Node& n) {
      auto v = [&](const char* what) { return e.Temp(n, what); };
      auto op = [&](const char* type, std::vector<std::string> in,
                    const std::string& out, const char* what) {
        e.Add(n, type, std::move(in), {out}, what);
      };
      SetInt(
          e.Add(n, "Split", {e.In(n, 0)}, {v("x_r"), v("x_z"), v("x_n")}, "x"),
          "axis", -1);
      SetInt(e.Add(n, "Split", {e.In(n, 1)}, {v("hh_r"), v("hh_z"), v("hh_n")},
                   "hh"),
             "axis", -1);
      op("Add", {v("x_r"), v("hh_r")}, v("r_in"), "r_in");
      op("Sigmoid", {v("r_in")}, v("r"), "r");
      op("Add", {v("x_z"), v("hh_z")}, v("z_in"), "z_in");
      op("Sigmoid", {v("z_in")}, v("z"), "z");
      op("Mul", {v("r"), v("hh_n")}, v("r_hh_n"), "r_hh_n");
      op("Add", {v("x_n"), v("r_hh_n")}, v("n_in"), "n_in");
      op("Tanh", {v("n_in")}, v("n"), "n");
      const std::string one =
          e.Initializer(Tensor::ScalarOf(n.input_dtype(0), 1), v("one"));
      op("Sub", {one, v("z")}, v("keep_n"), "keep_n");
      op("Mul", {v("keep_n"), v("n")}, v("new_part"), "new_part");
      op("Mul", {v("z"), e.In(n, 2)}, v("old_part"), "old_part");
      op("Add", {v("new_part"), v("old_part")}, e.Out(n), "h_next");
      return absl::OkStatus();
    };
    // layer_norm: LayerNormalization over the last axis. Its Mean and
    // InvStdDev are f32 (or bf16) in ONNX, so an f64 one gives Y alone.
    (*t)["layer_norm"] = [](Exporter& e, const Node& n) {
      std::vector<std::string> outs = {e.Out(n, 0)};
      if (n.input_dtype(0) != DType::kF64) {
        outs.push_back(e.Out(n, 1));
        outs.push_back(e.Out(n, 2));
      }
      onnx::NodeProto* p = e.Add(n, "LayerNormalization",
                                 {e.In(n, 0), e.In(n, 1), e.In(n, 2)}, outs);
      SetInt(p, "axis", -1);
      SetFloat(p, "epsilon", n.attr<double>("eps").value_or(1e-5));
      return absl::OkStatus();
    };
    // dropout_at is dropout in an in-graph loop's body, its draws reserved
    // by a random_reserve node (its `first` input), which ONNX's Dropout
    // does not need.
    for (const char* op : {"dropout", "dropout_at"}) {
      (*t)[op] = [](Exporter& e, const Node& n) {
        // Runnel's and ONNX's dropout both scale what they keep by
        // 1 / (1 - rate); the mask output is not the scale output.
        e.Add(n, "Dropout", {e.In(n, 0), e.In(n, 1), e.In(n, 2)}, {e.Out(n)});
        return absl::OkStatus();
      };
    }
    return t;
  }();
  return *table;
}

absl::Status Exporter::Node_(const Node& n) {
  const std::string& op = n.op();
  if (op == "placeholder") {
    Input(n, Out(n));
    return absl::OkStatus();
  }
  if (op == "placeholder_with_default") {
    const Tensor* d = n.input(0).node->constant_value();
    if (d == nullptr) return Refuse(n, "an input whose default is computed");
    // ONNX's default: an initializer of the input's name.
    Input(n, Out(n));
    Initializer(*d, Out(n));
    return absl::OkStatus();
  }
  if (op == "const") {
    Initializer(*n.constant_value(), Out(n));
    return absl::OkStatus();
  }
  if (op == "variable") return absl::OkStatus();
  if (op == "read_variable") {
    // The variable, also through the enters of the loops it is read in.
    const Node* handle = n.input(0).node;
    while (handle->op() == "enter" && handle->num_inputs() == 1)
      handle = handle->input(0).node;
    const Node& var = *handle;
    auto it = variables_.find(var.name());
    if (it == variables_.end()) return Refuse(n, "a variable without a value");
    Initializer(it->second, var.name());
    Alias(n, 0, var.name());
    return absl::OkStatus();
  }
  auto it = Table().find(op);
  if (it == Table().end())
    return Refuse(n, "the op has no ONNX translation yet");
  return it->second(*this, n);
}

// Which loop each node is in: a loop's enters, and every node that reads a
// node of the loop other than its exits (control inputs included, which
// place constants in a loop); an exit is its loop's, read in the loop
// around it. A loop inside a loop is exported as a Loop in the outer
// Loop's body. Conditionals (a switch or merge in no loop) are refused
// inside loops (Loop).
absl::Status Exporter::FindFrames(const std::vector<const Node*>& order) {
  // (The order visits data inputs first, not control inputs: a constant
  // placed in a loop by one may come before it, and what reads it too, so
  // this goes round until nothing changes.)
  for (bool changed = true; changed;) {
    changed = false;
    for (const Node* n : order) {
      const bool enter = n->op() == "enter";
      if (!enter && frame_of_.count(n) > 0) continue;
      std::string frame;
      auto from = [&](const Node* m) {
        auto it = frame_of_.find(m);
        if (it == frame_of_.end()) return;
        frame = m->op() == "exit" ? parent_frame_[it->second] : it->second;
      };
      for (const NodeOut& in : n->inputs()) from(in.node);
      for (const Node* c : n->control_inputs()) from(c);
      if (enter) {
        const std::string child =
            n->attr<std::string>("frame_name").value_or("");
        if (!frame.empty() && parent_frame_[child] != frame) {
          parent_frame_[child] = frame;
          changed = true;
        }
        frame = child;
      }
      if (!frame.empty() && frame_of_[n] != frame) {
        frame_of_[n] = frame;
        changed = true;
      }
    }
  }
  // Every input from the node's own loop, from the loop around it into an
  // enter, or from an exit of a loop inside it.
  for (const Node* n : order) {
    auto it = frame_of_.find(n);
    const std::string frame = it == frame_of_.end() ? "" : it->second;
    for (const NodeOut& in : n->inputs()) {
      auto m = frame_of_.find(in.node);
      std::string from = m == frame_of_.end() ? "" : m->second;
      if (in.node->op() == "exit") from = parent_frame_[from];
      if (from == frame || from.empty()) continue;
      if (n->op() == "enter" && parent_frame_[frame] == from) continue;
      return Refuse(
          *n, StrCat("a value of loop '", from, "' read in another loop"));
    }
  }
  return absl::OkStatus();
}

// Whether `inner` is `outer` or nested in it, going out by `parent`: a
// loop's frame to the frame of the loop around it, a conditional's
// predicate to that of the conditional whose branch holds it.
bool Nested(const std::map<std::string, std::string>& parent, std::string inner,
            const std::string& outer) {
  for (size_t depth = 0; !inner.empty() && depth <= parent.size(); ++depth) {
    if (inner == outer) return true;
    auto it = parent.find(inner);
    if (it == parent.end()) return false;
    inner = it->second;
  }
  return false;
}

// The inputs an export follows: a random op's replay in a loop (NAME_at)
// draws with ONNX's own generator, so its last input, `first` (the index
// a random_reserve node gives), is not exported.
absl::Span<const NodeOut> Followed(const Node& n) {
  absl::Span<const NodeOut> in = n.inputs();
  return n.op_def().replay_of.empty() ? in : in.first(in.size() - 1);
}

absl::Status Exporter::Ensure(const Node* n) {
  if (emitted_.count(n) > 0) return absl::OkStatus();
  std::string group;  // the loop's frame or the conditional's predicate
  bool loop = false;
  if (auto f = frame_of_.find(n); f != frame_of_.end()) {
    group = f->second;
    loop = true;
  } else if (auto c = cond_of_.find(n); c != cond_of_.end()) {
    group = c->second;
  } else if (auto b = branch_of_.find(n); b != branch_of_.end()) {
    group = b->second.first;
  }
  if (group.empty()) {
    emitted_.insert(n);
    for (const NodeOut& in : Followed(*n)) RN_RETURN_IF_ERROR(Ensure(in.node));
    RN_RETURN_IF_ERROR(Node_(*n));
    for (int i = 0; i < n->num_outputs(); ++i)
      seen_names_.insert(Name(Of(*n, i)));
    return absl::OkStatus();
  }
  auto in_group = [&](const Node* m) {
    if (loop) {  // the loop's nodes and those of the loops inside it
      auto f = frame_of_.find(m);
      return f != frame_of_.end() && Nested(parent_frame_, f->second, group);
    }
    // The conditional's nodes and those of conditionals and loops in its
    // branches.
    if (auto f = frame_of_.find(m); f != frame_of_.end()) {
      const std::string pred = CondOfFrame(f->second);
      return !pred.empty() && Nested(cond_parent_, pred, group);
    }
    auto b = branch_of_.find(m);
    if (b != branch_of_.end())
      return Nested(cond_parent_, b->second.first, group);
    auto c = cond_of_.find(m);
    return c != cond_of_.end() && Nested(cond_parent_, c->second, group);
  };
  std::vector<const Node*> members;
  for (const Node* m : *order_) {
    if (in_group(m)) members.push_back(m);
  }
  for (const Node* m : members) emitted_.insert(m);
  for (const Node* m : members) {
    for (const NodeOut& in : Followed(*m)) {
      if (!in_group(in.node)) RN_RETURN_IF_ERROR(Ensure(in.node));
    }
  }
  return loop ? Loop(group, *order_) : If(group, *order_);
}

// The in-graph conditionals outside loops: each switch's predicate names
// its conditional; a node reading a switch's output k, or a node of branch
// k, is in branch k; a merge reading the branches is the conditional's
// output. A node in both branches, or in two conditionals (one inside
// another), is refused.
absl::Status Exporter::FindConds(const std::vector<const Node*>& order) {
  for (const Node* n : order) {
    if (n->op() == "switch" && n->input(1).node->op() != "loop_cond")
      cond_of_[n] = Name(n->input(1));
  }
  // A loop's own nodes (its variables' merges and switches, its exits, its
  // condition) are in no conditional; a loop whose enters read a branch's
  // values is in that branch (frame_branch_), and so are its exits.
  auto loops = [](const Node* n) {
    return n->op() == "exit" || n->op() == "next_iteration" ||
           n->op() == "loop_cond";
  };
  for (bool changed = true; changed;) {
    changed = false;
    for (const Node* n : order) {
      if (branch_of_.count(n) > 0) continue;
      if (n->op() == "exit") {
        auto f = frame_branch_.find(frame_of_[n]);
        if (f != frame_branch_.end()) {
          branch_of_[n] = f->second;
          changed = true;
        }
        continue;
      }
      if (loops(n)) continue;
      auto cond = cond_of_.find(n);
      if (cond != cond_of_.end() && n->op() == "merge") {
        // A conditional inside a branch: its merges are in that branch, as
        // its switches are.
        for (const Node* sw : NodesOf("switch", cond_of_, cond->second)) {
          if (auto b = branch_of_.find(sw); b != branch_of_.end()) {
            branch_of_[n] = b->second;
            changed = true;
            break;
          }
        }
        continue;
      }
      std::set<std::pair<std::string, int>> sides;
      auto from = [&](const Node* m, int index) {
        auto sw = cond_of_.find(m);
        auto b = branch_of_.find(m);
        if (sw != cond_of_.end() && m->op() == "switch") {
          sides.insert({sw->second, index});
        } else if (b != branch_of_.end()) {
          sides.insert(b->second);
        }
      };
      for (const NodeOut& in : n->inputs()) from(in.node, in.index);
      for (const Node* c : n->control_inputs()) from(c, -1);
      if (sides.empty()) continue;
      if (n->op() == "enter") {
        const std::string& frame = frame_of_[n];
        if (sides.size() != 1 || sides.begin()->second < 0 ||
            frame_branch_.emplace(frame, *sides.begin()).first->second !=
                *sides.begin()) {
          return Refuse(*n, "a loop reading values of two branches");
        }
        continue;
      }
      if (n->op() == "merge" && frame_of_.count(n) > 0 &&
          std::any_of(n->inputs().begin(), n->inputs().end(),
                      [&](const NodeOut& in) {
                        return in.node->op() == "enter" ||
                               in.node->op() == "next_iteration";
                      })) {
        continue;  // a loop variable's merge
      }
      if (n->op() == "merge" && cond == cond_of_.end()) {
        std::set<std::string> preds;
        for (const auto& [pred, side] : sides) preds.insert(pred);
        if (preds.size() != 1)
          return Refuse(*n, "a merge of values of two conditionals");
        cond_of_[n] = *preds.begin();
      } else {
        if (sides.size() != 1 || sides.begin()->second < 0)
          return Refuse(*n, "a value read in both branches of a conditional");
        branch_of_[n] = *sides.begin();
      }
      changed = true;
    }
  }
  for (const auto& [n, pred] : cond_of_) {
    auto b = branch_of_.find(n);
    if (n->op() == "switch" && b != branch_of_.end())
      cond_parent_[pred] = b->second.first;
  }
  return absl::OkStatus();
}

std::string Exporter::CondOfFrame(std::string frame) const {
  while (!frame.empty()) {
    auto b = frame_branch_.find(frame);
    if (b != frame_branch_.end()) return b->second.first;
    auto p = parent_frame_.find(frame);
    if (p == parent_frame_.end()) break;
    frame = p->second;
  }
  return "";
}

std::vector<const Node*> Exporter::NodesOf(
    const std::string& op, const std::map<const Node*, std::string>& where,
    const std::string& name) const {
  std::vector<const Node*> nodes;
  for (const Node* n : *order_) {
    auto w = where.find(n);
    if (n->op() == op && w != where.end() && w->second == name)
      nodes.push_back(n);
  }
  return nodes;
}

// One in-graph conditional as an ONNX If: each branch computes the inputs
// of the conditional's merges on its side; the merges are its outputs.
// What a branch reads through a switch it reads from outside directly.
absl::Status Exporter::If(const std::string& pred,
                          const std::vector<const Node*>& order) {
  std::vector<const Node*> merges;
  for (const Node* n : order) {
    auto it = cond_of_.find(n);
    if (it == cond_of_.end() || it->second != pred) continue;
    if (n->op() == "switch") {
      Alias(*n, 0, In(*n, 0));
      Alias(*n, 1, In(*n, 0));
    } else {
      merges.push_back(n);
    }
  }
  onnx::GraphProto* outer = g_;
  const std::string base = StrCat(merges.front()->name(), "/if");
  onnx::GraphProto branches[2];
  std::set<const Node*> done;
  std::set<std::string> inner, loops;
  std::function<absl::Status(const Node*, int)> emit =
      [&](const Node* n, int side) -> absl::Status {
    auto it = branch_of_.find(n);
    if (it == branch_of_.end() || it->second.first != pred ||
        done.count(n) > 0) {
      return absl::OkStatus();
    }
    if (it->second.second != side)
      return Refuse(*n, "a value of the other branch");
    // A loop inside this branch (one of its exits is read) as a Loop in the
    // branch, after what its enters read.
    if (n->op() == "exit") {
      const std::string& frame = frame_of_.at(n);
      if (!loops.insert(frame).second) return absl::OkStatus();
      for (const Node* enter : NodesOf("enter", frame_of_, frame))
        RN_RETURN_IF_ERROR(emit(enter->input(0).node, side));
      return Loop(frame, order);
    }
    // A conditional inside this branch (one of its merges is read) as an
    // If in the branch, after its predicate and what its switches pass in.
    if (auto c = cond_of_.find(n); c != cond_of_.end() && n->op() == "merge") {
      if (!inner.insert(c->second).second) return absl::OkStatus();
      for (const Node* sw : NodesOf("switch", cond_of_, c->second)) {
        RN_RETURN_IF_ERROR(emit(sw->input(0).node, side));
        RN_RETURN_IF_ERROR(emit(sw->input(1).node, side));
      }
      return If(c->second, order);
    }
    done.insert(n);
    for (const NodeOut& in : n->inputs())
      RN_RETURN_IF_ERROR(emit(in.node, side));
    for (const Node* c : n->control_inputs()) RN_RETURN_IF_ERROR(emit(c, side));
    return Node_(*n);
  };
  for (int side = 0; side < 2; ++side) {
    onnx::GraphProto& g = branches[side];
    g.set_name(StrCat(base, side == 1 ? "/then" : "/else"));
    g_ = &g;
    for (size_t k = 0; k < merges.size(); ++k) {
      // The merge's input on this side.
      const Node* m = merges[k];
      std::optional<NodeOut> value;
      for (const NodeOut& in : m->inputs()) {
        auto sw = cond_of_.find(in.node);
        const int in_side =
            sw != cond_of_.end() && in.node->op() == "switch"
                ? in.index
                : (branch_of_.count(in.node) ? branch_of_.at(in.node).second
                                             : -1);
        if (in_side == side) value = in;
      }
      if (!value) return Refuse(*m, "a merge without a value from each branch");
      RN_RETURN_IF_ERROR(emit(value->node, side));
      const std::string out = StrCat(base, side == 1 ? "/then_" : "/else_", k);
      onnx::NodeProto* p = g.add_node();
      p->set_op_type("Identity");
      p->set_name(out);
      p->add_input(Name(*value));
      p->add_output(out);
      Describe(m->output(0), out, g.add_output());
    }
  }
  g_ = outer;
  onnx::NodeProto* node = g_->add_node();
  node->set_op_type("If");
  node->set_name(base);
  node->add_input(pred);
  for (size_t k = 0; k < merges.size(); ++k) {
    const std::string out = StrCat(base, "/out_", k);
    node->add_output(out);
    Alias(*merges[k], 0, out);
  }
  for (int side = 1; side >= 0; --side) {
    onnx::AttributeProto* a = node->add_attribute();
    a->set_name(side == 1 ? "then_branch" : "else_branch");
    a->set_type(onnx::AttributeProto::GRAPH);
    *a->mutable_g() = std::move(branches[side]);
  }
  return absl::OkStatus();
}

// One in-graph loop as an ONNX Loop. Runnel's loop (TensorFlow's form:
// enter, merge, switch, exit, next_iteration) tests its condition before
// each iteration; ONNX's Loop tests it after. So the Loop's body first
// computes the condition on its state, then, in an If, either the next
// state (the condition held) or the same state (it did not, and the Loop
// stops): the Loop runs one more time than Runnel's loop, changing
// nothing in that last pass.
absl::Status Exporter::Loop(const std::string& frame,
                            const std::vector<const Node*>& order) {
  std::vector<const Node*> members, merges;
  const Node* cond = nullptr;
  for (const Node* n : order) {
    auto it = frame_of_.find(n);
    if (it == frame_of_.end() || it->second != frame) continue;
    members.push_back(n);
    if (n->op() == "merge" && cond_of_.count(n) == 0) merges.push_back(n);
    if (n->op() == "loop_cond") cond = n;
  }
  if (cond == nullptr || merges.empty())
    return Refuse(*members.front(), "a loop without a condition");
  // Each loop variable: its merge, its initial value's enter and its next
  // value's next_iteration.
  struct Var {
    const Node* merge;
    const Node* enter = nullptr;
    const Node* next = nullptr;
  };
  std::vector<Var> vars;
  std::map<const Node*, int> var_of;  // merge -> var
  for (const Node* m : merges) {
    Var v{m};
    for (const NodeOut& in : m->inputs()) {
      if (in.node->op() == "enter") v.enter = in.node;
      if (in.node->op() == "next_iteration") v.next = in.node;
    }
    if (v.enter == nullptr || v.next == nullptr)
      return Refuse(*m, "a merge that is not a loop variable's");
    var_of[m] = static_cast<int>(vars.size());
    vars.push_back(v);
  }
  onnx::GraphProto* outer = g_;
  const std::string base = cond->name();  // unique, in the loop's scope
  // The body's inputs: the iteration number, the condition, the state.
  onnx::GraphProto body;
  body.set_name(StrCat(base, "/body"));
  auto scalar_input = [](onnx::GraphProto* g, const std::string& name,
                         int32_t type) {
    onnx::ValueInfoProto* in = g->add_input();
    in->set_name(name);
    in->mutable_type()->mutable_tensor_type()->set_elem_type(type);
    in->mutable_type()->mutable_tensor_type()->mutable_shape();
  };
  scalar_input(&body, StrCat(base, "/iteration"), onnx::INT64);
  scalar_input(&body, StrCat(base, "/cond_in"), onnx::BOOL);
  for (const Var& v : vars)
    Describe(v.merge->output(0), Out(*v.merge), body.add_input());
  // What reads the state reads the body's inputs; what reads an invariant
  // reads the outer value.
  std::set<const Node*> done;
  for (const Node* n : members) {
    const std::string& op = n->op();
    if (op == "enter") {
      if (n->attr<bool>("is_constant").value_or(false)) Alias(*n, 0, In(*n, 0));
      done.insert(n);
    } else if (op == "merge" && cond_of_.count(n) == 0) {
      done.insert(n);
    } else if (op == "switch" && cond_of_.count(n) == 0) {
      auto v = var_of.find(n->input(0).node);
      if (v == var_of.end())
        return Refuse(*n, "a switch that is not a loop variable's");
      Alias(*n, 1, Out(*vars[v->second].merge));
      done.insert(n);
    }
  }
  // Emits, into the current graph, the members `roots` need that are not
  // done yet, inputs first; a loop inside this one (an exit of it is read)
  // as a Loop, after what its enters read.
  std::set<std::string> inner_done, conds_done;
  std::function<absl::Status(const Node*)> emit =
      [&](const Node* n) -> absl::Status {
    auto it = frame_of_.find(n);
    if (it == frame_of_.end() || done.count(n) > 0) return absl::OkStatus();
    if (it->second != frame) {
      const std::string& inner = it->second;
      if (parent_frame_[inner] != frame || !inner_done.insert(inner).second)
        return absl::OkStatus();
      for (const Node* enter : NodesOf("enter", frame_of_, inner))
        RN_RETURN_IF_ERROR(emit(enter->input(0).node));
      return Loop(inner, order);
    }
    // A conditional in the body (one of its merges is read) as an If, after
    // its predicate and what its switches pass in.
    if (auto c = cond_of_.find(n); c != cond_of_.end() && n->op() == "merge") {
      if (!conds_done.insert(c->second).second) return absl::OkStatus();
      for (const Node* sw : NodesOf("switch", cond_of_, c->second)) {
        RN_RETURN_IF_ERROR(emit(sw->input(0).node));
        RN_RETURN_IF_ERROR(emit(sw->input(1).node));
      }
      return If(c->second, order);
    }
    done.insert(n);
    for (const NodeOut& in : Followed(*n)) RN_RETURN_IF_ERROR(emit(in.node));
    if (n->op() == "exit" || n->op() == "next_iteration" ||
        n->op() == "loop_cond") {
      return absl::OkStatus();
    }
    return Node_(*n);
  };
  g_ = &body;
  RN_RETURN_IF_ERROR(emit(cond));
  const std::string c = In(*cond, 0);
  // The If: the next state, or the same one.
  onnx::GraphProto then_branch, else_branch;
  then_branch.set_name(StrCat(base, "/then"));
  else_branch.set_name(StrCat(base, "/else"));
  g_ = &then_branch;
  for (const Var& v : vars) RN_RETURN_IF_ERROR(emit(v.next->input(0).node));
  for (size_t k = 0; k < vars.size(); ++k) {
    const TensorSpec& spec = vars[k].merge->output(0);
    const std::string next = StrCat(base, "/next_", k),
                      same = StrCat(base, "/same_", k);
    onnx::NodeProto* p = then_branch.add_node();
    p->set_op_type("Identity");
    p->set_name(next);
    p->add_input(In(*vars[k].next, 0));
    p->add_output(next);
    Describe(spec, next, then_branch.add_output());
    p = else_branch.add_node();
    p->set_op_type("Identity");
    p->set_name(same);
    p->add_input(Out(*vars[k].merge));
    p->add_output(same);
    Describe(spec, same, else_branch.add_output());
  }
  g_ = &body;
  onnx::NodeProto* branch = body.add_node();
  branch->set_op_type("If");
  branch->set_name(StrCat(base, "/step"));
  branch->add_input(c);
  for (size_t k = 0; k < vars.size(); ++k)
    branch->add_output(StrCat(base, "/state_", k));
  for (auto [name, graph] : {std::pair{"then_branch", &then_branch},
                             {"else_branch", &else_branch}}) {
    onnx::AttributeProto* a = branch->add_attribute();
    a->set_name(name);
    a->set_type(onnx::AttributeProto::GRAPH);
    *a->mutable_g() = std::move(*graph);
  }
  onnx::NodeProto* keep = body.add_node();
  keep->set_op_type("Identity");
  keep->set_name(StrCat(base, "/cond_out"));
  keep->add_input(c);
  keep->add_output(StrCat(base, "/cond_out"));
  onnx::ValueInfoProto* cond_out = body.add_output();
  cond_out->set_name(StrCat(base, "/cond_out"));
  cond_out->mutable_type()->mutable_tensor_type()->set_elem_type(onnx::BOOL);
  for (size_t k = 0; k < vars.size(); ++k) {
    Describe(vars[k].merge->output(0), StrCat(base, "/state_", k),
             body.add_output());
  }
  // The Loop, in the graph around it: no trip count, the condition true at
  // first, the initial state; its outputs are the exits.
  g_ = outer;
  const std::string start =
      Initializer(Tensor::Scalar(true), StrCat(base, "/start"));
  onnx::NodeProto* loop = g_->add_node();
  loop->set_op_type("Loop");
  loop->set_name(StrCat(base, "/loop"));
  loop->add_input("");
  loop->add_input(start);
  for (const Var& v : vars) loop->add_input(In(*v.enter, 0));
  for (size_t k = 0; k < vars.size(); ++k)
    loop->add_output(StrCat(base, "/final_", k));
  onnx::AttributeProto* a = loop->add_attribute();
  a->set_name("body");
  a->set_type(onnx::AttributeProto::GRAPH);
  *a->mutable_g() = std::move(body);
  for (const Node* n : members) {
    if (n->op() != "exit") continue;
    const Node* sw = n->input(0).node;
    auto v =
        sw->op() == "switch" ? var_of.find(sw->input(0).node) : var_of.end();
    if (v == var_of.end())
      return Refuse(*n, "an exit that is not a loop variable's");
    Alias(*n, 0, StrCat(base, "/final_", v->second));
  }
  return absl::OkStatus();
}

// Drops the initializers no node reads (a constant a translation replaced
// by one of its own, such as a reshape's shape in i64), keeping the
// inputs' defaults.
void Exporter::PruneInitializers() {
  std::set<std::string> used;
  std::function<void(const onnx::GraphProto&)> uses =
      [&](const onnx::GraphProto& g) {
        for (const onnx::NodeProto& n : g.node()) {
          used.insert(n.input().begin(), n.input().end());
          for (const onnx::AttributeProto& a : n.attribute()) {
            if (a.has_g()) uses(a.g());  // a loop's body, an if's branches
          }
        }
        for (const onnx::ValueInfoProto& v : g.output()) used.insert(v.name());
      };
  uses(*main_);
  for (const onnx::ValueInfoProto& v : main_->input()) used.insert(v.name());
  auto* inits = main_->mutable_initializer();
  inits->erase(std::remove_if(inits->begin(), inits->end(),
                              [&](const onnx::TensorProto& t) {
                                return used.count(t.name()) == 0;
                              }),
               inits->end());
}

absl::Status Exporter::Run(const std::vector<OnnxExportFetch>& fetches,
                           const std::string& path) {
  // The nodes the fetches need, in an order where inputs come first.
  std::vector<const Node*> order;
  std::set<const Node*> seen;
  std::function<absl::Status(const Node*)> visit =
      [&](const Node* n) -> absl::Status {
    if (!seen.insert(n).second) return absl::OkStatus();
    for (const NodeOut& in : Followed(*n)) RN_RETURN_IF_ERROR(visit(in.node));
    order.push_back(n);
    return absl::OkStatus();
  };
  for (const OnnxExportFetch& f : fetches)
    RN_RETURN_IF_ERROR(visit(f.value.node));
  for (const OnnxExportFetch& f : fetches) fetch_names_[f.name] = f.value;
  order_ = &order;
  RN_RETURN_IF_ERROR(FindFrames(order));
  RN_RETURN_IF_ERROR(FindConds(order));
  model_.set_ir_version(kIrVersion);
  model_.set_producer_name("runnel");

  onnx::OperatorSetIdProto* opset = model_.add_opset_import();
  opset->set_domain("");
  opset->set_version(kOpset);
  g_->set_name("runnel");
  for (const OnnxExportFetch& f : fetches)
    RN_RETURN_IF_ERROR(Ensure(f.value.node));
  for (const OnnxExportFetch& f : fetches) {
    // Each output has the fetch's name: the value's own, or an Identity.
    if (Name(f.value) != f.name) {
      if (seen_names_.count(f.name) > 0) {
        return absl::InvalidArgumentError(StrCat(
            "--fetch ", f.name, ": another value of the graph has that name"));
      }
      onnx::NodeProto* p = g_->add_node();
      p->set_op_type("Identity");
      p->set_name(StrCat("output/", f.name));
      p->add_input(Name(f.value));
      p->add_output(f.name);
    }
    Describe(f.value.node->output(f.value.index), f.name, g_->add_output());
  }
  PruneInitializers();
  std::string bytes;
  if (!model_.SerializeToString(&bytes)) {
    return absl::InternalError("the ONNX model does not serialize");
  }
  AtomicFile file(path, "ONNX model");
  RN_RETURN_IF_ERROR(file.Create());
  RN_RETURN_IF_ERROR(file.Write(bytes.data(), bytes.size()));
  return file.Commit();
}

}  // namespace

absl::Status ExportOnnx(const std::vector<OnnxExportFetch>& fetches,
                        const TensorMap& variables, const std::string& path) {
  Exporter e(variables);
  return e.Run(fetches, path);
}

}  // namespace runnel
