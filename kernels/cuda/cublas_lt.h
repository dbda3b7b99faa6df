// cuBLASLt, loaded with dlopen the first time a GPU context is made.
// Linking it would make every Runnel process load and relocate its 500 MB
// at start (0.7 s and 200 MB each, measured; tests run thousands of
// processes), GPU or not, and would make the binary unusable where the
// library is absent.
//
//   RN_ASSIGN_OR_RETURN(const CublasLt* lt, LoadCublasLt());
//   RN_CUBLAS(lt->cublasLtMatmul(...));
#ifndef RUNNEL_KERNELS_CUDA_CUBLAS_LT_H_
#define RUNNEL_KERNELS_CUDA_CUBLAS_LT_H_

#include <cublasLt.h>

#include "absl/status/statusor.h"

namespace runnel {

// The functions Runnel calls.
#define RN_CUBLAS_LT_FUNCTIONS(X)          \
  X(cublasLtCreate);                       \
  X(cublasLtDestroy);                      \
  X(cublasLtGetStatusName);                \
  X(cublasLtGetStatusString);              \
  X(cublasLtMatmul);                       \
  X(cublasLtMatmulAlgoGetHeuristic);       \
  X(cublasLtMatmulDescCreate);             \
  X(cublasLtMatmulDescDestroy);            \
  X(cublasLtMatmulDescSetAttribute);       \
  X(cublasLtMatmulPreferenceCreate);       \
  X(cublasLtMatmulPreferenceDestroy);      \
  X(cublasLtMatmulPreferenceSetAttribute); \
  X(cublasLtMatrixLayoutCreate);           \
  X(cublasLtMatrixLayoutDestroy);          \
  X(cublasLtMatrixLayoutSetAttribute);

// Each under its own name: lt->cublasLtMatmul(...).
struct CublasLt {
#define RN_LT_MEMBER(name) decltype(&::name) name = nullptr
  RN_CUBLAS_LT_FUNCTIONS(RN_LT_MEMBER)
#undef RN_LT_MEMBER
};

// Loads libcublasLt.so.13 once (thread-safe); the error names the library
// and what dlopen or dlsym said.
absl::StatusOr<const CublasLt*> LoadCublasLt();
// The loaded library, or nullptr before LoadCublasLt succeeded.
const CublasLt* LoadedCublasLt();

}  // namespace runnel

#endif  // RUNNEL_KERNELS_CUDA_CUBLAS_LT_H_
