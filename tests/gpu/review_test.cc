// What the GPU device needs of the machine that can be checked without a
// GPU: cuBLASLt and cuDNN, where they can be loaded, have every function
// Runnel calls (kernels/cuda/cublas_lt.h, cudnn.h), so that a library too
// old or a misspelt name fails here rather than on a GPU machine's first
// run. Skipped, saying why, where a library cannot be loaded at all.
#include <dlfcn.h>
#include <gtest/gtest.h>

#include "kernels/cuda/cublas_lt.h"
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

}  // namespace
}  // namespace runnel
