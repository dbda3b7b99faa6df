// One task's Worker (distributed/worker.h) without the transport: graphs
// registered once per content, runs of registered partitions over a step's
// rendezvous, steps that end, variables by name, and the freeze a
// consistent snapshot takes.
#include "distributed/worker.h"

#include <gtest/gtest.h>

#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "base/strings.h"
#include "base/thread_pool.h"
#include "common_runtime/rendezvous.h"
#include "framework/device_set.h"
#include "framework/graph_def.h"
#include "framework/resource_mgr.h"
#include "tests/util/test_ops.h"
#include "tests/util/test_util.h"

namespace runnel {
namespace {

using ::runnel::testing::Add;
using ::runnel::testing::Message;

constexpr char kTask[] = "/job:ps/task:0";
constexpr char kDevice[] = "/job:ps/task:0/device:cpu:0";

// A worker serving one CPU device, as TaskServer sets one up; no other
// task to fetch from.
class WorkerTest : public ::testing::Test {
 protected:
  WorkerTest()
      : pool_(2),
        devices_(1, 2, &resources_, &pool_, kTask),
        worker_(kTask, [](const std::string& src, const std::string& key,
                          int64_t, Rendezvous::Done done) {
          done(absl::UnavailableError(
                   StrCat("no task ", src, " to fetch ", key, " from")),
               Tensor(), false);
        }) {
    worker_.ServeDevices(&devices_, &pool_);
  }

  // `variable` v (f32[2]) and `assign_add(v, delta)`, on the device.
  proto::GraphDef AddToVariable(float delta) {
    Graph g;
    Node* v = Add(g, "v", "variable", {},
                  {{"dtype", DType::kF32}, {"shape", Shape{2}}});
    Node* d =
        Add(g, "delta", "const", {},
            {{"value", Tensor::FromVector(std::vector<float>{delta, delta})}});
    Add(g, "update", "assign_add", {{v, 0}, {d, 0}});
    for (Node* n : g.nodes()) n->set_assigned_device(kDevice);
    return ToGraphDef(g);
  }

  ThreadPool pool_;
  ResourceMgr resources_;
  DeviceSet devices_;
  Worker worker_;
};

TEST_F(WorkerTest, TheSameGraphRegisteredTwiceHasOneHandle) {
  absl::StatusOr<std::string> a = worker_.RegisterGraph(AddToVariable(1));
  absl::StatusOr<std::string> b = worker_.RegisterGraph(AddToVariable(1));
  absl::StatusOr<std::string> c = worker_.RegisterGraph(AddToVariable(2));
  ASSERT_TRUE(a.ok()) << a.status();
  ASSERT_TRUE(b.ok() && c.ok());
  EXPECT_EQ(*a, *b);
  EXPECT_NE(*a, *c);
  EXPECT_EQ(worker_.num_graphs(), 2);
}

TEST_F(WorkerTest, RunsUpdateTheVariablesItHoldsByName) {
  ASSERT_TRUE(worker_
                  .SetVariables({"v"},
                                {Tensor::FromVector(std::vector<float>{1, 2})},
                                /*overwrite=*/false)
                  .ok());
  absl::StatusOr<std::string> handle = worker_.RegisterGraph(AddToVariable(3));
  ASSERT_TRUE(handle.ok()) << handle.status();
  for (int64_t step = 1; step <= 2; ++step) {
    absl::Status s = worker_.RunGraph(*handle, step, /*global_seed=*/0);
    ASSERT_TRUE(s.ok()) << s;
    worker_.EndStep(step);
  }
  absl::StatusOr<std::vector<Tensor>> v = worker_.ReadVariables({"v"});
  ASSERT_TRUE(v.ok()) << v.status();
  EXPECT_EQ(v->at(0).ToDoubles(), (std::vector<double>{7, 8}));
  // Set without overwrite keeps a value that is there; with, replaces it.
  ASSERT_TRUE(worker_
                  .SetVariables({"v"},
                                {Tensor::FromVector(std::vector<float>{0, 0})},
                                /*overwrite=*/false)
                  .ok());
  EXPECT_EQ(worker_.ReadVariables({"v"})->at(0).ToDoubles(),
            (std::vector<double>{7, 8}));
  ASSERT_TRUE(worker_
                  .SetVariables({"v"},
                                {Tensor::FromVector(std::vector<float>{0, 0})},
                                /*overwrite=*/true)
                  .ok());
  EXPECT_EQ(worker_.ReadVariables({"v"})->at(0).ToDoubles(),
            (std::vector<double>{0, 0}));
  EXPECT_EQ(*worker_.VariablesInitialized({"v", "w"}),
            (std::vector<bool>{true, false}));
}

TEST_F(WorkerTest, BadRequestsAreErrorsThatSayWhy) {
  absl::Status s = worker_.RunGraph("bogus", 1, 0);
  EXPECT_EQ(s.code(), absl::StatusCode::kNotFound);
  EXPECT_NE(s.message().find("has no graph 'bogus'"), std::string::npos) << s;
  // A handle of another process of the task (one that restarted, the
  // replica a backup replaced): the caller plans again.
  s = worker_.RunGraph("/job:ps/task:0#9.1", 1, 0);
  EXPECT_EQ(s.code(), absl::StatusCode::kUnavailable) << s;
  EXPECT_NE(s.message().find("registered with another process"),
            std::string::npos)
      << s;
  absl::StatusOr<std::vector<Tensor>> missing = worker_.ReadVariables({"nope"});
  EXPECT_EQ(missing.status().code(), absl::StatusCode::kNotFound);
  EXPECT_NE(missing.status().message().find("has no variable 'nope'"),
            std::string::npos);
  s = worker_.SetVariables({"a", "b"}, {Tensor::Scalar<float>(1)}, false);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("2 variable names but 1 values"),
            std::string::npos);
  // A partition with a node on another task's device is refused.
  Graph g;
  Node* c = Add(g, "c", "const", {}, {{"value", Tensor::Scalar<float>(1)}});
  c->set_assigned_device("/job:worker/task:0/device:cpu:0");
  absl::StatusOr<std::string> h = worker_.RegisterGraph(ToGraphDef(g));
  EXPECT_EQ(h.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(h.status().message().find("not one device of this task"),
            std::string::npos)
      << h.status();
}

TEST(WorkerWithoutDevicesTest, RunsNothingAndHoldsNoState) {
  Worker worker("/job:worker/task:3", nullptr);
  absl::StatusOr<std::string> h = worker.RegisterGraph(proto::GraphDef());
  EXPECT_EQ(h.status().code(), absl::StatusCode::kFailedPrecondition);
  absl::StatusOr<std::vector<Tensor>> v = worker.ReadVariables({"v"});
  EXPECT_EQ(v.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_NE(v.status().message().find("/job:worker/task:3 holds no state"),
            std::string::npos);
}

TEST_F(WorkerTest, TheLogSaysWhenAPartitionRunsAndEnds) {
  std::vector<std::string> lines;
  worker_.set_log([&](const std::string& line) { lines.push_back(line); });
  absl::StatusOr<std::string> handle = worker_.RegisterGraph(AddToVariable(1));
  ASSERT_TRUE(handle.ok());
  // No value for v yet: the run fails, and the end says why.
  EXPECT_FALSE(worker_.RunGraph(*handle, 3, 0).ok());
  ASSERT_EQ(lines.size(), 2u);
  EXPECT_EQ(lines[0], StrCat("step 3: ", *handle, " runs"));
  EXPECT_EQ(lines[1].rfind(StrCat("step 3: ", *handle, " ended ("), 0), 0u)
      << lines[1];
  ASSERT_TRUE(worker_
                  .SetVariables({"v"},
                                {Tensor::FromVector(std::vector<float>{0, 0})},
                                false)
                  .ok());
  EXPECT_TRUE(worker_.RunGraph(*handle, 4, 0).ok());
  ASSERT_EQ(lines.size(), 4u);
  EXPECT_EQ(lines[3], StrCat("step 4: ", *handle, " ended"));
}

TEST_F(WorkerTest, AnEndedStepsRendezvousIsAborted) {
  worker_.EndStep(5);
  std::shared_ptr<StepRendezvous> r = worker_.Step(5);
  absl::Status aborted = r->AbortStatus();
  EXPECT_EQ(aborted.code(), absl::StatusCode::kAborted);
  EXPECT_NE(aborted.message().find("step 5 has ended"), std::string::npos);
  // A step that has not ended has a live one, the same on every call.
  EXPECT_TRUE(worker_.Step(6)->AbortStatus().ok());
  EXPECT_EQ(worker_.Step(6), worker_.Step(6));
}

// A partition that receives nothing hands the values it sends to its
// caller back with its answer (RunGraphRequest's return_to): those up to
// kReturnedBytes; a larger one stays held for the caller's RecvTensor, and
// the step, with something of it left, does not end with the run.
TEST_F(WorkerTest, ARunHandsBackTheValuesItSendsToItsCaller) {
  constexpr char kCaller[] = "/job:worker/task:0";
  constexpr char kCallerDevice[] = "/job:worker/task:0/device:cpu:0";
  auto graph = [&](int64_t large) {
    Graph g;
    Node* small =
        Add(g, "small", "const", {},
            {{"value", Tensor::FromVector(std::vector<float>{1, 2})}});
    Node* big = Add(
        g, "big", "const", {},
        {{"value", Tensor::FromVector(std::vector<float>(large / 4, 0.5f))}});
    for (auto [n, edge] : {std::pair{small, "small:0"}, {big, "big:0"}}) {
      Add(g, StrCat(n->name(), "/send"), "_send", {{n, 0}},
          {{"edge", std::string(edge)},
           {"send_device", std::string(kDevice)},
           {"recv_device", std::string(kCallerDevice)}});
    }
    for (Node* n : g.nodes()) n->set_assigned_device(kDevice);
    return ToGraphDef(g);
  };
  auto key = [&](const std::string& edge, int64_t step) {
    return RendezvousKey(kDevice, kCallerDevice, edge, 0, 0, step);
  };
  const int64_t large = Worker::kReturnedBytes + 4;
  absl::StatusOr<std::string> handle = worker_.RegisterGraph(graph(large));
  ASSERT_TRUE(handle.ok()) << handle.status();
  const int64_t before = worker_.bytes_sent();
  Returned back;
  back.to = kCaller;
  back.may_end = true;
  ASSERT_TRUE(worker_.RunGraph(*handle, 1, 0, 0, nullptr, nullptr, &back).ok());
  ASSERT_EQ(back.values.size(), 1u);
  EXPECT_EQ(back.values[0].key, key("small:0", 1));
  EXPECT_FALSE(back.values[0].is_dead);
  EXPECT_EQ(back.values[0].value.ToDoubles(), (std::vector<double>{1, 2}));
  EXPECT_EQ(worker_.bytes_sent() - before, 8);
  EXPECT_EQ(back.left, std::vector<std::string>{key("big:0", 1)});
  EXPECT_FALSE(back.step_ended);
  EXPECT_TRUE(worker_.Step(1)->Holds(key("big:0", 1)));
  EXPECT_EQ(worker_.Freeze(/*freeze_id=*/100, /*lease_s=*/30),
            std::vector<int64_t>{1});
  EXPECT_TRUE(worker_.Unfreeze(100));
  worker_.EndStep(1);

  // Everything returned: the step ends with the run, unless the caller
  // says it runs on other tasks too (their snapshot's freeze counts it
  // open until the caller ends it everywhere).
  handle = worker_.RegisterGraph(graph(Worker::kReturnedBytes));
  ASSERT_TRUE(handle.ok()) << handle.status();
  back = Returned{};
  back.to = kCaller;
  back.may_end = true;
  ASSERT_TRUE(worker_.RunGraph(*handle, 2, 0, 0, nullptr, nullptr, &back).ok());
  EXPECT_EQ(back.values.size(), 2u);
  EXPECT_TRUE(back.left.empty());
  EXPECT_TRUE(back.step_ended);
  EXPECT_FALSE(worker_.Step(2)->AbortStatus().ok());
  EXPECT_TRUE(worker_.Freeze(/*freeze_id=*/101, /*lease_s=*/30).empty());
  EXPECT_TRUE(worker_.Unfreeze(101));
  back = Returned{};
  back.to = kCaller;
  ASSERT_TRUE(worker_.RunGraph(*handle, 3, 0, 0, nullptr, nullptr, &back).ok());
  EXPECT_EQ(back.values.size(), 2u);
  EXPECT_FALSE(back.step_ended);
  EXPECT_EQ(worker_.Freeze(/*freeze_id=*/102, /*lease_s=*/30),
            std::vector<int64_t>{3});
  EXPECT_TRUE(worker_.Unfreeze(102));
}

// What a receive got: its value, when it came (at once or later).
struct Got {
  bool called = false;
  absl::Status status;
  Tensor value;
};
void RecvInto(Rendezvous& r, const std::string& key, Got* got) {
  absl::Status status;
  Tensor value;
  bool dead = false;
  if (r.Recv(
          key,
          [got](const absl::Status& s, const Tensor& t, bool) {
            *got = {true, s, t};
          },
          &status, &value, &dead)) {
    *got = {true, status, value};
  }
}

// The caller's side: a task whose values come with its answer is not
// fetched from; once it has answered, a receiver of a value it did not
// send fails (DataLoss) instead of waiting for ever, and the keys it left
// still wait for their fetch.
TEST(StepRendezvousTest, ValuesThatComeWithAnAnswerAreNotFetched) {
  constexpr char kPs[] = "/job:ps/task:0";
  constexpr char kHere[] = "/job:worker/task:0/device:cpu:0";
  std::vector<std::string> fetched;
  StepRendezvous r("/job:worker/task:0", 7,
                   [&](const std::string&, const std::string& key, int64_t,
                       Rendezvous::Done) { fetched.push_back(key); });
  auto key = [&](const std::string& task, const std::string& edge) {
    return RendezvousKey(StrCat(task, "/device:cpu:0"), kHere, edge, 0, 0, 7);
  };
  r.ReturnedBy(kPs);
  auto recv = [&](const std::string& k, Got* got) { RecvInto(r, k, got); };
  Got missing, big, small, later;
  recv(key(kPs, "missing:0"), &missing);
  recv(key(kPs, "big:0"), &big);
  EXPECT_FALSE(missing.called);
  EXPECT_FALSE(big.called);
  ASSERT_TRUE(r.Send(key(kPs, "small:0"),
                     Tensor::FromVector(std::vector<float>{3}), false)
                  .ok());
  r.Answered(kPs, {key(kPs, "big:0")});
  ASSERT_TRUE(missing.called);
  EXPECT_EQ(missing.status.code(), absl::StatusCode::kDataLoss)
      << missing.status;
  EXPECT_FALSE(big.called);
  recv(key(kPs, "small:0"), &small);
  ASSERT_TRUE(small.called && small.status.ok()) << small.status;
  EXPECT_EQ(small.value.ToDoubles(), std::vector<double>{3});
  recv(key(kPs, "later:0"), &later);
  ASSERT_TRUE(later.called);
  EXPECT_EQ(later.status.code(), absl::StatusCode::kDataLoss);
  ASSERT_TRUE(r.Send(key(kPs, "big:0"),
                     Tensor::FromVector(std::vector<float>{4}), false)
                  .ok());
  ASSERT_TRUE(big.called && big.status.ok()) << big.status;
  EXPECT_TRUE(fetched.empty());
  // Another task's values are fetched as before.
  Got other;
  recv(key("/job:ps/task:1", "w:0"), &other);
  EXPECT_FALSE(other.called);
  EXPECT_EQ(fetched, std::vector<std::string>{key("/job:ps/task:1", "w:0")});
}

// A step's receives from one task outside its loops are asked for in one
// call (Prefetch, through `fetch_many`): not those sent on this task, nor
// those of a task whose values come with its answer, nor a task's lone
// key. A prefetched key's receiver waits for the call's delivery and is
// not fetched alone; a failed delivery aborts the step.
TEST(StepRendezvousTest, ATasksValuesAreAskedForInOneCall) {
  constexpr char kHere[] = "/job:worker/task:0/device:cpu:0";
  std::vector<std::string> fetched;
  using Delivery = std::function<void(const std::string&, const absl::Status&,
                                      const Tensor&, bool)>;
  std::vector<std::pair<std::string, std::vector<std::string>>> calls;
  std::vector<Delivery> deliver;
  auto r = std::make_shared<StepRendezvous>(
      "/job:worker/task:0", 7,
      [&](const std::string&, const std::string& key, int64_t,
          Rendezvous::Done) { fetched.push_back(key); },
      [&](const std::string& task, std::vector<std::string> keys, int64_t step,
          Delivery done) {
        EXPECT_EQ(step, 7);
        calls.emplace_back(task, std::move(keys));
        deliver.push_back(std::move(done));
      });
  auto key = [&](const std::string& task, const std::string& edge) {
    return RendezvousKey(StrCat(task, "/device:cpu:0"), kHere, edge, 0, 0, 7);
  };
  r->ReturnedBy("/job:ps/task:2");
  r->Prefetch({key("/job:ps/task:0", "a:0"), key("/job:ps/task:1", "c:0"),
               key("/job:ps/task:0", "b:0"), key("/job:ps/task:2", "d:0"),
               key("/job:ps/task:2", "e:0"),
               key("/job:worker/task:0", "here:0"),
               key("/job:worker/task:0", "here:1"),
               key("/job:ps/task:3", "f:0"), key("/job:ps/task:3", "g:0")});
  ASSERT_EQ(calls.size(), 2u);
  EXPECT_EQ(calls[0].first, "/job:ps/task:0");
  EXPECT_EQ(calls[0].second,
            (std::vector<std::string>{key("/job:ps/task:0", "a:0"),
                                      key("/job:ps/task:0", "b:0")}));
  EXPECT_EQ(calls[1].first, "/job:ps/task:3");
  // Asked again (another partition of the step names them too): no call.
  r->Prefetch({key("/job:ps/task:0", "a:0"), key("/job:ps/task:0", "b:0")});
  EXPECT_EQ(calls.size(), 2u);
  auto recv = [&](const std::string& k, Got* got) { RecvInto(*r, k, got); };
  Got a, b, c;
  recv(key("/job:ps/task:0", "a:0"), &a);
  EXPECT_FALSE(a.called);
  recv(key("/job:ps/task:1", "c:0"), &c);  // the lone key: its own fetch
  EXPECT_EQ(fetched, std::vector<std::string>{key("/job:ps/task:1", "c:0")});
  // Values come in any order.
  deliver[0](key("/job:ps/task:0", "b:0"), absl::OkStatus(),
             Tensor::FromVector(std::vector<float>{2}), false);
  recv(key("/job:ps/task:0", "b:0"), &b);
  ASSERT_TRUE(b.called && b.status.ok()) << b.status;
  EXPECT_EQ(b.value.ToDoubles(), std::vector<double>{2});
  EXPECT_FALSE(a.called);
  deliver[0](key("/job:ps/task:0", "a:0"), absl::OkStatus(),
             Tensor::FromVector(std::vector<float>{1}), false);
  ASSERT_TRUE(a.called && a.status.ok()) << a.status;
  EXPECT_EQ(a.value.ToDoubles(), std::vector<double>{1});
  EXPECT_EQ(fetched.size(), 1u);
  // A failed call aborts the step with its error.
  Got g;
  recv(key("/job:ps/task:3", "g:0"), &g);
  deliver[1](key("/job:ps/task:3", "g:0"),
             absl::UnavailableError("/job:ps/task:3 unreachable"), Tensor(),
             true);
  ASSERT_TRUE(g.called);
  EXPECT_EQ(Message(g.status), "/job:ps/task:3 unreachable");
  EXPECT_EQ(Message(r->AbortStatus()), "/job:ps/task:3 unreachable");
}

TEST_F(WorkerTest, AFreezeHoldsNewStepsUntilAdmittedOrEnded) {
  absl::StatusOr<std::string> handle = worker_.RegisterGraph(AddToVariable(1));
  ASSERT_TRUE(handle.ok()) << handle.status();
  ASSERT_TRUE(worker_
                  .SetVariables({"v"},
                                {Tensor::FromVector(std::vector<float>{0, 0})},
                                false)
                  .ok());
  // Step 1 ran and has not ended: it is open, which the freeze reports.
  ASSERT_TRUE(worker_.RunGraph(*handle, 1, 0).ok());
  EXPECT_EQ(worker_.Freeze(/*freeze_id=*/100, /*lease_s=*/30),
            std::vector<int64_t>{1});
  // Step 2 is held: a caller that leaves gets Cancelled, having run nothing.
  absl::Status held = worker_.RunGraph(*handle, 2, 0, 0, [] { return true; });
  EXPECT_EQ(held.code(), absl::StatusCode::kCancelled) << held;
  EXPECT_EQ(worker_.ReadVariables({"v"})->at(0).ToDoubles(),
            (std::vector<double>{1, 1}));
  // The freezing chief's own step, and admitted steps, go through.
  EXPECT_TRUE(worker_.RunGraph(*handle, 3, 0, /*freeze_id=*/100).ok());
  ASSERT_TRUE(worker_.Admit(100, {4}, 30).ok());
  EXPECT_TRUE(worker_.RunGraph(*handle, 4, 0).ok());
  EXPECT_EQ(worker_.ReadVariables({"v"})->at(0).ToDoubles(),
            (std::vector<double>{3, 3}));
  // Drain: step 1 stays open until it ends.
  EXPECT_FALSE(*worker_.Drain(100, {1}, /*wait_s=*/0, 30));
  worker_.EndStep(1);
  EXPECT_TRUE(*worker_.Drain(100, {1}, 0, 30));
  EXPECT_TRUE(worker_.Unfreeze(100));
  // Unfrozen: step 2 runs.
  EXPECT_TRUE(worker_.RunGraph(*handle, 2, 0).ok());
}

TEST_F(WorkerTest, AFreezeWhoseLeaseLapsesEndsByItself) {
  EXPECT_TRUE(worker_.Freeze(7, /*lease_s=*/0).empty());
  absl::Status late = worker_.Admit(7, {1}, 30);
  EXPECT_EQ(late.code(), absl::StatusCode::kFailedPrecondition) << late;
  EXPECT_FALSE(worker_.Unfreeze(7));
  absl::StatusOr<std::string> handle = worker_.RegisterGraph(AddToVariable(1));
  ASSERT_TRUE(handle.ok());
  ASSERT_TRUE(worker_
                  .SetVariables({"v"},
                                {Tensor::FromVector(std::vector<float>{0, 0})},
                                false)
                  .ok());
  EXPECT_TRUE(worker_.RunGraph(*handle, 1, 0).ok());
}

// A replica that is its task's primary for the next `primary_checks`
// checks and a backup after them; Sync holds nothing back.
class SteppingDownReplica : public Replication {
 public:
  absl::Status CheckPrimary() const override {
    if (primary_checks > 0) {
      --primary_checks;
      return absl::OkStatus();
    }
    return absl::UnavailableError(
        "/job:ps/task:0 (replica 0) is a backup, not the task's primary");
  }
  absl::Status Sync() override { return absl::OkStatus(); }
  mutable int primary_checks = 1 << 20;
};

// A replica that steps down while a run's kernels run drops its state
// under them (replica.h): a kernel then fails for a variable it finds
// uninitialized. The run must fail as Unavailable, which the master runs
// again with the new primary, and not with the kernel's error, which would
// end the training (the cluster.netns failure under packet loss).
TEST_F(WorkerTest, ARunOnAReplicaThatSteppedDownFailsAsUnavailable) {
  SteppingDownReplica replica;
  worker_.set_replication(&replica);
  absl::StatusOr<std::string> handle = worker_.RegisterGraph(AddToVariable(1));
  ASSERT_TRUE(handle.ok()) << handle.status();
  // v was never set (as after DropState): the kernel fails. Admitted while
  // primary, the run ends with the replica a backup.
  replica.primary_checks = 1;
  absl::Status s = worker_.RunGraph(*handle, 1, 0);
  EXPECT_EQ(s.code(), absl::StatusCode::kUnavailable) << s;
  EXPECT_NE(s.message().find("is a backup, not the task's primary"),
            std::string::npos)
      << s;
  // Still the primary at the end, the kernel's error is the run's.
  replica.primary_checks = 2;
  s = worker_.RunGraph(*handle, 2, 0);
  EXPECT_EQ(s.code(), absl::StatusCode::kFailedPrecondition) << s;
  EXPECT_NE(s.message().find("not initialized"), std::string::npos) << s;
  worker_.set_replication(nullptr);
}

}  // namespace
}  // namespace runnel
