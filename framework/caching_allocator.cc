#include "framework/caching_allocator.h"

#include <algorithm>
#include <cstdio>
#include <tuple>

#include "base/strings.h"

namespace runnel {
namespace {

size_t RoundUp(size_t n, size_t unit) { return (n + unit - 1) / unit * unit; }

}  // namespace

std::string FormatBytes(size_t n) {
  static constexpr const char* kUnits[] = {"KiB", "MiB", "GiB", "TiB"};
  if (n < 1024) return StrCat(n, " bytes");
  double v = static_cast<double>(n);
  int u = -1;
  while (v >= 1024 && u < 3) {
    v /= 1024;
    ++u;
  }
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.4g %s", v, kUnits[u]);
  return buf;
}

bool CachingAllocator::BySize::operator()(const Block* a,
                                          const Block* b) const {
  return std::tie(a->stream, a->size, a->ptr) <
         std::tie(b->stream, b->size, b->ptr);
}

CachingAllocator::CachingAllocator(RawAllocator* raw,
                                   CachingAllocatorOptions options)
    : raw_(raw), options_(options) {
  options_.alignment = std::max<size_t>(options_.alignment, 1);
  options_.segment_granularity = RoundUp(
      std::max<size_t>(options_.segment_granularity, 1), options_.alignment);
}

CachingAllocator::~CachingAllocator() {
  for (auto& [ptr, b] : blocks_) {
    if (b->prev == nullptr) raw_->Free(ptr);  // a segment's first block
  }
}

size_t CachingAllocator::Round(size_t bytes) const {
  return RoundUp(std::max<size_t>(bytes, 1), options_.alignment);
}

void* CachingAllocator::Allocate(size_t bytes, int stream) {
  if (bytes > SIZE_MAX / 2) return nullptr;
  const size_t size = Round(bytes);
  std::lock_guard<std::mutex> lock(mu_);
  Block* b = FindFree(size, stream);
  if (b == nullptr) b = NewSegment(size, stream);
  if (b == nullptr) {
    // Cached segments of other sizes (or other streams) may be what stands
    // in the way: give them back and try once more.
    ++stats_.cache_flushes;
    EmptyCacheLocked();
    b = NewSegment(size, stream);
  }
  return b == nullptr ? nullptr : Take(b, size);
}

CachingAllocator::Block* CachingAllocator::FindFree(size_t size, int stream) {
  Block key;
  key.stream = stream;
  key.size = size;
  auto it = free_.lower_bound(&key);
  if (it == free_.end() || (*it)->stream != stream) return nullptr;
  Block* b = *it;
  free_.erase(it);
  return b;
}

CachingAllocator::Block* CachingAllocator::NewSegment(size_t size, int stream) {
  const size_t seg = RoundUp(size, options_.segment_granularity);
  if (options_.limit != 0 &&
      (seg > options_.limit || stats_.reserved > options_.limit - seg)) {
    return nullptr;
  }
  void* p = raw_->Alloc(seg);
  if (p == nullptr) return nullptr;
  auto owned = std::make_unique<Block>();
  Block* b = owned.get();
  b->ptr = static_cast<char*>(p);
  b->size = seg;
  b->stream = stream;
  blocks_.emplace(b->ptr, std::move(owned));
  stats_.reserved += seg;
  stats_.peak_reserved = std::max(stats_.peak_reserved, stats_.reserved);
  ++stats_.segments;
  return b;
}

void* CachingAllocator::Take(Block* b, size_t size) {
  if (b->size - size >= options_.alignment) {
    auto owned = std::make_unique<Block>();
    Block* rest = owned.get();
    rest->ptr = b->ptr + size;
    rest->size = b->size - size;
    rest->stream = b->stream;
    rest->prev = b;
    rest->next = b->next;
    if (b->next != nullptr) b->next->prev = rest;
    b->next = rest;
    b->size = size;
    blocks_.emplace(rest->ptr, std::move(owned));
    free_.insert(rest);
  }
  b->in_use = true;
  stats_.in_use += b->size;
  stats_.peak_in_use = std::max(stats_.peak_in_use, stats_.in_use);
  return b->ptr;
}

void CachingAllocator::MergeInto(Block* into, Block* gone) {
  // `gone` directly follows `into`; both are free and out of free_.
  into->size += gone->size;
  into->next = gone->next;
  if (gone->next != nullptr) gone->next->prev = into;
  blocks_.erase(gone->ptr);
}

void CachingAllocator::Free(void* ptr) {
  if (ptr == nullptr) return;
  std::lock_guard<std::mutex> lock(mu_);
  auto it = blocks_.find(static_cast<char*>(ptr));
  if (it == blocks_.end() || !it->second->in_use) return;
  Block* b = it->second.get();
  b->in_use = false;
  stats_.in_use -= b->size;
  if (b->next != nullptr && !b->next->in_use) {
    free_.erase(b->next);
    MergeInto(b, b->next);
  }
  if (b->prev != nullptr && !b->prev->in_use) {
    Block* prev = b->prev;
    free_.erase(prev);
    MergeInto(prev, b);
    b = prev;
  }
  free_.insert(b);
}

void CachingAllocator::EmptyCache() {
  std::lock_guard<std::mutex> lock(mu_);
  EmptyCacheLocked();
}

void CachingAllocator::EmptyCacheLocked() {
  for (auto it = free_.begin(); it != free_.end();) {
    Block* b = *it;
    if (b->prev != nullptr || b->next != nullptr) {  // part of a segment
      ++it;
      continue;
    }
    it = free_.erase(it);
    stats_.reserved -= b->size;
    --stats_.segments;
    raw_->Free(b->ptr);
    blocks_.erase(b->ptr);
  }
}

void CachingAllocator::SetLimit(size_t limit) {
  std::lock_guard<std::mutex> lock(mu_);
  options_.limit = limit;
}

size_t CachingAllocator::limit() const {
  std::lock_guard<std::mutex> lock(mu_);
  return options_.limit;
}

CachingAllocatorStats CachingAllocator::stats() const {
  std::lock_guard<std::mutex> lock(mu_);
  return stats_;
}

std::string CachingAllocator::Describe() const {
  const CachingAllocatorStats s = stats();
  const size_t cap = limit();
  return StrCat(
      FormatBytes(s.in_use), " in use, ", FormatBytes(s.reserved), " reserved",
      cap == 0 ? std::string() : StrCat(", limit ", FormatBytes(cap)));
}

void* StreamAllocator::Allocate(size_t bytes, size_t alignment) {
  // Blocks start at multiples of the cache's alignment within segments
  // that cudaMalloc aligns to 256 bytes.
  if (alignment > 256) return nullptr;
  return cache_->Allocate(bytes, stream_);
}

std::string StreamAllocator::OutOfMemoryDetail() const {
  return StrCat(name_, ": ", cache_->Describe());
}

}  // namespace runnel
