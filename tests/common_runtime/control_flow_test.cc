// The control-flow ops and the executor's frames, on graphs built by hand
// (WhileBuilder for loops) and run through a Session: dead values, loops,
// nested frames, overlapping iterations (observed with test_wait's latch,
// not sleeps), cancellation and errors inside a loop.
#include "common_runtime/control_flow.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "common_runtime/session.h"
#include "tests/util/loops.h"
#include "tests/util/test_ops.h"
#include "tests/util/test_util.h"

namespace runnel {
namespace {

using ::runnel::testing::Add;
using ::runnel::testing::BuildLoop;
using ::runnel::testing::ExpectTensor;
using ::runnel::testing::F32;
using ::runnel::testing::g_max_in_flight;
using ::runnel::testing::g_runs;
using ::runnel::testing::I32;
using ::runnel::testing::ResetCounters;

using ::runnel::testing::Const;

TEST(ControlFlowOpsTest, SwitchSendsToOneSideAndMergeTakesTheLiveOne) {
  for (bool p : {false, true}) {
    auto g = std::make_shared<Graph>();
    NodeOut x = Const(*g, F32({3}, {}));
    NodeOut pred = Const(*g, Tensor::ScalarOf(DType::kBool, p));
    Node* sw = Add(*g, "sw", "switch", {x, pred});
    ResetCounters();
    // Each side counts its runs; the untaken one must not run.
    Node* f = Add(*g, "f", "test_sum", {{sw, 0}, {sw, 0}});
    Node* t = Add(*g, "t", "test_sum", {{sw, 1}});
    Node* m = Add(*g, "m", "merge", {{f, 0}, {t, 0}});
    Session s(g, {.num_threads = 2});
    auto out = s.Run(Session::Feeds{}, {{m, 0}, {m, 1}}, {});
    ASSERT_TRUE(out.ok()) << out.status();
    ExpectTensor((*out)[0], DType::kF32, {}, {p ? 3.0 : 6.0});
    ExpectTensor((*out)[1], DType::kI32, {}, {p ? 1.0 : 0.0});
    EXPECT_EQ(g_runs.load(), 1) << "only the taken side ran";
  }
}

TEST(ControlFlowOpsTest, LoopSumsItsCounterAndRunsZeroTimes) {
  for (int n : {0, 1, 10}) {
    auto g = std::make_shared<Graph>();
    auto exits = BuildLoop(
        *g, "loop", {Const(*g, I32({0}, {}))}, Const(*g, I32({n}, {})),
        [&](WhileBuilder&, NodeOut i, std::vector<NodeOut> v) {
          return std::vector<NodeOut>{
              {Add(*g, g->UniqueName("add"), "add", {v[0], i}), 0}};
        });
    Session s(g, {.num_threads = 2});
    for (int run = 0; run < 2; ++run) {  // the executor is reused
      auto out = s.Run(Session::Feeds{}, {exits[0], exits[1]}, {});
      ASSERT_TRUE(out.ok()) << out.status();
      ExpectTensor((*out)[0], DType::kI32, {}, {double(n)});
      ExpectTensor((*out)[1], DType::kI32, {}, {n * (n - 1) / 2.0});
    }
  }
}

// The executor passes the values of switch, enter, exit, next_iteration,
// identity, loop_cond and (on the CPU) const on itself in untraced runs;
// a traced run calls their kernels (each shows in the trace). Both give
// the same values, an untaken side stays dead either way.
TEST(ControlFlowOpsTest, ForwardingNodesGiveTheSameValuesTracedOrNot) {
  auto g = std::make_shared<Graph>();
  NodeOut five = Const(*g, F32({5}, {}));
  auto exits = BuildLoop(
      *g, "loop", {Const(*g, I32({0}, {})), five}, Const(*g, I32({7}, {})),
      [&](WhileBuilder&, NodeOut i, std::vector<NodeOut> v) {
        Node* id = Add(*g, "id", "identity", {v[0]});
        Node* cast = Add(*g, "cast_i", "cast", {i}, {{"dtype", DType::kF32}});
        return std::vector<NodeOut>{
            {Add(*g, "acc", "add", {{id, 0}, i}), 0},
            {Add(*g, "mix", "add", {v[1], {cast, 0}}), 0}};
      });
  NodeOut pred = Const(*g, Tensor::ScalarOf(DType::kBool, false));
  Node* sw = Add(*g, "sw", "switch", {exits[2], pred});
  Node* f = Add(*g, "f", "identity", {{sw, 0}});
  Node* t = Add(*g, "t", "identity", {{sw, 1}});
  Node* m = Add(*g, "m", "merge", {{f, 0}, {t, 0}});
  Session s(g, {.num_threads = 2});
  Tracer tracer;
  for (bool traced : {false, true, false}) {
    s.set_tracer(traced ? &tracer : nullptr);
    auto out =
        s.Run(Session::Feeds{}, {exits[0], exits[1], {m, 0}, {m, 1}}, {});
    ASSERT_TRUE(out.ok()) << out.status();
    ExpectTensor((*out)[0], DType::kI32, {}, {7});
    ExpectTensor((*out)[1], DType::kI32, {}, {21});
    ExpectTensor((*out)[2], DType::kF32, {}, {26});
    ExpectTensor((*out)[3], DType::kI32, {}, {0});
  }
  const std::string json = tracer.ToJson();
  for (const char* kernel : {"\"sw\"", "\"f\"", "\"id\""}) {
    EXPECT_NE(json.find(kernel), std::string::npos) << kernel;
  }
  EXPECT_EQ(json.find("\"t\""), std::string::npos) << "the untaken side";
}

TEST(ControlFlowOpsTest, NestedLoopsGetAFrameInstancePerOuterIteration) {
  // sum over i < 3 of (sum over j < i + 1 of j) = 0 + 1 + 3.
  auto g = std::make_shared<Graph>();
  NodeOut one = Const(*g, I32({1}, {}));
  auto exits = BuildLoop(
      *g, "outer", {Const(*g, I32({0}, {}))}, Const(*g, I32({3}, {})),
      [&](WhileBuilder& outer, NodeOut i, std::vector<NodeOut> v) {
        NodeOut bound = {
            Add(*g, "bound", "add", {i, *outer.EnterInvariant(one)}), 0};
        // The inner loop's start and limit come from the outer body.
        NodeOut zero = {Add(*g, "zero", "sub", {i, i}), 0};
        auto inner = BuildLoop(
            *g, "inner", {zero}, bound,
            [&](WhileBuilder&, NodeOut j, std::vector<NodeOut> t) {
              return std::vector<NodeOut>{
                  {Add(*g, g->UniqueName("inner_add"), "add", {t[0], j}), 0}};
            },
            &outer);
        return std::vector<NodeOut>{
            {Add(*g, "outer_add", "add", {v[0], inner[1]}), 0}};
      });
  Session s(g, {.num_threads = 2});
  auto out = s.Run(Session::Feeds{}, {exits[1]}, {});
  ASSERT_TRUE(out.ok()) << out.status();
  ExpectTensor((*out)[0], DType::kI32, {}, {4});
}

TEST(ControlFlowOpsTest, LoopInAnUntakenBranchEndsDead) {
  auto g = std::make_shared<Graph>();
  NodeOut pred = Const(*g, Tensor::ScalarOf(DType::kBool, false));
  NodeOut x = Const(*g, I32({5}, {}));
  Node* sw = Add(*g, "sw", "switch", {x, pred});
  auto exits = BuildLoop(
      *g, "loop", {{sw, 1}}, Const(*g, I32({3}, {})),
      [&](WhileBuilder&, NodeOut, std::vector<NodeOut> v) {
        return std::vector<NodeOut>{{Add(*g, "inc", "add", {v[0], v[0]}), 0}};
      });
  Node* m = Add(*g, "m", "merge", {{sw, 0}, exits[1]});
  Session s(g, {.num_threads = 2});
  auto out = s.Run(Session::Feeds{}, {{m, 0}, {m, 1}}, {});
  ASSERT_TRUE(out.ok()) << out.status();
  ExpectTensor((*out)[0], DType::kI32, {}, {5});
  ExpectTensor((*out)[1], DType::kI32, {}, {0});
}

TEST(ControlFlowOpsTest, IterationsOverlap) {
  // w's next value is test_wait(v), which reads only v: iteration i + 1's
  // test_wait can start while iteration i's still waits. Each waits until
  // three run at once, so the run finishes only if iterations overlap.
  auto g = std::make_shared<Graph>();
  auto exits =
      BuildLoop(*g, "loop", {Const(*g, F32({1}, {})), Const(*g, F32({0}, {}))},
                Const(*g, I32({6}, {})),
                [&](WhileBuilder&, NodeOut, std::vector<NodeOut> v) {
                  Node* w = Add(*g, g->UniqueName("wait"), "test_wait", {v[0]});
                  return std::vector<NodeOut>{v[0], {w, 0}};
                });
  Session s(g, {.num_threads = 4});
  ResetCounters(/*wait_for=*/3);
  auto out = s.Run(Session::Feeds{}, {exits[2]}, {});
  ASSERT_TRUE(out.ok()) << out.status();
  ExpectTensor((*out)[0], DType::kF32, {}, {1});
  EXPECT_GE(g_max_in_flight.load(), 3);
}

TEST(ControlFlowOpsTest, ErrorAndCancellationInsideALoopEndTheRun) {
  auto g = std::make_shared<Graph>();
  auto exits = BuildLoop(
      *g, "loop", {Const(*g, F32({1}, {}))}, Const(*g, I32({1 << 30}, {})),
      [&](WhileBuilder&, NodeOut, std::vector<NodeOut> v) {
        return std::vector<NodeOut>{{Add(*g, "fail", "test_fail", {v[0]}), 0}};
      });
  Session s(g, {.num_threads = 2});
  auto out = s.Run(Session::Feeds{}, {exits[1]}, {});
  ASSERT_FALSE(out.ok());
  EXPECT_NE(std::string(out.status().message()).find("fail"), std::string::npos)
      << out.status();

  // An endless loop (its body never fails) stops when cancelled.
  auto g2 = std::make_shared<Graph>();
  auto e2 = BuildLoop(
      *g2, "loop", {Const(*g2, F32({1}, {}))}, Const(*g2, I32({1 << 30}, {})),
      [&](WhileBuilder&, NodeOut, std::vector<NodeOut> v) { return v; });
  Session s2(g2, {.num_threads = 2});
  std::atomic<bool> cancelled{true};
  auto out2 = s2.Run(Session::Feeds{}, {e2[1]}, {}, {.cancelled = &cancelled});
  ASSERT_FALSE(out2.ok());
  EXPECT_EQ(out2.status().code(), absl::StatusCode::kCancelled);
}

}  // namespace
}  // namespace runnel
