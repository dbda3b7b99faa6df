// matmul on the GPU through cuBLASLt, with the CPU kernel's semantics
// (kernels/cpu/matmul_kernels.cc): transpose_a/transpose_b, batch dims
// broadcast NumPy-style. f32 and f64 compute in their own precision (no
// TF32, so that results match the CPU's within rounding); f16 and bf16
// accumulate in f32, as on the CPU.
//
// Runnel's matrices are row-major and cuBLASLt's column-major: a row-major
// m×n matrix is the column-major n×m one with the same bytes, so
// C = op(A)·op(B) is computed as Cᵀ = op(B)ᵀ·op(A)ᵀ, i.e. cuBLASLt's "A" is
// our b and its "B" is our a, with the same transpose flags.
#include <cstdint>
#include <memory>
#include <utility>
#include <vector>

#include "base/strings.h"
#include "framework/ops/kernel_checks.h"
#include "framework/shape_fns.h"
#include "kernels/cuda/cuda_status.h"
#include "kernels/cuda/cwise.h"
#include "kernels/cuda/elem_type.h"
#include "kernels/cuda/gpu_device.h"
#include "kernels/cuda/reduce.h"
#include "kernels/cuda/reduce_plan.h"
#include "kernels/cuda/rnn.h"

namespace runnel {
namespace {

struct LtTypes {
  cudaDataType_t data;
  cublasComputeType_t compute;
  cudaDataType_t scale;
};

absl::StatusOr<LtTypes> TypesOf(DType d) {
  switch (d) {
    case DType::kF32:
      return LtTypes{CUDA_R_32F, CUBLAS_COMPUTE_32F, CUDA_R_32F};
    case DType::kF64:
      return LtTypes{CUDA_R_64F, CUBLAS_COMPUTE_64F, CUDA_R_64F};
    case DType::kF16:
      return LtTypes{CUDA_R_16F, CUBLAS_COMPUTE_32F, CUDA_R_32F};
    case DType::kBF16:
      return LtTypes{CUDA_R_16BF, CUBLAS_COMPUTE_32F, CUDA_R_32F};
    default:
      return absl::UnimplementedError(
          StrCat("no GPU matmul for ", DTypeName(d)));
  }
}

// cuBLASLt descriptors, destroyed on scope exit.
struct DescDeleter {
  void operator()(cublasLtMatmulDescOpaque_t* d) const {
    LoadedCublasLt()->cublasLtMatmulDescDestroy(d);
  }
  void operator()(cublasLtMatrixLayoutOpaque_t* l) const {
    LoadedCublasLt()->cublasLtMatrixLayoutDestroy(l);
  }
  void operator()(cublasLtMatmulPreferenceOpaque_t* p) const {
    LoadedCublasLt()->cublasLtMatmulPreferenceDestroy(p);
  }
};
using OpDesc = std::unique_ptr<cublasLtMatmulDescOpaque_t, DescDeleter>;
using Layout = std::unique_ptr<cublasLtMatrixLayoutOpaque_t, DescDeleter>;
using Preference =
    std::unique_ptr<cublasLtMatmulPreferenceOpaque_t, DescDeleter>;

// A column-major rows×cols matrix with leading dimension `ld`, repeated
// `batch` times `stride` elements apart.
absl::StatusOr<Layout> MakeLayout(const CublasLt& lt, cudaDataType_t type,
                                  int64_t rows, int64_t cols, int64_t ld,
                                  int batch, int64_t stride) {
  cublasLtMatrixLayout_t raw = nullptr;
  RN_CUBLAS(lt.cublasLtMatrixLayoutCreate(&raw, type, rows, cols, ld));
  Layout layout(raw);
  if (batch > 1) {
    RN_CUBLAS(lt.cublasLtMatrixLayoutSetAttribute(
        raw, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &batch, sizeof(batch)));
    RN_CUBLAS(lt.cublasLtMatrixLayoutSetAttribute(
        raw, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, &stride,
        sizeof(stride)));
  }
  return layout;
}

// `batch` products of the plan's matrices, each operand `*_stride`
// elements after the last (0: the same matrix each time).
struct Batch {
  int count = 1;
  int64_t a_stride = 0, b_stride = 0;
};

// The largest power of two (at most 256) dividing the address of `p` and
// the byte stride between a batch's matrices.
uint32_t Alignment(const void* p, int64_t stride_bytes) {
  uint64_t bits = reinterpret_cast<uintptr_t>(p) |
                  static_cast<uint64_t>(stride_bytes) | 256;
  return static_cast<uint32_t>(bits & (~bits + 1));
}

// c = a·b, or c += a·b with `accumulate`.
absl::Status RunProduct(GpuContext& gpu, const LtTypes& t, const MatMulPlan& p,
                        const Batch& batch, const char* a, const char* b,
                        char* c, bool accumulate = false) {
  const CublasLt& lt = gpu.lt();
  cublasLtMatmulDesc_t raw_op = nullptr;
  RN_CUBLAS(lt.cublasLtMatmulDescCreate(&raw_op, t.compute, t.scale));
  OpDesc op(raw_op);
  const cublasOperation_t op_a = p.tb ? CUBLAS_OP_T : CUBLAS_OP_N;
  const cublasOperation_t op_b = p.ta ? CUBLAS_OP_T : CUBLAS_OP_N;
  RN_CUBLAS(lt.cublasLtMatmulDescSetAttribute(
      raw_op, CUBLASLT_MATMUL_DESC_TRANSA, &op_a, sizeof(op_a)));
  RN_CUBLAS(lt.cublasLtMatmulDescSetAttribute(
      raw_op, CUBLASLT_MATMUL_DESC_TRANSB, &op_b, sizeof(op_b)));
  // Stored (before op): our b is b_rows×b_cols row-major = b_cols×b_rows
  // column-major; likewise a; C is n×m column-major.
  RN_ASSIGN_OR_RETURN(Layout la,
                      MakeLayout(lt, t.data, p.b_cols, p.b_rows, p.b_cols,
                                 batch.count, batch.b_stride));
  RN_ASSIGN_OR_RETURN(Layout lb,
                      MakeLayout(lt, t.data, p.a_cols, p.a_rows, p.a_cols,
                                 batch.count, batch.a_stride));
  RN_ASSIGN_OR_RETURN(
      Layout lc, MakeLayout(lt, t.data, p.n, p.m, p.n, batch.count, p.m * p.n));
  cublasLtMatmulPreference_t raw_pref = nullptr;
  RN_CUBLAS(lt.cublasLtMatmulPreferenceCreate(&raw_pref));
  Preference pref(raw_pref);
  const uint64_t workspace = gpu.workspace_bytes();
  RN_CUBLAS(lt.cublasLtMatmulPreferenceSetAttribute(
      raw_pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &workspace,
      sizeof(workspace)));
  // The heuristic assumes 256-byte aligned matrices unless told: a matrix
  // inside a batch (or the batch's stride) may be aligned less.
  const size_t elem = t.data == CUDA_R_64F ? 8 : t.data == CUDA_R_32F ? 4 : 2;
  const uint32_t align_a = Alignment(b, batch.b_stride * elem);
  const uint32_t align_b = Alignment(a, batch.a_stride * elem);
  const uint32_t align_c = Alignment(c, p.m * p.n * elem);
  for (auto [attr, align] :
       {std::pair{CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, align_a},
        std::pair{CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES, align_b},
        std::pair{CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, align_c},
        std::pair{CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES, align_c}}) {
    RN_CUBLAS(lt.cublasLtMatmulPreferenceSetAttribute(raw_pref, attr, &align,
                                                      sizeof(align)));
  }
  cublasLtMatmulHeuristicResult_t heuristic = {};
  int found = 0;
  RN_CUBLAS(lt.cublasLtMatmulAlgoGetHeuristic(gpu.blas(), raw_op, la.get(),
                                              lb.get(), lc.get(), lc.get(),
                                              raw_pref, 1, &heuristic, &found));
  if (found == 0) {
    return absl::InternalError(
        StrCat("cublasLtMatmulAlgoGetHeuristic: no algorithm for ", p.m, "x",
               p.k, " @ ", p.k, "x", p.n));
  }
  const float alpha_f = 1, beta_f = accumulate ? 1 : 0;
  const double alpha_d = 1, beta_d = accumulate ? 1 : 0;
  const bool f64 = t.scale == CUDA_R_64F;
  const void* alpha = f64 ? static_cast<const void*>(&alpha_d) : &alpha_f;
  const void* beta = f64 ? static_cast<const void*>(&beta_d) : &beta_f;
  RN_CUBLAS(lt.cublasLtMatmul(
      gpu.blas(), raw_op, alpha, b, la.get(), a, lb.get(), beta, c, lc.get(), c,
      lc.get(), &heuristic.algo, gpu.workspace(), workspace, gpu.compute()));
  return absl::OkStatus();
}

// The stride that makes `offsets` arithmetic (offsets[i] = i·stride), or
// -1 when they are not.
int64_t UniformStride(const std::vector<int64_t>& offsets) {
  if (offsets.size() < 2) return 0;
  const int64_t s = offsets[1] - offsets[0];
  for (size_t i = 0; i < offsets.size(); ++i) {
    if (offsets[i] != offsets[0] + static_cast<int64_t>(i) * s) return -1;
  }
  return offsets[0] == 0 ? s : -1;
}

class MatMulKernel : public MatMulAttrsKernel {
 public:
  absl::Status Compute(OpKernelContext* ctx) override {
    const Tensor& a = ctx->input(0);
    const Tensor& b = ctx->input(1);
    RN_ASSIGN_OR_RETURN(LtTypes types, TypesOf(a.dtype()));
    RN_ASSIGN_OR_RETURN(const MatMulPlan p,
                        PlanMatMul(a.shape(), b.shape(), ta_, tb_, a.dtype()));
    RN_ASSIGN_OR_RETURN(Tensor * out, ctx->allocate_output(0, p.out));
    if (out->num_elements() == 0) return absl::OkStatus();
    GpuContext& gpu = GpuContextOf(ctx);
    RN_RETURN_IF_ERROR(gpu.Activate());
    if (p.k == 0) {  // an empty sum: zeros
      RN_CUDA(cudaMemsetAsync(out->raw_data(), 0, out->bytes(), gpu.compute()));
      return absl::OkStatus();
    }
    const size_t elem = DTypeSize(a.dtype());
    const char* pa = static_cast<const char*>(a.raw_data());
    const char* pb = static_cast<const char*>(b.raw_data());
    char* pc = static_cast<char*>(out->raw_data());
    const int64_t count = static_cast<int64_t>(p.a_offsets.size());
    const int64_t sa = UniformStride(p.a_offsets);
    const int64_t sb = UniformStride(p.b_offsets);
    if (count == 1) return RunProduct(gpu, types, p, {}, pa, pb, pc);
    if (sa > 0 && sb > 0 && count <= INT32_MAX) {
      return RunProduct(gpu, types, p, {static_cast<int>(count), sa, sb}, pa,
                        pb, pc);
    }
    // Batch dims broadcast (an operand repeated): one product per output
    // matrix.
    for (size_t i = 0; i < p.a_offsets.size(); ++i) {
      RN_RETURN_IF_ERROR(
          RunProduct(gpu, types, p, {}, pa + p.a_offsets[i] * elem,
                     pb + p.b_offsets[i] * elem, pc + i * p.m * p.n * elem));
    }
    return absl::OkStatus();
  }
};

// matmul_add(acc, a, b) for f32 matrices (the CPU kernel's semantics):
// acc's buffer when the kernel may take it over, else a copy of it, then
// the product added in by cuBLASLt (beta 1).
class MatMulAddKernel : public MatMulAttrsKernel {
 public:
  absl::Status Compute(OpKernelContext* ctx) override {
    const Tensor& acc = ctx->input(0);
    const Tensor& a = ctx->input(1);
    const Tensor& b = ctx->input(2);
    RN_ASSIGN_OR_RETURN(LtTypes types, TypesOf(a.dtype()));
    RN_ASSIGN_OR_RETURN(const MatMulPlan p, PlanMatMulAdd(acc, a, b, ta_, tb_));
    bool forwarded = false;
    RN_ASSIGN_OR_RETURN(
        Tensor * out, ctx->forward_input_or_allocate(0, 0, p.out, &forwarded));
    if (out->num_elements() == 0) return absl::OkStatus();
    GpuContext& gpu = GpuContextOf(ctx);
    RN_RETURN_IF_ERROR(gpu.Activate());
    if (!forwarded) {
      RN_CUDA(cudaMemcpyAsync(out->raw_data(), acc.raw_data(), acc.bytes(),
                              cudaMemcpyDeviceToDevice, gpu.compute()));
    }
    if (p.k == 0) return absl::OkStatus();
    return RunProduct(gpu, types, p, {}, static_cast<const char*>(a.raw_data()),
                      static_cast<const char*>(b.raw_data()),
                      static_cast<char*>(out->raw_data()), /*accumulate=*/true);
  }
};

// The plan of c [m, n] = op(a) op(b) for whole row-major matrices.
MatMulPlan PlainProduct(int64_t m, int64_t n, int64_t k, bool ta, bool tb) {
  MatMulPlan p;
  p.m = m;
  p.n = n;
  p.k = k;
  p.ta = ta;
  p.tb = tb;
  p.a_rows = ta ? k : m;
  p.a_cols = ta ? m : k;
  p.b_rows = tb ? n : k;
  p.b_cols = tb ? k : n;
  return p;
}

const float* F32At(const Tensor& t, int64_t offset) {
  return static_cast<const float*>(t.raw_data()) + offset;
}
float* F32At(Tensor* t, int64_t offset) {
  return static_cast<float*>(t->raw_data()) + offset;
}

// Runs of the rows at or past their length at step t (the lengths in host
// memory): fn(first row, rows) for each.
template <class Fn>
absl::Status ForFrozenRuns(const Tensor* lengths, int64_t t, int64_t batch,
                           const Fn& fn) {
  if (lengths == nullptr) return absl::OkStatus();
  const int32_t* len = lengths->data<int32_t>();
  for (int64_t r = 0; r < batch;) {
    if (t < len[r]) {
      ++r;
      continue;
    }
    int64_t end = r + 1;
    while (end < batch && t >= len[end]) ++end;
    RN_RETURN_IF_ERROR(fn(r, end - r));
    r = end;
  }
  return absl::OkStatus();
}

// lstm_sequence on the GPU (the CPU kernel's semantics, kernels/cpu/
// rnn_kernels.cc): per step, the recurrent product added into a copy of
// z by cuBLASLt, then the lstm_cell kernel (which overwrites the copy with
// the gates' activations); every row of the batch at once.
class LstmSequenceKernel : public OpKernel {
 public:
  // The lengths (read on the host) follow the bias when there is one.
  absl::Status Init(const Node& node) override {
    set_host_memory({.inputs = {SequenceLengthsInput(node.attrs())}});
    return absl::OkStatus();
  }

  absl::Status Compute(OpKernelContext* ctx) override {
    RN_ASSIGN_OR_RETURN(const LstmSequenceArgs a, PrepareLstmSequence(ctx));
    const Tensor &z = *a.z, &h0 = *a.h0, &c0 = *a.c0, &w_h = *a.w_h;
    Tensor *hs = a.hs, *cs = a.cs, *gates = a.gates;
    const int64_t time = a.dims.time, batch = a.dims.batch, u = a.dims.units;
    const size_t state_bytes = h0.bytes();
    if (state_bytes == 0) return absl::OkStatus();
    GpuContext& gpu = GpuContextOf(ctx);
    RN_RETURN_IF_ERROR(gpu.Activate());
    const cudaStream_t stream = gpu.compute();
    const void* h_last = h0.raw_data();
    const void* c_last = c0.raw_data();
    if (time > 0) {
      RN_ASSIGN_OR_RETURN(LtTypes types, TypesOf(DType::kF32));
      if (a.b == nullptr) {
        RN_CUDA(cudaMemcpyAsync(gates->raw_data(), z.raw_data(), z.bytes(),
                                cudaMemcpyDeviceToDevice, stream));
      } else {
        // z + b, b repeated down the rows.
        cuda::Broadcast bc;
        bc.rank = 2;
        bc.dims[0] = time * batch;
        bc.dims[1] = 4 * u;
        bc.a_strides[0] = 4 * u;
        bc.a_strides[1] = bc.b_strides[1] = 1;
        RN_CUDA(cuda::LaunchBinary(
            cuda::BinaryOp::kAdd, GpuElemType(DType::kF32), z.raw_data(),
            a.b->raw_data(), gates->raw_data(), z.num_elements(), &bc, stream));
      }
      const MatMulPlan step = PlainProduct(batch, 4 * u, u, false, false);
      for (int64_t t = 0; t < time; ++t) {
        const float* hp =
            t == 0 ? F32At(h0, 0) : F32At(hs, (t - 1) * batch * u);
        const float* cp =
            t == 0 ? F32At(c0, 0) : F32At(cs, (t - 1) * batch * u);
        float* g = F32At(gates, t * batch * 4 * u);
        RN_RETURN_IF_ERROR(
            RunProduct(gpu, types, step, {}, reinterpret_cast<const char*>(hp),
                       static_cast<const char*>(w_h.raw_data()),
                       reinterpret_cast<char*>(g), /*accumulate=*/true));
        RN_CUDA(cuda::LaunchLstmCell(
            GpuElemType(DType::kF32), g, cp, F32At(hs, t * batch * u),
            F32At(cs, t * batch * u), batch, u, stream, /*activations=*/g));
        // Rows at or past their length take their previous state back.
        RN_RETURN_IF_ERROR(ForFrozenRuns(
            a.lengths, t, batch, [&](int64_t r, int64_t rows) -> absl::Status {
              const size_t bytes = static_cast<size_t>(rows * u) * 4;
              RN_CUDA(cudaMemcpyAsync(F32At(hs, (t * batch + r) * u),
                                      hp + r * u, bytes,
                                      cudaMemcpyDeviceToDevice, stream));
              RN_CUDA(cudaMemcpyAsync(F32At(cs, (t * batch + r) * u),
                                      cp + r * u, bytes,
                                      cudaMemcpyDeviceToDevice, stream));
              return absl::OkStatus();
            }));
      }
      h_last = F32At(hs, (time - 1) * batch * u);
      c_last = F32At(cs, (time - 1) * batch * u);
    }
    RN_CUDA(cudaMemcpyAsync(a.h->raw_data(), h_last, state_bytes,
                            cudaMemcpyDeviceToDevice, stream));
    RN_CUDA(cudaMemcpyAsync(a.c->raw_data(), c_last, state_bytes,
                            cudaMemcpyDeviceToDevice, stream));
    return absl::OkStatus();
  }
};

// lstm_sequence_grad on the GPU: the steps backwards, dh[t] = dhs[t] +
// dz[t+1] @ w_h^T and lstm_cell_grad's dc carried, then db = dz summed
// over steps and batch, dw_h = h0^T dz[0] + hs[0 : time-1]^T dz[1 :
// time].
class LstmSequenceGradKernel : public OpKernel {
 public:
  absl::Status Compute(OpKernelContext* ctx) override {
    RN_ASSIGN_OR_RETURN(const LstmSequenceGradArgs a,
                        PrepareLstmSequenceGrad(ctx));
    const Tensor &gates = *a.gates, &cs = *a.cs, &hs = *a.hs, &h0 = *a.h0,
                 &c0 = *a.c0, &w_h = *a.w_h, &dhs = *a.dhs, &dh = *a.dh,
                 &dc = *a.dc;
    Tensor *dz = a.dz, *dh0 = a.dh0, *dc0 = a.dc0, *dw = a.dw_h, *db = a.db;
    const int64_t time = a.dims.time, batch = a.dims.batch, u = a.dims.units;
    GpuContext& gpu = GpuContextOf(ctx);
    RN_RETURN_IF_ERROR(gpu.Activate());
    const cudaStream_t stream = gpu.compute();
    for (Tensor* zero : {dw, db}) {
      if (zero->bytes() > 0) {
        RN_CUDA(cudaMemsetAsync(zero->raw_data(), 0, zero->bytes(), stream));
      }
    }
    if (dh.bytes() == 0) return absl::OkStatus();
    // The carried gradients start as the final state's.
    RN_CUDA(cudaMemcpyAsync(dh0->raw_data(), dh.raw_data(), dh.bytes(),
                            cudaMemcpyDeviceToDevice, stream));
    RN_CUDA(cudaMemcpyAsync(dc0->raw_data(), dc.raw_data(), dc.bytes(),
                            cudaMemcpyDeviceToDevice, stream));
    if (time == 0) return absl::OkStatus();
    RN_ASSIGN_OR_RETURN(LtTypes types, TypesOf(DType::kF32));
    RN_ASSIGN_OR_RETURN(Tensor dh_t, GpuScratch(ctx, DType::kF32, h0.shape()));
    RN_ASSIGN_OR_RETURN(Tensor dc_t, GpuScratch(ctx, DType::kF32, c0.shape()));
    const cuda::ElemType f32 = GpuElemType(DType::kF32);
    const int64_t n = batch * u;
    const MatMulPlan back = PlainProduct(batch, u, 4 * u, false, true);
    for (int64_t t = time - 1; t >= 0; --t) {
      const float* cp = t == 0 ? F32At(c0, 0) : F32At(cs, (t - 1) * n);
      float* dg = F32At(dz, t * 4 * n);
      RN_CUDA(cuda::LaunchBinary(cuda::BinaryOp::kAdd, f32, F32At(dhs, t * n),
                                 dh0->raw_data(), dh_t.raw_data(), n, nullptr,
                                 stream));
      RN_CUDA(cuda::LaunchLstmCellGrad(f32, F32At(gates, t * 4 * n), cp,
                                       dh_t.raw_data(), dc0->raw_data(), dg,
                                       dc_t.raw_data(), batch, u, stream,
                                       /*activated=*/true));
      // Rows at or past their length: their gates get no gradient, and
      // their state's gradients pass through the step (dc here, dh below).
      auto frozen = [&](auto fn) {
        return ForFrozenRuns(a.lengths, t, batch, fn);
      };
      RN_RETURN_IF_ERROR(frozen([&](int64_t r, int64_t rows) -> absl::Status {
        RN_CUDA(cudaMemsetAsync(dg + r * 4 * u, 0,
                                static_cast<size_t>(rows * 4 * u) * 4, stream));
        RN_CUDA(cudaMemcpyAsync(F32At(&dc_t, r * u), F32At(*dc0, r * u),
                                static_cast<size_t>(rows * u) * 4,
                                cudaMemcpyDeviceToDevice, stream));
        return absl::OkStatus();
      }));
      RN_CUDA(cudaMemcpyAsync(dc0->raw_data(), dc_t.raw_data(), dc_t.bytes(),
                              cudaMemcpyDeviceToDevice, stream));
      RN_RETURN_IF_ERROR(RunProduct(gpu, types, back, {},
                                    reinterpret_cast<const char*>(dg),
                                    static_cast<const char*>(w_h.raw_data()),
                                    static_cast<char*>(dh0->raw_data())));
      RN_RETURN_IF_ERROR(frozen([&](int64_t r, int64_t rows) -> absl::Status {
        RN_CUDA(cudaMemcpyAsync(F32At(dh0, r * u), F32At(dh_t, r * u),
                                static_cast<size_t>(rows * u) * 4,
                                cudaMemcpyDeviceToDevice, stream));
        return absl::OkStatus();
      }));
    }
    // db: dz summed over the steps and the batch.
    const size_t scratch_bytes =
        cuda::ReduceScratchBytes(1, time * batch, 4 * u, 0);
    Tensor scratch;
    if (scratch_bytes > 0) {
      RN_ASSIGN_OR_RETURN(
          scratch, GpuScratch(ctx, DType::kU8,
                              Shape{static_cast<int64_t>(scratch_bytes)}));
    }
    RN_CUDA(cuda::LaunchReduce(cuda::ReduceOp::kSum, f32, dz->raw_data(),
                               db->raw_data(), 1, time * batch, 4 * u,
                               scratch_bytes > 0 ? scratch.raw_data() : nullptr,
                               stream));
    RN_RETURN_IF_ERROR(RunProduct(gpu, types,
                                  PlainProduct(u, 4 * u, batch, true, false),
                                  {}, static_cast<const char*>(h0.raw_data()),
                                  reinterpret_cast<const char*>(F32At(dz, 0)),
                                  static_cast<char*>(dw->raw_data())));
    if (time == 1) return absl::OkStatus();
    return RunProduct(gpu, types,
                      PlainProduct(u, 4 * u, (time - 1) * batch, true, false),
                      {}, static_cast<const char*>(hs.raw_data()),
                      reinterpret_cast<const char*>(F32At(dz, 4 * n)),
                      static_cast<char*>(dw->raw_data()), /*accumulate=*/true);
  }
};

RUNNEL_STATIC_INIT(GpuMatMulKernels) {
  for (DType d : {DType::kF16, DType::kBF16, DType::kF32, DType::kF64}) {
    RegisterKernel<MatMulKernel>("matmul", kDeviceGpu, d);
  }
  RegisterKernel<MatMulAddKernel>("matmul_add", kDeviceGpu, DType::kF32);
  // The lengths in host memory: the kernels read them to pick the rows
  // whose state stays (lstm_sequence's Init moves them after its bias).
  RegisterKernel<LstmSequenceKernel>("lstm_sequence", kDeviceGpu, DType::kF32);
  RegisterKernel<LstmSequenceGradKernel>(
      "lstm_sequence_grad", kDeviceGpu, DType::kF32, HostMemory{.inputs = {9}});
}

}  // namespace
}  // namespace runnel
