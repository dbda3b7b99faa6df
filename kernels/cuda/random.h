// The random ops on the GPU (random.cu): each thread samples its elements
// from their own counters with base/philox.h, exactly as the CPU kernels
// do (kernels/cpu/random_kernels.cc). Plain C++ (nvcc compiles random.cu);
// the OpKernels are random_kernels.cc.
#ifndef RUNNEL_KERNELS_CUDA_RANDOM_H_
#define RUNNEL_KERNELS_CUDA_RANDOM_H_

#include <cuda_runtime.h>

#include <cstdint>

#include "base/philox.h"
#include "kernels/cuda/cwise.h"

namespace runnel::cuda {

enum class Distribution { kNormal, kTruncatedNormal, kUniform };

// One draw of `n` elements of `type` (f32 or f64; kUniform also i32 and
// i64; cudaErrorNotSupported otherwise) from `stream`:
//   normals:  mean + stddev * z (one rounding), rounded to the type;
//   uniform floats: min + u * (max - min) (one rounding), below_max where
//     the rounded value reaches max (and max > min);
//   uniform integers: min_int + (the element's 64 bits mod range).
struct RandomArgs {
  Distribution dist = Distribution::kNormal;
  ElemType type = ElemType::kF32;
  int64_t n = 0;
  philox::Stream stream;
  double mean = 0, stddev = 1;
  double min = 0, max = 1, below_max = 0;
  int64_t min_int = 0;
  uint64_t range = 1;
};
cudaError_t LaunchRandom(const RandomArgs& a, void* out, cudaStream_t stream);

// Dropout of `n` elements of `type` (f32 or f64): where the element's
// uniform is below `rate`, y = 0 and scale = 0; elsewhere scale = kept and
// y = x * kept (rounded once, in the type). `kept` is 1 / (1 - rate)
// rounded to the type.
cudaError_t LaunchDropout(ElemType type, int64_t n, philox::Stream s,
                          double rate, double kept, const void* x, void* y,
                          void* scale, cudaStream_t stream);

// Sets `n` elements of `type` (f32 or f64) to one (dropout's scale when it
// keeps everything).
cudaError_t LaunchFillOne(ElemType type, int64_t n, void* out,
                          cudaStream_t stream);

}  // namespace runnel::cuda

#endif  // RUNNEL_KERNELS_CUDA_RANDOM_H_
