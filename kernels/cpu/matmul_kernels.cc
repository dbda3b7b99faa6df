// matmul kernels, and GemmF32, the f32 matrix product they share with
// conv2d (eigen_support.h).
//
// GemmF32 is a BLIS-style blocked product. B is packed into 16-column
// panels, cut into k slices of at most 256 so a panel slice stays in L1.
// C is split into row blocks of at most 144 rows whose A slice stays in L2,
// and a 6x16 AVX2/FMA micro-kernel (12 accumulator registers) runs over each
// 6-row, 16-column tile. Threads pack B together, then claim row blocks;
// nobody waits for a thread that has not started, so a busy pool costs
// speed, never a deadlock.
//
// A is read in place when its rows are runs of contiguous floats (a
// row-major matrix; conv2d's image patches, one run per filter tap): the
// micro-kernel broadcasts from six row streams, which prefetch as well as a
// packed panel, and skipping the copy matters when B has few columns to
// amortise it over. Other A (transposed) is packed into 6-row panels.
// Single-threaded this runs level with OpenBLAS on the development machine
// (Zen 3, AVX2) and about 1.4x faster than Eigen's tensor contraction.
//
// f16/bf16 are converted to f32 around it; f64 and the integer types use
// Eigen's tensor contraction on the intra-op pool.
#include <algorithm>
#include <atomic>
#include <cstring>
#include <thread>
#include <vector>

#include "kernels/cpu/eigen_support.h"
#include "runtime/shape_fns.h"
#include "runtime/strings.h"

#if defined(__AVX2__) && defined(__FMA__)
#include <immintrin.h>
#define RUNNEL_GEMM_AVX2 1
#endif

namespace runnel {
namespace {

constexpr int kMr = 6;         // rows of a micro-tile
constexpr int kNr = 16;        // columns of a micro-tile
constexpr int64_t kKc = 256;   // depth of a k slice (L1: a B panel)
constexpr int64_t kMc = 144;   // rows of a block (L2: its A slice)
constexpr int64_t kNc = 4080;  // columns per pass over packed B
// Below this many multiply-adds per thread, a thread costs more than it
// saves.
constexpr int64_t kMinWorkPerShard = int64_t{1} << 18;

// A run of contiguous A elements within one row: `len` floats starting
// `offset` floats after the row's start.
struct Run {
  int64_t offset;
  int64_t len;
};

#ifdef RUNNEL_GEMM_AVX2
// One depth step of one row: broadcast the A element, multiply-add into
// the row's V accumulators. Named variables (not arrays) keep the
// accumulators in registers.
template <int V>
__attribute__((always_inline)) inline void RowStep(const float* a, __m256 b0,
                                                   __m256 b1, __m256& lo,
                                                   __m256& hi) {
  const __m256 x = _mm256_broadcast_ss(a);
  lo = _mm256_fmadd_ps(x, b0, lo);
  if constexpr (V > 1) hi = _mm256_fmadd_ps(x, b1, hi);
}

// Writes (or adds) one row's accumulators to `row`, `cols` columns.
template <int V>
__attribute__((always_inline)) inline void RowStore(float* row, __m256 lo,
                                                    __m256 hi, int cols,
                                                    __m256i tail_mask,
                                                    bool accumulate) {
  if (cols == 8 * V) {
    if (accumulate) lo = _mm256_add_ps(lo, _mm256_loadu_ps(row));
    _mm256_storeu_ps(row, lo);
    if constexpr (V > 1) {
      if (accumulate) hi = _mm256_add_ps(hi, _mm256_loadu_ps(row + 8));
      _mm256_storeu_ps(row + 8, hi);
    }
    return;
  }
  float* last = row;
  __m256 x = lo;
  if constexpr (V > 1) {
    if (accumulate) lo = _mm256_add_ps(lo, _mm256_loadu_ps(row));
    _mm256_storeu_ps(row, lo);
    last = row + 8;
    x = hi;
  }
  if (accumulate) x = _mm256_add_ps(x, _mm256_maskload_ps(last, tail_mask));
  _mm256_maskstore_ps(last, tail_mask, x);
}
#endif

// Where a micro-tile's A comes from: a packed panel (a[p * 6 + r]), or
// R row pointers and the runs of the current k slice.
struct TileLhs {
  const float* packed;
  const float* const* rows;
  const Run* runs;
  int64_t num_runs;
};

// c[0:R, 0:cols] (+)= A-tile * b-panel over one k slice, R <= 6 rows and
// 8 * (V - 1) < cols <= 8 * V columns; b is packed as b[p * 16 + j]
// (32-byte aligned). Every variant does the same multiply-adds per element
// in the same order, so edge tiles round exactly like interior ones and
// packed and in-place A give the same result.
template <int R, int V, bool kPacked>
void MicroKernel(const TileLhs& a, int64_t depth, const float* __restrict b,
                 float* c, int64_t ldc, int cols, bool accumulate) {
#ifdef RUNNEL_GEMM_AVX2
  for (int r = 0; r < R; ++r) {
    _mm_prefetch(reinterpret_cast<const char*>(c + r * ldc), _MM_HINT_T0);
    _mm_prefetch(reinterpret_cast<const char*>(c + r * ldc + cols - 1),
                 _MM_HINT_T0);
  }
  const __m256 zero = _mm256_setzero_ps();
  __m256 c00 = zero, c01 = zero, c10 = zero, c11 = zero, c20 = zero, c21 = zero,
         c30 = zero, c31 = zero, c40 = zero, c41 = zero, c50 = zero, c51 = zero;
  // Multiply-adds a run of `len` depth steps; element (r, p) of A is at
  // ar[p * step].
  auto run = [&](const float* a0, const float* a1, const float* a2,
                 const float* a3, const float* a4, const float* a5,
                 int64_t step, int64_t len) __attribute__((always_inline)) {
#pragma GCC unroll 4
    for (int64_t p = 0; p < len; ++p) {
      const __m256 b0 = _mm256_load_ps(b);
      const __m256 b1 = V > 1 ? _mm256_load_ps(b + 8) : zero;
      const int64_t q = p * step;
      if constexpr (R > 0) RowStep<V>(a0 + q, b0, b1, c00, c01);
      if constexpr (R > 1) RowStep<V>(a1 + q, b0, b1, c10, c11);
      if constexpr (R > 2) RowStep<V>(a2 + q, b0, b1, c20, c21);
      if constexpr (R > 3) RowStep<V>(a3 + q, b0, b1, c30, c31);
      if constexpr (R > 4) RowStep<V>(a4 + q, b0, b1, c40, c41);
      if constexpr (R > 5) RowStep<V>(a5 + q, b0, b1, c50, c51);
      b += kNr;
    }
  };
  if constexpr (kPacked) {
    const float* p = a.packed;
    run(p, p + 1, p + 2, p + 3, p + 4, p + 5, kMr, depth);
  } else {
    const float* const* rows = a.rows;
    const float* a0 = rows[0];
    const float* a1 = R > 1 ? rows[1] : a0;
    const float* a2 = R > 2 ? rows[2] : a0;
    const float* a3 = R > 3 ? rows[3] : a0;
    const float* a4 = R > 4 ? rows[4] : a0;
    const float* a5 = R > 5 ? rows[5] : a0;
    for (int64_t i = 0; i < a.num_runs; ++i) {
      const int64_t o = a.runs[i].offset;
      run(a0 + o, a1 + o, a2 + o, a3 + o, a4 + o, a5 + o, 1, a.runs[i].len);
    }
  }
  const int tail = cols - 8 * (V - 1);  // columns in the last vector
  const __m256i mask = _mm256_cmpgt_epi32(
      _mm256_set1_epi32(tail), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
  if constexpr (R > 0) RowStore<V>(c, c00, c01, cols, mask, accumulate);
  if constexpr (R > 1) RowStore<V>(c + ldc, c10, c11, cols, mask, accumulate);
  if constexpr (R > 2) {
    RowStore<V>(c + 2 * ldc, c20, c21, cols, mask, accumulate);
  }
  if constexpr (R > 3) {
    RowStore<V>(c + 3 * ldc, c30, c31, cols, mask, accumulate);
  }
  if constexpr (R > 4) {
    RowStore<V>(c + 4 * ldc, c40, c41, cols, mask, accumulate);
  }
  if constexpr (R > 5) {
    RowStore<V>(c + 5 * ldc, c50, c51, cols, mask, accumulate);
  }
#else
  float acc[R][kNr] = {};
  auto element = [&](int r, int64_t p) {
    if constexpr (kPacked) {
      return a.packed[p * kMr + r];
    } else {
      for (int64_t i = 0; i < a.num_runs; ++i) {
        if (p < a.runs[i].len) return a.rows[r][a.runs[i].offset + p];
        p -= a.runs[i].len;
      }
      return 0.0f;
    }
  };
  for (int64_t p = 0; p < depth; ++p) {
    for (int r = 0; r < R; ++r) {
      const float x = element(r, p);
      for (int j = 0; j < cols; ++j) acc[r][j] += x * b[p * kNr + j];
    }
  }
  for (int r = 0; r < R; ++r) {
    for (int j = 0; j < cols; ++j) {
      c[r * ldc + j] = accumulate ? c[r * ldc + j] + acc[r][j] : acc[r][j];
    }
  }
#endif
}

using MicroKernelFn = void (*)(const TileLhs&, int64_t, const float*, float*,
                               int64_t, int, bool);

// The micro-kernel for a tile of `rows` x `cols` (1..6 x 1..16).
template <bool kPacked>
MicroKernelFn PickMicroKernel(int rows, int cols) {
  static constexpr MicroKernelFn kTable[kMr][2] = {
      {MicroKernel<1, 1, kPacked>, MicroKernel<1, 2, kPacked>},
      {MicroKernel<2, 1, kPacked>, MicroKernel<2, 2, kPacked>},
      {MicroKernel<3, 1, kPacked>, MicroKernel<3, 2, kPacked>},
      {MicroKernel<4, 1, kPacked>, MicroKernel<4, 2, kPacked>},
      {MicroKernel<5, 1, kPacked>, MicroKernel<5, 2, kPacked>},
      {MicroKernel<6, 1, kPacked>, MicroKernel<6, 2, kPacked>}};
  return kTable[rows - 1][cols > 8 ? 1 : 0];
}

// Packs rows [row, row + 6) x columns [col, col + depth) of a strided A as
// out[p * 6 + r], zero past row m.
void PackLhsPanel(ConstMatrixF32 a, int64_t m, int64_t row, int64_t col,
                  int64_t depth, float* out) {
  const int rows = static_cast<int>(std::min<int64_t>(kMr, m - row));
  const float* src = a.data + row * a.row_stride + col * a.col_stride;
  if (a.col_stride == 1) {
    for (int r = 0; r < rows; ++r) {
      const float* s = src + r * a.row_stride;
      for (int64_t p = 0; p < depth; ++p) out[p * kMr + r] = s[p];
    }
  } else {
    for (int64_t p = 0; p < depth; ++p) {
      const float* s = src + p * a.col_stride;
      for (int r = 0; r < rows; ++r) out[p * kMr + r] = s[r * a.row_stride];
    }
  }
  for (int r = rows; r < kMr; ++r) {
    for (int64_t p = 0; p < depth; ++p) out[p * kMr + r] = 0.0f;
  }
}

// Packs columns [col, col + 16) x rows [k0, k0 + depth) of B as
// out[p * 16 + j], zero past column n.
void PackRhsPanel(ConstMatrixF32 b, int64_t n, int64_t col, int64_t k0,
                  int64_t depth, float* out) {
  const int cols = static_cast<int>(std::min<int64_t>(kNr, n - col));
  const float* src = b.data + k0 * b.row_stride + col * b.col_stride;
  if (cols == kNr && b.col_stride == 1) {
    for (int64_t p = 0; p < depth; ++p) {
      std::memcpy(out + p * kNr, src + p * b.row_stride, kNr * sizeof(float));
    }
    return;
  }
  if (b.row_stride == 1) {
    for (int j = 0; j < cols; ++j) {
      const float* s = src + j * b.col_stride;
      for (int64_t p = 0; p < depth; ++p) out[p * kNr + j] = s[p];
    }
  } else {
    for (int64_t p = 0; p < depth; ++p) {
      const float* s = src + p * b.row_stride;
      for (int j = 0; j < cols; ++j) out[p * kNr + j] = s[j * b.col_stride];
    }
  }
  for (int64_t p = 0; p < depth; ++p) {
    for (int j = cols; j < kNr; ++j) out[p * kNr + j] = 0.0f;
  }
}

int64_t CeilDiv(int64_t a, int64_t b) { return (a + b - 1) / b; }

// The blocking of one product. k is cut into equal slices of at most kKc so
// that no slice is a sliver.
struct GemmPlan {
  GemmPlan(int64_t m, int64_t n, int64_t k)
      : m(m),
        n(n),
        k(k),
        m_panels(CeilDiv(m, kMr)),
        n_panels(CeilDiv(n, kNr)),
        k_slices(CeilDiv(k, kKc)),
        kc(CeilDiv(k, k_slices)) {}

  int64_t SliceStart(int64_t s) const { return s * kc; }
  int64_t SliceDepth(int64_t s) const { return std::min(kc, k - s * kc); }
  // Packed B: slice-major, then 16-column panels of SliceDepth(s) rows.
  template <typename F>
  F* RhsPanel(F* packed, int64_t s, int64_t panel) const {
    return packed + SliceStart(s) * n_panels * kNr +
           panel * kNr * SliceDepth(s);
  }
  int64_t packed_rhs_size() const { return k * n_panels * kNr; }

  int64_t m, n, k;
  int64_t m_panels, n_panels;
  int64_t k_slices, kc;
};

// The left operand as the blocked loops see it: a strided matrix packed
// panel by panel, or rows read in place (GemmRowsLhs).
struct Lhs {
  ConstMatrixF32 packed_from{nullptr, 0, 0};
  const GemmRowsLhs* rows = nullptr;
  std::vector<std::vector<Run>> slice_runs;  // in place: runs per k slice
};

// Splits each k slice of an in-place A into runs within its segments,
// merging segments that are adjacent in memory (conv2d taps along a row).
std::vector<std::vector<Run>> SliceRuns(const GemmPlan& plan,
                                        const GemmRowsLhs& a) {
  std::vector<std::vector<Run>> runs(plan.k_slices);
  for (int64_t s = 0; s < plan.k_slices; ++s) {
    const int64_t end = plan.SliceStart(s) + plan.SliceDepth(s);
    for (int64_t q = plan.SliceStart(s); q < end;) {
      const int64_t seg = q / a.segment_len, within = q % a.segment_len;
      const int64_t len = std::min(a.segment_len - within, end - q);
      const int64_t offset = a.segments[seg] + within;
      if (!runs[s].empty() &&
          runs[s].back().offset + runs[s].back().len == offset) {
        runs[s].back().len += len;  // adjacent in memory: one longer run
      } else {
        runs[s].push_back({offset, len});
      }
      q += len;
    }
  }
  return runs;
}

// Computes C rows in panels [pm0, pm1) (at most kMc rows) and columns in
// panels [pn0, pn1). `abuf` holds a packed A slice (kMc x kc floats), or
// the row pointers of an in-place A.
void ComputeBlock(const GemmPlan& plan, const Lhs& lhs, const float* packed_b,
                  float* c, int64_t ldc, int64_t pm0, int64_t pm1, int64_t pn0,
                  int64_t pn1, float* abuf,
                  std::vector<const float*>& row_ptrs) {
  const bool packed = lhs.rows == nullptr;
  if (!packed) {
    row_ptrs.resize((pm1 - pm0) * kMr);
    for (int64_t i = pm0 * kMr; i < std::min(plan.m, pm1 * kMr); ++i) {
      row_ptrs[i - pm0 * kMr] = lhs.rows->row(i);
    }
  }
  for (int64_t jc = pn0; jc < pn1; jc += kNc / kNr) {
    const int64_t jc_end = std::min(pn1, jc + kNc / kNr);
    for (int64_t s = 0; s < plan.k_slices; ++s) {
      const int64_t k0 = plan.SliceStart(s), depth = plan.SliceDepth(s);
      const bool accumulate = s > 0;
      if (packed) {
        for (int64_t i = pm0; i < pm1; ++i) {
          PackLhsPanel(lhs.packed_from, plan.m, i * kMr, k0, depth,
                       abuf + (i - pm0) * kMr * depth);
        }
      }
      TileLhs tile{nullptr, nullptr, nullptr, 0};
      if (!packed) {
        tile.runs = lhs.slice_runs[s].data();
        tile.num_runs = static_cast<int64_t>(lhs.slice_runs[s].size());
      }
      for (int64_t j = jc; j < jc_end; ++j) {
        const float* bp = plan.RhsPanel(packed_b, s, j);
        const int64_t col = j * kNr;
        const int nr = static_cast<int>(std::min<int64_t>(kNr, plan.n - col));
        for (int64_t i = pm0; i < pm1; ++i) {
          const int64_t row = i * kMr;
          const int mr = static_cast<int>(std::min<int64_t>(kMr, plan.m - row));
          float* ct = c + row * ldc + col;
          const bool full = mr == kMr && nr == kNr;
          if (packed) {
            tile.packed = abuf + (i - pm0) * kMr * depth;
            if (full) {
              MicroKernel<kMr, 2, true>(tile, depth, bp, ct, ldc, kNr,
                                        accumulate);
            } else {
              PickMicroKernel<true>(mr, nr)(tile, depth, bp, ct, ldc, nr,
                                            accumulate);
            }
          } else {
            tile.rows = row_ptrs.data() + (i - pm0) * kMr;
            if (full) {
              MicroKernel<kMr, 2, false>(tile, depth, bp, ct, ldc, kNr,
                                         accumulate);
            } else {
              PickMicroKernel<false>(mr, nr)(tile, depth, bp, ct, ldc, nr,
                                             accumulate);
            }
          }
        }
      }
    }
  }
}

// Splits C into units of whole panels that threads claim one at a time.
// Rows are split into the fewest units of at most kMc rows that give every
// thread the same number: each unit streams all of packed B through the
// cache once per k slice, so more units than that only cost bandwidth.
// Columns are split too when there are fewer row units than threads.
// Claiming (rather than assigning) units means a thread that starts late,
// because the pool is busy, leaves its share to the others.
struct GemmUnits {
  GemmUnits(const GemmPlan& plan, int threads) {
    const int64_t per_thread = CeilDiv(plan.m_panels, threads * (kMc / kMr));
    rows = std::min<int64_t>(plan.m_panels, threads * per_thread);
    row_panels = CeilDiv(plan.m_panels, rows);
    rows = CeilDiv(plan.m_panels, row_panels);
    if (rows < threads) {
      cols = std::min<int64_t>(plan.n_panels, CeilDiv(threads, rows));
    }
    col_panels = CeilDiv(plan.n_panels, cols);
    cols = CeilDiv(plan.n_panels, col_panels);
  }
  int64_t count() const { return rows * cols; }

  int64_t rows = 1, cols = 1;  // units along each dimension
  int64_t row_panels = 1, col_panels = 1;
};

void Gemm(ThreadPool* pool, int64_t m, int64_t n, int64_t k, const Lhs& lhs,
          ConstMatrixF32 b, float* c, int64_t ldc) {
  if (m <= 0 || n <= 0) return;
  if (k <= 0) {
    for (int64_t i = 0; i < m; ++i) std::fill_n(c + i * ldc, n, 0.0f);
    return;
  }
  const GemmPlan plan(m, n, k);
  const int threads = pool == nullptr ? 1 : pool->num_threads();
  const int usable = static_cast<int>(std::min<int64_t>(
      threads, std::max<int64_t>(1, m * n * k / kMinWorkPerShard)));
  const GemmUnits units(plan, usable);
  const int shards = static_cast<int>(std::min<int64_t>(usable, units.count()));
  Lhs in_place;
  const Lhs* a = &lhs;
  if (lhs.rows != nullptr) {
    in_place.rows = lhs.rows;
    in_place.slice_runs = SliceRuns(plan, *lhs.rows);
    a = &in_place;
  }

  Tensor packed_b(DType::kF32, Shape{plan.packed_rhs_size()});
  float* pb = packed_b.data<float>();
  const int64_t abuf_size =
      lhs.rows != nullptr ? 0 : units.row_panels * kMr * plan.kc;
  Tensor abufs(DType::kF32, Shape{abuf_size * shards});
  // One fork: every shard first helps pack B, panel by panel, then waits
  // only for panels other running shards have claimed, then claims units.
  // No shard waits for one that has not started, so a busy pool cannot
  // deadlock this, and the caller never waits for a late thread.
  std::atomic<int64_t> next_panel{0}, panels_done{0}, next_unit{0};
  RunShards(shards > 1 ? pool : nullptr, shards, [&](int shard) {
    for (int64_t j; (j = next_panel.fetch_add(1)) < plan.n_panels;) {
      for (int64_t s = 0; s < plan.k_slices; ++s) {
        PackRhsPanel(b, n, j * kNr, plan.SliceStart(s), plan.SliceDepth(s),
                     plan.RhsPanel(pb, s, j));
      }
      panels_done.fetch_add(1, std::memory_order_release);
    }
    while (panels_done.load(std::memory_order_acquire) < plan.n_panels) {
      std::this_thread::yield();
    }
    float* abuf = abufs.data<float>() + shard * abuf_size;
    std::vector<const float*> row_ptrs;
    for (int64_t u; (u = next_unit.fetch_add(1)) < units.count();) {
      const int64_t ru = u / units.cols, cu = u % units.cols;
      const int64_t pm0 = ru * units.row_panels;
      const int64_t pm1 = std::min(plan.m_panels, pm0 + units.row_panels);
      const int64_t pn0 = cu * units.col_panels;
      const int64_t pn1 = std::min(plan.n_panels, pn0 + units.col_panels);
      if (pm0 < pm1 && pn0 < pn1) {
        ComputeBlock(plan, *a, pb, c, ldc, pm0, pm1, pn0, pn1, abuf, row_ptrs);
      }
    }
  });
}

}  // namespace

void GemmF32(ThreadPool* pool, int64_t m, int64_t n, int64_t k,
             ConstMatrixF32 a, ConstMatrixF32 b, float* c, int64_t ldc) {
  Lhs lhs;
  if (a.col_stride != 1) {
    lhs.packed_from = a;
    Gemm(pool, m, n, k, lhs, b, c, ldc);
    return;
  }
  const GemmRowsLhs rows{
      [&a](int64_t i) { return a.data + i * a.row_stride; }, {0}, k};
  lhs.rows = &rows;
  Gemm(pool, m, n, k, lhs, b, c, ldc);
}

void GemmF32(ThreadPool* pool, int64_t m, int64_t n, const GemmRowsLhs& a,
             ConstMatrixF32 b, float* c, int64_t ldc) {
  Lhs lhs;
  lhs.rows = &a;
  Gemm(pool, m, n, static_cast<int64_t>(a.segments.size()) * a.segment_len, lhs,
       b, c, ldc);
}

namespace {

// Offsets of each output batch matrix's operands under NumPy broadcasting:
// batch dims of a and b are right-aligned against `out`.
std::vector<int64_t> BatchOffsets(const Shape& in, const Shape& out,
                                  int64_t matrix_size) {
  const int out_rank = out.rank() - 2, in_rank = in.rank() - 2;
  int64_t count = 1;
  for (int i = 0; i < out_rank; ++i) count *= out.dim(i);
  std::vector<int64_t> strides(out_rank, 0);
  int64_t stride = matrix_size;
  for (int i = in_rank - 1; i >= 0; --i) {
    const int o = i + out_rank - in_rank;
    strides[o] = in.dim(i) == 1 ? 0 : stride;
    stride *= in.dim(i);
  }
  std::vector<int64_t> offsets(count);
  std::vector<int64_t> index(out_rank, 0);
  for (int64_t b = 0; b < count; ++b) {
    int64_t off = 0;
    for (int i = 0; i < out_rank; ++i) off += index[i] * strides[i];
    offsets[b] = off;
    for (int i = out_rank - 1; i >= 0; --i) {
      if (++index[i] < out.dim(i)) break;
      index[i] = 0;
    }
  }
  return offsets;
}

// One product of the batch: the operands as stored (before transposition).
struct MatMulDims {
  int64_t m, n, k;
  int64_t a_rows, a_cols, b_rows, b_cols;
  bool ta, tb;
};

void MatMulF32(ThreadPool* pool, const MatMulDims& d, const float* a,
               const float* b, float* c, const std::vector<int64_t>& a_off,
               const std::vector<int64_t>& b_off) {
  const int64_t batch = static_cast<int64_t>(a_off.size());
  auto one = [&](ThreadPool* p, int64_t i) {
    ConstMatrixF32 am{a + a_off[i], d.ta ? 1 : d.a_cols, d.ta ? d.a_cols : 1};
    ConstMatrixF32 bm{b + b_off[i], d.tb ? 1 : d.b_cols, d.tb ? d.b_cols : 1};
    GemmF32(p, d.m, d.n, d.k, am, bm, c + i * d.m * d.n, d.n);
  };
  const int threads = pool->num_threads();
  if (batch == 1 || d.m * d.n * d.k >= threads * kMinWorkPerShard * 4) {
    for (int64_t i = 0; i < batch; ++i) one(pool, i);
    return;
  }
  // Many small products: one thread per group of them.
  const int shards = static_cast<int>(std::min<int64_t>(threads, batch));
  RunShards(pool, shards, [&](int s) {
    for (int64_t i = batch * s / shards; i < batch * (s + 1) / shards; ++i) {
      one(nullptr, i);
    }
  });
}

template <typename T>
void MatMulEigen(OpKernelContext* ctx, const MatMulDims& d, const T* a,
                 const T* b, T* c, const std::vector<int64_t>& a_off,
                 const std::vector<int64_t>& b_off) {
  using Map2 = Eigen::TensorMap<Eigen::Tensor<const T, 2, Eigen::RowMajor>>;
  using OutMap = Eigen::TensorMap<Eigen::Tensor<T, 2, Eigen::RowMajor>>;
  const Eigen::array<Eigen::IndexPair<Eigen::Index>, 1> dims = {
      Eigen::IndexPair<Eigen::Index>(d.ta ? 0 : 1, d.tb ? 1 : 0)};
  const int64_t batch = static_cast<int64_t>(a_off.size());
  auto one = [&](auto& device, int64_t i) {
    Map2 am(a + a_off[i], d.a_rows, d.a_cols);
    Map2 bm(b + b_off[i], d.b_rows, d.b_cols);
    OutMap cm(c + i * d.m * d.n, d.m, d.n);
    cm.device(device) = am.contract(bm, dims);
  };
  ThreadPool* pool = ctx->intra_op_pool();
  if (batch == 1 || d.m * d.n * d.k >= kMinWorkPerShard * 4) {
    Eigen::ThreadPoolDevice device = EigenDevice(ctx);
    for (int64_t i = 0; i < batch; ++i) one(device, i);
    return;
  }
  const int shards =
      static_cast<int>(std::min<int64_t>(pool->num_threads(), batch));
  RunShards(pool, shards, [&](int s) {
    Eigen::DefaultDevice device;
    for (int64_t i = batch * s / shards; i < batch * (s + 1) / shards; ++i) {
      one(device, i);
    }
  });
}

template <typename T>
class MatMulKernel : public OpKernel {
 public:
  absl::Status Init(const Node& node) override {
    RN_ASSIGN_OR_RETURN(ta_, node.attr<bool>("transpose_a"));
    RN_ASSIGN_OR_RETURN(tb_, node.attr<bool>("transpose_b"));
    return absl::OkStatus();
  }

  absl::Status Compute(OpKernelContext* ctx) override {
    const Tensor& a = ctx->input(0);
    const Tensor& b = ctx->input(1);
    if (a.rank() < 2 || b.rank() < 2) {
      return absl::InvalidArgumentError(
          StrCat("operands must have rank >= 2, got ", DTypeName(a.dtype()),
                 a.shape().ToString(), " @ ", DTypeName(b.dtype()),
                 b.shape().ToString()));
    }
    MatMulDims d;
    d.ta = ta_;
    d.tb = tb_;
    d.a_rows = a.dim(a.rank() - 2);
    d.a_cols = a.dim(a.rank() - 1);
    d.b_rows = b.dim(b.rank() - 2);
    d.b_cols = b.dim(b.rank() - 1);
    d.m = ta_ ? d.a_cols : d.a_rows;
    d.k = ta_ ? d.a_rows : d.a_cols;
    d.n = tb_ ? d.b_rows : d.b_cols;
    const int64_t kb = tb_ ? d.b_cols : d.b_rows;
    if (d.k != kb) {
      return absl::InvalidArgumentError(
          StrCat("inner dimensions differ: ", DTypeName(a.dtype()),
                 a.shape().ToString(), " @ ", DTypeName(b.dtype()),
                 b.shape().ToString()));
    }
    Shape batch_a(std::vector<int64_t>(a.shape().dims().begin(),
                                       a.shape().dims().end() - 2));
    Shape batch_b(std::vector<int64_t>(b.shape().dims().begin(),
                                       b.shape().dims().end() - 2));
    RN_ASSIGN_OR_RETURN(Shape out_shape, BroadcastShapes(batch_a, batch_b));
    out_shape.mutable_dims().push_back(d.m);
    out_shape.mutable_dims().push_back(d.n);
    RN_ASSIGN_OR_RETURN(Tensor * out, ctx->allocate_output(0, out_shape));
    if (out->num_elements() == 0) return absl::OkStatus();
    const std::vector<int64_t> a_off =
        BatchOffsets(a.shape(), out_shape, d.a_rows * d.a_cols);
    const std::vector<int64_t> b_off =
        BatchOffsets(b.shape(), out_shape, d.b_rows * d.b_cols);
    ThreadPool* pool = ctx->intra_op_pool();
    if constexpr (std::is_same_v<T, float>) {
      MatMulF32(pool, d, a.data<float>(), b.data<float>(), out->data<float>(),
                a_off, b_off);
    } else if constexpr (std::is_same_v<AccumType<T>, float>) {
      // f16/bf16: products in f32, rounded once at the end.
      const Eigen::ThreadPoolDevice device = EigenDevice(ctx);
      const Tensor af = ToF32<T>(device, a), bf = ToF32<T>(device, b);
      Tensor cf(DType::kF32, out_shape);
      MatMulF32(pool, d, af.data<float>(), bf.data<float>(), cf.data<float>(),
                a_off, b_off);
      FromF32<T>(device, cf, out);
    } else {
      MatMulEigen<T>(ctx, d, a.data<T>(), b.data<T>(), out->data<T>(), a_off,
                     b_off);
    }
    return absl::OkStatus();
  }

 private:
  bool ta_ = false;
  bool tb_ = false;
};

RUNNEL_STATIC_INIT(MatMulKernels) {
  RegisterKernelForTypes<MatMulKernel, Half, BFloat16, float, double, int32_t,
                         int64_t>("matmul");
}

}  // namespace
}  // namespace runnel
