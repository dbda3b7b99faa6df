// All-reduce between workers (distributed/collectives.h) without the
// transport: each worker's fetches go straight to the other workers'
// rendezvous, in this process. tests/cluster/allreduce.rnl runs it over
// gRPC.
#include "distributed/collectives.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "base/strings.h"
#include "framework/device_spec.h"

namespace runnel {
namespace {

std::string WorkerTaskName(int i) { return StrCat("/job:worker/task:", i); }

// `n` workers whose fetches reach each other (but for an unreachable one).
class InProcessWorkers {
 public:
  explicit InProcessWorkers(int n) {
    for (int i = 0; i < n; ++i) {
      workers_.push_back(std::make_unique<Worker>(
          WorkerTaskName(i),
          [this](const std::string& src, const std::string& key, int64_t step,
                 Rendezvous::Done done) {
            const int j = std::stoi(src.substr(src.rfind(':') + 1));
            if (j == unreachable_) {
              done(absl::UnavailableError(StrCat(src, " unreachable")),
                   Tensor(), false);
              return;
            }
            absl::Status s;
            Tensor v;
            bool dead = false;
            if (workers_[j]->Step(step)->Recv(key, done, &s, &v, &dead)) {
              done(s, v, dead);
            }
          }));
      collectives_.push_back(
          std::make_unique<WorkerCollectives>(workers_.back().get(), n, i));
    }
  }
  WorkerCollectives& at(int i) { return *collectives_[i]; }
  // From now on, fetches from worker i fail as from a dead task.
  void set_unreachable(int i) { unreachable_ = i; }

 private:
  std::atomic<int> unreachable_{-1};
  std::vector<std::unique_ptr<Worker>> workers_;
  std::vector<std::unique_ptr<WorkerCollectives>> collectives_;
};

Tensor FloatTensor(std::vector<float> v) { return Tensor::FromVector(v); }

std::vector<float> FloatsOf(const Tensor& t) {
  return std::vector<float>(t.data<float>(),
                            t.data<float>() + t.num_elements());
}

TEST(CollectivesTest, EveryWorkerGetsTheSumOfEveryCall) {
  InProcessWorkers cluster(3);
  for (int call = 0; call < 5; ++call) {
    std::vector<absl::StatusOr<Tensor>> got(3, absl::UnknownError("not yet"));
    for (int i = 0; i < 3; ++i) {
      const float scale = static_cast<float>(call + 1);
      const float base = i == 0 ? 1.0f : (i == 1 ? 10.0f : 100.0f);
      cluster.at(i).AllReduceSum(
          "g", FloatTensor({base * scale, 2 * base * scale}),
          [&got, i](absl::StatusOr<Tensor> sum) { got[i] = std::move(sum); });
    }
    const float s = static_cast<float>(call + 1);
    for (int i = 0; i < 3; ++i) {
      ASSERT_TRUE(got[i].ok()) << got[i].status();
      EXPECT_EQ(FloatsOf(*got[i]), (std::vector<float>{111 * s, 222 * s}))
          << "worker " << i << ", call " << call;
    }
  }
}

TEST(CollectivesTest, GroupsAreMatchedByName) {
  InProcessWorkers cluster(2);
  std::vector<float> a0, a1, b0, b1;
  auto keep = [](std::vector<float>* out) {
    return [out](absl::StatusOr<Tensor> sum) {
      ASSERT_TRUE(sum.ok()) << sum.status();
      *out = FloatsOf(*sum);
    };
  };
  // The workers call the groups in different orders.
  cluster.at(0).AllReduceSum("a", FloatTensor({1}), keep(&a0));
  cluster.at(1).AllReduceSum("b", FloatTensor({20}), keep(&b1));
  cluster.at(0).AllReduceSum("b", FloatTensor({10}), keep(&b0));
  cluster.at(1).AllReduceSum("a", FloatTensor({2}), keep(&a1));
  EXPECT_EQ(a0, std::vector<float>{3});
  EXPECT_EQ(a1, std::vector<float>{3});
  EXPECT_EQ(b0, std::vector<float>{30});
  EXPECT_EQ(b1, std::vector<float>{30});
}

TEST(CollectivesTest, DifferentShapesAreRefused) {
  InProcessWorkers cluster(2);
  absl::Status s0, s1;
  cluster.at(0).AllReduceSum(
      "g", FloatTensor({1, 2}),
      [&](absl::StatusOr<Tensor> r) { s0 = r.status(); });
  cluster.at(1).AllReduceSum(
      "g", FloatTensor({1, 2, 3}),
      [&](absl::StatusOr<Tensor> r) { s1 = r.status(); });
  EXPECT_EQ(s0.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(s0.message().find("/job:worker/task:1/device:cpu:0 gave f32[3]"),
            std::string::npos)
      << s0;
  EXPECT_NE(s1.message().find("every worker must reduce the same tensors"),
            std::string::npos)
      << s1;
}

TEST(CollectivesTest, AnOverlappingCallOfAGroupIsRefused) {
  InProcessWorkers cluster(2);
  absl::Status first = absl::UnknownError("not yet"), second;
  cluster.at(0).AllReduceSum(
      "g", FloatTensor({1}),
      [&](absl::StatusOr<Tensor> r) { first = r.status(); });
  cluster.at(0).AllReduceSum(
      "g", FloatTensor({1}),
      [&](absl::StatusOr<Tensor> r) { second = r.status(); });
  EXPECT_EQ(second.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_NE(second.message().find("called again before its previous call"),
            std::string::npos)
      << second;
  // The first call still completes once the other worker takes part.
  cluster.at(1).AllReduceSum("g", FloatTensor({2}),
                             [](absl::StatusOr<Tensor>) {});
  EXPECT_TRUE(first.ok()) << first;
}

TEST(CollectivesTest, AWorkerLostFailsTheCallNamingIt) {
  InProcessWorkers cluster(2);
  // A first call: worker 1 has answered, so it is not starting.
  cluster.at(1).AllReduceSum("w", FloatTensor({2}),
                             [](absl::StatusOr<Tensor>) {});
  cluster.at(0).AllReduceSum("w", FloatTensor({1}),
                             [](absl::StatusOr<Tensor>) {});
  cluster.set_unreachable(1);
  absl::Status s;
  cluster.at(0).AllReduceSum("w", FloatTensor({1}),
                             [&](absl::StatusOr<Tensor> r) { s = r.status(); });
  EXPECT_EQ(s.code(), absl::StatusCode::kUnavailable);
  EXPECT_NE(s.message().find("all_reduce 'w' (call 1): from "
                             "/job:worker/task:1/device:cpu:0"),
            std::string::npos)
      << s;
}

TEST(CollectivesTest, AWorkerStillStartingIsAskedAgain) {
  InProcessWorkers cluster(2);
  cluster.set_unreachable(1);  // not listening yet
  std::atomic<bool> done{false};
  std::vector<float> got;
  cluster.at(0).AllReduceSum("w", FloatTensor({1}),
                             [&](absl::StatusOr<Tensor> r) {
                               ASSERT_TRUE(r.ok()) << r.status();
                               got = FloatsOf(*r);
                               done = true;
                             });
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  EXPECT_FALSE(done);
  cluster.set_unreachable(-1);  // it has started
  cluster.at(1).AllReduceSum("w", FloatTensor({2}),
                             [](absl::StatusOr<Tensor>) {});
  for (int i = 0; i < 500 && !done; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  ASSERT_TRUE(done);
  EXPECT_EQ(got, std::vector<float>{3});
}

TEST(CollectivesTest, CallStepsAreNegativeAndDistinct) {
  EXPECT_LT(WorkerCollectives::CallStep("g", 0), 0);
  EXPECT_NE(WorkerCollectives::CallStep("g", 0),
            WorkerCollectives::CallStep("g", 1));
  EXPECT_NE(WorkerCollectives::CallStep("g", 0),
            WorkerCollectives::CallStep("h", 0));
}

}  // namespace
}  // namespace runnel
