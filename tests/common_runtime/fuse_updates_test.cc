// Updates by a product (common_runtime/fuse_updates.h): a run's plan puts
// one apply_sgd_matmul (apply_adam_matmul) in place of an apply_sgd
// (apply_adam) and the matmul that computes its gradient, and the variable
// (and its moments) move as the separate ops move them.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <memory>
#include <string>
#include <vector>

#include "base/strings.h"
#include "common_runtime/session.h"
#include "tests/util/test_ops.h"
#include "tests/util/test_util.h"

namespace runnel {
namespace {

using ::runnel::testing::Add;
using ::runnel::testing::ExpectTensor;
using ::runnel::testing::F32;

std::vector<float> FusePattern(int64_t n, int seed) {
  std::vector<float> v(n);
  for (int64_t i = 0; i < n; ++i) {
    v[i] = static_cast<float>(((i * 7 + seed * 13) % 23) - 11) / 8.0f;
  }
  return v;
}

// The ops a run's plan holds, by name.
std::vector<std::string> PlanOps(Session& s, const std::vector<NodeOut>& f,
                                 const std::vector<Node*>& targets) {
  absl::StatusOr<std::shared_ptr<const Graph>> placed =
      s.PlacedGraph(Session::Feeds{}, f, targets);
  EXPECT_TRUE(placed.ok()) << placed.status();
  std::vector<std::string> ops;
  if (placed.ok()) {
    for (const Node* n : (*placed)->nodes()) ops.push_back(n->op());
  }
  return ops;
}

bool Holds(const std::vector<std::string>& ops, const std::string& op) {
  return std::find(ops.begin(), ops.end(), op) != ops.end();
}

// The update rules FuseCase trains with.
enum class Rule { kSgd, kMomentum, kNesterov, kAdam };

// w [m, n] trained by gradient descent on op(a) op(b) (lr 0.25), or by
// momentum or Adam on that gradient: the plan and the values.
struct FuseCase {
  std::shared_ptr<Graph> g = std::make_shared<Graph>();
  Node* w = nullptr;
  Node* product = nullptr;
  Node* update = nullptr;
  std::vector<float> w0, a, b;
  int64_t m, n, k;
  bool ta, tb;
  Rule rule;
  // The slots (momentum's buffer; Adam's moments) and their first values.
  std::vector<Node*> slots;
  std::vector<std::vector<float>> slot0;
  // Momentum's scalars: lr, momentum.
  static constexpr double kMomentum[2] = {0.05, 0.9};
  // Adam's scalars: lr, beta1, 1 - beta1, beta2, 1 - beta2, eps,
  // correction1, correction2 (the corrections as at some step).
  static constexpr double kAdam[8] = {0.01,  0.9,  0.1, 0.999,
                                      0.001, 1e-3, 0.5, 0.25};

  // `product_device`: the device the product asks for ("" anywhere).
  FuseCase(int64_t m_, int64_t n_, int64_t k_, bool ta_, bool tb_,
           Rule rule_ = Rule::kSgd, const std::string& product_device = "")
      : m(m_), n(n_), k(k_), ta(ta_), tb(tb_), rule(rule_) {
    w0 = FusePattern(m * n, 1);
    a = FusePattern(m * k, 2);
    b = FusePattern(k * n, 3);
    EXPECT_TRUE(g->AddConst(F32(w0, {m, n}), "w_init").ok());
    w = Add(*g, "w", "variable", {},
            {{"dtype", DType::kF32},
             {"shape", Shape{m, n}},
             {"initializer", std::string("w_init:0")}});
    Node* ac = *g->AddConst(F32(a, ta ? Shape{k, m} : Shape{m, k}), "a");
    Node* bc = *g->AddConst(F32(b, tb ? Shape{n, k} : Shape{k, n}), "b");
    product = *g->AddNode({.name = "g",
                           .op = "matmul",
                           .inputs = {{ac, 0}, {bc, 0}},
                           .attrs = {{"transpose_a", ta}, {"transpose_b", tb}},
                           .device = product_device});
    auto scalar = [&](double v) {
      return NodeOut{*g->AddConst(F32({static_cast<float>(v)}, {}),
                                  StrCat("s", g->num_nodes())),
                     0};
    };
    if (rule == Rule::kSgd) {
      update =
          Add(*g, "update", "apply_sgd", {{w, 0}, scalar(0.25), {product, 0}});
      return;
    }
    if (rule != Rule::kAdam) {
      Slot("w_buf", FusePattern(m * n, 4));
      update = Add(*g, "update", "apply_momentum",
                   {{w, 0},
                    {slots[0], 0},
                    scalar(kMomentum[0]),
                    {product, 0},
                    scalar(kMomentum[1])},
                   {{"nesterov", rule == Rule::kNesterov}});
      return;
    }
    Slot("w_m", FusePattern(m * n, 4));
    std::vector<float> s0 = FusePattern(m * n, 5);
    for (float& v : s0) v = v * v;  // a second moment is not negative
    Slot("w_v", s0);
    std::vector<NodeOut> in = {{w, 0}, {slots[0], 0}, {slots[1], 0}};
    for (int i = 0; i < 8; ++i) {
      if (i == 1) in.push_back({product, 0});
      in.push_back(scalar(kAdam[i]));
    }
    update = Add(*g, "update", "apply_adam", in);
  }

  void Slot(const std::string& name, const std::vector<float>& init) {
    EXPECT_TRUE(g->AddConst(F32(init, {m, n}), name + "_init").ok());
    slots.push_back(Add(*g, name, "variable", {},
                        {{"dtype", DType::kF32},
                         {"shape", Shape{m, n}},
                         {"initializer", name + "_init:0"}}));
    slot0.push_back(init);
  }

  // The gradient op(a) op(b), in double.
  std::vector<double> Grad() const {
    std::vector<double> out(m * n);
    for (int64_t i = 0; i < m; ++i) {
      for (int64_t j = 0; j < n; ++j) {
        double sum = 0;
        for (int64_t p = 0; p < k; ++p) {
          sum += double(a[ta ? p * m + i : i * k + p]) *
                 double(b[tb ? j * k + p : p * n + j]);
        }
        out[i * n + j] = sum;
      }
    }
    return out;
  }

  // w and its slots after `steps` updates, in double.
  std::vector<std::vector<double>> WantAll(int steps) const {
    const std::vector<double> grad = Grad();
    std::vector<std::vector<double>> out = {
        std::vector<double>(w0.begin(), w0.end())};
    for (const std::vector<float>& s : slot0)
      out.emplace_back(s.begin(), s.end());
    std::vector<double>& w1 = out[0];
    for (int t = 0; t < steps; ++t) {
      for (size_t i = 0; i < w1.size(); ++i) {
        const double gi = grad[i];
        switch (rule) {
          case Rule::kSgd:
            w1[i] -= 0.25 * gi;
            break;
          case Rule::kMomentum:
          case Rule::kNesterov: {
            double& buf = out[1][i];
            buf = kMomentum[1] * buf + gi;
            w1[i] -= kMomentum[0] *
                     (rule == Rule::kNesterov ? gi + kMomentum[1] * buf : buf);
            break;
          }
          case Rule::kAdam: {
            double& m1 = out[1][i];
            double& s1 = out[2][i];
            m1 = kAdam[1] * m1 + kAdam[2] * gi;
            s1 = kAdam[3] * s1 + kAdam[4] * gi * gi;
            w1[i] -= (kAdam[0] / kAdam[6]) * m1 /
                     (std::sqrt(s1 / kAdam[7]) + kAdam[5]);
            break;
          }
        }
      }
    }
    return out;
  }
  std::vector<double> Want(int steps) const { return WantAll(steps)[0]; }

  // The variable and its slots.
  std::vector<NodeOut> Vars() const {
    std::vector<NodeOut> out = {{w, 0}};
    for (Node* s : slots) out.push_back({s, 0});
    return out;
  }

  // The values of the variable and its slots in `s` are WantAll(steps)'s.
  void ExpectW(Session& s, int steps) const {
    const std::vector<NodeOut> vars = Vars();
    absl::StatusOr<std::vector<Tensor>> value =
        s.Run(Session::Feeds{}, vars, {});
    ASSERT_TRUE(value.ok()) << value.status();
    const std::vector<std::vector<double>> want = WantAll(steps);
    for (size_t i = 0; i < vars.size(); ++i) {
      ExpectTensor((*value)[i], DType::kF32, {m, n}, want[i], 1e-5);
    }
  }
};

// The plan of c's update holds `fused` and neither the update nor the
// product; three runs move the variable (and its moments) as WantAll.
void ExpectFusedSteps(FuseCase& c, const std::string& fused,
                      int cpu_devices = 1) {
  SCOPED_TRACE(StrCat("m=", c.m, " ta=", c.ta, " tb=", c.tb));
  Session s(c.g, {.num_threads = 2, .cpu_devices = cpu_devices});
  const std::vector<std::string> ops = PlanOps(s, {}, {c.update});
  EXPECT_TRUE(Holds(ops, fused));
  EXPECT_FALSE(Holds(ops, c.update->op()));
  EXPECT_FALSE(Holds(ops, "matmul"));
  for (int step = 1; step <= 3; ++step) {
    absl::StatusOr<std::vector<Tensor>> out =
        s.Run(Session::Feeds{}, {{c.update, 0}}, {});
    ASSERT_TRUE(out.ok()) << out.status();
    ExpectTensor((*out)[0], DType::kF32, {c.m, c.n}, c.Want(step), 1e-5);
  }
  c.ExpectW(s, 3);
}

TEST(FuseSgdTest, OneSgemmUpdatesTheVariable) {
  for (int t = 0; t < 4; ++t) {
    FuseCase c(37, 29, 53, t & 1, t & 2);
    ExpectFusedSteps(c, "apply_sgd_matmul");
  }
}

// On two CPU devices the pair fuses as on one; a product asked for on
// another device than its variable's stays there, apart.
TEST(FuseSgdTest, OnTwoCpuDevicesUnlessAskedApart) {
  FuseCase c(37, 29, 53, true, false);
  ExpectFusedSteps(c, "apply_sgd_matmul", /*cpu_devices=*/2);
  FuseCase apart(37, 29, 53, true, false, Rule::kSgd, "/cpu:1");
  Session s(apart.g, {.num_threads = 2, .cpu_devices = 2});
  absl::StatusOr<std::shared_ptr<const Graph>> placed =
      s.PlacedGraph(Session::Feeds{}, {}, {apart.update});
  ASSERT_TRUE(placed.ok()) << placed.status();
  const Node* product = (*placed)->FindNode("g");
  ASSERT_NE(product, nullptr) << "the product was fused away";
  EXPECT_EQ(product->op(), "matmul");
  EXPECT_EQ(product->assigned_device(), "/job:localhost/task:0/device:cpu:1");
  EXPECT_EQ((*placed)->FindNode("update")->op(), "apply_sgd");
  for (int step = 1; step <= 2; ++step) {
    ASSERT_TRUE(s.Run(Session::Feeds{}, {}, {apart.update}).ok());
  }
  apart.ExpectW(s, 2);
}

// A product that is also fetched stays a product, and apply_sgd reads it.
TEST(FuseSgdTest, AProductUsedElsewhereStays) {
  FuseCase c(8, 5, 3, false, false);
  Session s(c.g, {.num_threads = 2});
  const std::vector<std::string> ops = PlanOps(s, {{c.product, 0}}, {c.update});
  EXPECT_TRUE(Holds(ops, "apply_sgd"));
  EXPECT_TRUE(Holds(ops, "matmul"));
  EXPECT_FALSE(Holds(ops, "apply_sgd_matmul"));
  absl::StatusOr<std::vector<Tensor>> out =
      s.Run(Session::Feeds{}, {{c.product, 0}}, {c.update});
  ASSERT_TRUE(out.ok()) << out.status();
  c.ExpectW(s, 1);
}

// The variable's other readers in the run see the value before the update
// (they run first: the update waits for them), and a value fetched before
// stays as it was: the update changes the variable's buffer in place only
// when nothing else holds it.
TEST(FuseSgdTest, ReadersSeeTheValueBefore) {
  FuseCase c(16, 12, 4, true, false);
  Node* twice = Add(*c.g, "twice", "test_sum", {{c.w, 0}, {c.w, 0}});
  Session s(c.g, {.num_threads = 2});
  absl::StatusOr<std::vector<Tensor>> before =
      s.Run(Session::Feeds{}, {{c.w, 0}}, {});
  ASSERT_TRUE(before.ok()) << before.status();
  absl::StatusOr<std::shared_ptr<const Graph>> placed =
      s.PlacedGraph(Session::Feeds{}, {{c.w, 0}, {twice, 0}}, {c.update});
  ASSERT_TRUE(placed.ok()) << placed.status();
  const Node* fused = (*placed)->FindNode("update");
  ASSERT_NE(fused, nullptr);
  EXPECT_EQ(fused->op(), "apply_sgd_matmul");
  std::vector<std::string> waits;
  for (const Node* w : fused->control_inputs()) waits.push_back(w->name());
  EXPECT_TRUE(Holds(waits, "twice")) << "the update waits for every reader";
  for (int step = 1; step <= 2; ++step) {
    absl::StatusOr<std::vector<Tensor>> out =
        s.Run(Session::Feeds{}, {{c.w, 0}, {twice, 0}}, {c.update});
    ASSERT_TRUE(out.ok()) << out.status();
    std::vector<double> old = c.Want(step - 1);
    ExpectTensor((*out)[0], DType::kF32, {c.m, c.n}, old, 1e-5);
    for (double& v : old) v *= 2;
    ExpectTensor((*out)[1], DType::kF32, {c.m, c.n}, old, 1e-5);
  }
  ExpectTensor((*before)[0], DType::kF32, {c.m, c.n},
               std::vector<double>(c.w0.begin(), c.w0.end()), 0);
  c.ExpectW(s, 2);
}

// The products FuseCase tries for an update by blocks of rows: each
// transpose, a product cut into two blocks of rows (GemmF32Rows: 200x96x512
// is two pieces), and one with fewer rows than columns (computed whole,
// then handed over by rows).
FuseCase BlocksCase(int t, Rule rule) {
  if (t < 4) return FuseCase(37, 29, 53, t & 1, t & 2, rule);
  if (t == 4) return FuseCase(200, 96, 512, true, false, rule);
  return FuseCase(20, 70, 300, true, false, rule);
}

// Adam by a product: the plan holds one apply_adam_matmul, and the
// variable and its moments move as hand-computed Adam moves them.
TEST(FuseAdamTest, TheProductsBlocksUpdateTheVariableAndItsMoments) {
  for (int t = 0; t < 6; ++t) {
    FuseCase c = BlocksCase(t, Rule::kAdam);
    ExpectFusedSteps(c, "apply_adam_matmul");
  }
}

// The fused update equals the separate ops' (a run that also fetches the
// product keeps them), within the sgemm's rounding; the run's other
// readers of the variable see the value before the update.
TEST(FuseAdamTest, EqualsTheSeparateOps) {
  FuseCase fused(64, 48, 40, true, false, Rule::kAdam);
  FuseCase apart(64, 48, 40, true, false, Rule::kAdam);
  Node* twice =
      Add(*fused.g, "twice", "test_sum", {{fused.w, 0}, {fused.w, 0}});
  Session sf(fused.g, {.num_threads = 2});
  Session sa(apart.g, {.num_threads = 2});
  EXPECT_TRUE(
      Holds(PlanOps(sf, {{twice, 0}}, {fused.update}), "apply_adam_matmul"));
  const std::vector<std::string> apart_ops =
      PlanOps(sa, {{apart.product, 0}}, {apart.update});
  EXPECT_TRUE(Holds(apart_ops, "apply_adam"));
  EXPECT_FALSE(Holds(apart_ops, "apply_adam_matmul"));
  for (int step = 1; step <= 3; ++step) {
    absl::StatusOr<std::vector<Tensor>> f =
        sf.Run(Session::Feeds{}, {{twice, 0}}, {fused.update});
    ASSERT_TRUE(f.ok()) << f.status();
    std::vector<double> before = fused.Want(step - 1);
    for (double& v : before) v *= 2;
    ExpectTensor((*f)[0], DType::kF32, {64, 48}, before, 1e-5);
    ASSERT_TRUE(
        sa.Run(Session::Feeds{}, {{apart.product, 0}}, {apart.update}).ok());
  }
  absl::StatusOr<std::vector<Tensor>> a =
      sa.Run(Session::Feeds{}, apart.Vars(), {});
  ASSERT_TRUE(a.ok()) << a.status();
  for (int i = 0; i < 3; ++i) {
    const float* want = (*a)[i].data<float>();
    ExpectTensor((*a)[i], DType::kF32, {64, 48},
                 std::vector<double>(want, want + 64 * 48), 0);
  }
  fused.ExpectW(sf, 3);
  absl::StatusOr<std::vector<Tensor>> f =
      sf.Run(Session::Feeds{}, fused.Vars(), {});
  ASSERT_TRUE(f.ok()) << f.status();
  for (int i = 0; i < 3; ++i) {
    const float* want = (*a)[i].data<float>();
    ExpectTensor((*f)[i], DType::kF32, {64, 48},
                 std::vector<double>(want, want + 64 * 48), 1e-6);
  }
}

// A moment not shaped like the variable is refused where the fused node is
// made, naming the input.
TEST(FuseAdamTest, AMomentOfAnotherShapeIsRefused) {
  Graph g;
  auto var = [&](const std::string& name, Shape shape) {
    return Add(g, name, "variable", {},
               {{"dtype", DType::kF32}, {"shape", shape}});
  };
  std::vector<NodeOut> in = {
      {var("w", Shape{4, 3}), 0},
      {var("m", Shape{4, 3}), 0},
      {var("v", Shape{3, 4}), 0},
      {*g.AddConst(F32({0.1f}, {}), "lr"), 0},
      {*g.AddConst(F32(FusePattern(8, 1), {4, 2}), "a"), 0},
      {*g.AddConst(F32(FusePattern(6, 2), {2, 3}), "b"), 0}};
  for (int i = 0; i < 7; ++i) {
    in.push_back({*g.AddConst(F32({0.5f}, {}), StrCat("s", i)), 0});
  }
  NodeSpec spec;
  spec.name = "update";
  spec.op = "apply_adam_matmul";
  spec.inputs = in;
  absl::StatusOr<Node*> n = g.AddNode(std::move(spec));
  ASSERT_FALSE(n.ok());
  EXPECT_NE(n.status().message().find("`ref_v` is f32[3,4] but must be f32 "
                                      "shaped like the variable f32[4,3]"),
            std::string::npos)
      << n.status();
}

// Momentum by a product, plain and Nesterov's: one apply_momentum_matmul,
// and the variable and its buffer move as hand-computed momentum moves
// them.
TEST(FuseMomentumTest, TheProductsBlocksUpdateTheVariableAndItsBuffer) {
  for (Rule rule : {Rule::kMomentum, Rule::kNesterov}) {
    SCOPED_TRACE(rule == Rule::kNesterov ? "nesterov" : "momentum");
    for (int t = 0; t < 6; ++t) {
      FuseCase c = BlocksCase(t, rule);
      ExpectFusedSteps(c, "apply_momentum_matmul");
    }
  }
}

}  // namespace
}  // namespace runnel
