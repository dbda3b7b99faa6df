// GPU kernels of the neural-network ops (the CPU's: kernels/cpu/nn_kernels.cc,
// kernels/cpu/rnn_kernels.cc and the activation gradients of
// kernels/cpu/grad_kernels.cc): the fused recurrent cells through rnn.cu;
// softmax, log_softmax and the softmax cross-entropies through nn.cu; bias_add,
// sigmoid_cross_entropy, relu_grad, sigmoid_grad and tanh_grad through the
// element-wise template (cwise.h). l2_loss is a reduction
// (reduction_kernels.cc). Shapes are checked on the host by the CPU kernels'
// checks (framework/ops/kernel_checks.h).
//
// sparse_softmax_cross_entropy's labels live on the GPU, so their range is
// checked there: the kernel marks the first row whose label is out of
// range, and the host reads that mark back (a copy of 8 bytes and a wait
// for the compute stream, each call) to fail as the CPU does, naming the
// label and its index.
#include <algorithm>
#include <cstdint>
#include <limits>
#include <vector>

#include "base/strings.h"
#include "framework/ops/kernel_checks.h"
#include "framework/shape_fns.h"
#include "kernels/common/array_util.h"
#include "kernels/common/norm_util.h"
#include "kernels/cuda/attention.h"
#include "kernels/cuda/cuda_status.h"
#include "kernels/cuda/cwise.h"
#include "kernels/cuda/elem_type.h"
#include "kernels/cuda/gpu_device.h"
#include "kernels/cuda/nn.h"
#include "kernels/cuda/rnn.h"

namespace runnel {
namespace {

using cuda::BinaryOp;
using cuda::ElemType;

// The node's compute context, made current, and the element type of x.
struct Launch {
  GpuContext* gpu;
  ElemType type;
};
absl::StatusOr<Launch> Prepare(OpKernelContext* ctx, const Tensor& x) {
  const ElemType type = GpuElemType(x.dtype());
  GpuContext& gpu = GpuContextOf(ctx);
  RN_RETURN_IF_ERROR(gpu.Activate());
  return Launch{&gpu, type};
}

// softmax and log_softmax along attribute `axis`.
template <bool kLog>
class SoftmaxKernel : public OpKernel {
 public:
  absl::Status Init(const Node& node) override {
    RN_ASSIGN_OR_RETURN(axis_, node.attr<int64_t>("axis"));
    return absl::OkStatus();
  }

  absl::Status Compute(OpKernelContext* ctx) override {
    const Tensor& x = ctx->input(0);
    RN_ASSIGN_OR_RETURN(int axis, NormalizeAxis(axis_, x.rank()));
    RN_ASSIGN_OR_RETURN(Tensor * y, ctx->allocate_output(0, x.shape()));
    const AxisLines lines(x.shape(), axis);
    RN_ASSIGN_OR_RETURN(Launch l, Prepare(ctx, x));
    RN_CUDA(cuda::LaunchSoftmax(l.type, kLog, x.raw_data(), y->raw_data(),
                                lines.outer, lines.len, lines.inner,
                                l.gpu->compute()));
    return absl::OkStatus();
  }

 private:
  int64_t axis_ = -1;
};

// cumsum along attribute `axis` (kernels/cpu/scan_kernels.cc).
class CumsumKernel : public OpKernel {
 public:
  absl::Status Init(const Node& node) override {
    RN_ASSIGN_OR_RETURN(attrs_, CumsumAttrs::Of(node));
    return absl::OkStatus();
  }

  absl::Status Compute(OpKernelContext* ctx) override {
    const Tensor& x = ctx->input(0);
    RN_ASSIGN_OR_RETURN(int axis, NormalizeAxis(attrs_.axis, x.rank()));
    RN_ASSIGN_OR_RETURN(Tensor * y, ctx->allocate_output(0, x.shape()));
    const AxisLines lines(x.shape(), axis);
    RN_ASSIGN_OR_RETURN(Launch l, Prepare(ctx, x));
    RN_CUDA(cuda::LaunchCumsum(l.type, x.raw_data(), y->raw_data(), lines.outer,
                               lines.len, lines.inner, attrs_.exclusive,
                               attrs_.reverse, l.gpu->compute()));
    return absl::OkStatus();
  }

 private:
  CumsumAttrs attrs_;
};

// masked_softmax over the last axis (kernels/cpu/nn_kernels.cc).
class MaskedSoftmaxKernel : public OpKernel {
 public:
  absl::Status Compute(OpKernelContext* ctx) override {
    const Tensor& x = ctx->input(0);
    const Tensor& keep = ctx->input(1);
    RN_RETURN_IF_ERROR(CheckMaskedSoftmax(x.shape(), keep.shape()));
    RN_ASSIGN_OR_RETURN(Tensor * y, ctx->allocate_output(0, x.shape()));
    if (x.num_elements() == 0) return absl::OkStatus();
    const int64_t len = x.dim(x.rank() - 1);
    RN_ASSIGN_OR_RETURN(Launch l, Prepare(ctx, x));
    RN_CUDA(cuda::LaunchSoftmax(
        l.type, false, x.raw_data(), y->raw_data(), x.num_elements() / len, len,
        1, l.gpu->compute(), static_cast<const bool*>(keep.raw_data()),
        keep.num_elements() / len));
    return absl::OkStatus();
  }
};

// softmax_grad(dy, y) along the last axis.
class SoftmaxGradKernel : public OpKernel {
 public:
  absl::Status Compute(OpKernelContext* ctx) override {
    const Tensor& dy = ctx->input(0);
    const Tensor& y = ctx->input(1);
    RN_RETURN_IF_ERROR(CheckSoftmaxGrad(dy, y));
    RN_ASSIGN_OR_RETURN(Tensor * dx, ctx->allocate_output(0, y.shape()));
    if (y.num_elements() == 0) return absl::OkStatus();
    const int64_t len = y.dim(y.rank() - 1);
    RN_ASSIGN_OR_RETURN(Launch l, Prepare(ctx, y));
    RN_CUDA(cuda::LaunchSoftmaxGrad(l.type, dy.raw_data(), y.raw_data(),
                                    dx->raw_data(), y.num_elements() / len, len,
                                    l.gpu->compute()));
    return absl::OkStatus();
  }
};

// The fused recurrent cells (kernels/cpu/rnn_kernels.cc).
class LstmCellKernel : public OpKernel {
 public:
  absl::Status Compute(OpKernelContext* ctx) override {
    const Tensor& gates = ctx->input(0);
    const Tensor& c = ctx->input(1);
    RN_ASSIGN_OR_RETURN(const CellRows r,
                        CheckCellInputs(ctx->node().op(), gates, c, 4, {}, {}));
    RN_ASSIGN_OR_RETURN(Tensor * h, ctx->allocate_output(0, c.shape()));
    RN_ASSIGN_OR_RETURN(Tensor * c_next, ctx->allocate_output(1, c.shape()));
    RN_ASSIGN_OR_RETURN(Launch l, Prepare(ctx, c));
    RN_CUDA(cuda::LaunchLstmCell(l.type, gates.raw_data(), c.raw_data(),
                                 h->raw_data(), c_next->raw_data(), r.rows,
                                 r.units, l.gpu->compute()));
    return absl::OkStatus();
  }
};

class LstmCellGradKernel : public OpKernel {
 public:
  absl::Status Compute(OpKernelContext* ctx) override {
    const Tensor& gates = ctx->input(0);
    const Tensor& c = ctx->input(1);
    const Tensor& dh = ctx->input(2);
    const Tensor& dc_next = ctx->input(3);
    RN_ASSIGN_OR_RETURN(
        const CellRows r,
        CheckCellInputs(ctx->node().op(), gates, c, 4, {}, {&dh, &dc_next}));
    RN_ASSIGN_OR_RETURN(Tensor * dgates,
                        ctx->allocate_output(0, gates.shape()));
    RN_ASSIGN_OR_RETURN(Tensor * dc, ctx->allocate_output(1, c.shape()));
    RN_ASSIGN_OR_RETURN(Launch l, Prepare(ctx, c));
    RN_CUDA(cuda::LaunchLstmCellGrad(l.type, gates.raw_data(), c.raw_data(),
                                     dh.raw_data(), dc_next.raw_data(),
                                     dgates->raw_data(), dc->raw_data(), r.rows,
                                     r.units, l.gpu->compute()));
    return absl::OkStatus();
  }
};

class GruCellKernel : public OpKernel {
 public:
  absl::Status Compute(OpKernelContext* ctx) override {
    const Tensor& x = ctx->input(0);
    const Tensor& hh = ctx->input(1);
    const Tensor& h = ctx->input(2);
    RN_ASSIGN_OR_RETURN(const CellRows r,
                        CheckCellInputs(ctx->node().op(), x, h, 3, {&hh}, {}));
    RN_ASSIGN_OR_RETURN(Tensor * out, ctx->allocate_output(0, h.shape()));
    RN_ASSIGN_OR_RETURN(Launch l, Prepare(ctx, h));
    RN_CUDA(cuda::LaunchGruCell(l.type, x.raw_data(), hh.raw_data(),
                                h.raw_data(), out->raw_data(), r.rows, r.units,
                                l.gpu->compute()));
    return absl::OkStatus();
  }
};

class GruCellGradKernel : public OpKernel {
 public:
  absl::Status Compute(OpKernelContext* ctx) override {
    const Tensor& x = ctx->input(0);
    const Tensor& hh = ctx->input(1);
    const Tensor& h = ctx->input(2);
    const Tensor& dh_next = ctx->input(3);
    RN_ASSIGN_OR_RETURN(
        const CellRows r,
        CheckCellInputs(ctx->node().op(), x, h, 3, {&hh}, {&dh_next}));
    RN_ASSIGN_OR_RETURN(Tensor * dx, ctx->allocate_output(0, x.shape()));
    RN_ASSIGN_OR_RETURN(Tensor * dhh, ctx->allocate_output(1, x.shape()));
    RN_ASSIGN_OR_RETURN(Tensor * dh, ctx->allocate_output(2, h.shape()));
    RN_ASSIGN_OR_RETURN(Launch l, Prepare(ctx, h));
    RN_CUDA(cuda::LaunchGruCellGrad(
        l.type, x.raw_data(), hh.raw_data(), h.raw_data(), dh_next.raw_data(),
        dx->raw_data(), dhh->raw_data(), dh->raw_data(), r.rows, r.units,
        l.gpu->compute()));
    return absl::OkStatus();
  }
};

// layer_norm(x, scale, offset) over the last axis (kernels/cpu/nn_kernels.cc).
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
    if (x.num_elements() == 0) return absl::OkStatus();
    const int64_t n = x.dim(x.rank() - 1);
    RN_ASSIGN_OR_RETURN(Launch l, Prepare(ctx, x));
    RN_CUDA(cuda::LaunchLayerNorm(
        l.type, x.raw_data(), ctx->input(1).raw_data(),
        ctx->input(2).raw_data(), y->raw_data(), mean->raw_data(),
        rstd->raw_data(), x.num_elements() / n, n, eps(), l.gpu->compute()));
    return absl::OkStatus();
  }
};

// layer_norm_grad(dy, x, scale, mean, rstd) -> dx, dscale, doffset.
class LayerNormGradKernel : public OpKernel {
 public:
  absl::Status Compute(OpKernelContext* ctx) override {
    const Tensor& dy = ctx->input(0);
    const Tensor& x = ctx->input(1);
    const Tensor& scale = ctx->input(2);
    RN_RETURN_IF_ERROR(CheckLayerNormGrad(dy.shape(), x.shape(), scale.shape(),
                                          ctx->input(3).shape(),
                                          ctx->input(4).shape()));
    RN_ASSIGN_OR_RETURN(const NormTensors outs,
                        AllocateNormOutputs(ctx, x.shape(), scale.shape()));
    Tensor *dx = outs.full, *dscale = outs.first, *doffset = outs.second;
    const int64_t n = x.dim(x.rank() - 1);
    if (n == 0) return absl::OkStatus();
    const int64_t rows = x.num_elements() / n;
    RN_ASSIGN_OR_RETURN(Launch l, Prepare(ctx, x));
    cudaStream_t stream = l.gpu->compute();
    if (rows == 0) {
      RN_CUDA(cudaMemsetAsync(dscale->raw_data(), 0, dscale->bytes(), stream));
      RN_CUDA(
          cudaMemsetAsync(doffset->raw_data(), 0, doffset->bytes(), stream));
      return absl::OkStatus();
    }
    RN_CUDA(cuda::LaunchLayerNormGrad(
        l.type, dy.raw_data(), x.raw_data(), scale.raw_data(),
        ctx->input(3).raw_data(), ctx->input(4).raw_data(), dx->raw_data(),
        dscale->raw_data(), doffset->raw_data(), rows, n, stream));
    return absl::OkStatus();
  }
};

// A scratch buffer of `n` elements of the statistics' dtype for x's.
Tensor StatsScratch(OpKernelContext* ctx, DType x, int64_t n) {
  return Tensor(LayerNormStatsDType(x), Shape{n}, ctx->device()->allocator());
}

// batch_norm(x, scale, offset) (kernels/cpu/nn_kernels.cc).
class BatchNormKernel : public EpsKernel {
 public:
  absl::Status Compute(OpKernelContext* ctx) override {
    const Tensor& x = ctx->input(0);
    const Tensor& scale = ctx->input(1);
    RN_RETURN_IF_ERROR(
        CheckLayerNorm(x.shape(), scale.shape(), ctx->input(2).shape()));
    RN_RETURN_IF_ERROR(CheckBatchRows(ctx->node().op(), x));
    RN_ASSIGN_OR_RETURN(const NormTensors outs,
                        AllocateNormOutputs(ctx, x.shape(), scale.shape()));
    Tensor *y = outs.full, *mean = outs.first, *var = outs.second;
    const int64_t c = x.dim(x.rank() - 1);
    if (c == 0) return absl::OkStatus();
    const int64_t rows = x.num_elements() / c;
    RN_ASSIGN_OR_RETURN(Launch l, Prepare(ctx, x));
    Tensor scratch =
        StatsScratch(ctx, x.dtype(), cuda::BatchNormScratch(rows, c));
    RN_CUDA(cuda::LaunchBatchNorm(
        l.type, x.raw_data(), scale.raw_data(), ctx->input(2).raw_data(),
        y->raw_data(), mean->raw_data(), var->raw_data(), scratch.raw_data(),
        rows, c, eps(), l.gpu->compute()));
    return absl::OkStatus();
  }
};

// batch_norm_grad(dy, x, scale, mean, variance) -> dx, dscale, doffset.
class BatchNormGradKernel : public EpsKernel {
 public:
  absl::Status Compute(OpKernelContext* ctx) override {
    const Tensor& dy = ctx->input(0);
    const Tensor& x = ctx->input(1);
    const Tensor& scale = ctx->input(2);
    RN_RETURN_IF_ERROR(CheckBatchNormGrad(ctx->node().op(), dy, x, scale,
                                          ctx->input(3), ctx->input(4)));
    RN_ASSIGN_OR_RETURN(const NormTensors outs,
                        AllocateNormOutputs(ctx, x.shape(), scale.shape()));
    Tensor *dx = outs.full, *dscale = outs.first, *doffset = outs.second;
    const int64_t c = x.dim(x.rank() - 1);
    if (c == 0) return absl::OkStatus();
    const int64_t rows = x.num_elements() / c;
    RN_ASSIGN_OR_RETURN(Launch l, Prepare(ctx, x));
    Tensor scratch =
        StatsScratch(ctx, x.dtype(), cuda::BatchNormScratch(rows, c));
    RN_CUDA(cuda::LaunchBatchNormGrad(
        l.type, dy.raw_data(), x.raw_data(), scale.raw_data(),
        ctx->input(3).raw_data(), ctx->input(4).raw_data(), dx->raw_data(),
        dscale->raw_data(), doffset->raw_data(), scratch.raw_data(), rows, c,
        eps(), l.gpu->compute()));
    return absl::OkStatus();
  }
};

class SoftmaxCrossEntropyKernel : public OpKernel {
 public:
  absl::Status Compute(OpKernelContext* ctx) override {
    const Tensor& logits = ctx->input(0);
    const Tensor& probs = ctx->input(1);
    RN_ASSIGN_OR_RETURN(Shape shape,
                        SoftmaxCrossEntropyLossShape(logits, probs));
    RN_ASSIGN_OR_RETURN(Tensor * loss, ctx->allocate_output(0, shape));
    RN_ASSIGN_OR_RETURN(Launch l, Prepare(ctx, logits));
    RN_CUDA(cuda::LaunchSoftmaxCrossEntropy(
        l.type, logits.raw_data(), probs.raw_data(), loss->raw_data(),
        loss->num_elements(), logits.dim(logits.rank() - 1), l.gpu->compute()));
    return absl::OkStatus();
  }
};

class SparseSoftmaxCrossEntropyKernel : public OpKernel {
 public:
  absl::Status Compute(OpKernelContext* ctx) override {
    const Tensor& logits = ctx->input(0);
    const Tensor& labels = ctx->input(1);
    RN_ASSIGN_OR_RETURN(Shape shape,
                        SparseSoftmaxCrossEntropyLossShape(logits, labels));
    RN_ASSIGN_OR_RETURN(Tensor * loss, ctx->allocate_output(0, shape));
    const int64_t rows = loss->num_elements();
    if (rows == 0) return absl::OkStatus();
    const int64_t classes = logits.dim(logits.rank() - 1);
    RN_ASSIGN_OR_RETURN(Launch l, Prepare(ctx, logits));
    cudaStream_t stream = l.gpu->compute();
    Tensor mark(DType::kI64, Shape{1}, ctx->device()->allocator());
    auto* first_bad = static_cast<unsigned long long*>(mark.raw_data());
    RN_CUDA(cudaMemsetAsync(first_bad, 0xff, sizeof(*first_bad), stream));
    const bool i64 = labels.dtype() == DType::kI64;
    RN_CUDA(cuda::LaunchSparseSoftmaxCrossEntropy(
        l.type, i64, logits.raw_data(), labels.raw_data(), loss->raw_data(),
        rows, classes, first_bad, stream));
    unsigned long long bad = 0;
    RN_CUDA(cudaMemcpyAsync(&bad, first_bad, sizeof(bad),
                            cudaMemcpyDeviceToHost, stream));
    RN_CUDA(cudaStreamSynchronize(stream));
    if (bad == std::numeric_limits<unsigned long long>::max()) {
      return absl::OkStatus();
    }
    const int64_t r = static_cast<int64_t>(bad);
    int64_t label = 0;
    if (i64) {
      RN_CUDA(cudaMemcpy(&label, labels.data<int64_t>() + r, sizeof(label),
                         cudaMemcpyDeviceToHost));
    } else {
      int32_t label32 = 0;
      RN_CUDA(cudaMemcpy(&label32, labels.data<int32_t>() + r, sizeof(label32),
                         cudaMemcpyDeviceToHost));
      label = label32;
    }
    return LabelOutOfRange(label, r, classes);
  }
};

// bias_add(x, bias): x [..., c] + bias [c], as the add template's
// broadcast.
class BiasAddKernel : public OpKernel {
 public:
  absl::Status Compute(OpKernelContext* ctx) override {
    const Tensor& x = ctx->input(0);
    const Tensor& bias = ctx->input(1);
    RN_RETURN_IF_ERROR(CheckBiasAdd(x, bias));
    RN_ASSIGN_OR_RETURN(Tensor * y, ctx->allocate_output(0, x.shape()));
    if (x.num_elements() == 0) return absl::OkStatus();
    const int64_t cols = bias.dim(0);
    cuda::Broadcast bc;
    bc.rank = 2;
    bc.dims[0] = x.num_elements() / cols;
    bc.dims[1] = cols;
    bc.a_strides[0] = cols;
    bc.a_strides[1] = 1;
    bc.b_strides[0] = 0;
    bc.b_strides[1] = 1;
    RN_ASSIGN_OR_RETURN(Launch l, Prepare(ctx, x));
    RN_CUDA(cuda::LaunchBinary(BinaryOp::kAdd, l.type, x.raw_data(),
                               bias.raw_data(), y->raw_data(), x.num_elements(),
                               &bc, l.gpu->compute()));
    return absl::OkStatus();
  }
};

// An element-wise op of two inputs of one shape: the gradient ops and
// sigmoid_cross_entropy, checked as on the CPU.
template <BinaryOp kOp>
class SameShapeKernel : public OpKernel {
 public:
  absl::Status Compute(OpKernelContext* ctx) override {
    const Tensor& a = ctx->input(0);
    const Tensor& b = ctx->input(1);
    RN_RETURN_IF_ERROR(kOp == BinaryOp::kSigmoidCrossEntropy
                           ? CheckSigmoidCrossEntropy(a, b)
                           : CheckSameShapes(ctx->node().op(), a, b));
    RN_ASSIGN_OR_RETURN(Tensor * out, ctx->allocate_output(0, a.shape()));
    RN_ASSIGN_OR_RETURN(Launch l, Prepare(ctx, a));
    RN_CUDA(cuda::LaunchBinary(kOp, l.type, a.raw_data(), b.raw_data(),
                               out->raw_data(), a.num_elements(), nullptr,
                               l.gpu->compute()));
    return absl::OkStatus();
  }
};

// scaled_dot_product_attention and its gradient (attention.h): the plan and
// the factor of the scores as on the CPU, the batch's offsets uploaded.
class AttentionBase : public OpKernel {
 public:
  absl::Status Init(const Node& node) override {
    RN_ASSIGN_OR_RETURN(attrs_, AttentionAttrs::Of(node));
    return absl::OkStatus();
  }

 protected:
  // The plan, the launch's arguments (the offsets they point to held in
  // `offsets`, on the GPU), and the node's context made current.
  struct Prepared {
    AttentionPlan plan;
    cuda::AttentionArgs args;
    Tensor offsets;
    Launch launch;
  };
  absl::StatusOr<Prepared> Prepare(OpKernelContext* ctx) const {
    Prepared p;
    const Tensor& q = ctx->input(0);
    const Tensor& keep = ctx->input(3);
    RN_ASSIGN_OR_RETURN(p.plan, PlanAttention(q.shape(), ctx->input(1).shape(),
                                              ctx->input(2).shape(),
                                              keep.shape(), attrs_.bthd));
    RN_ASSIGN_OR_RETURN(p.launch, runnel::Prepare(ctx, q));
    const int64_t limit = cuda::AttentionMaxLength(p.launch.type);
    if (p.plan.tq > limit || p.plan.tk > limit) {
      return absl::UnimplementedError(
          StrCat(ctx->node().op(), " on the GPU takes at most ", limit,
                 " queries and keys (a block's shared memory); got ", p.plan.tq,
                 " and ", p.plan.tk));
    }
    const int64_t count = static_cast<int64_t>(p.plan.q_offsets.size());
    std::vector<int64_t> host = p.plan.q_offsets;
    host.insert(host.end(), p.plan.k_offsets.begin(), p.plan.k_offsets.end());
    host.insert(host.end(), p.plan.v_offsets.begin(), p.plan.v_offsets.end());
    RN_ASSIGN_OR_RETURN(
        p.offsets,
        GpuScratch(ctx, DType::kI64, Shape{std::max<int64_t>(3 * count, 1)}));
    if (count > 0) {
      RN_CUDA(cudaMemcpyAsync(p.offsets.raw_data(), host.data(),
                              host.size() * sizeof(int64_t),
                              cudaMemcpyHostToDevice, p.launch.gpu->compute()));
    }
    const int64_t* off = p.offsets.data<int64_t>();
    p.args = {.count = count,
              .tq = p.plan.tq,
              .tk = p.plan.tk,
              .d = p.plan.d,
              .dv = p.plan.dv,
              .keep_lines = p.plan.keep_lines,
              .q_stride = p.plan.q_stride,
              .k_stride = p.plan.k_stride,
              .v_stride = p.plan.v_stride,
              .heads = p.plan.heads,
              .scale = attrs_.ScoreFactor(p.plan.d),
              .q_off = off,
              .k_off = off + count,
              .v_off = off + 2 * count,
              .keep = keep.data<bool>()};
    return p;
  }

 private:
  AttentionAttrs attrs_;
};

class AttentionKernel : public AttentionBase {
 public:
  absl::Status Compute(OpKernelContext* ctx) override {
    RN_ASSIGN_OR_RETURN(const Prepared p, Prepare(ctx));
    RN_ASSIGN_OR_RETURN(Tensor * out, ctx->allocate_output(0, p.plan.out));
    if (out->num_elements() == 0) return absl::OkStatus();
    RN_CUDA(cuda::LaunchAttention(
        p.launch.type, p.args, ctx->input(0).raw_data(),
        ctx->input(1).raw_data(), ctx->input(2).raw_data(), out->raw_data(),
        p.launch.gpu->compute()));
    return absl::OkStatus();
  }
};

class AttentionGradKernel : public AttentionBase {
 public:
  absl::Status Compute(OpKernelContext* ctx) override {
    RN_ASSIGN_OR_RETURN(const Prepared p, Prepare(ctx));
    const Tensor& dout = ctx->input(4);
    RN_RETURN_IF_ERROR(CheckAttentionGrad(p.plan.out, dout.shape()));
    Tensor* grads[3];
    for (int i = 0; i < 3; ++i) {
      RN_ASSIGN_OR_RETURN(grads[i],
                          ctx->allocate_output(i, p.plan.GradShape(i)));
      // Zeros first: the launch writes nothing without keys or queries.
      if (grads[i]->bytes() > 0) {
        RN_CUDA(cudaMemsetAsync(grads[i]->raw_data(), 0, grads[i]->bytes(),
                                p.launch.gpu->compute()));
      }
    }
    const cuda::AttentionArgs& a = p.args;
    if (a.count * a.tq * a.tk == 0) return absl::OkStatus();
    RN_ASSIGN_OR_RETURN(Tensor rows, GpuScratch(ctx, ctx->input(0).dtype(),
                                                Shape{3 * a.count * a.tq}));
    RN_CUDA(cuda::LaunchAttentionGrad(
        p.launch.type, a, ctx->input(0).raw_data(), ctx->input(1).raw_data(),
        ctx->input(2).raw_data(), dout.raw_data(), grads[0]->raw_data(),
        grads[1]->raw_data(), grads[2]->raw_data(), rows.raw_data(),
        p.launch.gpu->compute()));
    return absl::OkStatus();
  }
};

const std::vector<DType> kFloats = {DType::kF32, DType::kF64, DType::kF16,
                                    DType::kBF16};
const std::vector<DType> kNumbers = {DType::kF32, DType::kF64, DType::kI32,
                                     DType::kI64, DType::kF16, DType::kBF16};

template <class K>
void Register(const std::string& op, const std::vector<DType>& dtypes) {
  for (DType d : dtypes) RegisterKernel<K>(op, kDeviceGpu, d);
}

RUNNEL_STATIC_INIT(GpuNnKernels) {
  Register<SoftmaxKernel<false>>("softmax", kFloats);
  Register<MaskedSoftmaxKernel>("masked_softmax", kFloats);
  Register<AttentionKernel>("scaled_dot_product_attention",
                            {DType::kF32, DType::kF64});
  Register<AttentionGradKernel>("scaled_dot_product_attention_grad",
                                {DType::kF32, DType::kF64});
  Register<SoftmaxGradKernel>("softmax_grad", kFloats);
  Register<LayerNormKernel>("layer_norm", kFloats);
  Register<LstmCellKernel>("lstm_cell", kFloats);
  Register<LstmCellGradKernel>("lstm_cell_grad", kFloats);
  Register<GruCellKernel>("gru_cell", kFloats);
  Register<GruCellGradKernel>("gru_cell_grad", kFloats);
  Register<LayerNormGradKernel>("layer_norm_grad", kFloats);
  Register<BatchNormKernel>("batch_norm", kFloats);
  Register<BatchNormGradKernel>("batch_norm_grad", kFloats);
  Register<CumsumKernel>("cumsum", kNumbers);
  Register<SoftmaxKernel<true>>("log_softmax", kFloats);
  Register<SoftmaxCrossEntropyKernel>("softmax_cross_entropy", kFloats);
  Register<SparseSoftmaxCrossEntropyKernel>("sparse_softmax_cross_entropy",
                                            kFloats);
  Register<SameShapeKernel<BinaryOp::kSigmoidCrossEntropy>>(
      "sigmoid_cross_entropy", kFloats);
  Register<BiasAddKernel>("bias_add", kNumbers);
  Register<SameShapeKernel<BinaryOp::kReluGrad>>("relu_grad", kNumbers);
  Register<SameShapeKernel<BinaryOp::kGeluGrad>>("gelu_grad", kFloats);
  Register<SameShapeKernel<BinaryOp::kSigmoidGrad>>("sigmoid_grad", kFloats);
  Register<SameShapeKernel<BinaryOp::kTanhGrad>>("tanh_grad", kFloats);
}

}  // namespace
}  // namespace runnel
