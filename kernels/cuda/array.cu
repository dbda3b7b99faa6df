// Strided copies and fills on the GPU (array.h), by element size: the
// shape ops move bytes, so one instance per size serves every dtype.
#include <cstring>

#include "kernels/cuda/array.h"
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

template <typename T>
__global__ void GatherGradKernel(const T* dy, const int64_t* starts,
                                 const int64_t* order, T* out, int64_t n,
                                 int64_t m, int64_t inner, int64_t total) {
  for (int64_t w = FirstIndex(); w < total; w += GridStride()) {
    const int64_t i = w % inner, row = w / inner;
    const int64_t r = row % n, o = row / n;
    T acc = T(0);
    for (int64_t k = starts[r]; k < starts[r + 1]; ++k) {
      acc += dy[(o * m + order[k]) * inner + i];
    }
    out[w] = acc;
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

template <typename T>
cudaError_t GatherGrad(const void* dy, const int64_t* starts,
                       const int64_t* order, void* out, int64_t n, int64_t m,
                       int64_t inner, int64_t total, cudaStream_t stream) {
  GatherGradKernel<T><<<Blocks(total), kThreads, 0, stream>>>(
      static_cast<const T*>(dy), starts, order, static_cast<T*>(out), n, m,
      inner, total);
  return cudaGetLastError();
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

cudaError_t LaunchGatherGrad(GradType type, const void* dy,
                             const int64_t* starts, const int64_t* order,
                             void* out, int64_t outer, int64_t n, int64_t m,
                             int64_t inner, cudaStream_t stream) {
  const int64_t total = outer * n * inner;
  if (total == 0) return cudaSuccess;
  switch (type) {
    case GradType::kF32:
      return GatherGrad<float>(dy, starts, order, out, n, m, inner, total,
                               stream);
    case GradType::kF64:
      return GatherGrad<double>(dy, starts, order, out, n, m, inner, total,
                                stream);
    case GradType::kI32:
      return GatherGrad<int32_t>(dy, starts, order, out, n, m, inner, total,
                                 stream);
    case GradType::kI64:
      return GatherGrad<int64_t>(dy, starts, order, out, n, m, inner, total,
                                 stream);
  }
  return cudaErrorInvalidValue;
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
