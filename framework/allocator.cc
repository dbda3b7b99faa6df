#include "framework/allocator.h"

#include <malloc.h>

#include <cstdint>
#include <cstdlib>

#include "base/strings.h"

namespace runnel {

std::string OutOfMemoryMessage(size_t bytes, const std::string& detail) {
  if (bytes == SIZE_MAX) {
    return "out of memory (more than 2^64 bytes requested)";
  }
  return StrCat("out of memory (", bytes, " bytes requested",
                detail.empty() ? "" : "; ", detail, ")");
}

CpuAllocator* CpuAllocator::Get() {
  static CpuAllocator* const kAllocator = [] {
    // Training allocates and frees the same large buffers every step. By
    // default glibc serves blocks past its mmap threshold (at most 32 MB)
    // straight from the OS and unmaps them on free, so each step pays page
    // faults again (~30 ms for 34 MB). Keep such blocks in the heap.
    mallopt(M_MMAP_THRESHOLD, 512 << 20);
    mallopt(M_TRIM_THRESHOLD, 1024 << 20);
    return new CpuAllocator();
  }();
  return kAllocator;
}

void* CpuAllocator::Allocate(size_t bytes, size_t alignment) {
  if (alignment < kTensorAlignment) alignment = kTensorAlignment;
  if (bytes > SIZE_MAX - alignment) return nullptr;
  // aligned_alloc needs a size that is a multiple of the alignment.
  size_t rounded = (bytes + alignment - 1) / alignment * alignment;
  if (rounded == 0) rounded = alignment;
  void* p = std::aligned_alloc(alignment, rounded);
  if (p) {
    const size_t now =
        bytes_in_use_.fetch_add(bytes, std::memory_order_relaxed) + bytes;
    size_t peak = peak_.load(std::memory_order_relaxed);
    while (now > peak &&
           !peak_.compare_exchange_weak(peak, now, std::memory_order_relaxed)) {
    }
  }
  return p;
}

void CpuAllocator::Deallocate(void* ptr, size_t bytes) {
  if (!ptr) return;
  bytes_in_use_.fetch_sub(bytes, std::memory_order_relaxed);
  std::free(ptr);
}

}  // namespace runnel
