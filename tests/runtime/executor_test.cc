// Executor and Session tests: scheduling, parallelism, pruning, feeds,
// caching, errors, variables. Uses test-only ops defined here so the tests
// depend on no particular math kernel.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <climits>
#include <condition_variable>
#include <mutex>
#include <thread>

#include "runtime/errors.h"
#include "runtime/kernel.h"
#include "runtime/session.h"
#include "runtime/shape_fns.h"
#include "tests/util/test_util.h"

namespace runnel {
namespace {

using ::runnel::testing::ExpectTensor;
using ::runnel::testing::F32;

// Counts kernels running at the same moment. Tests that assert overlap
// set g_wait_for: each test_wait kernel then waits (on a condition
// variable, not a sleep) until that many run at once, so the overlap is
// observed however slow the machine; a deadline far beyond any scheduling
// delay turns a missing overlap into a failure instead of a hang.
std::atomic<int> g_in_flight{0};
std::atomic<int> g_max_in_flight{0};
std::atomic<int> g_runs{0};
std::mutex g_mu;
std::condition_variable g_cv;
int g_wait_for = 1;          // guarded by g_mu
int g_started = 0;           // guarded by g_mu
int g_hold_after = INT_MAX;  // kernels started after this many wait ...
bool g_released = false;     // ... until this is set (guarded by g_mu)
constexpr auto kDeadline = std::chrono::seconds(60);

void ResetCounters(int wait_for = 1) {
  std::lock_guard<std::mutex> l(g_mu);
  g_in_flight = 0;
  g_max_in_flight = 0;
  g_runs = 0;
  g_wait_for = wait_for;
  g_started = 0;
  g_hold_after = INT_MAX;
  g_released = false;
}

// test_wait(x): returns x once g_wait_for kernels are in flight together
// (and, past g_hold_after, once released); records overlap.
class WaitKernel : public OpKernel {
 public:
  absl::Status Compute(OpKernelContext* ctx) override {
    {
      std::unique_lock<std::mutex> l(g_mu);
      const int now = ++g_in_flight;
      if (now > g_max_in_flight) g_max_in_flight = now;
      const bool hold = ++g_started > g_hold_after;
      g_cv.notify_all();
      g_cv.wait_for(l, kDeadline,
                    [] { return g_max_in_flight.load() >= g_wait_for; });
      if (hold) g_cv.wait_for(l, kDeadline, [] { return g_released; });
      --g_in_flight;
      ++g_runs;
      g_cv.notify_all();
    }
    return ctx->set_output(0, ctx->input(0));
  }
  bool IsExpensive() const override { return true; }
};

// test_sum(xs...): element-wise f32 sum of its inputs.
class SumKernel : public OpKernel {
 public:
  absl::Status Compute(OpKernelContext* ctx) override {
    RN_ASSIGN_OR_RETURN(Tensor * out,
                        ctx->allocate_output(0, ctx->input(0).shape()));
    for (int64_t i = 0; i < out->num_elements(); ++i) {
      float s = 0;
      for (int k = 0; k < ctx->num_inputs(); ++k)
        s += ctx->input(k).at<float>(i);
      out->data<float>()[i] = s;
    }
    ++g_runs;
    return absl::OkStatus();
  }
};

class FailKernel : public OpKernel {
 public:
  absl::Status Compute(OpKernelContext*) override {
    return absl::InvalidArgumentError("test_fail always fails");
  }
};

RUNNEL_REGISTER_OP(
    OpDefBuilder("test_wait").Inputs({"x"}).Shape(UnchangedShape));
RUNNEL_REGISTER_OP(
    OpDefBuilder("test_sum").Inputs({"xs"}).Variadic().Shape(UnchangedShape));
RUNNEL_REGISTER_OP(
    OpDefBuilder("test_fail").Inputs({"x"}).Shape(UnchangedShape));

RUNNEL_STATIC_INIT(ExecutorTestKernels) {
  RegisterKernel<WaitKernel>("test_wait", kDeviceCpu, DType::kF32);
  RegisterKernel<SumKernel>("test_sum", kDeviceCpu, DType::kF32);
  RegisterKernel<FailKernel>("test_fail", kDeviceCpu, DType::kF32);
}

Node* Add(Graph& g, const std::string& name, const std::string& op,
          std::vector<NodeOut> inputs, AttrMap attrs = {},
          SourceSpan span = {}) {
  NodeSpec spec{.name = name,
                .op = op,
                .inputs = std::move(inputs),
                .attrs = std::move(attrs),
                .span = span};
  absl::StatusOr<Node*> n = g.AddNode(std::move(spec));
  EXPECT_TRUE(n.ok()) << n.status();
  return n.ok() ? *n : nullptr;
}

Node* Placeholder(Graph& g, const std::string& name, Shape shape,
                  SourceSpan span = {}) {
  return Add(g, name, "placeholder", {},
             {{"dtype", DType::kF32}, {"shape", std::move(shape)}}, span);
}

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
  auto out = s.Run(Session::Feeds{}, {cur}, {}, &cancelled);
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

TEST(SessionTest, ShapeErrorAtNodeCreation) {
  Graph g;
  Node* a = *g.AddConst(F32({1, 2}, {2}), "a");
  Node* b = *g.AddConst(testing::I32({1, 2}, {2}), "b");
  auto n = g.AddNode({.name = "s",
                      .op = "test_sum",
                      .inputs = {{a, 0}, {b, 0}},
                      .span = {.file = "x.rnl", .line = 1, .col = 5}});
  // test_sum's shape function is UnchangedShape; assign checks dtypes:
  auto v = g.AddNode({.name = "v",
                      .op = "variable",
                      .attrs = {{"dtype", DType::kF32}, {"shape", Shape{-1}}},
                      .span = {.file = "x.rnl", .line = 2, .col = 1}});
  ASSERT_FALSE(v.ok());
  EXPECT_EQ(std::string(ToStd(v.status().message())),
            "variable: a variable needs a fully known shape, got [?]");
  EXPECT_EQ(SpanOf(v.status())->ToString(), "x.rnl:2:1");
  EXPECT_FALSE(
      g.AddNode({.name = "a", .op = "identity", .inputs = {{a, 0}}}).ok())
      << "duplicate names are rejected";
  EXPECT_FALSE(g.AddNode({.name = "z", .op = "no_such_op"}).ok());
  (void)n;
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
