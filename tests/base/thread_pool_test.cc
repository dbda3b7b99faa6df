// ThreadPool: ParallelFor and RunClaimed cover their range exactly once (also
// nested, and with helpers that start late), Schedule runs everything before
// destruction returns, threads carry the pool's name.
#include "base/thread_pool.h"

#include <gtest/gtest.h>
#include <pthread.h>

#include <atomic>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace runnel {
namespace {

TEST(ThreadPoolTest, ParallelForCoversTheRangeOnce) {
  ThreadPool pool(3);
  EXPECT_EQ(pool.num_threads(), 3);
  for (int64_t total : {0, 1, 7, 1000, 100003}) {
    std::vector<std::atomic<int>> hits(total);
    std::atomic<int64_t> shards{0};
    pool.ParallelFor(total, 1000, [&](int64_t begin, int64_t end) {
      ASSERT_LE(0, begin);
      ASSERT_LT(begin, end);
      ASSERT_LE(end, total);
      ++shards;
      for (int64_t i = begin; i < end; ++i) ++hits[i];
    });
    for (int64_t i = 0; i < total; ++i) ASSERT_EQ(hits[i].load(), 1) << i;
    if (total == 0) {
      EXPECT_EQ(shards.load(), 0);
    }
  }
}

TEST(ThreadPoolTest, SmallCheapRangesRunInlineInOneShard) {
  ThreadPool pool(4);
  std::vector<std::pair<int64_t, int64_t>> shards;
  std::mutex mu;
  pool.ParallelFor(10, 1, [&](int64_t begin, int64_t end) {
    std::lock_guard<std::mutex> l(mu);
    shards.emplace_back(begin, end);
  });
  ASSERT_EQ(shards.size(), 1u);
  EXPECT_EQ(shards[0], std::make_pair(int64_t{0}, int64_t{10}));
}

TEST(ThreadPoolTest, RunClaimedRunsEachItemOnce) {
  ThreadPool pool(3);
  for (int64_t count : {0, 1, 2, 5, 1000}) {
    std::vector<std::atomic<int>> hits(count);
    pool.RunClaimed(count, [&](int64_t i) {
      ASSERT_LE(0, i);
      ASSERT_LT(i, count);
      ++hits[i];
    });
    for (int64_t i = 0; i < count; ++i) ASSERT_EQ(hits[i].load(), 1) << i;
  }
}

// A helper may start after its caller returned (it found every item
// claimed): it must touch nothing of the caller's. Many short calls whose
// state lives on the caller's stack (`make asan` checks them).
TEST(ThreadPoolTest, RunClaimedOutlivesLateHelpers) {
  ThreadPool pool(2);
  int64_t total = 0;
  for (int round = 0; round < 2000; ++round) {
    std::vector<int64_t> values(4, round);
    std::atomic<int64_t> sum{0};
    pool.RunClaimed(4, [&](int64_t i) { sum += values[i]; });
    total += sum.load();
  }
  EXPECT_EQ(total, 4 * (1999 * 2000 / 2));
}

// Called from the pool's own threads, all of them at once: each call
// finishes, doing its items alone where no thread is free to help.
TEST(ThreadPoolTest, RunClaimedNestedInThePoolsThreads) {
  ThreadPool pool(2);
  std::atomic<int64_t> sum{0};
  std::atomic<int> done{0};
  for (int t = 0; t < 4; ++t) {
    pool.Schedule([&] {
      pool.RunClaimed(100, [&](int64_t i) { sum += i; });
      ++done;
    });
  }
  while (done.load() < 4) std::this_thread::yield();
  EXPECT_EQ(sum.load(), 4 * 4950);
}

TEST(ThreadPoolTest, ThreadsCarryThePoolsName) {
  std::string name;
  {
    ThreadPool pool(1, "runnel-test-pool-long-name");
    std::mutex mu;
    pool.Schedule([&] {
      char buf[32] = {};
      pthread_getname_np(pthread_self(), buf, sizeof(buf));
      std::lock_guard<std::mutex> l(mu);
      name = buf;
    });
  }
  EXPECT_EQ(name, "runnel-test-poo");  // Linux keeps 15 characters
}

TEST(ThreadPoolTest, DestructionWaitsForScheduledWork) {
  std::atomic<int> done{0};
  {
    ThreadPool pool(2);
    for (int i = 0; i < 100; ++i) pool.Schedule([&] { ++done; });
  }
  EXPECT_EQ(done.load(), 100);
  EXPECT_GE(ThreadPool::DefaultNumThreads(), 1);
}

}  // namespace
}  // namespace runnel
