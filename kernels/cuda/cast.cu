// cast on the GPU (cast.h): one kernel per (from, to) pair, each element
// converted as the CPU kernel converts it (kernels/cpu/cwise_cast_kernels.cc).
// The 16-bit floats are their bit patterns, converted here with the
// rounding of base/float16.h (Eigen's), not CUDA's intrinsics, so that
// both devices give the same bits.
#include <cstdint>
#include <type_traits>

#include "kernels/cuda/cast.h"
#include "kernels/cuda/launch.cuh"

namespace runnel::cuda {
namespace {

// Storage of f16 and bf16: distinct types over their 16 bits.
struct F16 {
  uint16_t bits;
};
struct BF16 {
  uint16_t bits;
};

template <typename T>
inline constexpr bool kHalfLike =
    std::is_same_v<T, F16> || std::is_same_v<T, BF16>;

__device__ __forceinline__ uint32_t Bits(float f) { return __float_as_uint(f); }

// Round to nearest even; NaN to the quiet NaN 0x7e00, infinities and
// values past the largest half to infinity (Eigen's float_to_half_rtne).
__device__ __forceinline__ F16 FloatToF16(float f) {
  uint32_t u = Bits(f);
  const uint32_t sign = u & 0x80000000u;
  u ^= sign;
  uint16_t h;
  if (u >= (127u + 16u) << 23) {  // |f| >= 65536, inf or NaN
    h = u > (255u << 23) ? 0x7e00 : 0x7c00;
  } else if (u < (113u << 23)) {  // a subnormal half or zero
    // Adding 0.5 (scaled) rounds the mantissa to nearest even in float
    // arithmetic, which the device does in round-to-nearest-even.
    const float magic =
        __uint_as_float(((127u - 15u) + (23u - 10u) + 1u) << 23);
    const float sum = __uint_as_float(u) + magic;
    h = static_cast<uint16_t>(Bits(sum) - Bits(magic));
  } else {
    const uint32_t odd = (u >> 13) & 1u;
    u += (static_cast<uint32_t>(15 - 127) << 23) + 0xfffu;
    u += odd;
    h = static_cast<uint16_t>(u >> 13);
  }
  return F16{static_cast<uint16_t>(h | (sign >> 16))};
}

// Exact.
__device__ __forceinline__ float F16ToFloat(F16 x) {
  const uint32_t sign = static_cast<uint32_t>(x.bits & 0x8000u) << 16;
  const uint32_t exp = (x.bits >> 10) & 0x1fu;
  const uint32_t mant = x.bits & 0x3ffu;
  if (exp == 0x1f) return __uint_as_float(sign | 0x7f800000u | (mant << 13));
  if (exp != 0) {
    return __uint_as_float(sign | ((exp + 112u) << 23) | (mant << 13));
  }
  // Zero or subnormal: mant * 2^-24, exact in float.
  const float v = static_cast<float>(mant) * 5.9604644775390625e-8f;
  return sign != 0 ? -v : v;
}

// Round to nearest even; NaN to the quiet NaN 0x7fc0 with its sign
// (Eigen's float_to_bfloat16_rtne).
__device__ __forceinline__ BF16 FloatToBF16(float f) {
  const uint32_t u = Bits(f);
  if (f != f) return BF16{static_cast<uint16_t>((u >> 16 & 0x8000u) | 0x7fc0u)};
  const uint32_t rounded = u + 0x7fffu + ((u >> 16) & 1u);
  return BF16{static_cast<uint16_t>(rounded >> 16)};
}

__device__ __forceinline__ float BF16ToFloat(BF16 x) {
  return __uint_as_float(static_cast<uint32_t>(x.bits) << 16);
}

// The integer types' ranges (std::numeric_limits is host-only for nvcc).
template <typename T>
struct Range;
template <>
struct Range<int8_t> {
  static constexpr int8_t kLo = -128, kHi = 127;
};
template <>
struct Range<uint8_t> {
  static constexpr uint8_t kLo = 0, kHi = 255;
};
template <>
struct Range<int32_t> {
  static constexpr int32_t kLo = INT32_MIN, kHi = INT32_MAX;
};
template <>
struct Range<int64_t> {
  static constexpr int64_t kLo = INT64_MIN, kHi = INT64_MAX;
};

// Floats to integers: toward zero, saturating, NaN to 0.
template <typename To, typename From>
__device__ __forceinline__ To SaturatingFloatToInt(From v) {
  constexpr To kLo = Range<To>::kLo;
  constexpr To kHi = Range<To>::kHi;
  constexpr From lo = static_cast<From>(kLo);
  constexpr From hi = static_cast<From>(kHi);  // kHi, or the power of 2 above
  From c = v != v ? From(0) : v;
  c = c < lo ? lo : c;
  return c >= hi ? kHi : static_cast<To>(c);
}

// A value of a type that is neither f16 nor bf16 converted to To (neither).
template <typename To, typename From>
__device__ __forceinline__ To Plain(From v) {
  if constexpr (std::is_same_v<To, bool>) {
    return v != From(0);
  } else if constexpr (std::is_floating_point_v<From> &&
                       std::is_integral_v<To>) {
    return SaturatingFloatToInt<To>(v);
  } else {
    return static_cast<To>(v);  // integers wrap (two's complement)
  }
}

template <typename To, typename From>
__device__ __forceinline__ To Convert(From v) {
  if constexpr (kHalfLike<From>) {
    float f;
    if constexpr (std::is_same_v<From, F16>) {
      f = F16ToFloat(v);
    } else {
      f = BF16ToFloat(v);
    }
    return Convert<To>(f);
  } else if constexpr (std::is_same_v<To, F16>) {
    return FloatToF16(Plain<float>(v));
  } else if constexpr (std::is_same_v<To, BF16>) {
    return FloatToBF16(Plain<float>(v));
  } else {
    return Plain<To>(v);
  }
}

template <typename From, typename To>
__global__ void CastKernel(const From* x, To* y, int64_t n) {
  for (int64_t i = FirstIndex(); i < n; i += GridStride()) {
    y[i] = Convert<To>(x[i]);
  }
}

template <typename From, typename To>
cudaError_t Cast(const void* x, void* y, int64_t n, cudaStream_t stream) {
  CastKernel<From, To><<<Blocks(n), kThreads, 0, stream>>>(
      static_cast<const From*>(x), static_cast<To*>(y), n);
  return cudaGetLastError();
}

// The host's names of the 16-bit storage types (base/float16.h), for the
// dtype table's host column: the cast works on their bits as the host does.
using Half = F16;
using BFloat16 = BF16;

// Calls `f` with a value of the storage type of `t`.
template <typename F>
cudaError_t ByType(ElemType t, F f) {
#define RUNNEL_CAST_CASE(Name, name, Host, ...) \
  case ElemType::k##Name:                       \
    return f(Host{});
  switch (t) { RUNNEL_DTYPES(RUNNEL_CAST_CASE) }
#undef RUNNEL_CAST_CASE
  return cudaErrorNotSupported;
}

}  // namespace

cudaError_t LaunchCast(ElemType from, ElemType to, const void* x, void* y,
                       int64_t n, cudaStream_t stream) {
  if (n == 0) return cudaSuccess;
  return ByType(from, [&](auto f) {
    return ByType(to, [&](auto t) {
      return Cast<decltype(f), decltype(t)>(x, y, n, stream);
    });
  });
}

}  // namespace runnel::cuda
