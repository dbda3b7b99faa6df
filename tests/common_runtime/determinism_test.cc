// Decisions 3 and 10: eager and graph results are bit-identical, and random
// ops repeat exactly for a seed while drawing new numbers on each run.
#include <gtest/gtest.h>

#include <cstring>

#include "common_runtime/eager.h"
#include "common_runtime/session.h"
#include "tests/util/test_util.h"

namespace runnel {
namespace {

Node* RandomNode(Graph& g, const std::string& name, int64_t seed = -1) {
  Node* shape =
      *g.AddConst(Tensor::FromVector<int32_t>({4, 3}), name + "/shape");
  auto n = g.AddNode({.name = name,
                      .op = "random_normal",
                      .inputs = {{shape, 0}},
                      .attrs = {{"seed", seed}, {"dtype", DType::kF32}}});
  EXPECT_TRUE(n.ok()) << n.status();
  return *n;
}

std::vector<double> Fetch(Session& s, Node* n) {
  auto out = s.Run(Session::Feeds{}, {{n, 0}}, {});
  EXPECT_TRUE(out.ok()) << out.status();
  return out.ok() ? (*out)[0].ToDoubles() : std::vector<double>{};
}

TEST(DeterminismTest, RandomOpsRepeatForOneSeed) {
  auto g = std::make_shared<Graph>();
  Node* r = RandomNode(*g, "r");
  Node* other = RandomNode(*g, "other");
  Session a(g, {.num_threads = 2, .seed = 7});
  Session b(g, {.num_threads = 1, .seed = 7});
  Session c(g, {.num_threads = 2, .seed = 8});
  std::vector<double> a1 = Fetch(a, r), a2 = Fetch(a, r);
  EXPECT_EQ(a1, Fetch(b, r)) << "same seed, same draws, any thread count";
  EXPECT_EQ(a2, Fetch(b, r)) << "the second run repeats too";
  EXPECT_NE(a1, a2) << "each run draws new numbers";
  EXPECT_NE(a1, Fetch(c, r)) << "another global seed";
  Session d(g, {.num_threads = 2, .seed = 7});
  EXPECT_NE(Fetch(d, other), a1) << "ops are seeded by name";
}

TEST(DeterminismTest, EagerAndGraphAreBitIdentical) {
  EagerContext eager({.num_threads = 2, .seed = 3});
  Tensor shape = Tensor::FromVector<int32_t>({64, 300});
  Tensor x =
      *eager.Execute1("random_normal", {shape}, {{"dtype", DType::kF32}}, "x");
  Tensor w =
      *eager.Execute1("random_normal", {Tensor::FromVector<int32_t>({300, 50})},
                      {{"dtype", DType::kF32}}, "w");
  Tensor xw = *eager.Execute1("matmul", {x, w});
  Tensor sm = *eager.Execute1("softmax", {xw});
  Tensor total = *eager.Execute1("sum", {sm}, {{"axis", int64_t{0}}});

  auto g = std::make_shared<Graph>();
  Node* xn = *g->AddConst(x, "x");
  Node* wn = *g->AddConst(w, "w");
  Node* mm =
      *g->AddNode({.name = "mm", .op = "matmul", .inputs = {{xn, 0}, {wn, 0}}});
  Node* s = *g->AddNode({.name = "s", .op = "softmax", .inputs = {{mm, 0}}});
  Node* t = *g->AddNode({.name = "t",
                         .op = "sum",
                         .inputs = {{s, 0}},
                         .attrs = {{"axis", int64_t{0}}}});
  Session session(g, {.num_threads = 2});
  auto out = session.Run(Session::Feeds{}, {{mm, 0}, {s, 0}, {t, 0}}, {});
  ASSERT_TRUE(out.ok()) << out.status();
  for (auto [eager_t, graph_t] :
       {std::pair{&xw, &(*out)[0]}, std::pair{&sm, &(*out)[1]},
        std::pair{&total, &(*out)[2]}}) {
    ASSERT_EQ(eager_t->bytes(), graph_t->bytes());
    EXPECT_EQ(
        std::memcmp(eager_t->raw_data(), graph_t->raw_data(), eager_t->bytes()),
        0);
  }
}

}  // namespace
}  // namespace runnel
