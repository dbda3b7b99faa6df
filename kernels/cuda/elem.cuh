// Device-side helpers of the GPU templates (cwise.cu, reduce.cu, nn.cu) for
// the element types of cwise.h: the 16-bit floats are stored as CUDA's
// __half and __nv_bfloat16, widened to f32 to compute, and rounded to
// nearest even when stored, as the CPU kernels do (base/float16.h).
// Only .cu files include this.
#ifndef RUNNEL_KERNELS_CUDA_ELEM_CUH_
#define RUNNEL_KERNELS_CUDA_ELEM_CUH_

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>
#include <type_traits>

#include "kernels/cuda/cwise.h"
#include "kernels/cuda/launch.cuh"

namespace runnel::cuda {

// The type an element of storage type T is computed in: f32 for the 16-bit
// floats, T itself otherwise.
template <typename T>
struct WideOf {
  using type = T;
};
template <>
struct WideOf<__half> {
  using type = float;
};
template <>
struct WideOf<__nv_bfloat16> {
  using type = float;
};
template <typename T>
using Wide = typename WideOf<T>::type;

template <typename T>
__device__ __forceinline__ Wide<T> Widen(T x) {
  return static_cast<Wide<T>>(x);
}

// v stored as Out; the 16-bit floats round to nearest even.
template <typename Out, typename C>
__device__ __forceinline__ Out Narrow(C v) {
  if constexpr (std::is_same_v<Out, __half>) {
    return __float2half_rn(static_cast<float>(v));
  } else if constexpr (std::is_same_v<Out, __nv_bfloat16>) {
    return __float2bfloat16_rn(static_cast<float>(v));
  } else {
    return static_cast<Out>(v);
  }
}

// Whether T is computed as a float (f16, bf16, f32, f64).
template <typename T>
inline constexpr bool kFloat = std::is_floating_point_v<Wide<T>>;
template <typename T>
inline constexpr bool kNumber = !std::is_same_v<T, bool>;

// Integer arithmetic wraps around (two's complement) as on the CPU,
// computed in the unsigned twin where overflow is defined.
template <typename T, bool = std::is_integral_v<T>&& kNumber<T>>
struct WrapOf {
  using type = T;
};
template <typename T>
struct WrapOf<T, true> {
  using type = std::make_unsigned_t<T>;
};
template <typename T>
using Wrap = typename WrapOf<T>::type;

// Whether the GPU's arithmetic kernels take T: every storage type but the
// 8-bit integers, which no GPU kernel that computes registers (they stay on
// the CPU; only one_hot reads them, as indices: WithIndexType).
template <typename T>
inline constexpr bool kComputedOnGpu =
    !(std::is_integral_v<T> && sizeof(T) == 1 && !std::is_same_v<T, bool>);

// Calls fn(T{}) with T the storage type of `type`, returning its result;
// cudaErrorNotSupported for i8 and u8, so that each template is compiled
// for the seven types its kernels register.
template <typename Fn>
cudaError_t WithElemType(ElemType type, Fn&& fn) {
#define RUNNEL_ELEM_TYPE_CASE(Name, name, Host, Gpu, ...) \
  case ElemType::k##Name:                                 \
    if constexpr (kComputedOnGpu<Gpu>) {                  \
      return fn(Gpu{});                                   \
    } else {                                              \
      return cudaErrorNotSupported;                       \
    }
  switch (type) { RUNNEL_DTYPES(RUNNEL_ELEM_TYPE_CASE) }
#undef RUNNEL_ELEM_TYPE_CASE
  return cudaErrorNotSupported;
}

// Calls fn(I{}) with I the integer type of `type` (the 8-bit ones too);
// cudaErrorInvalidValue for the others.
template <typename Fn>
cudaError_t WithIndexType(ElemType type, Fn&& fn) {
#define RUNNEL_INDEX_TYPE_CASE(Name, name, Host, Gpu, ...)       \
  case ElemType::k##Name:                                        \
    if constexpr (std::is_integral_v<Gpu> &&                     \
                  !std::is_same_v<Gpu, bool>) {                  \
      return fn(Gpu{});                                          \
    } else {                                                     \
      return cudaErrorInvalidValue;                              \
    }
  switch (type) { RUNNEL_DTYPES(RUNNEL_INDEX_TYPE_CASE) }
#undef RUNNEL_INDEX_TYPE_CASE
  return cudaErrorInvalidValue;
}

}  // namespace runnel::cuda

#endif  // RUNNEL_KERNELS_CUDA_ELEM_CUH_
