// Gradient functions of the element-wise and reduction ops (math_ops.cc).
// Binary ops broadcast, so each input's gradient is summed back to that
// input's shape (SumToLike).
#include "common_runtime/gradients.h"
#include "framework/shape_fns.h"

namespace runnel {
namespace {

// ---- unary ------------------------------------------------------------------

// f(x) with f'(x) given by `deriv`: dx = dy * deriv.
template <typename F>
GradFn Chain(F deriv) {
  return [deriv](GradBuilder& g, const Grads& dy) -> Grads {
    return {g.Mul(dy[0], deriv(g))};
  };
}

RUNNEL_REGISTER_GRADIENT("neg", [](GradBuilder& g, const Grads& dy) -> Grads {
  return {g.Neg(dy[0])};
});
RUNNEL_REGISTER_GRADIENT("abs", Chain([](GradBuilder& g) {
                           return g.Op("sign", {g.x()});
                         }));
RUNNEL_REGISTER_GRADIENT("square", Chain([](GradBuilder& g) {
                           return g.Mul(g.ScalarLike(2, g.x()), g.x());
                         }));
// From relu's output, positive exactly where its input is: the input is
// then read by relu alone, which may overwrite it (a bias_add's sum).
RUNNEL_REGISTER_GRADIENT("relu", [](GradBuilder& g, const Grads& dy) -> Grads {
  return {g.Op("relu_grad", {dy[0], g.y()})};
});
RUNNEL_REGISTER_GRADIENT("sqrt", [](GradBuilder& g, const Grads& dy) -> Grads {
  // 0.5 / sqrt(x)
  return {g.Div(g.Mul(dy[0], g.ScalarLike(0.5, g.y())), g.y())};
});
RUNNEL_REGISTER_GRADIENT("rsqrt", Chain([](GradBuilder& g) {
                           // -0.5 * x^(-3/2) = -0.5 * y^3
                           NodeOut y = g.y();
                           return g.Mul(g.ScalarLike(-0.5, y),
                                        g.Mul(y, g.Mul(y, y)));
                         }));
RUNNEL_REGISTER_GRADIENT("exp", Chain([](GradBuilder& g) { return g.y(); }));
RUNNEL_REGISTER_GRADIENT("log", [](GradBuilder& g, const Grads& dy) -> Grads {
  return {g.Div(dy[0], g.x())};
});
RUNNEL_REGISTER_GRADIENT("log1p", [](GradBuilder& g, const Grads& dy) -> Grads {
  return {g.Div(dy[0], g.Add(g.ScalarLike(1, g.x()), g.x()))};
});
RUNNEL_REGISTER_GRADIENT("sin", Chain([](GradBuilder& g) {
                           return g.Op("cos", {g.x()});
                         }));
RUNNEL_REGISTER_GRADIENT("cos", Chain([](GradBuilder& g) {
                           return g.Neg(g.Op("sin", {g.x()}));
                         }));
RUNNEL_REGISTER_GRADIENT("gelu", [](GradBuilder& g, const Grads& dy) -> Grads {
  return {g.Op("gelu_grad", {dy[0], g.x()})};
});
// gelu_grad(dy, x) = dy * gelu'(x): d/d(dy) = gelu_grad(d, x), and d/dx =
// d * dy * gelu''(x), gelu''(x) = phi(x) * (2 - x^2) with phi the standard
// normal density exp(-x^2 / 2) / sqrt(2 pi).
RUNNEL_REGISTER_GRADIENT(
    "gelu_grad", [](GradBuilder& g, const Grads& d) -> Grads {
      NodeOut dy = g.x(0), x = g.x(1);
      NodeOut x2 = g.Mul(x, x);
      NodeOut phi = g.Mul(g.ScalarLike(0.3989422804014327, x),
                          g.Op("exp", {g.Mul(g.ScalarLike(-0.5, x), x2)}));
      NodeOut second = g.Mul(phi, g.Sub(g.ScalarLike(2, x), x2));
      return {g.Op("gelu_grad", {d[0], x}), g.Mul(g.Mul(d[0], dy), second)};
    });
RUNNEL_REGISTER_GRADIENT("tanh", [](GradBuilder& g, const Grads& dy) -> Grads {
  return {g.Op("tanh_grad", {g.y(), dy[0]})};
});
RUNNEL_REGISTER_GRADIENT("sigmoid",
                         [](GradBuilder& g, const Grads& dy) -> Grads {
                           return {g.Op("sigmoid_grad", {g.y(), dy[0]})};
                         });
RUNNEL_REGISTER_GRADIENT("elu", [](GradBuilder& g, const Grads& dy) -> Grads {
  // 1 for x > 0, else exp(x) = y + 1.
  NodeOut x = g.x();
  NodeOut pos = g.Op("greater", {x, g.ScalarLike(0, x)});
  return {g.Where(pos, dy[0], g.Mul(dy[0], g.Add(g.y(), g.ScalarLike(1, x))))};
});
RUNNEL_REGISTER_GRADIENT("softplus", Chain([](GradBuilder& g) {
                           return g.Op("sigmoid", {g.x()});
                         }));
RUNNEL_REGISTER_GRADIENT("erf", Chain([](GradBuilder& g) {
                           // 2 / sqrt(pi) * exp(-x^2)
                           NodeOut x = g.x();
                           return g.Mul(g.ScalarLike(1.1283791670955126, x),
                                        g.Op("exp", {g.Neg(g.Mul(x, x))}));
                         }));

// The inverse trigonometric and hyperbolic functions: d/dx asin = 1 /
// sqrt(1 - x^2), acos its negative, atan 1 / (1 + x^2), asinh 1 /
// sqrt(x^2 + 1), acosh 1 / sqrt(x^2 - 1), atanh 1 / (1 - x^2).
NodeOut OneMinusSquare(GradBuilder& g, NodeOut x) {
  return g.Sub(g.ScalarLike(1, x), g.Mul(x, x));
}
NodeOut SquarePlus(GradBuilder& g, NodeOut x, double c) {
  return g.Add(g.Mul(x, x), g.ScalarLike(c, x));
}
RUNNEL_REGISTER_GRADIENT("asin", Chain([](GradBuilder& g) {
                           return g.Op("rsqrt", {OneMinusSquare(g, g.x())});
                         }));
RUNNEL_REGISTER_GRADIENT("acos", Chain([](GradBuilder& g) {
                           return g.Neg(
                               g.Op("rsqrt", {OneMinusSquare(g, g.x())}));
                         }));
RUNNEL_REGISTER_GRADIENT("atan", Chain([](GradBuilder& g) {
                           NodeOut x = g.x();
                           return g.Div(g.ScalarLike(1, x),
                                        SquarePlus(g, x, 1));
                         }));
RUNNEL_REGISTER_GRADIENT("asinh", Chain([](GradBuilder& g) {
                           return g.Op("rsqrt", {SquarePlus(g, g.x(), 1)});
                         }));
RUNNEL_REGISTER_GRADIENT("acosh", Chain([](GradBuilder& g) {
                           return g.Op("rsqrt", {SquarePlus(g, g.x(), -1)});
                         }));
RUNNEL_REGISTER_GRADIENT("atanh", Chain([](GradBuilder& g) {
                           NodeOut x = g.x();
                           return g.Div(g.ScalarLike(1, x),
                                        OneMinusSquare(g, x));
                         }));

// Each x[j] adds to the sums at and after it (before it, reversed): dx is
// the running sum of dy the other way, with the same `exclusive`.
RUNNEL_REGISTER_GRADIENT("cumsum",
                         [](GradBuilder& g, const Grads& dy) -> Grads {
                           AttrMap attrs = g.node().attrs();
                           const bool reverse =
                               GetAttr<bool>(attrs, "reverse").value_or(false);
                           attrs["reverse"] = !reverse;
                           return {g.Op("cumsum", {dy[0]}, std::move(attrs))};
                         });

// Piecewise constant: the gradient is zero almost everywhere.
RUNNEL_NO_GRADIENT("sign");
RUNNEL_NO_GRADIENT("floor");
RUNNEL_NO_GRADIENT("ceil");
RUNNEL_NO_GRADIENT("round");
RUNNEL_NO_GRADIENT("isnan");
RUNNEL_NO_GRADIENT("isfinite");
RUNNEL_NO_GRADIENT("logical_not");

// ---- the backward ops, for gradients of gradients ---------------------------

// relu_grad(dy, x) = dy * step(x): linear in dy, piecewise constant in x.
RUNNEL_REGISTER_GRADIENT("relu_grad",
                         [](GradBuilder& g, const Grads& d) -> Grads {
                           return {g.Op("relu_grad", {d[0], g.x(1)}), {}};
                         });
// sigmoid_grad(y, dy) = dy * y * (1 - y).
RUNNEL_REGISTER_GRADIENT("sigmoid_grad",
                         [](GradBuilder& g, const Grads& d) -> Grads {
                           NodeOut y = g.x(0), dy = g.x(1);
                           NodeOut one = g.ScalarLike(1, y);
                           NodeOut dd_dy = g.Mul(y, g.Sub(one, y));
                           NodeOut dd_y = g.Mul(
                               dy, g.Sub(one, g.Mul(g.ScalarLike(2, y), y)));
                           return {g.Mul(d[0], dd_y), g.Mul(d[0], dd_dy)};
                         });
// tanh_grad(y, dy) = dy * (1 - y^2).
RUNNEL_REGISTER_GRADIENT("tanh_grad",
                         [](GradBuilder& g, const Grads& d) -> Grads {
                           NodeOut y = g.x(0), dy = g.x(1);
                           NodeOut dd_dy =
                               g.Sub(g.ScalarLike(1, y), g.Mul(y, y));
                           NodeOut dd_y =
                               g.Mul(g.ScalarLike(-2, y), g.Mul(dy, y));
                           return {g.Mul(d[0], dd_y), g.Mul(d[0], dd_dy)};
                         });
RUNNEL_REGISTER_GRADIENT("sum_to_like",
                         [](GradBuilder& g, const Grads& d) -> Grads {
                           return {g.BroadcastLike(d[0], g.x(0)), {}};
                         });
RUNNEL_REGISTER_GRADIENT("broadcast_like",
                         [](GradBuilder& g, const Grads& d) -> Grads {
                           return {g.SumToLike(d[0], g.x(0)), {}};
                         });

// ---- binary -----------------------------------------------------------------

// Gradients da, db of a binary op before un-broadcasting.
template <typename F>
GradFn Binary(F f) {
  return [f](GradBuilder& g, const Grads& dy) -> Grads {
    auto [da, db] = f(g, dy[0], g.x(0), g.x(1));
    return {g.SumToLike(da, g.x(0)), g.SumToLike(db, g.x(1))};
  };
}

RUNNEL_REGISTER_GRADIENT("add",
                         Binary([](GradBuilder&, NodeOut d, NodeOut, NodeOut) {
                           return std::pair{d, d};
                         }));
RUNNEL_REGISTER_GRADIENT("sub", Binary([](GradBuilder& g, NodeOut d, NodeOut,
                                          NodeOut) {
                           return std::pair{d, g.Neg(d)};
                         }));
RUNNEL_REGISTER_GRADIENT("mul", Binary([](GradBuilder& g, NodeOut d, NodeOut a,
                                          NodeOut b) {
                           return std::pair{g.Mul(d, b), g.Mul(a, d)};
                         }));
RUNNEL_REGISTER_GRADIENT("div", Binary([](GradBuilder& g, NodeOut d, NodeOut,
                                          NodeOut b) {
                           // z = a / b: dz/da = 1/b, dz/db = -z/b.
                           NodeOut da = g.Div(d, b);
                           return std::pair{da, g.Neg(g.Mul(da, g.y()))};
                         }));
RUNNEL_REGISTER_GRADIENT("mod", Binary([](GradBuilder& g, NodeOut d, NodeOut a,
                                          NodeOut b) {
                           // a mod b = a - floor(a / b) * b.
                           NodeOut q = g.Op("floor", {g.Div(a, b)});
                           return std::pair{d, g.Neg(g.Mul(d, q))};
                         }));
RUNNEL_REGISTER_GRADIENT(
    "pow", Binary([](GradBuilder& g, NodeOut d, NodeOut a, NodeOut b) {
      // z = a^b: dz/da = b a^(b-1), dz/db = z log(a) (0 where a <= 0).
      NodeOut one = g.ScalarLike(1, b);
      NodeOut da = g.Mul(d, g.Mul(b, g.Op("pow", {a, g.Sub(b, one)})));
      NodeOut zero = g.ScalarLike(0, a);
      NodeOut positive = g.Op("greater", {a, zero});
      NodeOut safe_a = g.Where(positive, a, g.ScalarLike(1, a));
      NodeOut db = g.Mul(
          d, g.Where(positive, g.Mul(g.y(), g.Op("log", {safe_a})), zero));
      return std::pair{da, db};
    }));
// Ties go to the first operand, as in TensorFlow.
RUNNEL_REGISTER_GRADIENT(
    "maximum", Binary([](GradBuilder& g, NodeOut d, NodeOut a, NodeOut b) {
      NodeOut first = g.Op("greater_equal", {a, b});
      NodeOut zero = g.ScalarLike(0, d);
      return std::pair{g.Where(first, d, zero), g.Where(first, zero, d)};
    }));
RUNNEL_REGISTER_GRADIENT(
    "minimum", Binary([](GradBuilder& g, NodeOut d, NodeOut a, NodeOut b) {
      NodeOut first = g.Op("less_equal", {a, b});
      NodeOut zero = g.ScalarLike(0, d);
      return std::pair{g.Where(first, d, zero), g.Where(first, zero, d)};
    }));

RUNNEL_NO_GRADIENT("floordiv");
RUNNEL_NO_GRADIENT("equal");
RUNNEL_NO_GRADIENT("not_equal");
RUNNEL_NO_GRADIENT("less");
RUNNEL_NO_GRADIENT("less_equal");
RUNNEL_NO_GRADIENT("greater");
RUNNEL_NO_GRADIENT("greater_equal");
RUNNEL_NO_GRADIENT("logical_and");
RUNNEL_NO_GRADIENT("logical_or");

// clip(x, lo, hi): dy flows to x inside [lo, hi], to lo below, to hi above.
RUNNEL_REGISTER_GRADIENT("clip", [](GradBuilder& g, const Grads& dy) -> Grads {
  NodeOut x = g.x(0), lo = g.x(1), hi = g.x(2), d = dy[0];
  NodeOut zero = g.ScalarLike(0, d);
  NodeOut below = g.Op("less", {x, lo});
  NodeOut above = g.Op("greater", {x, hi});
  NodeOut outside = g.Op("logical_or", {below, above});
  NodeOut dx = g.Where(outside, zero, d);
  return {g.SumToLike(dx, x), g.SumToLike(g.Where(below, d, zero), lo),
          g.SumToLike(g.Where(above, d, zero), hi)};
});

// where(c, a, b): dy flows to a where c, to b elsewhere.
RUNNEL_REGISTER_GRADIENT("where", [](GradBuilder& g, const Grads& dy) -> Grads {
  NodeOut c = g.x(0), a = g.x(1), b = g.x(2), d = dy[0];
  NodeOut zero = g.ScalarLike(0, d);
  return {{},
          g.SumToLike(g.Where(c, d, zero), a),
          g.SumToLike(g.Where(c, zero, d), b)};
});

// cast between floating dtypes passes the gradient back in x's dtype.
RUNNEL_REGISTER_GRADIENT("cast", [](GradBuilder& g, const Grads& dy) -> Grads {
  const DType from = g.dtype(g.x());
  if (!IsFloating(from) || !IsFloating(g.dtype(g.y()))) return {{}};
  return {from == g.dtype(dy[0]) ? dy[0] : g.Cast(dy[0], from)};
});

// ---- reductions -------------------------------------------------------------

// dy of a reduction, with the reduced axes put back as size 1 (so it
// broadcasts against x).
NodeOut KeptDims(GradBuilder& g, NodeOut dy) {
  const Node& n = g.node();
  if (g.attr_or<bool>("keepdims", false)) return dy;
  const Shape& xs = g.shape(g.x());
  if (!n.attrs().contains("axis")) {
    // A scalar: broadcasts as it is.
    return dy;
  }
  if (xs.unknown_rank()) {
    g.Fail(absl::UnimplementedError(
        "the gradient of a reduction over named axes needs the input's rank"));
    return {};
  }
  // The forward node's shape function accepted these axes, so this holds.
  absl::StatusOr<std::vector<int>> axes =
      ReductionAxes(ShapeContext(n.attrs(), {}, {}), xs.rank());
  if (!axes.ok()) {
    g.Fail(axes.status());
    return {};
  }
  for (int a : *axes) {
    dy = g.Op("expand_dims", {dy}, {{"axis", int64_t{a}}});
  }
  return dy;
}

// The number of elements each output element of a reduction summed.
NodeOut ReducedCount(GradBuilder& g) {
  const Shape& xs = g.shape(g.x());
  const Shape& ys = g.shape(g.y());
  const DType d = g.dtype(g.y());
  if (xs.IsFullyDefined() && ys.IsFullyDefined()) {
    const int64_t n =
        ys.num_elements() == 0 ? 0 : xs.num_elements() / ys.num_elements();
    return g.Scalar(static_cast<double>(n), d);
  }
  AttrMap as_i64{{"out_type", DType::kI64}};
  return g.Div(g.Cast(g.Op("size", {g.x()}, as_i64), d),
               g.Cast(g.Op("size", {g.y()}, as_i64), d));
}

RUNNEL_REGISTER_GRADIENT("sum", [](GradBuilder& g, const Grads& dy) -> Grads {
  return {g.BroadcastLike(KeptDims(g, dy[0]), g.x())};
});
RUNNEL_REGISTER_GRADIENT("mean", [](GradBuilder& g, const Grads& dy) -> Grads {
  NodeOut d = g.Div(dy[0], ReducedCount(g));
  return {g.BroadcastLike(KeptDims(g, d), g.x())};
});
// prod: dx = dy * y / x (undefined where x is 0).
RUNNEL_REGISTER_GRADIENT("prod", [](GradBuilder& g, const Grads& dy) -> Grads {
  NodeOut d = g.Mul(KeptDims(g, dy[0]), KeptDims(g, g.y()));
  return {g.Div(g.BroadcastLike(d, g.x()), g.x())};
});
// max, min: dy shared equally among the elements equal to the result.
GradFn Extreme() {
  return [](GradBuilder& g, const Grads& dy) -> Grads {
    NodeOut x = g.x();
    NodeOut y = g.BroadcastLike(KeptDims(g, g.y()), x);
    NodeOut mask = g.Cast(g.Op("equal", {x, y}), g.dtype(x));
    AttrMap keep{{"keepdims", true}};
    if (g.node().attrs().contains("axis")) {
      keep["axis"] = g.node().attrs().at("axis");
    }
    NodeOut count = g.Op("sum", {mask}, keep);
    NodeOut share = g.Div(KeptDims(g, dy[0]), count);
    return {g.Mul(g.BroadcastLike(share, x), mask)};
  };
}
RUNNEL_REGISTER_GRADIENT("max", Extreme());
RUNNEL_REGISTER_GRADIENT("min", Extreme());
// logsumexp: dx = dy * exp(x - y).
RUNNEL_REGISTER_GRADIENT("logsumexp",
                         [](GradBuilder& g, const Grads& dy) -> Grads {
                           NodeOut x = g.x();
                           NodeOut y = KeptDims(g, g.y());
                           NodeOut p = g.Op("exp", {g.Sub(x, y)});
                           return {g.Mul(g.BroadcastLike(KeptDims(g, dy[0]), x),
                                         p)};
                         });
RUNNEL_NO_GRADIENT("all");
RUNNEL_NO_GRADIENT("any");
RUNNEL_NO_GRADIENT("argmax");
RUNNEL_NO_GRADIENT("argmin");

}  // namespace
}  // namespace runnel
