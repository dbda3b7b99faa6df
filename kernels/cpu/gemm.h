// f32 matrix products for the kernels: C = A B on oneDNN's sgemm
// (onednn.h), each call cut into pieces that the intra-op pool's threads
// claim. matmul's f32, f16 and bf16 kernels use it (kernels/cpu/
// matmul_kernels.cc); conv2d calls oneDNN's convolutions directly.
#ifndef RUNNEL_KERNELS_CPU_GEMM_H_
#define RUNNEL_KERNELS_CPU_GEMM_H_

#include <cstdint>
#include <functional>
#include <vector>

#include "absl/status/status.h"
#include "base/thread_pool.h"

namespace runnel {

// Below this many multiply-adds per thread, a thread costs more than it
// saves.
inline constexpr int64_t kMinGemmWorkPerThread = int64_t{1} << 18;

// A strided f32 matrix: element (i, j) is data[i * row_stride + j *
// col_stride]. A transposed operand is the same buffer with strides swapped.
struct ConstMatrixF32 {
  const float* data;
  int64_t row_stride;
  int64_t col_stride;
};

// A row-major matrix of `cols` columns at `data`, read as itself or, with
// `transposed`, as its transpose.
inline ConstMatrixF32 StoredMatrix(const float* data, int64_t cols,
                                   bool transposed) {
  return transposed ? ConstMatrixF32{data, 1, cols}
                    : ConstMatrixF32{data, cols, 1};
}

// C (m x n, row-major with leading dimension `ldc`) = alpha A (m x k) B
// (k x n), or C += alpha A B with `accumulate`.
// Each operand needs a unit stride along one of its axes (else Internal).
// C is cut along its longer side into at most 8 blocks of at least 2^22
// multiply-adds and (where the side has 128) 64 rows or columns, 16 apart,
// each one single-threaded sgemm: the cut depends on the shapes alone, so
// results do not depend on the number of threads. k == 0 gives zeros (leaves
// C as it is with `accumulate`).
absl::Status GemmF32(ThreadPool* pool, int64_t m, int64_t n, int64_t k,
                     ConstMatrixF32 a, ConstMatrixF32 b, float* c, int64_t ldc,
                     bool accumulate = false, float alpha = 1.0f);

// A B (m x n) in blocks of rows, as GemmF32 cuts a product it cuts by rows
// (m >= n) but into at least a block per thread where m has 16 rows for
// each: each block is computed into a buffer of its own (rows x n,
// row-major), then handed to use(first, rows, block) on the thread that
// computed it, while it is still in that core's cache. (With m < n, which
// GemmF32 cuts by columns, the whole product is computed first and handed
// over in blocks of rows.) Otherwise the blocks never make a whole C: how
// an optimizer's update consumes a weight gradient without writing it to
// memory and reading it back (kernels/cpu/optim_kernels.cc). `use` runs
// for disjoint row ranges at once, from several threads.
absl::Status GemmF32Rows(ThreadPool* pool, int64_t m, int64_t n, int64_t k,
                         ConstMatrixF32 a, ConstMatrixF32 b,
                         const std::function<void(int64_t first, int64_t rows,
                                                  const float* c)>& use);

// B (k x n) packed once for many products A B with few rows of A: a
// recurrence's weights, multiplied by a piece of 16 rows of its state at
// every step (lstm_sequence). sgemm packs B again on every call, and with
// so few rows the packing costs as much as the arithmetic; here B is laid
// out once in panels of 16 columns (k x 16 each, the last padded with
// zeros) that register-blocked FMA kernels read in order (6 rows x 16
// columns of C each, AVX2; a portable loop elsewhere). One core, one
// thread, stop 77: 16x128x512 in 35 us against sgemm's 54, 16x512x128 34
// against 41, 16x256x1024 130 against 335.
class PackedMatrixF32 {
 public:
  // Packs b, read as k x n through its strides (a transposed operand is
  // packed as such), copying on `pool`.
  PackedMatrixF32(ThreadPool* pool, int64_t k, int64_t n, ConstMatrixF32 b);

  int64_t k() const { return k_; }
  int64_t n() const { return n_; }

  // C (m x n, row-major, leading dimension ldc) = A B, or C += A B with
  // `accumulate`; A is m x k, row-major with leading dimension lda. On the
  // calling thread. Each element of C sums its k products in order, so a
  // row of C does not depend on m or on the other rows.
  void Multiply(int64_t m, const float* a, int64_t lda, float* c, int64_t ldc,
                bool accumulate) const;

 private:
  int64_t k_, n_;
  std::vector<float> panels_;
};

}  // namespace runnel

#endif  // RUNNEL_KERNELS_CPU_GEMM_H_
