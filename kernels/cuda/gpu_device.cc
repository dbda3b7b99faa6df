#include "kernels/cuda/gpu_device.h"

#include <algorithm>
#include <cstring>
#include <thread>
#include <vector>

#include "base/strings.h"
#include "framework/device_set.h"
#include "kernels/common/array_util.h"
#include "kernels/cuda/cuda_status.h"

namespace runnel {

std::string_view CalledFunction(const char* call) {
  std::string_view name(call);
  name = name.substr(0, name.find('('));
  if (const size_t arrow = name.rfind("->"); arrow != name.npos) {
    name = name.substr(arrow + 2);
  } else if (const size_t dot = name.rfind('.'); dot != name.npos) {
    name = name.substr(dot + 1);
  }
  return name;
}

absl::Status CudaStatus(cudaError_t e, const char* call) {
  if (e == cudaSuccess) return absl::OkStatus();
  const std::string_view name = CalledFunction(call);
  const std::string message =
      StrCat(name, ": ", cudaGetErrorString(e), " (", cudaGetErrorName(e), ")");
  // Clear the error, so that it is not reported again by the next call.
  cudaGetLastError();
  if (e == cudaErrorMemoryAllocation) {
    return absl::ResourceExhaustedError(message);
  }
  return absl::InternalError(message);
}

absl::Status CublasStatus(cublasStatus_t s, const char* call) {
  if (s == CUBLAS_STATUS_SUCCESS) return absl::OkStatus();
  const std::string_view name = CalledFunction(call);
  const CublasLt* lt = LoadedCublasLt();
  const std::string message =
      lt == nullptr ? StrCat(name, ": cuBLAS status ", static_cast<int>(s))
                    : StrCat(name, ": ", lt->cublasLtGetStatusString(s), " (",
                             lt->cublasLtGetStatusName(s), ")");
  if (s == CUBLAS_STATUS_ALLOC_FAILED) {
    return absl::ResourceExhaustedError(message);
  }
  return absl::InternalError(message);
}

namespace {

// cudaMalloc and cudaFree for the caching allocator, on one GPU. The
// allocator calls it with its mutex held, from any thread.
class CudaRawAllocator final : public RawAllocator {
 public:
  explicit CudaRawAllocator(int device) : device_(device) {}
  void* Alloc(size_t bytes) override {
    void* p = nullptr;
    if (cudaSetDevice(device_) != cudaSuccess ||
        cudaMalloc(&p, bytes) != cudaSuccess) {
      cudaGetLastError();  // out of memory: the caller retries or fails
      return nullptr;
    }
    return p;
  }
  void Free(void* ptr) override {
    // cudaFree waits for the device; the blocks in it were freed by the
    // host after the kernels that used them were enqueued, so this also
    // keeps them from being reused while those run.
    cudaSetDevice(device_);
    cudaFree(ptr);
  }

 private:
  int device_;
};

// Page-locked host memory, which the GPU copies to and from without the
// staging buffers' pieces: the swapped values of loops (GpuContext::SwapOut).
class PinnedRawAllocator final : public RawAllocator {
 public:
  void* Alloc(size_t bytes) override {
    void* p = nullptr;
    if (cudaHostAlloc(&p, bytes, cudaHostAllocDefault) != cudaSuccess) {
      cudaGetLastError();
      return nullptr;
    }
    return p;
  }
  void Free(void* ptr) override { cudaFreeHost(ptr); }
};

// The visible GPUs, counted once.
struct Visible {
  int count = 0;
  std::string why_none;
};
const Visible& VisibleOnce() {
  static const Visible* const kVisible = [] {
    auto* v = new Visible;
    const cudaError_t e = cudaGetDeviceCount(&v->count);
    if (e != cudaSuccess) {
      v->count = 0;
      v->why_none = StrCat("no usable CUDA driver or GPU (cudaGetDeviceCount: ",
                           cudaGetErrorString(e), ")");
      cudaGetLastError();
    } else if (v->count == 0) {
      v->why_none = "the CUDA driver sees no GPU";
    }
    return v;
  }();
  return *kVisible;
}

class GpuFactory final : public DeviceFactory {
 public:
  int Count(std::string* why_none) override {
    const Visible& v = VisibleOnce();
    if (v.count == 0) *why_none = v.why_none;
    return v.count;
  }
  absl::StatusOr<std::unique_ptr<Device>> Create(
      int index, const std::string& name, ResourceMgr* resources,
      const GpuOptions& options) override {
    RN_ASSIGN_OR_RETURN(GpuContext * gpu, GpuContext::Get(index));
    gpu->cache().SetLimit(options.memory_limit);
    return std::unique_ptr<Device>(
        std::make_unique<GpuDevice>(name, gpu, resources));
  }
};

RUNNEL_STATIC_INIT(GpuDeviceFactory) {
  RegisterDeviceFactory(kDeviceGpu, std::make_unique<GpuFactory>());
}

}  // namespace

absl::StatusOr<GpuContext*> GpuContext::Get(int index) {
  static std::mutex mu;
  // Kept to the end of the process: sessions share them, and the CUDA
  // runtime may be gone by the time static destructors run.
  static auto* const contexts = new std::vector<std::unique_ptr<GpuContext>>();
  std::lock_guard<std::mutex> lock(mu);
  const Visible& v = VisibleOnce();
  if (index < 0 || index >= v.count) {
    return absl::InvalidArgumentError(
        StrCat("no GPU ", index, " (", v.count, " visible)"));
  }
  if (contexts->size() <= static_cast<size_t>(index)) {
    contexts->resize(index + 1);
  }
  auto& slot = (*contexts)[index];
  if (slot == nullptr) {
    std::unique_ptr<GpuContext> gpu(new GpuContext(index));
    RN_RETURN_IF_ERROR(gpu->Init());
    slot = std::move(gpu);
  }
  return slot.get();
}

GpuContext::GpuContext(int index)
    : index_(index),
      raw_(std::make_unique<CudaRawAllocator>(index)),
      cache_(raw_.get()),
      compute_allocator_(StrCat("gpu:", index), &cache_, 0) {
  swaps_.raw = std::make_unique<PinnedRawAllocator>();
  swaps_.host = std::make_unique<CachingAllocator>(swaps_.raw.get());
}

absl::Status GpuContext::Init() {
  RN_RETURN_IF_ERROR(Activate());
  cudaDeviceProp prop;
  RN_CUDA(cudaGetDeviceProperties(&prop, index_));
  name_ = StrCat(prop.name, " (sm_", prop.major, prop.minor, ")");
  total_memory_ = prop.totalGlobalMem;
  RN_CUDA(cudaStreamCreateWithFlags(&compute_, cudaStreamNonBlocking));
  for (Staging* s : {&h2d_, &d2h_}) {
    RN_CUDA(cudaStreamCreateWithFlags(&s->stream, cudaStreamNonBlocking));
    for (cudaEvent_t* e : {&s->before, &s->after, &s->half[0], &s->half[1]}) {
      RN_CUDA(cudaEventCreateWithFlags(e, cudaEventDisableTiming));
    }
  }
  RN_CUDA(cudaStreamCreateWithFlags(&swaps_.stream, cudaStreamNonBlocking));
  copy_pool_ = std::make_unique<ThreadPool>(
      static_cast<int>(
          std::clamp(std::thread::hardware_concurrency() / 2, 1u, 8u)),
      "runnel-gpu-copy");
  RN_ASSIGN_OR_RETURN(lt_, LoadCublasLt());
  RN_CUBLAS(lt_->cublasLtCreate(&blas_));
  workspace_ = cache_.Allocate(kWorkspaceBytes, 0);
  if (workspace_ == nullptr) {
    return absl::ResourceExhaustedError(
        StrCat("gpu:", index_, ": no memory for cuBLASLt's workspace (",
               FormatBytes(kWorkspaceBytes), ")"));
  }
  return absl::OkStatus();
}

GpuContext::~GpuContext() {
  // Only a context whose Init failed is ever destroyed (Get keeps the rest).
  cudaSetDevice(index_);
  if (workspace_ != nullptr) cache_.Free(workspace_);
  if (blas_ != nullptr) lt_->cublasLtDestroy(blas_);
  if (dnn_ != nullptr) cudnn_->cudnnDestroy(dnn_);
  for (Staging* s : {&h2d_, &d2h_}) {
    if (s->data != nullptr) cudaFreeHost(s->data);
    for (cudaEvent_t e : {s->before, s->after, s->half[0], s->half[1]}) {
      if (e != nullptr) cudaEventDestroy(e);
    }
    if (s->stream != nullptr) cudaStreamDestroy(s->stream);
  }
  if (swaps_.stream != nullptr) cudaStreamDestroy(swaps_.stream);
  if (compute_ != nullptr) cudaStreamDestroy(compute_);
}

absl::StatusOr<cudnnHandle_t> GpuContext::dnn() {
  std::lock_guard<std::mutex> lock(dnn_mu_);
  if (dnn_ != nullptr) return dnn_;
  if (!dnn_error_.ok()) return dnn_error_;
  dnn_error_ = [&]() -> absl::Status {
    RN_ASSIGN_OR_RETURN(cudnn_, LoadCudnn());
    RN_RETURN_IF_ERROR(Activate());
    cudnnHandle_t handle = nullptr;
    RN_CUDNN(cudnn_->cudnnCreate(&handle));
    if (const cudnnStatus_t s = cudnn_->cudnnSetStream(handle, compute_);
        s != CUDNN_STATUS_SUCCESS) {
      cudnn_->cudnnDestroy(handle);
      return CudnnStatus(s, "cudnnSetStream");
    }
    dnn_ = handle;
    return absl::OkStatus();
  }();
  if (!dnn_error_.ok()) {
    dnn_error_ = absl::Status(
        dnn_error_.code(), StrCat("gpu:", index_, ": ", dnn_error_.message()));
    return dnn_error_;
  }
  return dnn_;
}

absl::Status GpuContext::Activate() const {
  RN_CUDA(cudaSetDevice(index_));
  return absl::OkStatus();
}

absl::Status GpuContext::Reserve(Staging& s, size_t bytes) {
  bytes = std::min(bytes, kStagingBytes / 2);
  if (s.size >= bytes) return absl::OkStatus();
  // No transfer uses the buffer: each copy waits for its own before it
  // returns.
  if (s.data != nullptr) {
    RN_CUDA(cudaFreeHost(s.data));
    s.data = nullptr;
    s.size = 0;
  }
  RN_CUDA(cudaHostAlloc(&s.data, 2 * bytes, cudaHostAllocDefault));
  s.size = bytes;
  return absl::OkStatus();
}

void GpuContext::StageCopy(void* dst, const void* src, size_t bytes) {
  ParallelMemcpy(copy_pool_.get(), dst, src, bytes);
}

absl::StatusOr<Tensor> GpuScratch(OpKernelContext* ctx, DType dtype,
                                  Shape shape) {
  try {
    return Tensor(dtype, std::move(shape), ctx->device()->allocator());
  } catch (const AllocationFailed& e) {
    return absl::ResourceExhaustedError(StrCat(
        ctx->node().op(), ": ", OutOfMemoryMessage(e.bytes(), e.detail())));
  }
}

absl::StatusOr<Tensor> GpuContext::ToHost(const Tensor& t) {
  if (t.empty()) return t;
  RN_RETURN_IF_ERROR(Activate());
  Tensor host(t.dtype(), t.shape());
  const size_t bytes = t.bytes();
  std::lock_guard<std::mutex> lock(d2h_.mu);
  RN_RETURN_IF_ERROR(Reserve(d2h_, bytes));
  // The copy starts once the kernels enqueued so far (the producer's
  // among them) have finished.
  RN_CUDA(cudaEventRecord(d2h_.before, compute_));
  RN_CUDA(cudaStreamWaitEvent(d2h_.stream, d2h_.before, 0));
  const char* src = static_cast<const char*>(t.raw_data());
  char* dst = static_cast<char*>(host.raw_data());
  const size_t pieces = (bytes + d2h_.size - 1) / d2h_.size;
  // Piece p goes into half p % 2; the host reads it out while the next
  // piece comes into the other half.
  auto fetch = [&](size_t p) -> absl::Status {
    if (p >= pieces) return absl::OkStatus();
    const size_t at = p * d2h_.size, n = std::min(d2h_.size, bytes - at);
    RN_CUDA(cudaMemcpyAsync(d2h_.Half(p), src + at, n, cudaMemcpyDeviceToHost,
                            d2h_.stream));
    RN_CUDA(cudaEventRecord(d2h_.half[p % 2], d2h_.stream));
    return absl::OkStatus();
  };
  absl::Status s = fetch(0);
  if (s.ok()) s = fetch(1);
  for (size_t p = 0; s.ok() && p < pieces; ++p) {
    s = CudaStatus(cudaEventSynchronize(d2h_.half[p % 2]),
                   "cudaEventSynchronize");
    if (!s.ok()) break;
    const size_t at = p * d2h_.size;
    StageCopy(dst + at, d2h_.Half(p), std::min(d2h_.size, bytes - at));
    s = fetch(p + 2);  // into the half just read
  }
  // Whatever happened, no transfer may still be writing the buffer when
  // the next copy takes it.
  const absl::Status drained =
      CudaStatus(cudaStreamSynchronize(d2h_.stream), "cudaStreamSynchronize");
  RN_RETURN_IF_ERROR(s);
  RN_RETURN_IF_ERROR(drained);
  return host;
}

absl::StatusOr<Tensor> GpuContext::FromHost(const Tensor& t) {
  if (t.empty()) return t;
  RN_RETURN_IF_ERROR(Activate());
  Tensor dev;
  try {
    dev = Tensor(t.dtype(), t.shape(), allocator());
  } catch (const AllocationFailed& e) {
    return absl::ResourceExhaustedError(
        StrCat("copy to gpu:", index_, ": ",
               OutOfMemoryMessage(e.bytes(), e.detail())));
  }
  const size_t bytes = t.bytes();
  std::lock_guard<std::mutex> lock(h2d_.mu);
  RN_RETURN_IF_ERROR(Reserve(h2d_, bytes));
  // The block may have been freed by the host while kernels enqueued
  // before still use it: copy into it only after them.
  RN_CUDA(cudaEventRecord(h2d_.before, compute_));
  RN_CUDA(cudaStreamWaitEvent(h2d_.stream, h2d_.before, 0));
  const char* src = static_cast<const char*>(t.raw_data());
  char* dst = static_cast<char*>(dev.raw_data());
  absl::Status s;
  for (size_t p = 0, at = 0; s.ok() && at < bytes; ++p, at += h2d_.size) {
    const size_t n = std::min(h2d_.size, bytes - at);
    // Half p % 2 is free once the transfer two pieces back is done.
    if (p >= 2) {
      s = CudaStatus(cudaEventSynchronize(h2d_.half[p % 2]),
                     "cudaEventSynchronize");
      if (!s.ok()) break;
    }
    StageCopy(h2d_.Half(p), src + at, n);
    s = CudaStatus(cudaMemcpyAsync(dst + at, h2d_.Half(p), n,
                                   cudaMemcpyHostToDevice, h2d_.stream),
                   "cudaMemcpyAsync");
    if (s.ok()) {
      s = CudaStatus(cudaEventRecord(h2d_.half[p % 2], h2d_.stream),
                     "cudaEventRecord");
    }
  }
  // The staging buffer is free for the next copy once this one is done.
  const absl::Status drained =
      CudaStatus(cudaStreamSynchronize(h2d_.stream), "cudaStreamSynchronize");
  RN_RETURN_IF_ERROR(s);
  RN_RETURN_IF_ERROR(drained);
  // Kernels enqueued from now on read the value only after the copy.
  RN_CUDA(cudaEventRecord(h2d_.after, h2d_.stream));
  RN_CUDA(cudaStreamWaitEvent(compute_, h2d_.after, 0));
  return dev;
}

// A value swapped out: its page-locked copy, the event of the copy out,
// and that of the last copy back in (which its buffer must outlive).
class GpuContext::Swapped final : public SwappedValue {
 public:
  Swapped(Device* device, GpuContext* gpu, const Tensor& t)
      : SwappedValue(device),
        gpu_(gpu),
        dtype_(t.dtype()),
        shape_(t.shape()),
        bytes_(t.bytes()) {}
  ~Swapped() override {
    if (host_ == nullptr) return;
    std::lock_guard<std::mutex> lock(gpu_->swaps_.mu);
    gpu_->swaps_.pending.push_back(
        {read_ != nullptr ? read_ : copied_, Tensor(), host_});
  }

 private:
  friend class GpuContext;
  GpuContext* gpu_;
  DType dtype_;
  Shape shape_;
  size_t bytes_;
  void* host_ = nullptr;
  std::shared_ptr<CUevent_st> copied_, read_;
};

absl::StatusOr<std::shared_ptr<CUevent_st>> GpuContext::Mark(
    cudaStream_t stream) {
  cudaEvent_t e = nullptr;
  RN_CUDA(cudaEventCreateWithFlags(&e, cudaEventDisableTiming));
  std::shared_ptr<CUevent_st> event(e,
                                    [](cudaEvent_t e) { cudaEventDestroy(e); });
  RN_CUDA(cudaEventRecord(e, stream));
  return event;
}

void GpuContext::Reap() {
  auto& pending = swaps_.pending;
  for (auto it = pending.begin(); it != pending.end();) {
    const cudaError_t e = cudaEventQuery(it->done.get());
    if (e == cudaErrorNotReady) {
      ++it;
      continue;
    }
    // An error of the copy shows at the next copy out of the GPU; the
    // buffers go back either way.
    if (e != cudaSuccess) cudaGetLastError();
    if (it->host != nullptr) swaps_.host->Free(it->host);
    it = pending.erase(it);
  }
}

absl::StatusOr<std::shared_ptr<SwappedValue>> GpuContext::SwapOut(
    Device* device, const Tensor& t) {
  auto swapped = std::make_shared<Swapped>(device, this, t);
  if (t.bytes() == 0) return swapped;
  RN_RETURN_IF_ERROR(Activate());
  std::lock_guard<std::mutex> lock(swaps_.mu);
  Reap();
  void* host = swaps_.host->Allocate(t.bytes(), 0);
  if (host == nullptr) {
    return absl::ResourceExhaustedError(
        StrCat("swap out of gpu:", index_, ": no page-locked host memory for ",
               FormatBytes(t.bytes()), " (", swaps_.host->Describe(), ")"));
  }
  const absl::Status copied = [&]() -> absl::Status {
    // After the kernels enqueued so far, the producer's among them.
    RN_ASSIGN_OR_RETURN(std::shared_ptr<CUevent_st> before, Mark(compute_));
    RN_CUDA(cudaStreamWaitEvent(swaps_.stream, before.get(), 0));
    RN_CUDA(cudaMemcpyAsync(host, t.raw_data(), t.bytes(),
                            cudaMemcpyDeviceToHost, swaps_.stream));
    RN_ASSIGN_OR_RETURN(swapped->copied_, Mark(swaps_.stream));
    return absl::OkStatus();
  }();
  if (!copied.ok()) {
    // No copy may still be writing the buffer when it goes back.
    cudaStreamSynchronize(swaps_.stream);
    swaps_.host->Free(host);
    return copied;
  }
  swapped->host_ = host;
  // The device buffer goes back to the compute stream's pool only once the
  // copy has read it.
  swaps_.pending.push_back({swapped->copied_, t, nullptr});
  return swapped;
}

absl::StatusOr<Tensor> GpuContext::SwapIn(const SwappedValue& v) {
  // Only a GpuDevice's SwapOut made it (stack_pop checks the device).
  auto& swapped = const_cast<Swapped&>(static_cast<const Swapped&>(v));
  RN_RETURN_IF_ERROR(Activate());
  Tensor dev;
  try {
    dev = Tensor(swapped.dtype_, swapped.shape_, allocator());
  } catch (const AllocationFailed& e) {
    return absl::ResourceExhaustedError(
        StrCat("swap into gpu:", index_, ": ",
               OutOfMemoryMessage(e.bytes(), e.detail())));
  }
  if (swapped.bytes_ == 0) return dev;
  std::lock_guard<std::mutex> lock(swaps_.mu);
  Reap();
  // On the compute stream: after the copy out, before the kernels that
  // read the value, and into a block the compute stream's pool gave.
  RN_CUDA(cudaStreamWaitEvent(compute_, swapped.copied_.get(), 0));
  RN_CUDA(cudaMemcpyAsync(dev.raw_data(), swapped.host_, swapped.bytes_,
                          cudaMemcpyHostToDevice, compute_));
  absl::StatusOr<std::shared_ptr<CUevent_st>> read = Mark(compute_);
  if (!read.ok()) {
    // The host buffer may go back once this copy has read it.
    cudaStreamSynchronize(compute_);
    return read.status();
  }
  swapped.read_ = *std::move(read);
  return dev;
}

std::string GpuContext::Describe() const {
  const CachingAllocatorStats s = cache_.stats();
  const size_t cap = cache_.limit();
  return StrCat(
      name_, ", ", FormatBytes(total_memory_), "; ", FormatBytes(s.in_use),
      " in use, ", FormatBytes(s.reserved), " reserved, peak ",
      FormatBytes(s.peak_reserved), " reserved",
      cap == 0 ? std::string() : StrCat(", limit ", FormatBytes(cap)));
}

}  // namespace runnel
