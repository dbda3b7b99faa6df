// pool.h's kernels, NHWC or NDHWC (a 2-D pool is a 3-D one of depth 1).
// One thread per output element for the pooling (NHWC:
// neighbouring threads read neighbouring channels), one per input element
// for the gradients, which gather from the windows covering it (no atomics:
// the sums are deterministic and in the CPU kernel's order).
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cfloat>
#include <climits>
#include <cstdint>
#include <type_traits>

#include "kernels/cuda/elem.cuh"
#include "kernels/cuda/launch.cuh"
#include "kernels/cuda/pool.h"

namespace runnel::cuda {
namespace {

// A type's lowest value (what it computes in: elem.cuh's Wide, the CPU's
// AccumType).
template <typename T>
__device__ __forceinline__ T Lowest();
template <>
__device__ __forceinline__ float Lowest<float>() {
  return -FLT_MAX;
}
template <>
__device__ __forceinline__ double Lowest<double>() {
  return -DBL_MAX;
}
template <>
__device__ __forceinline__ int32_t Lowest<int32_t>() {
  return INT32_MIN;
}
template <>
__device__ __forceinline__ int64_t Lowest<int64_t>() {
  return INT64_MIN;
}

// The taps of window `o` along one dimension inside the input: `count`,
// the first at `first`, `step` apart (framework/window.h's WindowTaps).
struct Taps {
  int64_t first, step, count;
};
__device__ __forceinline__ Taps Window(int64_t o, int64_t stride, int64_t pad,
                                       int64_t size, int64_t dil, int64_t in) {
  const int64_t start = o * stride - pad;
  const int64_t lo = start >= 0 ? 0 : (-start + dil - 1) / dil;
  const int64_t last = in - 1 - start;
  const int64_t hi =
      last < 0 ? 0 : (last / dil + 1 < size ? last / dil + 1 : size);
  return {start + lo * dil, dil, hi > lo ? hi - lo : 0};
}

// The windows o in [lo, hi) along one dimension whose span contains input
// index `i`: o * stride - pad <= i < o * stride - pad + span, within
// [0, out) (span: the window's effective size, (size - 1) * dil + 1; with
// a dilation a window in the range may step over i).
struct Range {
  int64_t lo, hi;
};
__device__ __forceinline__ Range Covering(int64_t i, int64_t stride,
                                          int64_t pad, int64_t span,
                                          int64_t out) {
  const int64_t top = i + pad;            // o * stride <= top
  const int64_t bottom = top - span + 1;  // o * stride >= bottom
  const int64_t lo = bottom <= 0 ? 0 : (bottom + stride - 1) / stride;
  const int64_t last = top / stride;  // top >= 0: input index, pad >= 0
  return {lo, last + 1 < out ? last + 1 : out};
}

// Whether window o's taps (dil apart from o * stride - pad) hit input i.
__device__ __forceinline__ bool Hits(int64_t i, int64_t o, int64_t stride,
                                     int64_t pad, int64_t dil) {
  return (i + pad - o * stride) % dil == 0;
}

// The taps of output (od, oh, ow)'s window along depth, rows and columns.
struct WindowTaps {
  Taps depths, rows, cols;
  __device__ bool empty() const {
    return depths.count == 0 || rows.count == 0 || cols.count == 0;
  }
  __device__ int64_t count() const {
    return depths.count * rows.count * cols.count;
  }
};
__device__ __forceinline__ WindowTaps TapsOf(const PoolGeometry& g, int64_t od,
                                             int64_t oh, int64_t ow) {
  return {Window(od, g.stride_d, g.pad_d, g.size_d, g.dil_d, g.in_d),
          Window(oh, g.stride_h, g.pad_h, g.size_h, g.dil_h, g.in_h),
          Window(ow, g.stride_w, g.pad_w, g.size_w, g.dil_w, g.in_w)};
}

// Calls f(position) for the window's taps in image n, row-major over
// (d, h, w), with position (d * in_h + h) * in_w + w; stops when f returns
// true.
template <typename F>
__device__ __forceinline__ void ForTaps(const PoolGeometry& g,
                                        const WindowTaps& t, const F& f) {
  for (int64_t a = 0, d = t.depths.first; a < t.depths.count;
       ++a, d += t.depths.step) {
    for (int64_t b = 0, h = t.rows.first; b < t.rows.count;
         ++b, h += t.rows.step) {
      for (int64_t e = 0, w = t.cols.first; e < t.cols.count;
           ++e, w += t.cols.step) {
        if (f((d * g.in_h + h) * g.in_w + w)) return;
      }
    }
  }
}

// Element `position` (of ForTaps) of image n in channel c.
template <typename T>
__device__ __forceinline__ Wide<T> At(const T* x, const PoolGeometry& g,
                                      int64_t n, int64_t position, int64_t c) {
  return Widen(x[(n * g.in_d * g.in_h * g.in_w + position) * g.chans + c]);
}

// The maximum of a window in channel c as max_pool computes it: starting
// from the lowest value, `v > best` (so NaN never wins).
template <typename T>
__device__ __forceinline__ Wide<T> WindowMax(const T* x, const PoolGeometry& g,
                                             int64_t n, const WindowTaps& t,
                                             int64_t c) {
  Wide<T> best = Lowest<Wide<T>>();
  ForTaps(g, t, [&](int64_t at) {
    const Wide<T> v = At(x, g, n, at, c);
    best = v > best ? v : best;
    return false;
  });
  return best;
}

// (n, od, oh, ow, c) of output element i.
struct Out {
  int64_t n, od, oh, ow, c;
};
__device__ __forceinline__ Out OutIndex(int64_t i, const PoolGeometry& g) {
  return {i / (g.chans * g.out_w * g.out_h * g.out_d),
          (i / (g.chans * g.out_w * g.out_h)) % g.out_d,
          (i / (g.chans * g.out_w)) % g.out_h, (i / g.chans) % g.out_w,
          i % g.chans};
}

template <typename T, bool kMax>
__global__ void Pool(PoolGeometry g, const T* x, T* y) {
  const int64_t n = g.batch * g.out_d * g.out_h * g.out_w * g.chans;
  for (int64_t i = FirstIndex(); i < n; i += GridStride()) {
    const Out o = OutIndex(i, g);
    const WindowTaps t = TapsOf(g, o.od, o.oh, o.ow);
    if constexpr (kMax) {
      y[i] = Narrow<T>(WindowMax(x, g, o.n, t, o.c));
    } else {
      Wide<T> sum = 0;
      ForTaps(g, t, [&](int64_t at) {
        sum += At(x, g, o.n, at, o.c);
        return false;
      });
      y[i] = Narrow<T>(sum / static_cast<Wide<T>>(t.count()));
    }
  }
}

// argmax[i]: the first element (row-major) of output i's window equal to
// its maximum, as (d * in_h + h) * in_w + w; the window's first element
// when none is (NaN and -inf only); -1 for an empty window.
template <typename T>
__global__ void MaxPoolArgmax(PoolGeometry g, const T* x, int64_t* argmax) {
  const int64_t n = g.batch * g.out_d * g.out_h * g.out_w * g.chans;
  for (int64_t i = FirstIndex(); i < n; i += GridStride()) {
    const Out o = OutIndex(i, g);
    const WindowTaps t = TapsOf(g, o.od, o.oh, o.ow);
    if (t.empty()) {
      argmax[i] = -1;
      continue;
    }
    const Wide<T> best = WindowMax(x, g, o.n, t, o.c);
    int64_t at =
        (t.depths.first * g.in_h + t.rows.first) * g.in_w + t.cols.first;
    ForTaps(g, t, [&](int64_t position) {
      if (At(x, g, o.n, position, o.c) != best) return false;
      at = position;
      return true;
    });
    argmax[i] = at;
  }
}

// dx[n, d, h, w, c] = the sum, over the windows covering (d, h, w) in
// row-major order, of dy (max: where the window's argmax is (d, h, w)) or
// dy / the window's size inside the input (avg).
template <typename T, bool kMax>
__global__ void PoolGrad(PoolGeometry g, const int64_t* argmax, const T* dy,
                         T* dx) {
  const int64_t n = g.batch * g.in_d * g.in_h * g.in_w * g.chans;
  for (int64_t i = FirstIndex(); i < n; i += GridStride()) {
    const int64_t c = i % g.chans;
    const int64_t w = (i / g.chans) % g.in_w;
    const int64_t h = (i / (g.chans * g.in_w)) % g.in_h;
    const int64_t d = (i / (g.chans * g.in_w * g.in_h)) % g.in_d;
    const int64_t b = i / (g.chans * g.in_w * g.in_h * g.in_d);
    const int64_t position = (d * g.in_h + h) * g.in_w + w;
    const Range ods =
        Covering(d, g.stride_d, g.pad_d, (g.size_d - 1) * g.dil_d + 1, g.out_d);
    const Range ohs =
        Covering(h, g.stride_h, g.pad_h, (g.size_h - 1) * g.dil_h + 1, g.out_h);
    const Range ows =
        Covering(w, g.stride_w, g.pad_w, (g.size_w - 1) * g.dil_w + 1, g.out_w);
    Wide<T> sum = 0;
    for (int64_t od = ods.lo; od < ods.hi; ++od) {
      for (int64_t oh = ohs.lo; oh < ohs.hi; ++oh) {
        for (int64_t ow = ows.lo; ow < ows.hi; ++ow) {
          const int64_t o =
              (((b * g.out_d + od) * g.out_h + oh) * g.out_w + ow) * g.chans +
              c;
          if constexpr (kMax) {
            if (argmax[o] == position) sum += Widen(dy[o]);
          } else if (Hits(d, od, g.stride_d, g.pad_d, g.dil_d) &&
                     Hits(h, oh, g.stride_h, g.pad_h, g.dil_h) &&
                     Hits(w, ow, g.stride_w, g.pad_w, g.dil_w)) {
            const WindowTaps t = TapsOf(g, od, oh, ow);
            sum += Widen(dy[o]) / static_cast<Wide<T>>(t.count());
          }
        }
      }
    }
    dx[i] = Narrow<T>(sum);
  }
}

// argmax[i] from MaxPoolArgmax's h * in_w + w to the position in the
// image with its channel.
__global__ void WithChannels(int64_t n, int64_t chans, int64_t* argmax) {
  for (int64_t i = FirstIndex(); i < n; i += GridStride()) {
    if (argmax[i] >= 0) argmax[i] = argmax[i] * chans + i % chans;
  }
}

// y[i] = max(y[i], lowest) as the CPU's `v > best ? v : best` from the
// lowest value gives it: NaN and -inf become the lowest value.
template <typename T>
__global__ void MaxPoolFloor(int64_t n, T* y) {
  for (int64_t i = FirstIndex(); i < n; i += GridStride()) {
    const Wide<T> v = Widen(y[i]);
    const Wide<T> lowest = Lowest<Wide<T>>();
    y[i] = v > lowest ? y[i] : Narrow<T>(lowest);
  }
}

// Calls f(T()) with the C++ type of `type`; false when pooling does not
// take it (the floats, and i32 and i64 unless kFloatsOnly).
template <bool kFloatsOnly, typename F>
bool WithType(ElemType type, const F& f) {
  bool taken = false;
  WithElemType(type, [&](auto t) {
    using T = decltype(t);
    constexpr bool kWideInt =
        std::is_same_v<T, int32_t> || std::is_same_v<T, int64_t>;
    if constexpr (!std::is_integral_v<T> || (kWideInt && !kFloatsOnly)) {
      f(t);
      taken = true;
    }
    return cudaSuccess;
  });
  return taken;
}

int64_t OutElements(const PoolGeometry& g) {
  return g.batch * g.out_d * g.out_h * g.out_w * g.chans;
}
int64_t InElements(const PoolGeometry& g) {
  return g.batch * g.in_d * g.in_h * g.in_w * g.chans;
}

}  // namespace

cudaError_t LaunchPool(bool max, ElemType type, const PoolGeometry& g,
                       const void* x, void* y, cudaStream_t stream) {
  const int64_t n = OutElements(g);
  if (n == 0) return cudaSuccess;
  const auto launch = [&](auto t) {
    using T = decltype(t);
    if (max) {
      Pool<T, true><<<Blocks(n), kThreads, 0, stream>>>(
          g, static_cast<const T*>(x), static_cast<T*>(y));
    } else if constexpr (!std::is_integral_v<T>) {
      Pool<T, false><<<Blocks(n), kThreads, 0, stream>>>(
          g, static_cast<const T*>(x), static_cast<T*>(y));
    }
  };
  const bool ok =
      max ? WithType<false>(type, launch) : WithType<true>(type, launch);
  return ok ? cudaGetLastError() : cudaErrorNotSupported;
}

cudaError_t LaunchMaxPoolWithArgmax(ElemType type, const PoolGeometry& g,
                                    const void* x, void* y, int64_t* argmax,
                                    cudaStream_t stream) {
  const int64_t n = OutElements(g);
  if (n == 0) return cudaSuccess;
  const bool ok = WithType<false>(type, [&](auto t) {
    using T = decltype(t);
    Pool<T, true><<<Blocks(n), kThreads, 0, stream>>>(
        g, static_cast<const T*>(x), static_cast<T*>(y));
    MaxPoolArgmax<T><<<Blocks(n), kThreads, 0, stream>>>(
        g, static_cast<const T*>(x), argmax);
    WithChannels<<<Blocks(n), kThreads, 0, stream>>>(n, g.chans, argmax);
  });
  return ok ? cudaGetLastError() : cudaErrorNotSupported;
}

cudaError_t LaunchMaxPoolGrad(ElemType type, const PoolGeometry& g,
                              const void* x, const void* dy, int64_t* argmax,
                              void* dx, cudaStream_t stream) {
  const int64_t n_out = OutElements(g), n_in = InElements(g);
  if (n_in == 0) return cudaSuccess;
  const bool ok = WithType<true>(type, [&](auto t) {
    using T = decltype(t);
    if (n_out > 0) {
      MaxPoolArgmax<T><<<Blocks(n_out), kThreads, 0, stream>>>(
          g, static_cast<const T*>(x), argmax);
    }
    PoolGrad<T, true><<<Blocks(n_in), kThreads, 0, stream>>>(
        g, argmax, static_cast<const T*>(dy), static_cast<T*>(dx));
  });
  return ok ? cudaGetLastError() : cudaErrorNotSupported;
}

cudaError_t LaunchAvgPoolGrad(ElemType type, const PoolGeometry& g,
                              const void* dy, void* dx, cudaStream_t stream) {
  const int64_t n = InElements(g);
  if (n == 0) return cudaSuccess;
  const bool ok = WithType<true>(type, [&](auto t) {
    using T = decltype(t);
    PoolGrad<T, false><<<Blocks(n), kThreads, 0, stream>>>(
        g, nullptr, static_cast<const T*>(dy), static_cast<T*>(dx));
  });
  return ok ? cudaGetLastError() : cudaErrorNotSupported;
}

cudaError_t LaunchMaxPoolFloor(ElemType type, int64_t n, void* y,
                               cudaStream_t stream) {
  if (n == 0) return cudaSuccess;
  const bool ok = WithType<true>(type, [&](auto t) {
    using T = decltype(t);
    MaxPoolFloor<T><<<Blocks(n), kThreads, 0, stream>>>(n, static_cast<T*>(y));
  });
  return ok ? cudaGetLastError() : cudaErrorNotSupported;
}

}  // namespace runnel::cuda
