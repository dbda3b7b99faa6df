// Run-time checks and output shapes that an op's kernels share across
// devices (kernels/cpu, kernels/cuda), so that a CPU and a GPU kernel of one
// op refuse the same inputs with the same message. The shape functions
// (framework/ops/*.cc) check what is known before a run; these check the
// values' actual shapes.
#ifndef RUNNEL_FRAMEWORK_OPS_KERNEL_CHECKS_H_
#define RUNNEL_FRAMEWORK_OPS_KERNEL_CHECKS_H_

#include <cstdint>
#include <initializer_list>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "framework/kernel.h"
#include "framework/shape.h"
#include "framework/shape_fns.h"
#include "framework/tensor.h"

namespace runnel {

// Element-wise ops of two inputs of one shape (relu_grad, sigmoid_grad,
// tanh_grad): "op: shapes differ: ...".
absl::Status CheckSameShapes(std::string_view op, const Tensor& a,
                             const Tensor& b);

// dropout's rate, in [0, 1): "rate must be in [0, 1), got 1.5".
absl::Status CheckDropoutRate(double rate);

// bias_add(x, bias): bias is 1-D and as long as x's last dimension.
absl::Status CheckBiasAdd(const Tensor& x, const Tensor& bias);

// masked_softmax(logits, keep): logits of rank 1 or more, and keep's dims
// the logits' last ones (it repeats over the leading), at least the last. Dims
// unknown (-1) in either pass, so that the shape function checks what is known
// before a run.
absl::Status CheckMaskedSoftmax(const Shape& logits, const Shape& keep);

// scaled_dot_product_attention(q, k, v, keep): q [..., tq, d], k [..., tk,
// d] and v [..., tk, dv] of one rank (2 or more) whose batch dims
// broadcast; keep (bool) a scalar, or the last dims of the scores [batch...,
// tq, tk], at least the last (repeated over the leading ones, as
// masked_softmax's). Returns the output's shape [batch..., tq, dv]. Unknown
// dims (-1) and ranks pass, as in CheckMaskedSoftmax. With `bthd` (the
// layout "bthd") each operand's heads are inside its time steps: q [...,
// tq, heads, d], k [..., tk, heads, d], v [..., tk, heads, dv] (rank 3 or
// more; the heads broadcast as a batch dim), the output [batch..., tq,
// heads, dv]; the mask is the scores' as above.
absl::StatusOr<Shape> AttentionShape(const Shape& q, const Shape& k,
                                     const Shape& v, const Shape& keep,
                                     bool bthd = false);

// scaled_dot_product_attention's attributes (and its gradient's), and the
// factor of the scores q k^T they give for a depth d: `scale`, times
// 1 / sqrt(d) with `rsqrt_d` (and d > 0; the scores are 0 when d is 0);
// `layout` "bhtd" (the default) or "bthd" (AttentionShape).
struct AttentionAttrs {
  double scale = 1.0;
  bool rsqrt_d = true;
  bool bthd = false;
  static absl::StatusOr<AttentionAttrs> Of(const AttrMap& attrs);
  static absl::StatusOr<AttentionAttrs> Of(const Node& node);
  double ScoreFactor(int64_t d) const;
};

// The attention kernels' geometry for actual shapes: the batch's matrices
// of q, k and v (element offsets of their first rows, broadcast, and the
// elements from one row to the next), and the mask's lines of tk (0 for a
// scalar mask). The outputs (out, and the gradients dq, dk, dv) have the
// broadcast batch; OutOffset and OutStride place their matrices.
struct AttentionPlan {
  int64_t tq = 0, tk = 0, d = 0, dv = 0;
  Shape out;  // [batch..., tq, dv], or [batch..., tq, heads, dv] with bthd
  std::vector<int64_t> q_offsets, k_offsets, v_offsets;
  int64_t q_stride = 0, k_stride = 0, v_stride = 0;
  int64_t keep_lines = 0;
  bool bthd = false;  // the layout bthd
  // With bthd, the output's heads (its batch's last dim); else 0.
  int64_t heads = 0;
  std::vector<int64_t> batch;  // the outputs' batch dims (heads last)
  // [batch..., rows, cols], or [batch'..., rows, heads, cols] with bthd.
  Shape Batched(int64_t rows, int64_t cols) const;
  // The gradient's output i: dq (tq rows of d), dk (tk of d) or dv (tk of
  // dv).
  Shape GradShape(int i) const;
  // Where matrix m of an output of `rows` rows of `cols` starts, and the
  // elements from one of its rows to the next.
  int64_t OutOffset(int64_t m, int64_t rows, int64_t cols) const {
    return heads > 0 ? (m / heads) * rows * heads * cols + (m % heads) * cols
                     : m * rows * cols;
  }
  int64_t OutStride(int64_t cols) const {
    return heads > 0 ? heads * cols : cols;
  }
};
absl::StatusOr<AttentionPlan> PlanAttention(const Shape& q, const Shape& k,
                                            const Shape& v, const Shape& keep,
                                            bool bthd = false);
// The gradient's dout: the output's shape `out` (unknown dims pass).
absl::Status CheckAttentionGrad(const Shape& out, const Shape& dout);
// The gradient's outputs for q, k and v of known ranks (their dims may be
// unknown): dq [batch..., tq, d], dk [batch..., tk, d], dv [batch..., tk,
// dv], batch being the output's (with bthd, the heads inside, as
// AttentionShape's).
absl::StatusOr<AttentionPlan> AttentionGradPlan(const Shape& q, const Shape& k,
                                                const Shape& v,
                                                const Shape& keep,
                                                bool bthd = false);

// layer_norm(x, scale, offset): x of rank 1 or more, scale and offset 1-D
// and as long as x's last dimension. layer_norm_grad(dy, x, scale, mean,
// rstd) also: dy of x's shape, mean and rstd of x's shape without its last
// dimension. Unknown dims (-1) and ranks pass, as in CheckMaskedSoftmax.
absl::Status CheckLayerNorm(const Shape& x, const Shape& scale,
                            const Shape& offset);
absl::Status CheckLayerNormGrad(const Shape& dy, const Shape& x,
                                const Shape& scale, const Shape& mean,
                                const Shape& rstd);

// lstm_cell(gates, c) and gru_cell(x, hh, h): the gates [..., k * units]
// (k = 4 for lstm_cell's (i, f, g, o), 3 for gru_cell's (r, z, n)) and the
// state [..., units], of one rank (1 or more) and the same leading
// dimensions. Unknown dims and ranks pass.
absl::Status CheckRecurrentCell(const Shape& gates, const Shape& state, int k);
// A cell kernel's inputs: CheckRecurrentCell of the gates and the state,
// and every tensor of `like_gates` (`like_state`) of the gates' (state's)
// shape. Returns the state's rows and units (its last dimension).
struct CellRows {
  int64_t rows = 0, units = 0;
};
absl::StatusOr<CellRows> CheckCellInputs(
    std::string_view op, const Tensor& gates, const Tensor& state, int k,
    std::initializer_list<const Tensor*> like_gates,
    std::initializer_list<const Tensor*> like_state);

// lstm_sequence(z, h0, c0, w_h): z [time, batch, 4 * units], h0 and c0
// [batch, units], w_h [units, 4 * units]. Returns the time, batch and units
// the shapes agree on (kUnknownDim where none tells); unknown dims and
// ranks pass.
struct LstmSequenceDims {
  int64_t time = kUnknownDim, batch = kUnknownDim, units = kUnknownDim;
};
absl::StatusOr<LstmSequenceDims> CheckLstmSequence(const Shape& z,
                                                   const Shape& h0,
                                                   const Shape& c0,
                                                   const Shape& w_h);
// lstm_sequence_grad: CheckLstmSequence(gates, h0, c0, w_h), each of
// `steps` (cs, hs and dhs) [time, batch, units] and each of `finals` (dh,
// dc) [batch, units].
absl::StatusOr<LstmSequenceDims> CheckLstmSequenceGrad(
    const Shape& gates, const Shape& h0, const Shape& c0, const Shape& w_h,
    std::initializer_list<const Shape*> steps,
    std::initializer_list<const Shape*> finals);
// lstm_sequence's optional `lengths` (input `at`): i32 [batch], or
// nothing. A row's steps at and past its length leave its state as it was.
absl::Status CheckSequenceLengths(const ShapeContext& c, int at, int64_t batch);
// lstm_sequence's bias, input 4 when its attribute `bias` is true (the
// lengths then follow it): f32 [4 * units]. Returns where the lengths
// would be (4 or 5).
absl::StatusOr<int> CheckSequenceBias(const ShapeContext& c, int64_t units);

// The kernels' inputs of lstm_sequence (z, h0, c0, w_h[, b][, lengths]),
// checked, and their outputs (hs, h, c, cs, gates) allocated; the same for
// lstm_sequence_grad's (gates, cs, hs, h0, c0, w_h, dhs, dh, dc[,
// lengths]) and (dz, dh0, dc0, dw_h, db). Every device's kernels take them
// so. `b` and `lengths` are nullptr without them.
struct LstmSequenceArgs {
  LstmSequenceDims dims;
  const Tensor *z, *h0, *c0, *w_h, *b, *lengths;
  Tensor *hs, *h, *c, *cs, *gates;
};
absl::StatusOr<LstmSequenceArgs> PrepareLstmSequence(OpKernelContext* ctx);
// The input at which a lstm_sequence node's lengths would be: after its
// bias, if it has one (for the kernels that take them in host memory).
int SequenceLengthsInput(const AttrMap& attrs);
struct LstmSequenceGradArgs {
  LstmSequenceDims dims;
  const Tensor *gates, *cs, *hs, *h0, *c0, *w_h, *dhs, *dh, *dc, *lengths;
  Tensor *dz, *dh0, *dc0, *dw_h, *db;
};
absl::StatusOr<LstmSequenceGradArgs> PrepareLstmSequenceGrad(
    OpKernelContext* ctx);

// The dtype of layer_norm's mean and reciprocal standard deviation: f32
// for the 16-bit floats (the kernels compute in f32), else x's; their
// shape: x's without its last dimension (unknown rank stays unknown).
DType LayerNormStatsDType(DType x);
Shape LayerNormStatsShape(const Shape& x);

// batch_norm's x: at least one row (element per channel) when it has
// channels.
absl::Status CheckBatchRows(std::string_view op, const Tensor& x);
// batch_norm_grad(dy, x, scale, mean, variance): dy of x's shape, the rest
// as long as x's channels, and rows in x.
absl::Status CheckBatchNormGrad(std::string_view op, const Tensor& dy,
                                const Tensor& x, const Tensor& scale,
                                const Tensor& mean, const Tensor& variance);

// softmax_grad(dy, y): one shape, of rank 1 or more.
absl::Status CheckSoftmaxGrad(const Tensor& dy, const Tensor& y);

// The loss's shape (the logits' without their last dimension) of
// softmax_cross_entropy(logits, probs) and sigmoid_cross_entropy's check
// (logits and labels of one shape, the loss theirs).
absl::StatusOr<Shape> SoftmaxCrossEntropyLossShape(const Tensor& logits,
                                                   const Tensor& probs);
absl::Status CheckSigmoidCrossEntropy(const Tensor& logits,
                                      const Tensor& labels);

// sparse_softmax_cross_entropy(logits, labels): labels i32 or i64 of the
// loss's shape, which is returned. A label outside [0, classes) is
// LabelOutOfRange, naming the first (at `index` in row-major order).
absl::StatusOr<Shape> SparseSoftmaxCrossEntropyLossShape(const Tensor& logits,
                                                         const Tensor& labels);
absl::Status LabelOutOfRange(int64_t label, int64_t index, int64_t classes);

// sum_to_like(dy, x): the axes of dy summed to give x's shape `like` (the
// leading axes x lacks, and those where x has size 1 and dy not).
std::vector<int> SumToLikeAxes(const Shape& dy, const Shape& like);

// The reductions without an identity (max, min, argmax, argmin) of an empty
// dimension.
absl::Status EmptyReductionError(std::string_view op, const Tensor& x);

// The kernels of matmul and matmul_add on every device: the transpose
// attributes, read once.
class MatMulAttrsKernel : public OpKernel {
 public:
  absl::Status Init(const Node& node) override;

 protected:
  bool ta_ = false;
  bool tb_ = false;
};

// matmul_add(acc, a, b): the product's plan, when a and b are matrices and
// acc has the product's shape.
absl::StatusOr<MatMulPlan> PlanMatMulAdd(const Tensor& acc, const Tensor& a,
                                         const Tensor& b, bool ta, bool tb);

}  // namespace runnel

#endif  // RUNNEL_FRAMEWORK_OPS_KERNEL_CHECKS_H_
