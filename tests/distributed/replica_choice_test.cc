// A worker's choice of a replicated task's replica (distributed/
// replica_choice.h), from the replicas' answers.
#include "distributed/replica_choice.h"

#include <gtest/gtest.h>

#include <vector>

namespace runnel {
namespace {

ReplicaAnswer Answer(int index, bool primary, int64_t epoch, bool holds) {
  return {
      .index = index, .primary = primary, .epoch = epoch, .holds_state = holds};
}

TEST(ReplicaChoiceTest, ThePrimaryOfTheNewestEpochServes) {
  const ReplicaChoice c = ChooseReplica(
      {Answer(0, true, 1, true), Answer(1, true, 2, true)}, true, 0, false);
  EXPECT_EQ(c.action, ReplicaChoice::kUse);
  EXPECT_EQ(c.index, 1);
  EXPECT_EQ(c.epoch, 2);
}

TEST(ReplicaChoiceTest, AFreshTaskPromotesItsFirstReplicaEmpty) {
  const ReplicaChoice c = ChooseReplica(
      {Answer(0, false, 0, false), Answer(1, false, 0, false)}, true, 0, false);
  EXPECT_EQ(c.action, ReplicaChoice::kPromote);
  EXPECT_EQ(c.index, 0);
  EXPECT_EQ(c.epoch, 1);
  EXPECT_TRUE(c.fresh);
  // Not while one is silent: it may hold the state.
  EXPECT_EQ(ChooseReplica({Answer(1, false, 0, false)}, false, 0, false).action,
            ReplicaChoice::kNone);
}

TEST(ReplicaChoiceTest, TheBackupTakesOverFromASilentPrimary) {
  const ReplicaChoice c =
      ChooseReplica({Answer(1, false, 3, true)}, false, 3, false);
  EXPECT_EQ(c.action, ReplicaChoice::kPromote);
  EXPECT_EQ(c.index, 1);
  EXPECT_EQ(c.epoch, 4);
  EXPECT_FALSE(c.fresh);
}

// Worker 1 asks replica 0 (not yet promoted: epoch 0), worker 0 then
// promotes it (epoch 1) and it sends its state to replica 1, which worker
// 1 asks next (epoch 1, holding the state). Promoting replica 1 would
// demote a healthy primary in the chief's first step; before, it did so
// about once in ten synchronous runs under load, and the chief's step
// then waited on the demoted replica's barrier for a minute.
TEST(ReplicaChoiceTest, AnAnswerOlderThanABackupsStateIsAskedAgain) {
  const std::vector<ReplicaAnswer> first = {Answer(0, false, 0, false),
                                            Answer(1, false, 1, true)};
  EXPECT_EQ(ChooseReplica(first, true, 0, false).action,
            ReplicaChoice::kAskAgain);
  // Asked again, the primary answers as one...
  const ReplicaChoice again = ChooseReplica(
      {Answer(0, true, 1, true), Answer(1, false, 1, true)}, true, 0, true);
  EXPECT_EQ(again.action, ReplicaChoice::kUse);
  EXPECT_EQ(again.index, 0);
  // ...and one that restarted empty meanwhile answers the same as before:
  // the backup is promoted, once.
  const ReplicaChoice restarted = ChooseReplica(first, true, 0, true);
  EXPECT_EQ(restarted.action, ReplicaChoice::kPromote);
  EXPECT_EQ(restarted.index, 1);
  EXPECT_EQ(restarted.epoch, 2);
}

// A primary stopped while its backup took over answers at an epoch below
// the one this worker has seen: it is stale, and never serves.
TEST(ReplicaChoiceTest, AStalePrimaryBelowTheFloorIsPassedOver) {
  const ReplicaChoice c = ChooseReplica(
      {Answer(0, true, 1, true), Answer(1, true, 2, true)}, true, 2, false);
  EXPECT_EQ(c.action, ReplicaChoice::kUse);
  EXPECT_EQ(c.index, 1);
  // Alone (the new primary silent), the stale one is not used.
  EXPECT_EQ(ChooseReplica({Answer(0, true, 1, true)}, false, 2, false).action,
            ReplicaChoice::kNone);
}

}  // namespace
}  // namespace runnel
