// cuDNN 9, loaded with dlopen the first time a convolution or a pooling
// runs on a GPU, like cuBLASLt (cublas_lt.h): processes without a GPU, or
// whose graphs have neither on one, never load its 1 GB of libraries.
//
//   RN_ASSIGN_OR_RETURN(const Cudnn* dnn, LoadCudnn());
//   RN_CUDNN(dnn->cudnnConvolutionForward(...));
#ifndef RUNNEL_KERNELS_CUDA_CUDNN_H_
#define RUNNEL_KERNELS_CUDA_CUDNN_H_

#include <cudnn.h>

#include <cstdint>
#include <memory>

#include "absl/status/statusor.h"
#include "base/status_macros.h"

namespace runnel {

// The functions Runnel calls (the legacy convolution and pooling API,
// which cuDNN 9's libcudnn.so.9 still exports).
#define RN_CUDNN_FUNCTIONS(X)                        \
  X(cudnnGetVersion);                                \
  X(cudnnGetErrorString);                            \
  X(cudnnCreate);                                    \
  X(cudnnDestroy);                                   \
  X(cudnnSetStream);                                 \
  X(cudnnCreateTensorDescriptor);                    \
  X(cudnnDestroyTensorDescriptor);                   \
  X(cudnnSetTensor4dDescriptor);                     \
  X(cudnnSetTensorNdDescriptorEx);                   \
  X(cudnnCreateFilterDescriptor);                    \
  X(cudnnDestroyFilterDescriptor);                   \
  X(cudnnSetFilter4dDescriptor);                     \
  X(cudnnSetFilterNdDescriptor);                     \
  X(cudnnCreateConvolutionDescriptor);               \
  X(cudnnDestroyConvolutionDescriptor);              \
  X(cudnnSetConvolution2dDescriptor);                \
  X(cudnnSetConvolutionNdDescriptor);                \
  X(cudnnSetConvolutionMathType);                    \
  X(cudnnGetConvolution2dForwardOutputDim);          \
  X(cudnnGetConvolutionNdForwardOutputDim);          \
  X(cudnnGetConvolutionForwardAlgorithm_v7);         \
  X(cudnnGetConvolutionForwardWorkspaceSize);        \
  X(cudnnConvolutionForward);                        \
  X(cudnnGetConvolutionBackwardDataAlgorithm_v7);    \
  X(cudnnGetConvolutionBackwardDataWorkspaceSize);   \
  X(cudnnConvolutionBackwardData);                   \
  X(cudnnGetConvolutionBackwardFilterAlgorithm_v7);  \
  X(cudnnGetConvolutionBackwardFilterWorkspaceSize); \
  X(cudnnConvolutionBackwardFilter);                 \
  X(cudnnCreatePoolingDescriptor);                   \
  X(cudnnDestroyPoolingDescriptor);                  \
  X(cudnnSetPooling2dDescriptor);                    \
  X(cudnnGetPooling2dForwardOutputDim);              \
  X(cudnnPoolingForward);                            \
  X(cudnnPoolingBackward);

// Each under its own name: dnn->cudnnConvolutionForward(...).
struct Cudnn {
#define RN_CUDNN_MEMBER(name) decltype(&::name) name = nullptr
  RN_CUDNN_FUNCTIONS(RN_CUDNN_MEMBER)
#undef RN_CUDNN_MEMBER
};

// Loads libcudnn.so.9 once (thread-safe). The error names the library, what
// dlopen or dlsym said, and how to get it (docs/gpu.md); it is kept, so
// that every later call fails the same way without trying again.
absl::StatusOr<const Cudnn*> LoadCudnn();
// The loaded library, or nullptr before LoadCudnn succeeded.
const Cudnn* LoadedCudnn();

// `call` is the call's source text; the message names the function.
absl::Status CudnnStatus(cudnnStatus_t s, const char* call);

// cuDNN's descriptors, destroyed through the loaded library on scope exit.
struct CudnnDescDeleter {
  void operator()(cudnnTensorStruct* d) const;
  void operator()(cudnnFilterStruct* d) const;
  void operator()(cudnnConvolutionStruct* d) const;
  void operator()(cudnnPoolingStruct* d) const;
};
using CudnnTensorDesc = std::unique_ptr<cudnnTensorStruct, CudnnDescDeleter>;
using CudnnFilterDesc = std::unique_ptr<cudnnFilterStruct, CudnnDescDeleter>;
using CudnnConvDesc = std::unique_ptr<cudnnConvolutionStruct, CudnnDescDeleter>;
using CudnnPoolDesc = std::unique_ptr<cudnnPoolingStruct, CudnnDescDeleter>;

// A descriptor of a packed NHWC tensor [n, h, w, c] (each below 2^31,
// which the callers check).
absl::StatusOr<CudnnTensorDesc> MakeNhwcDesc(const Cudnn& dnn,
                                             cudnnDataType_t type, int64_t n,
                                             int64_t h, int64_t w, int64_t c);
// The same of a packed NDHWC tensor [n, d, h, w, c].
absl::StatusOr<CudnnTensorDesc> MakeNdhwcDesc(const Cudnn& dnn,
                                              cudnnDataType_t type, int64_t n,
                                              int64_t d, int64_t h, int64_t w,
                                              int64_t c);

}  // namespace runnel

#define RN_CUDNN(expr) RN_RETURN_IF_ERROR(::runnel::CudnnStatus((expr), #expr))

#endif  // RUNNEL_KERNELS_CUDA_CUDNN_H_
