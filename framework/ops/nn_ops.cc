// Linear algebra and neural-network ops: matmul, softmax and the
// cross-entropy losses, conv2d, pooling and their gradients, bias_add and
// l2_loss. Kernels live in kernels/cpu/{matmul,conv,nn}_kernels.cc.
//
// Layouts follow TensorFlow: images are NHWC, conv2d filters HWIO, and
// "same" padding pads so that the output has ceil(input / stride) positions,
// with the odd padding element at the bottom/right.
#include <string>
#include <vector>

#include "base/status_macros.h"
#include "base/strings.h"
#include "framework/op_registry.h"
#include "framework/ops/kernel_checks.h"
#include "framework/shape_fns.h"
#include "framework/window.h"

namespace runnel {
namespace {

bool IsMatMulType(DType d) {
  return IsFloating(d) || d == DType::kI32 || d == DType::kI64;
}

absl::Status RequireFloating(const ShapeContext& c, int i) {
  if (!IsFloating(c.dtype(i))) {
    return absl::InvalidArgumentError(StrCat(
        "expected a floating-point tensor, got ", c.input(i).ToString()));
  }
  return absl::OkStatus();
}

absl::Status RequireRank(const ShapeContext& c, int i, int rank,
                         std::string_view what) {
  const Shape& s = c.shape(i);
  if (!s.unknown_rank() && s.rank() != rank) {
    return absl::InvalidArgumentError(StrCat(what, " must have rank ", rank,
                                             ", got ", c.input(i).ToString()));
  }
  return absl::OkStatus();
}

absl::Status RequireMinRank(const ShapeContext& c, int i, int rank,
                            std::string_view what) {
  const Shape& s = c.shape(i);
  if (!s.unknown_rank() && s.rank() < rank) {
    return absl::InvalidArgumentError(StrCat(what, " must have rank >= ", rank,
                                             ", got ", c.input(i).ToString()));
  }
  return absl::OkStatus();
}

// The shape without its last dimension (the per-example shape of a loss).
Shape DropLastDim(const Shape& s) {
  if (s.unknown_rank()) return Shape::UnknownRank();
  std::vector<int64_t> dims = s.dims();
  dims.pop_back();
  return Shape(std::move(dims));
}

// A dimension known in at least one of two compatible shapes.
int64_t MergeDim(int64_t a, int64_t b) { return a >= 0 ? a : b; }

// ---- matmul
// ------------------------------------------------------------------

Specs MatMulShape(const ShapeContext& c) {
  RN_RETURN_IF_ERROR(SameDTypes(c, 0, 1));
  if (!IsMatMulType(c.dtype(0))) {
    return absl::InvalidArgumentError(
        StrCat("expected f16, bf16, f32, f64, i32 or i64 tensors, got ",
               c.input(0).ToString()));
  }
  RN_RETURN_IF_ERROR(RequireMinRank(c, 0, 2, "the left operand"));
  RN_RETURN_IF_ERROR(RequireMinRank(c, 1, 2, "the right operand"));
  RN_ASSIGN_OR_RETURN(bool ta, c.attr<bool>("transpose_a"));
  RN_ASSIGN_OR_RETURN(bool tb, c.attr<bool>("transpose_b"));
  const Shape& a = c.shape(0);
  const Shape& b = c.shape(1);
  if (a.unknown_rank() || b.unknown_rank()) {
    return One(c.dtype(0), Shape::UnknownRank());
  }
  const int ra = a.rank(), rb = b.rank();
  const int64_t m = a.dim(ta ? ra - 1 : ra - 2);
  const int64_t ka = a.dim(ta ? ra - 2 : ra - 1);
  const int64_t kb = b.dim(tb ? rb - 1 : rb - 2);
  const int64_t n = b.dim(tb ? rb - 2 : rb - 1);
  if (ka >= 0 && kb >= 0 && ka != kb) {
    std::string note;
    if (ta || tb) {
      note = StrCat(" (with ", ta ? "transpose_a" : "", ta && tb ? " and " : "",
                    tb ? "transpose_b" : "", ")");
    }
    return absl::InvalidArgumentError(
        StrCat("inner dimensions differ: ", c.input(0).ToString(), " @ ",
               c.input(1).ToString(), note));
  }
  Shape batch_a(std::vector<int64_t>(a.dims().begin(), a.dims().end() - 2));
  Shape batch_b(std::vector<int64_t>(b.dims().begin(), b.dims().end() - 2));
  absl::StatusOr<Shape> batch = BroadcastShapes(batch_a, batch_b);
  if (!batch.ok()) {
    return absl::InvalidArgumentError(
        StrCat("batch dimensions of ", c.input(0).ToString(), " and ",
               c.input(1).ToString(), " cannot be broadcast"));
  }
  std::vector<int64_t> out = batch->dims();
  out.push_back(m);
  out.push_back(n);
  return One(c.dtype(0), Shape(std::move(out)));
}

RUNNEL_REGISTER_OP(
    OpDefBuilder("matmul")
        .Cost(KernelClass::kMatmul)
        .Inputs({"a", "b"})
        .Outputs({"product"})
        .SameDType({0, 1})
        .Attr("transpose_a", false)
        .Attr("transpose_b", false)
        .Shape(MatMulShape)
        .Doc("Matrix product of the last two dimensions (`@`); leading "
             "dimensions are batch dimensions and broadcast as in NumPy."));

// acc + a @ b, for rank-2 f32 operands: a loop's gradient sums each
// iteration's weight gradient into the total with it (common_runtime/
// backprop.cc), where a matmul and an add would write and read the product
// once more. The sum may take over acc's buffer.
Specs MatMulAddShape(const ShapeContext& c) {
  for (int i = 0; i < 3; ++i) {
    if (c.dtype(i) != DType::kF32) {
      return absl::InvalidArgumentError(StrCat("expected f32 tensors, got ",
                                               c.input(i).ToString(),
                                               " as input ", i));
    }
    if (!c.shape(i).unknown_rank() && c.shape(i).rank() != 2) {
      return absl::InvalidArgumentError(StrCat(
          "expected matrices, got ", c.input(i).ToString(), " as input ", i));
    }
  }
  ShapeContext product(c.attrs(), {c.input(1), c.input(2)}, {});
  RN_ASSIGN_OR_RETURN(std::vector<TensorSpec> specs, MatMulShape(product));
  const Shape& acc = c.shape(0);
  const Shape& out = specs[0].shape;
  if (!acc.unknown_rank() && !out.unknown_rank()) {
    for (int i = 0; i < 2; ++i) {
      if (acc.dim(i) >= 0 && out.dim(i) >= 0 && acc.dim(i) != out.dim(i)) {
        return absl::InvalidArgumentError(
            StrCat("the sum ", c.input(0).ToString(),
                   " does not match the product ", specs[0].ToString()));
      }
    }
    return One(DType::kF32, Shape({MergeDim(acc.dim(0), out.dim(0)),
                                   MergeDim(acc.dim(1), out.dim(1))}));
  }
  return One(DType::kF32, acc.unknown_rank() ? out : acc);
}

RUNNEL_REGISTER_OP(
    OpDefBuilder("matmul_add")
        .Cost(KernelClass::kMatmul)
        .Inputs({"acc", "a", "b"})
        .Outputs({"sum"})
        .SameDType({0, 1, 2})
        .Attr("transpose_a", false)
        .Attr("transpose_b", false)
        .Shape(MatMulAddShape)
        .Doc("acc + a @ b for f32 matrices, in one pass over the sum: how a "
             "loop's gradient adds up each iteration's weight gradient."));

// The updates by a product (apply_sgd_matmul, apply_momentum_matmul,
// apply_adam_matmul): the session's plan puts one in place of an
// apply_sgd, apply_momentum or apply_adam whose gradient is a product of
// two f32 matrices that nothing else reads (common_runtime/
// fuse_updates.h). Their inputs are the update's, with `a` and `b` in the
// place of `grad`: the variable, its `slots` slots (shaped like it), lr,
// a, b, then the other scalars; all f32.
Specs UpdateByProductShape(const ShapeContext& c,
                           const std::vector<std::string>& names, int slots) {
  const int a = slots + 2;
  for (int i = 1; i < c.num_inputs(); ++i) {
    if (i == a || i == a + 1) continue;
    const bool slot = i <= slots;
    if (c.dtype(i) != DType::kF32 ||
        !(slot ? c.shape(0) : Shape{}).IsCompatibleWith(c.shape(i))) {
      return absl::InvalidArgumentError(StrCat(
          "`", names[i], "` is ", c.input(i).ToString(), " but must be ",
          slot ? StrCat("f32 shaped like the variable ", c.input(0).ToString())
               : std::string("an f32 scalar")));
    }
  }
  ShapeContext sum(c.attrs(), {c.input(0), c.input(a), c.input(a + 1)}, {});
  return MatMulAddShape(sum);
}

// Registers NAME, an update by a product with `inputs` and `slots`.
OpDefBuilder UpdateByProduct(const std::string& name,
                             const std::vector<std::string>& inputs,
                             int slots) {
  return OpDefBuilder(name)
      .Cost(KernelClass::kMatmul)
      .Inputs(inputs)
      .Outputs({"new_value"})
      .SameDTypeAllInputs()
      .Attr("transpose_a", false)
      .Attr("transpose_b", false)
      .Stateful()
      .Shape([inputs, slots](const ShapeContext& c) {
        return UpdateByProductShape(c, inputs, slots);
      });
}

RUNNEL_REGISTER_OP(
    UpdateByProduct("apply_sgd_matmul", {"ref", "lr", "a", "b"}, 0)
        .Doc("Gradient descent by a product on the f32 matrix variable "
             "feeding `ref`: `ref -= lr * (a @ b)`, the product added into "
             "the variable by the sgemm (within its rounding of the separate "
             "ops). A run's plan puts it in place of an `apply_sgd` whose "
             "gradient is a `matmul` nothing else reads. Gives the new "
             "value."));

RUNNEL_REGISTER_OP(
    UpdateByProduct("apply_momentum_matmul",
                    {"ref", "ref_buf", "lr", "a", "b", "momentum"}, 1)
        .Attr("nesterov", false)
        .Doc("`apply_momentum` on the f32 matrix variable feeding `ref` and "
             "its buffer, with the gradient `a @ b`: the product computed in "
             "blocks of rows, each applied to those rows of the variable and "
             "its buffer while in the cache, the gradient never written "
             "whole. Each element's update is `apply_momentum`'s (its "
             "results within the sgemm's rounding of the separate ops). A "
             "run's plan puts it in place of an `apply_momentum` whose "
             "gradient is a `matmul` nothing else reads. Gives the new "
             "value."));

RUNNEL_REGISTER_OP(
    UpdateByProduct("apply_adam_matmul",
                    {"ref", "ref_m", "ref_v", "lr", "a", "b", "beta1",
                     "one_minus_beta1", "beta2", "one_minus_beta2", "eps",
                     "correction1", "correction2"},
                    2)
        .Doc("`apply_adam` on the f32 matrix variable feeding `ref` and its "
             "moments, with the gradient `a @ b`: the product computed in "
             "blocks of rows, each applied to those rows of the variable and "
             "its moments while in the cache, the gradient never written "
             "whole. Each element's update is `apply_adam`'s (its results "
             "within the sgemm's rounding of the separate ops). A run's plan "
             "puts it in place of an `apply_adam` whose gradient is a "
             "`matmul` nothing else reads. Gives the new value."));

// ---- softmax and losses
// --------------------------------------------------------

Specs SoftmaxShape(const ShapeContext& c) {
  RN_RETURN_IF_ERROR(RequireFloating(c, 0));
  RN_RETURN_IF_ERROR(RequireMinRank(c, 0, 1, "the input"));
  RN_ASSIGN_OR_RETURN(int64_t axis, c.attr<int64_t>("axis"));
  if (!c.shape(0).unknown_rank()) {
    RN_RETURN_IF_ERROR(NormalizeAxis(axis, c.shape(0).rank()).status());
  }
  return One(c.dtype(0), c.shape(0));
}

RUNNEL_REGISTER_OP(OpDefBuilder("softmax")
                       .Cost(KernelClass::kTranscendental)
                       .Inputs({"logits"})
                       .Outputs({"probs"})
                       .Attr("axis", int64_t{-1})
                       .Shape(SoftmaxShape)
                       .Doc("exp(x) / sum(exp(x)) along `axis`, computed "
                            "after subtracting the maximum."));

RUNNEL_REGISTER_OP(OpDefBuilder("log_softmax")
                       .Cost(KernelClass::kTranscendental)
                       .Inputs({"logits"})
                       .Outputs({"log_probs"})
                       .Attr("axis", int64_t{-1})
                       .Shape(SoftmaxShape)
                       .Doc("x - logsumexp(x) along `axis`."));

Specs MaskedSoftmaxShape(const ShapeContext& c) {
  RN_RETURN_IF_ERROR(RequireFloating(c, 0));
  RN_RETURN_IF_ERROR(RequireMinRank(c, 0, 1, "the logits"));
  if (c.dtype(1) != DType::kBool) {
    return absl::InvalidArgumentError(
        StrCat("the mask must be bool, got ", c.input(1).ToString()));
  }
  RN_RETURN_IF_ERROR(CheckMaskedSoftmax(c.shape(0), c.shape(1)));
  return One(c.dtype(0), c.shape(0));
}

RUNNEL_REGISTER_OP(
    OpDefBuilder("masked_softmax")
        .Inputs({"logits", "keep"})
        .Outputs({"probs"})
        .Shape(MaskedSoftmaxShape)
        .Doc("softmax over the last axis of the logits where `keep` (bool, "
             "the logits' last dimensions, repeated over the leading ones) "
             "is true; 0 where it is false, and a line that keeps nothing "
             "all 0 (not NaN). One pass, for attention's masks."));

// scaled_dot_product_attention(q, k, v, keep): f32 or f64 q, k and v of
// one dtype, keep bool (kernel_checks.h, AttentionShape).
absl::Status CheckAttentionInputs(const ShapeContext& c) {
  if (c.dtype(0) != DType::kF32 && c.dtype(0) != DType::kF64) {
    return absl::InvalidArgumentError(
        StrCat("expected f32 or f64 q, got ", c.input(0).ToString()));
  }
  RN_RETURN_IF_ERROR(SameDTypes(c, 0, 2));
  if (c.dtype(3) != DType::kBool) {
    return absl::InvalidArgumentError(
        StrCat("the mask must be bool, got ", c.input(3).ToString()));
  }
  return absl::OkStatus();
}

Specs AttentionOpShape(const ShapeContext& c) {
  RN_RETURN_IF_ERROR(CheckAttentionInputs(c));
  RN_ASSIGN_OR_RETURN(const AttentionAttrs attrs,
                      AttentionAttrs::Of(c.attrs()));
  RN_ASSIGN_OR_RETURN(
      Shape out, AttentionShape(c.shape(0), c.shape(1), c.shape(2), c.shape(3),
                                attrs.bthd));
  return One(c.dtype(0), std::move(out));
}

RUNNEL_REGISTER_OP(
    OpDefBuilder("scaled_dot_product_attention")
        .Cost(KernelClass::kMatmul)
        .Inputs({"q", "k", "v", "keep"})
        .Outputs({"out"})
        .SameDType({0, 1, 2})
        .Attr("scale", 1.0)
        .Attr("rsqrt_d", true)
        .Attr("layout", std::string("bhtd"))
        .Shape(AttentionOpShape)
        .Doc("softmax(s * q @ k^T) @ v over q [..., tq, d], k [..., tk, d] "
             "and v [..., tk, dv] (batch dims broadcast), s = `scale`, "
             "divided by sqrt(d) with `rsqrt_d` (the default: scaled "
             "dot-product attention), the softmax "
             "over the keys that `keep` keeps (bool: a scalar, or the "
             "scores' last dims, repeated over the leading ones; a query "
             "that keeps none gets zeros). With `layout` \"bthd\" the "
             "heads are inside the time steps: q [..., tq, heads, d], k "
             "and v likewise, out [..., tq, heads, dv] (a projection's "
             "output, reshaped, without a transpose). One pass per matrix "
             "of the batch: the scores never leave the cache, and a block "
             "of queries multiplies only the keys it keeps (a causal "
             "mask's upper triangle is skipped). nn.attention and "
             "nn.multi_head_attention use it for f32 and f64."));

// The gradients of q, k and v (over the broadcast batch) for the output's
// gradient dout.
Specs AttentionGradShape(const ShapeContext& c) {
  RN_RETURN_IF_ERROR(CheckAttentionInputs(c));
  if (c.dtype(4) != c.dtype(0)) {
    return absl::InvalidArgumentError(StrCat("dout ", c.input(4).ToString(),
                                             " must have q's dtype, ",
                                             DTypeName(c.dtype(0))));
  }
  RN_ASSIGN_OR_RETURN(const AttentionAttrs attrs,
                      AttentionAttrs::Of(c.attrs()));
  RN_ASSIGN_OR_RETURN(const AttentionPlan p,
                      AttentionGradPlan(c.shape(0), c.shape(1), c.shape(2),
                                        c.shape(3), attrs.bthd));
  RN_RETURN_IF_ERROR(CheckAttentionGrad(p.out, c.shape(4)));
  if (p.out.unknown_rank()) {
    return std::vector<TensorSpec>(3, {c.dtype(0), Shape::UnknownRank()});
  }
  return std::vector<TensorSpec>{{c.dtype(0), p.GradShape(0)},
                                 {c.dtype(0), p.GradShape(1)},
                                 {c.dtype(0), p.GradShape(2)}};
}

RUNNEL_REGISTER_OP(
    OpDefBuilder("scaled_dot_product_attention_grad")
        .Cost(KernelClass::kMatmul)
        .Inputs({"q", "k", "v", "keep", "dout"})
        .Outputs({"dq", "dk", "dv"})
        .SameDType({0, 1, 2, 4})
        .Attr("scale", 1.0)
        .Attr("rsqrt_d", true)
        .Attr("layout", std::string("bhtd"))
        .Shape(AttentionGradShape)
        .Doc("The gradients of scaled_dot_product_attention's q, k and v "
             "for its output's gradient dout, each over the broadcast "
             "batch; the scores and probabilities are computed again, one "
             "matrix of the batch at a time."));

// logits [..., classes] and probs of the same shape -> loss [...].
Specs SoftmaxCrossEntropyShape(const ShapeContext& c) {
  RN_RETURN_IF_ERROR(RequireFloating(c, 0));
  RN_RETURN_IF_ERROR(SameDTypes(c, 0, 1));
  RN_RETURN_IF_ERROR(RequireMinRank(c, 0, 1, "logits"));
  const Shape& l = c.shape(0);
  const Shape& p = c.shape(1);
  if (!l.IsCompatibleWith(p)) {
    return absl::InvalidArgumentError(
        StrCat("logits ", c.input(0).ToString(), " and probs ",
               c.input(1).ToString(), " differ in shape"));
  }
  Shape merged = l.unknown_rank() ? p : l;
  if (!l.unknown_rank() && !p.unknown_rank()) {
    for (int i = 0; i < l.rank(); ++i) {
      merged.mutable_dims()[i] = MergeDim(l.dim(i), p.dim(i));
    }
  }
  return One(c.dtype(0), DropLastDim(merged));
}

RUNNEL_REGISTER_OP(
    OpDefBuilder("softmax_cross_entropy")
        .Cost(KernelClass::kTranscendental)
        .Inputs({"logits", "probs"})
        .Outputs({"loss"})
        .SameDType({0, 1})
        .Shape(SoftmaxCrossEntropyShape)
        .Doc("Per-example -sum(probs * log_softmax(logits)) over the last "
             "axis."));

// logits [..., classes] and integer labels [...] -> loss [...].
Specs SparseSoftmaxCrossEntropyShape(const ShapeContext& c) {
  RN_RETURN_IF_ERROR(RequireFloating(c, 0));
  RN_RETURN_IF_ERROR(RequireMinRank(c, 0, 1, "logits"));
  if (c.dtype(1) != DType::kI32 && c.dtype(1) != DType::kI64) {
    return absl::InvalidArgumentError(
        StrCat("labels must be i32 or i64, got ", c.input(1).ToString()));
  }
  Shape expected = DropLastDim(c.shape(0));
  const Shape& labels = c.shape(1);
  if (!expected.IsCompatibleWith(labels)) {
    return absl::InvalidArgumentError(
        StrCat("labels ", c.input(1).ToString(), " must have the shape of ",
               "logits ", c.input(0).ToString(), " without its last ",
               "dimension, ", expected.ToString()));
  }
  if (expected.unknown_rank()) {
    expected = labels;
  } else if (!labels.unknown_rank()) {
    for (int i = 0; i < expected.rank(); ++i) {
      expected.mutable_dims()[i] = MergeDim(expected.dim(i), labels.dim(i));
    }
  }
  return One(c.dtype(0), std::move(expected));
}

RUNNEL_REGISTER_OP(
    OpDefBuilder("sparse_softmax_cross_entropy")
        .Cost(KernelClass::kTranscendental)
        .Inputs({"logits", "labels"})
        .Outputs({"loss"})
        .Shape(SparseSoftmaxCrossEntropyShape)
        .Doc("Per-example -log_softmax(logits)[label]; labels are class "
             "indices in [0, classes)."));

// Element-wise; logits and labels of one dtype and shape.
Specs SigmoidCrossEntropyShape(const ShapeContext& c) {
  RN_RETURN_IF_ERROR(RequireFloating(c, 0));
  RN_RETURN_IF_ERROR(SameDTypes(c, 0, 1));
  const Shape& l = c.shape(0);
  const Shape& z = c.shape(1);
  if (!l.IsCompatibleWith(z)) {
    return absl::InvalidArgumentError(
        StrCat("logits ", c.input(0).ToString(), " and labels ",
               c.input(1).ToString(), " differ in shape"));
  }
  if (l.unknown_rank()) return One(c.dtype(0), z);
  Shape merged = l;
  if (!z.unknown_rank()) {
    for (int i = 0; i < l.rank(); ++i) {
      merged.mutable_dims()[i] = MergeDim(l.dim(i), z.dim(i));
    }
  }
  return One(c.dtype(0), std::move(merged));
}

RUNNEL_REGISTER_OP(
    OpDefBuilder("sigmoid_cross_entropy")
        .Cost(KernelClass::kTranscendental)
        .Inputs({"logits", "labels"})
        .Outputs({"loss"})
        .SameDType({0, 1})
        .Shape(SigmoidCrossEntropyShape)
        .Doc("Element-wise max(x, 0) - x * z + log(1 + exp(-|x|))."));

Specs L2LossShape(const ShapeContext& c) {
  RN_RETURN_IF_ERROR(RequireFloating(c, 0));
  return One(c.dtype(0), Shape{});
}

RUNNEL_REGISTER_OP(OpDefBuilder("l2_loss")
                       .Cost(KernelClass::kReduction)
                       .Inputs({"x"})
                       .Outputs({"loss"})
                       .Shape(L2LossShape)
                       .Doc("sum(x^2) / 2, a scalar."));

Specs BiasAddShape(const ShapeContext& c) {
  RN_RETURN_IF_ERROR(SameDTypes(c, 0, 1));
  if (!IsMatMulType(c.dtype(0))) {
    return absl::InvalidArgumentError(
        StrCat("expected f16, bf16, f32, f64, i32 or i64 tensors, got ",
               c.input(0).ToString()));
  }
  RN_RETURN_IF_ERROR(RequireMinRank(c, 0, 1, "the input"));
  RN_RETURN_IF_ERROR(RequireRank(c, 1, 1, "the bias"));
  const Shape& x = c.shape(0);
  const Shape& b = c.shape(1);
  Shape out = x;
  if (!x.unknown_rank() && !b.unknown_rank()) {
    const int64_t last = x.dim(x.rank() - 1);
    if (last >= 0 && b.dim(0) >= 0 && last != b.dim(0)) {
      return absl::InvalidArgumentError(StrCat(
          "bias ", c.input(1).ToString(),
          " does not match the last dimension of ", c.input(0).ToString()));
    }
    out.mutable_dims()[x.rank() - 1] = MergeDim(last, b.dim(0));
  }
  return One(c.dtype(0), std::move(out));
}

RUNNEL_REGISTER_OP(OpDefBuilder("bias_add")
                       .Inputs({"x", "bias"})
                       .Outputs({"y"})
                       .SameDType({0, 1})
                       .Shape(BiasAddShape)
                       .Doc("x + bias, the 1-D bias added along the last "
                            "dimension."));

// ---- layer normalisation ----------------------------------------------------

// What layer_norm and batch_norm check of their inputs: x floating, scale
// and offset of its dtype and as long as its last dimension.
absl::Status CheckNormInputs(const ShapeContext& c) {
  RN_RETURN_IF_ERROR(RequireFloating(c, 0));
  RN_RETURN_IF_ERROR(SameDTypes(c, 0, 1));
  RN_RETURN_IF_ERROR(SameDTypes(c, 0, 2));
  return CheckLayerNorm(c.shape(0), c.shape(1), c.shape(2));
}

// y of x's shape, and two statistics of `stats` shape.
Specs NormOutputs(const ShapeContext& c, const Shape& stats) {
  const DType d = LayerNormStatsDType(c.dtype(0));
  return std::vector<TensorSpec>{
      {c.dtype(0), c.shape(0)}, {d, stats}, {d, stats}};
}

// What their gradients check of the dtypes: dy, x and scale of one floating
// dtype, the statistics (inputs 3 and 4) of the forward op's.
absl::Status CheckNormGradDTypes(const ShapeContext& c) {
  RN_RETURN_IF_ERROR(RequireFloating(c, 0));
  RN_RETURN_IF_ERROR(SameDTypes(c, 0, 1));
  RN_RETURN_IF_ERROR(SameDTypes(c, 0, 2));
  const DType stats = LayerNormStatsDType(c.dtype(0));
  for (int i : {3, 4}) {
    if (c.dtype(i) != stats) {
      return absl::InvalidArgumentError(StrCat("the statistics must be ",
                                               DTypeName(stats), ", got ",
                                               c.input(i).ToString()));
    }
  }
  return absl::OkStatus();
}

// dx of x's shape, dscale and doffset of scale's.
Specs NormGradOutputs(const ShapeContext& c) {
  return std::vector<TensorSpec>{{c.dtype(0), c.shape(1)},
                                 {c.dtype(0), c.shape(2)},
                                 {c.dtype(0), c.shape(2)}};
}

Specs LayerNormShape(const ShapeContext& c) {
  RN_RETURN_IF_ERROR(CheckNormInputs(c));
  return NormOutputs(c, LayerNormStatsShape(c.shape(0)));
}

RUNNEL_REGISTER_OP(
    OpDefBuilder("layer_norm")
        .Cost(KernelClass::kReduction)
        .Inputs({"x", "scale", "offset"})
        .Outputs({"y", "mean", "rstd"})
        .Attr("eps", 1e-5)
        .Shape(LayerNormShape)
        .Doc("(x - mean) * rstd * scale + offset over x's last axis, rstd = "
             "1 / sqrt(variance + eps) with the biased variance (as "
             "torch.nn.LayerNorm): one pass per row. Outputs `mean` and "
             "`rstd` (f32 for 16-bit x) are each row's, for the gradient."));

Specs LayerNormGradShape(const ShapeContext& c) {
  RN_RETURN_IF_ERROR(CheckNormGradDTypes(c));
  RN_RETURN_IF_ERROR(CheckLayerNormGrad(c.shape(0), c.shape(1), c.shape(2),
                                        c.shape(3), c.shape(4)));
  return NormGradOutputs(c);
}

RUNNEL_REGISTER_OP(
    OpDefBuilder("layer_norm_grad")
        .Cost(KernelClass::kReduction)
        .Inputs({"dy", "x", "scale", "mean", "rstd"})
        .Outputs({"dx", "dscale", "doffset"})
        .Shape(LayerNormGradShape)
        .Doc("layer_norm's gradients from its output's, in one pass over "
             "the rows: with xhat = (x - mean) * rstd and g = dy * scale, "
             "dx = rstd * (g - mean(g) - xhat * mean(g * xhat)); dscale = "
             "the sum of dy * xhat and doffset that of dy over the rows."));

// ---- recurrent cells
// ---------------------------------------------------------

// The state's shape [..., units], its unknown dims taken from the gates'
// [..., k * units] where those are known.
Shape CellStateShape(const Shape& gates, const Shape& state, int k) {
  if (state.unknown_rank()) {
    if (gates.unknown_rank()) return state;
    Shape s = gates;
    const int last = s.rank() - 1;
    if (last >= 0 && s.dim(last) != kUnknownDim) {
      s.mutable_dims()[last] /= k;
    }
    return s;
  }
  Shape s = state;
  if (gates.unknown_rank() || gates.rank() != s.rank()) return s;
  for (int i = 0; i < s.rank(); ++i) {
    const int64_t g = gates.dim(i);
    if (s.dim(i) == kUnknownDim && g != kUnknownDim) {
      s.mutable_dims()[i] = i + 1 < s.rank() ? g : g / k;
    }
  }
  return s;
}

// The gates' shape [..., k * units] in the same way, from the state's.
Shape CellGatesShape(const Shape& gates, const Shape& state, int k) {
  if (gates.unknown_rank() || state.unknown_rank() ||
      gates.rank() != state.rank()) {
    return gates;
  }
  Shape g = gates;
  for (int i = 0; i < g.rank(); ++i) {
    const int64_t s = state.dim(i);
    if (g.dim(i) == kUnknownDim && s != kUnknownDim) {
      g.mutable_dims()[i] = i + 1 < g.rank() ? s : s * k;
    }
  }
  return g;
}

// Inputs [first, last] floating and of one dtype.
absl::Status FloatingAlike(const ShapeContext& c, int first, int last) {
  RN_RETURN_IF_ERROR(RequireFloating(c, first));
  return SameDTypes(c, first, last);
}

Specs LstmCellShape(const ShapeContext& c) {
  RN_RETURN_IF_ERROR(FloatingAlike(c, 0, 1));
  RN_RETURN_IF_ERROR(CheckRecurrentCell(c.shape(0), c.shape(1), 4));
  const Shape s = CellStateShape(c.shape(0), c.shape(1), 4);
  return std::vector<TensorSpec>{{c.dtype(1), s}, {c.dtype(1), s}};
}

RUNNEL_REGISTER_OP(
    OpDefBuilder("lstm_cell")
        .Cost(KernelClass::kTranscendental)
        .Inputs({"gates", "c"})
        .Outputs({"h", "c_next"})
        .Shape(LstmCellShape)
        .Doc("One LSTM step from its pre-activation gates [..., 4 * units] "
             "(i, f, g, o: PyTorch's order) and cell state c [..., units]: "
             "c_next = sigmoid(f) * c + sigmoid(i) * tanh(g) and h = "
             "sigmoid(o) * tanh(c_next), in one pass (the gradient, "
             "lstm_cell_grad, recomputes the activations from the gates)."));

Specs LstmCellGradShape(const ShapeContext& c) {
  RN_RETURN_IF_ERROR(FloatingAlike(c, 0, 3));
  RN_RETURN_IF_ERROR(CheckRecurrentCell(c.shape(0), c.shape(1), 4));
  for (int i : {2, 3}) {
    RN_RETURN_IF_ERROR(CheckRecurrentCell(c.shape(0), c.shape(i), 4));
  }
  return std::vector<TensorSpec>{
      {c.dtype(0), CellGatesShape(c.shape(0), c.shape(1), 4)},
      {c.dtype(0), CellStateShape(c.shape(0), c.shape(1), 4)}};
}

RUNNEL_REGISTER_OP(
    OpDefBuilder("lstm_cell_grad")
        .Cost(KernelClass::kTranscendental)
        .Inputs({"gates", "c", "dh", "dc_next"})
        .Outputs({"dgates", "dc"})
        .Shape(LstmCellGradShape)
        .Doc("lstm_cell's gradients by its gates and c from those of its "
             "outputs h and c_next, the activations recomputed from the "
             "gates in the same pass."));

Specs GruCellShape(const ShapeContext& c) {
  RN_RETURN_IF_ERROR(FloatingAlike(c, 0, 2));
  for (int i : {0, 1}) {
    RN_RETURN_IF_ERROR(CheckRecurrentCell(c.shape(i), c.shape(2), 3));
  }
  return std::vector<TensorSpec>{
      {c.dtype(2), CellStateShape(c.shape(0), c.shape(2), 3)}};
}

RUNNEL_REGISTER_OP(
    OpDefBuilder("gru_cell")
        .Cost(KernelClass::kTranscendental)
        .Inputs({"x", "hh", "h"})
        .Outputs({"h_next"})
        .Shape(GruCellShape)
        .Doc("One GRU step from the projected input x [..., 3 * units] and "
             "the projected state hh [..., 3 * units] (each with its bias; "
             "r, z, n: PyTorch's order) and the state h [..., units]: r = "
             "sigmoid(x_r + hh_r), z = sigmoid(x_z + hh_z), n = tanh(x_n + r "
             "* hh_n), h_next = (1 - z) * n + z * h, in one pass."));

Specs GruCellGradShape(const ShapeContext& c) {
  RN_RETURN_IF_ERROR(FloatingAlike(c, 0, 3));
  for (int i : {0, 1}) {
    RN_RETURN_IF_ERROR(CheckRecurrentCell(c.shape(i), c.shape(2), 3));
  }
  RN_RETURN_IF_ERROR(CheckRecurrentCell(c.shape(0), c.shape(3), 3));
  const Shape g = CellGatesShape(c.shape(0), c.shape(2), 3);
  return std::vector<TensorSpec>{
      {c.dtype(0), g},
      {c.dtype(0), g},
      {c.dtype(0), CellStateShape(c.shape(0), c.shape(2), 3)}};
}

RUNNEL_REGISTER_OP(
    OpDefBuilder("gru_cell_grad")
        .Cost(KernelClass::kTranscendental)
        .Inputs({"x", "hh", "h", "dh_next"})
        .Outputs({"dx", "dhh", "dh"})
        .Shape(GruCellGradShape)
        .Doc("gru_cell's gradients by x, hh and h from that of h_next, the "
             "activations recomputed from x and hh in the same pass."));

// ---- a whole LSTM sequence in one op ----------------------------------------

// Inputs [0, count) f32 (the kernels' products are sgemm's).
absl::Status AllF32(const ShapeContext& c, int count) {
  for (int i = 0; i < count && i < c.num_inputs(); ++i) {
    if (c.dtype(i) != DType::kF32) {
      return absl::InvalidArgumentError(StrCat("expected f32 tensors, got ",
                                               c.input(i).ToString(),
                                               " as input ", i));
    }
  }
  return absl::OkStatus();
}

Shape TimeMajor(const LstmSequenceDims& d, int64_t per_unit) {
  return Shape({d.time, d.batch,
                d.units == kUnknownDim ? kUnknownDim : per_unit * d.units});
}

Specs LstmSequenceShape(const ShapeContext& c) {
  RN_RETURN_IF_ERROR(AllF32(c, 4));
  RN_ASSIGN_OR_RETURN(
      const LstmSequenceDims d,
      CheckLstmSequence(c.shape(0), c.shape(1), c.shape(2), c.shape(3)));
  RN_ASSIGN_OR_RETURN(const int lengths, CheckSequenceBias(c, d.units));
  RN_RETURN_IF_ERROR(CheckSequenceLengths(c, lengths, d.batch));
  const Shape states = TimeMajor(d, 1);
  const Shape state({d.batch, d.units});
  return std::vector<TensorSpec>{{DType::kF32, states},
                                 {DType::kF32, state},
                                 {DType::kF32, state},
                                 {DType::kF32, states},
                                 {DType::kF32, TimeMajor(d, 4)}};
}

RUNNEL_REGISTER_OP(
    OpDefBuilder("lstm_sequence")
        .Cost(KernelClass::kMatmul)
        .Inputs({"z", "h0", "c0", "w_h", "b_then_lengths"})
        .Variadic()
        .Outputs({"hs", "h", "c", "cs", "gates"})
        .Attr("bias", false)
        .Shape(LstmSequenceShape)
        .Doc("A whole LSTM sequence in one op, f32: from the projected inputs "
             "z [time, batch, 4 * units] (i, f, g, o), the initial state h0, "
             "c0 [batch, units] and the recurrent weight w_h [units, 4 * "
             "units], each step's gates[t] = z[t] + b + h[t-1] @ w_h and "
             "lstm_cell(gates[t], c[t-1]). Outputs every step's h [time, "
             "batch, units], the final h and c (h0 and c0 over no steps), "
             "and, for the gradient, every step's c and the activations of "
             "gates[t] (sigmoid, sigmoid, tanh, sigmoid). With lengths "
             "(i32 [batch]), a row's state stays as it was from its length "
             "on. The bias b [4 * units] is an input (after w_h) only with "
             "bias = true. nn.lstm's f32 path."));

Specs LstmSequenceGradShape(const ShapeContext& c) {
  RN_RETURN_IF_ERROR(AllF32(c, 9));
  RN_ASSIGN_OR_RETURN(
      const LstmSequenceDims d,
      CheckLstmSequenceGrad(c.shape(0), c.shape(3), c.shape(4), c.shape(5),
                            {&c.shape(1), &c.shape(2), &c.shape(6)},
                            {&c.shape(7), &c.shape(8)}));
  RN_RETURN_IF_ERROR(CheckSequenceLengths(c, 9, d.batch));
  const Shape state({d.batch, d.units});
  return std::vector<TensorSpec>{
      {DType::kF32, TimeMajor(d, 4)},
      {DType::kF32, state},
      {DType::kF32, state},
      {DType::kF32,
       Shape({d.units, d.units == kUnknownDim ? kUnknownDim : 4 * d.units})},
      {DType::kF32,
       Shape({d.units == kUnknownDim ? kUnknownDim : 4 * d.units})}};
}

RUNNEL_REGISTER_OP(
    OpDefBuilder("lstm_sequence_grad")
        .Cost(KernelClass::kMatmul)
        .Inputs({"gates", "cs", "hs", "h0", "c0", "w_h", "dhs", "dh", "dc",
                 "lengths"})
        .Variadic()
        .Outputs({"dz", "dh0", "dc0", "dw_h", "db"})
        .Shape(LstmSequenceGradShape)
        .Doc("lstm_sequence's gradients by z, h0, c0 and w_h from those of "
             "its outputs hs, h and c: the steps backwards in one op, then "
             "w_h's gradient as one product of the stacked states and gate "
             "gradients; db, the bias's, is dz summed over the steps and "
             "the batch."));

// ---- batch normalisation (training) -----------------------------------------

Specs BatchNormShape(const ShapeContext& c) {
  RN_RETURN_IF_ERROR(CheckNormInputs(c));
  const Shape& x = c.shape(0);
  return NormOutputs(c, x.unknown_rank() ? Shape::UnknownRank()
                                         : Shape({x.dim(x.rank() - 1)}));
}

RUNNEL_REGISTER_OP(
    OpDefBuilder("batch_norm")
        .Cost(KernelClass::kReduction)
        .Inputs({"x", "scale", "offset"})
        .Outputs({"y", "mean", "variance"})
        .Attr("eps", 1e-5)
        .Shape(BatchNormShape)
        .Doc("Batch normalisation with the batch's statistics: (x - mean) / "
             "sqrt(variance + eps) * scale + offset, mean and the biased "
             "variance of each channel (x's last axis) over all the other "
             "axes. Outputs `mean` and `variance` (f32 for 16-bit x) are the "
             "channels', for the moving statistics and the gradient."));

Specs BatchNormGradShape(const ShapeContext& c) {
  RN_RETURN_IF_ERROR(CheckNormGradDTypes(c));
  RN_RETURN_IF_ERROR(CheckLayerNorm(c.shape(1), c.shape(2), c.shape(3)));
  RN_RETURN_IF_ERROR(CheckLayerNorm(c.shape(1), c.shape(2), c.shape(4)));
  return NormGradOutputs(c);
}

RUNNEL_REGISTER_OP(
    OpDefBuilder("batch_norm_grad")
        .Cost(KernelClass::kReduction)
        .Inputs({"dy", "x", "scale", "mean", "variance"})
        .Outputs({"dx", "dscale", "doffset"})
        .Attr("eps", 1e-5)
        .Shape(BatchNormGradShape)
        .Doc("batch_norm's gradients from its output's: with n the rows "
             "per channel, xhat = (x - mean) * rstd and rstd = 1 / "
             "sqrt(variance + eps), dscale = the sum of dy * xhat, doffset "
             "that of dy, and dx = scale * rstd * (dy - doffset / n - xhat * "
             "dscale / n)."));

// ---- conv2d and pooling ----------------------------------------------------

// conv2d (spatial 2: NHWC x, HWIO filters) and conv3d (3: NDHWC, DHWIO).
Specs ConvShape(const ShapeContext& c, int spatial) {
  const bool three = spatial == 3;
  const int rank = spatial + 2;
  RN_RETURN_IF_ERROR(RequireFloating(c, 0));
  RN_RETURN_IF_ERROR(SameDTypes(c, 0, 1));
  RN_RETURN_IF_ERROR(RequireRank(
      c, 0, rank, three ? "the input (NDHWC)" : "the input (NHWC)"));
  RN_RETURN_IF_ERROR(RequireRank(
      c, 1, rank, three ? "the filters (DHWIO)" : "the filters (HWIO)"));
  RN_ASSIGN_OR_RETURN(ConvAttrs attrs, ReadConvAttrs(c.attrs(), spatial));
  const Shape& x = c.shape(0);
  const Shape& f = c.shape(1);
  if (x.unknown_rank()) {
    if (f.unknown_rank()) return One(c.dtype(0), Shape::UnknownRank());
    std::vector<int64_t> dims(rank, kUnknownDim);
    dims.back() = f.dim(rank - 1);
    return One(c.dtype(0), Shape(dims));
  }
  // The filter's extent along each spatial dimension, and the output
  // channels.
  std::vector<int64_t> k(spatial, kUnknownDim);
  int64_t out_c = kUnknownDim;
  if (!f.unknown_rank()) {
    for (int i = 0; i < spatial; ++i) k[i] = f.dim(i);
    out_c = f.dim(rank - 1);
    const int64_t in_c = x.dim(rank - 1), want = f.dim(rank - 2);
    if (in_c >= 0 && want >= 0 && in_c != want) {
      return absl::InvalidArgumentError(StrCat(
          "channels differ: the input ", c.input(0).ToString(), " has ", in_c,
          " but the filters ", c.input(1).ToString(), " expect ", want));
    }
  }
  const int64_t stride[3] = {attrs.strides.d, attrs.strides.h, attrs.strides.w};
  const int64_t dilation[3] = {attrs.dilations.d, attrs.dilations.h,
                               attrs.dilations.w};
  std::vector<int64_t> dims = {x.dim(0)};
  for (int i = 0; i < spatial; ++i) {
    const int j = i + 3 - spatial;  // d, h, w
    RN_ASSIGN_OR_RETURN(Windows w,
                        PlaceWindows(x.dim(1 + i), k[i], stride[j], dilation[j],
                                     attrs.same, "filter"));
    dims.push_back(w.out);
  }
  dims.push_back(out_c);
  return One(c.dtype(0), Shape(dims));
}

OpDefBuilder ConvOp(const char* name, int spatial, const char* doc) {
  return std::move(OpDefBuilder(name)
                       .Cost(KernelClass::kMatmul)
                       .Inputs({"x", "filters"})
                       .Outputs({"y"})
                       .SameDType({0, 1})
                       .Attr("strides", int64_t{1})
                       .Attr("padding", std::string("same"))
                       .Attr("dilations", int64_t{1})
                       .Shape([spatial](const ShapeContext& c) {
                         return ConvShape(c, spatial);
                       })
                       .Doc(doc));
}

RUNNEL_REGISTER_OP(
    ConvOp("conv2d", 2,
           "2-D convolution (cross-correlation) of NHWC `x` with HWIO "
           "`filters`; `strides` and `dilations` are an int or [h, w]."));
RUNNEL_REGISTER_OP(
    ConvOp("conv3d", 3,
           "3-D convolution (cross-correlation) of NDHWC `x` with DHWIO "
           "`filters`; `strides` and `dilations` are an int or [d, h, w]."));

// The pools of NHWC (spatial 2) or NDHWC (3) `x`.
Specs PoolShape(const ShapeContext& c, bool floating_only, int spatial = 2) {
  if (floating_only) {
    RN_RETURN_IF_ERROR(RequireFloating(c, 0));
  } else if (!IsMatMulType(c.dtype(0))) {
    return absl::InvalidArgumentError(
        StrCat("expected f16, bf16, f32, f64, i32 or i64 tensors, got ",
               c.input(0).ToString()));
  }
  RN_RETURN_IF_ERROR(
      RequireRank(c, 0, spatial + 2,
                  spatial == 3 ? "the input (NDHWC)" : "the input (NHWC)"));
  RN_ASSIGN_OR_RETURN(PoolAttrs attrs, ReadPoolAttrs(c.attrs(), spatial));
  const Shape& x = c.shape(0);
  if (x.unknown_rank()) return One(c.dtype(0), Shape::UnknownRank());
  const HW* a[3] = {&attrs.size, &attrs.strides, &attrs.dilations};
  auto along = [&](const HW& v, int j) {
    return j == 0 ? v.d : j == 1 ? v.h : v.w;
  };
  std::vector<int64_t> dims = {x.dim(0)};
  for (int i = 0; i < spatial; ++i) {
    const int j = i + 3 - spatial;  // d, h, w
    RN_ASSIGN_OR_RETURN(
        Windows w, PlaceWindows(x.dim(1 + i), along(*a[0], j), along(*a[1], j),
                                along(*a[2], j), attrs.same, "window"));
    dims.push_back(w.out);
  }
  dims.push_back(x.dim(spatial + 1));
  return One(c.dtype(0), Shape(dims));
}

// max_pool and avg_pool (spatial 2), max_pool3d and avg_pool3d (3).
OpDefBuilder PoolOp(const char* name, int spatial, bool floating_only,
                    const char* doc) {
  return std::move(OpDefBuilder(name)
                       .OptionalAttr("size")
                       .OptionalAttr("strides")
                       .OptionalAttr("dilations")
                       .Inputs({"x"})
                       .Outputs({"y"})
                       .Attr("padding", std::string("valid"))
                       .Shape([=](const ShapeContext& c) {
                         return PoolShape(c, floating_only, spatial);
                       })
                       .Doc(doc));
}

RUNNEL_REGISTER_OP(
    PoolOp("max_pool", 2, false,
           "Maximum over `size` windows of NHWC `x`, moved by `strides` "
           "(default: `size`), their taps `dilations` apart (default 1)."));
RUNNEL_REGISTER_OP(
    PoolOp("max_pool3d", 3, false,
           "Maximum over `size` windows ([d, h, w] or an int) of NDHWC `x`, "
           "moved by `strides` (default: `size`), their taps `dilations` "
           "apart (default 1)."));

RUNNEL_REGISTER_OP(
    OpDefBuilder("max_pool_with_argmax")
        .OptionalAttr("size")
        .OptionalAttr("strides")
        .OptionalAttr("dilations")
        .Inputs({"x"})
        .Outputs({"y", "argmax"})
        .Attr("padding", std::string("valid"))
        .Shape([](const ShapeContext& c) -> Specs {
          RN_ASSIGN_OR_RETURN(std::vector<TensorSpec> y, PoolShape(c, false));
          y.push_back({DType::kI64, y[0].shape});
          return y;
        })
        .Doc("max_pool, and where each maximum is in its image: the i64 "
             "(h * width + w) * channels + c of its first tap equal to the "
             "maximum (tf.nn.max_pool_with_argmax without the batch)."));

RUNNEL_REGISTER_OP(
    PoolOp("avg_pool", 2, true,
           "Mean over `size` windows of NHWC `x`, moved by `strides` "
           "(default: `size`), their taps `dilations` apart (default 1); "
           "with \"same\" padding the mean is over the window's taps "
           "inside the input."));
RUNNEL_REGISTER_OP(
    PoolOp("avg_pool3d", 3, true,
           "Mean over `size` windows ([d, h, w] or an int) of NDHWC `x`, "
           "moved by `strides` (default: `size`), their taps `dilations` "
           "apart (default 1); with \"same\" padding the mean is over the "
           "window's taps inside the input."));

// ---- gradients of conv2d and pooling ---------------------------------------
//
// Each takes the forward operands (some only for their shapes) and the
// gradient `dy` of the forward output, with the forward op's attributes,
// and gives the gradient of one forward operand, of that operand's shape.

// `dy` (input `i`) must match the forward output `forward`.
absl::Status CheckDy(const ShapeContext& c, int i, const TensorSpec& forward,
                     std::string_view what) {
  if (c.dtype(i) != forward.dtype ||
      !c.shape(i).IsCompatibleWith(forward.shape)) {
    return absl::InvalidArgumentError(
        StrCat(what, " ", c.input(i).ToString(), " does not match the ",
               "forward output ", forward.ToString()));
  }
  return absl::OkStatus();
}

// conv2d_backprop_input and _filter (and conv3d's): (x, filters, dy) -> the
// gradient of input `of` (0: x, 1: filters).
OpDefBuilder ConvBackpropOp(const char* name, int spatial, int of,
                            const char* doc) {
  return std::move(OpDefBuilder(name)
                       .Cost(KernelClass::kMatmul)
                       .Inputs({"x", "filters", "dy"})
                       .Outputs({of == 0 ? "dx" : "dfilters"})
                       .Attr("strides", int64_t{1})
                       .Attr("padding", std::string("same"))
                       .Attr("dilations", int64_t{1})
                       .Shape([=](const ShapeContext& c) -> Specs {
                         RN_ASSIGN_OR_RETURN(std::vector<TensorSpec> y,
                                             ConvShape(c, spatial));
                         RN_RETURN_IF_ERROR(CheckDy(c, 2, y[0], "dy"));
                         return One(c.dtype(of), c.shape(of));
                       })
                       .Doc(doc));
}

RUNNEL_REGISTER_OP(ConvBackpropOp(
    "conv2d_backprop_input", 2, 0,
    "The gradient of conv2d(x, filters) with respect to x, given dy, "
    "the gradient of its output; reads only x's shape."));
RUNNEL_REGISTER_OP(ConvBackpropOp(
    "conv2d_backprop_filter", 2, 1,
    "The gradient of conv2d(x, filters) with respect to filters, "
    "given dy, the gradient of its output; reads only filters' shape."));
RUNNEL_REGISTER_OP(ConvBackpropOp(
    "conv3d_backprop_input", 3, 0,
    "The gradient of conv3d(x, filters) with respect to x, given dy, "
    "the gradient of its output; reads only x's shape."));
RUNNEL_REGISTER_OP(ConvBackpropOp(
    "conv3d_backprop_filter", 3, 1,
    "The gradient of conv3d(x, filters) with respect to filters, "
    "given dy, the gradient of its output; reads only filters' shape."));

// max_pool_grad(x, y, dy) and avg_pool_grad(x, dy) -> dx, and the 3-D
// pools' (spatial 3).
OpDefBuilder PoolGradOp(const char* name, int spatial, bool max,
                        const char* doc) {
  return std::move(
      OpDefBuilder(name)
          .OptionalAttr("size")
          .OptionalAttr("strides")
          .OptionalAttr("dilations")
          .Inputs(max ? std::vector<std::string>{"x", "y", "dy"}
                      : std::vector<std::string>{"x", "dy"})
          .Outputs({"dx"})
          .Attr("padding", std::string("valid"))
          .Shape([spatial](const ShapeContext& c) -> Specs {
            RN_ASSIGN_OR_RETURN(std::vector<TensorSpec> y,
                                PoolShape(c, /*floating_only=*/true, spatial));
            for (int i = 1; i < c.num_inputs(); ++i) {
              RN_RETURN_IF_ERROR(
                  CheckDy(c, i, y[0], i + 1 == c.num_inputs() ? "dy" : "y"));
            }
            return One(c.dtype(0), c.shape(0));
          })
          .Doc(doc));
}

RUNNEL_REGISTER_OP(
    PoolGradOp("max_pool_grad", 2, true,
               "The gradient of y = max_pool(x): each element of dy goes to "
               "the first maximal element of its window."));
RUNNEL_REGISTER_OP(
    PoolGradOp("avg_pool_grad", 2, false,
               "The gradient of avg_pool(x): each element of dy is shared "
               "evenly by its window's elements inside x; reads only x's "
               "shape."));
RUNNEL_REGISTER_OP(
    PoolGradOp("max_pool3d_grad", 3, true,
               "The gradient of y = max_pool3d(x): each element of dy goes "
               "to the first maximal element of its window."));
RUNNEL_REGISTER_OP(
    PoolGradOp("avg_pool3d_grad", 3, false,
               "The gradient of avg_pool3d(x): each element of dy is shared "
               "evenly by its window's elements inside x; reads only x's "
               "shape."));

}  // namespace
}  // namespace runnel
