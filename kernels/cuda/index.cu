// The index ops' device kernels (index.h).
#include <type_traits>

#include "kernels/cuda/elem.cuh"
#include "kernels/cuda/index.h"
#include "kernels/cuda/launch.cuh"

namespace runnel::cuda {
namespace {

template <typename W>
__global__ void GatherSlicesKernel(const W* src, const int64_t* targets, W* out,
                                   int64_t slice, int64_t total) {
  for (int64_t w = FirstIndex(); w < total; w += GridStride()) {
    out[w] = src[targets[w / slice] + w % slice];
  }
}

template <typename T>
__device__ __forceinline__ T Combine(ScatterHow how, T there, T update) {
  if constexpr (!kNumber<T>) {
    return update;
  } else {
    using C = Wide<T>;
    using U = Wrap<C>;
    const C a = Widen(there), u = Widen(update);
    C r = u;
    switch (how) {
      case ScatterHow::kAdd:
        r = static_cast<C>(static_cast<U>(a) + static_cast<U>(u));
        break;
      case ScatterHow::kMul:
        r = static_cast<C>(static_cast<U>(a) * static_cast<U>(u));
        break;
      case ScatterHow::kMax:
        r = (u > a || u != u) ? u : a;
        break;
      case ScatterHow::kMin:
        r = (u < a || u != u) ? u : a;
        break;
      case ScatterHow::kNone:
        break;
    }
    return Narrow<T>(r);
  }
}

template <typename T>
__global__ void ScatterSlicesKernel(ScatterHow how, const T* updates,
                                    const int64_t* places,
                                    const int64_t* starts, const int64_t* order,
                                    int64_t slice, int64_t total, T* out) {
  for (int64_t w = FirstIndex(); w < total; w += GridStride()) {
    const int64_t p = w / slice, e = w % slice;
    T* at = out + places[p] + e;
    T v = *at;
    for (int64_t k = starts[p]; k < starts[p + 1]; ++k) {
      v = Combine<T>(how, v, updates[order[k] * slice + e]);
    }
    *at = v;
  }
}

template <typename W>
cudaError_t GatherSlices(const void* src, const int64_t* targets, void* out,
                         int64_t slice, int64_t total, cudaStream_t stream) {
  GatherSlicesKernel<W><<<Blocks(total), kThreads, 0, stream>>>(
      static_cast<const W*>(src), targets, static_cast<W*>(out), slice, total);
  return cudaGetLastError();
}

}  // namespace

cudaError_t LaunchGatherSlices(const void* src, const int64_t* targets,
                               void* out, int64_t count, int64_t slice,
                               size_t elem_size, cudaStream_t stream) {
  const int64_t total = count * slice;
  if (total == 0) return cudaSuccess;
  switch (elem_size) {
    case 1:
      return GatherSlices<uint8_t>(src, targets, out, slice, total, stream);
    case 2:
      return GatherSlices<uint16_t>(src, targets, out, slice, total, stream);
    case 4:
      return GatherSlices<uint32_t>(src, targets, out, slice, total, stream);
    case 8:
      return GatherSlices<uint64_t>(src, targets, out, slice, total, stream);
    default:
      return cudaErrorInvalidValue;
  }
}

cudaError_t LaunchScatterSlices(ElemType type, ScatterHow how,
                                const void* updates, const int64_t* places,
                                const int64_t* starts, const int64_t* order,
                                int64_t count, int64_t slice, void* out,
                                cudaStream_t stream) {
  const int64_t total = count * slice;
  if (total == 0) return cudaSuccess;
  return WithElemType(type, [&](auto zero) -> cudaError_t {
    using T = decltype(zero);
    ScatterSlicesKernel<T><<<Blocks(total), kThreads, 0, stream>>>(
        how, static_cast<const T*>(updates), places, starts, order, slice,
        total, static_cast<T*>(out));
    return cudaGetLastError();
  });
}

}  // namespace runnel::cuda
