#include "kernels/cpu/gemm.h"

#include <algorithm>
#include <cstring>
#include <memory>

#if defined(__AVX2__) && defined(__FMA__)
#include <immintrin.h>
#endif

#include "base/status_macros.h"
#include "kernels/common/array_util.h"
#include "kernels/cpu/onednn.h"

namespace runnel {
namespace {

int64_t CeilDiv(int64_t a, int64_t b) { return (a + b - 1) / b; }

// dnnl_sgemm, single-threaded, on blocks of C that pool threads claim
// (onednn.h): C is cut along its longer side into at most kMaxGemmPieces
// blocks of at least kMinGemmPieceWork multiply-adds, 16 rows or columns
// apart, and at most one block per kMinGemmPieceSide rows (columns) of that
// side, though two where it has 32: each block packs the whole of the
// operand along the other side, so thin blocks of a product with a long k
// (a weight gradient's x^T dy over a batch of rows) spend as much time
// packing as multiplying: 128x128x4096 took 1.20 ms in 8 blocks of 16
// columns, 0.85 in 2 of 64 (two threads). The cut depends on the shapes
// alone.
constexpr int64_t kMaxGemmPieces = 8;
constexpr int64_t kMinGemmPieceSide = 64;
// The least work of a piece: 2^22 multiply-adds, about 35 us on one core.
// Handing a piece to a sleeping pool thread costs tens of microseconds
// (its wake-up), and each piece packs its operands again: at 2^18 an LSTM
// step's 64x128x512 products were cut in 8 pieces, and the row-LSTM's
// training step took 8.3 ms on two threads, the char-LM's 43 ms, against
// 6.3 and 31 ms at 2^23, one piece each. Since the caller claims pieces
// without waiting for the pool (ThreadPool::RunClaimed), 2^22 gains on
// two threads (stop 69, 4-5 alternating rounds): the Fashion MLP's step
// 0.543 -> 0.504 ms (its 128x784x256 products in 6 pieces, not 3), the
// char-LM's 25.0 -> 23.0 ms (32x256x1024 in 2, not 1); the row-LSTM, the
// CNN and the char transformer unchanged.
constexpr int64_t kMinGemmPieceWork = int64_t{1} << 22;

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

// oneDNN's sgemm reads an operand in place, without packing it, in two
// cases: B when C has up to a few hundred rows and A is not transposed,
// and a transposed A (the weight gradient's x^T). Where such an operand's
// rows lie a multiple of 2 KB apart (a width of 512, 1024, ... floats:
// most layers' weights and activations), those reads fall into a few cache
// sets, and on an older machine the product ran at half speed (45 against
// 84 GFLOP/s for 128x1024x1024 on one core). Such an operand is copied
// first with its rows 64 bytes further apart, but only when the product
// reuses each of its values at least kMinRowsToSpread times (the rows of
// C for B, its columns for A): the copy is a pass over the whole operand,
// and for fewer it costs more than the conflicts do. On the
// Zen 5 of stop 66 (two threads, a whole step each): 64x3136x1024 (the
// tutorial CNN's dense layer) 1.26-1.41 ms copied against 1.00-1.08 in
// place, 16x1024x1024 0.33-0.50 against 0.13-0.14, 32x256x1024 (the
// char-LM's recurrent product) 85 against 77 us, x^T dy of 4096 rows of
// 512 and 128 features 1.33 against 1.10; at 256 rows copying B gained
// (256x3136x1024: 3.84 against 4.18 ms) or tied (256x1024x1024).
constexpr int64_t kConflictingRowStride = 512;  // floats
constexpr int64_t kMinRowsToSpread = 256;

// Whether B (k x n, read as `tb` with leading dimension `ldb`) is copied.
bool SpreadsB(int64_t m, int64_t k, char ta, char tb, int64_t ldb) {
  return ta == 'N' && tb == 'N' && k > 1 && m >= kMinRowsToSpread &&
         ldb % kConflictingRowStride == 0;
}

// Whether A (m x k, read as `ta` with leading dimension `lda`) is copied.
bool SpreadsA(int64_t n, int64_t k, char ta, int64_t lda) {
  return ta == 'T' && k > 1 && n >= kMinRowsToSpread &&
         lda % kConflictingRowStride == 0;
}

// The rows x cols values of x (rows `ld` floats apart) with rows `*spread_ld`
// floats apart (a multiple of 16 that is not one of kConflictingRowStride),
// copied in parallel row blocks.
std::unique_ptr<float[]> Spread(ThreadPool* pool, const float* x, int64_t ld,
                                int64_t rows, int64_t cols,
                                int64_t* spread_ld) {
  *spread_ld = CeilDiv(cols, 16) * 16 + 16;
  if (*spread_ld % kConflictingRowStride == 0) *spread_ld += 16;
  const int64_t stride = *spread_ld;
  std::unique_ptr<float[]> spread(
      new float[static_cast<size_t>(rows * stride)]);
  auto copy = [&](int64_t begin, int64_t end) {
    for (int64_t r = begin; r < end; ++r) {
      std::memcpy(spread.get() + r * stride, x + r * ld,
                  static_cast<size_t>(cols) * sizeof(float));
    }
  };
  if (pool == nullptr) {
    copy(0, rows);
  } else {
    pool->ParallelFor(rows, cols, copy);
  }
  return spread;
}

// Rough cycles an element of GemmF32Rows's `use` (an optimizer's update),
// for ParallelFor.
constexpr int64_t kUseCostPerElement = 16;

// The operands as dnnl_sgemm reads them: 'N' or 'T', leading dimensions
// and data, each copied first where SpreadsA/SpreadsB say (the copies live
// as long as this).
struct SgemmOperands {
  char ta, tb;
  int64_t lda, ldb;
  const float* a;
  const float* b;
  std::unique_ptr<float[]> spread_a, spread_b;
};

absl::Status PrepareOperands(ThreadPool* pool, int64_t m, int64_t n, int64_t k,
                             ConstMatrixF32 a, ConstMatrixF32 b,
                             SgemmOperands* out) {
  if (!SgemmLayout(a, m, k, &out->ta, &out->lda) ||
      !SgemmLayout(b, k, n, &out->tb, &out->ldb)) {
    return absl::InternalError("matmul: an operand with no unit stride");
  }
  out->a = a.data;
  out->b = b.data;
  if (SpreadsA(n, k, out->ta, out->lda)) {
    out->spread_a = Spread(pool, a.data, out->lda, k, m, &out->lda);
    out->a = out->spread_a.get();
  }
  if (SpreadsB(m, k, out->ta, out->tb, out->ldb)) {
    out->spread_b = Spread(pool, b.data, out->ldb, k, n, &out->ldb);
    out->b = out->spread_b.get();
  }
  return absl::OkStatus();
}

// The rows (columns) of each piece when C is cut along `side`, its rows'
// (columns') count: see kMaxGemmPieces.
int64_t PieceSize(int64_t m, int64_t n, int64_t k, int64_t side) {
  const int64_t want = std::min(
      std::clamp<int64_t>(m * n * k / kMinGemmPieceWork, 1, kMaxGemmPieces),
      std::max<int64_t>(side / kMinGemmPieceSide, side >= 32 ? 2 : 1));
  return CeilDiv(CeilDiv(side, want), 16) * 16;
}

// PackedMatrixF32's panels: this many columns each.
constexpr int64_t kPanel = 16;

// C[R x 16] (= or +=) A[R x k] P, P one panel (k x 16, row-major). With
// `kWhole` false only the first `cols` columns of C exist: the kernel
// works on a copy of them.
template <int R, bool kWhole>
void PanelKernel(const float* a, int64_t lda, const float* panel, int64_t k,
                 float* c, int64_t ldc, int64_t cols, bool accumulate) {
  float tail[R * kPanel];
  float* out = c;
  int64_t ldo = ldc;
  if (!kWhole) {
    out = tail;
    ldo = kPanel;
    std::fill_n(tail, R * kPanel, 0.0f);
    for (int r = 0; r < R && accumulate; ++r) {
      std::copy_n(c + r * ldc, cols, tail + r * kPanel);
    }
  }
#if defined(__AVX2__) && defined(__FMA__)
  __m256 lo[R], hi[R];
#pragma GCC unroll 8
  for (int r = 0; r < R; ++r) {
    lo[r] = accumulate ? _mm256_loadu_ps(out + r * ldo) : _mm256_setzero_ps();
    hi[r] =
        accumulate ? _mm256_loadu_ps(out + r * ldo + 8) : _mm256_setzero_ps();
  }
  for (int64_t i = 0; i < k; ++i) {
    const __m256 b_lo = _mm256_loadu_ps(panel + i * kPanel);
    const __m256 b_hi = _mm256_loadu_ps(panel + i * kPanel + 8);
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r) {
      const __m256 x = _mm256_broadcast_ss(a + r * lda + i);
      lo[r] = _mm256_fmadd_ps(x, b_lo, lo[r]);
      hi[r] = _mm256_fmadd_ps(x, b_hi, hi[r]);
    }
  }
#pragma GCC unroll 8
  for (int r = 0; r < R; ++r) {
    _mm256_storeu_ps(out + r * ldo, lo[r]);
    _mm256_storeu_ps(out + r * ldo + 8, hi[r]);
  }
#else
  float acc[R][kPanel];
  for (int r = 0; r < R; ++r) {
    for (int j = 0; j < kPanel; ++j) {
      acc[r][j] = accumulate ? out[r * ldo + j] : 0.0f;
    }
  }
  for (int64_t i = 0; i < k; ++i) {
    for (int r = 0; r < R; ++r) {
      const float x = a[r * lda + i];
      for (int j = 0; j < kPanel; ++j) acc[r][j] += x * panel[i * kPanel + j];
    }
  }
  for (int r = 0; r < R; ++r) std::copy_n(acc[r], kPanel, out + r * ldo);
#endif
  if (!kWhole) {
    for (int r = 0; r < R; ++r)
      std::copy_n(tail + r * kPanel, cols, c + r * ldc);
  }
}

// Rows of C in blocks of at most 6 (12 accumulators and the panel's two
// vectors in 16 registers), as even as the rows allow: 16 rows as 6, 5 and
// 5 (each block's chains of FMAs hide their latency; a block of 4 ran
// ~1.4 times slower a row).
template <bool kWhole>
void PanelRows(int64_t m, const float* a, int64_t lda, const float* panel,
               int64_t k, float* c, int64_t ldc, int64_t cols,
               bool accumulate) {
  using Kernel = void (*)(const float*, int64_t, const float*, int64_t, float*,
                          int64_t, int64_t, bool);
  static constexpr Kernel kKernels[] = {
      PanelKernel<1, kWhole>, PanelKernel<2, kWhole>, PanelKernel<3, kWhole>,
      PanelKernel<4, kWhole>, PanelKernel<5, kWhole>, PanelKernel<6, kWhole>};
  const int64_t blocks = (m + 5) / 6;
  int64_t r = 0;
  for (int64_t i = 0; i < blocks; ++i) {
    const int64_t rows = (m - r) / (blocks - i);
    kKernels[rows - 1](a + r * lda, lda, panel, k, c + r * ldc, ldc, cols,
                       accumulate);
    r += rows;
  }
}

}  // namespace

PackedMatrixF32::PackedMatrixF32(ThreadPool* pool, int64_t k, int64_t n,
                                 ConstMatrixF32 b)
    : k_(std::max<int64_t>(k, 0)),
      n_(std::max<int64_t>(n, 0)),
      panels_(static_cast<size_t>(CeilDiv(n_, kPanel) * kPanel * k_), 0.0f) {
  // Element (i, j) of panel p is B(i, p * 16 + j): the whole panels in one
  // copy (StridedCopy tiles a transposed B), the last partial one in
  // another.
  const int64_t whole = n_ / kPanel, cols = n_ - whole * kPanel;
  StridedCopy(pool, sizeof(float), {whole, k_, kPanel}, b.data,
              {kPanel * b.col_stride, b.row_stride, b.col_stride},
              panels_.data(), {k_ * kPanel, kPanel, 1});
  StridedCopy(pool, sizeof(float), {k_, cols},
              b.data + whole * kPanel * b.col_stride,
              {b.row_stride, b.col_stride},
              panels_.data() + whole * k_ * kPanel, {kPanel, 1});
}

void PackedMatrixF32::Multiply(int64_t m, const float* a, int64_t lda, float* c,
                               int64_t ldc, bool accumulate) const {
  for (int64_t p = 0; p * kPanel < n_; ++p) {
    const float* panel = panels_.data() + p * k_ * kPanel;
    const int64_t cols = std::min(kPanel, n_ - p * kPanel);
    float* cp = c + p * kPanel;
    if (cols == kPanel) {
      PanelRows<true>(m, a, lda, panel, k_, cp, ldc, cols, accumulate);
    } else {
      PanelRows<false>(m, a, lda, panel, k_, cp, ldc, cols, accumulate);
    }
  }
}

absl::Status GemmF32(ThreadPool* pool, int64_t m, int64_t n, int64_t k,
                     ConstMatrixF32 a, ConstMatrixF32 b, float* c, int64_t ldc,
                     bool accumulate, float alpha) {
  if (m <= 0 || n <= 0) return absl::OkStatus();
  if (k <= 0) {
    if (accumulate) return absl::OkStatus();
    for (int64_t i = 0; i < m; ++i) std::fill_n(c + i * ldc, n, 0.0f);
    return absl::OkStatus();
  }
  SgemmOperands op;
  RN_RETURN_IF_ERROR(PrepareOperands(pool, m, n, k, a, b, &op));
  const bool by_rows = m >= n;
  const int64_t side = by_rows ? m : n;
  const int64_t size = PieceSize(m, n, k, side);
  return DnnlPieces(pool, CeilDiv(side, size), "matmul", [&](int64_t i) {
    const int64_t first = i * size, len = std::min(size, side - first);
    const float* ap =
        by_rows ? op.a + first * (op.ta == 'N' ? op.lda : 1) : op.a;
    const float* bp =
        by_rows ? op.b : op.b + first * (op.tb == 'N' ? 1 : op.ldb);
    float* cp = by_rows ? c + first * ldc : c + first;
    const dnnl_status_t status =
        dnnl_sgemm(op.ta, op.tb, by_rows ? len : m, by_rows ? n : len, k, alpha,
                   ap, op.lda, bp, op.ldb, accumulate ? 1.0f : 0.0f, cp, ldc);
    if (status != dnnl_success) throw dnnl::error(status, "dnnl_sgemm");
  });
}

absl::Status GemmF32Rows(ThreadPool* pool, int64_t m, int64_t n, int64_t k,
                         ConstMatrixF32 a, ConstMatrixF32 b,
                         const std::function<void(int64_t first, int64_t rows,
                                                  const float* c)>& use) {
  if (m <= 0 || n <= 0) return absl::OkStatus();
  if (m < n) {
    // GemmF32 would cut C by columns: blocks of rows would each pack the
    // whole of B (a weight gradient x^T dy with few rows and a long batch:
    // the LSTM's 28x512 input weights over 1792 rows went ~3% slower a
    // step). The whole product first, then handed over in blocks of rows.
    std::unique_ptr<float[]> c(new float[static_cast<size_t>(m * n)]);
    RN_RETURN_IF_ERROR(GemmF32(pool, m, n, k, a, b, c.get(), n));
    auto hand = [&](int64_t begin, int64_t end) {
      use(begin, end - begin, c.get() + begin * n);
    };
    if (pool == nullptr) {
      hand(0, m);
    } else {
      pool->ParallelFor(m, n * kUseCostPerElement, hand);
    }
    return absl::OkStatus();
  }
  SgemmOperands op;
  if (k > 0) RN_RETURN_IF_ERROR(PrepareOperands(pool, m, n, k, a, b, &op));
  // At least a piece a thread where the rows allow (16 or more each): `use`
  // is a pass over memory that the product alone would not cut for.
  int64_t size = PieceSize(m, n, std::max<int64_t>(k, 1), m);
  if (pool != nullptr) {
    size = std::min(size,
                    std::max<int64_t>(
                        16, CeilDiv(CeilDiv(m, pool->num_threads()), 16) * 16));
  }
  return DnnlPieces(pool, CeilDiv(m, size), "matmul", [&](int64_t i) {
    const int64_t first = i * size, len = std::min(size, m - first);
    std::unique_ptr<float[]> block(new float[static_cast<size_t>(len * n)]);
    if (k <= 0) {
      std::fill_n(block.get(), len * n, 0.0f);
    } else {
      const dnnl_status_t status =
          dnnl_sgemm(op.ta, op.tb, len, n, k, 1.0f,
                     op.a + first * (op.ta == 'N' ? op.lda : 1), op.lda, op.b,
                     op.ldb, 0.0f, block.get(), n);
      if (status != dnnl_success) throw dnnl::error(status, "dnnl_sgemm");
    }
    use(first, len, block.get());
  });
}

}  // namespace runnel
