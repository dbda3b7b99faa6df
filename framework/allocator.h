// Device memory allocators.
//
// An Allocator hands out raw, aligned memory for tensor buffers. Each device
// owns one; the CPU one returns 64-byte-aligned blocks. Implementations must
// be thread-safe: kernels on many threads allocate at once.
#ifndef RUNNEL_FRAMEWORK_ALLOCATOR_H_
#define RUNNEL_FRAMEWORK_ALLOCATOR_H_

#include <atomic>
#include <cstddef>
#include <new>
#include <string>

namespace runnel {

inline constexpr size_t kTensorAlignment = 64;

// Thrown by a Tensor whose buffer cannot be allocated (the only exception
// the runtime raises). It never crosses the runtime's API: kernels run
// inside ComputeSafely (framework/kernel.h), which turns it into
// "<op>: out of memory (N bytes requested)", and the interpreter catches it
// around the host code that makes tensors itself.
class AllocationFailed : public std::bad_alloc {
 public:
  explicit AllocationFailed(size_t bytes, std::string detail = "")
      : bytes_(bytes), detail_(std::move(detail)) {}
  const char* what() const noexcept override { return "out of memory"; }
  // SIZE_MAX when the byte count itself overflowed.
  size_t bytes() const { return bytes_; }
  // The allocator's state when it failed (Allocator::OutOfMemoryDetail).
  const std::string& detail() const { return detail_; }

 private:
  size_t bytes_;
  std::string detail_;
};

// "out of memory (N bytes requested)", or with a detail "out of memory (N
// bytes requested; gpu:0: 1.5 GiB in use, ...)".
std::string OutOfMemoryMessage(size_t bytes, const std::string& detail = "");

class Allocator {
 public:
  virtual ~Allocator() = default;
  virtual std::string Name() const = 0;
  // Returns memory aligned to at least `alignment`, or nullptr when exhausted.
  virtual void* Allocate(size_t bytes, size_t alignment) = 0;
  virtual void Deallocate(void* ptr, size_t bytes) = 0;
  // What an out-of-memory error adds after the size: the memory in use,
  // reserved and its limit, for allocators that know them.
  virtual std::string OutOfMemoryDetail() const { return ""; }
};

// The process-wide CPU allocator (aligned_alloc with a live-bytes counter).
class CpuAllocator final : public Allocator {
 public:
  static CpuAllocator* Get();
  std::string Name() const override { return "cpu"; }
  void* Allocate(size_t bytes, size_t alignment) override;
  void Deallocate(void* ptr, size_t bytes) override;
  size_t bytes_in_use() const { return bytes_in_use_.load(); }
  // The most bytes in use at once since the last ResetPeak (tests measure
  // what a run holds at its height).
  size_t peak_bytes_in_use() const { return peak_.load(); }
  void ResetPeak() { peak_.store(bytes_in_use_.load()); }

 private:
  std::atomic<size_t> bytes_in_use_{0};
  std::atomic<size_t> peak_{0};
};

}  // namespace runnel

#endif  // RUNNEL_FRAMEWORK_ALLOCATOR_H_
