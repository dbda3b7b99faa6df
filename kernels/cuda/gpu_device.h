// The GPU device (docs/gpu.md). Each visible GPU has one process-wide
// GpuContext, made on first use and kept to the end of the process:
//
//   - one compute stream, where every kernel runs in the order the
//     executor starts them, and two copy streams (host to device, device
//     to host), ordered against it by events;
//   - a caching allocator (framework/caching_allocator.h) over cudaMalloc,
//     whose compute-stream pool gives kernels their outputs;
//   - pinned staging buffers for copies to and from host memory;
//   - the cuBLASLt handle (kernels/cuda/cublas_lt.h) and its workspace;
//   - the cuDNN handle (kernels/cuda/cudnn.h), made when the first
//     convolution runs, and the convolution algorithm chosen for each shape
//     (kernels/cuda/cudnn_params.h).
//
// A GpuDevice is a session's view of one: a Device (framework/device.h) whose
// allocator is that pool. Kernels find the context through their device:
//
//   GpuContext& gpu = GpuContextOf(ctx);
//   RN_RETURN_IF_ERROR(gpu.Activate());   // this thread's current GPU
//   MyKernel<<<blocks, threads, 0, gpu.compute()>>>(...);
//
// Values reach and leave a GPU only through the executor's sends and
// receives (CopyFromHost, CopyToHost), which wait for the copy: a value in
// host memory is complete. Errors of a kernel that fails while running show
// at the next copy out.
//
// Thread-safety: everything may be called from any thread. Kernels enqueue
// on the compute stream concurrently (CUDA serialises them); each copy
// direction has one staging buffer (two halves), taken under its mutex.
#ifndef RUNNEL_KERNELS_CUDA_GPU_DEVICE_H_
#define RUNNEL_KERNELS_CUDA_GPU_DEVICE_H_

#include <cublasLt.h>
#include <cuda_runtime.h>

#include <deque>
#include <memory>
#include <mutex>
#include <string>

#include "absl/status/statusor.h"
#include "base/thread_pool.h"
#include "framework/caching_allocator.h"
#include "framework/device.h"
#include "framework/kernel.h"
#include "kernels/cuda/cublas_lt.h"
#include "kernels/cuda/cudnn.h"
#include "kernels/cuda/cudnn_params.h"

namespace runnel {

class GpuContext {
 public:
  // GPU `index`'s context, made the first time (streams, events, cuBLASLt).
  static absl::StatusOr<GpuContext*> Get(int index);
  ~GpuContext();
  GpuContext(const GpuContext&) = delete;
  GpuContext& operator=(const GpuContext&) = delete;

  int index() const { return index_; }
  // Makes this GPU current on the calling thread (cudaSetDevice).
  absl::Status Activate() const;
  cudaStream_t compute() const { return compute_; }
  Allocator* allocator() { return &compute_allocator_; }
  CachingAllocator& cache() { return cache_; }
  cublasLtHandle_t blas() const { return blas_; }
  const CublasLt& lt() const { return *lt_; }
  // cuBLASLt's workspace, used on the compute stream only.
  void* workspace() const { return workspace_; }
  size_t workspace_bytes() const { return kWorkspaceBytes; }

  // cuDNN's handle, on the compute stream, made (and cuDNN loaded) the
  // first time; the error says why cuDNN cannot be had, every time. The
  // handle is not for two threads at once: hold dnn_mutex() while using it.
  absl::StatusOr<cudnnHandle_t> dnn();
  std::mutex& dnn_mutex() { return dnn_mu_; }
  const Cudnn& cudnn() const { return *cudnn_; }
  // The algorithm chosen for each convolution shape.
  ConvAlgoCache& conv_algos() { return conv_algos_; }

  // `t` (on this GPU, written by compute-stream kernels) in host memory.
  absl::StatusOr<Tensor> ToHost(const Tensor& t);
  // `t` (host memory) on this GPU, ready for compute-stream kernels.
  absl::StatusOr<Tensor> FromHost(const Tensor& t);
  // "NVIDIA H100 80GB HBM3, 79.1 GiB; 1.2 GiB in use, ...".
  std::string Describe() const;

  // A loop's saved value kept in page-locked host memory (swap_memory,
  // Device::SwapOut): the copy out waits for the kernels enqueued so far
  // and runs on its own stream, overlapping the kernels enqueued after;
  // `t`'s memory goes back to the pool once the copy is done. SwapIn
  // copies it back on the compute stream, so the kernels after it read it
  // and the host never waits. `device` is the GpuDevice that owns it.
  absl::StatusOr<std::shared_ptr<SwappedValue>> SwapOut(Device* device,
                                                        const Tensor& t);
  absl::StatusOr<Tensor> SwapIn(const SwappedValue& v);

 private:
  static constexpr size_t kWorkspaceBytes = size_t{32} << 20;
  static constexpr size_t kStagingBytes = size_t{32} << 20;

  // Page-locked host memory for one direction of copies: two halves of
  // `size` bytes each, grown on demand up to kStagingBytes in all. A value
  // goes through in pieces of a half, alternating, so that the host's copy
  // of one piece into (or out of) one half overlaps the GPU's transfer of
  // the piece before it through the other.
  struct Staging {
    std::mutex mu;
    void* data = nullptr;
    size_t size = 0;  // of one half
    cudaStream_t stream = nullptr;
    cudaEvent_t before = nullptr;  // compute-stream work before the copy
    cudaEvent_t after = nullptr;   // the copy itself
    cudaEvent_t half[2] = {};      // the last transfer through each half
    char* Half(size_t piece) const {
      return static_cast<char*>(data) + (piece % 2) * size;
    }
  };

  class Swapped;
  // The swaps' stream and page-locked memory. Each device buffer being
  // copied out and each host buffer that a copy may still read is held in
  // `pending` until its event has happened (Reap).
  struct Swaps {
    std::mutex mu;
    cudaStream_t stream = nullptr;
    std::unique_ptr<RawAllocator> raw;
    std::unique_ptr<CachingAllocator> host;
    struct Pending {
      std::shared_ptr<CUevent_st> done;
      Tensor device;         // released when `done` has happened
      void* host = nullptr;  // given back to `host` then
    };
    std::deque<Pending> pending;
  };

  explicit GpuContext(int index);
  // Releases what the pending swaps held whose copies are done; swaps_.mu
  // held.
  void Reap();
  // A new event recorded on `stream`.
  absl::StatusOr<std::shared_ptr<CUevent_st>> Mark(cudaStream_t stream);
  absl::Status Init();
  static absl::Status Reserve(Staging& s, size_t bytes);
  // Copies between pageable and staging memory, split over copy_pool_:
  // one thread's memcpy is far slower than a GPU's transfer.
  void StageCopy(void* dst, const void* src, size_t bytes);

  int index_;
  std::string name_;
  size_t total_memory_ = 0;
  cudaStream_t compute_ = nullptr;
  Staging h2d_, d2h_;
  Swaps swaps_;
  std::unique_ptr<ThreadPool> copy_pool_;
  const CublasLt* lt_ = nullptr;
  cublasLtHandle_t blas_ = nullptr;
  void* workspace_ = nullptr;
  std::mutex dnn_mu_;
  absl::Status dnn_error_;  // why there is no handle, once tried
  const Cudnn* cudnn_ = nullptr;
  cudnnHandle_t dnn_ = nullptr;
  ConvAlgoCache conv_algos_;
  std::unique_ptr<RawAllocator> raw_;
  CachingAllocator cache_;
  StreamAllocator compute_allocator_;
};

class GpuDevice final : public Device {
 public:
  GpuDevice(std::string name, GpuContext* gpu, ResourceMgr* resources)
      : Device(std::move(name), kDeviceGpu, gpu->allocator(), nullptr,
               resources),
        gpu_(gpu) {}
  GpuContext& context() const { return *gpu_; }
  absl::StatusOr<Tensor> CopyToHost(const Tensor& t) override {
    return gpu_->ToHost(t);
  }
  absl::StatusOr<Tensor> CopyFromHost(const Tensor& t) override {
    return gpu_->FromHost(t);
  }
  bool SwapsToHost() const override { return true; }
  absl::StatusOr<std::shared_ptr<SwappedValue>> SwapOut(
      const Tensor& t) override {
    return gpu_->SwapOut(this, t);
  }
  absl::StatusOr<Tensor> SwapIn(const SwappedValue& v) override {
    return gpu_->SwapIn(v);
  }
  std::string Describe() const override { return gpu_->Describe(); }
  std::optional<CachingAllocatorStats> MemoryStats() const override {
    return gpu_->cache().stats();
  }

 private:
  GpuContext* gpu_;
};

// The context of the GPU a kernel runs on (kernels registered for "gpu"
// only ever run on a GpuDevice).
inline GpuContext& GpuContextOf(OpKernelContext* ctx) {
  return static_cast<GpuDevice*>(ctx->device())->context();
}

// A scratch tensor on the kernel's GPU, freed back to the compute stream's
// pool (so only later kernels reuse it) when it goes out of scope; out of
// memory is a ResourceExhausted error naming the node's op.
absl::StatusOr<Tensor> GpuScratch(OpKernelContext* ctx, DType dtype,
                                  Shape shape);

}  // namespace runnel

#endif  // RUNNEL_KERNELS_CUDA_GPU_DEVICE_H_
