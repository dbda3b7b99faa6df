// Gradient functions of the linear-algebra and neural-network ops
// (nn_ops.cc) and of the random ops (random_ops.cc).
#include <utility>

#include "common_runtime/gradients.h"
#include "framework/ops/kernel_checks.h"

namespace runnel {
namespace {

// The gradients of a and b in op(a) @ op(b) for the product's gradient d:
// each a matmul of d with the other operand, summed back over broadcast
// batch dimensions.
std::pair<NodeOut, NodeOut> MatMulOperandGrads(GradBuilder& g, NodeOut a,
                                               NodeOut b, NodeOut d) {
  const bool ta = g.attr_or<bool>("transpose_a", false);
  const bool tb = g.attr_or<bool>("transpose_b", false);
  auto mm = [&](NodeOut p, NodeOut q, bool tp, bool tq) {
    return g.Op("matmul", {p, q}, {{"transpose_a", tp}, {"transpose_b", tq}});
  };
  const Shape& as = g.shape(a);
  const Shape& bs = g.shape(b);
  if (!ta && !as.unknown_rank() && as.rank() > 2 && bs.rank() == 2 &&
      bs.IsFullyDefined()) {
    // A stack of matrices times one matrix (a dense layer on a batch of
    // sequences): b's gradient is one product over all the stack's rows,
    // not one per matrix summed afterwards.
    const int64_t k = tb ? bs.dim(1) : bs.dim(0);
    const int64_t n = tb ? bs.dim(0) : bs.dim(1);
    auto rows = [&](NodeOut t, int64_t cols) {
      return g.Op(
          "reshape",
          {t, g.Const(Tensor::FromVector<int64_t>({-1, cols}, Shape{2}))});
    };
    const NodeOut db = tb ? mm(rows(d, n), rows(a, k), true, false)
                          : mm(rows(a, k), rows(d, n), true, false);
    return {g.SumToLike(mm(d, b, false, !tb), a), db};
  }
  NodeOut da, db;
  if (!ta && !tb) {
    da = mm(d, b, false, true);
    db = mm(a, d, true, false);
  } else if (!ta && tb) {
    da = mm(d, b, false, false);
    db = mm(d, a, true, false);
  } else if (ta && !tb) {
    da = mm(b, d, false, true);
    db = mm(a, d, false, false);
  } else {
    da = mm(b, d, true, true);
    db = mm(d, a, true, true);
  }
  return {g.SumToLike(da, a), g.SumToLike(db, b)};
}

// matmul(a, b, transpose_a, transpose_b), with batch dimensions that
// broadcast.
RUNNEL_REGISTER_GRADIENT("matmul",
                         [](GradBuilder& g, const Grads& dy) -> Grads {
                           auto [da, db] =
                               MatMulOperandGrads(g, g.x(0), g.x(1), dy[0]);
                           return {da, db};
                         });
// matmul_add(acc, a, b) = acc + op(a) @ op(b).
RUNNEL_REGISTER_GRADIENT("matmul_add",
                         [](GradBuilder& g, const Grads& dy) -> Grads {
                           auto [da, db] =
                               MatMulOperandGrads(g, g.x(1), g.x(2), dy[0]);
                           return {dy[0], da, db};
                         });

AttrMap AxisKeep(int64_t axis) { return {{"axis", axis}, {"keepdims", true}}; }

// softmax along `axis`: dx = (dy - sum(dy * y)) * y, with y the op's
// output; along the last axis the fused softmax_grad.
NodeOut SoftmaxGrad(GradBuilder& g, NodeOut dy, int64_t axis) {
  NodeOut y = g.y();
  const Shape& shape = g.shape(y);
  if (axis == -1 || (!shape.unknown_rank() && axis == shape.rank() - 1)) {
    return g.Op("softmax_grad", {dy, y});
  }
  NodeOut s = g.Op("sum", {g.Mul(dy, y)}, AxisKeep(axis));
  return g.Mul(g.Sub(dy, s), y);
}

// softmax_grad(dy, y) = (dy - s) * y with s = sum(dy * y) along the last
// axis. For an incoming d: d/d(dy) = softmax_grad(d, y), and d/dy = d *
// (dy - s) - dy * sum(d * y).
RUNNEL_REGISTER_GRADIENT(
    "softmax_grad", [](GradBuilder& g, const Grads& d) -> Grads {
      NodeOut dy = g.x(0), y = g.x(1);
      NodeOut s = g.Op("sum", {g.Mul(dy, y)}, AxisKeep(-1));
      NodeOut t = g.Op("sum", {g.Mul(d[0], y)}, AxisKeep(-1));
      return {g.Op("softmax_grad", {d[0], y}),
              g.Sub(g.Mul(d[0], g.Sub(dy, s)), g.Mul(dy, t))};
    });

// layer_norm: its three gradients in one layer_norm_grad from the forward
// statistics. The statistics are outputs for the gradient only: a graph
// that differentiates them is refused rather than given a wrong gradient.
RUNNEL_REGISTER_GRADIENT(
    "layer_norm", [](GradBuilder& g, const Grads& dy) -> Grads {
      if (dy[1].node != nullptr || dy[2].node != nullptr) {
        g.Fail(absl::UnimplementedError(
            "grad: the gradient of layer_norm's mean and rstd outputs is "
            "not supported (only its output y has one)"));
        return {};
      }
      std::vector<NodeOut> d =
          g.OpN("layer_norm_grad", {dy[0], g.x(0), g.x(1), g.y(1), g.y(2)});
      if (d.size() != 3) return {};
      return {d[0], d[1], d[2]};
    });

// The fused recurrent cells: their gradients in one op each, which
// recomputes the activations from the cell's inputs. An output without a
// gradient (a final state no loss reads) counts as zeros.
RUNNEL_REGISTER_GRADIENT(
    "lstm_cell", [](GradBuilder& g, const Grads& dy) -> Grads {
      const NodeOut dh = dy[0].node != nullptr ? dy[0] : g.ZerosLike(g.y(0));
      const NodeOut dc = dy[1].node != nullptr ? dy[1] : g.ZerosLike(g.y(1));
      std::vector<NodeOut> d =
          g.OpN("lstm_cell_grad", {g.x(0), g.x(1), dh, dc});
      if (d.size() != 2) return {};
      return {d[0], d[1]};
    });

// lstm_sequence: the steps backwards in one lstm_sequence_grad (which
// gives the bias's gradient too, used when there is one). Its cs and
// gates outputs are what that gradient reads, not values of the model:
// they have no gradient of their own. An output without a gradient counts
// as zeros.
RUNNEL_REGISTER_GRADIENT(
    "lstm_sequence", [](GradBuilder& g, const Grads& dy) -> Grads {
      if (dy[3].node != nullptr || dy[4].node != nullptr) {
        g.Fail(absl::UnimplementedError(
            "grad: lstm_sequence's cs and gates outputs (saved for its "
            "gradient) have no gradient; only hs, h and c have one"));
        return {};
      }
      NodeOut d_out[3];
      for (int i = 0; i < 3; ++i) {
        d_out[i] = dy[i].node != nullptr ? dy[i] : g.ZerosLike(g.y(i));
      }
      std::vector<NodeOut> in = {g.y(4), g.y(3),   g.y(0),   g.x(1),  g.x(2),
                                 g.x(3), d_out[0], d_out[1], d_out[2]};
      const int at = SequenceLengthsInput(g.node().attrs());
      const bool lengths = g.node().num_inputs() > at;
      if (lengths) in.push_back(g.x(at));
      std::vector<NodeOut> d = g.OpN("lstm_sequence_grad", in);
      if (d.size() != 5) return {};
      Grads out = {d[0], d[1], d[2], d[3]};
      if (at == 5) out.push_back(d[4]);  // the bias
      if (lengths) out.push_back({});    // the lengths: integers
      return out;
    });

RUNNEL_REGISTER_GRADIENT("gru_cell",
                         [](GradBuilder& g, const Grads& dy) -> Grads {
                           std::vector<NodeOut> d =
                               g.OpN("gru_cell_grad",
                                     {g.x(0), g.x(1), g.x(2), dy[0]});
                           if (d.size() != 3) return {};
                           return {d[0], d[1], d[2]};
                         });

// batch_norm (training): its three gradients in one batch_norm_grad from
// the batch's statistics, which feed the moving statistics only.
RUNNEL_REGISTER_GRADIENT(
    "batch_norm", [](GradBuilder& g, const Grads& dy) -> Grads {
      if (dy[1].node != nullptr || dy[2].node != nullptr) {
        g.Fail(absl::UnimplementedError(
            "grad: the gradient of batch_norm's mean and variance outputs "
            "is not supported (only its output y has one)"));
        return {};
      }
      std::vector<NodeOut> d =
          g.OpN("batch_norm_grad", {dy[0], g.x(0), g.x(1), g.y(1), g.y(2)},
                {{"eps", g.attr_or<double>("eps", 1e-5)}});
      if (d.size() != 3) return {};
      return {d[0], d[1], d[2]};
    });

RUNNEL_REGISTER_GRADIENT(
    "batch_norm_grad", [](GradBuilder& g, const Grads&) -> Grads {
      g.Fail(absl::UnimplementedError(
          "grad: the second derivative of batch_norm (a gradient of "
          "batch_norm_grad) is not supported"));
      return {};
    });

// The second derivatives of the fused cells: refused at the node.
RUNNEL_REGISTER_GRADIENT(
    "lstm_cell_grad", [](GradBuilder& g, const Grads&) -> Grads {
      g.Fail(absl::UnimplementedError(
          "grad: the second derivative of lstm_cell (a gradient of "
          "lstm_cell_grad) is not supported"));
      return {};
    });

RUNNEL_REGISTER_GRADIENT(
    "lstm_sequence_grad", [](GradBuilder& g, const Grads&) -> Grads {
      g.Fail(absl::UnimplementedError(
          "grad: the second derivative of lstm_sequence (a gradient of "
          "lstm_sequence_grad) is not supported"));
      return {};
    });

RUNNEL_REGISTER_GRADIENT(
    "gru_cell_grad", [](GradBuilder& g, const Grads&) -> Grads {
      g.Fail(absl::UnimplementedError(
          "grad: the second derivative of gru_cell (a gradient of "
          "gru_cell_grad) is not supported"));
      return {};
    });

// The second derivative of layer_norm: refused with an error at the node
// (not a silent zero), as would be the statistics' gradients it needs.
RUNNEL_REGISTER_GRADIENT(
    "layer_norm_grad", [](GradBuilder& g, const Grads&) -> Grads {
      g.Fail(absl::UnimplementedError(
          "grad: the second derivative of layer_norm (a gradient of "
          "layer_norm_grad) is not supported"));
      return {};
    });

RUNNEL_REGISTER_GRADIENT("softmax", [](GradBuilder& g, const Grads& dy) {
  return Grads{SoftmaxGrad(g, dy[0], g.attr_or<int64_t>("axis", -1))};
});

// scaled_dot_product_attention(q, k, v, keep): the fused gradient op, its
// gradients summed back over broadcast batch dims; the mask has none.
RUNNEL_REGISTER_GRADIENT("scaled_dot_product_attention",
                         [](GradBuilder& g, const Grads& dy) -> Grads {
                           const std::vector<NodeOut> d = g.OpN(
                               "scaled_dot_product_attention_grad",
                               {g.x(0), g.x(1), g.x(2), g.x(3), dy[0]},
                               {{"scale", g.attr_or<double>("scale", 1.0)},
                                {"rsqrt_d", g.attr_or<bool>("rsqrt_d", true)},
                                {"layout",
                                 g.attr_or<std::string>("layout", "bhtd")}});
                           if (d.size() != 3) return {};
                           return {g.SumToLike(d[0], g.x(0)),
                                   g.SumToLike(d[1], g.x(1)),
                                   g.SumToLike(d[2], g.x(2)),
                                   {}};
                         });

// masked_softmax: softmax's rule, which gives 0 where y is 0 (the dropped
// elements, and lines that keep nothing); the mask has no gradient.
RUNNEL_REGISTER_GRADIENT("masked_softmax",
                         [](GradBuilder& g, const Grads& dy) -> Grads {
                           return {SoftmaxGrad(g, dy[0], -1), {}};
                         });

// log_softmax: dx = dy - softmax(x) * sum(dy).
RUNNEL_REGISTER_GRADIENT("log_softmax",
                         [](GradBuilder& g, const Grads& dy) -> Grads {
                           const int64_t axis = g.attr_or<int64_t>("axis", -1);
                           NodeOut s = g.Op("sum", {dy[0]}, AxisKeep(axis));
                           NodeOut p = g.Op("exp", {g.y()});
                           return {g.Sub(dy[0], g.Mul(p, s))};
                         });

// loss = -sum(p * log_softmax(l)):
//   d/dl = softmax(l) * sum(p) - p,  d/dp = -log_softmax(l).
RUNNEL_REGISTER_GRADIENT(
    "softmax_cross_entropy", [](GradBuilder& g, const Grads& dy) -> Grads {
      NodeOut l = g.x(0), p = g.x(1);
      NodeOut d = g.Op("expand_dims", {dy[0]}, {{"axis", int64_t{-1}}});
      NodeOut total = g.Op("sum", {p}, AxisKeep(-1));
      NodeOut dl = g.Sub(g.Mul(g.Op("softmax", {l}), total), p);
      NodeOut dp = g.Neg(g.Op("log_softmax", {l}));
      return {g.Mul(d, dl), g.Mul(d, dp)};
    });

// loss = -log_softmax(l)[label]: d/dl = softmax(l) - one_hot(label).
RUNNEL_REGISTER_GRADIENT(
    "sparse_softmax_cross_entropy",
    [](GradBuilder& g, const Grads& dy) -> Grads {
      NodeOut l = g.x(0), labels = g.x(1);
      const Shape& ls = g.shape(l);
      const DType dt = g.dtype(l);
      NodeOut hot;
      if (!ls.unknown_rank() && ls.dim(ls.rank() - 1) >= 0) {
        hot = g.Op("one_hot", {labels},
                   {{"depth", ls.dim(ls.rank() - 1)},
                    {"dtype", dt},
                    {"axis", int64_t{-1}}});
      } else {
        // The class count is known only at run time: compare each label
        // with range(classes).
        const DType lt = g.dtype(labels);
        NodeOut classes = g.Cast(
            g.Op("dynamic_index",
                 {g.Op("shape_of", {l}), g.Const(Tensor::Scalar<int32_t>(-1))}),
            lt);
        NodeOut ids = g.Op(
            "range", {g.Cast(g.Const(Tensor::Scalar<int32_t>(0)), lt), classes,
                      g.Cast(g.Const(Tensor::Scalar<int32_t>(1)), lt)});
        hot = g.Cast(
            g.Op("equal",
                 {g.Op("expand_dims", {labels}, {{"axis", int64_t{-1}}}), ids}),
            dt);
      }
      NodeOut d = g.Op("expand_dims", {dy[0]}, {{"axis", int64_t{-1}}});
      return {g.Mul(d, g.Sub(g.Op("softmax", {l}), hot)), {}};
    });

// loss = max(x, 0) - x z + log(1 + exp(-|x|)):
//   d/dx = sigmoid(x) - z,  d/dz = -x.
RUNNEL_REGISTER_GRADIENT("sigmoid_cross_entropy",
                         [](GradBuilder& g, const Grads& dy) -> Grads {
                           NodeOut x = g.x(0), z = g.x(1), d = dy[0];
                           NodeOut dx =
                               g.Mul(d, g.Sub(g.Op("sigmoid", {x}), z));
                           NodeOut dz = g.Neg(g.Mul(d, x));
                           return {g.SumToLike(dx, x), g.SumToLike(dz, z)};
                         });

// l2_loss = sum(x^2) / 2: dx = dy * x.
RUNNEL_REGISTER_GRADIENT("l2_loss",
                         [](GradBuilder& g, const Grads& dy) -> Grads {
                           return {g.Mul(dy[0], g.x())};
                         });

// bias_add: the bias gradient sums over every axis but the last.
RUNNEL_REGISTER_GRADIENT("bias_add",
                         [](GradBuilder& g, const Grads& dy) -> Grads {
                           return {dy[0], g.SumToLike(dy[0], g.x(1))};
                         });

AttrMap Copy(const GradBuilder& g, std::initializer_list<const char*> names) {
  AttrMap out;
  for (const char* n : names) {
    auto it = g.node().attrs().find(n);
    if (it != g.node().attrs().end()) out[n] = it->second;
  }
  return out;
}

// The gradients of conv2d and conv3d (`conv` names the forward op), and of
// the pools (`pool` is max_pool, avg_pool or their 3-D forms).
GradFn ConvGrad(std::string conv) {
  return [conv](GradBuilder& g, const Grads& dy) -> Grads {
    AttrMap attrs = Copy(g, {"strides", "padding", "dilations"});
    NodeOut x = g.x(0), w = g.x(1);
    return {g.Op(conv + "_backprop_input", {x, w, dy[0]}, attrs),
            g.Op(conv + "_backprop_filter", {x, w, dy[0]}, attrs)};
  };
}
GradFn PoolGrad(std::string pool, bool max) {
  return [pool, max](GradBuilder& g, const Grads& dy) -> Grads {
    AttrMap attrs = Copy(g, {"size", "strides", "padding", "dilations"});
    if (max) return {g.Op(pool + "_grad", {g.x(), g.y(), dy[0]}, attrs)};
    return {g.Op(pool + "_grad", {g.x(), dy[0]}, attrs)};
  };
}
RUNNEL_REGISTER_GRADIENT("conv2d", ConvGrad("conv2d"));
RUNNEL_REGISTER_GRADIENT("conv3d", ConvGrad("conv3d"));
RUNNEL_REGISTER_GRADIENT("max_pool", PoolGrad("max_pool", true));
RUNNEL_REGISTER_GRADIENT("max_pool3d", PoolGrad("max_pool3d", true));
RUNNEL_REGISTER_GRADIENT("avg_pool", PoolGrad("avg_pool", false));
RUNNEL_REGISTER_GRADIENT("avg_pool3d", PoolGrad("avg_pool3d", false));
// The maxima's gradient as max_pool's (max_pool_grad picks the same tap);
// the positions have none.
RUNNEL_REGISTER_GRADIENT(
    "max_pool_with_argmax", [](GradBuilder& g, const Grads& dy) -> Grads {
      if (dy[0].node == nullptr) return {{}};
      return {g.Op("max_pool_grad", {g.x(), g.y(0), dy[0]},
                   Copy(g, {"size", "strides", "padding", "dilations"}))};
    });

// resize is linear in x: its adjoint shares dy back by the same weights,
// and the adjoint's own gradient is resize again.
RUNNEL_REGISTER_GRADIENT("resize",
                         [](GradBuilder& g, const Grads& dy) -> Grads {
                           return {g.Op(
                               "resize_grad", {dy[0], g.x()},
                               Copy(g, {"size", "method", "coordinates"}))};
                         });
RUNNEL_REGISTER_GRADIENT("resize_grad",
                         [](GradBuilder& g, const Grads& d) -> Grads {
                           return {
                               g.Op("resize", {d[0]},
                                    Copy(g, {"size", "method", "coordinates"})),
                               {}};
                         });

RUNNEL_NO_GRADIENT("non_max_suppression");

// The backward ops are linear in dy (and the conv ones in the filters or
// the input too), which gives their own gradients, for gradients of
// gradients. With <conv2d(x, w), dy> = <x, backprop_input(w, dy)>
// = <w, backprop_filter(x, dy)>:
GradFn ConvBackpropGrad(std::string conv, bool filter) {
  return [conv, filter](GradBuilder& g, const Grads& d) -> Grads {
    AttrMap attrs = Copy(g, {"strides", "padding", "dilations"});
    NodeOut x = g.x(0), w = g.x(1), dy = g.x(2);
    if (filter) {
      return {g.Op(conv + "_backprop_input", {x, d[0], dy}, attrs),
              {},
              g.Op(conv, {x, d[0]}, attrs)};
    }
    return {{},
            g.Op(conv + "_backprop_filter", {d[0], w, dy}, attrs),
            g.Op(conv, {d[0], w}, attrs)};
  };
}
GradFn AvgPoolGradGrad(std::string pool) {
  return [pool](GradBuilder& g, const Grads& d) -> Grads {
    return {{},
            g.Op(pool, {d[0]},
                 Copy(g, {"size", "strides", "padding", "dilations"}))};
  };
}
RUNNEL_REGISTER_GRADIENT("conv2d_backprop_input",
                         ConvBackpropGrad("conv2d", false));
RUNNEL_REGISTER_GRADIENT("conv2d_backprop_filter",
                         ConvBackpropGrad("conv2d", true));
RUNNEL_REGISTER_GRADIENT("conv3d_backprop_input",
                         ConvBackpropGrad("conv3d", false));
RUNNEL_REGISTER_GRADIENT("conv3d_backprop_filter",
                         ConvBackpropGrad("conv3d", true));
RUNNEL_REGISTER_GRADIENT("avg_pool_grad", AvgPoolGradGrad("avg_pool"));
RUNNEL_REGISTER_GRADIENT("avg_pool3d_grad", AvgPoolGradGrad("avg_pool3d"));

// dropout's second output is the mask it multiplied by: y = x * scale.
// Its replay (a recomputed loop's, framework/ops/random_ops.cc) also takes
// `first`, which has no gradient.
Grads DropoutGrad(GradBuilder& g, const Grads& dy) {
  Grads dx = {g.Mul(dy[0], g.y(1)), {}, {}};
  if (g.node().num_inputs() == 4) dx.push_back({});
  return dx;
}
RUNNEL_REGISTER_GRADIENT("dropout", DropoutGrad);
RUNNEL_REGISTER_GRADIENT("dropout_at", DropoutGrad);

RUNNEL_NO_GRADIENT("random_normal");
RUNNEL_NO_GRADIENT("random_uniform");
RUNNEL_NO_GRADIENT("truncated_normal");
RUNNEL_NO_GRADIENT("random_normal_at");
RUNNEL_NO_GRADIENT("random_uniform_at");
RUNNEL_NO_GRADIENT("truncated_normal_at");
RUNNEL_NO_GRADIENT("random_reserve");

}  // namespace
}  // namespace runnel
