// A caching allocator for device memory (docs/gpu.md): the GPU device's
// tensors come from it, so that a training step, which frees and allocates
// the same sizes every step, does not call cudaMalloc/cudaFree (which
// synchronise the device) after the first steps.
//
//   FakeRaw raw(1 << 30);                       // or CudaRawAllocator
//   CachingAllocator cache(&raw, {.limit = 512 << 20});
//   void* p = cache.Allocate(1000, /*stream=*/0);
//   cache.Free(p);                              // cached, not given back
//
// Memory comes from a RawAllocator in segments, only as needed: a request
// takes the smallest cached free block of its stream that fits (best fit),
// splitting off the rest; a freed block merges with its free neighbours in
// the segment (coalescing). Only when nothing fits does it take a new
// segment, and when that fails (the raw allocator is out of memory, or the
// segment would pass `limit`) it gives every wholly free segment back and
// tries once more before returning nullptr.
//
// Per stream: a block freed on one stream is reused only by that stream,
// so a later kernel on it runs after the one that last used the block
// (stream order), with no event. Code that uses a block on another stream
// makes that stream wait for this one first (kernels/cuda/gpu_device.cc).
//
// Thread-safe: one mutex guards everything.
#ifndef RUNNEL_FRAMEWORK_CACHING_ALLOCATOR_H_
#define RUNNEL_FRAMEWORK_CACHING_ALLOCATOR_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <set>
#include <string>

#include "absl/container/flat_hash_map.h"
#include "framework/allocator.h"

namespace runnel {

// Where a CachingAllocator's segments come from: cudaMalloc and cudaFree
// for a GPU (kernels/cuda), a fake with a capacity in tests. Called with the
// allocator's mutex held.
class RawAllocator {
 public:
  virtual ~RawAllocator() = default;
  // nullptr when the memory is exhausted.
  virtual void* Alloc(size_t bytes) = 0;
  virtual void Free(void* ptr) = 0;
};

struct CachingAllocatorOptions {
  // The most bytes held from the raw allocator at once (`--gpu-memory`);
  // 0: no cap but the raw allocator's.
  size_t limit = 0;
  // Every block's size is a multiple of this, so blocks keep the alignment
  // of the raw allocator's segments (cudaMalloc: 256 bytes).
  size_t alignment = 512;
  // Segments are multiples of this, so small tensors share a segment.
  size_t segment_granularity = size_t{2} << 20;
};

struct CachingAllocatorStats {
  size_t in_use = 0;    // bytes in blocks handed out (rounded sizes)
  size_t reserved = 0;  // bytes in segments held from the raw allocator
  size_t peak_in_use = 0;
  size_t peak_reserved = 0;
  int64_t segments = 0;
  int64_t cache_flushes = 0;  // times it gave back its cache to retry
};

class CachingAllocator {
 public:
  CachingAllocator(RawAllocator* raw, CachingAllocatorOptions options = {});
  // Gives every segment back (blocks still in use too).
  ~CachingAllocator();
  CachingAllocator(const CachingAllocator&) = delete;
  CachingAllocator& operator=(const CachingAllocator&) = delete;

  // A block of at least `bytes` for `stream`, or nullptr when even after
  // giving back the cache no segment can be had.
  void* Allocate(size_t bytes, int stream);
  // `ptr` must come from Allocate and not be freed yet; nullptr is ignored.
  void Free(void* ptr);
  // Gives every wholly free segment back to the raw allocator.
  void EmptyCache();
  void SetLimit(size_t limit);
  size_t limit() const;

  CachingAllocatorStats stats() const;
  // For an out-of-memory error: "1.5 GiB in use, 1.9 GiB reserved, limit
  // 2 GiB".
  std::string Describe() const;

 private:
  struct Block {
    char* ptr = nullptr;
    size_t size = 0;
    int stream = 0;
    bool in_use = false;
    Block* prev = nullptr;  // neighbours in the segment
    Block* next = nullptr;
  };
  // Free blocks ordered by (stream, size, address): best fit is a
  // lower_bound.
  struct BySize {
    bool operator()(const Block* a, const Block* b) const;
  };

  size_t Round(size_t bytes) const;
  Block* FindFree(size_t size, int stream);
  Block* NewSegment(size_t size, int stream);
  void EmptyCacheLocked();
  // Hands out `b`, splitting off what `size` leaves.
  void* Take(Block* b, size_t size);
  void MergeInto(Block* into, Block* gone);

  RawAllocator* raw_;
  CachingAllocatorOptions options_;
  mutable std::mutex mu_;
  // Every block, free or in use, by its address.
  absl::flat_hash_map<char*, std::unique_ptr<Block>> blocks_;
  std::set<Block*, BySize> free_;
  CachingAllocatorStats stats_;
};

// "1.5 GiB", "512 KiB", "100 bytes": sizes in messages and `:devices`.
std::string FormatBytes(size_t n);

// The Allocator (framework/allocator.h) of one stream of a CachingAllocator:
// what a GPU device gives kernels for their outputs.
class StreamAllocator final : public Allocator {
 public:
  StreamAllocator(std::string name, CachingAllocator* cache, int stream)
      : name_(std::move(name)), cache_(cache), stream_(stream) {}
  std::string Name() const override { return name_; }
  void* Allocate(size_t bytes, size_t alignment) override;
  void Deallocate(void* ptr, size_t bytes) override { cache_->Free(ptr); }
  std::string OutOfMemoryDetail() const override;

 private:
  std::string name_;
  CachingAllocator* cache_;
  int stream_;
};

}  // namespace runnel

#endif  // RUNNEL_FRAMEWORK_CACHING_ALLOCATOR_H_
