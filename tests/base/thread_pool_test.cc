// ThreadPool: ParallelFor covers its range exactly once, Schedule runs
// everything before destruction returns.
#include "base/thread_pool.h"

#include <gtest/gtest.h>

#include <atomic>
#include <mutex>
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
