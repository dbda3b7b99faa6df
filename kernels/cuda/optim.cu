// The fused optimizer updates (optim.h): one grid-stride kernel each, over
// kernels/cpu/optim_math.h with IEEE round-to-nearest intrinsics, which
// nvcc never contracts into a fused multiply-add, so that every element
// equals the CPU's.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <type_traits>

#include "kernels/cpu/optim_math.h"
#include "kernels/cuda/launch.cuh"
#include "kernels/cuda/optim.h"

namespace runnel::cuda {
namespace {

// optim_math.h's arithmetic in T (float or double), each operation one
// round-to-nearest intrinsic. __host__ too, as optim_math.h's functions
// are; only the GPU calls them.
#ifdef __CUDA_ARCH__
#define RN_RN(f32, f64, host)               \
  if constexpr (std::is_same_v<T, float>) { \
    return f32;                             \
  } else {                                  \
    return f64;                             \
  }
#else
#define RN_RN(f32, f64, host) return host
#endif
struct GpuArith {
  template <typename T>
  __host__ __device__ static T Add(T a, T b) {
    RN_RN(__fadd_rn(a, b), __dadd_rn(a, b), a + b);
  }
  template <typename T>
  __host__ __device__ static T Sub(T a, T b) {
    RN_RN(__fsub_rn(a, b), __dsub_rn(a, b), a - b);
  }
  template <typename T>
  __host__ __device__ static T Mul(T a, T b) {
    RN_RN(__fmul_rn(a, b), __dmul_rn(a, b), a * b);
  }
  template <typename T>
  __host__ __device__ static T Div(T a, T b) {
    RN_RN(__fdiv_rn(a, b), __ddiv_rn(a, b), a / b);
  }
  template <typename T>
  __host__ __device__ static T Sqrt(T a) {
    RN_RN(__fsqrt_rn(a), __dsqrt_rn(a), std::sqrt(a));
  }
};
#undef RN_RN

template <typename T>
__device__ __forceinline__ T Scalar(const void* p) {
  return *static_cast<const T*>(p);
}

// The variable's element that the gradient's element w updates.
__device__ __forceinline__ int64_t Element(const ApplyArgs& a, int64_t w) {
  return a.rows == nullptr ? w : a.rows[w / a.row] * a.row + w % a.row;
}

#define RN_GRID_STRIDE(w, n) \
  for (int64_t w = FirstIndex(); w < n; w += GridStride())

template <typename T>
__global__ void SgdKernel(ApplyArgs a) {
  const T* v = static_cast<const T*>(a.old[0]);
  const T* g = static_cast<const T*>(a.grad);
  T* v1 = static_cast<T*>(a.next[0]);
  const T lr = Scalar<T>(a.scalars[0]);
  RN_GRID_STRIDE(w, a.n) {
    const int64_t i = Element(a, w);
    v1[i] = optim_math::Sgd<GpuArith, T>(v[i], g[w], lr);
  }
}

template <typename T>
__global__ void MomentumKernel(ApplyArgs a) {
  const T* v = static_cast<const T*>(a.old[0]);
  const T* buf = static_cast<const T*>(a.old[1]);
  const T* g = static_cast<const T*>(a.grad);
  T* v1 = static_cast<T*>(a.next[0]);
  T* buf1 = static_cast<T*>(a.next[1]);
  const T lr = Scalar<T>(a.scalars[0]);
  const T momentum = Scalar<T>(a.scalars[1]);
  RN_GRID_STRIDE(w, a.n) {
    const int64_t i = Element(a, w);
    T b = buf[i];
    v1[i] = optim_math::Momentum<GpuArith, T>(v[i], &b, g[w], lr, momentum,
                                              a.nesterov);
    buf1[i] = b;
  }
}

template <typename T>
__global__ void AdamKernel(ApplyArgs a) {
  const T* v = static_cast<const T*>(a.old[0]);
  const T* m = static_cast<const T*>(a.old[1]);
  const T* s = static_cast<const T*>(a.old[2]);
  const T* g = static_cast<const T*>(a.grad);
  T* v1 = static_cast<T*>(a.next[0]);
  T* m1 = static_cast<T*>(a.next[1]);
  T* s1 = static_cast<T*>(a.next[2]);
  const optim_math::AdamCoefficients<T> k{
      optim_math::AdamStep<GpuArith, T>(Scalar<T>(a.scalars[0]),
                                        Scalar<T>(a.scalars[6])),
      Scalar<T>(a.scalars[1]),
      Scalar<T>(a.scalars[2]),
      Scalar<T>(a.scalars[3]),
      Scalar<T>(a.scalars[4]),
      Scalar<T>(a.scalars[5]),
      Scalar<T>(a.scalars[7])};
  RN_GRID_STRIDE(w, a.n) {
    const int64_t i = Element(a, w);
    T mi = m[i], si = s[i];
    v1[i] = optim_math::Adam<GpuArith, T>(v[i], &mi, &si, g[w], k);
    m1[i] = mi;
    s1[i] = si;
  }
}

#undef RN_GRID_STRIDE

cudaError_t Launch(void (*f32)(ApplyArgs), void (*f64)(ApplyArgs),
                   const ApplyArgs& a, cudaStream_t stream) {
  if (a.n == 0) return cudaSuccess;
  switch (a.type) {
    case ElemType::kF32:
      f32<<<Blocks(a.n), kThreads, 0, stream>>>(a);
      break;
    case ElemType::kF64:
      f64<<<Blocks(a.n), kThreads, 0, stream>>>(a);
      break;
    default:
      return cudaErrorNotSupported;
  }
  return cudaGetLastError();
}

}  // namespace

cudaError_t LaunchApplySgd(const ApplyArgs& a, cudaStream_t stream) {
  return Launch(SgdKernel<float>, SgdKernel<double>, a, stream);
}
cudaError_t LaunchApplyMomentum(const ApplyArgs& a, cudaStream_t stream) {
  return Launch(MomentumKernel<float>, MomentumKernel<double>, a, stream);
}
cudaError_t LaunchApplyAdam(const ApplyArgs& a, cudaStream_t stream) {
  return Launch(AdamKernel<float>, AdamKernel<double>, a, stream);
}

}  // namespace runnel::cuda
