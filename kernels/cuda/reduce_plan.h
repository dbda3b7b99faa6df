// How the GPU reductions (reduce.h) walk their input: host-side planning in
// plain C++ (no CUDA, Abseil or runtime headers), so that nvcc can include
// it and it can be tested on a machine without a GPU
// (tests/runtime/gpu_reduce_shape_test.cc).
//
//   ReduceLayout l = PlanReduceLayout(x.shape().dims(), axes);
//   if (!l.permute_dims.empty()) { copy x permuted; reduce the copy }
//   reduce [l.outer, l.reduced, l.inner]
//
// The layout merges dims as the CPU kernels do (kernels/cpu/
// reduction_kernels.cc): dims of size 1 are dropped, and neighbouring dims
// that are all reduced or all kept merge, so any reduction whose reduced
// dims form one run is [outer, reduced, inner] as the input lies. When the
// reduced dims are several runs, the input is first copied with its kept
// dims first and its reduced dims last.
//
// SplitReduce cuts a long reduced dim into chunks reduced in parallel (a
// first pass writing partial results, a second combining them), by shape
// alone, so results do not depend on the GPU.
#ifndef RUNNEL_KERNELS_CUDA_REDUCE_PLAN_H_
#define RUNNEL_KERNELS_CUDA_REDUCE_PLAN_H_

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <vector>

namespace runnel::cuda {

struct ReduceLayout {
  // Output element o * inner + j reduces input elements
  // (o * reduced + r) * inner + j over r (of the permuted copy when there
  // is one).
  int64_t outer = 1, reduced = 1, inner = 1;
  // Empty when the input is reduced as it lies. Otherwise the copy to make
  // first: its dims (row-major, kept ones first, then reduced ones, so
  // inner is 1) and, for each, the input's stride along it.
  std::vector<int64_t> permute_dims, permute_strides;
};

// `axes` sorted and distinct, each in [0, dims.size()). Reducing no axes
// gives reduced = 1 (each output is its one input element); a rank-0 input
// gives 1, 1, 1.
inline ReduceLayout PlanReduceLayout(const std::vector<int64_t>& dims,
                                     const std::vector<int>& axes) {
  // Runs of reduced / kept dims, outermost first.
  std::vector<int64_t> size;
  std::vector<bool> is_reduced;
  for (size_t i = 0; i < dims.size(); ++i) {
    if (dims[i] == 1) continue;
    const bool r =
        std::binary_search(axes.begin(), axes.end(), static_cast<int>(i));
    if (!size.empty() && is_reduced.back() == r) {
      size.back() *= dims[i];
    } else {
      size.push_back(dims[i]);
      is_reduced.push_back(r);
    }
  }
  const int groups = static_cast<int>(size.size());
  const int runs =
      static_cast<int>(std::count(is_reduced.begin(), is_reduced.end(), true));
  ReduceLayout l;
  if (runs <= 1) {
    const int first =
        static_cast<int>(std::find(is_reduced.begin(), is_reduced.end(), true) -
                         is_reduced.begin());
    for (int g = 0; g < groups; ++g) {
      if (g < first) l.outer *= size[g];
      if (g == first) l.reduced = size[g];
      if (g > first) l.inner *= size[g];
    }
    return l;
  }
  std::vector<int64_t> stride(groups);
  int64_t s = 1;
  for (int g = groups - 1; g >= 0; --g) {
    stride[g] = s;
    s *= size[g];
  }
  l.reduced = 1;
  for (bool want_reduced : {false, true}) {
    for (int g = 0; g < groups; ++g) {
      if (is_reduced[g] != want_reduced) continue;
      l.permute_dims.push_back(size[g]);
      l.permute_strides.push_back(stride[g]);
      (want_reduced ? l.reduced : l.outer) *= size[g];
    }
  }
  return l;
}

// The reduced dim cut into `chunks` runs of `rows` (the last may be
// shorter, none is empty). chunks == 1: one pass.
struct ReduceSplit {
  int64_t chunks = 1, rows = 0;
};

// Work is spread over blocks of threads: with inner == 1 a block reduces
// one contiguous run (rows), else a thread walks one column. A reduction
// with too few runs or columns to fill the GPU is cut along the reduced
// dim, keeping chunks long enough to be worth a pass.
inline constexpr int64_t kRowBlocks = 512;         // blocks wanted, rows
inline constexpr int64_t kMinRowChunk = 4096;      // elements per block
inline constexpr int64_t kColumnThreads = 131072;  // threads wanted, columns
inline constexpr int64_t kMinColumnChunk = 64;     // rows per thread

inline ReduceSplit SplitReduce(int64_t outer, int64_t reduced, int64_t inner) {
  ReduceSplit s;
  s.rows = reduced;
  if (outer <= 0 || inner <= 0 || reduced <= 0) return s;
  const bool rows = inner == 1;
  const int64_t min_chunk = rows ? kMinRowChunk : kMinColumnChunk;
  const int64_t units = rows ? outer : outer * inner;
  const int64_t wanted = rows ? kRowBlocks : kColumnThreads;
  if (units >= wanted || reduced < 2 * min_chunk) return s;
  const int64_t by_size = reduced / min_chunk;
  const int64_t by_work = (wanted + units - 1) / units;
  const int64_t chunks = std::max<int64_t>(1, std::min(by_size, by_work));
  s.rows = (reduced + chunks - 1) / chunks;
  s.chunks = (reduced + s.rows - 1) / s.rows;
  return s;
}

// Bytes of one partial result, at most (the widest accumulator: an f64
// value with its i64 index, for argmax).
inline constexpr size_t kPartialBytes = 16;

// Scratch a reduction needs on the device: partial results when it is cut
// in chunks, and `extra_outputs` more outputs' worth (logsumexp keeps the
// maxima), each slot kPartialBytes.
inline size_t ReduceScratchBytes(int64_t outer, int64_t reduced, int64_t inner,
                                 int extra_outputs) {
  const ReduceSplit s = SplitReduce(outer, reduced, inner);
  const int64_t partials = s.chunks > 1 ? outer * s.chunks * inner : 0;
  return static_cast<size_t>(partials + extra_outputs * outer * inner) *
         kPartialBytes;
}

}  // namespace runnel::cuda

#endif  // RUNNEL_KERNELS_CUDA_REDUCE_PLAN_H_
