// matmul kernels. f32 (and f16/bf16, converted to f32 around it) runs on
// oneDNN's sgemm (onednn.h), which measured 1.5-2x faster here than the
// hand-written AVX2 GEMM it replaced (bench/matmul_bench, bench/ops_bench);
// f64 and the integer types use Eigen's tensor contraction on the intra-op
// pool.
#include <algorithm>
#include <vector>

#include "kernels/cpu/eigen_support.h"
#include "kernels/cpu/gemm.h"
#include "runtime/shape_fns.h"
#include "runtime/strings.h"

namespace runnel {
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

absl::Status MatMulF32(ThreadPool* pool, const MatMulDims& d, const float* a,
                       const float* b, float* c,
                       const std::vector<int64_t>& a_off,
                       const std::vector<int64_t>& b_off) {
  const int64_t batch = static_cast<int64_t>(a_off.size());
  auto one = [&](ThreadPool* p, int64_t i) {
    ConstMatrixF32 am{a + a_off[i], d.ta ? 1 : d.a_cols, d.ta ? d.a_cols : 1};
    ConstMatrixF32 bm{b + b_off[i], d.tb ? 1 : d.b_cols, d.tb ? d.b_cols : 1};
    return GemmF32(p, d.m, d.n, d.k, am, bm, c + i * d.m * d.n, d.n);
  };
  const int threads = pool->num_threads();
  if (batch == 1 || d.m * d.n * d.k >= threads * kMinGemmWorkPerThread * 4) {
    for (int64_t i = 0; i < batch; ++i) RN_RETURN_IF_ERROR(one(pool, i));
    return absl::OkStatus();
  }
  // Many small products: one thread per group of them.
  const int shards = static_cast<int>(std::min<int64_t>(threads, batch));
  std::vector<absl::Status> status(shards);
  RunShards(pool, shards, [&](int s) {
    for (int64_t i = batch * s / shards;
         i < batch * (s + 1) / shards && status[s].ok(); ++i) {
      status[s] = one(nullptr, i);
    }
  });
  for (const absl::Status& s : status) RN_RETURN_IF_ERROR(s);
  return absl::OkStatus();
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
  if (batch == 1 || d.m * d.n * d.k >= kMinGemmWorkPerThread * 4) {
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
      RN_RETURN_IF_ERROR(MatMulF32(pool, d, a.data<float>(), b.data<float>(),
                                   out->data<float>(), a_off, b_off));
    } else if constexpr (std::is_same_v<AccumType<T>, float>) {
      // f16/bf16: products in f32, rounded once at the end.
      const Eigen::ThreadPoolDevice device = EigenDevice(ctx);
      const Tensor af = ToF32<T>(device, a), bf = ToF32<T>(device, b);
      Tensor cf(DType::kF32, out_shape);
      RN_RETURN_IF_ERROR(MatMulF32(pool, d, af.data<float>(), bf.data<float>(),
                                   cf.data<float>(), a_off, b_off));
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
