// scaled_dot_product_attention and its gradient on the GPU (attention.cu),
// with the CPU kernels' formulas (kernels/cpu/nn_kernels.cc), in f32 and
// f64: a block of threads per query (the forward pass and dq) or per key
// (dk and dv), its row of scores in shared memory, every sum in a fixed
// order, so the results do not depend on the launch. Plain C++, as nvcc
// compiles attention.cu; the OpKernels live in nn_kernels.cc.
#ifndef RUNNEL_KERNELS_CUDA_ATTENTION_H_
#define RUNNEL_KERNELS_CUDA_ATTENTION_H_

#include <cuda_runtime.h>

#include <cstdint>

#include "kernels/cuda/cwise.h"

namespace runnel::cuda {

// The geometry (framework/ops/kernel_checks.h, AttentionPlan): `count`
// matrices of the batch, matrix b of q at element q_off[b] (device memory,
// as k_off and v_off), its rows q_stride elements apart (k_stride,
// v_stride); the outputs' matrices as AttentionPlan::OutOffset places them
// (`heads` > 0: the layout bthd); query i of matrix b keeps key j where
// keep[((b * tq + i) % keep_lines) * tk + j] (keep[0] for every key when
// keep_lines is 0) is true; the scores are scale * q k^T.
struct AttentionArgs {
  int64_t count = 0, tq = 0, tk = 0, d = 0, dv = 0, keep_lines = 0;
  int64_t q_stride = 0, k_stride = 0, v_stride = 0, heads = 0;
  double scale = 1;
  const int64_t *q_off = nullptr, *k_off = nullptr, *v_off = nullptr;
  const bool* keep = nullptr;
};

// The most keys (forward) or queries and keys (gradient) a launch takes:
// its rows of scores must fit in a block's shared memory.
int64_t AttentionMaxLength(ElemType type);

// out (count matrices [tq, dv]) = the masked softmax of the scores, times v.
cudaError_t LaunchAttention(ElemType type, const AttentionArgs& a,
                            const void* q, const void* k, const void* v,
                            void* out, cudaStream_t stream);

// dq (count matrices [tq, d]), dk ([tk, d]) and dv ([tk, dv]) for the
// output's gradient dout (as out); `rows` is scratch of 3 * count
// * tq elements of the type (each query's max, sum and sum(dp * p)).
cudaError_t LaunchAttentionGrad(ElemType type, const AttentionArgs& a,
                                const void* q, const void* k, const void* v,
                                const void* dout, void* dq, void* dk, void* dv,
                                void* rows, cudaStream_t stream);

}  // namespace runnel::cuda

#endif  // RUNNEL_KERNELS_CUDA_ATTENTION_H_
