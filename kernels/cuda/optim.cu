// The fused optimizer updates (optim.h): one grid-stride kernel each, over
// kernels/common/optim_math.h with IEEE round-to-nearest intrinsics, which
// nvcc never contracts into a fused multiply-add, so that every element
// equals the CPU's; f16 and bf16 variables compute in f32, each result
// rounded to their type as on the CPU.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <type_traits>

#include "kernels/common/optim_math.h"
#include "kernels/cuda/elem.cuh"
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

// The 16-bit floats (storage S) compute in f32 with GpuArith, each result
// rounded to S and back, as the CPU's separate ops round each output
// (kernels/cpu/optim_kernels.cc, CpuArith).
template <typename S>
struct RoundedArith {
  __host__ __device__ static float Round(float x) {
#ifdef __CUDA_ARCH__
    return static_cast<float>(Narrow<S>(x));
#else
    return x;  // never called on the host
#endif
  }
  __host__ __device__ static float Add(float a, float b) {
    return Round(GpuArith::Add(a, b));
  }
  __host__ __device__ static float Sub(float a, float b) {
    return Round(GpuArith::Sub(a, b));
  }
  __host__ __device__ static float Mul(float a, float b) {
    return Round(GpuArith::Mul(a, b));
  }
  __host__ __device__ static float Div(float a, float b) {
    return Round(GpuArith::Div(a, b));
  }
  __host__ __device__ static float Sqrt(float a) {
    return Round(GpuArith::Sqrt(a));
  }
};

// The arithmetic for variables stored as T.
template <typename T>
using ArithOf =
    std::conditional_t<std::is_floating_point_v<T>, GpuArith, RoundedArith<T>>;

// A scalar input (on the GPU), in T's compute type.
template <typename T>
__device__ __forceinline__ Wide<T> Scalar(const void* p) {
  return Widen(*static_cast<const T*>(p));
}

// The variable's element that the gradient's element w updates.
__device__ __forceinline__ int64_t Element(const ApplyArgs& a, int64_t w) {
  return a.rows == nullptr ? w : a.rows[w / a.row] * a.row + w % a.row;
}

#define RN_GRID_STRIDE(w, n) \
  for (int64_t w = FirstIndex(); w < n; w += GridStride())

template <typename T>
__global__ void SgdKernel(ApplyArgs a) {
  using A = Wide<T>;
  using Ar = ArithOf<T>;
  const T* v = static_cast<const T*>(a.old[0]);
  const T* g = static_cast<const T*>(a.grad);
  T* v1 = static_cast<T*>(a.next[0]);
  const A lr = Scalar<T>(a.scalars[0]);
  RN_GRID_STRIDE(w, a.n) {
    const int64_t i = Element(a, w);
    v1[i] = Narrow<T>(optim_math::Sgd<Ar, A>(Widen(v[i]), Widen(g[w]), lr));
  }
}

template <typename T>
__global__ void MomentumKernel(ApplyArgs a) {
  using A = Wide<T>;
  using Ar = ArithOf<T>;
  const T* v = static_cast<const T*>(a.old[0]);
  const T* buf = static_cast<const T*>(a.old[1]);
  const T* g = static_cast<const T*>(a.grad);
  T* v1 = static_cast<T*>(a.next[0]);
  T* buf1 = static_cast<T*>(a.next[1]);
  const A lr = Scalar<T>(a.scalars[0]);
  const A momentum = Scalar<T>(a.scalars[1]);
  RN_GRID_STRIDE(w, a.n) {
    const int64_t i = Element(a, w);
    A b = Widen(buf[i]);
    v1[i] = Narrow<T>(optim_math::Momentum<Ar, A>(Widen(v[i]), &b, Widen(g[w]),
                                                  lr, momentum, a.nesterov));
    buf1[i] = Narrow<T>(b);
  }
}

template <typename T>
__global__ void AdamKernel(ApplyArgs a) {
  using A = Wide<T>;
  using Ar = ArithOf<T>;
  const T* v = static_cast<const T*>(a.old[0]);
  const T* m = static_cast<const T*>(a.old[1]);
  const T* s = static_cast<const T*>(a.old[2]);
  const T* g = static_cast<const T*>(a.grad);
  T* v1 = static_cast<T*>(a.next[0]);
  T* m1 = static_cast<T*>(a.next[1]);
  T* s1 = static_cast<T*>(a.next[2]);
  const optim_math::AdamCoefficients<A> k{
      optim_math::AdamStep<Ar, A>(Scalar<T>(a.scalars[0]),
                                  Scalar<T>(a.scalars[6])),
      Scalar<T>(a.scalars[1]),
      Scalar<T>(a.scalars[2]),
      Scalar<T>(a.scalars[3]),
      Scalar<T>(a.scalars[4]),
      Scalar<T>(a.scalars[5]),
      Scalar<T>(a.scalars[7])};
  RN_GRID_STRIDE(w, a.n) {
    const int64_t i = Element(a, w);
    A mi = Widen(m[i]), si = Widen(s[i]);
    v1[i] = Narrow<T>(
        optim_math::Adam<Ar, A>(Widen(v[i]), &mi, &si, Widen(g[w]), k));
    m1[i] = Narrow<T>(mi);
    s1[i] = Narrow<T>(si);
  }
}

#undef RN_GRID_STRIDE

// The kernel `pick(T{})` gives for the variables' type T (a float).
template <typename Pick>
cudaError_t Launch(const ApplyArgs& a, cudaStream_t stream, Pick pick) {
  if (a.n == 0) return cudaSuccess;
  return WithElemType(a.type, [&](auto zero) -> cudaError_t {
    if constexpr (!kFloat<decltype(zero)>) {
      return cudaErrorNotSupported;
    } else {
      pick(zero)<<<Blocks(a.n), kThreads, 0, stream>>>(a);
      return cudaGetLastError();
    }
  });
}

}  // namespace

cudaError_t LaunchApplySgd(const ApplyArgs& a, cudaStream_t stream) {
  return Launch(a, stream, [](auto zero) { return SgdKernel<decltype(zero)>; });
}
cudaError_t LaunchApplyMomentum(const ApplyArgs& a, cudaStream_t stream) {
  return Launch(a, stream,
                [](auto zero) { return MomentumKernel<decltype(zero)>; });
}
cudaError_t LaunchApplyAdam(const ApplyArgs& a, cudaStream_t stream) {
  return Launch(a, stream,
                [](auto zero) { return AdamKernel<decltype(zero)>; });
}

}  // namespace runnel::cuda
