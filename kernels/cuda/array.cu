// Strided copies and fills on the GPU (array.h), by element size: the
// shape ops move bytes, so one instance per size serves every dtype.
#include <cstring>
#include <type_traits>

#include "kernels/cuda/array.h"
#include "kernels/cuda/elem.cuh"
#include "kernels/cuda/launch.cuh"

namespace runnel::cuda {
namespace {

template <typename T>
__global__ void StridedCopyKernel(CopyPlan p, int64_t n, const T* src, T* dst) {
  for (int64_t i = FirstIndex(); i < n; i += GridStride()) {
    int64_t rest = i, s = 0, d = 0;
    for (int k = p.rank - 1; k >= 0; --k) {
      const int64_t at = rest % p.dims[k];
      rest /= p.dims[k];
      s += at * p.src[k];
      d += at * p.dst[k];
    }
    dst[d] = src[s];
  }
}

template <typename T>
__global__ void FillKernel(T* dst, int64_t n, T value) {
  for (int64_t i = FirstIndex(); i < n; i += GridStride()) dst[i] = value;
}

template <typename T>
__global__ void GatherKernel(const T* params, const int64_t* indices, T* out,
                             int64_t n, int64_t m, int64_t inner,
                             int64_t total) {
  for (int64_t w = FirstIndex(); w < total; w += GridStride()) {
    const int64_t i = w % inner, row = w / inner;
    const int64_t j = row % m, o = row / m;
    out[w] = params[(o * n + indices[j]) * inner + i];
  }
}

// 16-bit floats add up in f32 and integers wrap, as on the CPU.
template <typename T>
__global__ void GatherGradKernel(const T* dy, const int64_t* starts,
                                 const int64_t* order, T* out, int64_t n,
                                 int64_t m, int64_t inner, int64_t total) {
  using A = Wrap<Wide<T>>;
  for (int64_t w = FirstIndex(); w < total; w += GridStride()) {
    const int64_t i = w % inner, row = w / inner;
    const int64_t r = row % n, o = row / n;
    A acc = A(0);
    for (int64_t k = starts[r]; k < starts[r + 1]; ++k) {
      acc += static_cast<A>(Widen(dy[(o * m + order[k]) * inner + i]));
    }
    out[w] = Narrow<T>(acc);
  }
}

// out viewed as [outer, depth, inner]: on where indices[o, i] == d.
template <typename I, typename T>
__global__ void OneHotKernel(const I* indices, T* out, int64_t depth,
                             int64_t inner, int64_t total, T on, T off) {
  for (int64_t w = FirstIndex(); w < total; w += GridStride()) {
    const int64_t i = w % inner, row = w / inner;
    const int64_t d = row % depth, o = row / depth;
    out[w] = static_cast<int64_t>(indices[o * inner + i]) == d ? on : off;
  }
}

// Each element of x's gradient adds the elements of dy in its tiles.
template <typename T>
__global__ void TileGradKernel(TilePlan p, const T* dy, T* out, int64_t total,
                               int64_t tiles) {
  using A = Wrap<Wide<T>>;
  for (int64_t w = FirstIndex(); w < total; w += GridStride()) {
    int64_t rest = w, base = 0;
    for (int k = p.rank - 1; k >= 0; --k) {
      base += rest % p.dims[k] * p.dy_strides[k];
      rest /= p.dims[k];
    }
    A acc = A(0);
    for (int64_t t = 0; t < tiles; ++t) {
      int64_t tile = t, at = base;
      for (int k = p.rank - 1; k >= 0; --k) {
        at += tile % p.multiples[k] * p.dims[k] * p.dy_strides[k];
        tile /= p.multiples[k];
      }
      acc += static_cast<A>(Widen(dy[at]));
    }
    out[w] = Narrow<T>(acc);
  }
}

template <typename T>
cudaError_t Gather(const void* params, const int64_t* indices, void* out,
                   int64_t n, int64_t m, int64_t inner, int64_t total,
                   cudaStream_t stream) {
  GatherKernel<T><<<Blocks(total), kThreads, 0, stream>>>(
      static_cast<const T*>(params), indices, static_cast<T*>(out), n, m, inner,
      total);
  return cudaGetLastError();
}

// fn(T{}) for the element types that add up (all but bool).
template <typename Fn>
cudaError_t WithSummableType(ElemType type, Fn&& fn) {
  return WithElemType(type, [&](auto zero) -> cudaError_t {
    if constexpr (std::is_same_v<decltype(zero), bool>) {
      return cudaErrorNotSupported;
    } else {
      return fn(zero);
    }
  });
}

template <typename T>
cudaError_t Copy(const CopyPlan& p, int64_t n, const void* src, void* dst,
                 cudaStream_t stream) {
  StridedCopyKernel<T><<<Blocks(n), kThreads, 0, stream>>>(
      p, n, static_cast<const T*>(src), static_cast<T*>(dst));
  return cudaGetLastError();
}

template <typename T>
cudaError_t Fill(void* dst, int64_t n, const void* value, cudaStream_t stream) {
  T v;
  std::memcpy(&v, value, sizeof(T));
  FillKernel<T><<<Blocks(n), kThreads, 0, stream>>>(static_cast<T*>(dst), n, v);
  return cudaGetLastError();
}

}  // namespace

cudaError_t LaunchStridedCopy(const CopyPlan& plan, size_t elem_size,
                              const void* src, void* dst, cudaStream_t stream) {
  if (plan.rank < 0 || plan.rank > kMaxCopyDims) return cudaErrorInvalidValue;
  int64_t n = 1;
  for (int k = 0; k < plan.rank; ++k) n *= plan.dims[k];
  if (n == 0) return cudaSuccess;
  switch (elem_size) {
    case 1:
      return Copy<uint8_t>(plan, n, src, dst, stream);
    case 2:
      return Copy<uint16_t>(plan, n, src, dst, stream);
    case 4:
      return Copy<uint32_t>(plan, n, src, dst, stream);
    case 8:
      return Copy<uint64_t>(plan, n, src, dst, stream);
    default:
      return cudaErrorInvalidValue;
  }
}

cudaError_t LaunchGather(const void* params, const int64_t* indices, void* out,
                         int64_t outer, int64_t n, int64_t m, int64_t inner,
                         size_t elem_size, cudaStream_t stream) {
  const int64_t total = outer * m * inner;
  if (total == 0) return cudaSuccess;
  switch (elem_size) {
    case 1:
      return Gather<uint8_t>(params, indices, out, n, m, inner, total, stream);
    case 2:
      return Gather<uint16_t>(params, indices, out, n, m, inner, total, stream);
    case 4:
      return Gather<uint32_t>(params, indices, out, n, m, inner, total, stream);
    case 8:
      return Gather<uint64_t>(params, indices, out, n, m, inner, total, stream);
    default:
      return cudaErrorInvalidValue;
  }
}

cudaError_t LaunchGatherGrad(ElemType type, const void* dy,
                             const int64_t* starts, const int64_t* order,
                             void* out, int64_t outer, int64_t n, int64_t m,
                             int64_t inner, cudaStream_t stream) {
  const int64_t total = outer * n * inner;
  if (total == 0) return cudaSuccess;
  return WithSummableType(type, [&](auto zero) {
    using T = decltype(zero);
    GatherGradKernel<T><<<Blocks(total), kThreads, 0, stream>>>(
        static_cast<const T*>(dy), starts, order, static_cast<T*>(out), n, m,
        inner, total);
    return cudaGetLastError();
  });
}

namespace {

template <typename T>
cudaError_t OneHot(ElemType index_type, const void* indices, void* out,
                   int64_t depth, int64_t inner, int64_t total,
                   const void* on_value, const void* off_value,
                   cudaStream_t stream) {
  T on, off;
  std::memcpy(&on, on_value, sizeof(T));
  std::memcpy(&off, off_value, sizeof(T));
  return WithIndexType(index_type, [&](auto index) {
    using I = decltype(index);
    OneHotKernel<I, T><<<Blocks(total), kThreads, 0, stream>>>(
        static_cast<const I*>(indices), static_cast<T*>(out), depth, inner,
        total, on, off);
    return cudaGetLastError();
  });
}

}  // namespace

cudaError_t LaunchOneHot(ElemType index_type, const void* indices, void* out,
                         size_t elem_size, int64_t outer, int64_t depth,
                         int64_t inner, const void* on_value,
                         const void* off_value, cudaStream_t stream) {
  const int64_t total = outer * depth * inner;
  if (total == 0) return cudaSuccess;
  switch (elem_size) {
    case 1:
      return OneHot<uint8_t>(index_type, indices, out, depth, inner, total,
                             on_value, off_value, stream);
    case 2:
      return OneHot<uint16_t>(index_type, indices, out, depth, inner, total,
                              on_value, off_value, stream);
    case 4:
      return OneHot<uint32_t>(index_type, indices, out, depth, inner, total,
                              on_value, off_value, stream);
    case 8:
      return OneHot<uint64_t>(index_type, indices, out, depth, inner, total,
                              on_value, off_value, stream);
    default:
      return cudaErrorInvalidValue;
  }
}

cudaError_t LaunchTileGrad(ElemType type, const TilePlan& plan, const void* dy,
                           void* out, cudaStream_t stream) {
  if (plan.rank < 0 || plan.rank > kMaxCopyDims) return cudaErrorInvalidValue;
  int64_t total = 1, tiles = 1;
  for (int k = 0; k < plan.rank; ++k) {
    total *= plan.dims[k];
    tiles *= plan.multiples[k];
  }
  if (total == 0) return cudaSuccess;
  return WithSummableType(type, [&](auto zero) {
    using T = decltype(zero);
    TileGradKernel<T><<<Blocks(total), kThreads, 0, stream>>>(
        plan, static_cast<const T*>(dy), static_cast<T*>(out), total, tiles);
    return cudaGetLastError();
  });
}

cudaError_t LaunchFill(void* dst, int64_t n, const void* value,
                       size_t elem_size, cudaStream_t stream) {
  if (n == 0) return cudaSuccess;
  switch (elem_size) {
    case 1:
      return Fill<uint8_t>(dst, n, value, stream);
    case 2:
      return Fill<uint16_t>(dst, n, value, stream);
    case 4:
      return Fill<uint32_t>(dst, n, value, stream);
    case 8:
      return Fill<uint64_t>(dst, n, value, stream);
    default:
      return cudaErrorInvalidValue;
  }
}

}  // namespace runnel::cuda
