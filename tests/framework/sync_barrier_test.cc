// The synchronous replicas' barrier (framework/sync_barrier.h): who applies,
// who waits, and what happens when the applier's run dies before the step
// ends.
#include "framework/sync_barrier.h"

#include <atomic>
#include <memory>
#include <string>

#include "gtest/gtest.h"

namespace runnel {
namespace {

// What one arrival was told: -1 nothing yet, 0 go on, 1 apply.
struct BarrierOutcome {
  std::atomic<int> told{-1};
  SyncBarrier::Done done() {
    return [this](bool applier) { told = applier ? 1 : 0; };
  }
};

std::shared_ptr<LiveWorkers> TwoLiveWorkers() {
  auto live = std::make_shared<LiveWorkers>(2);
  live->Beat("/job:worker/task:0", false);
  live->Beat("/job:worker/task:1", false);
  return live;
}

// Workers 0 and 1 arrive for step 0 of 2 replicas (their runs tagged
// `tag0` and `tag1` on a replicated task): worker 1, completing the set,
// applies; worker 0 waits.
void BothArrive(SyncBarrier& b, CancellationManager& run0,
                CancellationManager& run1, BarrierOutcome& worker0,
                BarrierOutcome& worker1, const UpdateTag* tag0 = nullptr,
                const UpdateTag* tag1 = nullptr) {
  b.Arrive(0, 2, &run0, tag0, worker0.done());
  b.Arrive(0, 2, &run1, tag1, worker1.done());
  ASSERT_EQ(worker1.told, 1);
  ASSERT_EQ(worker0.told, -1);
}

TEST(SyncBarrierTest, TheArrivalThatCompletesTheSetApplies) {
  std::shared_ptr<SyncBarrier> b = SyncBarrier::Create(TwoLiveWorkers());
  CancellationManager run_a, run_b;
  BarrierOutcome a, b_out;
  b->Arrive(0, 2, &run_a, nullptr, a.done());
  EXPECT_EQ(a.told, -1);  // waits for the second
  b->Arrive(0, 2, &run_b, nullptr, b_out.done());
  EXPECT_EQ(b_out.told, 1);
  EXPECT_EQ(a.told, -1);  // until the step ends
  b->Advance(0);
  EXPECT_EQ(a.told, 0);
  // An arrival for the ended step goes on at once.
  BarrierOutcome late;
  b->Arrive(0, 2, &run_a, nullptr, late.done());
  EXPECT_EQ(late.told, 0);
  // The applier's run ending after Advance changes nothing.
  run_b.StartCancel();
  BarrierOutcome c, d;
  b->Arrive(1, 2, &run_a, nullptr, c.done());
  EXPECT_EQ(c.told, -1);
  b->Arrive(1, 2, &run_b, nullptr, d.done());  // a cancelled run cannot apply
  EXPECT_EQ(d.told, 0);
  EXPECT_EQ(c.told, -1);
}

// A run that read the step count after the applier advanced it, but
// before the applier's Advance (the chief, between checkpoints, or a backup
// worker), arrives for the next step while this one is applied. It waits
// for Advance and then counts towards the next step; before, it restarted
// the barrier at the next step, the applier's Advance missed, and every
// worker waited for ever (cluster.cli's synchronous snapshots hung).
TEST(SyncBarrierTest, AnArrivalForTheNextStepWaitsForTheApplier) {
  std::shared_ptr<SyncBarrier> b = SyncBarrier::Create(TwoLiveWorkers());
  CancellationManager run0, run1, run2;
  BarrierOutcome worker0, worker1;
  BothArrive(*b, run0, run1, worker0, worker1);
  BarrierOutcome early;
  b->Arrive(1, 2, &run2, nullptr, early.done());
  EXPECT_EQ(early.told, -1);
  b->Advance(0);  // the applier ends step 0
  EXPECT_EQ(worker0.told, 0);
  EXPECT_EQ(early.told, -1);  // now waiting for step 1's set
  BarrierOutcome second;
  b->Arrive(1, 2, &run0, nullptr, second.done());
  EXPECT_EQ(second.told, 1);  // completes step 1's set with the early one
  EXPECT_EQ(early.told, -1);
  b->Advance(1);
  EXPECT_EQ(early.told, 0);
}

TEST(SyncBarrierTest, AnotherAppliesWhenTheApplierDies) {
  std::shared_ptr<LiveWorkers> live = TwoLiveWorkers();
  std::shared_ptr<SyncBarrier> b = SyncBarrier::Create(live);
  CancellationManager run_a, run_b;
  BarrierOutcome a, b_out;
  BothArrive(*b, run_a, run_b, a, b_out);
  // Worker 1 dies: its run aborts before Advance. Worker 0 alone is not
  // the set of 2 while worker 1 still counts as live...
  run_b.StartCancel();
  EXPECT_EQ(a.told, -1);
  // ...and applies once worker 1 is known to be gone.
  live->Beat("/job:worker/task:1", /*leaving=*/true);
  EXPECT_EQ(a.told, 1);
  b->Advance(0);
  // The next step needs the one live worker only.
  BarrierOutcome next;
  b->Arrive(1, 2, &run_a, nullptr, next.done());
  EXPECT_EQ(next.told, 1);
}

// A waiting arrival whose run is cancelled (its step aborted: a ps it
// also ran on was demoted, say) goes on at once and no longer counts.
// Before, it waited until the step ended, and on a demoted replica, where
// no step ends any more, until the other worker left the cluster.
TEST(SyncBarrierTest, AWaiterWhoseRunIsCancelledLeaves) {
  std::shared_ptr<SyncBarrier> b = SyncBarrier::Create(TwoLiveWorkers());
  CancellationManager run0, run1, run0_again;
  BarrierOutcome first, retried, worker1;
  b->Arrive(0, 2, &run0, nullptr, first.done());
  EXPECT_EQ(first.told, -1);
  run0.StartCancel();
  EXPECT_EQ(first.told, 0);
  // Its arrival no longer counts: worker 1 alone is not the set of 2...
  b->Arrive(0, 2, &run1, nullptr, worker1.done());
  EXPECT_EQ(worker1.told, -1);
  // ...worker 0's retried run completes it.
  b->Arrive(0, 2, &run0_again, nullptr, retried.done());
  EXPECT_EQ(retried.told, 1);
  EXPECT_EQ(worker1.told, -1);
  b->Advance(0);
  EXPECT_EQ(worker1.told, 0);
  // An arrival for the next step, early while one is applied, leaves too.
  CancellationManager run2, run3;
  BarrierOutcome applier, waiter, early;
  b->Arrive(1, 2, &run1, nullptr, waiter.done());
  b->Arrive(1, 2, &run0_again, nullptr, applier.done());
  ASSERT_EQ(applier.told, 1);
  b->Arrive(2, 2, &run2, nullptr, early.done());
  EXPECT_EQ(early.told, -1);
  run2.StartCancel();
  EXPECT_EQ(early.told, 0);
  b->Advance(1);
  EXPECT_EQ(waiter.told, 0);
  // An arrival with a run cancelled already goes on at once.
  BarrierOutcome cancelled;
  b->Arrive(2, 2, &run2, nullptr, cancelled.done());
  EXPECT_EQ(cancelled.told, 0);
  BarrierOutcome alone;
  b->Arrive(2, 2, &run3, nullptr, alone.done());
  EXPECT_EQ(alone.told, -1);  // the cancelled one did not count
}

TEST(SyncBarrierTest, ALiveApplierIsNotReplaced) {
  std::shared_ptr<LiveWorkers> live = TwoLiveWorkers();
  std::shared_ptr<SyncBarrier> b = SyncBarrier::Create(live);
  CancellationManager run_a, run_b;
  BarrierOutcome a, b_out;
  BothArrive(*b, run_a, run_b, a, b_out);
  // Worker 0 (waiting) leaves: its run ends (it goes on, AWaiterWhose-
  // RunIsCancelledLeaves), and the applier goes on alone.
  live->Beat("/job:worker/task:0", /*leaving=*/true);
  run_a.StartCancel();
  EXPECT_EQ(a.told, 0);
  EXPECT_EQ(b_out.told, 1);
  // No other arrival of the step applies while the applier lives.
  CancellationManager run_c;
  BarrierOutcome c;
  b->Arrive(0, 2, &run_c, nullptr, c.done());
  EXPECT_EQ(c.told, -1);
  b->Advance(0);
  EXPECT_EQ(c.told, 0);
}

TEST(SyncBarrierTest, ASnapshotHoldsTheBarrierBetweenSteps) {
  std::shared_ptr<SyncBarrier> b = SyncBarrier::Create(TwoLiveWorkers());
  CancellationManager run_a, run_b, snapshot;
  BarrierOutcome a, b_out;
  BothArrive(*b, run_a, run_b, a, b_out);
  // Worker 1 is applying step 0: the hold waits for the step to end.
  std::atomic<bool> held{false};
  b->Hold(&snapshot, [&] { held = true; });
  EXPECT_FALSE(held);
  b->Advance(0);
  EXPECT_TRUE(held);
  EXPECT_EQ(a.told, 0);
  // While held, a complete set of arrivals gets no applier...
  BarrierOutcome c, d;
  b->Arrive(1, 2, &run_a, nullptr, c.done());
  b->Arrive(1, 2, &run_b, nullptr, d.done());
  EXPECT_EQ(c.told, -1);
  EXPECT_EQ(d.told, -1);
  // ...until the snapshot releases it.
  b->Release(&snapshot);
  EXPECT_EQ(d.told, 1);
  b->Advance(1);
  EXPECT_EQ(c.told, 0);
  // A hold whose run fails is released with it.
  CancellationManager failing;
  std::atomic<bool> held2{false};
  b->Hold(&failing, [&] { held2 = true; });
  EXPECT_TRUE(held2);
  BarrierOutcome e, f;
  b->Arrive(2, 2, &run_a, nullptr, e.done());
  b->Arrive(2, 2, &run_b, nullptr, f.done());
  EXPECT_EQ(f.told, -1);
  failing.StartCancel();
  EXPECT_EQ(f.told, 1);
}

TEST(SyncBarrierTest, WithoutLiveWorkersOneArrivalApplies) {
  std::shared_ptr<SyncBarrier> b = SyncBarrier::Create(nullptr);
  BarrierOutcome a;
  b->Arrive(0, 3, nullptr, nullptr, a.done());
  EXPECT_EQ(a.told, 1);
  BarrierOutcome stale;
  b->Advance(0);
  b->Arrive(0, 3, nullptr, nullptr, stale.done());
  EXPECT_EQ(stale.told, 0);
}

// On a replicated parameter server (tagged runs): the chosen applier stays
// chosen until it ends its step, also across a copy to a backup, so that
// its retried run, not another worker's, applies what its first attempt
// may have applied in part.
namespace tagged {

UpdateTag TaggedRun(int worker, int64_t seq) {
  return UpdateTag{.writer = "/job:worker/task:" + std::to_string(worker) +
                             "#" + std::to_string(100 + worker),
                   .seq = seq};
}

// The backup's copy of a barrier whose primary chose worker 1 (runs `t0`
// and `t1` arrived for step 0) and then died, mid-apply.
std::shared_ptr<SyncBarrier> BackupAfterTheChoice(const UpdateTag& t0,
                                                  const UpdateTag& t1) {
  CancellationManager run0, run1;
  BarrierOutcome w0, w1;
  std::shared_ptr<SyncBarrier> primary = SyncBarrier::Create(TwoLiveWorkers());
  BothArrive(*primary, run0, run1, w0, w1, &t0, &t1);
  std::shared_ptr<SyncBarrier> backup = SyncBarrier::Create(TwoLiveWorkers());
  EXPECT_TRUE(backup->Load(primary->Save().bytes).ok());
  return backup;
}

TEST(SyncBarrierTest, TheChosenApplierStaysChosenOnTheBackup) {
  const UpdateTag t0 = TaggedRun(0, 7), t1 = TaggedRun(1, 9);
  std::shared_ptr<SyncBarrier> backup = BackupAfterTheChoice(t0, t1);
  // Both retry (the same tags). Worker 0 arrives first and completes
  // nothing: worker 1's retry is the applier.
  CancellationManager retry0, retry1;
  BarrierOutcome r0, r1;
  backup->Arrive(0, 2, &retry0, &t0, r0.done());
  EXPECT_EQ(r0.told, -1);
  backup->Arrive(0, 2, &retry1, &t1, r1.done());
  EXPECT_EQ(r1.told, 1);
  EXPECT_EQ(r0.told, -1);
  backup->Advance(0);
  EXPECT_EQ(r0.told, 0);
}

TEST(SyncBarrierTest, ARetriedRunTakesPartInItsFirstStep) {
  std::shared_ptr<SyncBarrier> b = SyncBarrier::Create(TwoLiveWorkers());
  CancellationManager run0, run1, retry;
  BarrierOutcome w0, w1, again;
  const UpdateTag t0 = TaggedRun(0, 1), t1 = TaggedRun(1, 1);
  BothArrive(*b, run0, run1, w0, w1, &t0, &t1);
  b->Advance(0);
  ASSERT_EQ(w0.told, 0);
  // Worker 0's run ended, but its answer was lost: its retry read the new
  // step count (1). It took part in step 0, which has ended: it goes on
  // at once instead of counting towards step 1 (where it would make the
  // worker take part in one step more than it ran).
  b->Arrive(1, 2, &retry, &t0, again.done());
  EXPECT_EQ(again.told, 0);
  // Step 1 still needs both workers' next runs.
  CancellationManager next0, next1;
  BarrierOutcome n0, n1;
  const UpdateTag u0 = TaggedRun(0, 2), u1 = TaggedRun(1, 2);
  b->Arrive(1, 2, &next1, &u1, n1.done());
  EXPECT_EQ(n1.told, -1);
  b->Arrive(1, 2, &next0, &u0, n0.done());
  EXPECT_EQ(n0.told, 1);
}

TEST(SyncBarrierTest, ARetriedApplierEndsTheStepItArrivedFor) {
  const UpdateTag t0 = TaggedRun(0, 4), t1 = TaggedRun(1, 4);
  std::shared_ptr<SyncBarrier> backup = BackupAfterTheChoice(t0, t1);
  CancellationManager retry0, retry1;
  BarrierOutcome r0, r1;
  // The first attempt counted step 0 but did not end it: the retries read
  // the step count 1. They take part in step 0 all the same...
  backup->Arrive(1, 2, &retry0, &t0, r0.done());
  backup->Arrive(1, 2, &retry1, &t1, r1.done());
  EXPECT_EQ(r1.told, 1);
  EXPECT_EQ(r0.told, -1);
  // ...and the applier, ending "step 1" as it read it, ends step 0.
  backup->Advance(1, &t1);
  EXPECT_EQ(r0.told, 0);
}

TEST(SyncBarrierTest, AnArrivalAgainReplacesTheEarlierOne) {
  std::shared_ptr<SyncBarrier> b = SyncBarrier::Create(TwoLiveWorkers());
  CancellationManager first, retry, other;
  BarrierOutcome w0, r0, w1;
  const UpdateTag t0 = TaggedRun(0, 3), t1 = TaggedRun(1, 3);
  // Worker 0's run arrives, fails elsewhere, and arrives again: it counts
  // once, so one worker alone never completes the set of 2.
  b->Arrive(0, 2, &first, &t0, w0.done());
  b->Arrive(0, 2, &retry, &t0, r0.done());
  EXPECT_EQ(w0.told, 0);  // the earlier attempt goes on, not counted
  EXPECT_EQ(r0.told, -1);
  b->Arrive(0, 2, &other, &t1, w1.done());
  EXPECT_EQ(w1.told, 1);
  EXPECT_EQ(r0.told, -1);
}

TEST(SyncBarrierTest, TheNextStepWaitsForTheChosenApplier) {
  const UpdateTag t0 = TaggedRun(0, 5), t1 = TaggedRun(1, 5);
  std::shared_ptr<SyncBarrier> backup = BackupAfterTheChoice(t0, t1);
  // The backup's copy of the step count may be ahead of its copy of the
  // barrier: worker 0's next run arrives for step 1 before worker 1's
  // retry has ended step 0. It waits for that.
  CancellationManager next0, retry1;
  BarrierOutcome n0, r1;
  const UpdateTag u0 = TaggedRun(0, 6);
  backup->Arrive(1, 2, &next0, &u0, n0.done());
  EXPECT_EQ(n0.told, -1);
  backup->Arrive(0, 2, &retry1, &t1, r1.done());
  EXPECT_EQ(r1.told, 1);
  backup->Advance(0);
  EXPECT_EQ(n0.told, -1);  // now counting towards step 1
}

TEST(SyncBarrierTest, AChosenApplierWhoseWorkerRestartedIsDropped) {
  std::shared_ptr<SyncBarrier> b = SyncBarrier::Create(TwoLiveWorkers());
  CancellationManager run0, run1;
  BarrierOutcome w0, w1;
  const UpdateTag t0 = TaggedRun(0, 5), t1 = TaggedRun(1, 5);
  BothArrive(*b, run0, run1, w0, w1, &t0, &t1);
  run1.StartCancel();  // worker 1 dies before Advance
  EXPECT_EQ(w0.told, -1);
  // It comes back as a new process (another incarnation): the old one's
  // choice is dropped, and the step's set is made again.
  CancellationManager fresh;
  BarrierOutcome f;
  const UpdateTag restarted{.writer = "/job:worker/task:1#555", .seq = 0};
  b->Arrive(0, 2, &fresh, &restarted, f.done());
  EXPECT_EQ(f.told, 1);
}

TEST(SyncBarrierTest, AMalformedCopyIsRefused) {
  std::shared_ptr<SyncBarrier> b = SyncBarrier::Create(TwoLiveWorkers());
  EXPECT_EQ(b->Load("\xff\xff\xff").code(), absl::StatusCode::kDataLoss);
}

}  // namespace tagged
}  // namespace
}  // namespace runnel
