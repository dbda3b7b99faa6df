// The device kernels (index.cu) behind the GPU's index ops
// (index_kernels.cc; the gathers use array.h's gather): updates combined
// into the places a host-made plan names (framework/ops/index_checks.h),
// one thread per element of a place, in the order the CPU combines them,
// top_k, nonzero and unique_all.
// Plain C++ (nvcc compiles index.cu).
#ifndef RUNNEL_KERNELS_CUDA_INDEX_H_
#define RUNNEL_KERNELS_CUDA_INDEX_H_

#include <cuda_runtime.h>

#include <cstdint>

#include "kernels/cuda/cwise.h"

namespace runnel::cuda {

// How an update combines with what is there (ScatterReduction's order).
enum class ScatterHow : int { kNone, kAdd, kMul, kMax, kMin };

// For each place p < count and e < slice, out[places[p] + e] combined,
// in turn, with updates[order[k] * slice + e] for k in [starts[p],
// starts[p + 1]): integers wrap, the 16-bit floats round after each
// combination, max and min keep a NaN.
cudaError_t LaunchScatterSlices(ElemType type, ScatterHow how,
                                const void* updates, const int64_t* places,
                                const int64_t* starts, const int64_t* order,
                                int64_t count, int64_t slice, void* out,
                                cudaStream_t stream);

// top_k along the middle of [outer, len, inner]: for each of the
// outer * inner lines, its k first elements in the order "larger first"
// (largest) or "smaller first", NaN counting as the largest, equal values
// by position: values (x's type) and positions (i32) of [outer, k, inner].
// One thread per line, k passes over it (each pass picks the first
// element after the previous pick), as the CPU's order.
cudaError_t LaunchTopK(ElemType type, const void* x, void* values,
                       int32_t* indices, int64_t outer, int64_t len,
                       int64_t inner, int64_t k, bool largest,
                       cudaStream_t stream);

// nonzero, in two steps around the host's allocation of its output:
// LaunchNonzeroCount writes the running count of x's n nonzero elements
// (NaN counts; `inclusive[i]`, the count up to and with element i) using
// `temp` as scratch: a call with temp == nullptr only sets *temp_bytes.
// Once the host has read the count (inclusive[n - 1]), LaunchNonzeroWrite
// writes each nonzero element's coordinates in x's dims (rank <=
// kMaxDims, `dims` on the host) as row inclusive[i] - 1 of `out` [count,
// rank], the rows in row-major order, as the CPU's.
cudaError_t LaunchNonzeroCount(ElemType type, const void* x, int64_t n,
                               int64_t* inclusive, void* temp,
                               size_t* temp_bytes, cudaStream_t stream);
cudaError_t LaunchNonzeroWrite(const int64_t* inclusive, int64_t n, int rank,
                               const int64_t* dims, int64_t* out,
                               cudaStream_t stream);

// unique_all of x viewed as [outer, n, inner], its n slices along the
// middle axis (outer = inner = 1 without an axis), in two steps around the
// host's reading of the number of distinct slices m (run[n - 1]):
// LaunchUniqueSort writes `order`, the positions of the n slices sorted
// stably by value (NaN one value above the rest, -0 equal to 0, as the
// CPU's), and `run`, the running count of distinct slices along `order`;
// LaunchUniqueWrite then writes the outputs: `values` [outer, m, inner],
// the distinct slices sorted (or, without `sorted`, in order of first
// appearance), `positions` (m) the first position of each, `inverse` (n)
// the place of each slice's value and `counts` (m) how often each appears,
// using `scratch` (4 m + 1 i64). `temp` is CUB's scratch: a call of
// LaunchUniqueSort with temp == nullptr only sets *temp_bytes, enough for
// both steps.
cudaError_t LaunchUniqueSort(ElemType type, const void* x, int64_t outer,
                             int64_t n, int64_t inner, int64_t* order,
                             int64_t* run, void* temp, size_t* temp_bytes,
                             cudaStream_t stream);
cudaError_t LaunchUniqueWrite(ElemType type, const void* x, int64_t outer,
                              int64_t n, int64_t inner, const int64_t* order,
                              const int64_t* run, int64_t m, bool sorted,
                              void* values, int64_t* positions,
                              int64_t* inverse, int64_t* counts,
                              int64_t* scratch, void* temp, size_t temp_bytes,
                              cudaStream_t stream);

}  // namespace runnel::cuda

#endif  // RUNNEL_KERNELS_CUDA_INDEX_H_
