// matmul kernels. f32 (and f16/bf16, converted to f32 around it) runs on
// oneDNN's sgemm (onednn.h), which measured 1.5-2x faster here than the
// hand-written AVX2 GEMM it replaced (bench/matmul_bench, bench/ops_bench);
// f64 uses Eigen's tensor contraction on the intra-op pool; the integer
// types a plain loop over rows, wrapping as integer arithmetic does here
// (Eigen's contraction compiled for them cost half this file's build time).
#include <algorithm>
#include <cstring>
#include <type_traits>
#include <vector>

#include "base/strings.h"
#include "framework/ops/kernel_checks.h"
#include "framework/shape_fns.h"
#include "kernels/cpu/eigen_support.h"
#include "kernels/cpu/gemm.h"

namespace runnel {
namespace {

// c = a @ b for the plan's products, or c += a @ b with `accumulate`.
absl::Status MatMulF32(ThreadPool* pool, const MatMulPlan& d, const float* a,
                       const float* b, float* c,
                       const std::vector<int64_t>& a_off,
                       const std::vector<int64_t>& b_off,
                       bool accumulate = false) {
  const int64_t batch = static_cast<int64_t>(a_off.size());
  auto one = [&](ThreadPool* p, int64_t i) {
    return GemmF32(p, d.m, d.n, d.k, StoredMatrix(a + a_off[i], d.a_cols, d.ta),
                   StoredMatrix(b + b_off[i], d.b_cols, d.tb),
                   c + i * d.m * d.n, d.n, accumulate);
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
void MatMulEigen(OpKernelContext* ctx, const MatMulPlan& d, const T* a,
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

// c = a @ b for integers, one output row per task of the intra-op pool;
// products and sums in the unsigned twin, where overflow wraps as defined.
template <typename T>
void MatMulIntegers(ThreadPool* pool, const MatMulPlan& d, const T* a,
                    const T* b, T* c, const std::vector<int64_t>& a_off,
                    const std::vector<int64_t>& b_off) {
  using U = std::make_unsigned_t<T>;
  // Element (i, p) of a and (p, j) of b as stored, transposed or not.
  const int64_t a_row = d.ta ? 1 : d.a_cols, a_col = d.ta ? d.a_cols : 1;
  const int64_t b_row = d.tb ? 1 : d.b_cols, b_col = d.tb ? d.b_cols : 1;
  const int64_t rows = static_cast<int64_t>(a_off.size()) * d.m;
  pool->ParallelFor(rows, d.n * d.k, [&](int64_t begin, int64_t end) {
    std::vector<U> acc(d.n);
    for (int64_t r = begin; r < end; ++r) {
      const int64_t batch = r / d.m, i = r % d.m;
      const T* ab = a + a_off[batch] + i * a_row;
      const T* bb = b + b_off[batch];
      std::fill(acc.begin(), acc.end(), U{0});
      for (int64_t p = 0; p < d.k; ++p) {
        const U x = static_cast<U>(ab[p * a_col]);
        const T* brow = bb + p * b_row;
        for (int64_t j = 0; j < d.n; ++j) {
          acc[j] += x * static_cast<U>(brow[j * b_col]);
        }
      }
      T* out = c + r * d.n;
      for (int64_t j = 0; j < d.n; ++j) out[j] = static_cast<T>(acc[j]);
    }
  });
}

template <typename T>
class MatMulKernel : public MatMulAttrsKernel {
 public:
  absl::Status Compute(OpKernelContext* ctx) override {
    const Tensor& a = ctx->input(0);
    const Tensor& b = ctx->input(1);
    RN_ASSIGN_OR_RETURN(const MatMulPlan d,
                        PlanMatMul(a.shape(), b.shape(), ta_, tb_, a.dtype()));
    const Shape& out_shape = d.out;
    RN_ASSIGN_OR_RETURN(Tensor * out, ctx->allocate_output(0, out_shape));
    if (out->num_elements() == 0) return absl::OkStatus();
    if (d.k == 0) {
      // An empty sum is zero, which the products below would not write
      // (Eigen's leaves the output as allocated). Zero is all-zero bytes
      // in every dtype here.
      std::memset(out->raw_data(), 0, out->bytes());
      return absl::OkStatus();
    }
    const std::vector<int64_t>& a_off = d.a_offsets;
    const std::vector<int64_t>& b_off = d.b_offsets;
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
    } else if constexpr (std::is_integral_v<T>) {
      MatMulIntegers<T>(pool, d, a.data<T>(), b.data<T>(), out->data<T>(),
                        a_off, b_off);
    } else {
      MatMulEigen<T>(ctx, d, a.data<T>(), b.data<T>(), out->data<T>(), a_off,
                     b_off);
    }
    return absl::OkStatus();
  }
};

// matmul_add(acc, a, b): acc's buffer, when the kernel may take it over,
// or a copy of it, then the product added in by the sgemm itself.
class MatMulAddKernel : public MatMulAttrsKernel {
 public:
  absl::Status Compute(OpKernelContext* ctx) override {
    const Tensor& acc = ctx->input(0);
    const Tensor& a = ctx->input(1);
    const Tensor& b = ctx->input(2);
    RN_ASSIGN_OR_RETURN(const MatMulPlan d, PlanMatMulAdd(acc, a, b, ta_, tb_));
    bool forwarded = false;
    RN_ASSIGN_OR_RETURN(
        Tensor * out, ctx->forward_input_or_allocate(0, 0, d.out, &forwarded));
    if (!forwarded) std::memcpy(out->raw_data(), acc.raw_data(), acc.bytes());
    if (out->num_elements() == 0) return absl::OkStatus();
    return MatMulF32(ctx->intra_op_pool(), d, a.data<float>(), b.data<float>(),
                     out->data<float>(), d.a_offsets, d.b_offsets,
                     /*accumulate=*/true);
  }
};

RUNNEL_STATIC_INIT(MatMulKernels) {
  RegisterKernelForTypes<MatMulKernel, Half, BFloat16, float, double, int32_t,
                         int64_t>("matmul");
  RegisterKernel<MatMulAddKernel>("matmul_add", kDeviceCpu, DType::kF32);
}

}  // namespace
}  // namespace runnel
