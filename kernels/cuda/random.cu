// Random numbers on the GPU (random.h): one grid-stride kernel per op and
// type; element i reads counter `first + i` of the node's stream.
#include <algorithm>
#include <cstdint>
#include <type_traits>

#include "kernels/cuda/launch.cuh"
#include "kernels/cuda/random.h"

namespace runnel::cuda {
namespace {

#define RN_GRID_STRIDE(i, n) \
  for (int64_t i = FirstIndex(); i < n; i += GridStride())

template <typename T>
__global__ void RandomKernel(RandomArgs a, T* out) {
  RN_GRID_STRIDE(i, a.n) {
    if constexpr (std::is_integral_v<T>) {
      out[i] = static_cast<T>(static_cast<uint64_t>(a.min_int) +
                              a.stream.UniformInt(i, a.range));
    } else if (a.dist == Distribution::kUniform) {
      const double v =
          philox::Affine(a.stream.Uniform(i), a.max - a.min, a.min);
      const T t = static_cast<T>(v);
      out[i] = a.max > a.min && static_cast<double>(t) >= a.max
                   ? static_cast<T>(a.below_max)
                   : t;
    } else {
      const double z = a.dist == Distribution::kNormal
                           ? a.stream.Normal(i)
                           : a.stream.TruncatedNormal(i);
      out[i] = static_cast<T>(philox::Affine(z, a.stddev, a.mean));
    }
  }
}

__device__ __forceinline__ float Times(float a, float b) {
  return __fmul_rn(a, b);
}
__device__ __forceinline__ double Times(double a, double b) {
  return __dmul_rn(a, b);
}

template <typename T>
__global__ void DropoutKernel(int64_t n, philox::Stream s, double rate, T kept,
                              const T* x, T* y, T* scale) {
  RN_GRID_STRIDE(i, n) {
    if (s.Uniform(i) < rate) {
      scale[i] = T(0);
      y[i] = T(0);
    } else {
      scale[i] = kept;
      y[i] = Times(x[i], kept);
    }
  }
}

template <typename T>
__global__ void FillOneKernel(int64_t n, T* out) {
  RN_GRID_STRIDE(i, n) { out[i] = T(1); }
}

#undef RN_GRID_STRIDE

}  // namespace

cudaError_t LaunchRandom(const RandomArgs& a, void* out, cudaStream_t stream) {
  if (a.n == 0) return cudaSuccess;
  const bool floats = a.type == ElemType::kF32 || a.type == ElemType::kF64;
  if (!floats && a.dist != Distribution::kUniform) return cudaErrorNotSupported;
  switch (a.type) {
    case ElemType::kF32:
      RandomKernel<<<Blocks(a.n), kThreads, 0, stream>>>(
          a, static_cast<float*>(out));
      break;
    case ElemType::kF64:
      RandomKernel<<<Blocks(a.n), kThreads, 0, stream>>>(
          a, static_cast<double*>(out));
      break;
    case ElemType::kI32:
      RandomKernel<<<Blocks(a.n), kThreads, 0, stream>>>(
          a, static_cast<int32_t*>(out));
      break;
    case ElemType::kI64:
      RandomKernel<<<Blocks(a.n), kThreads, 0, stream>>>(
          a, static_cast<int64_t*>(out));
      break;
    default:
      return cudaErrorNotSupported;
  }
  return cudaGetLastError();
}

cudaError_t LaunchDropout(ElemType type, int64_t n, philox::Stream s,
                          double rate, double kept, const void* x, void* y,
                          void* scale, cudaStream_t stream) {
  if (n == 0) return cudaSuccess;
  switch (type) {
    case ElemType::kF32:
      DropoutKernel<<<Blocks(n), kThreads, 0, stream>>>(
          n, s, rate, static_cast<float>(kept), static_cast<const float*>(x),
          static_cast<float*>(y), static_cast<float*>(scale));
      break;
    case ElemType::kF64:
      DropoutKernel<<<Blocks(n), kThreads, 0, stream>>>(
          n, s, rate, kept, static_cast<const double*>(x),
          static_cast<double*>(y), static_cast<double*>(scale));
      break;
    default:
      return cudaErrorNotSupported;
  }
  return cudaGetLastError();
}

cudaError_t LaunchFillOne(ElemType type, int64_t n, void* out,
                          cudaStream_t stream) {
  if (n == 0) return cudaSuccess;
  switch (type) {
    case ElemType::kF32:
      FillOneKernel<<<Blocks(n), kThreads, 0, stream>>>(
          n, static_cast<float*>(out));
      break;
    case ElemType::kF64:
      FillOneKernel<<<Blocks(n), kThreads, 0, stream>>>(
          n, static_cast<double*>(out));
      break;
    default:
      return cudaErrorNotSupported;
  }
  return cudaGetLastError();
}

}  // namespace runnel::cuda
