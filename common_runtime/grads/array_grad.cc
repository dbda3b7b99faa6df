// Gradient functions of the shape and data-movement ops (array_ops.cc,
// core_ops.cc) and the list of ops gradients stop at.
#include "base/strings.h"
#include "common_runtime/gradients.h"

namespace runnel {
namespace {

Grads PassThrough(GradBuilder& g, const Grads& dy) {
  Grads out(g.node().num_inputs());
  out[0] = dy[0];
  return out;
}

Grads ReshapeBack(GradBuilder& g, const Grads& dy) {
  Grads out(g.node().num_inputs());
  out[0] = g.ReshapeLike(dy[0], g.x());
  return out;
}

RUNNEL_REGISTER_GRADIENT("identity", PassThrough);
// Every read of a variable passes its gradient on to the variable node, so
// grad(y, w) sums over all the places `w` is read.
RUNNEL_REGISTER_GRADIENT("read_variable", PassThrough);
RUNNEL_REGISTER_GRADIENT("check_numerics", PassThrough);
RUNNEL_REGISTER_GRADIENT("debug_print", PassThrough);
RUNNEL_REGISTER_GRADIENT("placeholder_with_default", PassThrough);
RUNNEL_REGISTER_GRADIENT("reshape", ReshapeBack);
RUNNEL_REGISTER_GRADIENT("expand_dims", ReshapeBack);
RUNNEL_REGISTER_GRADIENT("squeeze", ReshapeBack);

RUNNEL_REGISTER_GRADIENT(
    "transpose", [](GradBuilder& g, const Grads& dy) -> Grads {
      auto perm = GetAttr<std::vector<int64_t>>(g.node().attrs(), "perm");
      if (!perm.ok()) return {g.Op("transpose", {dy[0]})};  // reversal
      std::vector<int64_t> inverse(perm->size());
      for (size_t i = 0; i < perm->size(); ++i) {
        int64_t p = (*perm)[i];
        if (p < 0) p += static_cast<int64_t>(perm->size());
        inverse[p] = static_cast<int64_t>(i);
      }
      return {g.Op("transpose", {dy[0]}, {{"perm", inverse}})};
    });

// concat: each input gets its block of dy back.
RUNNEL_REGISTER_GRADIENT(
    "concat", [](GradBuilder& g, const Grads& dy) -> Grads {
      const Shape& ys = g.shape(g.y());
      const int n = g.node().num_inputs();
      if (ys.unknown_rank()) {
        g.Fail(
            absl::UnimplementedError("the gradient of concat needs the rank"));
        return Grads(n);
      }
      const int rank = ys.rank();
      int64_t axis = g.attr_or<int64_t>("axis", 0);
      if (axis < 0) axis += rank;
      Grads out;
      bool known = true;
      for (int i = 0; i < n; ++i) {
        const Shape& xs = g.shape(g.x(i));
        known = known && !xs.unknown_rank() && xs.dim(axis) >= 0;
      }
      const Shape vec{rank};
      if (!known) {
        // Sizes known only at run time: input i's block of dy starts at the
        // sum of the earlier inputs' shape_of along `axis` and has input
        // i's shape.
        std::vector<int32_t> unit(rank, 0);
        unit[axis] = 1;
        NodeOut along = g.Const(Tensor::FromVector(unit, vec));
        NodeOut begin =
            g.Const(Tensor::FromVector(std::vector<int32_t>(rank, 0), vec));
        for (int i = 0; i < n; ++i) {
          NodeOut size = g.Op("shape_of", {g.x(i)});
          out.push_back(g.Op("slice", {dy[0], begin, size}));
          begin = g.Add(begin, g.Mul(size, along));
        }
        return out;
      }
      int64_t offset = 0;
      for (int i = 0; i < n; ++i) {
        const int64_t len = g.shape(g.x(i)).dim(axis);
        std::vector<int64_t> begin(rank, 0), size(rank, -1);
        begin[axis] = offset;
        size[axis] = len;
        out.push_back(
            g.Op("slice", {dy[0], g.Const(Tensor::FromVector(begin, vec)),
                           g.Const(Tensor::FromVector(size, vec))}));
        offset += len;
      }
      return out;
    });

// stack <-> unstack, split -> concat. Missing output gradients are zeros.
Grads FillZeros(GradBuilder& g, Grads dy) {
  for (int i = 0; i < static_cast<int>(dy.size()); ++i) {
    if (dy[i].node == nullptr) dy[i] = g.ZerosLike(g.y(i));
  }
  return dy;
}
RUNNEL_REGISTER_GRADIENT("stack", [](GradBuilder& g, const Grads& dy) -> Grads {
  const int64_t axis = g.attr_or<int64_t>("axis", 0);
  return g.OpN("unstack", {dy[0]}, {{"axis", axis}});
});
RUNNEL_REGISTER_GRADIENT(
    "unstack", [](GradBuilder& g, const Grads& dy) -> Grads {
      const int64_t axis = g.attr_or<int64_t>("axis", 0);
      return {g.Op("stack", FillZeros(g, dy), {{"axis", axis}})};
    });
RUNNEL_REGISTER_GRADIENT("split", [](GradBuilder& g, const Grads& dy) -> Grads {
  const int64_t axis = g.attr_or<int64_t>("axis", 0);
  return {g.Op("concat", FillZeros(g, dy), {{"axis", axis}})};
});

// Indexing: the backward ops write dy into zeros shaped like x.
RUNNEL_REGISTER_GRADIENT("slice", [](GradBuilder& g, const Grads& dy) -> Grads {
  return {g.Op("slice_grad", {g.x(0), g.x(1), dy[0]}), {}, {}};
});
RUNNEL_REGISTER_GRADIENT(
    "strided_slice", [](GradBuilder& g, const Grads& dy) -> Grads {
      return {g.Op("strided_slice_grad", {g.x(), dy[0]}, g.node().attrs())};
    });
RUNNEL_REGISTER_GRADIENT(
    "dynamic_index", [](GradBuilder& g, const Grads& dy) -> Grads {
      return {g.Op("dynamic_index_grad", {g.x(0), g.x(1), dy[0]}), {}};
    });
// dynamic_update_index: x gets dy less the replaced row, the value that
// row. One op gives both, so dy has a single consumer and is zeroed in place.
RUNNEL_REGISTER_GRADIENT("dynamic_update_index",
                         [](GradBuilder& g, const Grads& dy) -> Grads {
                           std::vector<NodeOut> d = g.OpN(
                               "dynamic_update_index_grad", {dy[0], g.x(1)});
                           return {d[0], {}, d[1]};
                         });
RUNNEL_REGISTER_GRADIENT(
    "dynamic_index_add", [](GradBuilder& g, const Grads& dy) -> Grads {
      return {dy[0], {}, g.Op("dynamic_index", {dy[0], g.x(1)})};
    });
RUNNEL_REGISTER_GRADIENT("gather_grad_add",
                         [](GradBuilder& g, const Grads& dy) -> Grads {
                           return {
                               dy[0],
                               {},
                               g.Op("gather", {dy[0], g.x(1)},
                                    {{"axis", g.attr_or<int64_t>("axis", 0)}})};
                         });
RUNNEL_REGISTER_GRADIENT(
    "dynamic_update_index_grad", [](GradBuilder& g, const Grads& d) -> Grads {
      NodeOut ddx = d[0].node != nullptr ? d[0] : g.ZerosLike(g.y(0));
      NodeOut drow = d[1].node != nullptr ? d[1] : g.ZerosLike(g.y(1));
      return {g.Op("dynamic_update_index", {ddx, g.x(1), drow}), {}};
    });
RUNNEL_REGISTER_GRADIENT("gather",
                         [](GradBuilder& g, const Grads& dy) -> Grads {
                           return {
                               g.Op("gather_grad", {g.x(0), g.x(1), dy[0]},
                                    {{"axis", g.attr_or<int64_t>("axis", 0)}}),
                               {}};
                         });
RUNNEL_REGISTER_GRADIENT("tile", [](GradBuilder& g, const Grads& dy) -> Grads {
  return {g.Op("tile_grad", {dy[0], g.x(0)}), {}};
});
// pad: x gets its block of dy; the pad value gets the rest of dy's sum.
RUNNEL_REGISTER_GRADIENT("pad", [](GradBuilder& g, const Grads& dy) -> Grads {
  NodeOut dx = g.Op("pad_grad", {dy[0], g.x(0), g.x(1)});
  NodeOut dvalue = g.Sub(g.Op("sum", {dy[0]}), g.Op("sum", {dx}));
  return {dx, {}, dvalue};
});
RUNNEL_REGISTER_GRADIENT("broadcast_to",
                         [](GradBuilder& g, const Grads& dy) -> Grads {
                           return {g.SumToLike(dy[0], g.x(0)), {}};
                         });
RUNNEL_REGISTER_GRADIENT("fill", [](GradBuilder& g, const Grads& dy) -> Grads {
  return {{}, g.Op("sum", {dy[0]})};
});

// The adjoints above are linear in dy; their own gradients (for gradients
// of gradients) apply the forward op to the incoming gradient.
RUNNEL_REGISTER_GRADIENT("gather_grad",
                         [](GradBuilder& g, const Grads& d) -> Grads {
                           return {
                               {},
                               {},
                               g.Op("gather", {d[0], g.x(1)},
                                    {{"axis", g.attr_or<int64_t>("axis", 0)}})};
                         });
RUNNEL_REGISTER_GRADIENT(
    "slice_grad", [](GradBuilder& g, const Grads& d) -> Grads {
      NodeOut dy = g.x(2);
      return {{}, {}, g.Op("slice", {d[0], g.x(1), g.Op("shape_of", {dy})})};
    });
RUNNEL_REGISTER_GRADIENT(
    "strided_slice_grad", [](GradBuilder& g, const Grads& d) -> Grads {
      return {{}, g.Op("strided_slice", {d[0]}, g.node().attrs())};
    });
RUNNEL_REGISTER_GRADIENT(
    "dynamic_index_grad", [](GradBuilder& g, const Grads& d) -> Grads {
      return {{}, {}, g.Op("dynamic_index", {d[0], g.x(1)})};
    });
RUNNEL_REGISTER_GRADIENT("pad_grad",
                         [](GradBuilder& g, const Grads& d) -> Grads {
                           NodeOut zero = g.ScalarLike(0, d[0]);
                           return {g.Op("pad", {d[0], g.x(2), zero}), {}, {}};
                         });
// tile_grad(dy, x) sums dy's tiles; its adjoint tiles the gradient again.
RUNNEL_REGISTER_GRADIENT(
    "tile_grad", [](GradBuilder& g, const Grads& d) -> Grads {
      const Shape& dys = g.shape(g.x(0));
      const Shape& xs = g.shape(g.x(1));
      if (!dys.IsFullyDefined() || !xs.IsFullyDefined()) {
        // The multiples at run time: dy's shape over x's (a zero-sized
        // axis of x tiles zero times).
        NodeOut xshape = g.Op("shape_of", {g.x(1)});
        NodeOut one = g.Const(Tensor::Scalar<int32_t>(1));
        NodeOut multiples = g.Op("floordiv", {g.Op("shape_of", {g.x(0)}),
                                              g.Op("maximum", {xshape, one})});
        return {g.Op("tile", {d[0], multiples}), {}};
      }
      std::vector<int64_t> multiples;
      for (int i = 0; i < xs.rank(); ++i) {
        multiples.push_back(xs.dim(i) == 0 ? 0 : dys.dim(i) / xs.dim(i));
      }
      const int64_t n = static_cast<int64_t>(multiples.size());
      return {g.Op("tile",
                   {d[0], g.Const(Tensor::FromVector(multiples, Shape{n}))}),
              {}};
    });

// Gradients stop here: constants, shape queries, state updates, and
// stop_gradient itself.
RUNNEL_NO_GRADIENT("stop_gradient");
RUNNEL_NO_GRADIENT("const");
RUNNEL_NO_GRADIENT("placeholder");
RUNNEL_NO_GRADIENT("variable");
RUNNEL_NO_GRADIENT("_feed");
RUNNEL_NO_GRADIENT("_fetch");
RUNNEL_NO_GRADIENT("_send");
RUNNEL_NO_GRADIENT("_recv");
RUNNEL_NO_GRADIENT("noop");
RUNNEL_NO_GRADIENT("shape_of");
RUNNEL_NO_GRADIENT("size");
RUNNEL_NO_GRADIENT("rank");
RUNNEL_NO_GRADIENT("zeros_like");
RUNNEL_NO_GRADIENT("ones_like");
RUNNEL_NO_GRADIENT("range");
RUNNEL_NO_GRADIENT("eye");
RUNNEL_NO_GRADIENT("one_hot");
RUNNEL_NO_GRADIENT("assign");
RUNNEL_NO_GRADIENT("assign_add");
RUNNEL_NO_GRADIENT("assign_sub");
RUNNEL_NO_GRADIENT("scatter_add");
RUNNEL_NO_GRADIENT("scatter_sub");
RUNNEL_NO_GRADIENT("scatter_update");
RUNNEL_NO_GRADIENT("sync_accumulate");
RUNNEL_NO_GRADIENT("sync_take");
RUNNEL_NO_GRADIENT("sync_barrier");
RUNNEL_NO_GRADIENT("sync_advance");
RUNNEL_NO_GRADIENT("sync_hold");
RUNNEL_NO_GRADIENT("sync_release");
RUNNEL_NO_GRADIENT("all_reduce");

}  // namespace
}  // namespace runnel
