// Which workers a parameter server counts as alive
// (framework/live_workers.h): one never heard from counts, one that left
// does not, one silent for 3 s stops counting until it beats again, and
// subscribers hear every change.
#include "framework/live_workers.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <thread>

namespace runnel {
namespace {

// Counts the notifications and lets a test wait for the next one.
class Changes {
 public:
  explicit Changes(LiveWorkers& w)
      : w_(w), id_(w.Subscribe([this] {
          std::lock_guard<std::mutex> lock(mu_);
          ++count_;
          cv_.notify_all();
        })) {}
  ~Changes() { w_.Unsubscribe(id_); }
  int count() {
    std::lock_guard<std::mutex> lock(mu_);
    return count_;
  }
  // Waits until more than `seen` notifications arrived (a latch; the bound
  // only ends a test that would otherwise hang).
  bool WaitBeyond(int seen) {
    std::unique_lock<std::mutex> lock(mu_);
    return cv_.wait_for(lock, std::chrono::seconds(30),
                        [&] { return count_ > seen; });
  }

 private:
  LiveWorkers& w_;
  std::mutex mu_;
  std::condition_variable cv_;
  int count_ = 0;
  const int id_;
};

TEST(LiveWorkersTest, LeavingStopsCountingAndComingBackCountsAgain) {
  LiveWorkers w(3);
  Changes changes(w);
  EXPECT_EQ(w.Count(), 3);  // none heard from yet: all count
  w.Beat("/job:worker/task:0", false);
  EXPECT_EQ(w.Count(), 3);
  EXPECT_EQ(changes.count(), 0);  // a first heartbeat changes nothing
  w.Beat("/job:worker/task:1", true);
  EXPECT_EQ(w.Count(), 2);
  EXPECT_EQ(changes.count(), 1);
  w.Beat("/job:worker/task:1", false);  // restarted
  EXPECT_EQ(w.Count(), 3);
  EXPECT_EQ(changes.count(), 2);
}

TEST(LiveWorkersTest, WorkersBeyondTheSpecCountOnceSeen) {
  LiveWorkers w(1);
  w.Beat("/job:worker/task:0", false);
  w.Beat("/job:worker/task:1", false);
  EXPECT_EQ(w.Count(), 2);
  w.Beat("/job:worker/task:1", true);
  EXPECT_EQ(w.Count(), 1);
}

TEST(LiveWorkersTest, ASilentWorkerStopsCountingUntilItBeatsAgain) {
  LiveWorkers w(2);
  Changes changes(w);
  w.Beat("/job:worker/task:0", false);
  w.Beat("/job:worker/task:1", false);
  // Only task 1 keeps beating (as a worker does, every half second):
  // task 0 falls silent after 3 s, and the change is announced.
  const int before = changes.count();
  std::atomic<bool> stop{false};
  std::thread beater([&] {
    while (!stop.load()) {
      w.Beat("/job:worker/task:1", false);
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
  });
  const bool announced = changes.WaitBeyond(before);
  const int alive = w.Count();
  stop.store(true);
  beater.join();
  ASSERT_TRUE(announced);
  EXPECT_EQ(alive, 1);
  w.Beat("/job:worker/task:0", false);
  EXPECT_EQ(w.Count(), 2);
}

}  // namespace
}  // namespace runnel
