#include "kernels/cuda/cudnn.h"

#include <dlfcn.h>

#include <atomic>
#include <mutex>
#include <string_view>

#include "base/strings.h"
#include "kernels/cuda/cuda_status.h"

namespace runnel {
namespace {

constexpr char kLibrary[] = "libcudnn.so.9";
std::atomic<const Cudnn*> g_loaded{nullptr};

absl::StatusOr<const Cudnn*> Load() {
  void* lib = dlopen(kLibrary, RTLD_NOW | RTLD_LOCAL);
  if (lib == nullptr) {
    return absl::FailedPreconditionError(StrCat(
        "convolutions on a GPU need cuDNN 9, which cannot be loaded: ",
        dlerror(),
        " (put its lib folder, e.g. PyTorch's site-packages/nvidia/cudnn/lib, "
        "on LD_LIBRARY_PATH, or run with --devices gpu=0)"));
  }
  // Kept to the end of the process, like the library.
  static Cudnn* const dnn = new Cudnn;
#define RN_CUDNN_FN(name)                                                 \
  do {                                                                    \
    dnn->name = reinterpret_cast<decltype(&::name)>(dlsym(lib, #name));   \
    if (dnn->name == nullptr) {                                           \
      return absl::FailedPreconditionError(                               \
          StrCat(kLibrary, " has no ", #name, " (older than cuDNN 9?)")); \
    }                                                                     \
  } while (0)
  RN_CUDNN_FUNCTIONS(RN_CUDNN_FN)
#undef RN_CUDNN_FN
  const size_t version = dnn->cudnnGetVersion();
  if (version < 90000) {
    return absl::FailedPreconditionError(
        StrCat(kLibrary, " is cuDNN ", version, "; Runnel needs 9 or later"));
  }
  return dnn;
}

}  // namespace

absl::StatusOr<const Cudnn*> LoadCudnn() {
  static std::mutex mu;
  // The first attempt's outcome, kept: dlopen is not retried on every op.
  static absl::StatusOr<const Cudnn*>* result = nullptr;
  std::lock_guard<std::mutex> lock(mu);
  if (result == nullptr) {
    result = new absl::StatusOr<const Cudnn*>(Load());
    if (result->ok()) g_loaded.store(**result);
  }
  return *result;
}

const Cudnn* LoadedCudnn() { return g_loaded.load(); }

absl::Status CudnnStatus(cudnnStatus_t s, const char* call) {
  if (s == CUDNN_STATUS_SUCCESS) return absl::OkStatus();
  const std::string_view name = CalledFunction(call);
  const Cudnn* dnn = LoadedCudnn();
  const std::string message =
      dnn == nullptr ? StrCat(name, ": cuDNN status ", static_cast<int>(s))
                     : StrCat(name, ": ", dnn->cudnnGetErrorString(s),
                              " (cuDNN status ", static_cast<int>(s), ")");
  if (s == CUDNN_STATUS_ALLOC_FAILED) {
    return absl::ResourceExhaustedError(message);
  }
  return absl::InternalError(message);
}

void CudnnDescDeleter::operator()(cudnnTensorStruct* d) const {
  LoadedCudnn()->cudnnDestroyTensorDescriptor(d);
}
void CudnnDescDeleter::operator()(cudnnFilterStruct* d) const {
  LoadedCudnn()->cudnnDestroyFilterDescriptor(d);
}
void CudnnDescDeleter::operator()(cudnnConvolutionStruct* d) const {
  LoadedCudnn()->cudnnDestroyConvolutionDescriptor(d);
}
void CudnnDescDeleter::operator()(cudnnPoolingStruct* d) const {
  LoadedCudnn()->cudnnDestroyPoolingDescriptor(d);
}

absl::StatusOr<CudnnTensorDesc> MakeNhwcDesc(const Cudnn& dnn,
                                             cudnnDataType_t type, int64_t n,
                                             int64_t h, int64_t w, int64_t c) {
  cudnnTensorDescriptor_t raw = nullptr;
  RN_CUDNN(dnn.cudnnCreateTensorDescriptor(&raw));
  CudnnTensorDesc d(raw);
  // The dims in NCHW order whatever the layout.
  RN_CUDNN(dnn.cudnnSetTensor4dDescriptor(
      raw, CUDNN_TENSOR_NHWC, type, static_cast<int>(n), static_cast<int>(c),
      static_cast<int>(h), static_cast<int>(w)));
  return d;
}

absl::StatusOr<CudnnTensorDesc> MakeNdhwcDesc(const Cudnn& dnn,
                                              cudnnDataType_t type, int64_t n,
                                              int64_t d, int64_t h, int64_t w,
                                              int64_t c) {
  cudnnTensorDescriptor_t raw = nullptr;
  RN_CUDNN(dnn.cudnnCreateTensorDescriptor(&raw));
  CudnnTensorDesc desc(raw);
  // The dims in NCDHW order whatever the layout.
  const int dims[5] = {static_cast<int>(n), static_cast<int>(c),
                       static_cast<int>(d), static_cast<int>(h),
                       static_cast<int>(w)};
  RN_CUDNN(
      dnn.cudnnSetTensorNdDescriptorEx(raw, CUDNN_TENSOR_NHWC, type, 5, dims));
  return desc;
}

}  // namespace runnel
