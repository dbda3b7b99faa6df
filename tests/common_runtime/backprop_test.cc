// The backward pass through control flow (common_runtime/backprop.cc): a
// loop is differentiated as a backward loop of as many iterations, reading
// the forward values from stacks. Gradients of hand-built loops against
// closed forms and central finite differences (f64).
#include <gtest/gtest.h>

#include <cmath>
#include <memory>
#include <string>
#include <vector>

#include "common_runtime/gradients.h"
#include "common_runtime/session.h"
#include "framework/kernel.h"
#include "framework/shape_fns.h"
#include "tests/util/loops.h"
#include "tests/util/test_ops.h"
#include "tests/util/test_util.h"

namespace runnel {
namespace {

using ::runnel::testing::Add;
using ::runnel::testing::BuildLoop;
using ::runnel::testing::F32;
using ::runnel::testing::F64;
using ::runnel::testing::I32;

using ::runnel::testing::Const;

NodeOut Input(Graph& g, const std::string& name, Shape shape, DType dtype) {
  absl::StatusOr<Node*> n =
      g.AddNode({.name = name,
                 .op = "placeholder",
                 .attrs = {{"dtype", dtype}, {"shape", std::move(shape)}}});
  EXPECT_TRUE(n.ok()) << n.status();
  return {*n, 0};
}

NodeOut F64Input(Graph& g, const std::string& name, Shape shape) {
  return Input(g, name, std::move(shape), DType::kF64);
}

double Scalar(const Tensor& t) { return t.ToDoubles().at(0); }

// _test_floor(x): floor(x), f64, whose gradient is zeros made from x's
// static shape alone (a fill of constants): a gradient node with no input
// from its loop.
class TestFloorKernel : public OpKernel {
 public:
  absl::Status Compute(OpKernelContext* ctx) override {
    RN_ASSIGN_OR_RETURN(Tensor * out,
                        ctx->allocate_output(0, ctx->input(0).shape()));
    for (int64_t i = 0; i < out->num_elements(); ++i)
      out->data<double>()[i] = std::floor(ctx->input(0).data<double>()[i]);
    return absl::OkStatus();
  }
};
RUNNEL_REGISTER_OP(
    OpDefBuilder("_test_floor").Inputs({"x"}).Shape(UnchangedShape));
RUNNEL_STATIC_INIT(TestFloorKernel) {
  RegisterKernel<TestFloorKernel>("_test_floor", kDeviceCpu, DType::kF64);
}
RUNNEL_REGISTER_GRADIENT("_test_floor", [](GradBuilder& g, const Grads&) {
  return Grads{g.Op("fill", {g.Const(Tensor::OfDims(g.shape(g.x()).dims())),
                             g.ScalarLike(0, g.x())})};
});

// A loop variable v = floor(v): its gradient is that fill alone, made of
// loop invariants. In the backward loop it must not run in the iteration
// that ends the loop (where it would start an iteration that never ends):
// it waits for the iteration's pivot. The run ends, with dy/dv0 = 0 and h's
// gradient as without v.
TEST(BackpropTest, AGradientMadeOfInvariantsEndsWithItsLoop) {
  for (int n : {0, 1, 3}) {
    SCOPED_TRACE(n);
    auto g = std::make_shared<Graph>();
    NodeOut x = F64Input(*g, "x", Shape{});
    NodeOut h0 = F64Input(*g, "h0", Shape{});
    NodeOut v0 = F64Input(*g, "v0", Shape{2});
    auto exits = BuildLoop(
        *g, "loop", {h0, v0}, Const(*g, I32({n}, {})),
        [&](WhileBuilder& wb, NodeOut, std::vector<NodeOut> v) {
          NodeOut xi = *wb.EnterInvariant(x);
          return std::vector<NodeOut>{
              {Add(*g, g->UniqueName("mul"), "mul", {v[0], xi}), 0},
              {Add(*g, g->UniqueName("floor"), "_test_floor", {v[1]}), 0}};
        });
    Node* vs = Add(*g, "vs", "sum", {exits[2]});
    Node* y = Add(*g, "y", "add", {exits[1], {vs, 0}});
    absl::StatusOr<std::vector<NodeOut>> d =
        AddGradients(g.get(), {y, 0}, {x, v0});
    ASSERT_TRUE(d.ok()) << d.status();
    Session s(g, {.num_threads = 2});
    const double xv = 1.3, hv = 0.7;
    auto out = s.Run(
        {{x, F64({xv}, {})}, {h0, F64({hv}, {})}, {v0, F64({2.5, -1.5}, {2})}},
        {(*d)[0], (*d)[1]}, {});
    ASSERT_TRUE(out.ok()) << out.status();
    EXPECT_NEAR(Scalar((*out)[0]), n * hv * std::pow(xv, n - 1), 1e-12);
    EXPECT_EQ((*out)[1].ToDoubles(),
              (n == 0 ? std::vector<double>{1, 1} : std::vector<double>{0, 0}));
  }
}

// h = h0; repeat n times: h = h * x. y = h = h0 * x^n, so dy/dx = n h0
// x^(n-1) and dy/dh0 = x^n; with n = 0 the backward loop runs no
// iteration, dy/dx is 0 and dy/dh0 is 1.
TEST(BackpropTest, ALoopsGradientRunsAsManyIterations) {
  for (int n : {0, 1, 3, 7}) {
    SCOPED_TRACE(n);
    auto g = std::make_shared<Graph>();
    NodeOut x = F64Input(*g, "x", Shape{});
    NodeOut h0 = F64Input(*g, "h0", Shape{});
    auto exits =
        BuildLoop(*g, "loop", {h0}, Const(*g, I32({n}, {})),
                  [&](WhileBuilder& wb, NodeOut, std::vector<NodeOut> v) {
                    NodeOut xi = *wb.EnterInvariant(x);
                    return std::vector<NodeOut>{
                        {Add(*g, g->UniqueName("mul"), "mul", {v[0], xi}), 0}};
                  });
    absl::StatusOr<std::vector<NodeOut>> d =
        AddGradients(g.get(), exits[1], {x, h0});
    ASSERT_TRUE(d.ok()) << d.status();
    Session s(g, {.num_threads = 2});
    const double xv = 1.3, hv = 0.7;
    auto out = s.Run({{x, F64({xv}, {})}, {h0, F64({hv}, {})}},
                     {exits[1], (*d)[0], (*d)[1]}, {});
    ASSERT_TRUE(out.ok()) << out.status();
    EXPECT_NEAR(Scalar((*out)[0]), hv * std::pow(xv, n), 1e-12);
    EXPECT_NEAR(Scalar((*out)[1]), n * hv * std::pow(xv, n - 1), 1e-12);
    EXPECT_NEAR(Scalar((*out)[2]), std::pow(xv, n), 1e-12);
  }
}

// An RNN step h = tanh(h * w + x) over 4 iterations with vectors, its
// gradient by w and h0 against central differences of the forward run.
TEST(BackpropTest, ARecurrenceMatchesFiniteDifferences) {
  auto g = std::make_shared<Graph>();
  NodeOut w = F64Input(*g, "w", Shape{3});
  NodeOut x = F64Input(*g, "x", Shape{3});
  NodeOut h0 = F64Input(*g, "h0", Shape{3});
  auto exits =
      BuildLoop(*g, "rnn", {h0}, Const(*g, I32({4}, {})),
                [&](WhileBuilder& wb, NodeOut, std::vector<NodeOut> v) {
                  NodeOut wi = *wb.EnterInvariant(w);
                  NodeOut xi = *wb.EnterInvariant(x);
                  Node* hw = Add(*g, g->UniqueName("hw"), "mul", {v[0], wi});
                  Node* a = Add(*g, g->UniqueName("a"), "add", {{hw, 0}, xi});
                  return std::vector<NodeOut>{
                      {Add(*g, g->UniqueName("tanh"), "tanh", {{a, 0}}), 0}};
                });
  Node* y = Add(*g, "y", "sum", {exits[1]});
  absl::StatusOr<std::vector<NodeOut>> d =
      AddGradients(g.get(), {y, 0}, {w, h0});
  ASSERT_TRUE(d.ok()) << d.status();
  Session s(g, {.num_threads = 2});
  std::vector<double> wv = {0.9, -1.2, 0.4}, xv = {0.1, 0.3, -0.2},
                      hv = {0.5, -0.4, 0.8};
  auto run = [&](const std::vector<double>& wv2,
                 const std::vector<double>& hv2) {
    auto out =
        s.Run({{w, F64(wv2, {3})}, {x, F64(xv, {3})}, {h0, F64(hv2, {3})}},
              {{y, 0}}, {});
    EXPECT_TRUE(out.ok()) << out.status();
    return out.ok() ? Scalar((*out)[0]) : 0.0;
  };
  auto grads = s.Run({{w, F64(wv, {3})}, {x, F64(xv, {3})}, {h0, F64(hv, {3})}},
                     {(*d)[0], (*d)[1]}, {});
  ASSERT_TRUE(grads.ok()) << grads.status();
  const std::vector<double> dw = (*grads)[0].ToDoubles();
  const std::vector<double> dh = (*grads)[1].ToDoubles();
  const double eps = 1e-6;
  for (int i = 0; i < 3; ++i) {
    SCOPED_TRACE(i);
    std::vector<double> up = wv, down = wv;
    up[i] += eps;
    down[i] -= eps;
    EXPECT_NEAR(dw[i], (run(up, hv) - run(down, hv)) / (2 * eps), 1e-7);
    up = hv;
    down = hv;
    up[i] += eps;
    down[i] -= eps;
    EXPECT_NEAR(dh[i], (run(wv, up) - run(wv, down)) / (2 * eps), 1e-7);
  }
}

// h = tanh(h @ w + x) for 4 iterations in f32, y = sum(h): the backward
// loop adds each iteration's h^T dz into dy/dw with matmul_add (one sgemm
// with beta 1, no add). Against the same recurrence differentiated by hand
// in double.
TEST(BackpropTest, AWeightsGradientIsAddedInByTheProduct) {
  constexpr int kSteps = 4, kRows = 2, kUnits = 3;
  auto g = std::make_shared<Graph>();
  NodeOut w = Input(*g, "w", Shape{kUnits, kUnits}, DType::kF32);
  NodeOut x = Input(*g, "x", Shape{kRows, kUnits}, DType::kF32);
  NodeOut h0 = Input(*g, "h0", Shape{kRows, kUnits}, DType::kF32);
  auto exits =
      BuildLoop(*g, "rnn", {h0}, Const(*g, I32({kSteps}, {})),
                [&](WhileBuilder& wb, NodeOut, std::vector<NodeOut> v) {
                  NodeOut wi = *wb.EnterInvariant(w);
                  NodeOut xi = *wb.EnterInvariant(x);
                  Node* hw = Add(*g, g->UniqueName("hw"), "matmul", {v[0], wi});
                  Node* a = Add(*g, g->UniqueName("a"), "add", {{hw, 0}, xi});
                  return std::vector<NodeOut>{
                      {Add(*g, g->UniqueName("tanh"), "tanh", {{a, 0}}), 0}};
                });
  Node* y = Add(*g, "y", "sum", {exits[1]});
  absl::StatusOr<std::vector<NodeOut>> d = AddGradients(g.get(), {y, 0}, {w});
  ASSERT_TRUE(d.ok()) << d.status();
  int added = 0;
  for (const Node* n : g->nodes()) added += n->op() == "matmul_add";
  EXPECT_EQ(added, 1);

  const std::vector<float> wv = {0.9f,  -1.2f, 0.4f, 0.3f, 0.5f,
                                 -0.7f, 0.2f,  0.8f, -0.1f};
  const std::vector<float> xv = {0.1f, 0.3f, -0.2f, -0.4f, 0.6f, 0.2f};
  const std::vector<float> hv = {0.5f, -0.4f, 0.8f, 0.1f, 0.2f, -0.3f};
  Session s(g, {.num_threads = 2});
  auto out = s.Run({{w, F32(wv, {kUnits, kUnits})},
                    {x, F32(xv, {kRows, kUnits})},
                    {h0, F32(hv, {kRows, kUnits})}},
                   {(*d)[0]}, {});
  ASSERT_TRUE(out.ok()) << out.status();
  const std::vector<double> dw = (*out)[0].ToDoubles();

  // By hand: forward, keeping every h; backward, dz = dh (1 - h'^2),
  // dw += h^T dz, dh = dz w^T.
  std::vector<std::vector<double>> hs = {
      std::vector<double>(hv.begin(), hv.end())};
  for (int t = 0; t < kSteps; ++t) {
    std::vector<double> next(kRows * kUnits);
    for (int r = 0; r < kRows; ++r) {
      for (int j = 0; j < kUnits; ++j) {
        double z = xv[r * kUnits + j];
        for (int p = 0; p < kUnits; ++p) {
          z += hs[t][r * kUnits + p] * wv[p * kUnits + j];
        }
        next[r * kUnits + j] = std::tanh(z);
      }
    }
    hs.push_back(next);
  }
  std::vector<double> want(kUnits * kUnits, 0.0), dh(kRows * kUnits, 1.0);
  for (int t = kSteps - 1; t >= 0; --t) {
    std::vector<double> dz(kRows * kUnits), back(kRows * kUnits, 0.0);
    for (int i = 0; i < kRows * kUnits; ++i) {
      dz[i] = dh[i] * (1 - hs[t + 1][i] * hs[t + 1][i]);
    }
    for (int r = 0; r < kRows; ++r) {
      for (int p = 0; p < kUnits; ++p) {
        for (int j = 0; j < kUnits; ++j) {
          want[p * kUnits + j] += hs[t][r * kUnits + p] * dz[r * kUnits + j];
          back[r * kUnits + p] += dz[r * kUnits + j] * wv[p * kUnits + j];
        }
      }
    }
    dh = back;
  }
  ASSERT_EQ(dw.size(), want.size());
  for (size_t i = 0; i < want.size(); ++i) {
    EXPECT_NEAR(dw[i], want[i], 1e-5) << "element " << i;
  }
}

// Two nested loops, 2 outer by 3 inner iterations of h = h * x: y = h0 x^6.
TEST(BackpropTest, NestedLoopsMultiplyTheirIterations) {
  auto g = std::make_shared<Graph>();
  NodeOut x = F64Input(*g, "x", Shape{});
  NodeOut h0 = F64Input(*g, "h0", Shape{});
  auto exits = BuildLoop(
      *g, "outer", {h0}, Const(*g, I32({2}, {})),
      [&](WhileBuilder& outer, NodeOut, std::vector<NodeOut> v) {
        NodeOut xo = *outer.EnterInvariant(x);
        // The inner loop's limit comes into the outer body first.
        NodeOut three = *outer.EnterInvariant(Const(*g, I32({3}, {})));
        auto inner = BuildLoop(
            *g, "inner", {v[0]}, three,
            [&](WhileBuilder& wb, NodeOut, std::vector<NodeOut> u) {
              NodeOut xi = *wb.EnterInvariant(xo);
              return std::vector<NodeOut>{
                  {Add(*g, g->UniqueName("mul"), "mul", {u[0], xi}), 0}};
            },
            &outer);
        return std::vector<NodeOut>{inner[1]};
      });
  absl::StatusOr<std::vector<NodeOut>> d = AddGradients(g.get(), exits[1], {x});
  ASSERT_TRUE(d.ok()) << d.status();
  Session s(g, {.num_threads = 2});
  auto out =
      s.Run({{x, F64({1.1}, {})}, {h0, F64({2}, {})}}, {exits[1], (*d)[0]}, {});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_NEAR(Scalar((*out)[0]), 2 * std::pow(1.1, 6), 1e-12);
  EXPECT_NEAR(Scalar((*out)[1]), 2 * 6 * std::pow(1.1, 5), 1e-11);
}

// h = tanh(h + gather(table, ids)) for 3 iterations in f64, y = sum(h^2):
// the backward loop adds each iteration's rows into dy/dtable with
// gather_grad_add (the rows, not a dense table-sized gradient and an add),
// and the gradient matches central differences, repeated ids included.
TEST(BackpropTest, AGatheredTablesGradientAddsItsRows) {
  auto g = std::make_shared<Graph>();
  NodeOut table = Input(*g, "table", Shape{5, 3}, DType::kF64);
  NodeOut h0 = Input(*g, "h0", Shape{3, 3}, DType::kF64);
  NodeOut ids = Const(*g, I32({4, 1, 4}, {3}));
  auto exits = BuildLoop(
      *g, "rnn", {h0}, Const(*g, I32({3}, {})),
      [&](WhileBuilder& wb, NodeOut, std::vector<NodeOut> v) {
        NodeOut ti = *wb.EnterInvariant(table);
        NodeOut ii = *wb.EnterInvariant(ids);
        Node* rows = Add(*g, g->UniqueName("rows"), "gather", {ti, ii});
        Node* a = Add(*g, g->UniqueName("a"), "add", {v[0], {rows, 0}});
        return std::vector<NodeOut>{
            {Add(*g, g->UniqueName("tanh"), "tanh", {{a, 0}}), 0}};
      });
  Node* sq = Add(*g, "sq", "square", {exits[1]});
  Node* y = Add(*g, "y", "sum", {{sq, 0}});
  absl::StatusOr<std::vector<NodeOut>> d =
      AddGradients(g.get(), {y, 0}, {table});
  ASSERT_TRUE(d.ok()) << d.status();
  int added = 0;
  for (const Node* n : g->nodes()) added += n->op() == "gather_grad_add";
  EXPECT_EQ(added, 1);

  std::vector<double> tv(15), hv(9);
  for (int i = 0; i < 15; ++i) tv[i] = 0.1 * (i % 7) - 0.3;
  for (int i = 0; i < 9; ++i) hv[i] = 0.2 * (i % 4) - 0.25;
  Session s(g, {.num_threads = 2});
  auto run = [&](const std::vector<double>& t) {
    auto out =
        s.Run({{table, F64(t, {5, 3})}, {h0, F64(hv, {3, 3})}}, {{y, 0}}, {});
    EXPECT_TRUE(out.ok()) << out.status();
    return out.ok() ? Scalar((*out)[0]) : 0.0;
  };
  auto grads =
      s.Run({{table, F64(tv, {5, 3})}, {h0, F64(hv, {3, 3})}}, {(*d)[0]}, {});
  ASSERT_TRUE(grads.ok()) << grads.status();
  const std::vector<double> dt = (*grads)[0].ToDoubles();
  const double eps = 1e-6;
  for (int i = 0; i < 15; ++i) {
    SCOPED_TRACE(i);
    std::vector<double> up = tv, down = tv;
    up[i] += eps;
    down[i] -= eps;
    EXPECT_NEAR(dt[i], (run(up) - run(down)) / (2 * eps), 1e-7);
  }
  // Rows 0, 2 and 3 are never gathered.
  for (int i : {0, 1, 2, 6, 7, 8, 9, 10, 11}) EXPECT_EQ(dt[i], 0.0);
}

}  // namespace
}  // namespace runnel
