// One replica of a replicated parameter server (distributed/replica.h),
// without its peers: the epochs that order primaries, the base a backup's
// messages must follow, promotion, stepping down, and a primary whose
// backup does not answer.
#include "distributed/replica.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "framework/graph_def.h"
#include "framework/variable.h"
#include "tests/util/test_util.h"

namespace runnel {
namespace {

using ::runnel::testing::ExpectTensor;
using ::runnel::testing::F32;

// Nothing listens on port 1: a peer there refuses at once.
const std::vector<std::string> kAddresses = {"127.0.0.1:1", "127.0.0.1:1"};

proto::ReplicateRequest Message(int64_t epoch, int64_t seq, bool full,
                                std::vector<float> w) {
  proto::ReplicateRequest req;
  req.set_epoch(epoch);
  req.set_sender(0);
  req.set_sender_incarnation(7);
  req.set_seq(seq);
  req.set_full(full);
  proto::VariableReplica* v = req.add_variable();
  v->set_name("w");
  v->set_dtype("f32");
  ShapeToProto(Shape{2}, v->mutable_shape());
  v->set_initialized(true);
  *v->mutable_value() = ToProto(F32(w, Shape{2}));
  proto::WrittenKeys* k = v->add_applied();
  k->set_writer("/job:worker/task:0#1");
  k->set_seq(seq);
  k->add_write("apply@0:0");
  return req;
}

proto::GetStatusResponse StatusOf(const ReplicaServer& r) {
  proto::GetStatusResponse s;
  r.Status(&s);
  return s;
}

TEST(ReplicaTest, ABackupFollowsItsPrimaryInOrderAndByEpoch) {
  ResourceMgr rm;
  ReplicaServer r("/job:ps/task:0", 1, kAddresses, {}, &rm, 42);
  EXPECT_FALSE(StatusOf(r).primary());
  EXPECT_FALSE(StatusOf(r).holds_state());
  EXPECT_EQ(r.CheckPrimary().code(), absl::StatusCode::kUnavailable);
  proto::PromoteRequest promote;
  promote.set_epoch(1);
  EXPECT_EQ(r.Promote(promote).status().code(),
            absl::StatusCode::kFailedPrecondition)
      << "a replica without state is promoted only in a new cluster";

  proto::ReplicateResponse resp;
  r.Apply(Message(1, 1, /*full=*/false, {1, 2}), &resp);
  EXPECT_TRUE(resp.needs_full()) << "no base yet";
  resp.Clear();
  r.Apply(Message(1, 1, /*full=*/true, {1, 2}), &resp);
  EXPECT_FALSE(resp.needs_full());
  EXPECT_FALSE(resp.superseded());
  ExpectTensor(*rm.Lookup<Variable>("w")->Read(), DType::kF32, Shape{2},
               {1, 2});
  EXPECT_TRUE(StatusOf(r).holds_state());
  EXPECT_EQ(StatusOf(r).epoch(), 1);
  resp.Clear();
  r.Apply(Message(1, 3, /*full=*/false, {9, 9}), &resp);
  EXPECT_TRUE(resp.needs_full()) << "message 2 is missing";
  EXPECT_FALSE(StatusOf(r).holds_state())
      << "until it has the missing message, it cannot be promoted";
  resp.Clear();
  r.Apply(Message(1, 2, /*full=*/false, {3, 4}), &resp);
  EXPECT_FALSE(resp.needs_full());
  EXPECT_TRUE(StatusOf(r).holds_state());
  ExpectTensor(*rm.Lookup<Variable>("w")->Read(), DType::kF32, Shape{2},
               {3, 4});
  // The writes the primary holds came too: a retried run's is not made
  // again here.
  const WriteKey retried{
      .writer = "/job:worker/task:0#1", .seq = 2, .write = "apply@0:0"};
  ASSERT_TRUE(rm.Lookup<Variable>("w")
                  ->Assign(F32({0, 0}, Shape{2}), nullptr, &retried)
                  .ok());
  ExpectTensor(*rm.Lookup<Variable>("w")->Read(), DType::kF32, Shape{2},
               {3, 4});

  // Promoted (its primary did not answer a worker): an older primary's
  // messages are refused from now on.
  promote.set_epoch(2);
  ASSERT_EQ(*r.Promote(promote), 2);
  EXPECT_TRUE(r.CheckPrimary().ok());
  resp.Clear();
  r.Apply(Message(1, 3, /*full=*/false, {5, 6}), &resp);
  EXPECT_TRUE(resp.superseded());
  EXPECT_EQ(resp.epoch(), 2);
  ExpectTensor(*rm.Lookup<Variable>("w")->Read(), DType::kF32, Shape{2},
               {3, 4});

  // A newer primary's message makes it step down, and says why.
  absl::Status why;
  r.set_on_demote([&why](const absl::Status& s) { why = s; });
  resp.Clear();
  proto::ReplicateRequest newer = Message(3, 1, /*full=*/true, {7, 8});
  newer.clear_variable();  // the whole state, without w
  r.Apply(newer, &resp);
  EXPECT_FALSE(resp.superseded());
  EXPECT_EQ(why.code(), absl::StatusCode::kUnavailable);
  EXPECT_EQ(r.CheckPrimary().code(), absl::StatusCode::kUnavailable);
  EXPECT_FALSE(rm.Lookup<Variable>("w")->initialized())
      << "what the whole state does not name is not held";
}

TEST(ReplicaTest, APrimaryAnswersOnlyOnceItsBackupHoldsTheUpdate) {
  ResourceMgr rm;
  ReplicaServer r("/job:ps/task:0", 0, kAddresses, {}, &rm, 42);
  proto::PromoteRequest fresh;
  fresh.set_epoch(1);
  fresh.set_fresh(true);
  ASSERT_TRUE(r.Promote(fresh).ok());
  ASSERT_TRUE(
      rm.LookupOrCreate<Variable>(
            "w",
            [] { return std::make_shared<Variable>(DType::kF32, Shape{2}); })
          .value()
          ->Assign(F32({1, 2}, Shape{2}))
          .ok());
  absl::Status s = r.Sync();
  EXPECT_EQ(s.code(), absl::StatusCode::kUnavailable);
  EXPECT_NE(std::string(s.message())
                .find("its backup at 127.0.0.1:1 does "
                      "not answer"),
            std::string::npos)
      << s;

  // Promoted in place of a replica that did not answer the worker: it
  // serves alone until that one answers.
  ResourceMgr rm2;
  ReplicaServer alone("/job:ps/task:0", 1, kAddresses, {}, &rm2, 43);
  proto::PromoteRequest failover;
  failover.set_epoch(2);
  failover.set_fresh(true);
  failover.add_silent(0);
  ASSERT_TRUE(alone.Promote(failover).ok());
  EXPECT_TRUE(alone.Sync().ok());
}

TEST(ReplicaTest, AReplicaPromotedEmptyDropsTheStateItHeld) {
  // Its state is of an older epoch than the newest primary's, which died
  // before this one caught up: a worker promotes it empty (fresh), and the
  // chief restores the task from a checkpoint, not from this stale copy.
  ResourceMgr rm;
  ReplicaServer r("/job:ps/task:0", 1, kAddresses, {}, &rm, 42);
  proto::ReplicateResponse resp;
  r.Apply(Message(1, 1, /*full=*/true, {1, 2}), &resp);
  ASSERT_TRUE(rm.Lookup<Variable>("w")->initialized());
  ASSERT_TRUE(rm.LookupOrCreate<RandomCounter>("rng", [] {
                  return std::make_shared<RandomCounter>();
                }).ok());
  proto::PromoteRequest fresh;
  fresh.set_epoch(5);
  fresh.set_fresh(true);
  ASSERT_EQ(*r.Promote(fresh), 5);
  EXPECT_TRUE(r.CheckPrimary().ok());
  EXPECT_FALSE(rm.Lookup<Variable>("w")->initialized());
  EXPECT_EQ(rm.Lookup<RandomCounter>("rng"), nullptr);
}

}  // namespace
}  // namespace runnel
