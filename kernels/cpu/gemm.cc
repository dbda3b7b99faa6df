#include "kernels/cpu/gemm.h"

#include <algorithm>
#include <cstring>
#include <memory>

#include "kernels/cpu/onednn.h"

namespace runnel {
namespace {

int64_t CeilDiv(int64_t a, int64_t b) { return (a + b - 1) / b; }

// dnnl_sgemm, single-threaded, on blocks of C that pool threads claim
// (onednn.h): C is cut along its longer side into at most kMaxGemmPieces
// blocks of at least kMinGemmWorkPerThread multiply-adds, 16 rows or columns
// apart. The cut depends on the shapes alone.
constexpr int64_t kMaxGemmPieces = 8;

// How dnnl_sgemm (row-major) reads a rows x cols operand: 'N' or 'T' and
// the leading dimension, or false when neither stride is 1.
bool SgemmLayout(ConstMatrixF32 x, int64_t rows, int64_t cols, char* trans,
                 int64_t* ld) {
  if (x.col_stride == 1 && (rows == 1 || x.row_stride >= cols)) {
    *trans = 'N';
    *ld = rows == 1 ? cols : x.row_stride;
    return true;
  }
  if (x.row_stride == 1 && (cols == 1 || x.col_stride >= rows)) {
    *trans = 'T';
    *ld = cols == 1 ? rows : x.col_stride;
    return true;
  }
  return false;
}

// oneDNN's sgemm reads B in place, without packing it, when C has up to a
// few hundred rows. Where B's rows lie a multiple of 2 KB apart (a width of
// 512, 1024, ... floats: most layers' weights), those reads fall into a few
// cache sets and the product runs at half speed: 45 against 84 GFLOP/s for
// 128x1024x1024 on one core here, 44 against 71 for an LSTM step's
// 32x1024x256, the copy included. Such a B is copied first with its rows
// 64 bytes further apart. Below 16 rows of C the copy costs what it saves.
constexpr int64_t kConflictingRowStride = 512;  // floats
constexpr int64_t kMinRowsToSpreadB = 16;

// Whether B (k x n, read as `tb` with leading dimension `ldb`) is copied.
bool SpreadsB(int64_t m, int64_t k, char tb, int64_t ldb) {
  return tb == 'N' && k > 1 && m >= kMinRowsToSpreadB &&
         ldb % kConflictingRowStride == 0;
}

// B's k x n values with rows `*ld` floats apart (a multiple of 16 that is
// not one of kConflictingRowStride), copied in parallel row blocks.
std::unique_ptr<float[]> SpreadB(ThreadPool* pool, const float* b, int64_t ldb,
                                 int64_t k, int64_t n, int64_t* ld) {
  *ld = CeilDiv(n, 16) * 16 + 16;
  if (*ld % kConflictingRowStride == 0) *ld += 16;
  std::unique_ptr<float[]> spread(new float[static_cast<size_t>(k * *ld)]);
  const int64_t stride = *ld;
  auto rows = [&](int64_t begin, int64_t end) {
    for (int64_t r = begin; r < end; ++r) {
      std::memcpy(spread.get() + r * stride, b + r * ldb,
                  static_cast<size_t>(n) * sizeof(float));
    }
  };
  if (pool == nullptr) {
    rows(0, k);
  } else {
    pool->ParallelFor(k, n, rows);
  }
  return spread;
}

}  // namespace

absl::Status GemmF32(ThreadPool* pool, int64_t m, int64_t n, int64_t k,
                     ConstMatrixF32 a, ConstMatrixF32 b, float* c, int64_t ldc,
                     bool accumulate) {
  char ta, tb;
  int64_t lda, ldb;
  if (m <= 0 || n <= 0) return absl::OkStatus();
  if (k <= 0) {
    if (accumulate) return absl::OkStatus();
    for (int64_t i = 0; i < m; ++i) std::fill_n(c + i * ldc, n, 0.0f);
    return absl::OkStatus();
  }
  if (!SgemmLayout(a, m, k, &ta, &lda) || !SgemmLayout(b, k, n, &tb, &ldb)) {
    return absl::InternalError("matmul: an operand with no unit stride");
  }
  std::unique_ptr<float[]> spread;
  const float* b_data = b.data;
  if (SpreadsB(m, k, tb, ldb)) {
    spread = SpreadB(pool, b.data, ldb, k, n, &ldb);
    b_data = spread.get();
  }
  const bool by_rows = m >= n;
  const int64_t side = by_rows ? m : n;
  const int64_t want =
      std::clamp<int64_t>(m * n * k / kMinGemmWorkPerThread, 1, kMaxGemmPieces);
  const int64_t size = CeilDiv(CeilDiv(side, want), 16) * 16;
  const int64_t pieces = CeilDiv(side, size);
  return DnnlPieces(pool, pieces, "matmul", [&](int64_t i) {
    const int64_t first = i * size, len = std::min(size, side - first);
    const float* ap = by_rows ? a.data + first * a.row_stride : a.data;
    const float* bp = by_rows ? b_data : b_data + first * b.col_stride;
    float* cp = by_rows ? c + first * ldc : c + first;
    const dnnl_status_t status =
        dnnl_sgemm(ta, tb, by_rows ? len : m, by_rows ? n : len, k, 1.0f, ap,
                   lda, bp, ldb, accumulate ? 1.0f : 0.0f, cp, ldc);
    if (status != dnnl_success) throw dnnl::error(status, "dnnl_sgemm");
  });
}

}  // namespace runnel
