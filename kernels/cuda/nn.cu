// Softmax, log_softmax and the softmax cross-entropies (nn.h). Each works
// on lines (a row of classes, or the elements along softmax's axis): the
// line's max, then the sum of exp(x - max), then the result. Long
// contiguous lines get a block of threads each (cub::BlockReduce), others a
// thread each (neighbouring threads then read neighbouring columns when
// the line is strided).
#include <cstdint>
#include <cub/block/block_reduce.cuh>
#include <type_traits>

#include "kernels/cuda/elem.cuh"
#include "kernels/cuda/nn.h"
#include "kernels/cuda/reducers.cuh"

namespace runnel::cuda {
namespace {

// A contiguous line at least this long gets a block.
constexpr int64_t kMinBlockLine = 64;

template <typename C>
using BlockReduce = cub::BlockReduce<C, kThreads>;

// The lines one thread (kBlock false) or one block (kBlock true) works on,
// and the positions within a line it takes.
template <bool kBlock>
struct Walk {
  __device__ static int64_t FirstLine() {
    return kBlock ? static_cast<int64_t>(blockIdx.x) : FirstIndex();
  }
  __device__ static int64_t LineStride() {
    return kBlock ? static_cast<int64_t>(gridDim.x) : GridStride();
  }
  __device__ static int64_t First() { return kBlock ? threadIdx.x : 0; }
  __device__ static int64_t Step() { return kBlock ? blockDim.x : 1; }
};

// The reduction R of f(k) over k < len, by the thread or by the block
// (whose every thread gets the result; all must call it).
template <bool kBlock, class R, typename C, class F>
__device__ C LineReduce(int64_t len, F f,
                        typename BlockReduce<C>::TempStorage& temp, C& shared) {
  C acc = R::Identity();
  for (int64_t k = Walk<kBlock>::First(); k < len; k += Walk<kBlock>::Step()) {
    acc = R()(acc, f(k));
  }
  if constexpr (kBlock) {
    const C total = BlockReduce<C>(temp).Reduce(acc, R());
    if (threadIdx.x == 0) shared = total;
    __syncthreads();
    acc = shared;
    __syncthreads();  // `temp` and `shared` serve the next reduction
  }
  return acc;
}

// With `keep` (masked_softmax: inner is 1), line l takes element k where
// keep[(l % keep_lines) * len + k] is true; the others are 0, and so is a
// line that keeps none.
template <bool kBlock, bool kLog, typename T>
__global__ void __launch_bounds__(kThreads)
    SoftmaxLines(const T* x, T* y, int64_t lines, int64_t len, int64_t inner,
                 const bool* keep, int64_t keep_lines) {
  using C = Wide<T>;
  __shared__ typename BlockReduce<C>::TempStorage temp;
  __shared__ C shared;
  for (int64_t l = Walk<kBlock>::FirstLine(); l < lines;
       l += Walk<kBlock>::LineStride()) {
    const int64_t base = (l / inner) * len * inner + l % inner;
    const bool* kept =
        keep == nullptr ? nullptr : keep + (l % keep_lines) * len;
    auto in = [&](int64_t k) { return kept == nullptr || kept[k]; };
    auto at = [&](int64_t k) { return Widen(x[base + k * inner]); };
    if (kept != nullptr &&
        LineReduce<kBlock, SumR<C>>(
            len, [&](int64_t k) { return in(k) ? C(1) : C(0); }, temp,
            shared) == C(0)) {
      for (int64_t k = Walk<kBlock>::First(); k < len;
           k += Walk<kBlock>::Step()) {
        y[base + k] = Narrow<T>(C(0));
      }
      continue;
    }
    const C m = LineReduce<kBlock, MaxR<C>>(
        len, [&](int64_t k) { return in(k) ? at(k) : MaxR<C>::Identity(); },
        temp, shared);
    const C s = LineReduce<kBlock, SumR<C>>(
        len, [&](int64_t k) { return in(k) ? Exp(at(k) - m) : C(0); }, temp,
        shared);
    for (int64_t k = Walk<kBlock>::First(); k < len;
         k += Walk<kBlock>::Step()) {
      const C v = at(k) - m;
      y[base + k * inner] = Narrow<T>(!in(k) ? C(0)
                                      : kLog ? v - Log(s)
                                             : Exp(v) / s);
    }
  }
}

template <bool kBlock, typename T>
__global__ void __launch_bounds__(kThreads)
    SoftmaxGradLines(const T* dy, const T* y, T* dx, int64_t lines,
                     int64_t len) {
  using C = Wide<T>;
  __shared__ typename BlockReduce<C>::TempStorage temp;
  __shared__ C shared;
  for (int64_t l = Walk<kBlock>::FirstLine(); l < lines;
       l += Walk<kBlock>::LineStride()) {
    const int64_t base = l * len;
    const C dot = LineReduce<kBlock, SumR<C>>(
        len,
        [&](int64_t k) { return Widen(dy[base + k]) * Widen(y[base + k]); },
        temp, shared);
    for (int64_t k = Walk<kBlock>::First(); k < len;
         k += Walk<kBlock>::Step()) {
      dx[base + k] =
          Narrow<T>((Widen(dy[base + k]) - dot) * Widen(y[base + k]));
    }
  }
}

inline __device__ float Rsqrt(float v) { return 1.0f / sqrtf(v); }
inline __device__ double Rsqrt(double v) { return 1.0 / sqrt(v); }

template <bool kBlock, typename T>
__global__ void __launch_bounds__(kThreads)
    LayerNormRows(const T* x, const T* scale, const T* offset, T* y,
                  Wide<T>* mean, Wide<T>* rstd, int64_t rows, int64_t n,
                  double eps) {
  using C = Wide<T>;
  __shared__ typename BlockReduce<C>::TempStorage temp;
  __shared__ C shared;
  for (int64_t r = Walk<kBlock>::FirstLine(); r < rows;
       r += Walk<kBlock>::LineStride()) {
    const T* row = x + r * n;
    auto at = [&](int64_t k) { return Widen(row[k]); };
    const C m = LineReduce<kBlock, SumR<C>>(n, at, temp, shared) / C(n);
    const C var = LineReduce<kBlock, SumR<C>>(
                      n,
                      [&](int64_t k) {
                        const C d = at(k) - m;
                        return d * d;
                      },
                      temp, shared) /
                  C(n);
    const C rs = Rsqrt(var + C(eps));
    if (Walk<kBlock>::First() == 0) {
      mean[r] = m;
      rstd[r] = rs;
    }
    for (int64_t k = Walk<kBlock>::First(); k < n; k += Walk<kBlock>::Step()) {
      y[r * n + k] =
          Narrow<T>((at(k) - m) * rs * Widen(scale[k]) + Widen(offset[k]));
    }
  }
}

template <bool kBlock, typename T>
__global__ void __launch_bounds__(kThreads)
    LayerNormGradRows(const T* dy, const T* x, const T* scale,
                      const Wide<T>* mean, const Wide<T>* rstd, T* dx,
                      int64_t rows, int64_t n) {
  using C = Wide<T>;
  __shared__ typename BlockReduce<C>::TempStorage temp;
  __shared__ C shared;
  for (int64_t r = Walk<kBlock>::FirstLine(); r < rows;
       r += Walk<kBlock>::LineStride()) {
    const int64_t base = r * n;
    const C m = mean[r], rs = rstd[r];
    auto xh = [&](int64_t k) { return (Widen(x[base + k]) - m) * rs; };
    auto g = [&](int64_t k) { return Widen(dy[base + k]) * Widen(scale[k]); };
    const C mg = LineReduce<kBlock, SumR<C>>(n, g, temp, shared) / C(n);
    const C mgx =
        LineReduce<kBlock, SumR<C>>(
            n, [&](int64_t k) { return g(k) * xh(k); }, temp, shared) /
        C(n);
    for (int64_t k = Walk<kBlock>::First(); k < n; k += Walk<kBlock>::Step()) {
      dx[base + k] = Narrow<T>(rs * (g(k) - mg - xh(k) * mgx));
    }
  }
}

// dscale[j] = sum_r dy[r, j] * xhat[r, j] and doffset[j] = sum_r dy[r, j],
// a thread per column j (neighbouring threads read neighbouring columns).
template <typename T>
__global__ void __launch_bounds__(kThreads)
    LayerNormParamGrads(const T* dy, const T* x, const Wide<T>* mean,
                        const Wide<T>* rstd, T* dscale, T* doffset,
                        int64_t rows, int64_t n) {
  using C = Wide<T>;
  for (int64_t j = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; j < n;
       j += int64_t{gridDim.x} * blockDim.x) {
    C ds = C(0), doff = C(0);
    for (int64_t r = 0; r < rows; ++r) {
      const C d = Widen(dy[r * n + j]);
      ds += d * (Widen(x[r * n + j]) - mean[r]) * rstd[r];
      doff += d;
    }
    dscale[j] = Narrow<T>(ds);
    doffset[j] = Narrow<T>(doff);
  }
}

// ---- batch normalisation: sums per channel over chunks of rows --------------

constexpr int64_t kChunkRows = 256;

// What the per-channel sums add up, element i (channel ch) of x [rows, c].
template <typename T>
struct SumOf {  // x
  const T* x;
  __device__ Wide<T> operator()(int64_t i, int64_t) const {
    return Widen(x[i]);
  }
};
template <typename T>
struct SquaredDeviation {  // (x - mean)^2
  const T* x;
  const Wide<T>* mean;
  __device__ Wide<T> operator()(int64_t i, int64_t ch) const {
    const Wide<T> d = Widen(x[i]) - mean[ch];
    return d * d;
  }
};
template <typename T>
struct DyTimesXhat {  // dy * (x - mean) * rstd
  const T* dy;
  const T* x;
  const Wide<T>* mean;
  const Wide<T>* variance;
  Wide<T> eps;
  __device__ Wide<T> operator()(int64_t i, int64_t ch) const {
    return Widen(dy[i]) * (Widen(x[i]) - mean[ch]) * Rsqrt(variance[ch] + eps);
  }
};

// partial[k * c + ch] = sum of f over chunk k's rows of channel ch: a
// thread per (chunk, channel).
template <typename T, class F>
__global__ void __launch_bounds__(kThreads)
    ChannelPartials(F f, Wide<T>* partial, int64_t rows, int64_t c) {
  const int64_t chunks = (rows + kChunkRows - 1) / kChunkRows;
  for (int64_t t = blockIdx.x * int64_t{blockDim.x} + threadIdx.x;
       t < chunks * c; t += int64_t{gridDim.x} * blockDim.x) {
    const int64_t k = t / c, ch = t % c;
    const int64_t last = min(rows, (k + 1) * kChunkRows);
    Wide<T> acc = Wide<T>(0);
    for (int64_t r = k * kChunkRows; r < last; ++r) acc += f(r * c + ch, ch);
    partial[t] = acc;
  }
}

// out[ch] = the partials of channel ch, in chunk order, times `factor`.
template <typename T, typename Out>
__global__ void __launch_bounds__(kThreads)
    ChannelTotals(const Wide<T>* partial, Out* out, int64_t chunks, int64_t c,
                  Wide<T> factor) {
  for (int64_t ch = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; ch < c;
       ch += int64_t{gridDim.x} * blockDim.x) {
    Wide<T> acc = Wide<T>(0);
    for (int64_t k = 0; k < chunks; ++k) acc += partial[k * c + ch];
    out[ch] = Narrow<Out>(acc * factor);
  }
}

template <typename T>
__global__ void __launch_bounds__(kThreads)
    BatchNormApply(const T* x, const T* scale, const T* offset,
                   const Wide<T>* mean, const Wide<T>* variance, T* y,
                   int64_t n, int64_t c, Wide<T> eps) {
  for (int64_t i = FirstIndex(); i < n; i += GridStride()) {
    const int64_t ch = i % c;
    y[i] = Narrow<T>((Widen(x[i]) - mean[ch]) * Rsqrt(variance[ch] + eps) *
                         Widen(scale[ch]) +
                     Widen(offset[ch]));
  }
}

template <typename T>
__global__ void __launch_bounds__(kThreads)
    BatchNormGradApply(const T* dy, const T* x, const T* scale,
                       const Wide<T>* mean, const Wide<T>* variance,
                       const T* dscale, const T* doffset, T* dx, int64_t n,
                       int64_t c, Wide<T> rows, Wide<T> eps) {
  for (int64_t i = FirstIndex(); i < n; i += GridStride()) {
    const int64_t ch = i % c;
    const Wide<T> rs = Rsqrt(variance[ch] + eps);
    const Wide<T> xh = (Widen(x[i]) - mean[ch]) * rs;
    dx[i] = Narrow<T>(Widen(scale[ch]) * rs *
                      (Widen(dy[i]) - Widen(doffset[ch]) / rows -
                       xh * Widen(dscale[ch]) / rows));
  }
}

// The sum of f per channel into out (times factor), through the partials.
template <typename T, class F, typename Out>
void ChannelSum(F f, Out* out, Wide<T>* scratch, int64_t rows, int64_t c,
                Wide<T> factor, cudaStream_t stream) {
  const int64_t chunks = (rows + kChunkRows - 1) / kChunkRows;
  ChannelPartials<T>
      <<<Blocks(chunks * c), kThreads, 0, stream>>>(f, scratch, rows, c);
  ChannelTotals<T>
      <<<Blocks(c), kThreads, 0, stream>>>(scratch, out, chunks, c, factor);
}

// log(sum(exp(row))) as the CPU computes it: max + log(sum(exp(row - max))).
template <bool kBlock, typename T, typename C = Wide<T>>
__device__ C RowLogSumExp(const T* row, int64_t classes,
                          typename BlockReduce<C>::TempStorage& temp,
                          C& shared) {
  auto at = [&](int64_t k) { return Widen(row[k]); };
  const C m = LineReduce<kBlock, MaxR<C>>(classes, at, temp, shared);
  const C s = LineReduce<kBlock, SumR<C>>(
      classes, [&](int64_t k) { return Exp(at(k) - m); }, temp, shared);
  return m + Log(s);
}

template <bool kBlock, typename T>
__global__ void __launch_bounds__(kThreads)
    SoftmaxCrossEntropyRows(const T* logits, const T* probs, T* loss,
                            int64_t rows, int64_t classes) {
  using C = Wide<T>;
  __shared__ typename BlockReduce<C>::TempStorage temp;
  __shared__ C shared;
  for (int64_t r = Walk<kBlock>::FirstLine(); r < rows;
       r += Walk<kBlock>::LineStride()) {
    const T* x = logits + r * classes;
    const T* p = probs + r * classes;
    const C lse = RowLogSumExp<kBlock>(x, classes, temp, shared);
    const C l = LineReduce<kBlock, SumR<C>>(
        classes, [&](int64_t k) { return Widen(p[k]) * (lse - Widen(x[k])); },
        temp, shared);
    if (Walk<kBlock>::First() == 0) loss[r] = Narrow<T>(l);
  }
}

template <bool kBlock, typename T, typename L>
__global__ void __launch_bounds__(kThreads)
    SparseSoftmaxCrossEntropyRows(const T* logits, const L* labels, T* loss,
                                  int64_t rows, int64_t classes,
                                  unsigned long long* first_bad) {
  using C = Wide<T>;
  __shared__ typename BlockReduce<C>::TempStorage temp;
  __shared__ C shared;
  for (int64_t r = Walk<kBlock>::FirstLine(); r < rows;
       r += Walk<kBlock>::LineStride()) {
    const T* x = logits + r * classes;
    const C lse = RowLogSumExp<kBlock>(x, classes, temp, shared);
    if (Walk<kBlock>::First() != 0) continue;
    const L label = labels[r];
    if (label < 0 || label >= classes) {
      atomicMin(first_bad, static_cast<unsigned long long>(r));
      loss[r] = Narrow<T>(::cuda::std::numeric_limits<C>::quiet_NaN());
    } else {
      loss[r] = Narrow<T>(lse - Widen(x[label]));
    }
  }
}

// Running sums of `lines` lines of `len` elements `inner` apart.
template <typename T>
__global__ void __launch_bounds__(kThreads)
    CumsumLines(const T* x, T* y, int64_t lines, int64_t len, int64_t inner,
                bool exclusive, bool reverse) {
  using C = Wrap<Wide<T>>;
  for (int64_t l = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; l < lines;
       l += int64_t{gridDim.x} * blockDim.x) {
    const int64_t start = (l / inner) * len * inner + l % inner;
    C sum = C(0);
    for (int64_t k = 0; k < len; ++k) {
      const int64_t at = start + (reverse ? len - 1 - k : k) * inner;
      const C v = static_cast<C>(Widen(x[at]));
      if (!exclusive) sum += v;
      y[at] = Narrow<T>(static_cast<Wide<T>>(sum));
      if (exclusive) sum += v;
    }
  }
}

// For a float `type` T, calls launch(T{}), which launches kernels, and
// returns their launch error; cudaErrorNotSupported for other types.
template <class Launch>
cudaError_t WithFloatType(ElemType type, Launch launch) {
  return WithElemType(type, [&](auto tag) -> cudaError_t {
    if constexpr (!kFloat<decltype(tag)>) {
      return cudaErrorNotSupported;
    } else {
      launch(tag);
      return cudaGetLastError();
    }
  });
}

// For a float `type` T, calls launch(T{}, kBlock, blocks) to launch a
// kernel with a block per line (kBlock true: long contiguous lines) or a
// thread per line (false).
template <class Launch>
cudaError_t ByLine(ElemType type, int64_t lines, int64_t len, int64_t inner,
                   Launch launch) {
  return WithFloatType(type, [&](auto tag) {
    if (lines == 0) return;
    if (inner == 1 && len >= kMinBlockLine) {
      launch(tag, std::true_type{},
             static_cast<unsigned>(lines < (1 << 20) ? lines : (1 << 20)));
    } else {
      launch(tag, std::false_type{}, Blocks(lines));
    }
  });
}

}  // namespace

cudaError_t LaunchSoftmax(ElemType type, bool log, const void* x, void* y,
                          int64_t outer, int64_t len, int64_t inner,
                          cudaStream_t stream, const bool* keep,
                          int64_t keep_lines) {
  if (outer * len * inner == 0) return cudaSuccess;
  return ByLine(
      type, outer * inner, len, inner,
      [&](auto tag, auto block, unsigned blocks) {
        using T = decltype(tag);
        constexpr bool kBlock = decltype(block)::value;
        const T* in = static_cast<const T*>(x);
        T* out = static_cast<T*>(y);
        if (log) {
          SoftmaxLines<kBlock, true><<<blocks, kThreads, 0, stream>>>(
              in, out, outer * inner, len, inner, keep, keep_lines);
        } else {
          SoftmaxLines<kBlock, false><<<blocks, kThreads, 0, stream>>>(
              in, out, outer * inner, len, inner, keep, keep_lines);
        }
      });
}

cudaError_t LaunchCumsum(ElemType type, const void* x, void* y, int64_t outer,
                         int64_t len, int64_t inner, bool exclusive,
                         bool reverse, cudaStream_t stream) {
  const int64_t lines = outer * inner;
  if (lines * len == 0) return cudaSuccess;
  return WithElemType(type, [&](auto tag) -> cudaError_t {
    using T = decltype(tag);
    if constexpr (!kNumber<T>) {
      return cudaErrorNotSupported;
    } else {
      CumsumLines<T><<<Blocks(lines), kThreads, 0, stream>>>(
          static_cast<const T*>(x), static_cast<T*>(y), lines, len, inner,
          exclusive, reverse);
      return cudaGetLastError();
    }
  });
}

cudaError_t LaunchSoftmaxCrossEntropy(ElemType type, const void* logits,
                                      const void* probs, void* loss,
                                      int64_t rows, int64_t classes,
                                      cudaStream_t stream) {
  return ByLine(
      type, rows, classes, 1, [&](auto tag, auto block, unsigned blocks) {
        using T = decltype(tag);
        SoftmaxCrossEntropyRows<decltype(block)::value>
            <<<blocks, kThreads, 0, stream>>>(
                static_cast<const T*>(logits), static_cast<const T*>(probs),
                static_cast<T*>(loss), rows, classes);
      });
}

cudaError_t LaunchSparseSoftmaxCrossEntropy(ElemType type, bool labels_i64,
                                            const void* logits,
                                            const void* labels, void* loss,
                                            int64_t rows, int64_t classes,
                                            unsigned long long* first_bad,
                                            cudaStream_t stream) {
  return ByLine(type, rows, classes, 1,
                [&](auto tag, auto block, unsigned blocks) {
                  using T = decltype(tag);
                  constexpr bool kBlock = decltype(block)::value;
                  const T* x = static_cast<const T*>(logits);
                  T* out = static_cast<T*>(loss);
                  if (labels_i64) {
                    SparseSoftmaxCrossEntropyRows<kBlock>
                        <<<blocks, kThreads, 0, stream>>>(
                            x, static_cast<const int64_t*>(labels), out, rows,
                            classes, first_bad);
                  } else {
                    SparseSoftmaxCrossEntropyRows<kBlock>
                        <<<blocks, kThreads, 0, stream>>>(
                            x, static_cast<const int32_t*>(labels), out, rows,
                            classes, first_bad);
                  }
                });
}

cudaError_t LaunchSoftmaxGrad(ElemType type, const void* dy, const void* y,
                              void* dx, int64_t lines, int64_t len,
                              cudaStream_t stream) {
  if (lines * len == 0) return cudaSuccess;
  return ByLine(
      type, lines, len, 1, [&](auto tag, auto block, unsigned blocks) {
        using T = decltype(tag);
        SoftmaxGradLines<decltype(block)::value>
            <<<blocks, kThreads, 0, stream>>>(static_cast<const T*>(dy),
                                              static_cast<const T*>(y),
                                              static_cast<T*>(dx), lines, len);
      });
}

cudaError_t LaunchLayerNorm(ElemType type, const void* x, const void* scale,
                            const void* offset, void* y, void* mean, void* rstd,
                            int64_t rows, int64_t n, double eps,
                            cudaStream_t stream) {
  if (rows * n == 0) return cudaSuccess;
  return ByLine(type, rows, n, 1, [&](auto tag, auto block, unsigned blocks) {
    using T = decltype(tag);
    LayerNormRows<decltype(block)::value><<<blocks, kThreads, 0, stream>>>(
        static_cast<const T*>(x), static_cast<const T*>(scale),
        static_cast<const T*>(offset), static_cast<T*>(y),
        static_cast<Wide<T>*>(mean), static_cast<Wide<T>*>(rstd), rows, n, eps);
  });
}

cudaError_t LaunchLayerNormGrad(ElemType type, const void* dy, const void* x,
                                const void* scale, const void* mean,
                                const void* rstd, void* dx, void* dscale,
                                void* doffset, int64_t rows, int64_t n,
                                cudaStream_t stream) {
  if (rows * n == 0) return cudaSuccess;  // the caller zeroes dscale, doffset
  return ByLine(type, rows, n, 1, [&](auto tag, auto block, unsigned blocks) {
    using T = decltype(tag);
    const auto* m = static_cast<const Wide<T>*>(mean);
    const auto* rs = static_cast<const Wide<T>*>(rstd);
    LayerNormGradRows<decltype(block)::value><<<blocks, kThreads, 0, stream>>>(
        static_cast<const T*>(dy), static_cast<const T*>(x),
        static_cast<const T*>(scale), m, rs, static_cast<T*>(dx), rows, n);
    LayerNormParamGrads<<<Blocks(n), kThreads, 0, stream>>>(
        static_cast<const T*>(dy), static_cast<const T*>(x), m, rs,
        static_cast<T*>(dscale), static_cast<T*>(doffset), rows, n);
  });
}

int64_t BatchNormScratch(int64_t rows, int64_t c) {
  return (rows + kChunkRows - 1) / kChunkRows * c;
}

cudaError_t LaunchBatchNorm(ElemType type, const void* x, const void* scale,
                            const void* offset, void* y, void* mean,
                            void* variance, void* scratch, int64_t rows,
                            int64_t c, double eps, cudaStream_t stream) {
  if (rows * c == 0) return cudaSuccess;
  return WithFloatType(type, [&](auto tag) {
    using T = decltype(tag);
    using C = Wide<T>;
    const T* px = static_cast<const T*>(x);
    auto* m = static_cast<C*>(mean);
    auto* v = static_cast<C*>(variance);
    auto* part = static_cast<C*>(scratch);
    const C inv = C(1) / C(rows);
    ChannelSum<T>(SumOf<T>{px}, m, part, rows, c, inv, stream);
    ChannelSum<T>(SquaredDeviation<T>{px, m}, v, part, rows, c, inv, stream);
    BatchNormApply<<<Blocks(rows * c), kThreads, 0, stream>>>(
        px, static_cast<const T*>(scale), static_cast<const T*>(offset), m, v,
        static_cast<T*>(y), rows * c, c, C(eps));
  });
}

cudaError_t LaunchBatchNormGrad(ElemType type, const void* dy, const void* x,
                                const void* scale, const void* mean,
                                const void* variance, void* dx, void* dscale,
                                void* doffset, void* scratch, int64_t rows,
                                int64_t c, double eps, cudaStream_t stream) {
  if (rows * c == 0) return cudaSuccess;
  return WithFloatType(type, [&](auto tag) {
    using T = decltype(tag);
    using C = Wide<T>;
    const T* pdy = static_cast<const T*>(dy);
    const T* px = static_cast<const T*>(x);
    const auto* m = static_cast<const C*>(mean);
    const auto* v = static_cast<const C*>(variance);
    auto* part = static_cast<C*>(scratch);
    auto* ds = static_cast<T*>(dscale);
    auto* doff = static_cast<T*>(doffset);
    ChannelSum<T>(SumOf<T>{pdy}, doff, part, rows, c, C(1), stream);
    ChannelSum<T>(DyTimesXhat<T>{pdy, px, m, v, C(eps)}, ds, part, rows, c,
                  C(1), stream);
    BatchNormGradApply<<<Blocks(rows * c), kThreads, 0, stream>>>(
        pdy, px, static_cast<const T*>(scale), m, v, ds, doff,
        static_cast<T*>(dx), rows * c, c, C(rows), C(eps));
  });
}

}  // namespace runnel::cuda
