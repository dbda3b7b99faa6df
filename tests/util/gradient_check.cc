#include "tests/util/gradient_check.h"

#include <gtest/gtest.h>

#include <cmath>

#include "base/strings.h"
#include "common_runtime/gradients.h"
#include "common_runtime/session.h"
#include "tests/util/test_util.h"

namespace runnel::testing {

GradInput Diff(Shape shape, double lo, double hi) {
  return {.shape = std::move(shape), .lo = lo, .hi = hi};
}
GradInput Positive(Shape shape) { return Diff(std::move(shape), 0.2, 2); }
GradInput NonZero(Shape shape) {
  return {.shape = std::move(shape), .lo = -2, .hi = 2, .away_from_zero = true};
}
GradInput Fixed(Tensor t) { return {.shape = t.shape(), .fixed = t}; }

namespace {

Tensor Values(const GradInput& in, int seed, uint32_t salt) {
  const int64_t n = in.shape.num_elements();
  std::vector<float> u = PatternValues(n, seed, salt);  // [-1, 1)
  std::vector<double> v(n);
  for (int64_t i = 0; i < n; ++i) {
    const double t = (u[i] + 1) / 2;  // [0, 1)
    if (in.away_from_zero) {
      const double mag = 0.2 + 1.8 * std::fabs(u[i]);
      v[i] = (i % 2 == 0) ? mag : -mag;
    } else {
      v[i] = in.lo + (in.hi - in.lo) * t;
    }
  }
  return Tensor::FromVector(v, in.shape);
}

// Adds L = sum_k sum(outs_k * w_k) for the floating outputs of `outs`.
NodeOut WeightedSum(Graph& g, const std::vector<NodeOut>& outs,
                    const std::vector<Shape>& shapes, uint32_t salt) {
  NodeOut total;
  int k = 0;
  for (size_t j = 0; j < outs.size(); ++j) {
    const NodeOut& o = outs[j];
    if (!IsFloating(o.node->output_dtype(o.index))) continue;
    const Shape& s = shapes[j];
    EXPECT_TRUE(s.IsFullyDefined()) << s.ToString();
    Tensor w = Values(Diff(s, 0.5, 1.5), 100 + k++, salt);
    if (o.node->output_dtype(o.index) != DType::kF64) {
      ADD_FAILURE() << "outputs must be f64";
    }
    Node* wn = *g.AddConst(w, g.UniqueName("weights"));
    Node* prod = *g.AddNode({.name = g.UniqueName("weighted"),
                             .op = "mul",
                             .inputs = {o, {wn, 0}}});
    Node* sum = *g.AddNode({.name = g.UniqueName("weighted_sum"),
                            .op = "sum",
                            .inputs = {{prod, 0}}});
    if (total.node == nullptr) {
      total = {sum, 0};
    } else {
      total = {*g.AddNode({.name = g.UniqueName("total"),
                           .op = "add",
                           .inputs = {total, {sum, 0}}}),
               0};
    }
  }
  return total;
}

// Adds the inputs to `g`: fixed ones as constants, the others as f64
// placeholders (of unknown dimensions when `unknown_dims`), which go to
// `placeholders` too. Returns every input in order.
std::vector<NodeOut> AddInputs(Graph& g, const std::vector<GradInput>& inputs,
                               bool unknown_dims,
                               std::vector<NodeOut>* placeholders) {
  std::vector<NodeOut> all;
  for (size_t i = 0; i < inputs.size(); ++i) {
    const GradInput& in = inputs[i];
    if (in.fixed.has_value()) {
      all.push_back({*g.AddConst(*in.fixed, StrCat("fixed", i)), 0});
      continue;
    }
    Shape declared = in.shape;
    if (unknown_dims) {
      declared = Shape(std::vector<int64_t>(in.shape.rank(), kUnknownDim));
    }
    absl::StatusOr<Node*> p =
        g.AddNode({.name = StrCat("x", i),
                   .op = "placeholder",
                   .attrs = {{"dtype", DType::kF64}, {"shape", declared}}});
    EXPECT_TRUE(p.ok()) << p.status();
    if (!p.ok()) return {};
    placeholders->push_back({*p, 0});
    all.push_back({*p, 0});
  }
  return all;
}

}  // namespace

void CheckGradientOf(const GraphBuilderFn& build,
                     const std::vector<GradInput>& inputs,
                     GradCheckOptions options) {
  // The weights of the checked sum have the outputs' concrete shapes: with
  // unknown dimensions, a twin graph of known shapes tells them.
  std::vector<Shape> out_shapes;
  {
    Graph twin;
    std::vector<NodeOut> unused;
    std::vector<NodeOut> all = AddInputs(twin, inputs, false, &unused);
    ASSERT_EQ(all.size(), inputs.size());
    for (const NodeOut& o : build(twin, all)) {
      ASSERT_NE(o.node, nullptr);
      out_shapes.push_back(o.node->output_shape(o.index));
    }
  }
  auto graph = std::make_shared<Graph>();
  Graph& g = *graph;
  std::vector<NodeOut> placeholders;  // one per differentiable input
  std::vector<NodeOut> all =
      AddInputs(g, inputs, options.unknown_dims, &placeholders);
  ASSERT_EQ(all.size(), inputs.size());
  std::vector<Tensor> values;
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (inputs[i].fixed.has_value()) continue;
    values.push_back(Values(inputs[i], static_cast<int>(i), options.salt));
  }
  std::vector<NodeOut> outs = build(g, all);
  for (const NodeOut& o : outs) ASSERT_NE(o.node, nullptr);
  NodeOut loss = WeightedSum(g, outs, out_shapes, options.salt);
  ASSERT_NE(loss.node, nullptr);
  absl::StatusOr<std::vector<NodeOut>> grads =
      AddGradients(&g, loss, placeholders);
  ASSERT_TRUE(grads.ok()) << grads.status();

  Session session(graph, {.num_threads = 1});
  auto feeds = [&](const std::vector<Tensor>& v) {
    Session::Feeds f;
    for (size_t i = 0; i < placeholders.size(); ++i) {
      f.push_back({placeholders[i], v[i]});
    }
    return f;
  };
  absl::StatusOr<std::vector<Tensor>> symbolic =
      session.Run(feeds(values), *grads, {});
  ASSERT_TRUE(symbolic.ok()) << symbolic.status();
  auto eval = [&](const std::vector<Tensor>& v) {
    absl::StatusOr<std::vector<Tensor>> r = session.Run(feeds(v), {loss}, {});
    EXPECT_TRUE(r.ok()) << r.status();
    return r.ok() ? (*r)[0].data<double>()[0] : NAN;
  };

  for (size_t k = 0; k < placeholders.size(); ++k) {
    const Tensor& sym = (*symbolic)[k];
    ASSERT_EQ(sym.dtype(), DType::kF64) << "gradient of input " << k;
    ASSERT_EQ(sym.shape(), values[k].shape()) << "gradient of input " << k;
    for (int64_t e = 0; e < values[k].num_elements(); ++e) {
      std::vector<Tensor> plus = values, minus = values;
      plus[k] = values[k].Clone();
      minus[k] = values[k].Clone();
      plus[k].data<double>()[e] += options.step;
      minus[k].data<double>()[e] -= options.step;
      const double numeric = (eval(plus) - eval(minus)) / (2 * options.step);
      const double analytic = sym.data<double>()[e];
      EXPECT_NEAR(analytic, numeric,
                  options.tolerance * (1 + std::fabs(numeric)))
          << "d/d(input " << k << ")[" << e << "]";
    }
  }
}

void CheckGradient(const std::string& op, const std::vector<GradInput>& inputs,
                   AttrMap attrs, GradCheckOptions options) {
  CheckGradientOf(
      [&](Graph& g, const std::vector<NodeOut>& in) -> std::vector<NodeOut> {
        absl::StatusOr<Node*> n =
            g.AddNode({.name = "op", .op = op, .inputs = in, .attrs = attrs});
        EXPECT_TRUE(n.ok()) << n.status();
        if (!n.ok()) return {NodeOut{}};
        std::vector<NodeOut> outs;
        for (int i = 0; i < (*n)->num_outputs(); ++i) outs.push_back({*n, i});
        return outs;
      },
      inputs, options);
}

}  // namespace runnel::testing
