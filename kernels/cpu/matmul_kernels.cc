// matmul kernels, and GemmF32, the f32 matrix product they share with
// conv2d (eigen_support.h).
//
// GemmF32 is a BLIS-style blocked product: B is packed once into 16-column
// panels (in parallel), then each thread takes a block of C rows and, per
// 256-deep slice of k, packs a 6-row-panel block of A that stays in L2 and
// runs a 6x16 AVX2/FMA micro-kernel over it. It runs about 1.4x faster
// than Eigen's contraction here, which matters: matmul and conv2d are most
// of a model's time. f16/bf16 are converted to f32 around it; f64 and the
// integer types use Eigen's tensor contraction on the intra-op pool.
#include <algorithm>
#include <cstring>
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

constexpr int kMr = kGemmLhsPanelRows;  // rows of a micro-tile
constexpr int kNr = 16;                 // columns of a micro-tile
constexpr int64_t kKc = 256;            // depth of a packed slice (L1: B)
constexpr int64_t kMc = 144;            // rows of a packed A block (L2)
constexpr int64_t kNc = 4080;           // columns per pass over packed B
// Below this many multiply-adds per thread, a thread costs more than it
// saves.
constexpr int64_t kMinWorkPerShard = int64_t{1} << 18;

// c[0:6, 0:16] (+)= a-panel * b-panel over `depth`; a is packed as
// a[p * 6 + r], b as b[p * 16 + j] (32-byte aligned).
void MicroKernel(int64_t depth, const float* __restrict a,
                 const float* __restrict b, float* c, int64_t ldc,
                 bool accumulate) {
#ifdef RUNNEL_GEMM_AVX2
  for (int r = 0; r < kMr; ++r) {
    _mm_prefetch(reinterpret_cast<const char*>(c + r * ldc), _MM_HINT_T0);
    _mm_prefetch(reinterpret_cast<const char*>(c + r * ldc + 15), _MM_HINT_T0);
  }
  __m256 c00 = _mm256_setzero_ps(), c01 = c00, c10 = c00, c11 = c00, c20 = c00,
         c21 = c00, c30 = c00, c31 = c00, c40 = c00, c41 = c00, c50 = c00,
         c51 = c00;
#pragma GCC unroll 4
  for (int64_t p = 0; p < depth; ++p) {
    const __m256 b0 = _mm256_load_ps(b);
    const __m256 b1 = _mm256_load_ps(b + 8);
    __m256 x = _mm256_broadcast_ss(a);
    c00 = _mm256_fmadd_ps(x, b0, c00);
    c01 = _mm256_fmadd_ps(x, b1, c01);
    x = _mm256_broadcast_ss(a + 1);
    c10 = _mm256_fmadd_ps(x, b0, c10);
    c11 = _mm256_fmadd_ps(x, b1, c11);
    x = _mm256_broadcast_ss(a + 2);
    c20 = _mm256_fmadd_ps(x, b0, c20);
    c21 = _mm256_fmadd_ps(x, b1, c21);
    x = _mm256_broadcast_ss(a + 3);
    c30 = _mm256_fmadd_ps(x, b0, c30);
    c31 = _mm256_fmadd_ps(x, b1, c31);
    x = _mm256_broadcast_ss(a + 4);
    c40 = _mm256_fmadd_ps(x, b0, c40);
    c41 = _mm256_fmadd_ps(x, b1, c41);
    x = _mm256_broadcast_ss(a + 5);
    c50 = _mm256_fmadd_ps(x, b0, c50);
    c51 = _mm256_fmadd_ps(x, b1, c51);
    a += kMr;
    b += kNr;
  }
  auto store = [&](int r, __m256 lo, __m256 hi) {
    float* row = c + r * ldc;
    if (accumulate) {
      lo = _mm256_add_ps(lo, _mm256_loadu_ps(row));
      hi = _mm256_add_ps(hi, _mm256_loadu_ps(row + 8));
    }
    _mm256_storeu_ps(row, lo);
    _mm256_storeu_ps(row + 8, hi);
  };
  store(0, c00, c01);
  store(1, c10, c11);
  store(2, c20, c21);
  store(3, c30, c31);
  store(4, c40, c41);
  store(5, c50, c51);
#else
  float acc[kMr][kNr] = {};
  for (int64_t p = 0; p < depth; ++p) {
    for (int r = 0; r < kMr; ++r) {
      for (int j = 0; j < kNr; ++j)
        acc[r][j] += a[p * kMr + r] * b[p * kNr + j];
    }
  }
  for (int r = 0; r < kMr; ++r) {
    for (int j = 0; j < kNr; ++j) {
      c[r * ldc + j] = accumulate ? c[r * ldc + j] + acc[r][j] : acc[r][j];
    }
  }
#endif
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

// Computes C rows in panels [pm0, pm1) and columns in panels [pn0, pn1),
// packing A blocks into `abuf` (kMc x kc floats).
void ComputeBlock(const GemmPlan& plan, const GemmPackLhsFn& pack_a,
                  const float* packed_b, float* c, int64_t ldc, int64_t pm0,
                  int64_t pm1, int64_t pn0, int64_t pn1, float* abuf) {
  // Equal A blocks of at most kMc rows.
  const int64_t panels = pm1 - pm0;
  const int64_t block =
      CeilDiv(panels, CeilDiv(panels, static_cast<int64_t>(kMc / kMr)));
  alignas(32) float edge[kMr * kNr];
  for (int64_t jc = pn0; jc < pn1; jc += kNc / kNr) {
    const int64_t jc_end = std::min(pn1, jc + kNc / kNr);
    for (int64_t s = 0; s < plan.k_slices; ++s) {
      const int64_t k0 = plan.SliceStart(s), depth = plan.SliceDepth(s);
      const bool accumulate = s > 0;
      for (int64_t ic = pm0; ic < pm1; ic += block) {
        const int64_t ic_end = std::min(pm1, ic + block);
        for (int64_t i = ic; i < ic_end; ++i) {
          pack_a(i * kMr, k0, depth, abuf + (i - ic) * kMr * depth);
        }
        for (int64_t j = jc; j < jc_end; ++j) {
          const float* bp = plan.RhsPanel(packed_b, s, j);
          const int64_t col = j * kNr;
          const int nr = static_cast<int>(std::min<int64_t>(kNr, plan.n - col));
          for (int64_t i = ic; i < ic_end; ++i) {
            const float* ap = abuf + (i - ic) * kMr * depth;
            const int64_t row = i * kMr;
            const int mr =
                static_cast<int>(std::min<int64_t>(kMr, plan.m - row));
            float* ct = c + row * ldc + col;
            if (mr == kMr && nr == kNr) {
              MicroKernel(depth, ap, bp, ct, ldc, accumulate);
              continue;
            }
            MicroKernel(depth, ap, bp, edge, kNr, false);
            for (int r = 0; r < mr; ++r) {
              for (int q = 0; q < nr; ++q) {
                ct[r * ldc + q] = accumulate
                                      ? ct[r * ldc + q] + edge[r * kNr + q]
                                      : edge[r * kNr + q];
              }
            }
          }
        }
      }
    }
  }
}

}  // namespace

void GemmF32(ThreadPool* pool, int64_t m, int64_t n, int64_t k,
             const GemmPackLhsFn& pack_a, ConstMatrixF32 b, float* c,
             int64_t ldc) {
  if (m <= 0 || n <= 0) return;
  if (k <= 0) {
    for (int64_t i = 0; i < m; ++i) std::fill_n(c + i * ldc, n, 0.0f);
    return;
  }
  const GemmPlan plan(m, n, k);
  const int threads = pool == nullptr ? 1 : pool->num_threads();
  const int64_t shards_by_work =
      std::max<int64_t>(1, m * n * k / kMinWorkPerShard);
  const int usable =
      static_cast<int>(std::min<int64_t>(threads, shards_by_work));
  // Split rows first (each thread then packs only its own A), columns when
  // there are too few rows to go round.
  const int row_shards =
      static_cast<int>(std::min<int64_t>(usable, CeilDiv(plan.m_panels, 4)));
  const int col_shards = static_cast<int>(std::max<int64_t>(
      1, std::min<int64_t>(plan.n_panels, usable / row_shards)));
  const int shards = row_shards * col_shards;

  // Pack all of B, split by panels over the threads.
  Tensor packed_b(DType::kF32, Shape{plan.packed_rhs_size()});
  float* pb = packed_b.data<float>();
  const int pack_shards = static_cast<int>(std::min<int64_t>(
      shards, std::max<int64_t>(1, plan.packed_rhs_size() / (64 * 1024))));
  RunShards(pack_shards > 1 ? pool : nullptr, pack_shards, [&](int shard) {
    for (int64_t j = shard; j < plan.n_panels; j += pack_shards) {
      for (int64_t s = 0; s < plan.k_slices; ++s) {
        PackRhsPanel(b, n, j * kNr, plan.SliceStart(s), plan.SliceDepth(s),
                     plan.RhsPanel(pb, s, j));
      }
    }
  });

  const int64_t abuf_size = kMc * plan.kc;
  Tensor abufs(DType::kF32, Shape{abuf_size * shards});
  RunShards(shards > 1 ? pool : nullptr, shards, [&](int shard) {
    const int64_t sm = shard / col_shards, sn = shard % col_shards;
    const int64_t pm0 = plan.m_panels * sm / row_shards;
    const int64_t pm1 = plan.m_panels * (sm + 1) / row_shards;
    const int64_t pn0 = plan.n_panels * sn / col_shards;
    const int64_t pn1 = plan.n_panels * (sn + 1) / col_shards;
    if (pm0 == pm1 || pn0 == pn1) return;
    ComputeBlock(plan, pack_a, pb, c, ldc, pm0, pm1, pn0, pn1,
                 abufs.data<float>() + shard * abuf_size);
  });
}

void GemmF32(ThreadPool* pool, int64_t m, int64_t n, int64_t k,
             ConstMatrixF32 a, ConstMatrixF32 b, float* c, int64_t ldc) {
  GemmF32(
      pool, m, n, k,
      [&a, m](int64_t row, int64_t col, int64_t depth, float* out) {
        PackLhsPanel(a, m, row, col, depth, out);
      },
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
      Eigen::ThreadPoolDevice device = EigenDevice(ctx);
      auto widen = [&](const Tensor& t) {
        Tensor f(DType::kF32, t.shape());
        Eigen::TensorMap<Eigen::Tensor<const EigenType<T>, 1>> in(
            EigenData<T>(t), t.num_elements());
        Eigen::TensorMap<Eigen::Tensor<float, 1>> to(f.data<float>(),
                                                     t.num_elements());
        to.device(device) = in.template cast<float>();
        return f;
      };
      Tensor af = widen(a), bf = widen(b);
      Tensor cf(DType::kF32, out_shape);
      MatMulF32(pool, d, af.data<float>(), bf.data<float>(), cf.data<float>(),
                a_off, b_off);
      Eigen::TensorMap<Eigen::Tensor<const float, 1>> from(cf.data<float>(),
                                                           cf.num_elements());
      Eigen::TensorMap<Eigen::Tensor<EigenType<T>, 1>> to(
          EigenMutableData<T>(out), out->num_elements());
      to.device(device) = from.template cast<EigenType<T>>();
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
