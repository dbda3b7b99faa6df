// The index ops' device kernels (index.h).
#include <algorithm>

#include <cub/device/device_merge_sort.cuh>
#include <cub/device/device_radix_sort.cuh>
#include <cub/device/device_scan.cuh>
#include <type_traits>

#include "kernels/cuda/elem.cuh"
#include "kernels/cuda/index.h"
#include "kernels/cuda/launch.cuh"

namespace runnel::cuda {
namespace {

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

// Whether (a, i) comes before (b, j) in top_k's order.
template <typename C>
__device__ __forceinline__ bool Before(C a, int64_t i, C b, int64_t j,
                                       bool largest) {
  const bool an = a != a, bn = b != b;  // NaN: the largest
  if (an != bn) return largest ? an : bn;
  if (!an && a != b) return largest ? a > b : a < b;
  return i < j;
}

template <typename T>
__global__ void TopKLines(const T* x, T* values, int32_t* indices,
                          int64_t lines, int64_t len, int64_t inner, int64_t k,
                          bool largest) {
  using C = Wide<T>;
  for (int64_t l = FirstIndex(); l < lines; l += GridStride()) {
    const int64_t start = (l / inner) * len * inner + l % inner;
    const int64_t out = (l / inner) * k * inner + l % inner;
    C prev_v = C(0);
    int64_t prev_i = -1;
    for (int64_t r = 0; r < k; ++r) {
      C best_v = C(0);
      int64_t best_i = -1;
      for (int64_t i = 0; i < len; ++i) {
        const C v = Widen(x[start + i * inner]);
        if (prev_i >= 0 && !Before(prev_v, prev_i, v, i, largest)) continue;
        if (best_i < 0 || Before(v, i, best_v, best_i, largest)) {
          best_v = v;
          best_i = i;
        }
      }
      values[out + r * inner] = Narrow<T>(best_v);
      indices[out + r * inner] = static_cast<int32_t>(best_i);
      prev_v = best_v;
      prev_i = best_i;
    }
  }
}

}  // namespace

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

cudaError_t LaunchTopK(ElemType type, const void* x, void* values,
                       int32_t* indices, int64_t outer, int64_t len,
                       int64_t inner, int64_t k, bool largest,
                       cudaStream_t stream) {
  const int64_t lines = outer * inner;
  if (lines * k == 0) return cudaSuccess;
  return WithElemType(type, [&](auto zero) -> cudaError_t {
    using T = decltype(zero);
    if constexpr (!kNumber<T>) {
      return cudaErrorNotSupported;
    } else {
      TopKLines<T><<<Blocks(lines), kThreads, 0, stream>>>(
          static_cast<const T*>(x), static_cast<T*>(values), indices, lines,
          len, inner, k, largest);
      return cudaGetLastError();
    }
  });
}

namespace {

// flags[i] = 1 where x[i] is not zero (NaN is not), else 0.
template <typename T>
__global__ void NonzeroFlags(const T* x, int64_t n, int64_t* flags) {
  for (int64_t i = FirstIndex(); i < n; i += GridStride()) {
    flags[i] = Widen(x[i]) != Wide<T>(0) ? 1 : 0;
  }
}

// x's dims, passed by value.
struct NonzeroDims {
  int64_t d[kMaxDims];
};

__global__ void NonzeroRows(const int64_t* inclusive, int64_t n, int rank,
                            NonzeroDims dims, int64_t* out) {
  for (int64_t i = FirstIndex(); i < n; i += GridStride()) {
    const int64_t before = i == 0 ? 0 : inclusive[i - 1];
    if (inclusive[i] == before) continue;
    int64_t* row = out + before * rank;
    int64_t rest = i;
    for (int k = rank - 1; k >= 0; --k) {
      row[k] = rest % dims.d[k];
      rest /= dims.d[k];
    }
  }
}

}  // namespace

cudaError_t LaunchNonzeroCount(ElemType type, const void* x, int64_t n,
                               int64_t* inclusive, void* temp,
                               size_t* temp_bytes, cudaStream_t stream) {
  if (temp == nullptr) {
    // The scan's scratch, in place over the flags.
    return cub::DeviceScan::InclusiveSum(nullptr, *temp_bytes, inclusive,
                                         inclusive, n, stream);
  }
  if (n == 0) return cudaSuccess;
  const cudaError_t flagged = WithElemType(type, [&](auto zero) {
    using T = decltype(zero);
    NonzeroFlags<T><<<Blocks(n), kThreads, 0, stream>>>(
        static_cast<const T*>(x), n, inclusive);
    return cudaGetLastError();
  });
  if (flagged != cudaSuccess) return flagged;
  return cub::DeviceScan::InclusiveSum(temp, *temp_bytes, inclusive, inclusive,
                                       n, stream);
}

cudaError_t LaunchNonzeroWrite(const int64_t* inclusive, int64_t n, int rank,
                               const int64_t* dims, int64_t* out,
                               cudaStream_t stream) {
  if (n == 0 || rank == 0) return cudaSuccess;
  if (rank > kMaxDims) return cudaErrorNotSupported;
  NonzeroDims d{};
  for (int k = 0; k < rank; ++k) d.d[k] = dims[k];
  NonzeroRows<<<Blocks(n), kThreads, 0, stream>>>(inclusive, n, rank, d, out);
  return cudaGetLastError();
}

namespace {

// Slices j and k of x [outer, n, inner] compared as the CPU's unique_all
// compares them: element by element, NaN one value above the rest.
template <typename T>
struct SliceOrder {
  const T* x;
  int64_t outer, n, inner;

  // -1, 0 or 1 as slice j is before, equal to or after slice k.
  __device__ int Compare(int64_t j, int64_t k) const {
    for (int64_t o = 0; o < outer; ++o) {
      for (int64_t i = 0; i < inner; ++i) {
        const auto u = Widen(x[(o * n + j) * inner + i]);
        const auto v = Widen(x[(o * n + k) * inner + i]);
        const bool un = u != u, vn = v != v;
        if (un || vn) {
          if (un != vn) return un ? 1 : -1;
        } else if (u != v) {
          return u < v ? -1 : 1;
        }
      }
    }
    return 0;
  }
  __device__ bool operator()(int64_t j, int64_t k) const {
    return Compare(j, k) < 0;
  }
};

__global__ void Iota(int64_t* v, int64_t n) {
  for (int64_t i = FirstIndex(); i < n; i += GridStride()) v[i] = i;
}

// run[r] = 1 where order[r] starts a run of equal slices, else 0.
template <typename T>
__global__ void RunStarts(SliceOrder<T> cmp, const int64_t* order,
                          int64_t* run) {
  for (int64_t r = FirstIndex(); r < cmp.n; r += GridStride()) {
    run[r] = r == 0 || cmp.Compare(order[r - 1], order[r]) != 0 ? 1 : 0;
  }
}

// For each run: where it starts along `order` (starts[m] = n) and its
// first position; each slice's run in `inverse`, for now.
__global__ void RunBounds(const int64_t* order, const int64_t* run, int64_t n,
                          int64_t* starts, int64_t* first, int64_t* inverse) {
  for (int64_t r = FirstIndex(); r < n; r += GridStride()) {
    if (r == 0 || run[r] != run[r - 1]) {
      starts[run[r] - 1] = r;
      first[run[r] - 1] = order[r];
    }
    if (r == n - 1) starts[run[r]] = n;
    inverse[order[r]] = run[r] - 1;
  }
}

// Output place p holds run rank[p]: its first position and count, and the
// run's place for the inverse.
__global__ void RunPlaces(const int64_t* rank, const int64_t* starts,
                          const int64_t* first, int64_t m, int64_t* positions,
                          int64_t* counts, int64_t* place) {
  for (int64_t p = FirstIndex(); p < m; p += GridStride()) {
    const int64_t q = rank[p];
    positions[p] = first[q];
    counts[p] = starts[q + 1] - starts[q];
    place[q] = p;
  }
}

__global__ void RunsToPlaces(const int64_t* place, int64_t n,
                             int64_t* inverse) {
  for (int64_t j = FirstIndex(); j < n; j += GridStride()) {
    inverse[j] = place[inverse[j]];
  }
}

template <typename T>
__global__ void UniqueValues(const T* x, const int64_t* positions,
                             int64_t n, int64_t m, int64_t inner, T* values,
                             int64_t total) {
  for (int64_t e = FirstIndex(); e < total; e += GridStride()) {
    const int64_t i = e % inner, p = (e / inner) % m, o = e / (inner * m);
    values[e] = x[(o * n + positions[p]) * inner + i];
  }
}

}  // namespace

cudaError_t LaunchUniqueSort(ElemType type, const void* x, int64_t outer,
                             int64_t n, int64_t inner, int64_t* order,
                             int64_t* run, void* temp, size_t* temp_bytes,
                             cudaStream_t stream) {
  return WithElemType(type, [&](auto zero) -> cudaError_t {
    using T = decltype(zero);
    const SliceOrder<T> cmp{static_cast<const T*>(x), outer, n, inner};
    if (temp == nullptr) {
      size_t sort = 0, scan = 0, radix = 0;
      cudaError_t e = cub::DeviceMergeSort::StableSortKeys(
          nullptr, sort, order, n, cmp, stream);
      if (e == cudaSuccess) {
        e = cub::DeviceScan::InclusiveSum(nullptr, scan, run, run, n, stream);
      }
      if (e == cudaSuccess) {
        e = cub::DeviceRadixSort::SortPairs(nullptr, radix, run, run, run,
                                            run, n, 0, 64, stream);
      }
      *temp_bytes = std::max({sort, scan, radix, size_t{1}});
      return e;
    }
    if (n == 0) return cudaSuccess;
    Iota<<<Blocks(n), kThreads, 0, stream>>>(order, n);
    size_t bytes = *temp_bytes;
    cudaError_t e = cub::DeviceMergeSort::StableSortKeys(temp, bytes, order, n,
                                                         cmp, stream);
    if (e != cudaSuccess) return e;
    RunStarts<T><<<Blocks(n), kThreads, 0, stream>>>(cmp, order, run);
    if ((e = cudaGetLastError()) != cudaSuccess) return e;
    bytes = *temp_bytes;
    return cub::DeviceScan::InclusiveSum(temp, bytes, run, run, n, stream);
  });
}

cudaError_t LaunchUniqueWrite(ElemType type, const void* x, int64_t outer,
                              int64_t n, int64_t inner, const int64_t* order,
                              const int64_t* run, int64_t m, bool sorted,
                              void* values, int64_t* positions,
                              int64_t* inverse, int64_t* counts,
                              int64_t* scratch, void* temp, size_t temp_bytes,
                              cudaStream_t stream) {
  if (n == 0 || m == 0) return cudaSuccess;
  int64_t* starts = scratch;  // m + 1
  int64_t* first = starts + m + 1;
  int64_t* rank = first + m;
  int64_t* place = rank + m;
  RunBounds<<<Blocks(n), kThreads, 0, stream>>>(order, run, n, starts, first,
                                                 inverse);
  cudaError_t e = cudaGetLastError();
  if (e != cudaSuccess) return e;
  Iota<<<Blocks(m), kThreads, 0, stream>>>(rank, m);
  if ((e = cudaGetLastError()) != cudaSuccess) return e;
  if (!sorted) {
    // The runs by first appearance: their first positions sorted (into
    // `positions`, overwritten below with the same values) carrying the
    // runs' numbers (from `counts`, likewise) into rank.
    Iota<<<Blocks(m), kThreads, 0, stream>>>(counts, m);
    if ((e = cudaGetLastError()) != cudaSuccess) return e;
    e = cub::DeviceRadixSort::SortPairs(temp, temp_bytes, first, positions,
                                        counts, rank, m, 0, 64, stream);
    if (e != cudaSuccess) return e;
  }
  RunPlaces<<<Blocks(m), kThreads, 0, stream>>>(rank, starts, first, m,
                                                 positions, counts, place);
  if ((e = cudaGetLastError()) != cudaSuccess) return e;
  RunsToPlaces<<<Blocks(n), kThreads, 0, stream>>>(place, n, inverse);
  if ((e = cudaGetLastError()) != cudaSuccess) return e;
  const int64_t total = outer * m * inner;
  if (total == 0) return cudaSuccess;
  return WithElemType(type, [&](auto zero) -> cudaError_t {
    using T = decltype(zero);
    UniqueValues<T><<<Blocks(total), kThreads, 0, stream>>>(
        static_cast<const T*>(x), positions, n, m, inner,
        static_cast<T*>(values), total);
    return cudaGetLastError();
  });
}

}  // namespace runnel::cuda
