// The fused recurrent cells (rnn.h): a thread per unit of a row, reading
// that unit's gates and state and writing its outputs, with the CPU's
// formulas (sigmoid = 1 / (1 + exp(-x)), as the `sigmoid` kernels').
#include <cstdint>

#include "kernels/cuda/elem.cuh"
#include "kernels/cuda/launch.cuh"
#include "kernels/cuda/rnn.h"

namespace runnel::cuda {
namespace {

inline __device__ float Tanh(float x) { return tanhf(x); }
inline __device__ double Tanh(double x) { return tanh(x); }
inline __device__ float Sigmoid(float x) { return 1.0f / (1.0f + expf(-x)); }
inline __device__ double Sigmoid(double x) { return 1.0 / (1.0 + exp(-x)); }

template <typename T>
__global__ void __launch_bounds__(kThreads)
    LstmCell(const T* gates, const T* c, T* h, T* c_next, T* act, int64_t n,
             int64_t u) {
  using C = Wide<T>;
  for (int64_t e = FirstIndex(); e < n; e += GridStride()) {
    const int64_t at = (e / u) * 4 * u + e % u;
    const T* g = gates + at;
    const C i = Sigmoid(Widen(g[0])), f = Sigmoid(Widen(g[u]));
    const C cell = Tanh(Widen(g[2 * u])), o = Sigmoid(Widen(g[3 * u]));
    // act may be gates: this thread alone reads and writes these four.
    if (act != nullptr) {
      act[at] = Narrow<T>(i);
      act[at + u] = Narrow<T>(f);
      act[at + 2 * u] = Narrow<T>(cell);
      act[at + 3 * u] = Narrow<T>(o);
    }
    const C cn = f * Widen(c[e]) + i * cell;
    c_next[e] = Narrow<T>(cn);
    h[e] = Narrow<T>(o * Tanh(cn));
  }
}

template <typename T>
__global__ void __launch_bounds__(kThreads)
    LstmCellGrad(const T* gates, const T* c, const T* dh, const T* dc_next,
                 T* dgates, T* dc, int64_t n, int64_t u, bool activated) {
  using C = Wide<T>;
  for (int64_t e = FirstIndex(); e < n; e += GridStride()) {
    const int64_t at = (e / u) * 4 * u + e % u;
    const T* g = gates + at;
    C i = Widen(g[0]), f = Widen(g[u]), cell = Widen(g[2 * u]),
      o = Widen(g[3 * u]);
    if (!activated) {
      i = Sigmoid(i);
      f = Sigmoid(f);
      cell = Tanh(cell);
      o = Sigmoid(o);
    }
    const C cp = Widen(c[e]);
    const C t = Tanh(f * cp + i * cell);
    const C gh = Widen(dh[e]);
    const C d = Widen(dc_next[e]) + gh * o * (C(1) - t * t);
    dgates[at] = Narrow<T>(d * cell * i * (C(1) - i));
    dgates[at + u] = Narrow<T>(d * cp * f * (C(1) - f));
    dgates[at + 2 * u] = Narrow<T>(d * i * (C(1) - cell * cell));
    dgates[at + 3 * u] = Narrow<T>(gh * t * o * (C(1) - o));
    dc[e] = Narrow<T>(d * f);
  }
}

template <typename T>
__global__ void __launch_bounds__(kThreads)
    GruCell(const T* x, const T* hh, const T* h, T* h_next, int64_t n,
            int64_t u) {
  using C = Wide<T>;
  for (int64_t e = FirstIndex(); e < n; e += GridStride()) {
    const int64_t at = (e / u) * 3 * u + e % u;
    const C r = Sigmoid(Widen(x[at]) + Widen(hh[at]));
    const C z = Sigmoid(Widen(x[at + u]) + Widen(hh[at + u]));
    const C nn = Tanh(Widen(x[at + 2 * u]) + r * Widen(hh[at + 2 * u]));
    h_next[e] = Narrow<T>((C(1) - z) * nn + z * Widen(h[e]));
  }
}

template <typename T>
__global__ void __launch_bounds__(kThreads)
    GruCellGrad(const T* x, const T* hh, const T* h, const T* dh_next, T* dx,
                T* dhh, T* dh, int64_t n, int64_t u) {
  using C = Wide<T>;
  for (int64_t e = FirstIndex(); e < n; e += GridStride()) {
    const int64_t at = (e / u) * 3 * u + e % u;
    const C r = Sigmoid(Widen(x[at]) + Widen(hh[at]));
    const C z = Sigmoid(Widen(x[at + u]) + Widen(hh[at + u]));
    const C hn = Widen(hh[at + 2 * u]);
    const C nn = Tanh(Widen(x[at + 2 * u]) + r * hn);
    const C d = Widen(dh_next[e]);
    const C en = d * (C(1) - z) * (C(1) - nn * nn);
    const C ar = en * hn * r * (C(1) - r);
    const C az = d * (Widen(h[e]) - nn) * z * (C(1) - z);
    dx[at] = dhh[at] = Narrow<T>(ar);
    dx[at + u] = dhh[at + u] = Narrow<T>(az);
    dx[at + 2 * u] = Narrow<T>(en);
    dhh[at + 2 * u] = Narrow<T>(en * r);
    dh[e] = Narrow<T>(d * z);
  }
}

// For a float `type` T, calls launch(T{}) and returns the launch error;
// nothing for an empty state.
template <class Launch>
cudaError_t ForFloat(ElemType type, int64_t n, Launch launch) {
  return WithElemType(type, [&](auto tag) -> cudaError_t {
    if constexpr (!kFloat<decltype(tag)>) {
      return cudaErrorNotSupported;
    } else {
      if (n == 0) return cudaSuccess;
      launch(tag);
      return cudaGetLastError();
    }
  });
}

}  // namespace

cudaError_t LaunchLstmCell(ElemType type, const void* gates, const void* c,
                           void* h, void* c_next, int64_t rows, int64_t units,
                           cudaStream_t stream, void* activations) {
  const int64_t n = rows * units;
  return ForFloat(type, n, [&](auto tag) {
    using T = decltype(tag);
    LstmCell<<<Blocks(n), kThreads, 0, stream>>>(
        static_cast<const T*>(gates), static_cast<const T*>(c),
        static_cast<T*>(h), static_cast<T*>(c_next),
        static_cast<T*>(activations), n, units);
  });
}

cudaError_t LaunchLstmCellGrad(ElemType type, const void* gates, const void* c,
                               const void* dh, const void* dc_next,
                               void* dgates, void* dc, int64_t rows,
                               int64_t units, cudaStream_t stream,
                               bool activated) {
  const int64_t n = rows * units;
  return ForFloat(type, n, [&](auto tag) {
    using T = decltype(tag);
    LstmCellGrad<<<Blocks(n), kThreads, 0, stream>>>(
        static_cast<const T*>(gates), static_cast<const T*>(c),
        static_cast<const T*>(dh), static_cast<const T*>(dc_next),
        static_cast<T*>(dgates), static_cast<T*>(dc), n, units, activated);
  });
}

cudaError_t LaunchGruCell(ElemType type, const void* x, const void* hh,
                          const void* h, void* h_next, int64_t rows,
                          int64_t units, cudaStream_t stream) {
  const int64_t n = rows * units;
  return ForFloat(type, n, [&](auto tag) {
    using T = decltype(tag);
    GruCell<<<Blocks(n), kThreads, 0, stream>>>(
        static_cast<const T*>(x), static_cast<const T*>(hh),
        static_cast<const T*>(h), static_cast<T*>(h_next), n, units);
  });
}

cudaError_t LaunchGruCellGrad(ElemType type, const void* x, const void* hh,
                              const void* h, const void* dh_next, void* dx,
                              void* dhh, void* dh, int64_t rows, int64_t units,
                              cudaStream_t stream) {
  const int64_t n = rows * units;
  return ForFloat(type, n, [&](auto tag) {
    using T = decltype(tag);
    GruCellGrad<<<Blocks(n), kThreads, 0, stream>>>(
        static_cast<const T*>(x), static_cast<const T*>(hh),
        static_cast<const T*>(h), static_cast<const T*>(dh_next),
        static_cast<T*>(dx), static_cast<T*>(dhh), static_cast<T*>(dh), n,
        units);
  });
}

}  // namespace runnel::cuda
