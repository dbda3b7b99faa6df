// The watch that finds a silent primary by probing it while calls to it
// are out (distributed/primary_watch.h). The probes here are fakes that
// answer as told; the watch's effect on real calls (their contexts
// cancelled) is seen through ClientContext's cancel flag, and end to end
// in tests/cluster/replica_test.py (a primary paused with SIGSTOP).
#include "distributed/primary_watch.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <functional>
#include <future>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

namespace runnel {
namespace {

using std::chrono::milliseconds;

// A probe that records whom it asked and answers `answers`.
struct WatchProbe {
  std::mutex mu;
  std::vector<std::string> asked;
  std::atomic<bool> answers{true};

  PrimaryWatch::Probe Fn() {
    return [this](const std::string& address, double,
                  std::function<void(bool)> answered) {
      {
        std::lock_guard<std::mutex> lock(mu);
        asked.push_back(address);
      }
      answered(answers.load());
    };
  }
  int Count(const std::string& address) {
    std::lock_guard<std::mutex> lock(mu);
    return static_cast<int>(std::count(asked.begin(), asked.end(), address));
  }
};

constexpr PrimaryWatch::Options kQuickWatch{
    .quiet_s = 0.1, .deadline_s = 0.1, .tick_s = 0.01};

TEST(PrimaryWatchTest, ASilentPrimaryHasItsCallsCancelled) {
  WatchProbe probe;
  probe.answers = false;
  PrimaryWatch watch(probe.Fn(), kQuickWatch);
  auto a = std::make_shared<grpc::ClientContext>();
  auto b = std::make_shared<grpc::ClientContext>();
  auto other = std::make_shared<grpc::ClientContext>();
  const int64_t ia = watch.Add("10.0.0.1:1", a);
  const int64_t ib = watch.Add("10.0.0.1:1", b);
  const int64_t io = watch.Add("10.0.0.2:1", other);
  // Both addresses are probed once the calls have been out 0.1 s, and
  // every call out to a silent one is cancelled.
  std::this_thread::sleep_for(milliseconds(400));
  EXPECT_GE(probe.Count("10.0.0.1:1"), 1);
  EXPECT_EQ(watch.Remove(ia), std::optional<std::string>(
                                  "no answer to a status probe within 0.1 s"));
  EXPECT_TRUE(watch.Remove(ib).has_value());
  EXPECT_TRUE(watch.Remove(io).has_value());
  EXPECT_GE(watch.silent_probes(), 2);
  // A call is removed once; a second Remove knows nothing of it.
  EXPECT_EQ(watch.Remove(ia), std::nullopt);
}

TEST(PrimaryWatchTest, AnAnsweringPrimaryIsLeftAloneAndAskedAtMostEachQuiet) {
  WatchProbe probe;
  PrimaryWatch watch(probe.Fn(), kQuickWatch);
  const int64_t id =
      watch.Add("10.0.0.1:1", std::make_shared<grpc::ClientContext>());
  std::this_thread::sleep_for(milliseconds(550));
  // Out 0.55 s, probed from 0.1 s on, at most every 0.1 s: 1 to 5 probes
  // (the bound leaves room for a late tick, not for a probe per tick).
  const int asked = probe.Count("10.0.0.1:1");
  EXPECT_GE(asked, 1);
  EXPECT_LE(asked, 5);
  EXPECT_EQ(watch.Remove(id), std::nullopt);
  EXPECT_EQ(watch.silent_probes(), 0);
}

TEST(PrimaryWatchTest, ShortCallsAreNotProbed) {
  WatchProbe probe;
  probe.answers = false;
  PrimaryWatch watch(probe.Fn(),
                     {.quiet_s = 5, .deadline_s = 0.1, .tick_s = 0.01});
  for (int i = 0; i < 20; ++i) {
    const int64_t id =
        watch.Add("10.0.0.1:1", std::make_shared<grpc::ClientContext>());
    std::this_thread::sleep_for(milliseconds(5));
    EXPECT_EQ(watch.Remove(id), std::nullopt);
  }
  EXPECT_EQ(probe.Count("10.0.0.1:1"), 0);
}

TEST(PrimaryWatchTest, AProbeThatAnswersAfterTheWatchStoppedIsHarmless) {
  // The probe holds its callback and answers after the watch is gone, as a
  // gRPC call's callback may.
  std::promise<std::function<void(bool)>> held;
  std::future<std::function<void(bool)>> late = held.get_future();
  auto ctx = std::make_shared<grpc::ClientContext>();
  {
    // (Asked once: the address is not probed again before it answers.)
    PrimaryWatch watch(
        [&held](const std::string&, double, std::function<void(bool)> cb) {
          held.set_value(std::move(cb));
        },
        kQuickWatch);
    watch.Add("10.0.0.1:1", ctx);
    ASSERT_EQ(late.wait_for(std::chrono::seconds(5)),
              std::future_status::ready);
  }
  late.get()(
      false);  // cancels the context it still holds; nothing else is left
}

}  // namespace
}  // namespace runnel
