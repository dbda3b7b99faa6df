// Executor tests: scheduling, parallelism and ordering, through a Session,
// with the test-only ops of test_ops.h, so they depend on no particular math
// kernel. Session's own behaviour is in session_test.cc.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "common_runtime/session.h"
#include "tests/util/test_ops.h"
#include "tests/util/test_util.h"

namespace runnel {
namespace {

using ::runnel::testing::Add;
using ::runnel::testing::ExpectTensor;
using ::runnel::testing::F32;
using ::runnel::testing::g_max_in_flight;
using ::runnel::testing::g_runs;
using ::runnel::testing::ResetCounters;

TEST(ExecutorTest, DiamondRunsBranchesConcurrently) {
  auto g = std::make_shared<Graph>();
  Node* a = *g->AddConst(F32({1, 2}, {2}), "a");
  Node* b = Add(*g, "b", "test_wait", {{a, 0}});
  Node* c = Add(*g, "c", "test_wait", {{a, 0}});
  Node* d = Add(*g, "d", "test_sum", {{b, 0}, {c, 0}});
  Session s(g, {.num_threads = 4});
  ResetCounters(/*wait_for=*/2);
  auto out = s.Run(Session::Feeds{}, {{d, 0}}, {});
  ASSERT_TRUE(out.ok()) << out.status();
  ExpectTensor((*out)[0], DType::kF32, {2}, {2, 4});
  EXPECT_EQ(g_max_in_flight.load(), 2);
}

TEST(ExecutorTest, WideFanOutRunsInParallel) {
  auto g = std::make_shared<Graph>();
  Node* a = *g->AddConst(F32({1}, {1}), "a");
  std::vector<NodeOut> branches;
  for (int i = 0; i < 8; ++i) {
    branches.push_back(
        {Add(*g, "s" + std::to_string(i), "test_wait", {{a, 0}}), 0});
  }
  Node* sum = Add(*g, "sum", "test_sum", branches);
  Session s(g, {.num_threads = 4});
  // 4 pool threads plus the calling thread can overlap.
  ResetCounters(/*wait_for=*/4);
  auto out = s.Run(Session::Feeds{}, {{sum, 0}}, {});
  ASSERT_TRUE(out.ok()) << out.status();
  ExpectTensor((*out)[0], DType::kF32, {1}, {8});
  EXPECT_EQ(g_runs.load(), 9);
  // 4 pool threads plus the calling thread can overlap.
  EXPECT_GE(g_max_in_flight.load(), 4);
}

TEST(ExecutorTest, ChainOfCheapOpsRunsInOrder) {
  auto g = std::make_shared<Graph>();
  Node* x = *g->AddConst(F32({1}, {}), "x");
  NodeOut cur{x, 0};
  for (int i = 0; i < 1000; ++i) {
    cur = {Add(*g, "n" + std::to_string(i), "test_sum", {cur, {x, 0}}), 0};
  }
  Session s(g, {.num_threads = 2});
  auto out = s.Run(Session::Feeds{}, {cur}, {});
  ASSERT_TRUE(out.ok()) << out.status();
  ExpectTensor((*out)[0], DType::kF32, {}, {1001});
}

}  // namespace
}  // namespace runnel
