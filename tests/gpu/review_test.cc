// What the GPU device needs of the machine that can be checked without a
// GPU: cuBLASLt and cuDNN, where they can be loaded, have every function
// Runnel calls (kernels/cuda/cublas_lt.h, cudnn.h), so that a library too
// old or a misspelt name fails here rather than on a GPU machine's first
// run. Skipped, saying why, where a library cannot be loaded at all.
#include <dlfcn.h>
#include <gtest/gtest.h>

#include "kernels/cuda/cublas_lt.h"
#include "kernels/cuda/cuda_status.h"
#include "kernels/cuda/cudnn.h"

namespace runnel {
namespace {

// Whether `library` can be loaded; `why` says why not.
bool Loadable(const char* library, std::string* why) {
  void* lib = dlopen(library, RTLD_NOW | RTLD_LOCAL);
  if (lib == nullptr) {
    *why = dlerror();
    return false;
  }
  dlclose(lib);
  return true;
}

TEST(GpuLibrariesTest, CublasLtHasEveryFunction) {
  std::string why;
  if (!Loadable("libcublasLt.so.13", &why)) GTEST_SKIP() << why;
  absl::StatusOr<const CublasLt*> lt = LoadCublasLt();
  ASSERT_TRUE(lt.ok()) << lt.status();
  EXPECT_NE((*lt)->cublasLtMatmul, nullptr);
  EXPECT_EQ(LoadedCublasLt(), *lt);
}

TEST(GpuLibrariesTest, CudnnHasEveryFunction) {
  std::string why;
  if (!Loadable("libcudnn.so.9", &why)) GTEST_SKIP() << why;
  absl::StatusOr<const Cudnn*> dnn = LoadCudnn();
  ASSERT_TRUE(dnn.ok()) << dnn.status();
  EXPECT_GE((*dnn)->cudnnGetVersion(), 90000u);
  EXPECT_EQ(LoadedCudnn(), *dnn);
}

// A failed call's error names the function called, whatever object it is
// called through, and says what went wrong (no GPU needed).
TEST(GpuLibrariesTest, ErrorsNameTheFunction) {
  EXPECT_EQ(CalledFunction("cudaMemcpyAsync(dst, src, n, kind, stream)"),
            "cudaMemcpyAsync");
  EXPECT_EQ(CalledFunction("lt->cublasLtMatmul(a, b)"), "cublasLtMatmul");
  EXPECT_EQ(CalledFunction("dnn.cudnnConvolutionForward(h, x->y)"),
            "cudnnConvolutionForward");
  EXPECT_EQ(CalledFunction("cuda::LaunchBinary(op, t)"), "cuda::LaunchBinary");
  const absl::Status oom =
      CudaStatus(cudaErrorMemoryAllocation, "cudaMalloc(&p, bytes)");
  EXPECT_EQ(oom.code(), absl::StatusCode::kResourceExhausted);
  EXPECT_EQ(oom.message(),
            "cudaMalloc: out of memory (cudaErrorMemoryAllocation)");
  EXPECT_TRUE(CudaStatus(cudaSuccess, "cudaFree(p)").ok());
  const absl::Status dnn =
      CudnnStatus(CUDNN_STATUS_BAD_PARAM, "cudnnSetStream");
  EXPECT_EQ(dnn.code(), absl::StatusCode::kInternal);
  EXPECT_EQ(dnn.message().rfind("cudnnSetStream: ", 0), 0u) << dnn;
}

}  // namespace
}  // namespace runnel
