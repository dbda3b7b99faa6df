// CachingAllocator over a fake raw allocator with a capacity: best fit,
// splitting, coalescing in every free order, the limit, giving back the
// cache to retry, per-stream pools, stats, and many threads at once.
#include "framework/caching_allocator.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <random>
#include <thread>
#include <vector>

#include "framework/tensor.h"

namespace runnel {
namespace {

// Real memory (the stress test writes it), at most `capacity` bytes live.
class FakeRaw : public RawAllocator {
 public:
  explicit FakeRaw(size_t capacity) : capacity_(capacity) {}
  ~FakeRaw() override { EXPECT_EQ(live_, 0u) << "segments leaked"; }
  void* Alloc(size_t bytes) override {
    if (bytes > capacity_ - live_) return nullptr;
    void* p = std::aligned_alloc(256, bytes);
    live_ += bytes;
    sizes_.emplace_back(p, bytes);
    ++allocs;
    return p;
  }
  void Free(void* ptr) override {
    auto it = std::find_if(sizes_.begin(), sizes_.end(),
                           [&](const auto& e) { return e.first == ptr; });
    ASSERT_NE(it, sizes_.end()) << "freed what it never gave";
    live_ -= it->second;
    sizes_.erase(it);
    std::free(ptr);
    ++frees;
  }
  size_t live() const { return live_; }
  int allocs = 0, frees = 0;

 private:
  size_t capacity_;
  size_t live_ = 0;
  std::vector<std::pair<void*, size_t>> sizes_;
};

// Small units so that tests can lay out a segment by hand.
constexpr CachingAllocatorOptions kSmall{
    .limit = 0, .alignment = 256, .segment_granularity = 4096};

char* C(void* p) { return static_cast<char*>(p); }

TEST(CachingAllocatorTest, TakesTheSmallestFreeBlockThatFits) {
  FakeRaw raw(1 << 20);
  CachingAllocator cache(&raw, kSmall);
  // One 4096-byte segment: a(1024) s1(256) b(512) s2(256) c(2048).
  char* a = C(cache.Allocate(1024, 0));
  char* s1 = C(cache.Allocate(256, 0));
  char* b = C(cache.Allocate(512, 0));
  char* s2 = C(cache.Allocate(256, 0));
  char* c = C(cache.Allocate(2048, 0));
  ASSERT_EQ(raw.allocs, 1);
  EXPECT_EQ(s1, a + 1024);
  EXPECT_EQ(b, a + 1280);
  EXPECT_EQ(s2, a + 1792);
  EXPECT_EQ(c, a + 2048);
  cache.Free(a);
  cache.Free(b);
  cache.Free(c);
  // Free now: 1024 at a, 512 at b, 2048 at c (kept apart by s1 and s2).
  EXPECT_EQ(cache.Allocate(400, 0), b);   // 512 fits best
  EXPECT_EQ(cache.Allocate(1000, 0), a);  // then 1024
  EXPECT_EQ(cache.Allocate(1500, 0), c);  // 2048, split: 512 stay free
  EXPECT_EQ(cache.Allocate(512, 0), c + 1536);
  EXPECT_EQ(raw.allocs, 1);
  EXPECT_EQ(cache.stats().in_use, 4096u);
  EXPECT_EQ(cache.stats().reserved, 4096u);
}

TEST(CachingAllocatorTest, SplitsASegmentAndRoundsSizes) {
  FakeRaw raw(1 << 20);
  CachingAllocator cache(&raw, kSmall);
  char* p = C(cache.Allocate(1, 0));
  char* q = C(cache.Allocate(0, 0));  // an empty tensor still gets a block
  char* r = C(cache.Allocate(3584, 0));
  EXPECT_EQ(q, p + 256);
  EXPECT_EQ(r, p + 512);
  EXPECT_EQ(raw.allocs, 1);
  EXPECT_EQ(cache.stats().in_use, 4096u);
  // A request past the granularity takes a segment of its rounded size.
  char* big = C(cache.Allocate(5000, 0));
  EXPECT_NE(big, nullptr);
  EXPECT_EQ(raw.allocs, 2);
  EXPECT_EQ(cache.stats().reserved, 4096u + 8192u);
  EXPECT_EQ(cache.stats().in_use, 4096u + 5120u);
  for (char* x : {p, q, r, big}) cache.Free(x);
}

TEST(CachingAllocatorTest, CoalescesNeighboursInEveryFreeOrder) {
  std::vector<int> order = {0, 1, 2, 3};
  do {
    FakeRaw raw(1 << 20);
    CachingAllocator cache(&raw, kSmall);
    std::vector<void*> p = {cache.Allocate(1024, 0), cache.Allocate(512, 0),
                            cache.Allocate(512, 0), cache.Allocate(2048, 0)};
    ASSERT_EQ(raw.allocs, 1);
    for (int i : order) cache.Free(p[i]);
    EXPECT_EQ(cache.stats().in_use, 0u);
    // Merged back into one block: the whole segment fits again.
    EXPECT_EQ(cache.Allocate(4096, 0), p[0]);
    EXPECT_EQ(raw.allocs, 1);
    cache.Free(p[0]);
    cache.EmptyCache();
    EXPECT_EQ(raw.frees, 1)
        << "order " << order[0] << order[1] << order[2] << order[3];
    EXPECT_EQ(cache.stats().reserved, 0u);
  } while (std::next_permutation(order.begin(), order.end()));
}

TEST(CachingAllocatorTest, EmptyCacheKeepsSegmentsWithBlocksInUse) {
  FakeRaw raw(1 << 20);
  CachingAllocator cache(&raw, kSmall);
  void* a = cache.Allocate(4096, 0);
  void* b = cache.Allocate(1024, 0);
  void* c = cache.Allocate(1024, 0);  // same segment as b
  cache.Free(a);
  cache.Free(b);
  cache.EmptyCache();
  EXPECT_EQ(raw.frees, 1);  // a's segment; b's holds c
  EXPECT_EQ(cache.stats().reserved, 4096u);
  cache.Free(c);
}

TEST(CachingAllocatorTest, TheLimitCapsWhatItReserves) {
  FakeRaw raw(1 << 20);
  CachingAllocatorOptions options = kSmall;
  options.limit = 8192;
  CachingAllocator cache(&raw, options);
  void* a = cache.Allocate(4096, 0);
  void* b = cache.Allocate(4000, 0);
  ASSERT_NE(a, nullptr);
  ASSERT_NE(b, nullptr);
  EXPECT_EQ(cache.Allocate(1, 0), nullptr);
  EXPECT_EQ(cache.Allocate(16384, 0), nullptr);  // alone past the limit
  EXPECT_EQ(raw.allocs, 2);
  EXPECT_EQ(cache.Describe(), "8 KiB in use, 8 KiB reserved, limit 8 KiB");
  cache.SetLimit(12288);
  void* c = cache.Allocate(1, 0);
  EXPECT_NE(c, nullptr);
  for (void* x : {a, b, c}) cache.Free(x);
}

TEST(CachingAllocatorTest, GivesBackItsCacheAndRetriesBeforeFailing) {
  FakeRaw raw(8192);
  CachingAllocator cache(&raw, kSmall);
  cache.Free(cache.Allocate(4096, 0));  // cached: 4096 of 8192 held
  cache.Free(cache.Allocate(2048, 1));  // another stream's, cached too
  ASSERT_EQ(raw.live(), 8192u);
  // Nothing cached is big enough and the raw memory is all held: the cache
  // goes back, then the segment fits.
  void* big = cache.Allocate(8192, 0);
  ASSERT_NE(big, nullptr);
  EXPECT_EQ(cache.stats().cache_flushes, 1);
  EXPECT_EQ(cache.stats().reserved, 8192u);
  EXPECT_EQ(cache.stats().segments, 1);
  // Now it is truly exhausted: the retry finds nothing to give back.
  EXPECT_EQ(cache.Allocate(1, 0), nullptr);
  EXPECT_EQ(cache.stats().cache_flushes, 2);
  EXPECT_EQ(cache.stats().in_use, 8192u);  // the held block is untouched
  cache.Free(big);
}

TEST(CachingAllocatorTest, StreamsKeepTheirOwnBlocks) {
  FakeRaw raw(1 << 20);
  CachingAllocator cache(&raw, kSmall);
  void* p = cache.Allocate(1024, 0);
  cache.Free(p);
  void* q = cache.Allocate(1024, 1);  // not stream 0's cached block
  EXPECT_NE(q, p);
  EXPECT_EQ(raw.allocs, 2);
  EXPECT_EQ(cache.Allocate(1024, 0), p);
  cache.Free(q);
  EXPECT_EQ(cache.Allocate(1024, 1), q);
  cache.Free(p);
  cache.Free(q);
}

TEST(CachingAllocatorTest, StatsTrackInUseReservedAndPeaks) {
  FakeRaw raw(1 << 20);
  CachingAllocator cache(&raw, kSmall);
  void* a = cache.Allocate(3000, 0);  // 3072 of a 4096 segment
  void* b = cache.Allocate(6000, 0);  // 6144 of an 8192 segment
  CachingAllocatorStats s = cache.stats();
  EXPECT_EQ(s.in_use, 3072u + 6144u);
  EXPECT_EQ(s.reserved, 4096u + 8192u);
  EXPECT_EQ(s.segments, 2);
  cache.Free(b);
  cache.EmptyCache();
  s = cache.stats();
  EXPECT_EQ(s.in_use, 3072u);
  EXPECT_EQ(s.reserved, 4096u);
  EXPECT_EQ(s.peak_in_use, 3072u + 6144u);
  EXPECT_EQ(s.peak_reserved, 4096u + 8192u);
  cache.Free(a);
}

TEST(CachingAllocatorTest, ATensorThatDoesNotFitNamesTheSizes) {
  FakeRaw raw(1 << 20);
  CachingAllocatorOptions options = kSmall;
  options.limit = 4096;
  CachingAllocator cache(&raw, options);
  StreamAllocator gpu("gpu:0", &cache, 0);
  Tensor held(DType::kF32, Shape{1024}, &gpu);  // 4096 bytes: all of it
  try {
    Tensor more(DType::kF32, Shape{10}, &gpu);
    FAIL() << "allocated past the limit";
  } catch (const AllocationFailed& e) {
    EXPECT_EQ(OutOfMemoryMessage(e.bytes(), e.detail()),
              "out of memory (40 bytes requested; gpu:0: 4 KiB in use, "
              "4 KiB reserved, limit 4 KiB)");
  }
}

// Threads allocate, fill, check and free blocks at random on two streams:
// no block is handed out twice, and everything adds up at the end.
TEST(CachingAllocatorTest, ManyThreadsAtOnce) {
  FakeRaw raw(size_t{64} << 20);
  CachingAllocator cache(&raw,
                         {.alignment = 256, .segment_granularity = 64 << 10});
  constexpr int kThreads = 4;
  std::vector<std::thread> threads;
  std::vector<int> errors(kThreads, 0);
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      std::mt19937 rng(t);
      std::vector<std::pair<unsigned char*, size_t>> held;
      for (int step = 0; step < 3000; ++step) {
        if (held.size() < 16 && (held.empty() || rng() % 2 == 0)) {
          const size_t n = 1 + rng() % (48 << 10);
          auto* p = static_cast<unsigned char*>(cache.Allocate(n, t % 2));
          if (p == nullptr) {
            ++errors[t];
            continue;
          }
          std::memset(p, static_cast<int>(step & 0xff), n);
          held.emplace_back(p, n);
        } else {
          const size_t k = rng() % held.size();
          auto [p, n] = held[k];
          const unsigned char v = p[0];
          for (size_t i = 0; i < n; ++i) errors[t] += p[i] != v;
          cache.Free(p);
          held.erase(held.begin() + k);
        }
      }
      for (auto [p, n] : held) cache.Free(p);
    });
  }
  for (auto& th : threads) th.join();
  for (int t = 0; t < kThreads; ++t) EXPECT_EQ(errors[t], 0) << t;
  EXPECT_EQ(cache.stats().in_use, 0u);
  cache.EmptyCache();
  EXPECT_EQ(cache.stats().reserved, 0u);
  EXPECT_EQ(raw.live(), 0u);
}

}  // namespace
}  // namespace runnel
