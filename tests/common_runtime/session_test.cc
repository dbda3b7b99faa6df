// Session tests: pruning, feeds, fetches and targets, executor caching,
// cancellation, errors with node and span, variables and their
// initialisation, concurrent runs. Uses the test-only ops of test_ops.h.
#include "common_runtime/session.h"

#include <gtest/gtest.h>

#include <atomic>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "base/errors.h"
#include "tests/util/test_ops.h"
#include "tests/util/test_util.h"

namespace runnel {
namespace {

using ::runnel::testing::Add;
using ::runnel::testing::ExpectTensor;
using ::runnel::testing::F32;
using ::runnel::testing::g_cv;
using ::runnel::testing::g_hold_after;
using ::runnel::testing::g_mu;
using ::runnel::testing::g_released;
using ::runnel::testing::g_runs;
using ::runnel::testing::Placeholder;
using ::runnel::testing::ResetCounters;

TEST(SessionTest, CancelStopsARunBetweenKernels) {
  auto g = std::make_shared<Graph>();
  Node* c = *g->AddConst(F32({1}, {1}), "c");
  NodeOut cur{c, 0};
  for (int i = 0; i < 100; ++i) {  // 100 in sequence; the 4th waits
    cur = {Add(*g, "s" + std::to_string(i), "test_wait", {cur}), 0};
  }
  Session s(g, {.num_threads = 2});
  ResetCounters();
  g_hold_after = 3;  // the 4th kernel waits until the run is cancelled
  std::atomic<bool> cancelled{false};
  std::thread canceller([&] {
    std::unique_lock<std::mutex> l(g_mu);
    g_cv.wait(l, [] { return g_runs.load() >= 3; });
    cancelled = true;
    g_released = true;
    g_cv.notify_all();
  });
  auto out = s.Run(Session::Feeds{}, {cur}, {}, {.cancelled = &cancelled});
  canceller.join();
  ASSERT_FALSE(out.ok());
  EXPECT_EQ(out.status().code(), absl::StatusCode::kCancelled);
  EXPECT_LT(g_runs.load(), 100);
  // The session stays usable.
  auto again = s.Run(Session::Feeds{}, {{c, 0}}, {});
  ASSERT_TRUE(again.ok()) << again.status();
}

TEST(SessionTest, PrunesToWhatFetchesNeed) {
  auto g = std::make_shared<Graph>();
  Node* x = Placeholder(*g, "x", {2});
  Node* unused = Add(*g, "unused", "test_fail", {{x, 0}});
  Node* c = *g->AddConst(F32({3, 4}, {2}), "c");
  Node* y = Add(*g, "y", "test_sum", {{c, 0}, {c, 0}});
  Session s(g, {.num_threads = 2});
  ResetCounters();
  // x is unfed and `unused` would fail, but neither is on y's path.
  auto out = s.Run(Session::Feeds{}, {{y, 0}}, {});
  ASSERT_TRUE(out.ok()) << out.status();
  ExpectTensor((*out)[0], DType::kF32, {2}, {6, 8});
  EXPECT_EQ(g_runs.load(), 1);
  (void)unused;
}

TEST(SessionTest, FeedsCutTheGraph) {
  auto g = std::make_shared<Graph>();
  Node* x = Placeholder(*g, "x", {-1});
  Node* bad = Add(*g, "bad", "test_fail", {{x, 0}});
  Node* y = Add(*g, "y", "test_sum", {{bad, 0}, {bad, 0}});
  Session s(g, {.num_threads = 2});
  // Feeding `bad` replaces it: neither it nor x runs.
  auto out =
      s.Run(Session::Feeds{{{bad, 0}, F32({1, 2, 3}, {3})}}, {{y, 0}}, {});
  ASSERT_TRUE(out.ok()) << out.status();
  ExpectTensor((*out)[0], DType::kF32, {3}, {2, 4, 6});
  // Fetching a fed tensor returns the fed value.
  out = s.Run(Session::Feeds{{{x, 0}, F32({5}, {1})}}, {{x, 0}}, {});
  ASSERT_TRUE(out.ok()) << out.status();
  ExpectTensor((*out)[0], DType::kF32, {1}, {5});
}

TEST(SessionTest, MissingFeedNamesTheInputAndItsSpan) {
  auto g = std::make_shared<Graph>();
  Node* x = Placeholder(*g, "x", {2}, {.file = "m.rnl", .line = 3, .col = 7});
  Node* y = Add(*g, "y", "test_sum", {{x, 0}});
  Session s(g, {.num_threads = 2});
  auto out = s.Run(Session::Feeds{}, {{y, 0}}, {});
  ASSERT_FALSE(out.ok());
  EXPECT_EQ(out.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(std::string(ToStd(out.status().message())),
            "missing feed for input 'x'");
  EXPECT_EQ(NodeNameOf(out.status()).value_or(""), "x");
  ASSERT_TRUE(SpanOf(out.status()).has_value());
  EXPECT_EQ(SpanOf(out.status())->ToString(), "m.rnl:3:7");
}

TEST(SessionTest, WrongFeedShapeIsAnError) {
  auto g = std::make_shared<Graph>();
  Node* x = Placeholder(*g, "x", {2});
  Node* y = Add(*g, "y", "test_sum", {{x, 0}});
  Session s(g, {.num_threads = 2});
  auto out = s.Run(Session::Feeds{{{x, 0}, F32({1, 2, 3}, {3})}}, {{y, 0}}, {});
  ASSERT_FALSE(out.ok());
  EXPECT_NE(std::string(ToStd(out.status().message())).find("does not match"),
            std::string::npos)
      << out.status();
}

TEST(SessionTest, KernelErrorCarriesNodeAndSpan) {
  auto g = std::make_shared<Graph>();
  Node* c = *g->AddConst(F32({1}, {1}), "c");
  Node* f = Add(*g, "f", "test_fail", {{c, 0}}, {},
                {.file = "a.rnl", .line = 9, .col = 2});
  Node* y = Add(*g, "y", "test_sum", {{f, 0}});
  Session s(g, {.num_threads = 2});
  auto out = s.Run(Session::Feeds{}, {{y, 0}}, {});
  ASSERT_FALSE(out.ok());
  EXPECT_EQ(NodeNameOf(out.status()).value_or(""), "f");
  EXPECT_EQ(SpanOf(out.status())->ToString(), "a.rnl:9:2");
}

TEST(SessionTest, CachesExecutorsPerSignature) {
  auto g = std::make_shared<Graph>();
  Node* x = Placeholder(*g, "x", {1});
  Node* y = Add(*g, "y", "test_sum", {{x, 0}, {x, 0}});
  Session s(g, {.num_threads = 2});
  for (int i = 0; i < 3; ++i) {
    auto out =
        s.Run(Session::Feeds{{{x, 0}, F32({float(i)}, {1})}}, {{y, 0}}, {});
    ASSERT_TRUE(out.ok());
    ExpectTensor((*out)[0], DType::kF32, {1}, {2.0 * i});
  }
  EXPECT_EQ(s.num_cached_executors(), 1);
  ASSERT_TRUE(
      s.Run(Session::Feeds{{{x, 0}, F32({1}, {1})}}, {{x, 0}}, {}).ok());
  EXPECT_EQ(s.num_cached_executors(), 2);
}

TEST(SessionTest, ConcurrentRunsAreSafe) {
  auto g = std::make_shared<Graph>();
  Node* x = Placeholder(*g, "x", {-1});
  NodeOut cur{x, 0};
  for (int i = 0; i < 20; ++i) {
    cur = {Add(*g, "n" + std::to_string(i), "test_sum", {cur, {x, 0}}), 0};
  }
  Session s(g, {.num_threads = 3});
  std::vector<std::thread> threads;
  std::atomic<int> failures{0};
  for (int t = 0; t < 6; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 50; ++i) {
        float v = float(t * 100 + i);
        auto out =
            s.Run(Session::Feeds{{{x, 0}, F32({v, -v}, {2})}}, {cur}, {});
        if (!out.ok() || (*out)[0].at<float>(0) != 21 * v ||
            (*out)[0].at<float>(1) != -21 * v) {
          ++failures;
        }
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(failures.load(), 0);
}

TEST(SessionTest, TargetsRunWithoutFetching) {
  auto g = std::make_shared<Graph>();
  Node* c = *g->AddConst(F32({1}, {1}), "c");
  Node* sl = Add(*g, "sl", "test_wait", {{c, 0}});
  Node* group =
      *g->AddNode({.name = "group", .op = "noop", .control_inputs = {sl}});
  Session s(g, {.num_threads = 2});
  ResetCounters();
  auto out = s.Run(Session::Feeds{}, {}, {group});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_TRUE(out->empty());
  EXPECT_EQ(g_runs.load(), 1);
}

TEST(SessionTest, PlaceholderWithDefault) {
  auto g = std::make_shared<Graph>();
  Node* d = *g->AddConst(F32({1.5}, {}), "d");
  Node* k = Add(*g, "keep", "placeholder_with_default", {{d, 0}},
                {{"shape", Shape{}}});
  Session s(g, {.num_threads = 2});
  auto out = s.Run(Session::Feeds{}, {{k, 0}}, {});
  ASSERT_TRUE(out.ok());
  ExpectTensor((*out)[0], DType::kF32, {}, {1.5});
  out = s.Run(Session::Feeds{{{k, 0}, F32({0.5}, {})}}, {{k, 0}}, {});
  ASSERT_TRUE(out.ok());
  ExpectTensor((*out)[0], DType::kF32, {}, {0.5});
}

Node* Var(Graph& g, const std::string& name, Node* init) {
  return Add(g, name, "variable", {},
             {{"dtype", init->output_dtype(0)},
              {"shape", init->output_shape(0)},
              {"initializer", init->name() + ":0"}});
}

TEST(SessionTest, VariablesInitialiseOnceAndKeepState) {
  auto g = std::make_shared<Graph>();
  Node* init = *g->AddConst(F32({1, 2}, {2}), "w_init");
  Node* w = Var(*g, "w", init);
  Node* one = *g->AddConst(F32({1, 1}, {2}), "one");
  Node* bump = Add(*g, "bump", "assign_add", {{w, 0}, {one, 0}});
  Node* w2_init = Add(*g, "w2_init", "test_sum", {{w, 0}, {w, 0}});
  Node* w2 = Var(*g, "w2", w2_init);
  Session s(g, {.num_threads = 2});
  for (int i = 1; i <= 3; ++i) {
    auto out = s.Run(Session::Feeds{}, {{bump, 0}}, {});
    ASSERT_TRUE(out.ok()) << out.status();
    ExpectTensor((*out)[0], DType::kF32, {2}, {1.0 + i, 2.0 + i});
  }
  auto out = s.Run(Session::Feeds{}, {{w, 0}, {w2, 0}}, {});
  ASSERT_TRUE(out.ok()) << out.status();
  ExpectTensor((*out)[0], DType::kF32, {2}, {4, 5});
  // w2's initializer reads w's current value, once.
  ExpectTensor((*out)[1], DType::kF32, {2}, {8, 10});
  ASSERT_TRUE(s.Run(Session::Feeds{}, {{bump, 0}}, {}).ok());
  out = s.Run(Session::Feeds{}, {{w2, 0}}, {});
  ExpectTensor((*out)[0], DType::kF32, {2}, {8, 10});
}

TEST(SessionTest, ReadsAreSnapshots) {
  auto g = std::make_shared<Graph>();
  Node* init = *g->AddConst(F32({0}, {1}), "init");
  Node* w = Var(*g, "w", init);
  Node* one = *g->AddConst(F32({1}, {1}), "one");
  Node* bump = Add(*g, "bump", "assign_add", {{w, 0}, {one, 0}});
  Session s(g, {.num_threads = 2});
  auto before = s.Run(Session::Feeds{}, {{w, 0}}, {});
  ASSERT_TRUE(before.ok());
  ASSERT_TRUE(s.Run(Session::Feeds{}, {}, {bump}).ok());
  ExpectTensor((*before)[0], DType::kF32, {1}, {0});
}

TEST(SessionTest, VariableWithoutInitializerFails) {
  auto g = std::make_shared<Graph>();
  Node* w = Add(*g, "w", "variable", {},
                {{"dtype", DType::kF32}, {"shape", Shape{2}}});
  Session s(g, {.num_threads = 2});
  auto out = s.Run(Session::Feeds{}, {{w, 0}}, {});
  ASSERT_FALSE(out.ok());
  EXPECT_EQ(std::string(ToStd(out.status().message())),
            "variable 'w' has no initializer");
}

TEST(SessionTest, AssignChecksShape) {
  auto g = std::make_shared<Graph>();
  Node* init = *g->AddConst(F32({0, 0}, {2}), "init");
  Node* w = Var(*g, "w", init);
  Node* v3 = *g->AddConst(F32({1, 2, 3}, {3}), "v3");
  auto bad =
      g->AddNode({.name = "a", .op = "assign", .inputs = {{w, 0}, {v3, 0}}});
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(std::string(ToStd(bad.status().message())),
            "assign: cannot assign f32[3] to a variable of type f32[2]");
}

TEST(SessionTest, RunByName) {
  auto g = std::make_shared<Graph>();
  Node* x = Placeholder(*g, "x", {1});
  Add(*g, "y", "test_sum", {{x, 0}, {x, 0}});
  Session s(g, {.num_threads = 2});
  auto out = s.Run({{"x", F32({2}, {1})}}, {"y:0"}, {});
  ASSERT_TRUE(out.ok()) << out.status();
  ExpectTensor((*out)[0], DType::kF32, {1}, {4});
  EXPECT_FALSE(s.Run({}, {"nope"}, {}).ok());
}
}  // namespace
}  // namespace runnel
