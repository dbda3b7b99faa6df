// scaled_dot_product_attention on the GPU (attention.h).
#include <cstdint>
#include <cub/block/block_reduce.cuh>

#include "kernels/cuda/attention.h"
#include "kernels/cuda/launch.cuh"
#include "kernels/cuda/reducers.cuh"

namespace runnel::cuda {
namespace {

// Shared memory a block may take without asking for more.
constexpr int64_t kSharedBytes = 48 * 1024;
// At most this many blocks; each loops over the rows beyond.
constexpr int64_t kMaxBlocks = 4096;

template <typename T>
using BlockReduce = cub::BlockReduce<T, kThreads>;

__device__ bool Kept(const AttentionArgs& a, int64_t row, int64_t j) {
  return a.keep_lines == 0 ? a.keep[0]
                           : a.keep[(row % a.keep_lines) * a.tk + j];
}

// The element of row i of matrix b of an output of `rows` rows of `cols`
// (out, dout and the gradients; the heads inside with the layout bthd).
__device__ int64_t OutAt(const AttentionArgs& a, int64_t b, int64_t i,
                         int64_t rows, int64_t cols) {
  return a.heads > 0
             ? ((b / a.heads) * rows * a.heads + i * a.heads + b % a.heads) *
                   cols
             : (b * rows + i) * cols;
}

template <typename T>
__device__ T Dot(const T* x, const T* y, int64_t n) {
  T sum = 0;
  for (int64_t e = 0; e < n; ++e) sum += x[e] * y[e];
  return sum;
}

// The block's sum (R: SumR) or max (MaxR) of each thread's `v`, in every
// thread.
template <class R, typename T>
__device__ T BlockAll(T v, typename BlockReduce<T>::TempStorage& temp,
                      T& shared) {
  const T total = BlockReduce<T>(temp).Reduce(v, R());
  if (threadIdx.x == 0) shared = total;
  __syncthreads();
  const T out = shared;
  __syncthreads();
  return out;
}

// p[j] for query i of matrix b (row = b * tq + i): the masked softmax of
// its scores, 0 where dropped, all 0 when it keeps none; its max and sum
// in *max and *sum (sum 0 when it keeps none).
template <typename T>
__device__ void Probs(const AttentionArgs& a, const T* q, const T* k, int64_t b,
                      int64_t i, T* p,
                      typename BlockReduce<T>::TempStorage& temp, T& shared,
                      T* max_out, T* sum_out) {
  const int64_t row = b * a.tq + i;
  const T* qi = q + a.q_off[b] + i * a.q_stride;
  const T* kb = k + a.k_off[b];
  const T scale = static_cast<T>(a.scale);
  T max = MaxR<T>::Identity();
  for (int64_t j = threadIdx.x; j < a.tk; j += blockDim.x) {
    p[j] = scale * Dot(qi, kb + j * a.k_stride, a.d);
    if (Kept(a, row, j) && p[j] > max) max = p[j];
  }
  max = BlockAll<MaxR<T>>(max, temp, shared);
  bool any = false;
  for (int64_t j = threadIdx.x; j < a.tk; j += blockDim.x) {
    any = any || Kept(a, row, j);
  }
  const T kept = BlockAll<SumR<T>>(any ? T(1) : T(0), temp, shared);
  T sum = 0;
  for (int64_t j = threadIdx.x; j < a.tk; j += blockDim.x) {
    p[j] = kept > 0 && Kept(a, row, j) ? Exp(p[j] - max) : T(0);
    sum += p[j];
  }
  sum = BlockAll<SumR<T>>(sum, temp, shared);
  for (int64_t j = threadIdx.x; j < a.tk; j += blockDim.x) {
    if (sum > 0) p[j] /= sum;
  }
  __syncthreads();
  *max_out = max;
  *sum_out = sum;
}

template <typename T>
__global__ void AttentionRows(AttentionArgs a, const T* q, const T* k,
                              const T* v, T* out) {
  extern __shared__ unsigned char smem[];
  T* p = reinterpret_cast<T*>(smem);
  __shared__ typename BlockReduce<T>::TempStorage temp;
  __shared__ T shared;
  for (int64_t row = blockIdx.x; row < a.count * a.tq; row += gridDim.x) {
    const int64_t b = row / a.tq, i = row % a.tq;
    T max, sum;
    Probs(a, q, k, b, i, p, temp, shared, &max, &sum);
    const T* vb = v + a.v_off[b];
    for (int64_t e = threadIdx.x; e < a.dv; e += blockDim.x) {
      T acc = 0;
      for (int64_t j = 0; j < a.tk; ++j) acc += p[j] * vb[j * a.v_stride + e];
      out[OutAt(a, b, i, a.tq, a.dv) + e] = acc;
    }
    __syncthreads();
  }
}

// Per query: p again, dp[j] = dout_i . v_j, D = sum(p * dp), ds = scale *
// p * (dp - D), dq_i = ds k; the row's max, sum and D to `rows`.
template <typename T>
__global__ void AttentionGradRows(AttentionArgs a, const T* q, const T* k,
                                  const T* v, const T* dout, T* dq, T* rows) {
  extern __shared__ unsigned char smem[];
  T* p = reinterpret_cast<T*>(smem);
  T* ds = p + a.tk;
  __shared__ typename BlockReduce<T>::TempStorage temp;
  __shared__ T shared;
  const int64_t n = a.count * a.tq;
  for (int64_t row = blockIdx.x; row < n; row += gridDim.x) {
    const int64_t b = row / a.tq, i = row % a.tq;
    T max, sum;
    Probs(a, q, k, b, i, p, temp, shared, &max, &sum);
    const T* dy = dout + OutAt(a, b, i, a.tq, a.dv);
    const T* vb = v + a.v_off[b];
    T dot = 0;
    for (int64_t j = threadIdx.x; j < a.tk; j += blockDim.x) {
      ds[j] = Dot(dy, vb + j * a.v_stride, a.dv);
      dot += p[j] * ds[j];
    }
    dot = BlockAll<SumR<T>>(dot, temp, shared);
    const T scale = static_cast<T>(a.scale);
    for (int64_t j = threadIdx.x; j < a.tk; j += blockDim.x) {
      ds[j] = scale * p[j] * (ds[j] - dot);
    }
    __syncthreads();
    const T* kb = k + a.k_off[b];
    for (int64_t e = threadIdx.x; e < a.d; e += blockDim.x) {
      T acc = 0;
      for (int64_t j = 0; j < a.tk; ++j) acc += ds[j] * kb[j * a.k_stride + e];
      dq[OutAt(a, b, i, a.tq, a.d) + e] = acc;
    }
    if (threadIdx.x == 0) {
      rows[row] = max;
      rows[n + row] = sum;
      rows[2 * n + row] = dot;
    }
    __syncthreads();
  }
}

// Per key j of matrix b: for every query i, p_ij from the row's max and
// sum and ds_ij; then dk_j = sum_i ds_ij q_i and dv_j = sum_i p_ij dout_i.
template <typename T>
__global__ void AttentionGradKeys(AttentionArgs a, const T* q, const T* k,
                                  const T* v, const T* dout, const T* rows,
                                  T* dk, T* dv) {
  extern __shared__ unsigned char smem[];
  T* p = reinterpret_cast<T*>(smem);
  T* ds = p + a.tq;
  const int64_t n = a.count * a.tq;
  const T scale = static_cast<T>(a.scale);
  for (int64_t key = blockIdx.x; key < a.count * a.tk; key += gridDim.x) {
    const int64_t b = key / a.tk, j = key % a.tk;
    const T* kj = k + a.k_off[b] + j * a.k_stride;
    const T* vj = v + a.v_off[b] + j * a.v_stride;
    const T* qb = q + a.q_off[b];
    for (int64_t i = threadIdx.x; i < a.tq; i += blockDim.x) {
      const int64_t row = b * a.tq + i;
      const T sum = rows[n + row];
      const T s = scale * Dot(qb + i * a.q_stride, kj, a.d);
      p[i] = sum > 0 && Kept(a, row, j) ? Exp(s - rows[row]) / sum : T(0);
      const T dp = Dot(dout + OutAt(a, b, i, a.tq, a.dv), vj, a.dv);
      ds[i] = scale * p[i] * (dp - rows[2 * n + row]);
    }
    __syncthreads();
    for (int64_t e = threadIdx.x; e < a.d; e += blockDim.x) {
      T acc = 0;
      for (int64_t i = 0; i < a.tq; ++i) acc += ds[i] * qb[i * a.q_stride + e];
      dk[OutAt(a, b, j, a.tk, a.d) + e] = acc;
    }
    for (int64_t e = threadIdx.x; e < a.dv; e += blockDim.x) {
      T acc = 0;
      for (int64_t i = 0; i < a.tq; ++i) {
        acc += p[i] * dout[OutAt(a, b, i, a.tq, a.dv) + e];
      }
      dv[OutAt(a, b, j, a.tk, a.dv) + e] = acc;
    }
    __syncthreads();
  }
}

unsigned BlocksFor(int64_t rows) {
  return static_cast<unsigned>(rows < kMaxBlocks ? rows : kMaxBlocks);
}

// Calls f(T{}) for f32 and f64; cudaErrorNotSupported for other types.
template <class F>
cudaError_t ByType(ElemType type, F f) {
  if (type == ElemType::kF32) {
    f(float{});
  } else if (type == ElemType::kF64) {
    f(double{});
  } else {
    return cudaErrorNotSupported;
  }
  return cudaGetLastError();
}

}  // namespace

int64_t AttentionMaxLength(ElemType type) {
  return kSharedBytes / (2 * (type == ElemType::kF64 ? 8 : 4));
}

cudaError_t LaunchAttention(ElemType type, const AttentionArgs& a,
                            const void* q, const void* k, const void* v,
                            void* out, cudaStream_t stream) {
  if (a.count * a.tq == 0) return cudaSuccess;
  return ByType(type, [&](auto tag) {
    using T = decltype(tag);
    AttentionRows<T>
        <<<BlocksFor(a.count * a.tq), kThreads, a.tk * sizeof(T), stream>>>(
            a, static_cast<const T*>(q), static_cast<const T*>(k),
            static_cast<const T*>(v), static_cast<T*>(out));
  });
}

cudaError_t LaunchAttentionGrad(ElemType type, const AttentionArgs& a,
                                const void* q, const void* k, const void* v,
                                const void* dout, void* dq, void* dk, void* dv,
                                void* rows, cudaStream_t stream) {
  if (a.count * a.tq * a.tk == 0) return cudaSuccess;
  return ByType(type, [&](auto tag) {
    using T = decltype(tag);
    AttentionGradRows<T>
        <<<BlocksFor(a.count * a.tq), kThreads, 2 * a.tk * sizeof(T), stream>>>(
            a, static_cast<const T*>(q), static_cast<const T*>(k),
            static_cast<const T*>(v), static_cast<const T*>(dout),
            static_cast<T*>(dq), static_cast<T*>(rows));
    AttentionGradKeys<T>
        <<<BlocksFor(a.count * a.tk), kThreads, 2 * a.tq * sizeof(T), stream>>>(
            a, static_cast<const T*>(q), static_cast<const T*>(k),
            static_cast<const T*>(v), static_cast<const T*>(dout),
            static_cast<const T*>(rows), static_cast<T*>(dk),
            static_cast<T*>(dv));
  });
}

}  // namespace runnel::cuda
