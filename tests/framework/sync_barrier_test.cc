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

// Workers 0 and 1 arrive for step 0 of 2 replicas: worker 1, completing
// the set, applies; worker 0 waits.
void BothArrive(SyncBarrier& b, CancellationManager& run0,
                CancellationManager& run1, BarrierOutcome& worker0,
                BarrierOutcome& worker1) {
  b.Arrive(0, 2, &run0, worker0.done());
  b.Arrive(0, 2, &run1, worker1.done());
  ASSERT_EQ(worker1.told, 1);
  ASSERT_EQ(worker0.told, -1);
}

TEST(SyncBarrierTest, TheArrivalThatCompletesTheSetApplies) {
  std::shared_ptr<SyncBarrier> b = SyncBarrier::Create(TwoLiveWorkers());
  CancellationManager run_a, run_b;
  BarrierOutcome a, b_out;
  b->Arrive(0, 2, &run_a, a.done());
  EXPECT_EQ(a.told, -1);  // waits for the second
  b->Arrive(0, 2, &run_b, b_out.done());
  EXPECT_EQ(b_out.told, 1);
  EXPECT_EQ(a.told, -1);  // until the step ends
  b->Advance(0);
  EXPECT_EQ(a.told, 0);
  // An arrival for the ended step goes on at once.
  BarrierOutcome late;
  b->Arrive(0, 2, &run_a, late.done());
  EXPECT_EQ(late.told, 0);
  // The applier's run ending after Advance changes nothing.
  run_b.StartCancel();
  BarrierOutcome c, d;
  b->Arrive(1, 2, &run_a, c.done());
  EXPECT_EQ(c.told, -1);
  b->Arrive(1, 2, &run_b, d.done());  // a cancelled run cannot apply
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
  b->Arrive(1, 2, &run2, early.done());
  EXPECT_EQ(early.told, -1);
  b->Advance(0);  // the applier ends step 0
  EXPECT_EQ(worker0.told, 0);
  EXPECT_EQ(early.told, -1);  // now waiting for step 1's set
  BarrierOutcome second;
  b->Arrive(1, 2, &run0, second.done());
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
  b->Arrive(1, 2, &run_a, next.done());
  EXPECT_EQ(next.told, 1);
}

TEST(SyncBarrierTest, ALiveApplierIsNotReplaced) {
  std::shared_ptr<LiveWorkers> live = TwoLiveWorkers();
  std::shared_ptr<SyncBarrier> b = SyncBarrier::Create(live);
  CancellationManager run_a, run_b;
  BarrierOutcome a, b_out;
  BothArrive(*b, run_a, run_b, a, b_out);
  // Worker 0 (waiting) leaves: the applier goes on alone.
  live->Beat("/job:worker/task:0", /*leaving=*/true);
  run_a.StartCancel();
  EXPECT_EQ(a.told, -1);
  b->Advance(0);
  EXPECT_EQ(a.told, 0);
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
  b->Arrive(1, 2, &run_a, c.done());
  b->Arrive(1, 2, &run_b, d.done());
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
  b->Arrive(2, 2, &run_a, e.done());
  b->Arrive(2, 2, &run_b, f.done());
  EXPECT_EQ(f.told, -1);
  failing.StartCancel();
  EXPECT_EQ(f.told, 1);
}

TEST(SyncBarrierTest, WithoutLiveWorkersOneArrivalApplies) {
  std::shared_ptr<SyncBarrier> b = SyncBarrier::Create(nullptr);
  BarrierOutcome a;
  b->Arrive(0, 3, nullptr, a.done());
  EXPECT_EQ(a.told, 1);
  BarrierOutcome stale;
  b->Advance(0);
  b->Arrive(0, 3, nullptr, stale.done());
  EXPECT_EQ(stale.told, 0);
}

}  // namespace
}  // namespace runnel
