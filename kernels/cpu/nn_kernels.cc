// Kernels of the softmax family, the cross-entropy losses, bias_add and
// l2_loss (framework/ops/nn_ops.cc). The 16-bit floats are computed in f32
// and rounded once on output.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <functional>
#include <limits>
#include <mutex>
#include <type_traits>
#include <vector>

#include "base/strings.h"
#include "framework/ops/kernel_checks.h"
#include "framework/shape_fns.h"
#include "kernels/common/array_util.h"
#include "kernels/common/norm_util.h"
#include "kernels/cpu/eigen_support.h"
#include "kernels/cpu/gemm.h"

namespace runnel {
namespace {

template <typename T>
using Acc = AccumType<T>;
template <typename S>
using Array1 = Eigen::Array<S, Eigen::Dynamic, 1>;

// Reads element i of a T tensor as its accumulation type.
template <typename T>
Acc<T> Get(const EigenType<T>* p, int64_t i) {
  return static_cast<Acc<T>>(p[i]);
}

// Cycles per element of an exp-heavy line, for ParallelFor.
constexpr int64_t kExpCost = 30;

// softmax and log_softmax along attribute `axis`.
template <typename T, bool kLog>
class SoftmaxKernel : public OpKernel {
 public:
  absl::Status Init(const Node& node) override {
    RN_ASSIGN_OR_RETURN(axis_, node.attr<int64_t>("axis"));
    return absl::OkStatus();
  }

  absl::Status Compute(OpKernelContext* ctx) override {
    const Tensor& x = ctx->input(0);
    RN_ASSIGN_OR_RETURN(const int axis, NormalizeAxis(axis_, x.rank()));
    RN_ASSIGN_OR_RETURN(Tensor * y, ctx->allocate_output(0, x.shape()));
    const AxisLines lines(x.shape(), axis);
    if (x.num_elements() == 0) return absl::OkStatus();
    const EigenType<T>* in = EigenData<T>(x);
    EigenType<T>* out = EigenMutableData<T>(y);
    ctx->intra_op_pool()->ParallelFor(
        lines.count(), lines.len * kExpCost, [&](int64_t begin, int64_t end) {
          Array1<Acc<T>> v(lines.len);
          for (int64_t l = begin; l < end; ++l) {
            const int64_t s = lines.start(l);
            if (lines.inner == 1) {
              v = LoadRun<T>(in + s, lines.len);
            } else {
              for (int64_t j = 0; j < lines.len; ++j) {
                v[j] = Get<T>(in, s + j * lines.inner);
              }
            }
            const Acc<T> max = v.maxCoeff();
            v -= max;
            if constexpr (kLog) {
              v -= std::log(v.exp().sum());
            } else {
              v = v.exp();
              v /= v.sum();
            }
            if (lines.inner == 1) {
              StoreRun<T>(v, out + s);
              continue;
            }
            for (int64_t j = 0; j < lines.len; ++j) {
              out[s + j * lines.inner] = static_cast<EigenType<T>>(v[j]);
            }
          }
        });
    return absl::OkStatus();
  }

 private:
  int64_t axis_ = -1;
};

// Each of a mask's `lines` of `len`: p when it keeps exactly its first p
// elements (a causal or a padding mask), else -1.
std::vector<int64_t> KeptPrefixes(const bool* kept, int64_t lines,
                                  int64_t len) {
  std::vector<int64_t> prefix(lines);
  for (int64_t m = 0; m < lines; ++m) {
    const bool* k = kept + m * len;
    const int64_t p = std::find(k, k + len, false) - k;
    prefix[m] = std::find(k + p, k + len, true) == k + len ? p : -1;
  }
  return prefix;
}

// softmax in place over a line's kept elements, each times `scale`: its
// first p when p >= 0 (vectorised), else those where k is true; 0
// elsewhere, and all 0 when it keeps none. Dropped elements take no part,
// whatever they hold (NaN and infinities too).
template <typename A>
void SoftmaxKept(A* line, int64_t len, const bool* k, int64_t p,
                 A scale = A(1)) {
  Eigen::Map<Array1<A>> v(line, len);
  if (p == 0 || (p < 0 && std::find(k, k + len, true) == k + len)) {
    v.setZero();
    return;
  }
  // exp(scale * (x - max)) is the softmax of scale * x for scale > 0 only.
  if (!(scale > A(0))) {
    v *= scale;
    scale = A(1);
  }
  if (p > 0) {
    // Whole packets: the elements from p to the next packet's start made
    // -inf (their exp 0), so no element takes the scalar exp.
    constexpr int64_t kPacket = Eigen::internal::packet_traits<A>::size;
    const int64_t n = std::min(len, (p + kPacket - 1) / kPacket * kPacket);
    const A max = v.head(p).maxCoeff();
    v.segment(p, n - p).setConstant(-std::numeric_limits<A>::infinity());
    auto head = v.head(n);
    head = ((head - max) * scale).exp();
    head *= A(1) / head.sum();
    v.tail(len - p).setZero();  // 0 already, but for kept -inf all along
    return;
  }
  A max = -std::numeric_limits<A>::infinity();
  for (int64_t j = 0; j < len; ++j) {
    if (k[j] && v[j] > max) max = v[j];
  }
  A total = 0;
  for (int64_t j = 0; j < len; ++j) {
    v[j] = k[j] ? std::exp((v[j] - max) * scale) : A(0);
    total += v[j];
  }
  v /= total;
}

// masked_softmax over the last axis: line l keeps element j where
// keep[(l % keep_lines) * len + j] is true.
template <typename T>
class MaskedSoftmax : public OpKernel {
 public:
  absl::Status Compute(OpKernelContext* ctx) override {
    const Tensor& x = ctx->input(0);
    const Tensor& keep = ctx->input(1);
    RN_RETURN_IF_ERROR(CheckMaskedSoftmax(x.shape(), keep.shape()));
    RN_ASSIGN_OR_RETURN(Tensor * y, ctx->allocate_output(0, x.shape()));
    if (x.num_elements() == 0) return absl::OkStatus();
    const int64_t len = x.dim(x.rank() - 1);
    const int64_t lines = x.num_elements() / len;
    const int64_t keep_lines = keep.num_elements() / len;
    const EigenType<T>* in = EigenData<T>(x);
    const bool* kept = keep.data<bool>();
    EigenType<T>* out = EigenMutableData<T>(y);
    const std::vector<int64_t> prefix = KeptPrefixes(kept, keep_lines, len);
    ctx->intra_op_pool()->ParallelFor(
        lines, len * kExpCost, [&](int64_t begin, int64_t end) {
          Array1<Acc<T>> v(len);
          for (int64_t l = begin; l < end; ++l) {
            const int64_t m = l % keep_lines;
            v = LoadRun<T>(in + l * len, len);
            SoftmaxKept(v.data(), len, kept + m * len, prefix[m]);
            StoreRun<T>(v, out + l * len);
          }
        });
    return absl::OkStatus();
  }
};

// c (m x n, row-major, `ldc` elements a row) = op(a) @ op(b); a is stored
// row-major with `lda` elements a row (m x k, or k x m when `ta`), b
// likewise. On the calling thread alone (f32 on oneDNN's sgemm, f64 on
// Eigen's product).
template <typename T>
absl::Status ThreadGemm(int64_t m, int64_t n, int64_t k, const T* a,
                        int64_t lda, bool ta, const T* b, int64_t ldb, bool tb,
                        T* c, int64_t ldc) {
  if constexpr (std::is_same_v<T, float>) {
    return GemmF32(nullptr, m, n, k, {a, ta ? 1 : lda, ta ? lda : 1},
                   {b, tb ? 1 : ldb, tb ? ldb : 1}, c, ldc);
  } else {
    using Matrix =
        Eigen::Matrix<T, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
    using In = Eigen::Map<const Matrix, 0, Eigen::OuterStride<>>;
    const In am(a, ta ? k : m, ta ? m : k, Eigen::OuterStride<>(lda));
    const In bm(b, tb ? n : k, tb ? k : n, Eigen::OuterStride<>(ldb));
    Eigen::Map<Matrix, 0, Eigen::OuterStride<>> cm(c, m, n,
                                                   Eigen::OuterStride<>(ldc));
    auto product = [&](const auto& x, const auto& y) { cm.noalias() = x * y; };
    if (ta && tb) {
      product(am.transpose(), bm.transpose());
    } else if (ta) {
      product(am.transpose(), bm);
    } else if (tb) {
      product(am, bm.transpose());
    } else {
      product(am, bm);
    }
    return absl::OkStatus();
  }
}

// Rows of c (ldc elements apart) set to 0 from column `from` to `to`.
template <typename T>
void ZeroColumns(T* c, int64_t rows, int64_t ldc, int64_t from, int64_t to) {
  if (to <= from) return;
  for (int64_t i = 0; i < rows; ++i)
    std::fill(c + i * ldc + from, c + i * ldc + to, T(0));
}

// Queries (and keys) the attention kernels take as one block: a block's
// queries are multiplied only with the keys up to the last one any of
// them keeps, so a causal mask's upper triangle is skipped but for the
// blocks on its diagonal.
constexpr int64_t kAttentionBlock = 32;

// What the attention kernels share: a run's plan, mask and factor of the
// scores, the blocks of a matrix's queries, the probabilities of one
// matrix of the batch, and the loop over the batch.
template <typename T>
class AttentionBase : public OpKernel {
 public:
  absl::Status Init(const Node& node) override {
    RN_ASSIGN_OR_RETURN(attrs_, AttentionAttrs::Of(node));
    return absl::OkStatus();
  }

 protected:
  struct Run {
    AttentionPlan plan;
    const bool* keep = nullptr;
    std::vector<int64_t> prefix;  // KeptPrefixes of the mask's lines
    std::vector<int64_t> extent;  // each line's last kept key + 1 (0: none)
    T scale = 1;                  // the scores' factor for this run's d
    // The mask line of query i of matrix b.
    int64_t Line(int64_t b, int64_t i) const {
      return plan.keep_lines == 0 ? 0 : (b * plan.tq + i) % plan.keep_lines;
    }
  };

  // Queries [begin, end) of a matrix, which keep none of the keys from
  // `keys` on.
  struct Block {
    int64_t begin, end, keys;
  };

  absl::StatusOr<Run> Prepare(OpKernelContext* ctx) const {
    Run r;
    const Tensor& keep = ctx->input(3);
    RN_ASSIGN_OR_RETURN(
        r.plan,
        PlanAttention(ctx->input(0).shape(), ctx->input(1).shape(),
                      ctx->input(2).shape(), keep.shape(), attrs_.bthd));
    const int64_t tk = r.plan.tk;
    r.keep = keep.data<bool>();
    r.prefix = r.plan.keep_lines == 0
                   ? std::vector<int64_t>{tk > 0 && r.keep[0] ? tk : 0}
                   : KeptPrefixes(r.keep, r.plan.keep_lines, tk);
    r.extent.resize(r.prefix.size());
    for (size_t m = 0; m < r.prefix.size(); ++m) {
      if (r.prefix[m] >= 0) {
        r.extent[m] = r.prefix[m];
        continue;
      }
      const bool* k = r.keep + m * tk;
      int64_t e = tk;
      while (e > 0 && !k[e - 1]) --e;
      r.extent[m] = e;
    }
    r.scale = static_cast<T>(attrs_.ScoreFactor(r.plan.d));
    return r;
  }

  // Matrix b's queries in blocks of kAttentionBlock, each with the keys
  // its queries keep (adjacent blocks that keep as many merged).
  static std::vector<Block> QueryBlocks(const Run& r, int64_t b) {
    std::vector<Block> blocks;
    const int64_t tq = r.plan.tq;
    for (int64_t i0 = 0; i0 < tq; i0 += kAttentionBlock) {
      const int64_t i1 = std::min(tq, i0 + kAttentionBlock);
      int64_t keys = 0;
      for (int64_t i = i0; i < i1; ++i) {
        keys = std::max(keys, r.extent[r.Line(b, i)]);
      }
      if (!blocks.empty() && blocks.back().keys == keys) {
        blocks.back().end = i1;
      } else {
        blocks.push_back({i0, i1, keys});
      }
    }
    return blocks;
  }

  // p (tq x tk) = the masked softmax of scale * q k^T for matrix b, a
  // block's row from its `keys` on left unset.
  static absl::Status Probs(const Run& r, int64_t b,
                            const std::vector<Block>& blocks, const T* q,
                            const T* k, T* p) {
    const AttentionPlan& a = r.plan;
    for (const Block& blk : blocks) {
      T* pb = p + blk.begin * a.tk;
      if (blk.keys > 0) {
        RN_RETURN_IF_ERROR(ThreadGemm<T>(
            blk.end - blk.begin, blk.keys, a.d,
            q + a.q_offsets[b] + blk.begin * a.q_stride, a.q_stride, false,
            k + a.k_offsets[b], a.k_stride, true, pb, a.tk));
      }
      for (int64_t i = blk.begin; i < blk.end; ++i) {
        const int64_t m = r.Line(b, i);
        SoftmaxKept(p + i * a.tk, blk.keys, r.keep + m * a.tk, r.prefix[m],
                    r.scale);
      }
    }
    return absl::OkStatus();
  }

  // Runs fn(b, scratch) for each matrix b of the batch on the intra-op
  // pool, `scratch` elements of scratch a shard; returns the first error.
  static absl::Status ForEachMatrix(
      OpKernelContext* ctx, const AttentionPlan& a, int64_t scratch,
      const std::function<absl::Status(int64_t, T*)>& fn) {
    const int64_t batch = static_cast<int64_t>(a.q_offsets.size());
    std::mutex mu;
    absl::Status status;
    ctx->intra_op_pool()->ParallelFor(
        batch, a.tq * a.tk * (2 * (a.d + a.dv) + kExpCost),
        [&](int64_t begin, int64_t end) {
          std::vector<T> buffer(static_cast<size_t>(scratch));
          for (int64_t b = begin; b < end; ++b) {
            absl::Status s = fn(b, buffer.data());
            if (!s.ok()) {
              std::lock_guard<std::mutex> lock(mu);
              if (status.ok()) status = std::move(s);
              return;
            }
          }
        });
    return status;
  }

 private:
  AttentionAttrs attrs_;
};

// scaled_dot_product_attention(q, k, v, keep): for each matrix of the
// batch, p = the masked softmax of scale * q k^T, then out = p v, each
// block of queries with the keys it keeps.
template <typename T>
class AttentionKernel : public AttentionBase<T> {
 public:
  absl::Status Compute(OpKernelContext* ctx) override {
    RN_ASSIGN_OR_RETURN(const auto r, this->Prepare(ctx));
    const AttentionPlan& a = r.plan;
    RN_ASSIGN_OR_RETURN(Tensor * out, ctx->allocate_output(0, a.out));
    if (out->num_elements() == 0) return absl::OkStatus();
    if (a.tk == 0) {  // no keys: every query keeps none
      std::memset(out->raw_data(), 0, out->bytes());
      return absl::OkStatus();
    }
    const T* q = ctx->input(0).data<T>();
    const T* k = ctx->input(1).data<T>();
    const T* v = ctx->input(2).data<T>();
    T* o = out->data<T>();
    return this->ForEachMatrix(ctx, a, a.tq * a.tk, [&](int64_t b, T* p) {
      const auto blocks = this->QueryBlocks(r, b);
      RN_RETURN_IF_ERROR(this->Probs(r, b, blocks, q, k, p));
      T* ob = o + a.OutOffset(b, a.tq, a.dv);
      const int64_t os = a.OutStride(a.dv);
      for (const auto& blk : blocks) {
        const int64_t rows = blk.end - blk.begin;
        if (blk.keys == 0) {  // its queries keep no key
          ZeroColumns(ob + blk.begin * os, rows, os, 0, a.dv);
          continue;
        }
        RN_RETURN_IF_ERROR(ThreadGemm<T>(
            rows, a.dv, blk.keys, p + blk.begin * a.tk, a.tk, false,
            v + a.v_offsets[b], a.v_stride, false, ob + blk.begin * os, os));
      }
      return absl::OkStatus();
    });
  }
};

// scaled_dot_product_attention_grad(q, k, v, keep, dout) -> dq, dk, dv, for
// each matrix of the batch: p again, then dv = p^T dout, dp = dout v^T,
// ds = scale * p * (dp - rowsum(dp * p)) (softmax's gradient), dq = ds k
// and dk = ds^T q; each block of queries with the keys it keeps, each
// block of keys with the queries that keep any of it.
template <typename T>
class AttentionGradKernel : public AttentionBase<T> {
 public:
  absl::Status Compute(OpKernelContext* ctx) override {
    RN_ASSIGN_OR_RETURN(const auto r, this->Prepare(ctx));
    const AttentionPlan& a = r.plan;
    const Tensor& dout = ctx->input(4);
    RN_RETURN_IF_ERROR(CheckAttentionGrad(a.out, dout.shape()));
    Tensor* grads[3];
    // No keys, no queries or an empty output: the gradients are zeros
    // (the products below would write nothing).
    const bool zeros = a.tk == 0 || a.tq == 0 || a.out.num_elements() == 0;
    for (int i = 0; i < 3; ++i) {
      RN_ASSIGN_OR_RETURN(grads[i], ctx->allocate_output(i, a.GradShape(i)));
      if (zeros) std::memset(grads[i]->raw_data(), 0, grads[i]->bytes());
    }
    if (zeros) return absl::OkStatus();
    const T* q = ctx->input(0).data<T>();
    const T* k = ctx->input(1).data<T>();
    const T* v = ctx->input(2).data<T>();
    const T* dy = dout.data<T>();
    T *dq = grads[0]->data<T>(), *dk = grads[1]->data<T>(),
      *dv = grads[2]->data<T>();
    return this->ForEachMatrix(ctx, a, 2 * a.tq * a.tk, [&](int64_t b, T* p) {
      T* ds = p + a.tq * a.tk;
      // dout and dv rows of dv elements, dq and dk rows of d, these apart.
      const int64_t vs = a.OutStride(a.dv), qs = a.OutStride(a.d);
      const T* dyb = dy + a.OutOffset(b, a.tq, a.dv);
      const T* qb = q + a.q_offsets[b];
      const T* kb = k + a.k_offsets[b];
      T* dqb = dq + a.OutOffset(b, a.tq, a.d);
      const auto blocks = this->QueryBlocks(r, b);
      RN_RETURN_IF_ERROR(this->Probs(r, b, blocks, q, k, p));
      for (const auto& blk : blocks) {
        const int64_t rows = blk.end - blk.begin;
        T* pb = p + blk.begin * a.tk;
        T* db = ds + blk.begin * a.tk;
        // The keys the block keeps none of take no part below: 0.
        ZeroColumns(pb, rows, a.tk, blk.keys, a.tk);
        ZeroColumns(db, rows, a.tk, blk.keys, a.tk);
        if (blk.keys == 0) {
          ZeroColumns(dqb + blk.begin * qs, rows, qs, 0, a.d);
          continue;
        }
        RN_RETURN_IF_ERROR(
            ThreadGemm<T>(rows, blk.keys, a.dv, dyb + blk.begin * vs, vs, false,
                          v + a.v_offsets[b], a.v_stride, true, db, a.tk));
        for (int64_t i = 0; i < rows; ++i) {
          Eigen::Map<Array1<T>> pi(pb + i * a.tk, blk.keys),
              di(db + i * a.tk, blk.keys);
          const T dot = (pi * di).sum();
          di = r.scale * pi * (di - dot);
        }
        RN_RETURN_IF_ERROR(ThreadGemm<T>(rows, a.d, blk.keys, db, a.tk, false,
                                         kb, a.k_stride, false,
                                         dqb + blk.begin * qs, qs));
      }
      // Keys in blocks, each from the first to the last query block that
      // keeps any of them (p and ds are 0 where a query keeps none).
      T* dkb = dk + a.OutOffset(b, a.tk, a.d);
      T* dvb = dv + a.OutOffset(b, a.tk, a.dv);
      for (int64_t j0 = 0; j0 < a.tk;) {
        // The query blocks that keep key j0, and j1: as far as they are the
        // ones that keep the next keys (whole blocks of keys).
        int64_t first = a.tq, last = 0, j1 = a.tk;
        for (const auto& blk : blocks) {
          if (blk.keys > j0) {
            first = std::min(first, blk.begin);
            last = std::max(last, blk.end);
            j1 = std::min(j1, blk.keys);
          }
        }
        if (first >= last) {  // no query keeps these keys (j1 is tk)
          ZeroColumns(dvb + j0 * vs, j1 - j0, vs, 0, a.dv);
          ZeroColumns(dkb + j0 * qs, j1 - j0, qs, 0, a.d);
          j0 = j1;
          continue;
        }
        const int64_t n = last - first;
        RN_RETURN_IF_ERROR(
            ThreadGemm<T>(j1 - j0, a.dv, n, p + first * a.tk + j0, a.tk, true,
                          dyb + first * vs, vs, false, dvb + j0 * vs, vs));
        RN_RETURN_IF_ERROR(ThreadGemm<T>(
            j1 - j0, a.d, n, ds + first * a.tk + j0, a.tk, true,
            qb + first * a.q_stride, a.q_stride, false, dkb + j0 * qs, qs));
        j0 = j1;
      }
      return absl::OkStatus();
    });
  }
};

// softmax_grad(dy, y) along the last axis: (dy - sum(dy * y)) * y.
template <typename T>
class SoftmaxGradKernel : public OpKernel {
 public:
  absl::Status Compute(OpKernelContext* ctx) override {
    const Tensor& dy = ctx->input(0);
    const Tensor& y = ctx->input(1);
    RN_RETURN_IF_ERROR(CheckSoftmaxGrad(dy, y));
    RN_ASSIGN_OR_RETURN(Tensor * dx, ctx->allocate_output(0, y.shape()));
    if (y.num_elements() == 0) return absl::OkStatus();
    const int64_t len = y.dim(y.rank() - 1);
    const EigenType<T>* pd = EigenData<T>(dy);
    const EigenType<T>* py = EigenData<T>(y);
    EigenType<T>* out = EigenMutableData<T>(dx);
    using A = Acc<T>;
    ctx->intra_op_pool()->ParallelFor(y.num_elements() / len, len * 4,
                                      [&](int64_t begin, int64_t end) {
                                        Array1<A> d(len), v(len);
                                        for (int64_t l = begin; l < end; ++l) {
                                          const int64_t s = l * len;
                                          d = LoadRun<T>(pd + s, len);
                                          v = LoadRun<T>(py + s, len);
                                          const A dot = (d * v).sum();
                                          StoreRun<T>((d - dot) * v, out + s);
                                        }
                                      });
    return absl::OkStatus();
  }
};

// Rows of layer_norm_grad's parameter gradients one task sums, in order:
// the blocks depend on the shape alone, so the sums do not depend on the
// number of threads.
constexpr int64_t kLayerNormBlockRows = 64;

// layer_norm(x, scale, offset) over x's last axis; outputs y and each
// row's mean and 1 / sqrt(variance + eps), in Acc<T>.
template <typename T>
class LayerNormKernel : public EpsKernel {
 public:
  absl::Status Compute(OpKernelContext* ctx) override {
    const Tensor& x = ctx->input(0);
    RN_RETURN_IF_ERROR(CheckLayerNorm(x.shape(), ctx->input(1).shape(),
                                      ctx->input(2).shape()));
    RN_ASSIGN_OR_RETURN(
        const NormTensors outs,
        AllocateNormOutputs(ctx, x.shape(), LayerNormStatsShape(x.shape())));
    Tensor *y = outs.full, *mean = outs.first, *rstd = outs.second;
    const int64_t n = x.dim(x.rank() - 1);
    if (x.num_elements() == 0) return absl::OkStatus();
    using A = Acc<T>;
    const Array1<A> scale = LoadRun<T>(EigenData<T>(ctx->input(1)), n);
    const Array1<A> offset = LoadRun<T>(EigenData<T>(ctx->input(2)), n);
    const EigenType<T>* in = EigenData<T>(x);
    EigenType<T>* out = EigenMutableData<T>(y);
    A* pm = mean->data<A>();
    A* pr = rstd->data<A>();
    const A eps = static_cast<A>(this->eps());
    ctx->intra_op_pool()->ParallelFor(
        x.num_elements() / n, n * 6, [&](int64_t begin, int64_t end) {
          Array1<A> v(n);
          for (int64_t r = begin; r < end; ++r) {
            v = LoadRun<T>(in + r * n, n);
            const A m = v.sum() / static_cast<A>(n);
            v -= m;
            const A rs =
                A(1) / std::sqrt(v.square().sum() / static_cast<A>(n) + eps);
            pm[r] = m;
            pr[r] = rs;
            StoreRun<T>(v * rs * scale + offset, out + r * n);
          }
        });
    return absl::OkStatus();
  }
};

// layer_norm_grad(dy, x, scale, mean, rstd) -> dx, dscale, doffset.
template <typename T>
class LayerNormGradKernel : public OpKernel {
 public:
  absl::Status Compute(OpKernelContext* ctx) override {
    const Tensor& dy = ctx->input(0);
    const Tensor& x = ctx->input(1);
    const Tensor& scale_t = ctx->input(2);
    RN_RETURN_IF_ERROR(
        CheckLayerNormGrad(dy.shape(), x.shape(), scale_t.shape(),
                           ctx->input(3).shape(), ctx->input(4).shape()));
    RN_ASSIGN_OR_RETURN(const NormTensors outs,
                        AllocateNormOutputs(ctx, x.shape(), scale_t.shape()));
    Tensor *dx = outs.full, *dscale = outs.first, *doffset = outs.second;
    using A = Acc<T>;
    const int64_t n = x.dim(x.rank() - 1);
    const int64_t rows = n == 0 ? 0 : x.num_elements() / n;
    const int64_t blocks =
        (rows + kLayerNormBlockRows - 1) / kLayerNormBlockRows;
    // Each block's sums of dy * xhat and of dy, side by side.
    std::vector<A> partial(static_cast<size_t>(blocks * 2 * n), A(0));
    const Array1<A> scale = LoadRun<T>(EigenData<T>(scale_t), n);
    const EigenType<T>* pdy = EigenData<T>(dy);
    const EigenType<T>* px = EigenData<T>(x);
    const A* pm = ctx->input(3).data<A>();
    const A* pr = ctx->input(4).data<A>();
    EigenType<T>* pdx = EigenMutableData<T>(dx);
    const A inv_n = n == 0 ? A(0) : A(1) / static_cast<A>(n);
    ctx->intra_op_pool()->ParallelFor(
        blocks, kLayerNormBlockRows * n * 12, [&](int64_t begin, int64_t end) {
          Array1<A> d(n), xh(n), g(n);
          for (int64_t b = begin; b < end; ++b) {
            Eigen::Map<Array1<A>> ds(partial.data() + b * 2 * n, n);
            Eigen::Map<Array1<A>> doff(partial.data() + b * 2 * n + n, n);
            const int64_t last = std::min(rows, (b + 1) * kLayerNormBlockRows);
            for (int64_t r = b * kLayerNormBlockRows; r < last; ++r) {
              d = LoadRun<T>(pdy + r * n, n);
              xh = (LoadRun<T>(px + r * n, n) - pm[r]) * pr[r];
              g = d * scale;
              const A mg = g.sum() * inv_n;
              const A mgx = (g * xh).sum() * inv_n;
              StoreRun<T>(pr[r] * (g - mg - xh * mgx), pdx + r * n);
              ds += d * xh;
              doff += d;
            }
          }
        });
    Array1<A> ds = Array1<A>::Zero(n), doff = Array1<A>::Zero(n);
    for (int64_t b = 0; b < blocks; ++b) {
      ds += Eigen::Map<const Array1<A>>(partial.data() + b * 2 * n, n);
      doff += Eigen::Map<const Array1<A>>(partial.data() + b * 2 * n + n, n);
    }
    StoreRun<T>(ds, EigenMutableData<T>(dscale));
    StoreRun<T>(doff, EigenMutableData<T>(doffset));
    return absl::OkStatus();
  }
};

// ---- batch normalisation ----------------------------------------------------
//
// x is [rows, channels] (its last axis the channels). The per-channel sums
// run over blocks of kLayerNormBlockRows rows, each block's into a partial
// of its own, and the partials add up in block order: the cut depends on
// the shape alone, so the sums do not depend on the number of threads.

template <typename A>
using Array2 = Eigen::Array<A, Eigen::Dynamic, Eigen::Dynamic>;

// Rows [r0, r1) of a [rows, c] tensor as a c x (r1 - r0) array of A (a
// column per row).
template <typename T>
auto Rows2(const EigenType<T>* p, int64_t c, int64_t r0, int64_t r1) {
  return Eigen::Map<const Array2<EigenType<T>>>(p + r0 * c, c, r1 - r0)
      .template cast<Acc<T>>();
}
template <typename T, class Expr>
void StoreRows2(const Expr& e, EigenType<T>* p, int64_t c, int64_t r0) {
  Eigen::Map<Array2<EigenType<T>>>(p + r0 * c, c, e.cols()) =
      e.template cast<EigenType<T>>();
}

// The sum over the blocks of add(r0, r1, partial), each adding its rows'
// per-channel values into `partial` (c zeros at first).
template <typename A, class Add>
Array1<A> ChannelSums(ThreadPool* pool, int64_t rows, int64_t c, Add add) {
  const int64_t blocks = (rows + kLayerNormBlockRows - 1) / kLayerNormBlockRows;
  Array2<A> partial = Array2<A>::Zero(c, blocks);
  pool->ParallelFor(blocks, kLayerNormBlockRows * c * 4,
                    [&](int64_t begin, int64_t end) {
                      for (int64_t b = begin; b < end; ++b) {
                        auto col = partial.col(b);
                        add(b * kLayerNormBlockRows,
                            std::min(rows, (b + 1) * kLayerNormBlockRows), col);
                      }
                    });
  Array1<A> total = Array1<A>::Zero(c);
  for (int64_t b = 0; b < blocks; ++b) total += partial.col(b);
  return total;
}

// fn(r0, r1) over the row blocks, in parallel.
template <class Fn>
void ForRowBlocks(ThreadPool* pool, int64_t rows, int64_t c, Fn fn) {
  const int64_t blocks = (rows + kLayerNormBlockRows - 1) / kLayerNormBlockRows;
  pool->ParallelFor(blocks, kLayerNormBlockRows * c * 4,
                    [&](int64_t begin, int64_t end) {
                      for (int64_t b = begin; b < end; ++b) {
                        fn(b * kLayerNormBlockRows,
                           std::min(rows, (b + 1) * kLayerNormBlockRows));
                      }
                    });
}

// batch_norm(x, scale, offset): y, and each channel's mean and biased
// variance over the rows (two passes, for an exact variance).
template <typename T>
class BatchNormKernel : public EpsKernel {
 public:
  absl::Status Compute(OpKernelContext* ctx) override {
    const Tensor& x = ctx->input(0);
    const Tensor& scale_t = ctx->input(1);
    RN_RETURN_IF_ERROR(
        CheckLayerNorm(x.shape(), scale_t.shape(), ctx->input(2).shape()));
    RN_RETURN_IF_ERROR(CheckBatchRows(ctx->node().op(), x));
    RN_ASSIGN_OR_RETURN(const NormTensors outs,
                        AllocateNormOutputs(ctx, x.shape(), scale_t.shape()));
    Tensor *y = outs.full, *mean_t = outs.first, *var_t = outs.second;
    using A = Acc<T>;
    const int64_t c = x.dim(x.rank() - 1);
    if (c == 0) return absl::OkStatus();
    const int64_t rows = x.num_elements() / c;
    ThreadPool* pool = ctx->intra_op_pool();
    const EigenType<T>* px = EigenData<T>(x);
    const Array1<A> mean =
        ChannelSums<A>(pool, rows, c,
                       [&](int64_t r0, int64_t r1, auto& acc) {
                         acc += Rows2<T>(px, c, r0, r1).rowwise().sum();
                       }) /
        static_cast<A>(rows);
    const Array1<A> var =
        ChannelSums<A>(pool, rows, c,
                       [&](int64_t r0, int64_t r1, auto& acc) {
                         acc += (Rows2<T>(px, c, r0, r1).colwise() - mean)
                                    .square()
                                    .rowwise()
                                    .sum();
                       }) /
        static_cast<A>(rows);
    Eigen::Map<Array1<A>>(mean_t->data<A>(), c) = mean;
    Eigen::Map<Array1<A>>(var_t->data<A>(), c) = var;
    // y = x * a + b per channel.
    const Array1<A> a = (var + static_cast<A>(eps())).rsqrt() *
                        LoadRun<T>(EigenData<T>(scale_t), c);
    const Array1<A> b = LoadRun<T>(EigenData<T>(ctx->input(2)), c) - mean * a;
    EigenType<T>* py = EigenMutableData<T>(y);
    ForRowBlocks(pool, rows, c, [&](int64_t r0, int64_t r1) {
      StoreRows2<T>((Rows2<T>(px, c, r0, r1).colwise() * a).colwise() + b, py,
                    c, r0);
    });
    return absl::OkStatus();
  }
};

// batch_norm_grad(dy, x, scale, mean, variance) -> dx, dscale, doffset.
template <typename T>
class BatchNormGradKernel : public EpsKernel {
 public:
  absl::Status Compute(OpKernelContext* ctx) override {
    const Tensor& dy = ctx->input(0);
    const Tensor& x = ctx->input(1);
    const Tensor& scale_t = ctx->input(2);
    RN_RETURN_IF_ERROR(CheckBatchNormGrad(ctx->node().op(), dy, x, scale_t,
                                          ctx->input(3), ctx->input(4)));
    RN_ASSIGN_OR_RETURN(const NormTensors outs,
                        AllocateNormOutputs(ctx, x.shape(), scale_t.shape()));
    Tensor *dx = outs.full, *dscale = outs.first, *doffset = outs.second;
    using A = Acc<T>;
    const int64_t c = x.dim(x.rank() - 1);
    if (c == 0) return absl::OkStatus();
    const int64_t rows = x.num_elements() / c;
    ThreadPool* pool = ctx->intra_op_pool();
    const EigenType<T>* px = EigenData<T>(x);
    const EigenType<T>* pdy = EigenData<T>(dy);
    const Eigen::Map<const Array1<A>> mean(ctx->input(3).data<A>(), c);
    const Array1<A> rstd =
        (Eigen::Map<const Array1<A>>(ctx->input(4).data<A>(), c) +
         static_cast<A>(eps()))
            .rsqrt();
    auto xhat = [&](int64_t r0, int64_t r1) {
      return (Rows2<T>(px, c, r0, r1).colwise() - mean).colwise() * rstd;
    };
    const Array1<A> doff =
        ChannelSums<A>(pool, rows, c, [&](int64_t r0, int64_t r1, auto& acc) {
          acc += Rows2<T>(pdy, c, r0, r1).rowwise().sum();
        });
    const Array1<A> ds =
        ChannelSums<A>(pool, rows, c, [&](int64_t r0, int64_t r1, auto& acc) {
          acc += (Rows2<T>(pdy, c, r0, r1) * xhat(r0, r1)).rowwise().sum();
        });
    StoreRun<T>(ds, EigenMutableData<T>(dscale));
    StoreRun<T>(doff, EigenMutableData<T>(doffset));
    const A n = static_cast<A>(rows);
    const Array1<A> k = LoadRun<T>(EigenData<T>(scale_t), c) * rstd;
    const Array1<A> mean_doff = doff / n, mean_ds = ds / n;
    EigenType<T>* pdx = EigenMutableData<T>(dx);
    ForRowBlocks(pool, rows, c, [&](int64_t r0, int64_t r1) {
      StoreRows2<T>(((Rows2<T>(pdy, c, r0, r1).colwise() - mean_doff) -
                     xhat(r0, r1).colwise() * mean_ds)
                            .colwise() *
                        k,
                    pdx, c, r0);
    });
    return absl::OkStatus();
  }
};

template <typename T>
using Softmax = SoftmaxKernel<T, false>;
template <typename T>
using LogSoftmax = SoftmaxKernel<T, true>;

// log(sum(exp(x))) of a row, computed stably.
template <typename A>
A LogSumExp(const Array1<A>& x, A max) {
  return max + std::log((x - max).exp().sum());
}

template <typename T>
class SoftmaxCrossEntropyKernel : public OpKernel {
 public:
  absl::Status Compute(OpKernelContext* ctx) override {
    const Tensor& logits = ctx->input(0);
    const Tensor& probs = ctx->input(1);
    RN_ASSIGN_OR_RETURN(Shape shape,
                        SoftmaxCrossEntropyLossShape(logits, probs));
    RN_ASSIGN_OR_RETURN(Tensor * loss, ctx->allocate_output(0, shape));
    const int64_t classes = logits.dim(logits.rank() - 1);
    const int64_t rows = loss->num_elements();
    const EigenType<T>* x = EigenData<T>(logits);
    const EigenType<T>* p = EigenData<T>(probs);
    EigenType<T>* out = EigenMutableData<T>(loss);
    ctx->intra_op_pool()->ParallelFor(
        rows, classes * kExpCost, [&](int64_t begin, int64_t end) {
          Array1<Acc<T>> row(classes);
          for (int64_t r = begin; r < end; ++r) {
            if (classes == 0) {
              out[r] = static_cast<EigenType<T>>(0);
              continue;
            }
            row = LoadRun<T>(x + r * classes, classes);
            const Acc<T> lse = LogSumExp(row, row.maxCoeff());
            const Acc<T> l =
                (LoadRun<T>(p + r * classes, classes) * (lse - row)).sum();
            out[r] = static_cast<EigenType<T>>(l);
          }
        });
    return absl::OkStatus();
  }
};

template <typename T>
class SparseSoftmaxCrossEntropyKernel : public OpKernel {
 public:
  absl::Status Compute(OpKernelContext* ctx) override {
    RN_ASSIGN_OR_RETURN(Shape shape, SparseSoftmaxCrossEntropyLossShape(
                                         ctx->input(0), ctx->input(1)));
    if (ctx->input(1).dtype() == DType::kI32) return Run<int32_t>(ctx, shape);
    return Run<int64_t>(ctx, shape);
  }

 private:
  template <typename L>
  absl::Status Run(OpKernelContext* ctx, Shape shape) {
    const Tensor& logits = ctx->input(0);
    const Tensor& labels = ctx->input(1);
    RN_ASSIGN_OR_RETURN(Tensor * loss, ctx->allocate_output(0, shape));
    const int64_t classes = logits.dim(logits.rank() - 1);
    const int64_t rows = loss->num_elements();
    const L* label = labels.data<L>();
    for (int64_t r = 0; r < rows; ++r) {
      if (label[r] < 0 || label[r] >= classes) {
        return LabelOutOfRange(label[r], r, classes);
      }
    }
    const EigenType<T>* x = EigenData<T>(logits);
    EigenType<T>* out = EigenMutableData<T>(loss);
    ctx->intra_op_pool()->ParallelFor(
        rows, classes * kExpCost, [&](int64_t begin, int64_t end) {
          Array1<Acc<T>> row(classes);
          for (int64_t r = begin; r < end; ++r) {
            row = LoadRun<T>(x + r * classes, classes);
            const Acc<T> lse = LogSumExp(row, row.maxCoeff());
            out[r] = static_cast<EigenType<T>>(lse - row[label[r]]);
          }
        });
    return absl::OkStatus();
  }
};

// Cycles per element of a cheap element-wise kernel.
constexpr int64_t kCwiseCost = 2;

template <typename T>
class SigmoidCrossEntropyKernel : public OpKernel {
 public:
  absl::Status Compute(OpKernelContext* ctx) override {
    const Tensor& logits = ctx->input(0);
    const Tensor& labels = ctx->input(1);
    RN_RETURN_IF_ERROR(CheckSigmoidCrossEntropy(logits, labels));
    RN_ASSIGN_OR_RETURN(Tensor * loss, ctx->allocate_output(0, logits.shape()));
    const EigenType<T>* x = EigenData<T>(logits);
    const EigenType<T>* z = EigenData<T>(labels);
    EigenType<T>* out = EigenMutableData<T>(loss);
    ctx->intra_op_pool()->ParallelFor(
        logits.num_elements(), kExpCost, [&](int64_t begin, int64_t end) {
          const int64_t n = end - begin;
          Array1<Acc<T>> xs = LoadRun<T>(x + begin, n);
          // max(x, 0) - x * z + log(1 + exp(-|x|)): exp never overflows.
          Array1<Acc<T>> l = xs.max(Acc<T>(0)) - xs * LoadRun<T>(z + begin, n) +
                             (-xs.abs()).exp().log1p();
          Eigen::Map<Array1<EigenType<T>>>(out + begin, n) =
              l.template cast<EigenType<T>>();
        });
    return absl::OkStatus();
  }
};

template <typename T>
class BiasAddKernel : public OpKernel {
 public:
  absl::Status Compute(OpKernelContext* ctx) override {
    const Tensor& x = ctx->input(0);
    const Tensor& bias = ctx->input(1);
    RN_RETURN_IF_ERROR(CheckBiasAdd(x, bias));
    // In x's buffer when nobody else holds it (each row is read, then
    // written).
    bool forwarded = false;
    RN_ASSIGN_OR_RETURN(Tensor * y, ctx->forward_input_or_allocate(
                                        0, 0, x.shape(), &forwarded));
    const int64_t cols = bias.dim(0);
    if (x.num_elements() == 0) return absl::OkStatus();
    const int64_t rows = x.num_elements() / cols;
    const EigenType<T>* in = EigenData<T>(x);
    const EigenType<T>* b = EigenData<T>(bias);
    EigenType<T>* out = EigenMutableData<T>(y);
    ctx->intra_op_pool()->ParallelFor(
        rows, cols * kCwiseCost, [&](int64_t begin, int64_t end) {
          const Array1<Acc<T>> bv = LoadRun<T>(b, cols);
          for (int64_t r = begin; r < end; ++r) {
            Eigen::Map<Array1<EigenType<T>>>(out + r * cols, cols) =
                (LoadRun<T>(in + r * cols, cols) + bv)
                    .template cast<EigenType<T>>();
          }
        });
    return absl::OkStatus();
  }
};

template <typename T>
class L2LossKernel : public OpKernel {
 public:
  absl::Status Compute(OpKernelContext* ctx) override {
    const Tensor& x = ctx->input(0);
    RN_ASSIGN_OR_RETURN(Tensor * y, ctx->allocate_output(0, Shape{}));
    // Fixed chunks summed in order: the result does not depend on the
    // number of threads.
    constexpr int64_t kChunk = 16384;
    const int64_t n = x.num_elements();
    const int64_t chunks = (n + kChunk - 1) / kChunk;
    std::vector<double> partial(chunks, 0.0);
    const EigenType<T>* in = EigenData<T>(x);
    ctx->intra_op_pool()->ParallelFor(
        chunks, kChunk * kCwiseCost, [&](int64_t begin, int64_t end) {
          for (int64_t c = begin; c < end; ++c) {
            const int64_t len = std::min(kChunk, n - c * kChunk);
            partial[c] = static_cast<double>(
                LoadRun<T>(in + c * kChunk, len).square().sum());
          }
        });
    double sum = 0;
    for (double p : partial) sum += p;
    EigenMutableData<T>(y)[0] = static_cast<EigenType<T>>(sum / 2);
    return absl::OkStatus();
  }
};

RUNNEL_STATIC_INIT(NnKernels) {
  RegisterKernelForTypes<Softmax, Half, BFloat16, float, double>("softmax");
  RegisterKernelForTypes<MaskedSoftmax, Half, BFloat16, float, double>(
      "masked_softmax");
  RegisterKernelForTypes<AttentionKernel, float, double>(
      "scaled_dot_product_attention");
  RegisterKernelForTypes<AttentionGradKernel, float, double>(
      "scaled_dot_product_attention_grad");
  RegisterKernelForTypes<LogSoftmax, Half, BFloat16, float, double>(
      "log_softmax");
  RegisterKernelForTypes<SoftmaxGradKernel, Half, BFloat16, float, double>(
      "softmax_grad");
  RegisterKernelForTypes<LayerNormKernel, Half, BFloat16, float, double>(
      "layer_norm");
  RegisterKernelForTypes<LayerNormGradKernel, Half, BFloat16, float, double>(
      "layer_norm_grad");
  RegisterKernelForTypes<BatchNormKernel, Half, BFloat16, float, double>(
      "batch_norm");
  RegisterKernelForTypes<BatchNormGradKernel, Half, BFloat16, float, double>(
      "batch_norm_grad");
  RegisterKernelForTypes<SoftmaxCrossEntropyKernel, Half, BFloat16, float,
                         double>("softmax_cross_entropy");
  RegisterKernelForTypes<SparseSoftmaxCrossEntropyKernel, Half, BFloat16, float,
                         double>("sparse_softmax_cross_entropy");
  RegisterKernelForTypes<SigmoidCrossEntropyKernel, Half, BFloat16, float,
                         double>("sigmoid_cross_entropy");
  RegisterKernelForTypes<BiasAddKernel, Half, BFloat16, float, double, int32_t,
                         int64_t>("bias_add");
  RegisterKernelForTypes<L2LossKernel, Half, BFloat16, float, double>(
      "l2_loss");
}

}  // namespace
}  // namespace runnel
