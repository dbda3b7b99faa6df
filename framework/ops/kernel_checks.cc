#include "framework/ops/kernel_checks.h"

#include <algorithm>
#include <cmath>
#include <string>
#include <string_view>
#include <tuple>
#include <utility>
#include <vector>

#include "base/status_macros.h"
#include "base/strings.h"

namespace runnel {
namespace {

// "f32[3, 4]"
std::string Describe(const Tensor& t) {
  return StrCat(DTypeName(t.dtype()), t.shape().ToString());
}

}  // namespace

absl::Status CheckSameShapes(std::string_view op, const Tensor& a,
                             const Tensor& b) {
  if (a.shape() == b.shape()) return absl::OkStatus();
  return absl::InvalidArgumentError(
      StrCat(op, ": shapes differ: ", Describe(a), " and ", Describe(b)));
}

absl::Status CheckBiasAdd(const Tensor& x, const Tensor& bias) {
  if (x.rank() < 1 || bias.rank() != 1 || bias.dim(0) != x.dim(x.rank() - 1)) {
    return absl::InvalidArgumentError(
        StrCat("bias ", Describe(bias),
               " does not match the last dimension of ", Describe(x)));
  }
  return absl::OkStatus();
}

absl::Status CheckMaskedSoftmax(const Shape& logits, const Shape& keep) {
  if (!logits.unknown_rank() && logits.rank() < 1) {
    return absl::InvalidArgumentError(
        StrCat("needs logits of rank 1 or more, got ", logits.ToString()));
  }
  if (logits.unknown_rank() || keep.unknown_rank()) return absl::OkStatus();
  bool ok = keep.rank() >= 1 && keep.rank() <= logits.rank();
  for (int i = 0; ok && i < keep.rank(); ++i) {
    const int64_t a = logits.dim(logits.rank() - keep.rank() + i);
    const int64_t b = keep.dim(i);
    ok = a < 0 || b < 0 || a == b;
  }
  if (!ok) {
    return absl::InvalidArgumentError(StrCat(
        "the mask ", keep.ToString(),
        " must have the last dimensions of the logits ", logits.ToString()));
  }
  return absl::OkStatus();
}

namespace {

// s with its dims r - 3 and r - 2 swapped: a bthd operand as a bhtd one,
// and back. Unknown ranks and ranks below 3 stay.
Shape SwapHeads(const Shape& s) {
  if (s.unknown_rank() || s.rank() < 3) return s;
  std::vector<int64_t> dims = s.dims();
  std::swap(dims[dims.size() - 3], dims[dims.size() - 2]);
  return Shape(std::move(dims));
}

// AttentionShape for the layout bhtd; `operands` names the operands as the
// caller got them, `keys_dim` the dim of k and v that counts the keys.
absl::StatusOr<Shape> BhtdAttentionShape(const Shape& q, const Shape& k,
                                         const Shape& v, const Shape& keep,
                                         const std::string& operands,
                                         std::string_view keys_dim) {
  const int r = q.rank();
  if (r < 2 || k.rank() != r || v.rank() != r) {
    return absl::InvalidArgumentError(
        StrCat("needs q, k and v of one rank, 2 or more; got ", operands));
  }
  auto same = [](int64_t a, int64_t b) { return a < 0 || b < 0 || a == b; };
  if (!same(q.dim(r - 1), k.dim(r - 1)) || !same(k.dim(r - 2), v.dim(r - 2))) {
    return absl::InvalidArgumentError(StrCat(
        "q and k need one last dimension, and k and v one number of keys "
        "(their ",
        keys_dim, "); got ", operands));
  }
  auto batch_of = [&](const Shape& s) {
    return Shape(std::vector<int64_t>(s.dims().begin(), s.dims().end() - 2));
  };
  absl::StatusOr<Shape> batch = BroadcastShapes(batch_of(q), batch_of(k));
  if (batch.ok()) batch = BroadcastShapes(*batch, batch_of(v));
  if (!batch.ok()) {
    return absl::InvalidArgumentError(
        StrCat("the batch dimensions of ", operands, " cannot be broadcast"));
  }
  std::vector<int64_t> scores = batch->dims();
  scores.push_back(q.dim(r - 2));
  scores.push_back(k.dim(r - 2) >= 0 ? k.dim(r - 2) : v.dim(r - 2));
  if (keep.unknown_rank() || keep.rank() > 0) {
    RN_RETURN_IF_ERROR(CheckMaskedSoftmax(Shape(scores), keep));
  }
  std::vector<int64_t> out = batch->dims();
  out.push_back(q.dim(r - 2));
  out.push_back(v.dim(r - 1));
  return Shape(std::move(out));
}

// A bthd operand's offsets of its first rows, from those BatchOffsets
// gives for the operand seen as bhtd (matrices of `size` elements, heads
// its dims r - 2, each row `cols` long).
void BthdOffsets(std::vector<int64_t>& offsets, int64_t size, int64_t heads,
                 int64_t cols) {
  if (size == 0 || heads == 0) return;
  for (int64_t& o : offsets) {
    const int64_t m = o / size;
    o = (m / heads) * size * heads + (m % heads) * cols;
  }
}

}  // namespace

absl::StatusOr<Shape> AttentionShape(const Shape& q, const Shape& k,
                                     const Shape& v, const Shape& keep,
                                     bool bthd) {
  const std::string operands =
      StrCat("q ", q.ToString(), ", k ", k.ToString(), " and v ", v.ToString());
  if (q.unknown_rank() || k.unknown_rank() || v.unknown_rank()) {
    return Shape::UnknownRank();
  }
  if (!bthd) return BhtdAttentionShape(q, k, v, keep, operands, "next-to-last");
  if (q.rank() < 3 || k.rank() != q.rank() || v.rank() != q.rank()) {
    return absl::InvalidArgumentError(
        StrCat("the layout bthd needs q, k and v of one rank, 3 or more; got ",
               operands));
  }
  RN_ASSIGN_OR_RETURN(
      Shape out, BhtdAttentionShape(SwapHeads(q), SwapHeads(k), SwapHeads(v),
                                    keep, operands, "third from last"));
  return SwapHeads(out);
}

absl::StatusOr<AttentionAttrs> AttentionAttrs::Of(const AttrMap& attrs) {
  AttentionAttrs a;
  RN_ASSIGN_OR_RETURN(a.scale, GetAttr<double>(attrs, "scale"));
  RN_ASSIGN_OR_RETURN(a.rsqrt_d, GetAttr<bool>(attrs, "rsqrt_d"));
  std::string layout = "bhtd";
  if (attrs.count("layout") > 0) {
    RN_ASSIGN_OR_RETURN(layout, GetAttr<std::string>(attrs, "layout"));
  }
  if (layout != "bhtd" && layout != "bthd") {
    return absl::InvalidArgumentError(
        StrCat("layout must be \"bhtd\" or \"bthd\", got \"", layout, "\""));
  }
  a.bthd = layout == "bthd";
  return a;
}

absl::StatusOr<AttentionAttrs> AttentionAttrs::Of(const Node& node) {
  return Of(node.attrs());
}

double AttentionAttrs::ScoreFactor(int64_t d) const {
  return rsqrt_d && d > 0 ? scale / std::sqrt(static_cast<double>(d)) : scale;
}

Shape AttentionPlan::Batched(int64_t rows, int64_t cols) const {
  std::vector<int64_t> dims = batch;
  if (bthd) {
    dims.insert(dims.end() - 1, rows);
  } else {
    dims.push_back(rows);
  }
  dims.push_back(cols);
  return Shape(std::move(dims));
}

Shape AttentionPlan::GradShape(int i) const {
  return i == 0 ? Batched(tq, d) : Batched(tk, i == 1 ? d : dv);
}

absl::StatusOr<AttentionPlan> AttentionGradPlan(const Shape& q, const Shape& k,
                                                const Shape& v,
                                                const Shape& keep, bool bthd) {
  AttentionPlan p;
  p.bthd = bthd;
  RN_ASSIGN_OR_RETURN(p.out, AttentionShape(q, k, v, keep, bthd));
  if (p.out.unknown_rank()) return p;
  // AttentionShape checked that k and v agree on tk, and q and k on d,
  // where both are known; the bhtd view's dims.
  const Shape lq = bthd ? SwapHeads(q) : q, lk = bthd ? SwapHeads(k) : k,
              lv = bthd ? SwapHeads(v) : v;
  const Shape lout = bthd ? SwapHeads(p.out) : p.out;
  const int r = q.rank();
  p.tq = lq.dim(r - 2);
  p.tk = lk.dim(r - 2) >= 0 ? lk.dim(r - 2) : lv.dim(r - 2);
  p.d = q.dim(r - 1) >= 0 ? q.dim(r - 1) : k.dim(r - 1);
  p.dv = v.dim(r - 1);
  p.batch.assign(lout.dims().begin(), lout.dims().end() - 2);
  p.heads = bthd && !p.batch.empty() ? std::max<int64_t>(p.batch.back(), 0) : 0;
  return p;
}

absl::StatusOr<AttentionPlan> PlanAttention(const Shape& q, const Shape& k,
                                            const Shape& v, const Shape& keep,
                                            bool bthd) {
  RN_ASSIGN_OR_RETURN(AttentionPlan p, AttentionGradPlan(q, k, v, keep, bthd));
  const Shape lout = bthd ? SwapHeads(p.out) : p.out;
  const Shape lq = bthd ? SwapHeads(q) : q, lk = bthd ? SwapHeads(k) : k,
              lv = bthd ? SwapHeads(v) : v;
  p.q_offsets = BatchOffsets(lq, lout, p.tq * p.d);
  p.k_offsets = BatchOffsets(lk, lout, p.tk * p.d);
  p.v_offsets = BatchOffsets(lv, lout, p.tk * p.dv);
  p.q_stride = p.d;
  p.k_stride = p.d;
  p.v_stride = p.dv;
  if (bthd) {
    const int r = q.rank();
    BthdOffsets(p.q_offsets, p.tq * p.d, q.dim(r - 2), p.d);
    BthdOffsets(p.k_offsets, p.tk * p.d, k.dim(r - 2), p.d);
    BthdOffsets(p.v_offsets, p.tk * p.dv, v.dim(r - 2), p.dv);
    p.q_stride = q.dim(r - 2) * p.d;
    p.k_stride = k.dim(r - 2) * p.d;
    p.v_stride = v.dim(r - 2) * p.dv;
  }
  p.keep_lines = keep.rank() == 0 || p.tk == 0 ? 0 : keep.num_elements() / p.tk;
  return p;
}

namespace {

// Whether `a` and `b` may be one shape (unknown dims and ranks may).
bool MayEqual(const Shape& a, const Shape& b) {
  if (a.unknown_rank() || b.unknown_rank()) return true;
  if (a.rank() != b.rank()) return false;
  for (int i = 0; i < a.rank(); ++i) {
    if (a.dim(i) >= 0 && b.dim(i) >= 0 && a.dim(i) != b.dim(i)) return false;
  }
  return true;
}

}  // namespace

absl::Status CheckAttentionGrad(const Shape& out, const Shape& dout) {
  if (MayEqual(out, dout)) return absl::OkStatus();
  return absl::InvalidArgumentError(StrCat("dout ", dout.ToString(),
                                           " must have the output's shape ",
                                           out.ToString()));
}

absl::Status CheckLayerNorm(const Shape& x, const Shape& scale,
                            const Shape& offset) {
  if (x.unknown_rank()) return absl::OkStatus();
  if (x.rank() < 1) {
    return absl::InvalidArgumentError(
        StrCat("needs x of rank 1 or more, got ", x.ToString()));
  }
  const Shape last({x.dim(x.rank() - 1)});
  const std::pair<const char*, const Shape*> params[] = {{"scale", &scale},
                                                         {"offset", &offset}};
  for (const auto& [name, s] : params) {
    if (!MayEqual(*s, last)) {
      return absl::InvalidArgumentError(
          StrCat("the ", name, " ", s->ToString(),
                 " must be 1-D and as long as x's last dimension (x is ",
                 x.ToString(), ")"));
    }
  }
  return absl::OkStatus();
}

absl::Status CheckRecurrentCell(const Shape& gates, const Shape& state, int k) {
  if (gates.unknown_rank() || state.unknown_rank()) return absl::OkStatus();
  const int r = gates.rank();
  bool ok = r >= 1 && state.rank() == r;
  for (int i = 0; ok && i < r; ++i) {
    const int64_t g = gates.dim(i), s = state.dim(i);
    if (g == kUnknownDim || s == kUnknownDim) continue;
    ok = i + 1 < r ? g == s : g == k * s;
  }
  if (ok) return absl::OkStatus();
  return absl::InvalidArgumentError(
      StrCat("needs the gates [..., ", k,
             " * units] and the state [..., "
             "units] with the same leading dimensions; got gates ",
             gates.ToString(), " and state ", state.ToString()));
}

absl::StatusOr<CellRows> CheckCellInputs(
    std::string_view op, const Tensor& gates, const Tensor& state, int k,
    std::initializer_list<const Tensor*> like_gates,
    std::initializer_list<const Tensor*> like_state) {
  RN_RETURN_IF_ERROR(CheckRecurrentCell(gates.shape(), state.shape(), k));
  for (const Tensor* t : like_gates) {
    RN_RETURN_IF_ERROR(CheckSameShapes(op, gates, *t));
  }
  for (const Tensor* t : like_state) {
    RN_RETURN_IF_ERROR(CheckSameShapes(op, state, *t));
  }
  CellRows r;
  r.units = state.dim(state.rank() - 1);
  r.rows = r.units == 0 ? 0 : state.num_elements() / r.units;
  return r;
}

absl::StatusOr<LstmSequenceDims> CheckLstmSequence(const Shape& z,
                                                   const Shape& h0,
                                                   const Shape& c0,
                                                   const Shape& w_h) {
  LstmSequenceDims d;
  bool ok = true;
  // Dimension `axis` of `s` is `per` times *v: sets *v or checks it.
  auto agree = [&](int64_t* v, const Shape& s, int rank, int axis,
                   int64_t per) {
    if (!ok || s.unknown_rank()) return;
    if (s.rank() != rank) {
      ok = false;
      return;
    }
    const int64_t x = s.dim(axis);
    if (x == kUnknownDim) return;
    if (x % per != 0 || (*v != kUnknownDim && *v != x / per)) {
      ok = false;
      return;
    }
    *v = x / per;
  };
  agree(&d.time, z, 3, 0, 1);
  agree(&d.batch, z, 3, 1, 1);
  agree(&d.units, z, 3, 2, 4);
  for (const Shape* s : {&h0, &c0}) {
    agree(&d.batch, *s, 2, 0, 1);
    agree(&d.units, *s, 2, 1, 1);
  }
  agree(&d.units, w_h, 2, 0, 1);
  agree(&d.units, w_h, 2, 1, 4);
  if (ok) return d;
  return absl::InvalidArgumentError(
      StrCat("needs z [time, batch, 4 * units], h0 and c0 [batch, units] and "
             "w_h [units, 4 * units]; got z ",
             z.ToString(), ", h0 ", h0.ToString(), ", c0 ", c0.ToString(),
             " and w_h ", w_h.ToString()));
}

absl::StatusOr<LstmSequenceDims> CheckLstmSequenceGrad(
    const Shape& gates, const Shape& h0, const Shape& c0, const Shape& w_h,
    std::initializer_list<const Shape*> steps,
    std::initializer_list<const Shape*> finals) {
  RN_ASSIGN_OR_RETURN(const LstmSequenceDims d,
                      CheckLstmSequence(gates, h0, c0, w_h));
  const Shape every({d.time, d.batch, d.units});
  const Shape last({d.batch, d.units});
  for (const auto& [shapes, want, what] :
       {std::tuple{steps, &every, "every step's states and their gradient"},
        std::tuple{finals, &last, "the final state's gradients"}}) {
    for (const Shape* s : shapes) {
      if (!MayEqual(*s, *want)) {
        return absl::InvalidArgumentError(StrCat(
            what, " must be ", want->ToString(), "; got ", s->ToString()));
      }
    }
  }
  return d;
}

absl::Status CheckSequenceLengths(const ShapeContext& c, int at,
                                  int64_t batch) {
  if (c.num_inputs() <= at) return absl::OkStatus();
  if (c.num_inputs() > at + 1) {
    return absl::InvalidArgumentError(
        StrCat("takes at most ", at + 1, " inputs (the last the lengths), got ",
               c.num_inputs()));
  }
  const Shape& s = c.shape(at);
  if (c.dtype(at) != DType::kI32 ||
      (!s.unknown_rank() &&
       (s.rank() != 1 || (s.dim(0) >= 0 && batch >= 0 && s.dim(0) != batch)))) {
    return absl::InvalidArgumentError(StrCat("the lengths must be i32 [batch] ",
                                             Shape({batch}).ToString(),
                                             "; got ", c.input(at).ToString()));
  }
  return absl::OkStatus();
}

int SequenceLengthsInput(const AttrMap& attrs) {
  return GetAttrOr<bool>(attrs, "bias", false).value_or(false) ? 5 : 4;
}

absl::StatusOr<int> CheckSequenceBias(const ShapeContext& c, int64_t units) {
  RN_ASSIGN_OR_RETURN(const bool bias, c.attr_or<bool>("bias", false));
  if (!bias) return 4;
  if (c.num_inputs() < 5) {
    return absl::InvalidArgumentError(
        "with bias = true, the bias is input 4 (after w_h); got 4 inputs");
  }
  const Shape& b = c.shape(4);
  const int64_t gates = units == kUnknownDim ? kUnknownDim : 4 * units;
  if (c.dtype(4) != DType::kF32 || !MayEqual(b, Shape({gates}))) {
    return absl::InvalidArgumentError(
        StrCat("the bias must be f32 [4 * units] ", Shape({gates}).ToString(),
               "; got ", c.input(4).ToString()));
  }
  return 5;
}

// Input `at`, the lengths, checked against the batch, or nullptr.
absl::StatusOr<const Tensor*> SequenceLengths(OpKernelContext* ctx, int at,
                                              int64_t batch) {
  if (ctx->num_inputs() <= at) return nullptr;
  const Tensor& t = ctx->input(at);
  if (t.dtype() != DType::kI32 || t.shape() != Shape({batch})) {
    return absl::InvalidArgumentError(StrCat("the lengths must be i32 [", batch,
                                             "]; got ", DTypeName(t.dtype()),
                                             t.shape().ToString()));
  }
  return &t;
}

absl::StatusOr<LstmSequenceArgs> PrepareLstmSequence(OpKernelContext* ctx) {
  LstmSequenceArgs a{};
  a.z = &ctx->input(0);
  a.h0 = &ctx->input(1);
  a.c0 = &ctx->input(2);
  a.w_h = &ctx->input(3);
  RN_ASSIGN_OR_RETURN(a.dims, CheckLstmSequence(a.z->shape(), a.h0->shape(),
                                                a.c0->shape(), a.w_h->shape()));
  // The bias as the shape function checks it, now that every shape is
  // known.
  std::vector<TensorSpec> specs;
  for (int i = 0; i < ctx->num_inputs(); ++i) {
    specs.push_back({ctx->input(i).dtype(), ctx->input(i).shape()});
  }
  RN_ASSIGN_OR_RETURN(
      const int lengths,
      CheckSequenceBias(ShapeContext(ctx->node().attrs(), std::move(specs), {}),
                        a.dims.units));
  a.b = lengths == 5 ? &ctx->input(4) : nullptr;
  RN_ASSIGN_OR_RETURN(a.lengths, SequenceLengths(ctx, lengths, a.dims.batch));
  const Shape steps({a.dims.time, a.dims.batch, a.dims.units});
  RN_ASSIGN_OR_RETURN(a.hs, ctx->allocate_output(0, steps));
  RN_ASSIGN_OR_RETURN(a.h, ctx->allocate_output(1, a.h0->shape()));
  RN_ASSIGN_OR_RETURN(a.c, ctx->allocate_output(2, a.c0->shape()));
  RN_ASSIGN_OR_RETURN(a.cs, ctx->allocate_output(3, steps));
  RN_ASSIGN_OR_RETURN(a.gates, ctx->allocate_output(4, a.z->shape()));
  return a;
}

absl::StatusOr<LstmSequenceGradArgs> PrepareLstmSequenceGrad(
    OpKernelContext* ctx) {
  LstmSequenceGradArgs a{};
  const Tensor** in[] = {&a.gates, &a.cs,  &a.hs, &a.h0, &a.c0,
                         &a.w_h,   &a.dhs, &a.dh, &a.dc};
  for (int i = 0; i < 9; ++i) *in[i] = &ctx->input(i);
  RN_ASSIGN_OR_RETURN(
      a.dims,
      CheckLstmSequenceGrad(a.gates->shape(), a.h0->shape(), a.c0->shape(),
                            a.w_h->shape(),
                            {&a.cs->shape(), &a.hs->shape(), &a.dhs->shape()},
                            {&a.dh->shape(), &a.dc->shape()}));
  RN_ASSIGN_OR_RETURN(a.lengths, SequenceLengths(ctx, 9, a.dims.batch));
  RN_ASSIGN_OR_RETURN(a.dz, ctx->allocate_output(0, a.gates->shape()));
  RN_ASSIGN_OR_RETURN(a.dh0, ctx->allocate_output(1, a.h0->shape()));
  RN_ASSIGN_OR_RETURN(a.dc0, ctx->allocate_output(2, a.c0->shape()));
  RN_ASSIGN_OR_RETURN(a.dw_h, ctx->allocate_output(3, a.w_h->shape()));
  RN_ASSIGN_OR_RETURN(a.db, ctx->allocate_output(4, Shape({4 * a.dims.units})));
  return a;
}

absl::Status CheckLayerNormGrad(const Shape& dy, const Shape& x,
                                const Shape& scale, const Shape& mean,
                                const Shape& rstd) {
  RN_RETURN_IF_ERROR(CheckLayerNorm(x, scale, scale));
  if (!MayEqual(dy, x)) {
    return absl::InvalidArgumentError(StrCat("dy ", dy.ToString(), " and x ",
                                             x.ToString(), " differ in shape"));
  }
  if (x.unknown_rank()) return absl::OkStatus();
  const Shape stats = LayerNormStatsShape(x);
  const std::pair<const char*, const Shape*> stats_in[] = {{"mean", &mean},
                                                           {"rstd", &rstd}};
  for (const auto& [name, s] : stats_in) {
    if (!MayEqual(*s, stats)) {
      return absl::InvalidArgumentError(
          StrCat("the ", name, " ", s->ToString(), " must be x's shape ",
                 x.ToString(), " without its last dimension"));
    }
  }
  return absl::OkStatus();
}

DType LayerNormStatsDType(DType x) {
  return x == DType::kF16 || x == DType::kBF16 ? DType::kF32 : x;
}

Shape LayerNormStatsShape(const Shape& x) {
  if (x.unknown_rank() || x.rank() == 0) return x;
  return Shape(std::vector<int64_t>(x.dims().begin(), x.dims().end() - 1));
}

absl::Status CheckBatchRows(std::string_view op, const Tensor& x) {
  if (x.rank() >= 1 && x.dim(x.rank() - 1) > 0 &&
      x.num_elements() / x.dim(x.rank() - 1) == 0) {
    return absl::InvalidArgumentError(
        StrCat(op, ": needs at least one row per channel, got x ",
               x.shape().ToString()));
  }
  return absl::OkStatus();
}

absl::Status CheckBatchNormGrad(std::string_view op, const Tensor& dy,
                                const Tensor& x, const Tensor& scale,
                                const Tensor& mean, const Tensor& variance) {
  RN_RETURN_IF_ERROR(CheckSameShapes(op, dy, x));
  for (const Tensor* stats : {&mean, &variance}) {
    RN_RETURN_IF_ERROR(
        CheckLayerNorm(x.shape(), scale.shape(), stats->shape()));
  }
  return CheckBatchRows(op, x);
}

absl::Status CheckSoftmaxGrad(const Tensor& dy, const Tensor& y) {
  RN_RETURN_IF_ERROR(CheckSameShapes("softmax_grad", dy, y));
  if (y.rank() >= 1) return absl::OkStatus();
  return absl::InvalidArgumentError(
      StrCat("softmax_grad: needs rank 1 or more, got ", y.shape().ToString()));
}

absl::StatusOr<Shape> SoftmaxCrossEntropyLossShape(const Tensor& logits,
                                                   const Tensor& probs) {
  if (logits.shape() != probs.shape() || logits.rank() < 1) {
    return absl::InvalidArgumentError(StrCat("logits ", Describe(logits),
                                             " and probs ", Describe(probs),
                                             " differ in shape"));
  }
  std::vector<int64_t> dims = logits.shape().dims();
  dims.pop_back();
  return Shape(std::move(dims));
}

absl::Status CheckSigmoidCrossEntropy(const Tensor& logits,
                                      const Tensor& labels) {
  if (logits.shape() == labels.shape()) return absl::OkStatus();
  return absl::InvalidArgumentError(StrCat("logits ", Describe(logits),
                                           " and labels ", Describe(labels),
                                           " differ in shape"));
}

absl::StatusOr<Shape> SparseSoftmaxCrossEntropyLossShape(const Tensor& logits,
                                                         const Tensor& labels) {
  if (labels.dtype() != DType::kI32 && labels.dtype() != DType::kI64) {
    return absl::InvalidArgumentError(
        StrCat("labels must be i32 or i64, got ", DTypeName(labels.dtype())));
  }
  if (logits.rank() < 1) {
    return absl::InvalidArgumentError(
        StrCat("logits ", Describe(logits), " have no class dimension"));
  }
  std::vector<int64_t> dims = logits.shape().dims();
  dims.pop_back();
  Shape loss(std::move(dims));
  if (labels.shape() != loss) {
    return absl::InvalidArgumentError(StrCat(
        "labels ", Describe(labels), " must have the shape ", loss.ToString(),
        " of the logits ", Describe(logits), " without their last dimension"));
  }
  return loss;
}

absl::Status LabelOutOfRange(int64_t label, int64_t index, int64_t classes) {
  return absl::InvalidArgumentError(
      StrCat("label ", label, " (at index ", index, ") is out of range for ",
             classes, " classes; labels must be in [0, ", classes, ")"));
}

std::vector<int> SumToLikeAxes(const Shape& dy, const Shape& like) {
  const int offset = dy.rank() - like.rank();
  std::vector<int> axes;
  for (int i = 0; i < dy.rank(); ++i) {
    if (i < offset || (like.dim(i - offset) == 1 && dy.dim(i) != 1)) {
      axes.push_back(i);
    }
  }
  return axes;
}

absl::Status EmptyReductionError(std::string_view op, const Tensor& x) {
  return absl::InvalidArgumentError(
      StrCat(op, ": cannot reduce an empty dimension of ", Describe(x),
             ": the reduction has no identity"));
}

absl::Status CheckDropoutRate(double rate) {
  if (rate >= 0 && rate < 1) return absl::OkStatus();
  return absl::InvalidArgumentError(
      StrCat("rate must be in [0, 1), got ", rate));
}

absl::Status MatMulAttrsKernel::Init(const Node& node) {
  RN_ASSIGN_OR_RETURN(ta_, node.attr<bool>("transpose_a"));
  RN_ASSIGN_OR_RETURN(tb_, node.attr<bool>("transpose_b"));
  return absl::OkStatus();
}

absl::StatusOr<MatMulPlan> PlanMatMulAdd(const Tensor& acc, const Tensor& a,
                                         const Tensor& b, bool ta, bool tb) {
  RN_ASSIGN_OR_RETURN(MatMulPlan plan,
                      PlanMatMul(a.shape(), b.shape(), ta, tb, a.dtype()));
  if (acc.shape() != plan.out || a.rank() != 2 || b.rank() != 2) {
    return absl::InvalidArgumentError(StrCat(
        "matmul_add: the sum ", acc.shape().ToString(),
        " must be the product's ", plan.out.ToString(), " of two matrices"));
  }
  return plan;
}

}  // namespace runnel
