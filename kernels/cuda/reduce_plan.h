// How the GPU reductions (reduce.h) spread their work, planned on the host
// in plain C++ (no CUDA, Abseil or runtime headers), so that nvcc can
// include it and it can be tested on a machine without a GPU
// (tests/framework/gpu_reduce_shape_test.cc). The input's layout, [outer,
// reduced, inner], is the CPU's (framework/reduce_layout.h).
//
// SplitReduce cuts a long reduced dim into chunks reduced in parallel (a
// first pass writing partial results, a second combining them), by shape
// alone, so results do not depend on the GPU.
#ifndef RUNNEL_KERNELS_CUDA_REDUCE_PLAN_H_
#define RUNNEL_KERNELS_CUDA_REDUCE_PLAN_H_

#include <algorithm>
#include <cstddef>
#include <cstdint>

namespace runnel::cuda {

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
