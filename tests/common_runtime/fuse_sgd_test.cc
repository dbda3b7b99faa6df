// Gradient descent by a product (common_runtime/fuse_sgd.h): a run's plan
// puts one apply_sgd_matmul in place of an apply_sgd and the matmul that
// computes its gradient, and the variable moves as the separate ops move it.
#include <gtest/gtest.h>

#include <algorithm>
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

// w [m, n] trained by lr * op(a) op(b): the plan and the values.
struct FuseCase {
  std::shared_ptr<Graph> g = std::make_shared<Graph>();
  Node* w = nullptr;
  Node* product = nullptr;
  Node* update = nullptr;
  std::vector<float> w0, a, b;
  int64_t m, n, k;
  bool ta, tb;

  FuseCase(int64_t m_, int64_t n_, int64_t k_, bool ta_, bool tb_)
      : m(m_), n(n_), k(k_), ta(ta_), tb(tb_) {
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
    Node* lr = *g->AddConst(F32({0.25f}, {}), "lr");
    product = Add(*g, "g", "matmul", {{ac, 0}, {bc, 0}},
                  {{"transpose_a", ta}, {"transpose_b", tb}});
    update = Add(*g, "update", "apply_sgd", {{w, 0}, {lr, 0}, {product, 0}});
  }

  // w after `steps` updates, in double.
  std::vector<double> Want(int steps) const {
    std::vector<double> out(w0.begin(), w0.end());
    for (int64_t i = 0; i < m; ++i) {
      for (int64_t j = 0; j < n; ++j) {
        double sum = 0;
        for (int64_t p = 0; p < k; ++p) {
          sum += double(a[ta ? p * m + i : i * k + p]) *
                 double(b[tb ? j * k + p : p * n + j]);
        }
        out[i * n + j] -= steps * 0.25 * sum;
      }
    }
    return out;
  }

  // The variable's value in `s` is Want(steps).
  void ExpectW(Session& s, int steps) const {
    absl::StatusOr<std::vector<Tensor>> value =
        s.Run(Session::Feeds{}, {{w, 0}}, {});
    ASSERT_TRUE(value.ok()) << value.status();
    ExpectTensor((*value)[0], DType::kF32, {m, n}, Want(steps), 1e-5);
  }
};

TEST(FuseSgdTest, OneSgemmUpdatesTheVariable) {
  for (int t = 0; t < 4; ++t) {
    FuseCase c(37, 29, 53, t & 1, t & 2);
    SCOPED_TRACE(StrCat("ta=", c.ta, " tb=", c.tb));
    Session s(c.g, {.num_threads = 2});
    const std::vector<std::string> ops = PlanOps(s, {}, {c.update});
    EXPECT_TRUE(Holds(ops, "apply_sgd_matmul"));
    EXPECT_FALSE(Holds(ops, "apply_sgd"));
    EXPECT_FALSE(Holds(ops, "matmul"));
    for (int step = 1; step <= 3; ++step) {
      absl::StatusOr<std::vector<Tensor>> out =
          s.Run(Session::Feeds{}, {{c.update, 0}}, {});
      ASSERT_TRUE(out.ok()) << out.status();
      ExpectTensor((*out)[0], DType::kF32, {c.m, c.n}, c.Want(step), 1e-5);
    }
    c.ExpectW(s, 3);
  }
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

}  // namespace
}  // namespace runnel
