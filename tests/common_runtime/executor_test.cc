// Executor tests: scheduling, parallelism and ordering, through a Session,
// with the test-only ops of test_ops.h, so they depend on no particular math
// kernel. Session's own behaviour is in session_test.cc.
#include <gtest/gtest.h>

#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "common_runtime/session.h"
#include "framework/kernel.h"
#include "framework/op_registry.h"
#include "framework/shape_fns.h"
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

// test_thread(x) -> x: a kernel that says it is expensive, runs in
// microseconds and records the threads it ran on.
std::mutex g_threads_mu;
std::vector<std::thread::id> g_threads;

class ThreadKernel : public OpKernel {
 public:
  absl::Status Compute(OpKernelContext* ctx) override {
    {
      std::lock_guard<std::mutex> lock(g_threads_mu);
      g_threads.push_back(std::this_thread::get_id());
    }
    return ctx->set_output(0, ctx->input(0));
  }
  bool IsExpensive() const override { return true; }
};

RUNNEL_REGISTER_OP(
    OpDefBuilder("test_thread").Inputs({"x"}).Shape(UnchangedShape));
RUNNEL_STATIC_INIT(ExecutorTestKernels) {
  RegisterKernel<ThreadKernel>("test_thread", kDeviceCpu, DType::kF32);
}

// Two expensive nodes ready together: one goes to the pool, the other stays
// on the thread that readied them (the caller's). Once each has run fast
// Executor::kCheapRuns times in a row, both count as cheap and run on the
// caller's thread: waking a pool thread would cost more than they take.
TEST(ExecutorTest, ExpensiveKernelsThatRunFastBecomeCheap) {
  auto g = std::make_shared<Graph>();
  Node* a = *g->AddConst(F32({1, 2}, {2}), "a");
  Node* b = Add(*g, "b", "test_thread", {{a, 0}});
  Node* c = Add(*g, "c", "test_thread", {{a, 0}});
  Session s(g, {.num_threads = 2});
  auto run = [&] {
    {
      std::lock_guard<std::mutex> lock(g_threads_mu);
      g_threads.clear();
    }
    auto out = s.Run(Session::Feeds{}, {{b, 0}, {c, 0}}, {});
    EXPECT_TRUE(out.ok()) << out.status();
    std::lock_guard<std::mutex> lock(g_threads_mu);
    return g_threads;
  };
  const std::thread::id caller = std::this_thread::get_id();
  std::vector<std::thread::id> first = run();
  ASSERT_EQ(first.size(), 2u);
  EXPECT_NE(first[0], first[1]);  // one of them on a pool thread
  // Fast runs in a row (a run preempted past the limit starts the count
  // again, hence the margin).
  const std::vector<std::thread::id> inline_runs = {caller, caller};
  for (int i = 0; i < 200 && run() != inline_runs; ++i) {
  }
  EXPECT_EQ(run(), inline_runs);
}

}  // namespace
}  // namespace runnel
