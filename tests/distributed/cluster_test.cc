// The cluster runtime over loopback gRPC (docs/cluster.md): cluster specs,
// variables spread over parameter servers and shared by name between
// workers, the chief's initialization, tokens, dead tasks, f16 transfers
// and errors raised on another task. Every task runs in this process.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <future>
#include <memory>
#include <mutex>
#include <numeric>
#include <string>
#include <thread>
#include <vector>

#include "base/errors.h"
#include "common_runtime/session.h"
#include "distributed/cluster_spec.h"
#include "distributed/grpc_cluster.h"
#include "distributed/grpc_server.h"
#include "distributed/tensor_coding.h"
#include "distributed/worker.pb.h"
#include "framework/graph_def.h"
#include "tests/util/test_ops.h"
#include "tests/util/test_util.h"

namespace runnel {
namespace {

using ::runnel::testing::Add;
using ::runnel::testing::ExpectTensor;
using ::runnel::testing::F32;
using ::runnel::testing::Placeholder;

using ::runnel::testing::Message;

// ---- cluster specs

TEST(ClusterSpecTest, ParsesJobsAndTasks) {
  absl::StatusOr<ClusterSpec> spec = ClusterSpec::Parse(
      R"({"ps": ["127.0.0.1:2222"], "worker": ["127.0.0.1:2223", "host:7"]})",
      "c.json");
  ASSERT_TRUE(spec.ok()) << spec.status();
  EXPECT_EQ(spec->num_tasks("ps"), 1);
  EXPECT_EQ(spec->num_tasks("worker"), 2);
  EXPECT_EQ(spec->TaskNames(),
            (std::vector<std::string>{"/job:ps/task:0", "/job:worker/task:0",
                                      "/job:worker/task:1"}));
  EXPECT_EQ(*spec->AddressOf("/job:worker/task:1"), "host:7");
  EXPECT_FALSE(spec->AllLoopback());
  EXPECT_EQ(Message(spec->Address("worker", 2).status()),
            "the cluster spec's job 'worker' has no task 2 (it has 2)");
  absl::StatusOr<ClusterSpec> again = ClusterSpec::Parse(spec->ToJson(), "x");
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(again->jobs(), spec->jobs());
}

TEST(ClusterSpecTest, ErrorsNameTheFileAndTheField) {
  auto error = [](const std::string& text) {
    return Message(ClusterSpec::Parse(text, "c.json").status());
  };
  EXPECT_EQ(error(R"({"ps": "127.0.0.1:1"})"),
            "c.json: \"ps\": needs a list of \"host:port\" addresses");
  EXPECT_EQ(error(R"({"worker": ["127.0.0.1:1", 5]})"),
            "c.json: \"worker\"[1]: needs a \"host:port\" string");
  EXPECT_EQ(error(R"({"worker": ["nohost"]})"),
            "c.json: \"worker\"[0]: 'nohost' needs \"host:port\"");
  EXPECT_EQ(error(R"({"worker": ["a:70000"]})"),
            "c.json: \"worker\"[0]: 'a:70000' has no valid port (1 to 65535) "
            "after ':'");
  EXPECT_EQ(error(R"({"worker": []})"), "c.json: \"worker\": has no tasks");
  EXPECT_EQ(error("{}"), "c.json: names no jobs");
  EXPECT_EQ(error("[1, 2]").rfind("c.json: not a JSON object of jobs: ", 0),
            0u);
  EXPECT_EQ(Message(ClusterSpec::Load("/nonexistent/c.json").status()),
            "/nonexistent/c.json: cannot open: No such file or directory");
}

TEST(ClusterSpecTest, ReplicatedTasksListTheirReplicas) {
  absl::StatusOr<ClusterSpec> spec = ClusterSpec::Parse(
      R"({"ps": [["127.0.0.1:1", "127.0.0.1:2"], "127.0.0.1:3"],
          "worker": ["127.0.0.1:4"]})",
      "c.json");
  ASSERT_TRUE(spec.ok()) << spec.status();
  EXPECT_EQ(spec->num_tasks("ps"), 2);
  EXPECT_TRUE(spec->is_replicated("/job:ps/task:0"));
  EXPECT_FALSE(spec->is_replicated("/job:ps/task:1"));
  EXPECT_TRUE(spec->has_replicas());
  EXPECT_EQ(*spec->Replicas("/job:ps/task:0"),
            (std::vector<std::string>{"127.0.0.1:1", "127.0.0.1:2"}));
  EXPECT_EQ(*spec->Replicas("/job:ps/task:1"),
            (std::vector<std::string>{"127.0.0.1:3"}));
  EXPECT_EQ(*spec->AddressOf("/job:ps/task:0"), "127.0.0.1:1");
  absl::StatusOr<ClusterSpec> again = ClusterSpec::Parse(spec->ToJson(), "x");
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(again->ToJson(), spec->ToJson());
  EXPECT_TRUE(again->is_replicated("/job:ps/task:0"));
  EXPECT_EQ(
      Message(ClusterSpec::Parse(R"({"ps": [["127.0.0.1:1", 5]]})", "c.json")
                  .status()),
      "c.json: \"ps\"[0][1]: needs a \"host:port\" string");
  // A replica beyond this machine asks for a token like any other task.
  EXPECT_FALSE(ClusterSpec::Parse(R"({"ps": [["127.0.0.1:1", "h:2"]]})", "c")
                   ->AllLoopback());
  const ClusterSpec loopback =
      ClusterSpec::Loopback(2, 1, {11, 12, 13, 14, 15}, 2);
  EXPECT_EQ(
      loopback.ToJson(),
      R"({"ps": [["127.0.0.1:11", "127.0.0.1:13"], )"
      R"(["127.0.0.1:12", "127.0.0.1:14"]], "worker": ["127.0.0.1:15"]})");
}

// ---- a cluster in this process

struct LocalCluster {
  ClusterSpec spec;
  std::vector<std::unique_ptr<TaskServer>> ps;

  LocalCluster(int num_ps, int num_workers, GrpcOptions options = {}) {
    spec = ClusterSpec::Loopback(num_ps, num_workers,
                                 FreeLoopbackPorts(num_ps + num_workers));
    for (int i = 0; i < num_ps; ++i) {
      auto server = TaskServer::Start(spec, "ps", i, 2, options);
      EXPECT_TRUE(server.ok()) << server.status();
      ps.push_back(server.ok() ? std::move(*server) : nullptr);
    }
  }

  std::shared_ptr<GrpcCluster> Worker(int i, GrpcOptions options = {}) {
    auto c = GrpcCluster::Start(spec, "worker", i, options);
    EXPECT_TRUE(c.ok()) << c.status();
    return c.ok() ? *c : nullptr;
  }
};

// What every worker builds: w [2] and b [1] on the ps tasks (round-robin),
// w's value read on the worker, and updates of both.
struct Model {
  std::shared_ptr<Graph> g = std::make_shared<Graph>();
  Node *w, *b, *bump, *set, *x, *y;

  Model() {
    const std::string ps = "/job:ps/task:*";
    Node* w_init = *g->AddConst(F32({1, 2}, {2}), "w_init");
    Node* b_init = *g->AddConst(F32({10}, {1}), "b_init");
    auto var = [&](const std::string& name, Node* init) {
      return *g->AddNode({.name = name,
                          .op = "variable",
                          .attrs = {{"dtype", DType::kF32},
                                    {"shape", init->output_shape(0)},
                                    {"initializer", init->name() + ":0"}},
                          .device = ps});
    };
    w = var("w", w_init);
    b = var("b", b_init);
    Node* one = *g->AddConst(F32({1, 1}, {2}), "one");
    bump = Add(*g, "bump", "assign_add", {{w, 0}, {one, 0}});
    x = Placeholder(*g, "x", Shape{-1}, SourceSpan{"m.rnl", 7, 3, 7, 9});
    set = Add(*g, "set", "assign", {{w, 0}, {x, 0}}, {},
              SourceSpan{"m.rnl", 8, 1, 8, 12});
    Node* read = Add(*g, "read", "read_variable", {{w, 0}});
    y = Add(*g, "y", "mul", {{read, 0}, {read, 0}});
  }
};

TEST(ClusterTest, VariablesSpreadOverPsTasksAndAreSharedByName) {
  LocalCluster cluster(2, 2);
  Model m0, m1;
  Session chief(m0.g, {.num_threads = 2, .cluster = cluster.Worker(0)});
  Session other(m1.g, {.num_threads = 2, .cluster = cluster.Worker(1)});
  for (int i = 0; i < 3; ++i) {
    auto out = chief.Run(Session::Feeds{}, {{m0.bump, 0}, {m0.b, 0}}, {});
    ASSERT_TRUE(out.ok()) << out.status();
  }
  // The other worker sees the chief's updates, and updates the same state.
  auto out = other.Run(Session::Feeds{}, {{m1.y, 0}, {m1.b, 0}}, {m1.bump});
  ASSERT_TRUE(out.ok()) << out.status();
  ExpectTensor((*out)[1], DType::kF32, {1}, {10});
  out = chief.Run(Session::Feeds{}, {{m0.w, 0}}, {});
  ASSERT_TRUE(out.ok()) << out.status();
  ExpectTensor((*out)[0], DType::kF32, {2}, {5, 6});
  // w went to the first ps task and b to the second; the worker computed y.
  EXPECT_TRUE(cluster.ps[0]->worker().ReadVariables({"w"}).ok());
  EXPECT_FALSE(cluster.ps[1]->worker().ReadVariables({"w"}).ok());
  EXPECT_TRUE(cluster.ps[1]->worker().ReadVariables({"b"}).ok());
  auto placed = chief.PlacedGraph(Session::Feeds{}, {{m0.y, 0}}, {});
  ASSERT_TRUE(placed.ok());
  for (const Node* n : (*placed)->nodes()) {
    if (n->name() == "w" || n->name() == "read") {
      EXPECT_EQ(n->assigned_device(), "/job:ps/task:0/device:cpu:0");
    }
    if (n->name() == "y") {
      EXPECT_EQ(n->assigned_device(), "/job:worker/task:0/device:cpu:0");
    }
  }
}

// ps:0 replicated (docs/cluster.md, "Replicated parameter servers"): the
// first worker's contact makes replica 0 the primary; every update is on
// both replicas before its run returns, so when the primary goes the
// worker's next run finds the backup, promotes it, and goes on from the
// same state. The replica that went comes back as a backup.
TEST(ClusterTest, AReplicatedPsFailsOverToItsBackupWithNothingLost) {
  const ClusterSpec spec =
      ClusterSpec::Loopback(1, 1, FreeLoopbackPorts(3), /*ps_replicas=*/2);
  auto replica = [&](int r) {
    auto server = TaskServer::Start(spec, "ps", 0, 2, {}, r);
    EXPECT_TRUE(server.ok()) << server.status();
    return server.ok() ? std::move(*server) : nullptr;
  };
  std::unique_ptr<TaskServer> r0 = replica(0), r1 = replica(1);
  Model m;
  auto worker = GrpcCluster::Start(spec, "worker", 0, {});
  ASSERT_TRUE(worker.ok()) << worker.status();
  Session s(m.g, {.num_threads = 2, .cluster = *worker});
  for (int i = 0; i < 3; ++i) {
    auto out = s.Run(Session::Feeds{}, {}, {m.bump});
    ASSERT_TRUE(out.ok()) << out.status();
  }
  EXPECT_TRUE(r0->worker().ReadVariables({"w"}).ok());
  EXPECT_EQ(r1->worker().ReadVariables({"w"}).status().code(),
            absl::StatusCode::kUnavailable)
      << "a backup serves nothing";
  r0->Shutdown();
  r0.reset();
  r0 = replica(0);  // restarted: a backup without state
  for (int i = 0; i < 2; ++i) {
    auto out = s.Run(Session::Feeds{}, {}, {m.bump});
    ASSERT_TRUE(out.ok()) << out.status();
  }
  auto out = s.Run(Session::Feeds{}, {{m.w, 0}, {m.b, 0}}, {});
  ASSERT_TRUE(out.ok()) << out.status();
  ExpectTensor((*out)[0], DType::kF32, {2}, {6, 7});
  ExpectTensor((*out)[1], DType::kF32, {1}, {10});
  EXPECT_TRUE(r1->worker().ReadVariables({"w"}).ok()) << "the new primary";
  EXPECT_FALSE(r0->worker().ReadVariables({"w"}).ok());
}

TEST(ClusterTest, OtherWorkersWaitForTheChiefToInitialize) {
  LocalCluster cluster(1, 2);
  Model m0, m1;
  Session chief(m0.g, {.num_threads = 2, .cluster = cluster.Worker(0)});
  Session other(m1.g, {.num_threads = 2, .cluster = cluster.Worker(1)});
  absl::StatusOr<std::vector<Tensor>> seen;
  // Whether it asks before or after the chief, it gets the chief's value,
  // never an initialization of its own.
  std::thread waiter([&] {
    seen = other.Run(Session::Feeds{}, {{m1.w, 0}}, {});
  });
  ASSERT_TRUE(cluster.ps[0]
                  ->worker()
                  .SetVariables({"w"}, {F32({7, 8}, {2})}, false)
                  .ok());
  waiter.join();
  ASSERT_TRUE(seen.ok()) << seen.status();
  ExpectTensor((*seen)[0], DType::kF32, {2}, {7, 8});
  auto out = chief.Run(Session::Feeds{}, {{m0.w, 0}, {m0.b, 0}}, {});
  ASSERT_TRUE(out.ok()) << out.status();
  ExpectTensor((*out)[0], DType::kF32, {2}, {7, 8});  // kept, not re-set
  ExpectTensor((*out)[1], DType::kF32, {1}, {10});    // set by the chief
}

TEST(ClusterTest, ARemoteErrorNamesItsNodeAndLine) {
  LocalCluster cluster(1, 1);
  Model m;
  Session s(m.g, {.num_threads = 2, .cluster = cluster.Worker(0)});
  auto out = s.Run({{{m.x, 0}, F32({1, 2, 3}, {3})}}, {{m.set, 0}}, {});
  ASSERT_FALSE(out.ok());
  EXPECT_EQ(NodeNameOf(out.status()), "set");
  ASSERT_TRUE(SpanOf(out.status()).has_value());
  EXPECT_EQ(SpanOf(out.status())->ToString(), "m.rnl:8:1");
  // The step's failure left nothing behind: the next runs work.
  out = s.Run({{{m.x, 0}, F32({3, 4}, {2})}}, {{m.y, 0}}, {m.set});
  ASSERT_TRUE(out.ok()) << out.status();
}

TEST(ClusterTest, RequestsWithoutTheTokenAreRefused) {
  LocalCluster cluster(1, 1, {.token = "s3cret"});
  Model m;
  Session none(m.g, {.num_threads = 2, .cluster = cluster.Worker(0)});
  auto out = none.Run(Session::Feeds{}, {{m.y, 0}}, {});
  ASSERT_FALSE(out.ok());
  EXPECT_EQ(out.status().code(), absl::StatusCode::kUnauthenticated);
  EXPECT_NE(Message(out.status()).find("/job:ps/task:0 refused the request"),
            std::string::npos)
      << out.status();
}

TEST(ClusterTest, TheRightTokenIsAccepted) {
  LocalCluster cluster(1, 1, {.token = "s3cret"});
  Model m;
  Session s(m.g, {.num_threads = 2,
                  .cluster = cluster.Worker(0, {.token = "s3cret"})});
  auto out = s.Run(Session::Feeds{}, {{m.y, 0}}, {});
  ASSERT_TRUE(out.ok()) << out.status();
  ExpectTensor((*out)[0], DType::kF32, {2}, {1, 4});
}

TEST(ClusterTest, ADeadTaskIsUnreachableNotAHang) {
  LocalCluster cluster(1, 1);
  Model m;
  Session s(m.g, {.num_threads = 2, .cluster = cluster.Worker(0)});
  ASSERT_TRUE(s.Run(Session::Feeds{}, {{m.y, 0}}, {}).ok());
  cluster.ps[0].reset();  // the parameter server goes away
  auto out = s.Run(Session::Feeds{}, {{m.y, 0}}, {});
  ASSERT_FALSE(out.ok());
  EXPECT_EQ(out.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_EQ(Message(out.status()).rfind("/job:ps/task:0 unreachable (", 0), 0u)
      << out.status();
}

TEST(ClusterTest, F16TransfersHalveTheBytes) {
  LocalCluster cluster(1, 2);
  auto model = [] {
    auto g = std::make_shared<Graph>();
    EXPECT_TRUE(g->AddConst(Tensor::FromVector(std::vector<float>(4096, 0.5f),
                                               Shape{4096}),
                            "big_init")
                    .ok());
    Node* big = *g->AddNode({.name = "big",
                             .op = "variable",
                             .attrs = {{"dtype", DType::kF32},
                                       {"shape", Shape{4096}},
                                       {"initializer", "big_init:0"}},
                             .device = "/job:ps/task:0"});
    Node* read = Add(*g, "read", "read_variable", {{big, 0}});
    Node* y = Add(*g, "y", "mul", {{read, 0}, {read, 0}});
    return std::make_pair(g, y);
  };
  auto [g32, y32] = model();
  auto [g16, y16] = model();
  Session s32(g32, {.num_threads = 2, .cluster = cluster.Worker(0)});
  Session s16(
      g16,
      {.num_threads = 2, .f16_transfers = true, .cluster = cluster.Worker(1)});
  ASSERT_TRUE(s32.Run(Session::Feeds{}, {{y32, 0}}, {}).ok());  // initialize
  Worker& ps = cluster.ps[0]->worker();
  int64_t before = ps.bytes_sent();
  auto out = s32.Run(Session::Feeds{}, {{y32, 0}}, {});
  ASSERT_TRUE(out.ok()) << out.status();
  const int64_t f32_bytes = ps.bytes_sent() - before;
  before = ps.bytes_sent();
  out = s16.Run(Session::Feeds{}, {{y16, 0}}, {});
  ASSERT_TRUE(out.ok()) << out.status();
  const int64_t f16_bytes = ps.bytes_sent() - before;
  EXPECT_EQ(f32_bytes, 4096 * 4);
  EXPECT_EQ(f16_bytes * 2, f32_bytes);
  ExpectTensor((*out)[0], DType::kF32, {4096}, std::vector<double>(4096, 0.25),
               0);
}

// ---- consistent snapshots (GrpcCluster::ReadConsistently)

// a on ps:0 and b on ps:1, both 0; `step` adds 1 to each, so in any
// snapshot that holds whole steps a == b.
// A variable `name` on `device` with a constant initial value.
Node* VarOn(Graph& g, const std::string& name, const Tensor& value,
            const std::string& device) {
  EXPECT_TRUE(g.AddConst(value, name + "_init").ok());
  return *g.AddNode({.name = name,
                     .op = "variable",
                     .attrs = {{"dtype", DType::kF32},
                               {"shape", value.shape()},
                               {"initializer", name + "_init:0"}},
                     .device = device});
}

// The last step a ps ran a partition of (from its log), and whether that
// step is over there (a freeze lists the steps still open).
class LastStep {
 public:
  explicit LastStep(Worker& ps) : ps_(ps) {
    ps.set_log([this](const std::string& line) {
      std::lock_guard<std::mutex> lock(mu_);
      last_ = std::stoll(line.substr(5));  // "step N: ..."
    });
  }
  void ExpectEnded(int64_t freeze_id) {
    const std::vector<int64_t> open = ps_.Freeze(freeze_id, 30);
    EXPECT_TRUE(ps_.Unfreeze(freeze_id));
    std::lock_guard<std::mutex> lock(mu_);
    EXPECT_EQ(std::count(open.begin(), open.end(), last_), 0)
        << "step " << last_ << " is still open on the ps";
  }

 private:
  Worker& ps_;
  std::mutex mu_;
  int64_t last_ = 0;
};

// A step whose only remote part, on one ps, receives nothing gets that
// part's values with the answer to its run (worker.proto: return_to): one
// round trip, and the step ends there with the run (no CleanupStep); a
// value over Worker::kReturnedBytes is fetched, as before, and arrives
// exact.
TEST(ClusterTest, AStepOnOnePsGetsItsValuesWithTheAnswer) {
  LocalCluster cluster(1, 1);
  auto g = std::make_shared<Graph>();
  const int64_t n = Worker::kReturnedBytes / 4 + 1;
  std::vector<float> big_values(n);
  std::iota(big_values.begin(), big_values.end(), 0.0f);
  auto var = [&](const std::string& name, const Tensor& value) {
    Node* v = VarOn(*g, name, value, "/job:ps/task:0");
    Node* read = Add(*g, name + "_read", "read_variable", {{v, 0}});
    return Add(*g, name + "_sq", "mul", {{read, 0}, {read, 0}});
  };
  Node* small = var("small", F32({1, 2, 3}, {3}));
  Node* big = var("big", Tensor::FromVector(big_values));
  Session s(g, {.num_threads = 2, .cluster = cluster.Worker(0)});
  LastStep last(cluster.ps[0]->worker());
  for (int i = 0; i < 3; ++i) {
    auto out = s.Run(Session::Feeds{}, {{small, 0}}, {});
    ASSERT_TRUE(out.ok()) << out.status();
    ExpectTensor((*out)[0], DType::kF32, {3}, {1, 4, 9});
    // The step is over on the ps by the time the run returns.
    last.ExpectEnded(/*freeze_id=*/500 + i);
  }
  auto out = s.Run(Session::Feeds{}, {{big, 0}, {small, 0}}, {});
  ASSERT_TRUE(out.ok()) << out.status();
  std::vector<double> squares(n);
  for (int64_t i = 0; i < n; ++i) squares[i] = double(i) * double(i);
  ExpectTensor((*out)[0], DType::kF32, {n}, squares);
  ExpectTensor((*out)[1], DType::kF32, {3}, {1, 4, 9});
}

// A step's values that cross between the worker and its one ps, each
// way, come in one call (RecvTensors: the worker's reads of two ps
// variables, and the ps's two increments computed on the worker), and the
// step ends on the ps with its run; the values are the separate calls'.
// A failure on the worker while the ps waits for that call fails the step
// with the worker's error, and the next step runs; a ps that is gone is
// Unavailable, not a hang.
TEST(ClusterTest, AStepsValuesFromOneTaskComeInOneCall) {
  LocalCluster cluster(1, 1);
  auto g = std::make_shared<Graph>();
  const std::string ps = "/job:ps/task:0";
  const std::string here = "/job:worker/task:0";
  Node* a = VarOn(*g, "a", F32({1, 2}, {2}), ps);
  Node* b = VarOn(*g, "b", F32({3, 4}, {2}), ps);
  auto on = [&](const std::string& name, const std::string& op,
                std::vector<NodeOut> inputs, const std::string& device) {
    return *g->AddNode({.name = name,
                        .op = op,
                        .inputs = std::move(inputs),
                        .device = device});
  };
  Node* ra = on("ra", "read_variable", {{a, 0}}, ps);
  Node* rb = on("rb", "read_variable", {{b, 0}}, ps);
  Node* da = on("da", "mul", {{ra, 0}, {ra, 0}}, here);
  Node* x = Placeholder(*g, "x", Shape{-1}, SourceSpan{"t.rnl", 4, 2, 4, 3});
  Node* db = on("db", "add", {{rb, 0}, {x, 0}}, here);
  Node* up_a = on("up_a", "assign_add", {{a, 0}, {da, 0}}, ps);
  Node* up_b = on("up_b", "assign_add", {{b, 0}, {db, 0}}, ps);
  Session s(g, {.num_threads = 2, .cluster = cluster.Worker(0)});
  Worker& ps_worker = cluster.ps[0]->worker();
  LastStep last(ps_worker);
  std::vector<double> va = {1, 2}, vb = {3, 4};
  for (int i = 0; i < 3; ++i) {
    const int64_t calls = ps_worker.recv_calls();
    auto out = s.Run({{{x, 0}, F32({1, float(i)}, {2})}}, {{da, 0}, {db, 0}},
                     {up_a, up_b});
    ASSERT_TRUE(out.ok()) << out.status();
    std::vector<double> want_da(2), want_db(2);
    for (int k = 0; k < 2; ++k) {
      want_da[k] = va[k] * va[k];
      want_db[k] = vb[k] + (k == 0 ? 1 : i);
      va[k] += want_da[k];
      vb[k] += want_db[k];
    }
    ExpectTensor((*out)[0], DType::kF32, {2}, want_da);
    ExpectTensor((*out)[1], DType::kF32, {2}, want_db);
    // The worker asked the ps once for both reads (and the ps, in its
    // turn, the worker once for both increments).
    EXPECT_EQ(ps_worker.recv_calls() - calls, 1) << "step " << i;
    // With a receive on the ps too, the step still ends with its run.
    last.ExpectEnded(700 + i);
  }
  auto out = s.Run(Session::Feeds{}, {{ra, 0}, {rb, 0}}, {});
  ASSERT_TRUE(out.ok()) << out.status();
  ExpectTensor((*out)[0], DType::kF32, {2}, va);
  ExpectTensor((*out)[1], DType::kF32, {2}, vb);
  // db fails (a [2] and a [3]) while the ps waits for it.
  out =
      s.Run({{{x, 0}, F32({1, 2, 3}, {3})}}, {{da, 0}, {db, 0}}, {up_a, up_b});
  ASSERT_FALSE(out.ok());
  EXPECT_EQ(NodeNameOf(out.status()), "db") << out.status();
  out = s.Run({{{x, 0}, F32({1, 1}, {2})}}, {{db, 0}}, {up_a, up_b});
  ASSERT_TRUE(out.ok()) << out.status();
  cluster.ps[0].reset();  // the parameter server goes away
  out = s.Run({{{x, 0}, F32({1, 1}, {2})}}, {{da, 0}, {db, 0}}, {up_a, up_b});
  ASSERT_FALSE(out.ok());
  EXPECT_EQ(out.status().code(), absl::StatusCode::kUnavailable)
      << out.status();
}

struct TwoCounters {
  std::shared_ptr<Graph> g = std::make_shared<Graph>();
  Node *a, *b, *step;

  TwoCounters() {
    EXPECT_TRUE(g->AddConst(F32({0}, {}), "zero").ok());
    Node* one = *g->AddConst(F32({1}, {}), "one");
    auto var = [&](const std::string& name, const std::string& device) {
      return *g->AddNode({.name = name,
                          .op = "variable",
                          .attrs = {{"dtype", DType::kF32},
                                    {"shape", Shape{}},
                                    {"initializer", std::string("zero:0")}},
                          .device = device});
    };
    a = var("a", "/job:ps/task:0");
    b = var("b", "/job:ps/task:1");
    Node* bump_a = Add(*g, "bump_a", "assign_add", {{a, 0}, {one, 0}});
    Node* bump_b = Add(*g, "bump_b", "assign_add", {{b, 0}, {one, 0}});
    step = *g->AddNode(
        {.name = "step", .op = "noop", .control_inputs = {bump_a, bump_b}});
  }
};

TEST(ClusterTest, SnapshotsUnderAsynchronousTrainingHoldWholeSteps) {
  LocalCluster cluster(2, 2);
  std::shared_ptr<GrpcCluster> chief = cluster.Worker(0);
  TwoCounters m0, m1, reader;
  Session s0(m0.g, {.num_threads = 2, .cluster = chief});
  Session s1(m1.g, {.num_threads = 2, .cluster = cluster.Worker(1)});
  Session snapshots(reader.g, {.num_threads = 2, .cluster = chief});
  ASSERT_TRUE(s0.Run(Session::Feeds{}, {}, {m0.step}).ok());  // initialize
  constexpr int kSteps = 300;
  std::atomic<int> running{2};
  auto train = [&](Session& s, Node* step) {
    for (int i = 0; i < kSteps; ++i) {
      absl::StatusOr<std::vector<Tensor>> out =
          s.Run(Session::Feeds{}, {}, {step});
      EXPECT_TRUE(out.ok()) << out.status();
    }
    --running;
  };
  std::thread w0(train, std::ref(s0), m0.step);
  std::thread w1(train, std::ref(s1), m1.step);
  int taken = 0;
  std::vector<std::pair<float, float>> mixed;
  while (running > 0 || taken == 0) {
    absl::StatusOr<std::vector<Tensor>> values;
    absl::Status s = chief->ReadConsistently([&](int64_t snapshot) {
      values = snapshots.Run(Session::Feeds{}, {{reader.a, 0}, {reader.b, 0}},
                             {}, {.snapshot = snapshot});
      return values.status();
    });
    ASSERT_TRUE(s.ok()) << s;
    const float a = (*values)[0].data<float>()[0];
    const float b = (*values)[1].data<float>()[0];
    if (a != b) mixed.push_back({a, b});
    ++taken;
  }
  w0.join();
  w1.join();
  EXPECT_EQ(chief->unfrozen_reads(), 0);
  EXPECT_TRUE(mixed.empty())
      << mixed.size() << " of " << taken
      << " snapshots mixed steps, first a = " << mixed[0].first
      << ", b = " << mixed[0].second;
  auto last =
      snapshots.Run(Session::Feeds{}, {{reader.a, 0}, {reader.b, 0}}, {});
  ASSERT_TRUE(last.ok());
  ExpectTensor((*last)[0], DType::kF32, {}, {2 * kSteps + 1});
  ExpectTensor((*last)[1], DType::kF32, {}, {2 * kSteps + 1});
}

TEST(ClusterTest, AFreezeWhoseChiefIsGoneLapses) {
  LocalCluster cluster(2, 1);
  TwoCounters m;
  Session s(m.g, {.num_threads = 2, .cluster = cluster.Worker(0)});
  ASSERT_TRUE(s.Run(Session::Feeds{}, {}, {m.step}).ok());
  // A chief froze ps:0 for 0.3 s and died: the next step is held, then
  // goes through; a late unfreeze hears that the freeze did not hold.
  Worker& ps0 = cluster.ps[0]->worker();
  ps0.Freeze(77, 0.3);
  ASSERT_TRUE(s.Run(Session::Feeds{}, {}, {m.step}).ok());
  EXPECT_FALSE(ps0.Unfreeze(77));
  EXPECT_EQ(ps0.Admit(77, {1}, 1).code(),
            absl::StatusCode::kFailedPrecondition);
  // A step in flight that never ends (its master waits for a step the
  // freeze holds) makes the snapshot fall back to an unfrozen read after
  // the drain time instead of hanging, and leaves nothing frozen.
  Graph g;
  Node* c = *g.AddConst(F32({1}, {}), "c");
  c->set_assigned_device("/job:ps/task:0/device:cpu:0");
  absl::StatusOr<std::string> handle = ps0.RegisterGraph(ToGraphDef(g));
  ASSERT_TRUE(handle.ok()) << handle.status();
  ASSERT_TRUE(ps0.RunGraph(*handle, 123, 0).ok());  // open: never ended
  std::shared_ptr<GrpcCluster> chief = cluster.Worker(0);
  TwoCounters reader;
  Session snapshot(reader.g, {.num_threads = 2, .cluster = chief});
  absl::StatusOr<std::vector<Tensor>> values;
  absl::Status read = chief->ReadConsistently(
      [&](int64_t id) {
        values = snapshot.Run(Session::Feeds{}, {{reader.a, 0}, {reader.b, 0}},
                              {}, {.snapshot = id});
        return values.status();
      },
      /*drain_s=*/0.3);
  ASSERT_TRUE(read.ok()) << read;
  EXPECT_EQ(chief->unfrozen_reads(), 1);
  ExpectTensor((*values)[0], DType::kF32, {}, {2});
  ASSERT_TRUE(s.Run(Session::Feeds{}, {}, {m.step}).ok());
  EXPECT_FALSE(ps0.Unfreeze(0));
  ps0.EndStep(123);
}

// ---- tensors on the wire (distributed/tensor_coding.h)

struct Received {
  absl::Status status;
  Tensor value;
  bool dead = false;
};

// What `worker` receives of `key`, sent by the ps in the test's step.
Received Fetch(GrpcCluster& worker, const std::string& key, int64_t step) {
  std::promise<Received> got;
  Received now;
  const bool here = worker.StepRendezvous(step)->Recv(
      key,
      [&got](const absl::Status& s, const Tensor& v, bool dead) {
        got.set_value({s, v, dead});
      },
      &now.status, &now.value, &now.dead);
  return here ? now : got.get_future().get();
}

// The key of `edge` sent by the ps to the worker outside loops in `step`.
std::string PsKey(const std::string& edge, int64_t step) {
  return RendezvousKey("/job:ps/task:0/device:cpu:0",
                       "/job:worker/task:0/device:cpu:0", edge, 0, 0, step);
}

// 40 MB, five 8 MiB messages: every element distinct.
Tensor LargeInts() {
  std::vector<int32_t> values(10 << 20);
  std::iota(values.begin(), values.end(), -7);
  return Tensor::FromVector<int32_t>(values, Shape{10 << 10, 1024});
}

TEST(ClusterTest, LargeDeadAndEmptyTensorsArriveExact) {
  LocalCluster cluster(1, 1);
  std::shared_ptr<GrpcCluster> worker = cluster.Worker(0);
  Worker& ps = cluster.ps[0]->worker();
  constexpr int64_t kStep = 41;
  auto key = [](const std::string& edge) { return PsKey(edge, kStep); };
  const Tensor large = LargeInts();
  const Tensor empty(DType::kF32, Shape{3, 0});
  const Tensor scalar = Tensor::FromVector<double>({2.5}, Shape{});
  std::shared_ptr<StepRendezvous> r = ps.Step(kStep);
  ASSERT_TRUE(r->Send(key("large:0"), large, false).ok());
  ASSERT_TRUE(r->Send(key("dead:0"), Tensor(), true).ok());
  ASSERT_TRUE(r->Send(key("empty:0"), empty, false).ok());
  const int64_t before = ps.bytes_sent();
  Received got = Fetch(*worker, key("large:0"), kStep);
  ASSERT_TRUE(got.status.ok()) << got.status;
  EXPECT_FALSE(got.dead);
  EXPECT_EQ(got.value.dtype(), DType::kI32);
  EXPECT_EQ(got.value.shape(), (Shape{10 << 10, 1024}));
  ASSERT_EQ(got.value.bytes(), large.bytes());
  EXPECT_EQ(std::memcmp(got.value.raw_data(), large.raw_data(), large.bytes()),
            0);
  EXPECT_EQ(ps.bytes_sent() - before, 40 << 20);
  got = Fetch(*worker, key("dead:0"), kStep);
  ASSERT_TRUE(got.status.ok()) << got.status;
  EXPECT_TRUE(got.dead);
  got = Fetch(*worker, key("empty:0"), kStep);
  ASSERT_TRUE(got.status.ok()) << got.status;
  EXPECT_FALSE(got.dead);
  EXPECT_EQ(got.value.dtype(), DType::kF32);
  EXPECT_EQ(got.value.shape(), (Shape{3, 0}));
  // A value sent after the receiver asked arrives too: the send waits
  // until the receive is pending on the ps.
  std::thread late([&] {
    const auto give_up =
        std::chrono::steady_clock::now() + std::chrono::seconds(30);
    while (!r->HasWaiter(key("scalar:0")) &&
           std::chrono::steady_clock::now() < give_up) {
      std::this_thread::yield();
    }
    EXPECT_TRUE(r->HasWaiter(key("scalar:0")));
    EXPECT_TRUE(r->Send(key("scalar:0"), scalar, false).ok());
  });
  got = Fetch(*worker, key("scalar:0"), kStep);
  late.join();
  ASSERT_TRUE(got.status.ok()) << got.status;
  ExpectTensor(got.value, DType::kF64, {}, {2.5});
  // A step aborted on the sender fails the receive with the sender's error.
  ps.AbortStep(kStep, absl::InternalError("the ps step failed"));
  got = Fetch(*worker, key("never:0"), kStep);
  EXPECT_EQ(got.status, absl::InternalError("the ps step failed"));
}

// The same values asked for in one RecvTensors call (Prefetch), sent after
// the call and in another order than asked: the large one's five messages
// together, each value exact; then a call whose step fails on the sender
// fails its receivers with the sender's error.
TEST(ClusterTest, LargeDeadAndEmptyTensorsArriveExactInOneCall) {
  LocalCluster cluster(1, 1);
  std::shared_ptr<GrpcCluster> worker = cluster.Worker(0);
  Worker& ps = cluster.ps[0]->worker();
  constexpr int64_t kStep = 43;
  auto key = [](const std::string& edge, int64_t step) {
    return PsKey(edge, step);
  };
  const Tensor large = LargeInts();
  // (Counted before the call goes out: the ps may count it at once.)
  const int64_t calls = ps.recv_calls();
  worker->StepRendezvous(kStep)->Prefetch(
      {key("empty:0", kStep), key("large:0", kStep), key("dead:0", kStep)});
  std::shared_ptr<StepRendezvous> r = ps.Step(kStep);
  ASSERT_TRUE(r->Send(key("dead:0", kStep), Tensor(), true).ok());
  ASSERT_TRUE(r->Send(key("large:0", kStep), large, false).ok());
  ASSERT_TRUE(
      r->Send(key("empty:0", kStep), Tensor(DType::kF32, Shape{3, 0}), false)
          .ok());
  Received got = Fetch(*worker, key("large:0", kStep), kStep);
  ASSERT_TRUE(got.status.ok()) << got.status;
  ASSERT_EQ(got.value.shape(), (Shape{10 << 10, 1024}));
  EXPECT_EQ(std::memcmp(got.value.raw_data(), large.raw_data(), large.bytes()),
            0);
  got = Fetch(*worker, key("dead:0", kStep), kStep);
  ASSERT_TRUE(got.status.ok()) << got.status;
  EXPECT_TRUE(got.dead);
  got = Fetch(*worker, key("empty:0", kStep), kStep);
  ASSERT_TRUE(got.status.ok()) << got.status;
  EXPECT_EQ(got.value.shape(), (Shape{3, 0}));
  EXPECT_EQ(ps.recv_calls() - calls, 1);
  // A failed step on the sender: every value of the call fails.
  worker->StepRendezvous(kStep + 1)->Prefetch(
      {key("a:0", kStep + 1), key("b:0", kStep + 1)});
  ASSERT_TRUE(ps.Step(kStep + 1)
                  ->Send(key("a:0", kStep + 1),
                         Tensor::FromVector<float>({1}, Shape{1}), false)
                  .ok());
  ps.AbortStep(kStep + 1, absl::InternalError("the ps step failed"));
  got = Fetch(*worker, key("b:0", kStep + 1), kStep + 1);
  EXPECT_EQ(got.status, absl::InternalError("the ps step failed"));
  worker->EndStep(kStep, {});
  worker->EndStep(kStep + 1, {});
}

}  // namespace
}  // namespace runnel
