// The translators of `runnel import`: one function per ONNX operator (or
// per family), each writing the Runnel expression that computes the
// operator's outputs exactly as the ONNX specification defines them, or
// refusing what has no exact translation yet.
//
// Layouts: ONNX images are NCHW with OIHW filters; Runnel's conv2d and
// pools are NHWC with HWIO filters, so those translations transpose in and
// out.
#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <functional>
#include <map>
#include <numeric>
#include <set>

#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "base/status_macros.h"
#include "base/strings.h"
#include "framework/ops/index_checks.h"
#include "io/onnx_translate.h"

namespace runnel::onnx_import {
namespace {

// A float attribute as a bare literal (which takes the other operand's
// dtype); negative ones in parentheses.
std::string F(float f) {
  std::string s = fmt::format("{}", f);
  if (s.find_first_of(".en") == std::string::npos) s += ".0";
  return f < 0 ? StrCat("(", s, ")") : s;
}

std::string Join(const std::vector<std::string>& parts) {
  return absl::StrJoin(parts, ", ");
}

// The terms added up, as Runnel code.
std::string SumOf(const std::vector<std::string>& terms) {
  return absl::StrJoin(terms, " + ");
}

// 0 .. size - 1 (i64) along `axis` of `rank` axes, the others of length 1:
// an element's coordinate on that axis, to broadcast.
std::string Iota(int64_t size, int rank, int axis) {
  std::vector<int64_t> shape(rank, 1);
  shape[axis] = size;
  return StrCat("reshape(arange(0, ", size, ", dtype = i64), ", IntList(shape),
                ")");
}

absl::StatusOr<int> RankOf(NodeContext& c, int i) {
  const Value& v = c.in(i);
  if (!v.rank_known) {
    return c.Unsupported(StrCat("an input of unknown rank ('", i, "')"));
  }
  return static_cast<int>(v.dims.size());
}

absl::StatusOr<int64_t> NormAxis(NodeContext& c, int64_t axis, int rank) {
  if (axis < -rank || axis >= std::max(rank, 1)) {
    return c.Invalid(StrCat("axis ", axis, " is out of range for rank ", rank));
  }
  return axis < 0 ? axis + rank : axis;
}

bool AllKnown(const std::vector<int64_t>& dims) {
  return std::all_of(dims.begin(), dims.end(),
                     [](int64_t d) { return d >= 0; });
}

// Of known rank, and every size but the batch's (the first) known.
bool KnownPastBatch(const Value& v) {
  return v.rank_known && !v.dims.empty() &&
         AllKnown(std::vector<int64_t>(v.dims.begin() + 1, v.dims.end()));
}

int64_t Product(const std::vector<int64_t>& dims, size_t from, size_t to) {
  int64_t p = 1;
  for (size_t i = from; i < to; ++i) p *= dims[i];
  return p;
}

// An index that may count from the end (-n .. n-1, as ONNX's) as one
// counting from the start, for an axis of n elements (Runnel code).
std::string FromEnd(const std::string& i, const std::string& n) {
  return StrCat("where(", i, " < 0, ", i, " + ", n, ", ", i, ")");
}

absl::Status NeedFloat(NodeContext& c, int i) {
  if (IsFloating(c.in(i).dtype)) return absl::OkStatus();
  return c.Unsupported(StrCat("dtype ", DTypeCode(c.in(i).dtype)));
}

// ---------------------------------------------------------------- element-wise

// `{x}` stands for the input.
const std::map<std::string, std::pair<std::string, bool>>& UnaryTable() {
  // op -> (template, float only)
  static const auto* table =
      new std::map<std::string, std::pair<std::string, bool>>{
          {"Abs", {"abs({x})", false}},
          {"Neg", {"neg({x})", false}},
          {"Sign", {"sign({x})", false}},
          {"Sqrt", {"sqrt({x})", true}},
          {"Exp", {"exp({x})", true}},
          {"Log", {"log({x})", true}},
          {"Sin", {"sin({x})", true}},
          {"Cos", {"cos({x})", true}},
          {"Tan", {"sin({x}) / cos({x})", true}},
          {"Tanh", {"tanh({x})", true}},
          {"Sinh", {"(exp({x}) - exp(neg({x}))) / 2.0", true}},
          {"Cosh", {"(exp({x}) + exp(neg({x}))) / 2.0", true}},
          {"Sigmoid", {"sigmoid({x})", true}},
          {"Relu", {"relu({x})", false}},
          {"Softplus", {"softplus({x})", true}},
          {"Softsign", {"{x} / (1.0 + abs({x}))", true}},
          {"Mish", {"{x} * tanh(softplus({x}))", true}},
          {"Erf", {"erf({x})", true}},
          {"Asin", {"asin({x})", true}},
          {"Acos", {"acos({x})", true}},
          {"Atan", {"atan({x})", true}},
          {"Asinh", {"asinh({x})", true}},
          {"Acosh", {"acosh({x})", true}},
          {"Atanh", {"atanh({x})", true}},
          {"Floor", {"floor({x})", true}},
          {"Ceil", {"ceil({x})", true}},
          {"Round", {"round({x})", true}},
          {"Reciprocal", {"1.0 / {x}", true}},
          {"Identity", {"{x}", false}},
          {"Not", {"not {x}", false}},
          {"IsNaN", {"isnan({x})", true}},
          {"HardSwish", {"{x} * clip({x} / 6.0 + 0.5, 0.0, 1.0)", true}},
      };
  return *table;
}

std::string Fill(std::string t, const std::string& x) {
  for (size_t at; (at = t.find("{x}")) != std::string::npos;)
    t.replace(at, 3, x);
  return t;
}

absl::Status Unary(NodeContext& c) {
  const auto& [tmpl, float_only] = UnaryTable().at(c.op());
  if (float_only) RN_RETURN_IF_ERROR(NeedFloat(c, 0));
  const Value& x = c.in(0);
  const DType out = c.op() == "IsNaN" ? DType::kBool : x.dtype;
  return c.Out(0, Fill(tmpl, c.ref(0)), out, x.dims, x.rank_known);
}

// Activations with attributes.
absl::Status Activation(NodeContext& c) {
  RN_RETURN_IF_ERROR(NeedFloat(c, 0));
  const std::string x = c.ref(0);
  const std::string& op = c.op();
  std::string e;
  if (op == "Elu") {
    e = Fill(StrCat("where({x} > 0.0, {x}, ", F(c.Float("alpha", 1.0f)),
                    " * (exp({x}) - 1.0))"),
             x);
  } else if (op == "LeakyRelu") {
    e = Fill(StrCat("where({x} >= 0.0, {x}, {x} * ", F(c.Float("alpha", 0.01f)),
                    ")"),
             x);
  } else if (op == "Selu") {
    e = Fill(StrCat(F(c.Float("gamma", 1.05070102214813232421875f)),
                    " * where({x} > 0.0, {x}, ",
                    F(c.Float("alpha", 1.67326319217681884765625f)),
                    " * (exp({x}) - 1.0))"),
             x);
  } else if (op == "HardSigmoid") {
    e = Fill(StrCat("clip({x} * ", F(c.Float("alpha", 0.2f)), " + ",
                    F(c.Float("beta", 0.5f)), ", 0.0, 1.0)"),
             x);
  } else if (op == "ThresholdedRelu") {
    e = Fill(StrCat("where({x} > ", F(c.Float("alpha", 1.0f)), ", {x}, 0.0)"),
             x);
  } else if (op == "Celu") {
    const std::string a = F(c.Float("alpha", 1.0f));
    e = Fill(StrCat("maximum({x}, 0.0) + minimum(", a, " * (exp({x} / ", a,
                    ") - 1.0), 0.0)"),
             x);
  } else if (op == "Gelu") {
    const std::string approx = c.Str("approximate", "none");
    if (approx == "none") {
      e = Fill("0.5 * {x} * (1.0 + erf({x} * 0.7071067811865476))", x);
    } else if (approx == "tanh") {
      e = Fill(
          "0.5 * {x} * (1.0 + tanh(0.7978845608028654 * ({x} + 0.044715 * {x} "
          "* {x} * {x})))",
          x);
    } else {
      return c.Unsupported(StrCat("approximate = \"", approx, "\""));
    }
  } else if (op == "Shrink") {
    const std::string l = F(c.Float("lambd", 0.5f));
    const std::string b = F(c.Float("bias", 0.0f));
    e = Fill(StrCat("where({x} < neg(", l, "), {x} + ", b, ", where({x} > ", l,
                    ", {x} - ", b, ", 0.0))"),
             x);
  } else if (op == "IsInf") {
    const bool pos = c.Int("detect_positive", 1) != 0;
    const bool neg = c.Int("detect_negative", 1) != 0;
    std::string inf = Fill("(not isfinite({x}) and not isnan({x}))", x);
    e = pos && neg ? inf
        : pos      ? Fill(StrCat(inf, " and {x} > 0.0"), x)
        : neg      ? Fill(StrCat(inf, " and {x} < 0.0"), x)
                   : Fill("zeros_like({x}) > 0.0", x);
    return c.Out(0, e, DType::kBool, c.in(0).dims, c.in(0).rank_known);
  }
  return c.Out(0, e, c.in(0).dtype, c.in(0).dims, c.in(0).rank_known);
}

// Per-channel parameters of an (N, C, ...) input: [C] reshaped to broadcast.
std::string PerChannel(const std::string& p, int rank) {
  if (rank <= 2) return p;
  std::vector<int64_t> shape = {-1};
  for (int i = 2; i < rank; ++i) shape.push_back(1);
  return StrCat("reshape(", p, ", ", IntList(shape), ")");
}

absl::Status PRelu(NodeContext& c) {
  RN_RETURN_IF_ERROR(NeedFloat(c, 0));
  const std::string x = c.ref(0);
  std::string slope = c.ref(1);
  const Value& s = c.in(1);
  if (c.opset() < 7 && s.dims.size() == 1 && s.dims[0] != 1 &&
      c.in(0).dims.size() > 2) {
    // Before opset 7 a slope of C values is per channel (axis 1).
    slope = PerChannel(slope, static_cast<int>(c.in(0).dims.size()));
  }
  return c.Out(0,
               StrCat("where(", x, " < 0.0, ", x, " * ", slope, ", ", x, ")"),
               c.in(0).dtype, c.in(0).dims, c.in(0).rank_known);
}

absl::Status SameDTypes(NodeContext& c) {
  for (int i = 1; i < c.num_inputs(); ++i) {
    if (c.has_input(i) && c.in(i).dtype != c.in(0).dtype) {
      return c.Invalid(StrCat("inputs of different dtypes (",
                              DTypeCode(c.in(0).dtype), " and ",
                              DTypeCode(c.in(i).dtype), ")"));
    }
  }
  return absl::OkStatus();
}

std::vector<int64_t> Broadcast(NodeContext& c) {
  std::vector<int64_t> dims = c.in(0).dims;
  for (int i = 1; i < c.num_inputs(); ++i) {
    if (c.has_input(i)) dims = BroadcastDims(dims, c.in(i).dims);
  }
  return dims;
}

bool RanksKnown(NodeContext& c) {
  for (int i = 0; i < c.num_inputs(); ++i) {
    if (c.has_input(i) && !c.in(i).rank_known) return false;
  }
  return true;
}

absl::Status Binary(NodeContext& c) {
  const std::string& op = c.op();
  const Value& a = c.in(0);
  if (op == "Pow") {
    // The exponent may have another dtype; it is cast to the base's.
    std::string b = c.ref(1);
    if (c.in(1).dtype != a.dtype)
      b = StrCat("cast(", b, ", ", DTypeCode(a.dtype), ")");
    return c.Out(0, StrCat(c.ref(0), " ** ", b), a.dtype, Broadcast(c),
                 RanksKnown(c));
  }
  RN_RETURN_IF_ERROR(SameDTypes(c));
  const std::string x = c.ref(0);
  std::string y = c.ref(1);
  std::vector<int64_t> out_dims = Broadcast(c);
  if (c.opset() < 7 && c.Int("broadcast", 0) != 0 && c.has("axis")) {
    // Before opset 7, B's dimensions were matched to A's from `axis`:
    // B gets ones after its own.
    const Value& b = c.in(1);
    RN_ASSIGN_OR_RETURN(int r, RankOf(c, 0));
    RN_ASSIGN_OR_RETURN(int64_t axis, NormAxis(c, c.Int("axis", 0), r));
    const int64_t ones = r - axis - static_cast<int64_t>(b.dims.size());
    if (ones < 0) return c.Invalid("B does not fit A from axis");
    if (ones > 0) {
      std::vector<int64_t> shape = b.dims;
      for (int64_t& d : shape) d = d < 0 ? -1 : d;
      shape.insert(shape.end(), ones, 1);
      if (std::count(shape.begin(), shape.end(), -1) > 1) {
        return c.Unsupported("legacy broadcasting of a B of unknown size");
      }
      y = StrCat("reshape(", y, ", ", IntList(shape), ")");
    }
    out_dims = a.dims;
  }
  static const std::map<std::string, std::string> kInfix = {
      {"Add", "+"},          {"Sub", "-"},
      {"Mul", "*"},          {"Equal", "=="},
      {"Less", "<"},         {"Greater", ">"},
      {"LessOrEqual", "<="}, {"GreaterOrEqual", ">="},
      {"And", "and"},        {"Or", "or"},
      {"Xor", "!="}};
  DType out = a.dtype;
  std::string e;
  if (auto it = kInfix.find(op); it != kInfix.end()) {
    e = StrCat(x, " ", it->second, " ", y);
    if (op != "Add" && op != "Sub" && op != "Mul") out = DType::kBool;
  } else if (op == "Div") {
    // Integer division truncates toward zero; Runnel's // floors.
    e = IsFloating(a.dtype)
            ? StrCat(x, " / ", y)
            : StrCat("where((", x, " % ", y, " != 0) and ((", x, " < 0) != (",
                     y, " < 0)), ", x, " // ", y, " + 1, ", x, " // ", y, ")");
  } else if (op == "Mod") {
    const bool fmod = c.Int("fmod", 0) != 0;
    if (IsFloating(a.dtype)) {
      if (fmod) {
        // C's fmod: the sign of the dividend.
        const std::string q = StrCat("(", x, " / ", y, ")");
        e = StrCat(x, " - ", y, " * where(", q, " < 0.0, ceil(", q, "), floor(",
                   q, "))");
      } else {
        e = StrCat(x, " % ", y);  // the sign of the divisor
      }
    } else if (fmod) {
      e = StrCat("where((", x, " % ", y, " != 0) and ((", x, " < 0) != (", y,
                 " < 0)), ", x, " % ", y, " - ", y, ", ", x, " % ", y, ")");
    } else {
      e = StrCat(x, " % ", y);  // the sign of the divisor, as Python's
    }
  }
  return c.Out(0, e, out, out_dims, RanksKnown(c));
}

// Max, Min, Sum, Mean: any number of inputs.
absl::Status Variadic(NodeContext& c) {
  RN_RETURN_IF_ERROR(SameDTypes(c));
  const std::string& op = c.op();
  std::string e = c.ref(0);
  for (int i = 1; i < c.num_inputs(); ++i) {
    if (op == "Max") e = StrCat("maximum(", e, ", ", c.ref(i), ")");
    if (op == "Min") e = StrCat("minimum(", e, ", ", c.ref(i), ")");
    if (op == "Sum" || op == "Mean") e = StrCat(e, " + ", c.ref(i));
  }
  if (op == "Mean") {
    RN_RETURN_IF_ERROR(NeedFloat(c, 0));
    e = StrCat("(", e, ") / ", c.num_inputs(), ".0");
  }
  return c.Out(0, e, c.in(0).dtype, Broadcast(c), RanksKnown(c));
}

absl::Status Where(NodeContext& c) {
  return c.Out(0,
               StrCat("where(", c.ref(0), ", ", c.ref(1), ", ", c.ref(2), ")"),
               c.in(1).dtype, Broadcast(c), RanksKnown(c));
}

absl::Status Clip(NodeContext& c) {
  std::string e = c.ref(0);
  const Value& x = c.in(0);
  if (c.opset() < 11) {
    if (c.has("min"))
      e = StrCat("maximum(", e, ", ", F(c.Float("min", 0)), ")");
    if (c.has("max"))
      e = StrCat("minimum(", e, ", ", F(c.Float("max", 0)), ")");
  } else {
    // min(max(x, lo), hi), as NumPy's clip: hi wins where lo > hi.
    if (c.has_input(1)) e = StrCat("maximum(", e, ", ", c.ref(1), ")");
    if (c.has_input(2)) e = StrCat("minimum(", e, ", ", c.ref(2), ")");
  }
  return c.Out(0, e, x.dtype, x.dims, x.rank_known);
}

absl::Status Cast(NodeContext& c) {
  DType to;
  if (c.op() == "CastLike") {
    to = c.in(1).dtype;
  } else {
    const int64_t code = c.Int("to", 0);
    std::optional<DType> type = FromOnnx(static_cast<int32_t>(code));
    if (!type) return c.Unsupported(StrCat("a cast to ONNX type ", code));
    to = *type;
  }
  c.Int("saturate", 1);  // only for the float8 types, which are refused
  const Value& x = c.in(0);
  return c.Out(0, StrCat("cast(", c.ref(0), ", ", DTypeCode(to), ")"), to,
               x.dims, x.rank_known);
}

// ---------------------------------------------------------------- linear
// algebra

absl::Status MatMul(NodeContext& c) {
  RN_RETURN_IF_ERROR(SameDTypes(c));
  RN_ASSIGN_OR_RETURN(int ra, RankOf(c, 0));
  RN_ASSIGN_OR_RETURN(int rb, RankOf(c, 1));
  std::string a = c.ref(0), b = c.ref(1);
  std::vector<int64_t> da = c.in(0).dims, db = c.in(1).dims;
  // NumPy's rules for vectors: a gets a leading 1, b a trailing 1, each
  // removed from the result.
  if (ra == 1) {
    a = StrCat("expand_dims(", a, ", 0)");
    da.insert(da.begin(), 1);
  }
  if (rb == 1) {
    b = StrCat("expand_dims(", b, ", -1)");
    db.push_back(1);
  }
  std::vector<int64_t> batch =
      BroadcastDims(std::vector<int64_t>(da.begin(), da.end() - 2),
                    std::vector<int64_t>(db.begin(), db.end() - 2));
  std::vector<int64_t> out = batch;
  if (ra != 1) out.push_back(da[da.size() - 2]);
  if (rb != 1) out.push_back(db.back());
  std::string e = StrCat(a, " @ ", b);
  if (ra == 1 && rb == 1) {
    e = StrCat("reshape(", e, ", [])");
  } else if (ra == 1) {
    e = StrCat("squeeze(", e, ", -2)");
  } else if (rb == 1) {
    e = StrCat("squeeze(", e, ", -1)");
  }
  return c.Out(0, e, c.in(0).dtype, out);
}

absl::Status Gemm(NodeContext& c) {
  RN_RETURN_IF_ERROR(SameDTypes(c));
  const bool ta = c.Int("transA", 0) != 0, tb = c.Int("transB", 0) != 0;
  const float alpha = c.Float("alpha", 1.0f), beta = c.Float("beta", 1.0f);
  c.Int("broadcast", 1);  // before opset 7; C broadcasts as NumPy's either way
  std::string e = StrCat("matmul(", c.ref(0), ", ", c.ref(1),
                         ta ? ", transpose_a = true" : "",
                         tb ? ", transpose_b = true" : "", ")");
  if (alpha != 1.0f) e = StrCat(F(alpha), " * ", e);
  const std::vector<int64_t>& da = c.in(0).dims;
  const std::vector<int64_t>& db = c.in(1).dims;
  if (da.size() != 2 || db.size() != 2) return c.Invalid("Gemm takes matrices");
  std::vector<int64_t> out = {ta ? da[1] : da[0], tb ? db[0] : db[1]};
  if (c.has_input(2) && beta != 0.0f) {
    e = StrCat(e, " + ", beta != 1.0f ? StrCat(F(beta), " * ") : "", c.ref(2));
    out = BroadcastDims(out, c.in(2).dims);
  }
  return c.Out(0, e, c.in(0).dtype, out);
}

// Softmax, LogSoftmax, Hardmax. Before opset 13 they work on the input
// flattened to 2-D at `axis` (default 1); from 13 along one axis (-1).
absl::Status Softmax(NodeContext& c) {
  RN_RETURN_IF_ERROR(NeedFloat(c, 0));
  RN_ASSIGN_OR_RETURN(int r, RankOf(c, 0));
  const bool old = c.opset() < 13;
  RN_ASSIGN_OR_RETURN(int64_t axis,
                      NormAxis(c, c.Int("axis", old ? 1 : -1), r));
  const Value& x = c.in(0);
  std::string in = c.ref(0);
  int64_t along = axis;
  const bool flatten = old && axis != r - 1;
  if (flatten) {
    if (!AllKnown(std::vector<int64_t>(x.dims.begin() + axis, x.dims.end()))) {
      return c.Unsupported("the pre-13 form over several axes of unknown size");
    }
    in = StrCat("reshape(", in, ", [-1, ", Product(x.dims, axis, x.dims.size()),
                "])");
    along = 1;
  }
  std::string e;
  if (c.op() == "Softmax") e = StrCat("softmax(", in, ", axis = ", along, ")");
  if (c.op() == "LogSoftmax")
    e = StrCat("log_softmax(", in, ", axis = ", along, ")");
  if (c.op() == "Hardmax") {
    const int64_t depth =
        flatten ? Product(x.dims, axis, x.dims.size()) : x.dims[axis];
    if (depth < 0)
      return c.Unsupported("Hardmax along an axis of unknown size");
    e = StrCat("one_hot(argmax(", in, ", axis = ", along, "), ", depth,
               ", axis = ", along, ", dtype = ", DTypeCode(x.dtype), ")");
  }
  if (flatten) e = StrCat("reshape(", e, ", shape_of(", c.ref(0), "))");
  return c.Out(0, e, x.dtype, x.dims);
}

// NegativeLogLikelihoodLoss, and SoftmaxCrossEntropyLoss (the same of
// log_softmax along the classes, axis 1, which is its second output): each
// element's class picked by a one-hot product along the classes moved
// last, weighted by weight[class] where given; a target equal to
// ignore_index weighs 0 (it may lie outside the classes). "mean" divides
// by the sum of the weights (the count of the kept targets without them).
absl::Status ClassLoss(NodeContext& c) {
  RN_RETURN_IF_ERROR(NeedFloat(c, 0));
  RN_ASSIGN_OR_RETURN(int r, RankOf(c, 0));
  const Value& x = c.in(0);
  if (r < 2 || x.dims[1] < 0) {
    return c.Unsupported("a number of classes not known while importing");
  }
  const std::string reduction = c.Str("reduction", "mean");
  if (reduction != "none" && reduction != "sum" && reduction != "mean") {
    return c.Invalid(StrCat("reduction \"", reduction, "\""));
  }
  const std::string dt = DTypeCode(x.dtype);
  const bool softmax = c.op() == "SoftmaxCrossEntropyLoss";
  const std::string log_prob =
      softmax
          ? c.Temp("log_prob", StrCat("log_softmax(", c.ref(0), ", axis = 1)"))
          : "";
  std::string scores = softmax ? log_prob : c.ref(0);
  std::vector<int64_t> perm = {0};
  for (int i = 2; i < r; ++i) perm.push_back(i);
  perm.push_back(1);
  if (r > 2) scores = StrCat("transpose(", scores, ", ", IntList(perm), ")");
  const std::string target =
      c.Temp("target", StrCat("cast(", c.ref(1), ", i64)"));
  std::string cls = target, weight;
  if (c.has("ignore_index")) {
    const int64_t ignored = c.Int("ignore_index", 0);
    weight =
        c.Temp("kept", StrCat("cast(", target, " != ", ignored, ", ", dt, ")"));
    cls = c.Temp("class", StrCat("where(", target, " == ", ignored,
                                 ", zeros_like(", target, "), ", target, ")"));
  }
  if (c.has_input(2)) {
    const std::string w = StrCat("gather(", c.ref(2), ", ", cls, ")");
    weight = weight.empty() ? w : StrCat(w, " * ", weight);
  }
  if (!weight.empty()) weight = c.Temp("weight", weight);
  std::string loss = StrCat("-sum(", scores, " * one_hot(", cls, ", ",
                            x.dims[1], ", dtype = ", dt, "), axis = -1)");
  if (!weight.empty()) loss = StrCat(loss, " * ", weight);
  std::vector<int64_t> dims = c.in(1).dims;
  if (reduction == "sum") {
    loss = StrCat("sum(", loss, ")");
    dims.clear();
  } else if (reduction == "mean") {
    loss = weight.empty() ? StrCat("mean(", loss, ")")
                          : StrCat("sum(", loss, ") / sum(", weight, ")");
    dims.clear();
  }
  RN_RETURN_IF_ERROR(c.Out(0, loss, x.dtype, dims));
  if (softmax && c.has_output(1)) return c.Out(1, log_prob, x.dtype, x.dims);
  return absl::OkStatus();
}

// RotaryEmbedding: each head's first rotary_embedding_dim features taken
// as pairs (halves, or neighbours when interleaved) and rotated by the
// position's angle, cos and sin from the caches (at position_ids where
// given); in a [batch, sequence, heads, head] layout, from an input of
// [batch, sequence, hidden] (num_heads) or [batch, heads, sequence, head].
absl::Status RotaryEmbedding(NodeContext& c) {
  RN_RETURN_IF_ERROR(NeedFloat(c, 0));
  RN_ASSIGN_OR_RETURN(int r, RankOf(c, 0));
  const Value& x = c.in(0);
  if ((r != 3 && r != 4) || !KnownPastBatch(x)) {
    return c.Unsupported(
        "RotaryEmbedding other than of a 3-D or 4-D input of sizes known "
        "while importing");
  }
  const int64_t heads = r == 4 ? x.dims[1] : c.Int("num_heads", 0);
  const int64_t seq = r == 4 ? x.dims[2] : x.dims[1];
  if (heads <= 0 || (r == 3 && x.dims[2] % heads != 0)) {
    return c.Invalid("num_heads must divide the hidden size");
  }
  const int64_t head = r == 4 ? x.dims[3] : x.dims[2] / heads;
  int64_t rotated = c.Int("rotary_embedding_dim", 0);
  if (rotated == 0) rotated = head;
  if (rotated < 0 || rotated > head || rotated % 2 != 0) {
    return c.Invalid(
        StrCat("rotary_embedding_dim ", rotated, " of a head of ", head));
  }
  const bool interleaved = c.Int("interleaved", 0) != 0;
  const std::string t =
      c.Temp("heads", r == 4 ? StrCat("transpose(", c.ref(0), ", [0, 2, 1, 3])")
                             : StrCat("reshape(", c.ref(0), ", ",
                                      IntList({-1, seq, heads, head}), ")"));
  auto angle = [&](int input, const std::string& what) {
    const std::string cache =
        c.has_input(3)
            ? StrCat("gather(", c.ref(input), ", cast(", c.ref(3), ", i64))")
            : c.ref(input);
    return c.Temp(what, StrCat("expand_dims(", cache, ", 2)"));
  };
  const std::string cos = angle(1, "cos"), sin = angle(2, "sin");
  const int64_t half = rotated / 2;
  const std::string x1 = interleaved ? StrCat(t, "[:, :, :, 0:", rotated, ":2]")
                                     : StrCat(t, "[:, :, :, 0:", half, "]");
  const std::string x2 = interleaved
                             ? StrCat(t, "[:, :, :, 1:", rotated, ":2]")
                             : StrCat(t, "[:, :, :, ", half, ":", rotated, "]");
  const std::string real =
      c.Temp("real", StrCat(cos, " * ", x1, " - ", sin, " * ", x2));
  const std::string imag =
      c.Temp("imag", StrCat(sin, " * ", x1, " + ", cos, " * ", x2));
  std::string out =
      interleaved
          ? StrCat("reshape(stack([", real, ", ", imag, "], axis = -1), ",
                   IntList({-1, seq, heads, rotated}), ")")
          : StrCat("concat([", real, ", ", imag, "], axis = -1)");
  if (rotated < head) {
    out = StrCat("concat([", out, ", ", t, "[:, :, :, ", rotated,
                 ":]], axis = -1)");
  }
  out = r == 4
            ? StrCat("transpose(", out, ", [0, 2, 1, 3])")
            : StrCat("reshape(", out, ", ", IntList({-1, seq, x.dims[2]}), ")");
  return c.Out(0, out, x.dtype, x.dims);
}

// Attention (opsets 23 to 25): scaled dot-product attention per head, in
// a [batch, heads, sequence, head] layout (3-D inputs split by
// q_num_heads and kv_num_heads); the past keys and values before the new
// ones (the present outputs); grouped queries share a key head (its heads
// repeated); the mask (boolean: false is -inf; shorter than the keys:
// padded with -inf), the causal bias (offset by the past, or per batch
// entry by nonpad_kv_seqlen), the sliding window and the padding added
// after softcap; a row that the bias masks whole attends to nothing (0). As
// ONNX's reference, Q and K are each scaled by sqrt(scale).
absl::Status Attention(NodeContext& c) {
  RN_RETURN_IF_ERROR(NeedFloat(c, 0));
  RN_ASSIGN_OR_RETURN(int r, RankOf(c, 0));
  const Value &q = c.in(0), &k = c.in(1), &v = c.in(2);
  if ((r != 3 && r != 4) || !KnownPastBatch(q) || !KnownPastBatch(k) ||
      !KnownPastBatch(v) || k.dims.size() != q.dims.size() ||
      v.dims.size() != q.dims.size()) {
    return c.Unsupported(
        "Attention other than of 3-D or 4-D inputs of sizes known while "
        "importing");
  }
  const std::string dt = DTypeCode(q.dtype);
  int64_t qh = 0, kvh = 0, dq = 0, dk = 0, dv = 0, sq = 0, skv = 0;
  std::string q4 = c.ref(0), k4 = c.ref(1), v4 = c.ref(2);
  if (r == 3) {
    qh = c.Int("q_num_heads", 0);
    kvh = c.Int("kv_num_heads", 0);
    if (qh <= 0 || kvh <= 0 || q.dims[2] % qh != 0 || k.dims[2] % kvh != 0 ||
        v.dims[2] % kvh != 0) {
      return c.Invalid(
          "q_num_heads and kv_num_heads must divide the hidden sizes");
    }
    sq = q.dims[1];
    skv = k.dims[1];
    dq = q.dims[2] / qh;
    dk = k.dims[2] / kvh;
    dv = v.dims[2] / kvh;
    auto split = [&](int i, int64_t s, int64_t h, int64_t d) {
      return c.Temp(i == 0   ? "q"
                    : i == 1 ? "k"
                             : "v",
                    StrCat("transpose(reshape(", c.ref(i), ", ",
                           IntList({-1, s, h, d}), "), [0, 2, 1, 3])"));
    };
    q4 = split(0, sq, qh, dq);
    k4 = split(1, skv, kvh, dk);
    v4 = split(2, skv, kvh, dv);
  } else {
    qh = q.dims[1];
    kvh = k.dims[1];
    sq = q.dims[2];
    skv = k.dims[2];
    dq = q.dims[3];
    dk = k.dims[3];
    dv = v.dims[3];
  }
  if (qh % kvh != 0 || (r == 4 && v.dims[1] != k.dims[1])) {
    return c.Invalid("the query heads must be a multiple of the key heads");
  }
  int64_t past = 0;
  if (c.has_input(4) != c.has_input(5)) {
    return c.Invalid("past_key and past_value go together");
  }
  if (c.has_input(4)) {
    const Value& pk = c.in(4);
    if (!pk.rank_known || pk.dims.size() != 4 || pk.dims[2] < 0) {
      return c.Unsupported("a past of a length not known while importing");
    }
    past = pk.dims[2];
    k4 = c.Temp("keys", StrCat("concat([", c.ref(4), ", ", k4, "], axis = 2)"));
    v4 = c.Temp("values",
                StrCat("concat([", c.ref(5), ", ", v4, "], axis = 2)"));
    skv += past;
  }
  const std::string present_k = k4, present_v = v4;
  // 16-bit inputs are attended in f32 and the output rounded once, as
  // PyTorch's scaled_dot_product_attention accumulates: closer to the exact
  // result than rounding each step (ONNX's reference itself rounds its
  // float16 steps).
  const bool narrow = q.dtype == DType::kF16 || q.dtype == DType::kBF16;
  const DType compute = narrow ? DType::kF32 : q.dtype;
  const std::string ct = DTypeCode(compute);
  auto up = [&](const std::string& t) {
    return narrow ? StrCat("cast(", t, ", f32)") : t;
  };
  auto down = [&](const std::string& t) {
    return narrow ? StrCat("cast(", t, ", ", dt, ")") : t;
  };
  q4 = up(q4);
  k4 = up(k4);
  v4 = up(v4);
  if (qh != kvh) {  // each key head serves qh / kvh query heads in turn
    auto repeat = [&](const std::string& t, int64_t d) {
      std::vector<std::string> copies(qh / kvh, t);
      return StrCat("reshape(stack([", Join(copies), "], axis = 2), ",
                    IntList({-1, qh, skv, d}), ")");
    };
    k4 = c.Temp("keys_grouped", repeat(k4, dk));
    v4 = c.Temp("values_grouped", repeat(v4, dv));
  }
  const float scale = c.has("scale") ? c.Float("scale", 1.0f)
                                     : 1.0f / std::sqrt(static_cast<float>(dq));
  const std::string root = F(std::sqrt(scale));
  std::string qk = c.Temp("qk", StrCat("(", q4, " * ", root, ") @ transpose(",
                                       k4, " * ", root, ", [0, 1, 3, 2])"));
  const float softcap = c.Float("softcap", 0.0f);
  if (softcap > 0) {
    qk = c.Temp("capped",
                StrCat(F(softcap), " * tanh(", qk, " / ", F(softcap), ")"));
  }
  // The bias, [.., sq, skv]: the mask, then the causal part.
  const std::string neg = StrCat("cast(-1.0 / 0.0, ", ct, ")");
  std::string bias;
  if (c.has_input(3)) {
    const Value& m = c.in(3);
    if (!m.rank_known || m.dims.empty() || m.dims.back() < 0) {
      return c.Unsupported("a mask of a length not known while importing");
    }
    bias = m.dtype == DType::kBool
               ? StrCat("where(", c.ref(3), ", cast(0.0, ", ct, "), ", neg, ")")
               : up(c.ref(3));
    if (m.dims.back() < skv) {
      std::vector<std::string> rows(m.dims.size(), "[0, 0]");
      rows.back() = IntList({0, skv - m.dims.back()});
      bias = StrCat("pad(", bias, ", [", Join(rows), "], value = -1.0 / 0.0)");
    }
  }
  // Where each query is: after the past, or (an external cache,
  // nonpad_kv_seqlen per batch entry) at the end of the real keys.
  if (c.has_input(6) && c.has_input(4)) {
    return c.Invalid("nonpad_kv_seqlen with past_key");
  }
  const std::string nonpad =
      c.has_input(6) ? c.Temp("kv_length", StrCat("reshape(cast(", c.ref(6),
                                                  ", i64), [-1, 1, 1, 1])"))
                     : "";
  const std::string at = StrCat(
      Iota(sq, 2, 0), " + ",
      nonpad.empty() ? StrCat(past) : StrCat("(", nonpad, " - ", sq, ")"));
  const std::string key = Iota(skv, 2, 1);
  auto add = [&](const std::string& allowed) {
    const std::string b =
        StrCat("where(", allowed, ", cast(0.0, ", ct, "), ", neg, ")");
    bias = bias.empty() ? b : StrCat("(", bias, ") + ", b);
  };
  if (c.Int("is_causal", 0) != 0) add(StrCat(key, " <= ", at));
  const int64_t left = c.Int("left_window_size", -1),
                right = c.Int("right_window_size", -1);
  if (left >= 0) add(StrCat("(", at, ") - ", key, " <= ", left));
  if (right >= 0) add(StrCat(key, " - (", at, ") <= ", right));
  if (!nonpad.empty()) add(StrCat(key, " < ", nonpad));
  if (!bias.empty()) bias = c.Temp("bias", bias);
  const std::string scores =
      bias.empty() ? qk : c.Temp("scores", StrCat(qk, " + ", bias));
  std::string probs = StrCat("softmax(", scores, ", axis = -1)");
  if (c.has("softmax_precision")) {
    const std::optional<DType> p =
        FromOnnx(static_cast<int32_t>(c.Int("softmax_precision", 1)));
    if (!p.has_value() || !IsFloating(*p)) {
      return c.Unsupported("this softmax_precision");
    }
    if (*p != compute) {
      probs = StrCat("cast(softmax(cast(", scores, ", ", DTypeCode(*p),
                     "), axis = -1), ", ct, ")");
    }
  }
  if (!bias.empty()) {
    probs = StrCat("where(max(", bias, ", axis = -1, keepdims = true) == ", neg,
                   ", zeros_like(", scores, "), ", probs, ")");
  }
  probs = c.Temp("probs", probs);
  std::string y = down(StrCat(probs, " @ ", v4));
  std::vector<int64_t> ydims = {q.dims[0], qh, sq, dv};
  if (r == 3) {
    y = StrCat("reshape(transpose(", y, ", [0, 2, 1, 3]), ",
               IntList({-1, sq, qh * dv}), ")");
    ydims = {q.dims[0], sq, qh * dv};
  }
  RN_RETURN_IF_ERROR(c.Out(0, y, q.dtype, ydims));
  if (c.has_output(1)) {
    RN_RETURN_IF_ERROR(c.Out(1, present_k, q.dtype, {q.dims[0], kvh, skv, dk}));
  }
  if (c.has_output(2)) {
    RN_RETURN_IF_ERROR(c.Out(2, present_v, q.dtype, {q.dims[0], kvh, skv, dv}));
  }
  if (c.has_output(3)) {
    const int64_t mode = c.Int("qk_matmul_output_mode", 0);
    if (mode < 0 || mode > 3) {
      return c.Invalid(StrCat("qk_matmul_output_mode ", mode));
    }
    const std::string out = mode == 3 ? probs : mode == 2 ? scores : qk;
    RN_RETURN_IF_ERROR(c.Out(3, down(out), q.dtype, {q.dims[0], qh, sq, skv}));
  }
  return absl::OkStatus();
}

// ---------------------------------------------------------------- reductions

absl::Status Reduce(NodeContext& c) {
  const std::string& op = c.op();
  RN_ASSIGN_OR_RETURN(int r, RankOf(c, 0));
  // The axes were an attribute until ReduceSum's opset 13 and the others'
  // 18, an input since.
  const int64_t input_from = op == "ReduceSum" ? 13 : 18;
  std::vector<int64_t> axes;
  bool noop = false;
  if (c.opset() < input_from) {
    axes = c.Ints("axes");
  } else {
    noop = c.Int("noop_with_empty_axes", 0) != 0;
    if (c.has_input(1)) {
      RN_ASSIGN_OR_RETURN(axes, c.ConstInts(1, "axes"));
    }
  }
  const bool keep = c.Int("keepdims", 1) != 0;
  const Value& x = c.in(0);
  static const std::map<std::string, std::pair<std::string, std::string>>
      kForms = {// op -> (reduction, element-wise part)
                {"ReduceSum", {"sum", "{x}"}},
                {"ReduceMean", {"mean", "{x}"}},
                {"ReduceMax", {"max", "{x}"}},
                {"ReduceMin", {"min", "{x}"}},
                {"ReduceProd", {"prod", "{x}"}},
                {"ReduceLogSumExp", {"logsumexp", "{x}"}},
                {"ReduceL1", {"sum", "abs({x})"}},
                {"ReduceL2", {"sum", "square({x})"}},
                {"ReduceSumSquare", {"sum", "square({x})"}},
                {"ReduceLogSum", {"sum", "{x}"}}};
  auto [reduction, elementwise] = kForms.at(op);
  if (x.dtype == DType::kBool) {
    // On booleans the maximum is any and the minimum all.
    if (op == "ReduceMax")
      reduction = "any";
    else if (op == "ReduceMin")
      reduction = "all";
    else
      return c.Unsupported("dtype bool");
  }
  const std::string in = Fill(elementwise, c.ref(0));
  if (axes.empty() && noop) {
    // No axes and noop_with_empty_axes: the element-wise part only.
    return c.Out(0, in, x.dtype, x.dims);
  }
  std::vector<bool> reduced(r, axes.empty());
  for (int64_t a : axes) {
    RN_ASSIGN_OR_RETURN(int64_t n, NormAxis(c, a, r));
    reduced[n] = true;
  }
  std::vector<int64_t> norm, dims;
  bool empty = false;
  for (int i = 0; i < r; ++i) {
    empty = empty || (reduced[i] && x.dims[i] == 0);
    if (reduced[i]) norm.push_back(i);
    if (!reduced[i]) dims.push_back(x.dims[i]);
    if (reduced[i] && keep) dims.push_back(1);
  }
  if (empty &&
      (reduction == "max" || reduction == "min" || reduction == "logsumexp")) {
    // Over no elements: the reduction's identity, as ONNX says (-inf for
    // a maximum and a log-sum-exp, +inf for a minimum).
    if (!IsFloating(x.dtype) || !AllKnown(dims)) {
      return c.Unsupported(
          "a maximum or minimum over an empty axis of a non-float dtype or "
          "of other sizes not known");
    }
    return c.Out(0,
                 StrCat("fill(", IntList(dims), ", ",
                        reduction == "min" ? "1.0 / 0.0" : "-1.0 / 0.0",
                        ", dtype = ", DTypeCode(x.dtype), ")"),
                 x.dtype, dims);
  }
  std::string e = StrCat(reduction, "(", in, ", axis = ", IntList(norm),
                         keep ? ", keepdims = true" : "", ")");
  if (op == "ReduceL2") e = StrCat("sqrt(", e, ")");
  if (op == "ReduceLogSum") e = StrCat("log(", e, ")");
  return c.Out(0, e, x.dtype, dims);
}

absl::Status ArgReduce(NodeContext& c) {
  RN_ASSIGN_OR_RETURN(int r, RankOf(c, 0));
  RN_ASSIGN_OR_RETURN(int64_t axis, NormAxis(c, c.Int("axis", 0), r));
  const bool keep = c.Int("keepdims", 1) != 0;
  const bool last = c.Int("select_last_index", 0) != 0;
  const std::string fn = c.op() == "ArgMax" ? "argmax" : "argmin";
  const Value& x = c.in(0);
  std::string e;
  if (!last) {
    e = StrCat(fn, "(", c.ref(0), ", axis = ", axis, ")");
  } else {
    // The last of equal extremes is the first one of the reversed axis.
    std::vector<std::string> idx(r, ":");
    idx[axis] = "::-1";
    e = StrCat("shape_of(", c.ref(0), ")[", axis, "] - 1 - ", fn, "(", c.ref(0),
               "[", Join(idx), "], axis = ", axis, ")");
  }
  std::vector<int64_t> dims = x.dims;
  if (keep) {
    e = StrCat("expand_dims(", e, ", ", axis, ")");
    dims[axis] = 1;
  } else {
    dims.erase(dims.begin() + axis);
  }
  return c.Out(0, StrCat("cast(", e, ", i64)"), DType::kI64, dims);
}

absl::Status CumSum(NodeContext& c) {
  RN_ASSIGN_OR_RETURN(std::vector<int64_t> axis, c.ConstInts(1, "axis"));
  if (axis.size() != 1) return c.Invalid("axis must be a scalar");
  const Value& x = c.in(0);
  return c.Out(0,
               StrCat("cumsum(", c.ref(0), ", axis = ", axis[0],
                      c.Int("exclusive", 0) != 0 ? ", exclusive = true" : "",
                      c.Int("reverse", 0) != 0 ? ", reverse = true" : "", ")"),
               x.dtype, x.dims, x.rank_known);
}

// Runnel has no cumulative product: each element is the product of the
// axis's elements up to it (before it: exclusive; from the end: reverse),
// the others replaced by 1, over a second copy of the axis. Quadratic in
// the axis's length, so sizes must be known and small enough.
absl::Status CumProd(NodeContext& c) {
  RN_ASSIGN_OR_RETURN(int r, RankOf(c, 0));
  RN_ASSIGN_OR_RETURN(std::vector<int64_t> axes, c.ConstInts(1, "axis"));
  if (axes.size() != 1) return c.Invalid("axis must be a scalar");
  RN_ASSIGN_OR_RETURN(int64_t axis, NormAxis(c, axes[0], r));
  const Value& x = c.in(0);
  if (!AllKnown(x.dims)) {
    return c.Unsupported("CumProd of sizes not known while importing");
  }
  const int64_t n = x.dims[axis];
  if (n * Product(x.dims, 0, x.dims.size()) > (int64_t{1} << 26)) {
    return c.Unsupported(
        "CumProd of more than 2^26 elements times the axis's length (it is "
        "quadratic in that length here)");
  }
  const bool exclusive = c.Int("exclusive", 0) != 0;
  const bool reverse = c.Int("reverse", 0) != 0;
  // i, the element's position, on `axis`; j, the copy's, on axis + 1.
  const std::string i = Iota(n, r + 1, static_cast<int>(axis)),
                    j = Iota(n, r + 1, static_cast<int>(axis) + 1);
  const std::string kept = reverse ? StrCat(j, exclusive ? " > " : " >= ", i)
                                   : StrCat(j, exclusive ? " < " : " <= ", i);
  const std::string xj =
      c.Temp("copy", StrCat("expand_dims(", c.ref(0), ", ", axis, ")"));
  return c.Out(0,
               StrCat("prod(where(", kept, ", ", xj, ", ones_like(", xj,
                      ")), axis = ", axis + 1, ")"),
               x.dtype, x.dims);
}

// ---------------------------------------------------------------- shapes

absl::Status Reshape(NodeContext& c) {
  const Value& x = c.in(0);
  const bool allow_zero = c.Int("allowzero", 0) != 0;
  if (c.constant(1)) {
    RN_ASSIGN_OR_RETURN(std::vector<int64_t> shape, c.ConstInts(1, "shape"));
    bool symbolic = false;
    for (size_t i = 0; i < shape.size(); ++i) {
      if (shape[i] == 0 && !allow_zero) {
        // 0 copies the input's dimension.
        if (!x.rank_known || i >= x.dims.size()) {
          return c.Invalid("a 0 in the shape beyond the input's rank");
        }
        shape[i] = x.dims[i];
        if (shape[i] < 0) symbolic = true;
      }
    }
    std::vector<int64_t> dims = shape;
    int64_t known = 1;
    int minus = -1;
    for (size_t i = 0; i < dims.size(); ++i) {
      if (dims[i] < 0)
        minus = static_cast<int>(i);
      else
        known *= dims[i];
    }
    if (minus >= 0 && !symbolic && x.rank_known && AllKnown(x.dims) &&
        known > 0) {
      dims[minus] = Product(x.dims, 0, x.dims.size()) / known;
    }
    if (!symbolic) {
      return c.Out(0, StrCat("reshape(", c.ref(0), ", ", IntList(shape), ")"),
                   x.dtype, dims);
    }
  }
  const Value& s = c.in(1);
  if (s.dims.size() != 1 || s.dims[0] < 0) {
    return c.Unsupported("a computed shape of unknown length");
  }
  std::string shape = c.ref(1);
  if (s.dtype != DType::kI64) shape = StrCat("cast(", shape, ", i64)");
  if (!allow_zero) {
    // A 0 copies the input's dimension: the input's shape, cut or padded
    // to the new rank.
    RN_ASSIGN_OR_RETURN(int r, RankOf(c, 0));
    std::string dims = StrCat("cast(shape_of(", c.ref(0), "), i64)");
    if (s.dims[0] < r) dims = StrCat(dims, "[:", s.dims[0], "]");
    if (s.dims[0] > r) {
      dims = StrCat("concat([", dims, ", zeros([", s.dims[0] - r,
                    "], dtype = i64)], axis = 0)");
    }
    shape = StrCat("where(", shape, " == 0, ", dims, ", ", shape, ")");
  }
  return c.Out(0, StrCat("reshape(", c.ref(0), ", ", shape, ")"), x.dtype,
               std::vector<int64_t>(s.dims[0], -1));
}

absl::Status Transpose(NodeContext& c) {
  RN_ASSIGN_OR_RETURN(int r, RankOf(c, 0));
  std::vector<int64_t> perm = c.Ints("perm");
  if (perm.empty()) {
    for (int i = r - 1; i >= 0; --i) perm.push_back(i);
  }
  const Value& x = c.in(0);
  std::vector<int64_t> dims;
  for (int64_t p : perm) {
    RN_ASSIGN_OR_RETURN(int64_t a, NormAxis(c, p, r));
    dims.push_back(x.dims[a]);
  }
  return c.Out(0, StrCat("transpose(", c.ref(0), ", ", IntList(perm), ")"),
               x.dtype, dims);
}

absl::Status Concat(NodeContext& c) {
  RN_RETURN_IF_ERROR(SameDTypes(c));
  RN_ASSIGN_OR_RETURN(int r, RankOf(c, 0));
  RN_ASSIGN_OR_RETURN(int64_t axis, NormAxis(c, c.Int("axis", 0), r));
  std::vector<std::string> parts;
  std::vector<int64_t> dims = c.in(0).dims;
  int64_t total = 0;
  for (int i = 0; i < c.num_inputs(); ++i) {
    if (!c.has_input(i)) continue;
    parts.push_back(c.ref(i));
    const int64_t d = c.in(i).rank_known ? c.in(i).dims[axis] : -1;
    total = total < 0 || d < 0 ? -1 : total + d;
  }
  dims[axis] = total;
  return c.Out(0, StrCat("concat([", Join(parts), "], axis = ", axis, ")"),
               c.in(0).dtype, dims);
}

absl::Status Split(NodeContext& c) {
  RN_ASSIGN_OR_RETURN(int r, RankOf(c, 0));
  RN_ASSIGN_OR_RETURN(int64_t axis, NormAxis(c, c.Int("axis", 0), r));
  const Value& x = c.in(0);
  std::vector<int64_t> sizes;
  if (c.opset() < 13) {
    sizes = c.Ints("split");
  } else if (c.has_input(1)) {
    RN_ASSIGN_OR_RETURN(sizes, c.ConstInts(1, "split"));
  }
  const int n = c.num_outputs();
  const int64_t d = x.dims[axis];
  const int64_t parts = c.Int("num_outputs", n);
  if (sizes.empty()) {
    if (d >= 0 && d % parts != 0) {
      // The last part is smaller (opset 18's num_outputs).
      const int64_t each = (d + parts - 1) / parts;
      for (int64_t at = 0; at < d; at += each)
        sizes.push_back(std::min(each, d - at));
    } else {
      std::vector<std::vector<int64_t>> dims(n, x.dims);
      for (auto& dd : dims) dd[axis] = d < 0 ? -1 : d / parts;
      return c.OutTuple(
          StrCat("split(", c.ref(0), ", ", parts, ", axis = ", axis, ")"),
          x.dtype, dims);
    }
  }
  if (static_cast<int>(sizes.size()) != n) {
    // Also a Split into more parts than the axis has (in an If's branch
    // that is never taken, ONNX builds it all the same; Runnel builds
    // both branches).
    return c.Unsupported(
        StrCat("a Split of ", sizes.size(), " sizes into ", n, " outputs"));
  }
  int64_t at = 0;
  for (int i = 0; i < n; ++i) {
    std::vector<std::string> idx(r, ":");
    idx[axis] = StrCat(at, ":", at + sizes[i]);
    std::vector<int64_t> dims = x.dims;
    dims[axis] = sizes[i];
    RN_RETURN_IF_ERROR(
        c.Out(i, StrCat(c.ref(0), "[", Join(idx), "]"), x.dtype, dims));
    at += sizes[i];
  }
  return absl::OkStatus();
}

absl::StatusOr<std::vector<int64_t>> AxesOf(NodeContext& c,
                                            int64_t input_from) {
  if (c.opset() < input_from) return c.Ints("axes");
  if (!c.has_input(1)) return std::vector<int64_t>{};
  return c.ConstInts(1, "axes");
}

absl::Status Squeeze(NodeContext& c) {
  RN_ASSIGN_OR_RETURN(int r, RankOf(c, 0));
  RN_ASSIGN_OR_RETURN(std::vector<int64_t> axes, AxesOf(c, 13));
  const Value& x = c.in(0);
  std::vector<bool> drop(r, false);
  if (axes.empty()) {
    for (int i = 0; i < r; ++i) {
      if (x.dims[i] < 0)
        return c.Unsupported(
            "Squeeze without axes of a dimension of unknown size");
      drop[i] = x.dims[i] == 1;
    }
  }
  for (int64_t a : axes) {
    RN_ASSIGN_OR_RETURN(int64_t n, NormAxis(c, a, r));
    drop[n] = true;
  }
  std::vector<int64_t> norm, dims;
  for (int i = 0; i < r; ++i)
    (drop[i] ? norm : dims).push_back(drop[i] ? i : x.dims[i]);
  std::string e = c.ref(0);
  // From the last axis, so that the others keep their numbers.
  for (auto it = norm.rbegin(); it != norm.rend(); ++it) {
    e = StrCat("squeeze(", e, ", ", *it, ")");
  }
  return c.Out(0, e, x.dtype, dims);
}

absl::Status Unsqueeze(NodeContext& c) {
  RN_ASSIGN_OR_RETURN(int r, RankOf(c, 0));
  RN_ASSIGN_OR_RETURN(std::vector<int64_t> axes, AxesOf(c, 13));
  const int out_rank = r + static_cast<int>(axes.size());
  std::vector<int64_t> norm;
  for (int64_t a : axes) {
    RN_ASSIGN_OR_RETURN(int64_t n, NormAxis(c, a, out_rank));
    norm.push_back(n);
  }
  std::sort(norm.begin(), norm.end());
  const Value& x = c.in(0);
  std::string e = c.ref(0);
  std::vector<int64_t> dims = x.dims;
  for (int64_t a : norm) {
    e = StrCat("expand_dims(", e, ", ", a, ")");
    dims.insert(dims.begin() + a, 1);
  }
  return c.Out(0, e, x.dtype, dims);
}

absl::Status Flatten(NodeContext& c) {
  RN_ASSIGN_OR_RETURN(int r, RankOf(c, 0));
  int64_t axis = c.Int("axis", 1);
  if (axis < 0) axis += r;
  if (axis < 0 || axis > r)
    return c.Invalid(StrCat("axis ", axis, " is out of range"));
  const Value& x = c.in(0);
  std::vector<int64_t> lead(x.dims.begin(), x.dims.begin() + axis);
  std::vector<int64_t> rest(x.dims.begin() + axis, x.dims.end());
  std::vector<int64_t> dims = {
      AllKnown(lead) ? Product(lead, 0, lead.size()) : -1,
      AllKnown(rest) ? Product(rest, 0, rest.size()) : -1};
  std::string shape;
  if (dims[0] >= 0)
    shape = IntList({dims[0], -1});
  else if (dims[1] >= 0)
    shape = IntList({-1, dims[1]});
  else
    return c.Unsupported("Flatten of dimensions of unknown size on both sides");
  return c.Out(0, StrCat("reshape(", c.ref(0), ", ", shape, ")"), x.dtype,
               dims);
}

absl::Status Expand(NodeContext& c) {
  // Both ways, as NumPy broadcasts x against ones(shape).
  const Value& x = c.in(0);
  std::vector<int64_t> dims;
  if (c.constant(1)) {
    RN_ASSIGN_OR_RETURN(std::vector<int64_t> shape, c.ConstInts(1, "shape"));
    dims = BroadcastDims(x.dims, shape);
  } else {
    const Value& s = c.in(1);
    if (s.dims.size() != 1 || s.dims[0] < 0) {
      return c.Unsupported("a computed shape of unknown length");
    }
    dims.assign(std::max<int64_t>(s.dims[0], x.dims.size()), -1);
  }
  return c.Out(0,
               StrCat("where(ones(", c.ref(1), ", dtype = bool), ", c.ref(0),
                      ", ", c.ref(0), ")"),
               x.dtype, dims);
}

absl::Status Tile(NodeContext& c) {
  const Value& x = c.in(0);
  std::vector<int64_t> dims(x.dims.size(), -1);
  std::string reps = c.ref(1);
  if (c.constant(1)) {
    RN_ASSIGN_OR_RETURN(std::vector<int64_t> r, c.ConstInts(1, "repeats"));
    reps = IntList(r);
    for (size_t i = 0; i < dims.size() && i < r.size(); ++i) {
      dims[i] = x.dims[i] < 0 ? -1 : x.dims[i] * r[i];
    }
  }
  return c.Out(0, StrCat("tile(", c.ref(0), ", ", reps, ")"), x.dtype, dims);
}

absl::Status Gather(NodeContext& c) {
  RN_ASSIGN_OR_RETURN(int r, RankOf(c, 0));
  RN_ASSIGN_OR_RETURN(int64_t axis, NormAxis(c, c.Int("axis", 0), r));
  const Value& x = c.in(0);
  const Value& i = c.in(1);
  std::string idx = c.ref(1);
  bool maybe_negative = true;
  if (i.constant) {
    std::vector<int64_t> v = i.constant->ToInt64s();
    maybe_negative =
        std::any_of(v.begin(), v.end(), [](int64_t k) { return k < 0; });
  }
  if (maybe_negative) {
    // Negative indices count from the end.
    idx = FromEnd(idx, StrCat("cast(shape_of(", c.ref(0), ")[", axis, "], ",
                              DTypeCode(i.dtype), ")"));
  }
  std::vector<int64_t> dims(x.dims.begin(), x.dims.begin() + axis);
  dims.insert(dims.end(), i.dims.begin(), i.dims.end());
  dims.insert(dims.end(), x.dims.begin() + axis + 1, x.dims.end());
  return c.Out(0,
               StrCat("gather(", c.ref(0), ", ", idx, ", axis = ", axis, ")"),
               x.dtype, dims);
}

absl::Status ShapeOp(NodeContext& c) {
  const Value& x = c.in(0);
  if (x.rank_known && AllKnown(x.dims)) {
    // Known while importing: a constant, so that the shape arithmetic
    // after it folds too.
    const int64_t n = static_cast<int64_t>(x.dims.size());
    auto clampi = [n](int64_t v) {
      return std::clamp(v < 0 ? v + n : v, int64_t{0}, n);
    };
    const int64_t from = clampi(c.Int("start", 0));
    const int64_t to = c.has("end") ? clampi(c.Int("end", 0)) : n;
    std::vector<int64_t> dims(x.dims.begin() + from,
                              x.dims.begin() + std::max(from, to));
    return c.OutConstant(0, Tensor::FromVector(dims));
  }
  std::string e = StrCat("cast(shape_of(", c.ref(0), "), i64)");
  const int64_t start = c.Int("start", 0);
  const bool has_end = c.has("end");
  const int64_t end = c.Int("end", 0);
  int64_t n = x.rank_known ? static_cast<int64_t>(x.dims.size()) : -1;
  if (start != 0 || has_end) {
    e = StrCat(e, "[", start, ":", has_end ? StrCat(end) : "", "]");
    if (n >= 0) {
      auto clampi = [n](int64_t v) {
        return std::clamp(v < 0 ? v + n : v, int64_t{0}, n);
      };
      n = std::max<int64_t>(0, (has_end ? clampi(end) : n) - clampi(start));
    }
  }
  return c.Out(0, e, DType::kI64, {n});
}

absl::Status Size(NodeContext& c) {
  const Value& x = c.in(0);
  if (x.rank_known && AllKnown(x.dims)) {  // known: the shape arithmetic folds
    return c.OutConstant(
        0, Tensor::Scalar<int64_t>(Product(x.dims, 0, x.dims.size())));
  }
  return c.Out(0, StrCat("cast(size(", c.ref(0), "), i64)"), DType::kI64, {});
}

absl::Status Constant(NodeContext& c) {
  if (const onnx::TensorProto* t = c.TensorAttr("value")) {
    RN_ASSIGN_OR_RETURN(Tensor v,
                        ToTensor(*t, StrCat("Constant '", c.op(), "'")));
    return c.OutConstant(0, std::move(v));
  }
  if (c.has("value_float"))
    return c.OutConstant(0, Tensor::Scalar(c.Float("value_float", 0)));
  if (c.has("value_int"))
    return c.OutConstant(0, Tensor::Scalar(c.Int("value_int", 0)));
  if (c.has("value_floats")) {
    return c.Unsupported("value_floats");
  }
  if (c.has("value_ints"))
    return c.OutConstant(0, Tensor::FromVector(c.Ints("value_ints")));
  return c.Unsupported("this form of Constant");
}

absl::Status ConstantOfShape(NodeContext& c) {
  DType dtype = DType::kF32;
  std::string value = "0.0";
  int64_t integer = 0;  // the value, of an integer dtype
  if (const onnx::TensorProto* t = c.TensorAttr("value")) {
    RN_ASSIGN_OR_RETURN(Tensor v, ToTensor(*t, "ConstantOfShape's value"));
    if (v.num_elements() != 1) return c.Invalid("value must hold one element");
    dtype = v.dtype();
    if (IsInteger(dtype)) integer = v.ToInt64s()[0];
    std::optional<std::string> lit = Literal(*v.Reshaped(Shape{}));
    if (!lit)
      return c.Unsupported(StrCat("a value of dtype ", DTypeCode(dtype)));
    value = *lit;
  }
  std::vector<int64_t> dims;
  if (c.constant(0)) {
    RN_ASSIGN_OR_RETURN(dims, c.ConstInts(0, "shape"));
    // A short row of integers is shape arithmetic (an expanded function's
    // shape of ones): a constant, so that what follows folds too.
    const int64_t n = Product(dims, 0, dims.size());
    if (dtype == DType::kI64 && dims.size() == 1 && n <= 64) {
      return c.OutConstant(
          0, Tensor::FromVector(std::vector<int64_t>(n, integer)));
    }
  } else {
    dims.assign(
        std::max<int64_t>(c.in(0).dims.empty() ? 0 : c.in(0).dims[0], 0), -1);
  }
  return c.Out(0,
               StrCat("fill(", c.ref(0), ", ", value,
                      ", dtype = ", DTypeCode(dtype), ")"),
               dtype, dims);
}

absl::Status Range(NodeContext& c) {
  const DType dtype = c.in(0).dtype;
  int64_t n = -1;  // the length, when the bounds are known
  if (c.constant(0) && c.constant(1) && c.constant(2)) {
    std::vector<double> s = c.constant(0)->ToDoubles(),
                        l = c.constant(1)->ToDoubles(),
                        d = c.constant(2)->ToDoubles();
    n = std::max<int64_t>(
        0, static_cast<int64_t>(std::ceil((l.at(0) - s.at(0)) / d.at(0))));
  }
  // The bounds are scalars; a one-element vector (which ONNX's functions'
  // expansions pass, and its reference takes) is read as one.
  auto scalar = [&](int i) {
    const Value& v = c.in(i);
    return v.rank_known && v.dims == std::vector<int64_t>{1}
               ? StrCat("reshape(", c.ref(i), ", [])")
               : c.ref(i);
  };
  return c.Out(0,
               StrCat("arange(", scalar(0), ", ", scalar(1), ", ", scalar(2),
                      ", dtype = ", DTypeCode(dtype), ")"),
               dtype, {n});
}

// Slice: starts, ends, axes and steps as inputs (attributes before opset
// 10); Runnel's subscripts clamp bounds as ONNX does.
absl::Status Slice(NodeContext& c) {
  RN_ASSIGN_OR_RETURN(int r, RankOf(c, 0));
  const Value& x = c.in(0);
  std::vector<std::string> starts, ends;
  // The bounds' values where they are known, for the output's dimensions.
  std::vector<std::optional<int64_t>> start_v, end_v;
  std::vector<int64_t> axes, steps;
  const int64_t kClamp = int64_t{1} << 40;
  auto add = [&](std::vector<std::string>& code,
                 std::vector<std::optional<int64_t>>& known, int64_t v) {
    v = std::clamp(v, -kClamp, kClamp);
    code.push_back(StrCat(v));
    known.push_back(v);
  };
  int64_t n = 0;
  if (c.opset() < 10) {
    for (int64_t v : c.Ints("starts")) add(starts, start_v, v);
    for (int64_t v : c.Ints("ends")) add(ends, end_v, v);
    axes = c.Ints("axes");
    n = static_cast<int64_t>(starts.size());
  } else {
    for (int k = 1; k <= 2; ++k) {
      std::vector<std::string>& code = k == 1 ? starts : ends;
      std::vector<std::optional<int64_t>>& known = k == 1 ? start_v : end_v;
      const Value& v = c.in(k);
      if (v.dims.size() != 1 || v.dims[0] < 0) {
        return c.Unsupported("starts or ends of unknown length");
      }
      n = v.dims[0];
      if (v.constant) {
        for (int64_t b : v.constant->ToInt64s()) add(code, known, b);
      } else {
        for (int64_t j = 0; j < n; ++j) {
          code.push_back(StrCat(c.ref(k), "[", j, "]"));
          known.push_back(std::nullopt);
        }
      }
    }
    if (c.has_input(3)) {
      RN_ASSIGN_OR_RETURN(axes, c.ConstInts(3, "axes"));
    }
    if (c.has_input(4)) {
      RN_ASSIGN_OR_RETURN(steps, c.ConstInts(4, "steps"));
    }
  }
  if (axes.empty()) {
    for (int64_t i = 0; i < n; ++i) axes.push_back(i);
  }
  if (steps.empty()) steps.assign(n, 1);
  if (static_cast<int64_t>(ends.size()) != n ||
      static_cast<int64_t>(axes.size()) != n ||
      static_cast<int64_t>(steps.size()) != n) {
    return c.Invalid("starts, ends, axes and steps differ in length");
  }
  std::vector<std::string> idx(r, ":");
  std::vector<int64_t> dims = x.dims;
  for (int64_t k = 0; k < n; ++k) {
    RN_ASSIGN_OR_RETURN(int64_t a, NormAxis(c, axes[k], r));
    const int64_t st = steps[k];
    if (st == 0) return c.Invalid("a step of 0");
    idx[a] = StrCat(starts[k], ":", ends[k], st != 1 ? StrCat(":", st) : "");
    const int64_t d = x.dims[a];
    dims[a] = -1;
    if (d < 0 || !start_v[k] || !end_v[k]) continue;
    // Python's slice arithmetic (slice.indices) on a known dimension.
    auto bound = [&](int64_t v) {
      if (v < 0) v += d;
      return st > 0 ? std::clamp<int64_t>(v, 0, d)
                    : std::clamp<int64_t>(v, -1, d - 1);
    };
    const int64_t s = bound(*start_v[k]), e = bound(*end_v[k]);
    dims[a] = st > 0 ? std::max<int64_t>(0, (e - s + st - 1) / st)
                     : std::max<int64_t>(0, (s - e - st - 1) / -st);
  }
  return c.Out(0, StrCat(c.ref(0), "[", Join(idx), "]"), x.dtype, dims);
}

absl::Status Pad(NodeContext& c) {
  RN_ASSIGN_OR_RETURN(int r, RankOf(c, 0));
  const std::string mode = c.Str("mode", "constant");
  if (mode != "constant" && mode != "edge" && mode != "reflect" &&
      mode != "wrap") {
    return c.Unsupported(StrCat("mode \"", mode, "\""));
  }
  std::vector<int64_t> pads;
  std::string value = "0";
  // A constant_value computed in the graph (a Cast of a Constant, in the
  // expansions of ONNX's functions): the pads put in by a where.
  bool computed = false;
  const Value& x = c.in(0);
  std::vector<int64_t> axes;
  if (c.opset() < 11) {
    pads = c.Ints("pads");
    value = F(c.Float("value", 0.0f));
  } else {
    RN_ASSIGN_OR_RETURN(pads, c.ConstInts(1, "pads"));
    if (c.has_input(2)) {
      value = c.ref(2);
      computed = !c.constant(2);
    }
    if (c.has_input(3)) {
      RN_ASSIGN_OR_RETURN(axes, c.ConstInts(3, "axes"));
    }
  }
  if (axes.empty()) {
    for (int i = 0; i < r; ++i) axes.push_back(i);
  }
  if (pads.size() != 2 * axes.size())
    return c.Invalid("pads has the wrong length");
  std::vector<std::vector<int64_t>> both(r, {0, 0});
  const size_t n = axes.size();
  for (size_t k = 0; k < n; ++k) {
    RN_ASSIGN_OR_RETURN(int64_t a, NormAxis(c, axes[k], r));
    if (pads[k] < 0 || pads[k + n] < 0)
      return c.Unsupported("negative pads (cropping)");
    both[a] = {pads[k], pads[k + n]};
  }
  std::vector<std::string> rows;
  std::vector<int64_t> dims = x.dims;
  for (int i = 0; i < r; ++i) {
    rows.push_back(IntList(both[i]));
    if (dims[i] >= 0) dims[i] += both[i][0] + both[i][1];
  }
  if (mode == "constant" && computed) {
    if (c.in(2).rank_known && c.in(2).dims.size() > 1)
      return c.Invalid("constant_value of more than one element");
    const std::string inside = StrCat("pad(ones_like(", c.ref(0), "), [",
                                      Join(rows), "], value = 0) == 1");
    return c.Out(0,
                 StrCat("where(", inside, ", pad(", c.ref(0), ", [", Join(rows),
                        "], value = 0), reshape(", value, ", []))"),
                 x.dtype, dims);
  }
  if (mode == "constant") {
    return c.Out(
        0,
        StrCat("pad(", c.ref(0), ", [", Join(rows), "], value = ", value, ")"),
        x.dtype, dims);
  }
  // edge, reflect, wrap: slices of the input joined to it, one axis at a
  // time.
  std::string e = c.ref(0);
  for (int a = 0; a < r; ++a) {
    const int64_t b = both[a][0], en = both[a][1];
    if (b == 0 && en == 0) continue;
    const int64_t d = x.dims[a];
    if (d < 0)
      return c.Unsupported(
          StrCat("mode \"", mode, "\" along an axis of unknown size"));
    if ((mode == "reflect" && (b >= d || en >= d)) ||
        (mode == "wrap" && (b > d || en > d))) {
      return c.Unsupported(
          StrCat("mode \"", mode, "\" with pads beyond the axis"));
    }
    auto sub = [&](const std::string& range) {
      std::vector<std::string> idx(r, ":");
      idx[a] = range;
      return StrCat(e, "[", Join(idx), "]");
    };
    auto edge = [&](const std::string& range, int64_t times) {
      std::vector<int64_t> reps(r, 1);
      reps[a] = times;
      return StrCat("tile(", sub(range), ", ", IntList(reps), ")");
    };
    std::vector<std::string> parts;
    if (b > 0) {
      parts.push_back(mode == "edge"      ? edge("0:1", b)
                      : mode == "reflect" ? sub(StrCat(b, ":0:-1"))
                                          : sub(StrCat(d - b, ":")));
    }
    parts.push_back(e);
    if (en > 0) {
      parts.push_back(
          mode == "edge" ? edge(StrCat(d - 1, ":"), en)
          : mode == "reflect"
              ? sub(StrCat(d - 2, ":", d - 2 - en < 0 ? "" : StrCat(d - 2 - en),
                           ":-1"))
              : sub(StrCat(":", en)));
    }
    e = StrCat("concat([", Join(parts), "], axis = ", a, ")");
    if (a + 1 < r) e = c.Temp(StrCat("pad", a), e);
  }
  return c.Out(0, e, x.dtype, dims);
}

// ---------------------------------------------------------------- images

struct Window {
  std::vector<int64_t> kernel, strides, dilations,
      pads;                         // pads: begin.., end..
  bool same_upper_unknown = false;  // "same" of unknown sizes: TF's padding
  bool lifted = false;              // a 1-D window as a 2-D one of height 1
};

// The input (or filter) of a lifted window with its height of 1, and a
// result without it.
std::string Lift(const Window& w, const std::string& x) {
  return w.lifted ? StrCat("expand_dims(", x, ", 2)") : x;
}
std::string Lower(const Window& w, const std::string& x) {
  return w.lifted ? StrCat("squeeze(", x, ", 2)") : x;
}
std::vector<int64_t> Lower(const Window& w, std::vector<int64_t> dims) {
  if (w.lifted) dims.erase(dims.begin() + 2);
  return dims;
}
// The input's facts as the 2-D window sees them.
Value Lifted(const Window& w, Value x) {
  if (w.lifted) x.dims.insert(x.dims.begin() + 2, 1);
  return x;
}

// The window attributes of a 2-D Conv or pool, with auto_pad resolved into
// explicit pads where the input's size is known.
// A convolution of NHWC `in` with `filters` (their axis 0 holds the
// groups' filters one after another): `conv(in, filters)` itself for one
// group, else that of each group of input channels with its filters, the
// results concatenated along the channels (axis `channels`: 4 for NDHWC).
std::string Grouped(NodeContext& c, const std::string& in,
                    const std::string& filters, int64_t groups,
                    const std::function<std::string(const std::string&,
                                                    const std::string&)>& conv,
                    int channels = 3) {
  if (groups == 1) return conv(in, filters);
  const std::string xs = c.Temp(
      "groups", StrCat("split(", in, ", ", groups, ", axis = ", channels, ")"));
  const std::string fs =
      c.Temp("filters", StrCat("split(", filters, ", ", groups, ", axis = 0)"));
  std::vector<std::string> parts;
  for (int64_t g = 0; g < groups; ++g) {
    parts.push_back(conv(StrCat(xs, "[", g, "]"), StrCat(fs, "[", g, "]")));
  }
  return StrCat("concat([", Join(parts), "], axis = ", channels, ")");
}

// NCDHW to NDHWC and back.
std::string ToNDHWC(const std::string& x) {
  return StrCat("transpose(", x, ", [0, 2, 3, 4, 1])");
}
std::string ToNCDHW(const std::string& x) {
  return StrCat("transpose(", x, ", [0, 4, 1, 2, 3])");
}

// A 1-D window (an (N, C, W) input) is lifted to 2-D with a height of 1.
absl::StatusOr<Window> WindowOf(NodeContext& c, std::vector<int64_t> kernel) {
  Value x = c.in(0);
  if (!x.rank_known || (x.dims.size() != 4 && x.dims.size() != 3)) {
    return c.Unsupported(
        "an input other than 3-D (N, C, W) or 4-D (N, C, H, W)");
  }
  Window w;
  w.lifted = x.dims.size() == 3;
  if (c.has("kernel_shape")) kernel = c.Ints("kernel_shape");
  if (kernel.size() != x.dims.size() - 2)
    return c.Unsupported("a window other than 1-D or 2-D");
  w.kernel = kernel;
  w.strides = c.Ints("strides");
  w.dilations = c.Ints("dilations");
  w.pads = c.Ints("pads");
  if (w.lifted) {
    x.dims.insert(x.dims.begin() + 2, 1);
    w.kernel.insert(w.kernel.begin(), 1);
    if (!w.strides.empty()) w.strides.insert(w.strides.begin(), 1);
    if (!w.dilations.empty()) w.dilations.insert(w.dilations.begin(), 1);
    if (w.pads.size() == 2) w.pads = {0, w.pads[0], 0, w.pads[1]};
  }
  if (w.strides.empty()) w.strides = {1, 1};
  if (w.dilations.empty()) w.dilations = {1, 1};
  if (w.pads.empty()) w.pads = {0, 0, 0, 0};
  if (w.strides.size() != 2 || w.dilations.size() != 2 || w.pads.size() != 4) {
    return c.Invalid("strides, dilations or pads of the wrong length");
  }
  const std::string auto_pad = c.Str("auto_pad", "NOTSET");
  if (auto_pad == "SAME_UPPER" || auto_pad == "SAME_LOWER") {
    for (int i = 0; i < 2; ++i) {
      const int64_t in = x.dims[2 + i];
      if (in < 0) {
        if (auto_pad == "SAME_LOWER")
          return c.Unsupported("SAME_LOWER on a size not known");
        w.same_upper_unknown = true;
        continue;
      }
      const int64_t s = w.strides[i];
      const int64_t out = (in + s - 1) / s;
      const int64_t total = std::max<int64_t>(
          0, (out - 1) * s + (w.kernel[i] - 1) * w.dilations[i] + 1 - in);
      const int64_t small = total / 2, big = total - small;
      w.pads[i] = auto_pad == "SAME_UPPER" ? small : big;
      w.pads[i + 2] = auto_pad == "SAME_UPPER" ? big : small;
    }
  } else if (auto_pad == "VALID") {
    w.pads = {0, 0, 0, 0};
  } else if (auto_pad != "NOTSET") {
    return c.Invalid(StrCat("auto_pad \"", auto_pad, "\""));
  }
  return w;
}

std::string ToNHWC(const std::string& x) {
  return StrCat("transpose(", x, ", [0, 2, 3, 1])");
}
std::string ToNCHW(const std::string& x) {
  return StrCat("transpose(", x, ", [0, 3, 1, 2])");
}

std::string PadHW(const std::string& x, const Window& w,
                  const std::string& value) {
  if (std::all_of(w.pads.begin(), w.pads.end(),
                  [](int64_t p) { return p == 0; }))
    return x;
  return StrCat("pad(", x, ", [[0, 0], [0, 0], [", w.pads[0], ", ", w.pads[2],
                "], [", w.pads[1], ", ", w.pads[3], "]]",
                value.empty() ? "" : ", value = " + value, ")");
}

std::vector<int64_t> OutDims(const Value& x, const Window& w, int64_t channels,
                             bool ceil_mode) {
  std::vector<int64_t> dims = {x.dims[0], channels, -1, -1};
  for (int i = 0; i < 2; ++i) {
    const int64_t in = x.dims[2 + i];
    if (in < 0) continue;
    const int64_t span = (w.kernel[i] - 1) * w.dilations[i] + 1;
    const int64_t room = in + w.pads[i] + w.pads[i + 2] - span;
    dims[2 + i] = (ceil_mode ? (room + w.strides[i] - 1) / w.strides[i]
                             : room / w.strides[i]) +
                  1;
    // With ceil_mode, a last window that would start in the end padding
    // is left out.
    if (ceil_mode && (dims[2 + i] - 1) * w.strides[i] >= in + w.pads[i])
      --dims[2 + i];
  }
  return dims;
}

// A window over any number of spatial axes of sizes known while importing
// (`in`): its kernel (`kernel_shape`, else `kernel`), strides, dilations
// and pads (auto_pad resolved), the output's sizes, and the padding at the
// end that ceil_mode's last windows reach past the pads.
struct SpatialWindow {
  std::vector<int64_t> kernel, strides, dil, pads, out, extra;
};

absl::StatusOr<SpatialWindow> SpatialWindowOf(NodeContext& c,
                                              const std::vector<int64_t>& in,
                                              std::vector<int64_t> kernel,
                                              bool ceil_mode) {
  const size_t n = in.size();
  SpatialWindow w;
  w.kernel = c.has("kernel_shape") ? c.Ints("kernel_shape") : kernel;
  w.strides = c.Ints("strides");
  w.dil = c.Ints("dilations");
  w.pads = c.Ints("pads");
  if (w.kernel.size() != n)
    return c.Invalid("kernel_shape of the wrong length");
  if (w.strides.empty()) w.strides.assign(n, 1);
  if (w.dil.empty()) w.dil.assign(n, 1);
  if (w.pads.empty()) w.pads.assign(2 * n, 0);
  if (w.strides.size() != n || w.dil.size() != n || w.pads.size() != 2 * n) {
    return c.Invalid("strides, dilations or pads of the wrong length");
  }
  const std::string auto_pad = c.Str("auto_pad", "NOTSET");
  w.out.assign(n, 0);
  w.extra.assign(n, 0);
  for (size_t i = 0; i < n; ++i) {
    const int64_t span = (w.kernel[i] - 1) * w.dil[i] + 1, s = w.strides[i];
    if (auto_pad == "SAME_UPPER" || auto_pad == "SAME_LOWER") {
      const int64_t o = (in[i] + s - 1) / s;
      const int64_t total = std::max<int64_t>(0, (o - 1) * s + span - in[i]);
      w.pads[i] = auto_pad == "SAME_UPPER" ? total / 2 : total - total / 2;
      w.pads[i + n] = total - w.pads[i];
    } else if (auto_pad == "VALID") {
      w.pads[i] = w.pads[i + n] = 0;
    } else if (auto_pad != "NOTSET") {
      return c.Invalid(StrCat("auto_pad \"", auto_pad, "\""));
    }
    const int64_t room = in[i] + w.pads[i] + w.pads[i + n] - span;
    if (room < 0) return c.Invalid("a window larger than the padded input");
    w.out[i] = (ceil_mode ? (room + s - 1) / s : room / s) + 1;
    if (ceil_mode && (w.out[i] - 1) * s >= in[i] + w.pads[i]) --w.out[i];
    w.extra[i] = std::max<int64_t>(
        0, (w.out[i] - 1) * s + span - (in[i] + w.pads[i] + w.pads[i + n]));
  }
  return w;
}

// A 3-D convolution (an (N, C, D, H, W) input of sizes known while
// importing): Runnel's conv3d of the explicitly padded input moved to
// NDHWC, with the filters as DHWIO; groups as for 2-D.
absl::Status Conv3d(NodeContext& c) {
  const Value& x = c.in(0);
  const Value& f = c.in(1);
  if (!KnownPastBatch(x) || x.dims.size() != 5 || !AllKnown(f.dims)) {
    return c.Unsupported(
        "a 3-D convolution of sizes not known while importing");
  }
  const int64_t groups = c.Int("group", 1);
  if (groups < 1) return c.Invalid("group must be positive");
  RN_ASSIGN_OR_RETURN(
      const SpatialWindow w,
      SpatialWindowOf(c, {x.dims[2], x.dims[3], x.dims[4]},
                      {f.dims[2], f.dims[3], f.dims[4]}, false));
  std::string xp = c.ref(0);
  if (std::any_of(w.pads.begin(), w.pads.end(),
                  [](int64_t p) { return p != 0; })) {
    xp = StrCat("pad(", c.ref(0), ", [[0, 0], [0, 0], ",
                IntList({w.pads[0], w.pads[3]}), ", ",
                IntList({w.pads[1], w.pads[4]}), ", ",
                IntList({w.pads[2], w.pads[5]}), "])");
  }
  auto conv = [&](const std::string& in, const std::string& filter) {
    const bool dilated = std::any_of(w.dil.begin(), w.dil.end(),
                                     [](int64_t d) { return d != 1; });
    return StrCat("conv3d(", in, ", transpose(", filter,
                  ", [2, 3, 4, 1, 0]), strides = ", IntList(w.strides),
                  ", padding = \"valid\"",
                  dilated ? StrCat(", dilations = ", IntList(w.dil)) : "", ")");
  };
  std::string e = ToNCDHW(Grouped(c, ToNDHWC(xp), c.ref(1), groups, conv, 4));
  if (c.has_input(2))
    e = StrCat(e, " + reshape(", c.ref(2), ", [-1, 1, 1, 1])");
  return c.Out(0, e, x.dtype,
               {x.dims[0], f.dims[0], w.out[0], w.out[1], w.out[2]});
}

absl::Status Conv(NodeContext& c) {
  RN_RETURN_IF_ERROR(SameDTypes(c));
  RN_RETURN_IF_ERROR(NeedFloat(c, 0));
  const Value& f = c.in(1);
  if (f.dims.size() == 5) return Conv3d(c);
  if (f.dims.size() != 4 && f.dims.size() != 3)
    return c.Unsupported("a filter other than 3-D, 4-D or 5-D");
  const int64_t groups = c.Int("group", 1);
  if (groups < 1) return c.Invalid("group must be positive");
  RN_ASSIGN_OR_RETURN(
      Window w,
      WindowOf(c, std::vector<int64_t>(f.dims.begin() + 2, f.dims.end())));
  const Value x = Lifted(w, c.in(0));
  const std::string padding = w.same_upper_unknown ? "same" : "valid";
  auto conv = [&](const std::string& in, const std::string& filter) {
    return StrCat("conv2d(", in, ", transpose(", filter,
                  ", [2, 3, 1, 0]), strides = ", IntList(w.strides),
                  ", padding = \"", padding,
                  "\", dilations = ", IntList(w.dilations), ")");
  };
  std::string e = Grouped(c, ToNHWC(PadHW(Lift(w, c.ref(0)), w, "")),
                          Lift(w, c.ref(1)), groups, conv);
  e = Lower(w, ToNCHW(e));
  if (c.has_input(2))
    e = StrCat(e, " + reshape(", c.ref(2),
               w.lifted ? ", [-1, 1])" : ", [-1, 1, 1])");
  return c.Out(0, e, x.dtype, Lower(w, OutDims(x, w, f.dims[0], false)));
}

// MaxPool's Indices: where in the input (N, C, D1, ...) flattened each
// window's maximum is, row-major (column-major over the spatial axes with
// storage_order 1); the first of equal maximums, as ONNX's reference. The
// window's offset is the argmax over its slices (`window`, of the padded
// input), taken apart into one offset per axis.
absl::Status MaxPoolIndices(NodeContext& c,
                            const std::vector<std::string>& window,
                            const SpatialWindow& w, bool column_major) {
  const Value& x = c.in(0);
  if (!AllKnown(x.dims)) {
    return c.Unsupported(
        "MaxPool's Indices of sizes not known while importing");
  }
  const int r = static_cast<int>(x.dims.size());
  const size_t n = w.kernel.size();
  const std::string k =
      c.Temp("offset", StrCat("cast(argmax(stack([", Join(window),
                              "], axis = -1), axis = -1), i64)"));
  std::vector<std::string> at = {Iota(x.dims[0], r, 0), Iota(x.dims[1], r, 1)};
  int64_t block = 1;
  std::vector<std::string> offsets(n);
  for (size_t i = n; i-- > 0;) {
    offsets[i] = StrCat("(", k, (block > 1 ? StrCat(" // ", block) : ""), " % ",
                        w.kernel[i], ")");
    block *= w.kernel[i];
  }
  for (size_t i = 0; i < n; ++i) {
    at.push_back(StrCat(Iota(w.out[i], r, 2 + static_cast<int>(i)), " * ",
                        w.strides[i], " + ", offsets[i], " * ", w.dil[i], " - ",
                        w.pads[i]));
  }
  // Row-major: ((n * C + c) * D1 + d1) * D2 + d2 ...; column-major over the
  // spatial axes: (n * C + c) * D1 * D2 ... + d1 + d2 * D1 + ...
  std::string flat = StrCat(at[0], " * ", x.dims[1], " + ", at[1]);
  if (!column_major) {
    for (size_t i = 0; i < n; ++i) {
      flat = StrCat("(", flat, ") * ", x.dims[2 + i], " + ", at[2 + i]);
    }
  } else {
    int64_t plane = 1, stride = 1;
    std::string spatial;
    for (size_t i = 0; i < n; ++i) {
      const std::string term =
          stride == 1 ? at[2 + i] : StrCat("(", at[2 + i], ") * ", stride);
      spatial = spatial.empty() ? term : StrCat(spatial, " + ", term);
      stride *= x.dims[2 + i];
      plane *= x.dims[2 + i];
    }
    flat = StrCat("(", flat, ") * ", plane, " + ", spatial);
  }
  std::vector<int64_t> dims = {x.dims[0], x.dims[1]};
  dims.insert(dims.end(), w.out.begin(), w.out.end());
  return c.Out(1, flat, DType::kI64, dims);
}

// A pool of any number of spatial axes and any dilation, on sizes known
// while importing: the maximum (or the mean) of one strided slice per
// offset in the window. The mean divides by the count of the elements each
// window holds that count (count_include_pad: the pads too; never the
// extra end of ceil_mode), computed the same way on ones. LpPool: the
// p-norm of each window, the pads counting as zeros (ONNX's reference).
absl::Status SlicePool(NodeContext& c) {
  const bool max = c.op() == "MaxPool";
  const bool lp = c.op() == "LpPool";
  const Value& x = c.in(0);
  if (!x.rank_known || x.dims.size() < 3 ||
      !AllKnown(std::vector<int64_t>(x.dims.begin() + 2, x.dims.end()))) {
    return c.Unsupported(
        lp ? "LpPool of sizes not known while importing"
           : "a dilated or 3-D pool of sizes not known while importing");
  }
  const size_t n = x.dims.size() - 2;
  const bool ceil_mode = c.Int("ceil_mode", 0) != 0;
  const bool count_pad = c.Int("count_include_pad", 0) != 0;
  // (Column-major indices: it changes nothing else.)
  const bool column_major = c.Int("storage_order", 0) != 0;
  RN_ASSIGN_OR_RETURN(
      const SpatialWindow w,
      SpatialWindowOf(c, std::vector<int64_t>(x.dims.begin() + 2, x.dims.end()),
                      {}, ceil_mode));
  const std::vector<int64_t>&kernel = w.kernel, &strides = w.strides,
        &dil = w.dil, &pads = w.pads, &out = w.out, &extra = w.extra;
  auto padded = [&](const std::string& v, const std::string& value,
                    bool with_pads) {
    std::vector<std::string> rows = {"[0, 0]", "[0, 0]"};
    bool any = false;
    for (size_t i = 0; i < n; ++i) {
      const int64_t b = with_pads ? pads[i] : 0,
                    e = (with_pads ? pads[i + n] : 0) + extra[i];
      rows.push_back(IntList({b, e}));
      any = any || b > 0 || e > 0;
    }
    if (!any) return v;
    return StrCat("pad(", v, ", [", Join(rows), "]",
                  value.empty() ? "" : ", value = " + value, ")");
  };
  // Every offset of the window, as the strided slice it reads.
  auto slices = [&](const std::string& v) {
    std::vector<std::string> terms;
    std::vector<int64_t> at(n, 0);
    for (bool more = true; more;) {
      std::vector<std::string> idx = {":", ":"};
      for (size_t i = 0; i < n; ++i) {
        const int64_t start = at[i] * dil[i];
        idx.push_back(StrCat(start, ":", start + (out[i] - 1) * strides[i] + 1,
                             strides[i] != 1 ? StrCat(":", strides[i]) : ""));
      }
      terms.push_back(StrCat(v, "[", Join(idx), "]"));
      more = false;
      for (size_t i = n; i-- > 0;) {
        if (++at[i] < kernel[i]) {
          more = true;
          break;
        }
        at[i] = 0;
      }
    }
    return terms;
  };
  std::vector<int64_t> dims = {x.dims[0], x.dims[1]};
  dims.insert(dims.end(), out.begin(), out.end());
  // A 3-D pool of floats: Runnel's max_pool3d or avg_pool3d ("valid") of
  // `v` padded (pads and ceil_mode's extra end) and moved to NDHWC, cut to
  // the span the windows cover (ceil_mode may pad past it).
  auto pool3d = [&](const std::string& fn, const std::string& v) {
    std::vector<std::string> idx = {":"};
    bool cut = false;
    for (size_t i = 0; i < n; ++i) {
      const int64_t span =
          (out[i] - 1) * strides[i] + (kernel[i] - 1) * dil[i] + 1;
      cut = cut || span < x.dims[2 + i] + pads[i] + pads[i + n] + extra[i];
      idx.push_back(StrCat(":", span));
    }
    idx.push_back(":");
    std::string in = StrCat("transpose(", v, ", [0, 2, 3, 4, 1])");
    if (cut) in = StrCat(in, "[", Join(idx), "]");
    const bool dilated =
        std::any_of(dil.begin(), dil.end(), [](int64_t d) { return d != 1; });
    return StrCat("transpose(", fn, "(", in, ", ", IntList(kernel),
                  ", strides = ", IntList(strides),
                  dilated ? StrCat(", dilations = ", IntList(dil)) : "",
                  "), [0, 4, 1, 2, 3])");
  };
  const bool native = n == 3 && IsFloating(x.dtype) && !lp && !c.has_output(1);
  if (native && max) {
    return c.Out(0, pool3d("max_pool3d", padded(c.ref(0), "-1.0 / 0.0", true)),
                 x.dtype, dims);
  }
  if (lp) {
    RN_RETURN_IF_ERROR(NeedFloat(c, 0));
    // (Before opset 2, p is a float.)
    const double p =
        c.opset() < 2 ? c.Float("p", 2.0f) : static_cast<double>(c.Int("p", 2));
    if (!(p > 0)) return c.Invalid(StrCat("p = ", p, " (needs p > 0)"));
    const std::string powered =
        p == 1   ? StrCat("abs(", c.ref(0), ")")
        : p == 2 ? StrCat("square(", c.ref(0), ")")
                 : StrCat("abs(", c.ref(0), ") ** ", F(static_cast<float>(p)));
    const std::string xp = c.Temp("powered", padded(powered, "", true));
    const std::string sum = SumOf(slices(xp));
    const std::string e =
        p == 1   ? StrCat("(", sum, ")")
        : p == 2 ? StrCat("sqrt(", sum, ")")
                 : StrCat("(", sum, ") ** ", F(static_cast<float>(1.0 / p)));
    return c.Out(0, e, x.dtype, dims);
  }
  if (max) {
    // The pads are the dtype's lowest value: never a maximum.
    std::string lowest = "-1.0 / 0.0";
    if (!IsFloating(x.dtype)) {
      switch (x.dtype) {
        case DType::kU8:
          lowest = "0";
          break;
        case DType::kI8:
          lowest = "-128";
          break;
        case DType::kI32:
          lowest = "-2147483648";
          break;
        default:
          return c.Unsupported(StrCat("dtype ", DTypeCode(x.dtype)));
      }
    }
    const std::string xp = c.Temp("padded", padded(c.ref(0), lowest, true));
    // A balanced tree of maximums: a window of 27 nests 5 deep, not 26.
    std::vector<std::string> level = slices(xp);
    while (level.size() > 1) {
      std::vector<std::string> next;
      for (size_t i = 0; i + 1 < level.size(); i += 2) {
        next.push_back(StrCat("maximum(", level[i], ", ", level[i + 1], ")"));
      }
      if (level.size() % 2 == 1) next.push_back(level.back());
      level = std::move(next);
    }
    RN_RETURN_IF_ERROR(c.Out(0, level[0], x.dtype, dims));
    if (!c.has_output(1)) return absl::OkStatus();
    return MaxPoolIndices(c, slices(xp), w, column_major);
  }
  if (count_pad && std::any_of(extra.begin(), extra.end(),
                               [](int64_t e) { return e > 0; })) {
    // Which elements of the windows ceil_mode adds ONNX counts then is
    // not what this computes (its reference differs): refused.
    return c.Unsupported("count_include_pad with windows that ceil_mode adds");
  }
  // The counts: ones over what counts, padded with zeros for the rest.
  std::string ones = StrCat("ones_like(", c.ref(0), ")");
  if (count_pad) ones = padded(ones, "1.0", true);
  const std::string mask = c.Temp(
      "counted", count_pad ? padded(ones, "", false) : padded(ones, "", true));
  if (native) {
    // The mean over the padded window divided by the share that counts.
    return c.Out(0,
                 StrCat(pool3d("avg_pool3d", padded(c.ref(0), "", true)), " / ",
                        pool3d("avg_pool3d", mask)),
                 x.dtype, dims);
  }
  const std::string xp = c.Temp("padded", padded(c.ref(0), "", true));
  std::vector<std::string> sum_terms = slices(xp);
  const std::string total = c.Temp("count", SumOf(slices(mask)));
  return c.Out(0, StrCat("(", SumOf(sum_terms), ") / ", total), x.dtype, dims);
}

absl::Status Pool(NodeContext& c) {
  const bool max = c.op() == "MaxPool";
  if ((c.in(0).rank_known && c.in(0).dims.size() > 4) ||
      (max && (c.has_output(1) || !IsFloating(c.in(0).dtype)))) {
    return SlicePool(c);
  }
  if (max) RN_RETURN_IF_ERROR(NeedFloat(c, 0));
  RN_ASSIGN_OR_RETURN(Window w, WindowOf(c, {}));
  const Value x = Lifted(w, c.in(0));
  c.Int("storage_order", 0);  // it orders the Indices only (SlicePool)
  const bool ceil_mode = c.Int("ceil_mode", 0) != 0;
  const bool count_pad = c.Int("count_include_pad", 0) != 0;
  std::vector<int64_t> dims = OutDims(x, w, x.dims[1], ceil_mode);
  if (ceil_mode) {
    // The windows that start inside but end past the input: more padding
    // at the end, which the pooling leaves out.
    for (int i = 0; i < 2; ++i) {
      if (x.dims[2 + i] < 0)
        return c.Unsupported("ceil_mode on a size not known");
      const int64_t span = (w.kernel[i] - 1) * w.dilations[i] + 1;
      const int64_t need = (dims[2 + i] - 1) * w.strides[i] + span -
                           (x.dims[2 + i] + w.pads[i] + w.pads[i + 2]);
      if (need > 0) {
        if (!max && count_pad)
          return c.Unsupported("ceil_mode with count_include_pad");
        w.pads[i + 2] += need;
      }
    }
  }
  const std::string size = IntList(w.kernel), strides = IntList(w.strides);
  const bool padded = std::any_of(w.pads.begin(), w.pads.end(),
                                  [](int64_t p) { return p != 0; });
  const std::string padding = w.same_upper_unknown ? "same" : "valid";
  auto pool = [&](const std::string& fn, const std::string& in) {
    const std::string dilated =
        w.dilations == std::vector<int64_t>{1, 1}
            ? ""
            : StrCat(", dilations = ", IntList(w.dilations));
    return ToNCHW(StrCat(fn, "(", ToNHWC(in), ", ", size,
                         ", strides = ", strides, ", padding = \"", padding,
                         "\"", dilated, ")"));
  };
  std::string e;
  if (max) {
    e = pool("max_pool", PadHW(Lift(w, c.ref(0)), w, "-1.0 / 0.0"));
  } else if (!padded || count_pad) {
    e = pool("avg_pool", PadHW(Lift(w, c.ref(0)), w, ""));
    if (w.same_upper_unknown && count_pad)
      return c.Unsupported("SAME with count_include_pad");
  } else {
    // The mean of the elements inside: the padded mean divided by the
    // share of the window that is inside.
    const std::string inside = c.Temp(
        "inside",
        pool("avg_pool",
             PadHW(Lift(w, StrCat("ones_like(", c.ref(0), ")")), w, "")));
    e = StrCat(pool("avg_pool", PadHW(Lift(w, c.ref(0)), w, "")), " / ",
               inside);
  }
  return c.Out(0, Lower(w, e), x.dtype, Lower(w, dims));
}

absl::Status GlobalPool(NodeContext& c) {
  RN_ASSIGN_OR_RETURN(int r, RankOf(c, 0));
  std::vector<int64_t> axes, dims = c.in(0).dims;
  for (int i = 2; i < r; ++i) {
    axes.push_back(i);
    dims[i] = 1;
  }
  const std::string fn = c.op() == "GlobalMaxPool" ? "max" : "mean";
  return c.Out(0,
               StrCat(fn, "(", c.ref(0), ", axis = ", IntList(axes),
                      ", keepdims = true)"),
               c.in(0).dtype, dims);
}

// ----------------------------------------------------------------
// normalisation

// Local response normalisation across channels: each element divided by
// (bias + alpha / size * the sum of squares over the `size` channels
// around it, the ones past either end counting as zeros) ** beta.
absl::Status Lrn(NodeContext& c) {
  RN_RETURN_IF_ERROR(NeedFloat(c, 0));
  RN_ASSIGN_OR_RETURN(int r, RankOf(c, 0));
  const Value& x = c.in(0);
  const int64_t size = c.Int("size", 0);
  if (r < 3 || x.dims[1] < 0) {
    return c.Unsupported("LRN of channels not known while importing");
  }
  if (size < 1) return c.Invalid(StrCat("size = ", size));
  const int64_t before = (size - 1) / 2, after = size - 1 - before;
  std::vector<std::string> rows(r, "[0, 0]");
  rows[1] = IntList({before, after});
  const std::string squares = c.Temp(
      "squares", StrCat("pad(square(", c.ref(0), "), [", Join(rows), "])"));
  std::vector<std::string> windows;
  for (int64_t k = 0; k < size; ++k) {
    windows.push_back(StrCat(squares, "[:, ", k, ":", k + x.dims[1], "]"));
  }
  const float alpha = c.Float("alpha", 1e-4f), beta = c.Float("beta", 0.75f),
              bias = c.Float("bias", 1.0f);
  return c.Out(0,
               StrCat(c.ref(0), " / (", F(bias), " + ",
                      F(alpha / static_cast<float>(size)), " * (",
                      SumOf(windows), ")) ** ", F(beta)),
               x.dtype, x.dims);
}

absl::Status BatchNorm(NodeContext& c) {
  RN_RETURN_IF_ERROR(NeedFloat(c, 0));
  RN_ASSIGN_OR_RETURN(int r, RankOf(c, 0));
  if (c.opset() >= 14 && c.Int("training_mode", 0) != 0) {
    // The batch's statistics (the biased variance), and the running ones
    // moved toward them by 1 - momentum.
    std::vector<int64_t> axes = {0};
    for (int i = 2; i < r; ++i) axes.push_back(i);
    const std::string ax =
        StrCat(", axis = ", IntList(axes), ", keepdims = true)");
    const float momentum = c.Float("momentum", 0.9f);
    const std::string eps = F(c.Float("epsilon", 1e-5f));
    const std::string mean = c.Temp("mean", StrCat("mean(", c.ref(0), ax));
    const std::string d = c.Temp("centred", StrCat(c.ref(0), " - ", mean));
    const std::string var = c.Temp("var", StrCat("mean(square(", d, ")", ax));
    RN_RETURN_IF_ERROR(
        c.Out(0,
              StrCat(PerChannel(c.ref(1), r), " * ", d, " / sqrt(", var, " + ",
                     eps, ") + ", PerChannel(c.ref(2), r)),
              c.in(0).dtype, c.in(0).dims));
    const std::vector<int64_t> channels = {c.in(0).dims[1]};
    for (int o = 1; o <= 2; ++o) {
      if (!c.has_output(o)) continue;
      const std::string batch =
          StrCat("reshape(", o == 1 ? mean : var, ", [-1])");
      RN_RETURN_IF_ERROR(c.Out(o,
                               StrCat(c.ref(o == 1 ? 3 : 4), " * ", F(momentum),
                                      " + ", batch, " * ", F(1.0f - momentum)),
                               c.in(0).dtype, channels));
    }
    return absl::OkStatus();
  }
  if (c.Int("training_mode", 0) != 0 || c.has_output(1) ||
      (c.opset() < 7 && c.Int("is_test", 0) == 0)) {
    return c.Unsupported("training mode (the batch's statistics)");
  }
  c.Ints("consumed_inputs");  // before opset 6: no meaning for inference
  if (c.opset() < 9 && c.Int("spatial", 1) != 1)
    return c.Unsupported("spatial = 0");
  c.Float("momentum", 0.9f);  // used by training mode only
  const std::string eps = F(c.Float("epsilon", 1e-5f));
  const std::string scale =
      c.Temp("scale", StrCat(c.ref(1), " * rsqrt(", c.ref(4), " + ", eps, ")"));
  std::string e = StrCat("(", c.ref(0), " - ", PerChannel(c.ref(3), r), ") * ",
                         PerChannel(scale, r), " + ", PerChannel(c.ref(2), r));
  return c.Out(0, e, c.in(0).dtype, c.in(0).dims);
}

absl::Status InstanceNorm(NodeContext& c) {
  RN_RETURN_IF_ERROR(NeedFloat(c, 0));
  RN_ASSIGN_OR_RETURN(int r, RankOf(c, 0));
  std::vector<int64_t> axes;
  for (int i = 2; i < r; ++i) axes.push_back(i);
  const std::string eps = F(c.Float("epsilon", 1e-5f));
  const std::string ax =
      StrCat(", axis = ", IntList(axes), ", keepdims = true)");
  const std::string d =
      c.Temp("centred", StrCat(c.ref(0), " - mean(", c.ref(0), ax));
  std::string e =
      StrCat(d, " * rsqrt(mean(square(", d, ")", ax, " + ", eps, ") * ",
             PerChannel(c.ref(1), r), " + ", PerChannel(c.ref(2), r));
  return c.Out(0, e, c.in(0).dtype, c.in(0).dims);
}

absl::Status LayerNorm(NodeContext& c) {
  RN_RETURN_IF_ERROR(NeedFloat(c, 0));
  RN_ASSIGN_OR_RETURN(int r, RankOf(c, 0));
  RN_ASSIGN_OR_RETURN(int64_t axis, NormAxis(c, c.Int("axis", -1), r));
  const DType dtype = c.in(0).dtype;
  if (c.Int("stash_type", 1) != 1 ||
      (dtype != DType::kF32 && dtype != DType::kF64)) {
    if (dtype != DType::kF32)
      return c.Unsupported(StrCat("dtype ", DTypeCode(dtype)));
  }
  std::vector<int64_t> axes;
  for (int64_t i = axis; i < r; ++i) axes.push_back(i);
  const std::string eps = F(c.Float("epsilon", 1e-5f));
  const std::string ax =
      StrCat(", axis = ", IntList(axes), ", keepdims = true)");
  const std::string m = c.Temp("mean", StrCat("mean(", c.ref(0), ax));
  const std::string d = c.Temp("centred", StrCat(c.ref(0), " - ", m));
  const std::string inv = c.Temp(
      "inv_std", StrCat("rsqrt(mean(square(", d, ")", ax, " + ", eps, ")"));
  std::string e = StrCat(d, " * ", inv, " * ", c.ref(1));
  if (c.has_input(2)) e = StrCat(e, " + ", c.ref(2));
  std::vector<int64_t> stat = c.in(0).dims;
  for (int64_t a : axes) stat[a] = 1;
  RN_RETURN_IF_ERROR(c.Out(0, e, dtype, c.in(0).dims));
  RN_RETURN_IF_ERROR(c.Out(1, m, dtype, stat));
  return c.Out(2, inv, dtype, stat);
}

absl::Status Dropout(NodeContext& c) {
  // Inference: the identity (training_mode absent or false).
  c.Int("seed", 0);
  if (c.opset() < 12) c.Float("ratio", 0.5f);
  if (c.has_input(2)) {
    if (!c.constant(2)) return c.NeedConstant(2, "training_mode");
    if (c.constant(2)->ToInt64s().at(0) != 0)
      return c.Unsupported("training_mode = true");
  }
  const Value& x = c.in(0);
  RN_RETURN_IF_ERROR(c.Out(0, c.ref(0), x.dtype, x.dims, x.rank_known));
  return c.Out(1, StrCat("ones(shape_of(", c.ref(0), "), dtype = bool)"),
               DType::kBool, x.dims, x.rank_known);
}

absl::Status OneHot(NodeContext& c) {
  // depth may be of any numeric dtype.
  if (!c.constant(1)) return c.NeedConstant(1, "depth");
  const std::vector<double> depth_v = c.constant(1)->ToDoubles();
  if (depth_v.size() != 1 || depth_v[0] < 1)
    return c.Invalid("depth must be one positive number");
  const std::optional<Tensor>& values = c.constant(2);
  if (!values) return c.NeedConstant(2, "values");
  if (values->num_elements() != 2)
    return c.Invalid("values must hold 2 elements");
  const int64_t depth = static_cast<int64_t>(depth_v[0]);
  const Value& i = c.in(0);
  RN_ASSIGN_OR_RETURN(int r, RankOf(c, 0));
  RN_ASSIGN_OR_RETURN(int64_t axis, NormAxis(c, c.Int("axis", -1), r + 1));
  std::string idx = StrCat("cast(", c.ref(0), ", i64)");
  idx = FromEnd(idx, StrCat(depth));
  const DType dtype = values->dtype();
  std::vector<double> v = values->ToDoubles();
  auto num = [&](double d) {
    return IsFloating(dtype) ? F(static_cast<float>(d))
                             : StrCat(static_cast<int64_t>(d));
  };
  std::vector<int64_t> dims = i.dims;
  dims.insert(dims.begin() + axis, depth);
  return c.Out(0,
               StrCat("one_hot(", idx, ", ", depth, ", on_value = ", num(v[1]),
                      ", off_value = ", num(v[0]),
                      ", dtype = ", DTypeCode(dtype), ", axis = ", axis, ")"),
               dtype, dims);
}

absl::Status RmsNorm(NodeContext& c) {
  RN_RETURN_IF_ERROR(NeedFloat(c, 0));
  RN_ASSIGN_OR_RETURN(int r, RankOf(c, 0));
  RN_ASSIGN_OR_RETURN(int64_t axis, NormAxis(c, c.Int("axis", -1), r));
  const DType dtype = c.in(0).dtype;
  if (c.Int("stash_type", 1) != 1 && dtype != DType::kF32) {
    return c.Unsupported("stash_type other than f32");
  }
  if (dtype != DType::kF32 && dtype != DType::kF64) {
    return c.Unsupported(StrCat("dtype ", DTypeCode(dtype)));
  }
  std::vector<int64_t> axes;
  for (int64_t i = axis; i < r; ++i) axes.push_back(i);
  const std::string eps = F(c.Float("epsilon", 1e-5f));
  return c.Out(0,
               StrCat(c.ref(0), " * rsqrt(mean(square(", c.ref(0),
                      "), axis = ", IntList(axes), ", keepdims = true) + ", eps,
                      ") * ", c.ref(1)),
               dtype, c.in(0).dims);
}

absl::Status Swish(NodeContext& c) {
  RN_RETURN_IF_ERROR(NeedFloat(c, 0));
  const std::string x = c.ref(0);
  const float alpha = c.Float("alpha", 1.0f);
  return c.Out(0,
               StrCat(x, " * sigmoid(",
                      alpha != 1.0f ? StrCat(F(alpha), " * ") : "", x, ")"),
               c.in(0).dtype, c.in(0).dims, c.in(0).rank_known);
}

// LpNormalization: x divided by its L1 or L2 norm along one axis.
absl::Status LpNorm(NodeContext& c) {
  RN_RETURN_IF_ERROR(NeedFloat(c, 0));
  RN_ASSIGN_OR_RETURN(int r, RankOf(c, 0));
  RN_ASSIGN_OR_RETURN(int64_t axis, NormAxis(c, c.Int("axis", -1), r));
  const int64_t p = c.Int("p", 2);
  const std::string x = c.ref(0);
  std::string norm;
  if (p == 1)
    norm = StrCat("sum(abs(", x, "), axis = ", axis, ", keepdims = true)");
  else if (p == 2)
    norm = StrCat("sqrt(sum(square(", x, "), axis = ", axis,
                  ", keepdims = true))");
  else
    return c.Invalid(StrCat("p = ", p, " (1 or 2)"));
  // A zero vector stays zero (not 0 / 0).
  const std::string n = c.Temp("norm", norm);
  return c.Out(
      0, StrCat(x, " / where(", n, " == 0.0, ones_like(", n, "), ", n, ")"),
      c.in(0).dtype, c.in(0).dims);
}

absl::Status MeanVarianceNorm(NodeContext& c) {
  RN_RETURN_IF_ERROR(NeedFloat(c, 0));
  RN_ASSIGN_OR_RETURN(int r, RankOf(c, 0));
  std::vector<int64_t> axes =
      c.has("axes") ? c.Ints("axes") : std::vector<int64_t>{0, 2, 3};
  for (int64_t& a : axes) {
    RN_ASSIGN_OR_RETURN(a, NormAxis(c, a, r));
  }
  const std::string ax =
      StrCat(", axis = ", IntList(axes), ", keepdims = true)");
  const std::string d =
      c.Temp("centred", StrCat(c.ref(0), " - mean(", c.ref(0), ax));
  // The specification's function: (x - E[x]) / (sqrt(E[(x - E[x])^2]) + 1e-9).
  return c.Out(0, StrCat(d, " / (sqrt(mean(square(", d, ")", ax, ") + 1e-9)"),
               c.in(0).dtype, c.in(0).dims);
}

absl::Status GroupNorm(NodeContext& c) {
  RN_RETURN_IF_ERROR(NeedFloat(c, 0));
  RN_ASSIGN_OR_RETURN(int r, RankOf(c, 0));
  const Value& x = c.in(0);
  const int64_t groups = c.Int("num_groups", 0);
  if (c.Int("stash_type", 1) != 1 && x.dtype != DType::kF32) {
    return c.Unsupported("stash_type other than f32");
  }
  if (r < 3 || x.dims[1] < 0 || groups <= 0 || x.dims[1] % groups != 0) {
    return c.Unsupported(
        "GroupNormalization of unknown channels, or channels not divisible by "
        "the groups");
  }
  const std::string eps = F(c.Float("epsilon", 1e-5f));
  // (N, G, C/G * rest): normalised per (N, G).
  const std::vector<int64_t> rest(x.dims.begin() + 2, x.dims.end());
  if (!AllKnown(rest))
    return c.Unsupported("GroupNormalization of spatial sizes not known");
  const std::string g =
      c.Temp("grouped", StrCat("reshape(", c.ref(0), ", [-1, ", groups, ", ",
                               x.dims[1] / groups, ", ",
                               Product(rest, 0, rest.size()), "])"));
  const std::string ax = ", axis = [2, 3], keepdims = true)";
  const std::string d = c.Temp("centred", StrCat(g, " - mean(", g, ax));
  const std::string n = c.Temp(
      "normalised", StrCat("reshape(", d, " * rsqrt(mean(square(", d, ")", ax,
                           " + ", eps, "), shape_of(", c.ref(0), "))"));
  return c.Out(
      0,
      StrCat(n, " * ", PerChannel(c.ref(1), r), " + ", PerChannel(c.ref(2), r)),
      x.dtype, x.dims);
}

// DepthToSpace and SpaceToDepth: a reshape, a transpose and a reshape.
absl::Status DepthSpace(NodeContext& c) {
  const Value& x = c.in(0);
  if (!x.rank_known || x.dims.size() != 4 ||
      !AllKnown(std::vector<int64_t>(x.dims.begin() + 1, x.dims.end()))) {
    return c.Unsupported("an input other than 4-D with known C, H and W");
  }
  const int64_t b = c.Int("blocksize", 0);
  if (b <= 0) return c.Invalid("blocksize must be positive");
  const int64_t C = x.dims[1], H = x.dims[2], W = x.dims[3];
  std::string e;
  std::vector<int64_t> dims;
  if (c.op() == "DepthToSpace") {
    const std::string mode = c.Str("mode", "DCR");
    if (C % (b * b) != 0) return c.Invalid("C is not divisible by blocksize²");
    const int64_t co = C / (b * b);
    if (mode == "DCR") {
      e = StrCat("reshape(transpose(reshape(", c.ref(0), ", [-1, ", b, ", ", b,
                 ", ", co, ", ", H, ", ", W, "]), [0, 3, 4, 1, 5, 2]), [-1, ",
                 co, ", ", H * b, ", ", W * b, "])");
    } else if (mode == "CRD") {
      e = StrCat("reshape(transpose(reshape(", c.ref(0), ", [-1, ", co, ", ", b,
                 ", ", b, ", ", H, ", ", W, "]), [0, 1, 4, 2, 5, 3]), [-1, ",
                 co, ", ", H * b, ", ", W * b, "])");
    } else {
      return c.Invalid(StrCat("mode \"", mode, "\""));
    }
    dims = {x.dims[0], co, H * b, W * b};
  } else {
    // The depth's order: the block's offsets, then the channels (DCR), or
    // the channels first (CRD, opset 28's mode).
    const std::string mode = c.Str("mode", "DCR");
    if (mode != "DCR" && mode != "CRD")
      return c.Invalid(StrCat("mode \"", mode, "\""));
    if (H % b != 0 || W % b != 0)
      return c.Invalid("H or W is not divisible by blocksize");
    e = StrCat("reshape(transpose(reshape(", c.ref(0), ", [-1, ", C, ", ",
               H / b, ", ", b, ", ", W / b, ", ", b, "]), ",
               mode == "DCR" ? "[0, 3, 5, 1, 2, 4]" : "[0, 1, 3, 5, 2, 4]",
               "), [-1, ", C * b * b, ", ", H / b, ", ", W / b, "])");
    dims = {x.dims[0], C * b * b, H / b, W / b};
  }
  return c.Out(0, e, x.dtype, dims);
}

absl::Status EyeLike(NodeContext& c) {
  const Value& x = c.in(0);
  if (x.dims.size() != 2 || !AllKnown(x.dims))
    return c.Unsupported("an input of unknown size");
  DType dtype = x.dtype;
  if (c.has("dtype")) {
    const int64_t code = c.Int("dtype", 1);
    std::optional<DType> type = FromOnnx(static_cast<int32_t>(code));
    if (!type) return c.Unsupported(StrCat("ONNX type ", code));
    dtype = *type;
  }
  const int64_t k = c.Int("k", 0);
  // Ones where column - row == k.
  const std::string e = StrCat("cast(expand_dims(arange(", x.dims[1],
                               "), 0) - expand_dims(arange(", x.dims[0],
                               "), 1) == ", k, ", ", DTypeCode(dtype), ")");
  return c.Out(0, e, dtype, x.dims);
}

// Trilu: keeps the elements on and below (upper = 0) or on and above the
// k-th diagonal of the last two axes.
absl::Status Trilu(NodeContext& c) {
  const Value& x = c.in(0);
  RN_ASSIGN_OR_RETURN(int r, RankOf(c, 0));
  if (r < 2 || x.dims[r - 1] < 0 || x.dims[r - 2] < 0)
    return c.Unsupported("a matrix of unknown size");
  std::string k = "0";
  if (c.has_input(1)) {
    RN_ASSIGN_OR_RETURN(std::vector<int64_t> kv, c.ConstInts(1, "k"));
    k = StrCat(kv.at(0));
  }
  const bool upper = c.Int("upper", 1) != 0;
  const std::string diff =
      StrCat("expand_dims(arange(", x.dims[r - 1],
             "), 0) - expand_dims(arange(", x.dims[r - 2], "), 1)");
  const std::string keep = StrCat(diff, upper ? " >= " : " <= ", k);
  return c.Out(
      0,
      StrCat("where(", keep, ", ", c.ref(0), ", zeros_like(", c.ref(0), "))"),
      x.dtype, x.dims);
}

// ---------------------------------------------------------------- folding

// Integer arithmetic on small constants (the shape arithmetic exporters
// write: Shape, Gather, Concat, Unsqueeze, Mul ...) is done while
// importing, so that a Reshape or Slice after it sees constants.
bool SmallInts(const std::optional<Tensor>& t) {
  return t && (IsInteger(t->dtype()) || t->dtype() == DType::kBool) &&
         t->rank() <= 1 && t->num_elements() <= 64;
}

Tensor OfDType(const std::vector<int64_t>& v, std::vector<int64_t> shape,
               DType dtype) {
  Tensor t(dtype, Shape(std::move(shape)));
  for (size_t i = 0; i < v.size(); ++i) {
    switch (dtype) {
      case DType::kI64:
        t.data<int64_t>()[i] = v[i];
        break;
      case DType::kI32:
        t.data<int32_t>()[i] = static_cast<int32_t>(v[i]);
        break;
      case DType::kI8:
        t.data<int8_t>()[i] = static_cast<int8_t>(v[i]);
        break;
      case DType::kU8:
        t.data<uint8_t>()[i] = static_cast<uint8_t>(v[i]);
        break;
      case DType::kBool:
        t.data<bool>()[i] = v[i] != 0;
        break;
      default:
        break;
    }
  }
  return t;
}

}  // namespace

absl::StatusOr<bool> Fold(NodeContext& c) {
  static const std::set<std::string> kFoldable = {
      "Identity", "Cast", "Unsqueeze", "Squeeze", "Concat", "Gather",
      "Slice",    "Add",  "Sub",       "Mul",     "Div",    "Equal",
      "Max",      "Min",  "Neg",       "Abs",     "Size",   "Range"};
  if (kFoldable.count(c.op()) == 0 || c.num_outputs() != 1) return false;
  std::vector<std::vector<int64_t>> in;
  for (int i = 0; i < c.num_inputs(); ++i) {
    if (!c.has_input(i)) {
      in.emplace_back();
      continue;
    }
    if (!SmallInts(c.constant(i))) return false;
    in.push_back(c.constant(i)->ToInt64s());
  }
  if (in.empty()) return false;
  const Tensor& x = *c.constant(0);
  const std::string& op = c.op();
  DType dtype = x.dtype();
  std::vector<int64_t> out;
  std::vector<int64_t> shape = x.shape().dims();
  auto both = [&](const std::function<int64_t(int64_t, int64_t)>& f) -> bool {
    const std::vector<int64_t>& a = in[0];
    const std::vector<int64_t>& b = in[1];
    if (c.constant(1)->dtype() != dtype) return false;
    if (a.size() != b.size() && a.size() != 1 && b.size() != 1) return false;
    const size_t n = std::max(a.size(), b.size());
    for (size_t i = 0; i < n; ++i) {
      out.push_back(f(a[a.size() == 1 ? 0 : i], b[b.size() == 1 ? 0 : i]));
    }
    shape = x.rank() >= c.constant(1)->rank() ? x.shape().dims()
                                              : c.constant(1)->shape().dims();
    if (x.rank() == c.constant(1)->rank() && a.size() == 1)
      shape = c.constant(1)->shape().dims();
    return true;
  };
  if (op == "Identity") {
    out = in[0];
  } else if (op == "Cast") {
    const int64_t to = c.Int("to", 0);
    c.Int("saturate", 1);
    if (to == 7)
      dtype = DType::kI64;
    else if (to == 6)
      dtype = DType::kI32;
    else
      return false;
    out = in[0];
  } else if (op == "Unsqueeze" || op == "Squeeze") {
    if (c.opset() < 13 || !c.has_input(1) || in[1].size() != 1) return false;
    if (op == "Unsqueeze" && x.rank() == 0 &&
        (in[1][0] == 0 || in[1][0] == -1)) {
      shape = {1};
    } else if (op == "Squeeze" && x.rank() == 1 && x.num_elements() == 1 &&
               (in[1][0] == 0 || in[1][0] == -1)) {
      shape = {};
    } else {
      return false;
    }
    out = in[0];
  } else if (op == "Concat") {
    if (c.Int("axis", 0) != 0 && c.Int("axis", 0) != -1) return false;
    for (int i = 0; i < c.num_inputs(); ++i) {
      if (c.constant(i)->rank() != 1 || c.constant(i)->dtype() != dtype)
        return false;
      out.insert(out.end(), in[i].begin(), in[i].end());
    }
    shape = {static_cast<int64_t>(out.size())};
  } else if (op == "Gather") {
    if (x.rank() != 1 || c.Int("axis", 0) != 0) return false;
    const int64_t n = static_cast<int64_t>(in[0].size());
    for (int64_t k : in[1]) {
      if (k < -n || k >= n) return false;
      out.push_back(in[0][k < 0 ? k + n : k]);
    }
    shape = c.constant(1)->shape().dims();
  } else if (op == "Slice") {
    if (c.opset() < 10 || x.rank() != 1) return false;
    const int64_t n = static_cast<int64_t>(in[0].size());
    if (in[1].size() != 1 || in[2].size() != 1) return false;
    if (c.has_input(3) &&
        (in[3].size() != 1 || (in[3][0] != 0 && in[3][0] != -1)))
      return false;
    const int64_t step = c.has_input(4) ? in[4].at(0) : 1;
    if (step == 0) return false;
    auto bound = [&](int64_t v) {
      if (v < 0) v += n;
      return step > 0 ? std::clamp<int64_t>(v, 0, n)
                      : std::clamp<int64_t>(v, -1, n - 1);
    };
    for (int64_t i = bound(in[1][0]), e = bound(in[2][0]);
         step > 0 ? i < e : i > e; i += step) {
      out.push_back(in[0][i]);
    }
    shape = {static_cast<int64_t>(out.size())};
  } else if (op == "Neg" || op == "Abs") {
    for (int64_t v : in[0]) out.push_back(op == "Neg" ? -v : std::abs(v));
  } else if (op == "Size") {
    out = {x.num_elements()};
    shape = {};
    dtype = DType::kI64;
  } else if (op == "Range") {
    // start, start + delta, ... before limit (scalars of one dtype).
    if (c.num_inputs() != 3 || in[1].size() != 1 || in[2].size() != 1 ||
        in[0].size() != 1 || in[2][0] == 0)
      return false;
    const int64_t delta = in[2][0];
    for (int64_t v = in[0][0]; delta > 0 ? v < in[1][0] : v > in[1][0];
         v += delta) {
      if (out.size() == 64) return false;
      out.push_back(v);
    }
    shape = {static_cast<int64_t>(out.size())};
  } else if (op == "Equal") {
    if (!both([](int64_t a, int64_t b) -> int64_t { return a == b; }))
      return false;
    dtype = DType::kBool;
  } else if (op == "Div") {
    if (std::find(in[1].begin(), in[1].end(), 0) != in[1].end()) return false;
    if (!both([](int64_t a, int64_t b) { return a / b; }))
      return false;  // truncates, as ONNX
  } else if (c.num_inputs() == 2) {
    static const std::map<std::string, std::function<int64_t(int64_t, int64_t)>>
        kOps = {{"Add", [](int64_t a, int64_t b) { return a + b; }},
                {"Sub", [](int64_t a, int64_t b) { return a - b; }},
                {"Mul", [](int64_t a, int64_t b) { return a * b; }},
                {"Max", [](int64_t a, int64_t b) { return std::max(a, b); }},
                {"Min", [](int64_t a, int64_t b) { return std::min(a, b); }}};
    if (!both(kOps.at(op))) return false;
  } else {
    return false;
  }
  RN_RETURN_IF_ERROR(c.OutConstant(0, OfDType(out, shape, dtype)));
  return true;
}

namespace {
// ---------------------------------------------------------------- recurrent

// LSTM, GRU and RNN: per direction, a `def` of one step and a `scan` of
// it over time, the inputs of all steps projected by one matmul before it
// (as nn.lstm does). The default activations only; sequence_lens freezes
// a sequence's state past its length and zeroes its outputs there.
absl::Status Recurrent(NodeContext& c) {
  const std::string& op = c.op();
  RN_RETURN_IF_ERROR(NeedFloat(c, 0));
  const int gates = op == "LSTM" ? 4 : op == "GRU" ? 3 : 1;
  const Value& X = c.in(0);
  const Value& W = c.in(1);
  const Value& R = c.in(2);
  if (X.dims.size() != 3 || W.dims.size() != 3 || R.dims.size() != 3 ||
      W.dims[2] < 0 || R.dims[2] < 0) {
    return c.Unsupported("inputs of unknown rank or size");
  }
  const int64_t H = c.Int("hidden_size", R.dims[2]);
  const int64_t I = W.dims[2];
  const std::string direction = c.Str("direction", "forward");
  const int64_t layout = c.Int("layout", 0);
  if (c.has("clip"))
    return c.Unsupported(StrCat("clip = ", c.Float("clip", 0)));
  if (c.has("activation_alpha") || c.has("activation_beta")) {
    return c.Unsupported("activation_alpha and activation_beta");
  }
  const std::vector<std::string> defaults =
      op == "LSTM"  ? std::vector<std::string>{"Sigmoid", "Tanh", "Tanh"}
      : op == "GRU" ? std::vector<std::string>{"Sigmoid", "Tanh"}
                    : std::vector<std::string>{"Tanh"};
  const int dirs = direction == "bidirectional" ? 2 : 1;
  if (c.has("activations")) {
    std::vector<std::string> acts = c.Strs("activations");
    for (size_t k = 0; k < acts.size(); ++k) {
      if (acts[k] != defaults[k % defaults.size()]) {
        return c.Unsupported(StrCat("activation ", acts[k]));
      }
    }
  }
  if (op == "LSTM" && c.Int("input_forget", 0) != 0)
    return c.Unsupported("input_forget = 1");
  const bool lbr = op == "GRU" && c.Int("linear_before_reset", 0) != 0;
  if (direction != "forward" && direction != "reverse" &&
      direction != "bidirectional") {
    return c.Invalid(StrCat("direction \"", direction, "\""));
  }
  const bool masked = c.has_input(4);
  const std::string xin =
      layout == 0 ? c.ref(0) : StrCat("transpose(", c.ref(0), ", [1, 0, 2])");
  const int64_t T = X.dims[layout == 0 ? 0 : 1],
                B = X.dims[layout == 0 ? 1 : 0];
  const int64_t GH = gates * H;
  std::string mask;
  if (masked) {
    mask = c.Temp("mask", StrCat("cast(expand_dims(arange(0, shape_of(", xin,
                                 ")[0]), 1) < expand_dims(cast(", c.ref(4),
                                 ", i32), 0), ", DTypeCode(X.dtype), ")"));
  }
  std::vector<std::string> ys, hs_last, cs_last;
  for (int d = 0; d < dirs; ++d) {
    const bool reverse = direction == "reverse" || d == 1;
    if (reverse && masked)
      return c.Unsupported("the reverse direction with sequence_lens");
    const std::string w =
        c.Temp(StrCat("w", d), StrCat("transpose(", c.ref(1), "[", d, "])"));
    const std::string r =
        c.Temp(StrCat("r", d), StrCat("transpose(", c.ref(2), "[", d, "])"));
    std::string bias, rbh;
    if (c.has_input(3)) {
      const std::string bw = StrCat(c.ref(3), "[", d, ", 0:", GH, "]");
      const std::string br =
          StrCat(c.ref(3), "[", d, ", ", GH, ":", 2 * GH, "]");
      if (lbr) {
        // The hidden gate's recurrent bias stays inside r * (...).
        bias =
            c.Temp(StrCat("b", d),
                   StrCat(bw, " + concat([", c.ref(3), "[", d, ", ", GH, ":",
                          GH + 2 * H, "], zeros([", H,
                          "], dtype = ", DTypeCode(X.dtype), ")], axis = 0)"));
        rbh = StrCat(c.ref(3), "[", d, ", ", GH + 2 * H, ":", 2 * GH, "]");
      } else {
        bias = c.Temp(StrCat("b", d), StrCat(bw, " + ", br));
      }
    }
    std::string xs = StrCat("reshape(", xin, ", [-1, ", I, "]) @ ", w);
    if (!bias.empty()) xs = StrCat(xs, " + ", bias);
    xs = StrCat("reshape(", xs, ", concat([shape_of(", xin, ")[0:2], [", GH,
                "]], axis = 0))");
    if (reverse) xs = StrCat("(", xs, ")[::-1]");
    if (masked)
      xs = StrCat("concat([", xs, ", expand_dims(", mask, ", 2)], axis = 2)");
    xs = c.Temp(StrCat("steps", d), xs);
    auto init = [&](int input) {
      if (c.has_input(input)) return StrCat(c.ref(input), "[", d, "]");
      return StrCat("zeros_like(", xs, "[0, :, 0:", H, "])");
    };
    // The step's names are the script's own, so that none hides another.
    const std::string step = c.Fresh(StrCat("step", d)), s = c.Fresh("state"),
                      z = c.Fresh("z"), h = c.Fresh("h"),
                      h2 = c.Fresh("h_next");
    std::vector<std::string> body;
    std::string result;
    auto slice = [&](const std::string& v, int64_t from, int64_t to) {
      return StrCat(v, "[:, ", from, ":", to, "]");
    };
    const std::string m = c.Fresh("m");
    if (masked) body.push_back(StrCat("let ", m, " = ", slice(z, GH, GH + 1)));
    auto keep = [&](const std::string& next, const std::string& old) {
      return masked ? StrCat(m, " * ", next, " + (1.0 - ", m, ") * ", old)
                    : next;
    };
    if (op == "LSTM") {
      const std::string cc = c.Fresh("c"), g = c.Fresh("g"), i = c.Fresh("i"),
                        f = c.Fresh("f"), o = c.Fresh("o"),
                        c2 = c.Fresh("c_next");
      std::string pi, po, pf;
      if (c.has_input(7)) {
        const std::string p = c.ref(7);
        pi = StrCat(" + ", p, "[", d, ", 0:", H, "] * ", cc);
        po = StrCat(" + ", p, "[", d, ", ", H, ":", 2 * H, "] * ", c2);
        pf = StrCat(" + ", p, "[", d, ", ", 2 * H, ":", 3 * H, "] * ", cc);
      }
      body.push_back(StrCat("let (", h, ", ", cc, ") = ", s));
      body.push_back(StrCat("let ", g, " = ", slice(z, 0, GH), " + ", h, " @ ",
                            r, "  # gates i, o, f, c"));
      body.push_back(StrCat("let ", i, " = sigmoid(", slice(g, 0, H), pi, ")"));
      body.push_back(
          StrCat("let ", f, " = sigmoid(", slice(g, 2 * H, 3 * H), pf, ")"));
      body.push_back(StrCat("let ", c2, " = ", f, " * ", cc, " + ", i,
                            " * tanh(", slice(g, 3 * H, 4 * H), ")"));
      body.push_back(
          StrCat("let ", o, " = sigmoid(", slice(g, H, 2 * H), po, ")"));
      body.push_back(StrCat("let ", h2, " = ", o, " * tanh(", c2, ")"));
      result = StrCat("(", keep(h2, h), ", ", keep(c2, cc), ")");
    } else if (op == "GRU") {
      const std::string hr = c.Fresh("hr"), zt = c.Fresh("update"),
                        rt = c.Fresh("reset"), ht = c.Fresh("candidate");
      body.push_back(
          StrCat("let ", hr, " = ", s, " @ ", r, "  # gates z, r, h"));
      body.push_back(StrCat("let ", zt, " = sigmoid(", slice(z, 0, H), " + ",
                            slice(hr, 0, H), ")"));
      body.push_back(StrCat("let ", rt, " = sigmoid(", slice(z, H, 2 * H),
                            " + ", slice(hr, H, 2 * H), ")"));
      if (lbr) {
        body.push_back(StrCat("let ", ht, " = tanh(", slice(z, 2 * H, 3 * H),
                              " + ", rt, " * (", slice(hr, 2 * H, 3 * H),
                              rbh.empty() ? "" : " + " + rbh, "))"));
      } else {
        body.push_back(StrCat("let ", ht, " = tanh(", slice(z, 2 * H, 3 * H),
                              " + (", rt, " * ", s, ") @ ",
                              slice(r, 2 * H, 3 * H), ")"));
      }
      body.push_back(StrCat("let ", h2, " = (1.0 - ", zt, ") * ", ht, " + ", zt,
                            " * ", s));
      result = keep(h2, s);
    } else {
      body.push_back(StrCat("let ", h2, " = tanh(", slice(z, 0, H), " + ", s,
                            " @ ", r, ")"));
      result = keep(h2, s);
    }
    std::string def = StrCat("def ", step, "(", s, ", ", z, ") {\n");
    for (const std::string& line : body) def += StrCat("    ", line, "\n");
    def += StrCat("    ", result, "\n}");
    c.Line(def);
    const std::string hs = c.Fresh(StrCat("hs", d));
    if (op == "LSTM") {
      const std::string cs = c.Fresh(StrCat("cs", d));
      c.Line(StrCat("let (", hs, ", ", cs, ") = scan(", step, ", ", xs, ", (",
                    init(5), ", ", init(6), "))"));
      cs_last.push_back(StrCat(cs, "[-1]"));
    } else {
      c.Line(
          StrCat("let ", hs, " = scan(", step, ", ", xs, ", ", init(5), ")"));
    }
    hs_last.push_back(StrCat(hs, "[-1]"));
    std::string y = reverse ? StrCat(hs, "[::-1]") : hs;
    if (masked) y = StrCat(y, " * expand_dims(", mask, ", 2)");
    ys.push_back(y);
  }
  auto stack_all = [](const std::vector<std::string>& v, int axis) {
    return StrCat("stack([", Join(v), "], axis = ", axis, ")");
  };
  std::string y = stack_all(ys, 1), yh = stack_all(hs_last, 0),
              yc = stack_all(cs_last, 0);
  std::vector<int64_t> ydims = {T, dirs, B, H}, sdims = {dirs, B, H};
  if (layout == 1) {
    y = StrCat("transpose(", y, ", [2, 0, 1, 3])");
    yh = StrCat("transpose(", yh, ", [1, 0, 2])");
    yc = StrCat("transpose(", yc, ", [1, 0, 2])");
    ydims = {B, T, dirs, H};
    sdims = {B, dirs, H};
  }
  RN_RETURN_IF_ERROR(c.Out(0, y, X.dtype, ydims));
  RN_RETURN_IF_ERROR(c.Out(1, yh, X.dtype, sdims));
  if (op == "LSTM") return c.Out(2, yc, X.dtype, sdims);
  return absl::OkStatus();
}

// ConvTranspose: conv2d_transpose's full ("valid") result, then the
// output padding added at the end and the pads cropped, as ONNX computes
// the output's size: stride * (in - 1) + output_padding + span - pads.
absl::Status ConvTranspose(NodeContext& c) {
  RN_RETURN_IF_ERROR(SameDTypes(c));
  RN_RETURN_IF_ERROR(NeedFloat(c, 0));
  const Value& f = c.in(1);
  if (f.dims.size() < 3 || f.dims.size() > 5) {
    return c.Unsupported("a filter other than 3-D, 4-D or 5-D");
  }
  const int64_t groups = c.Int("group", 1);
  if (groups < 1) return c.Invalid("group must be positive");
  const std::vector<int64_t> output_padding = c.Ints("output_padding");
  const std::vector<int64_t> output_shape = c.Ints("output_shape");
  const std::string auto_pad = c.Str("auto_pad", "NOTSET");
  Value x = c.in(0);
  if (!x.rank_known || x.dims.size() != f.dims.size()) {
    return c.Unsupported("an input of a rank other than the filter's");
  }
  const bool three = x.dims.size() == 5;  // conv3d_transpose
  const bool lifted = x.dims.size() == 3;
  std::vector<int64_t> kernel(f.dims.begin() + 2, f.dims.end());
  if (c.has("kernel_shape")) kernel = c.Ints("kernel_shape");
  std::vector<int64_t> strides = c.Ints("strides"), dil = c.Ints("dilations"),
                       pads = c.Ints("pads"), opad = output_padding,
                       oshape = output_shape;
  const size_t n = kernel.size();
  if (strides.empty()) strides.assign(n, 1);
  if (dil.empty()) dil.assign(n, 1);
  if (pads.empty()) pads.assign(2 * n, 0);
  if (opad.empty()) opad.assign(n, 0);
  if (oshape.size() > n)
    oshape.erase(oshape.begin(), oshape.end() - n);  // [N, C, ...]
  if (strides.size() != n || dil.size() != n || pads.size() != 2 * n ||
      opad.size() != n) {
    return c.Invalid(
        "strides, dilations, pads or output_padding of the wrong length");
  }
  if (f.dims[1] < 0)
    return c.Unsupported("a filter of unknown output channels");
  std::vector<int64_t> begin(n), size(n), full(n);
  for (size_t i = 0; i < n; ++i) {
    const int64_t in = x.dims[2 + i];
    if (in < 0)
      return c.Unsupported("ConvTranspose of a size not known while importing");
    const int64_t span = (kernel[i] - 1) * dil[i] + 1;
    full[i] = strides[i] * (in - 1) + span;
    const int64_t whole = full[i] + opad[i];
    int64_t out;
    if (!oshape.empty()) {
      out = oshape[i];
    } else if (auto_pad == "SAME_UPPER" || auto_pad == "SAME_LOWER") {
      out = in * strides[i];
    } else {
      out = whole - pads[i] - pads[i + n];
    }
    // A negative total (an output_shape larger than the full result):
    // zeros around it, as ONNX's negative padding gives.
    const int64_t total = whole - out;
    if (!oshape.empty() || auto_pad == "SAME_UPPER" ||
        auto_pad == "SAME_LOWER") {
      // The specification's split of the total padding.
      begin[i] = auto_pad == "SAME_LOWER" ? total - total / 2 : total / 2;
    } else {
      begin[i] = pads[i];
    }
    size[i] = out;
  }
  std::string in =
      three ? ToNDHWC(c.ref(0))
            : ToNHWC(lifted ? StrCat("expand_dims(", c.ref(0), ", 2)")
                            : c.ref(0));
  std::string filters =
      lifted ? StrCat("expand_dims(", c.ref(1), ", 2)") : c.ref(1);
  auto two = [&](const std::vector<int64_t>& v, int64_t one) {
    return lifted ? IntList({one, v[0]}) : IntList(v);
  };
  auto transposed = [&](const std::string& xs, const std::string& fs) {
    return StrCat(three ? "conv3d_transpose(" : "conv2d_transpose(", xs,
                  ", transpose(", fs,
                  three ? ", [2, 3, 4, 1, 0]), strides = "
                        : ", [2, 3, 1, 0]), strides = ",
                  two(strides, 1),
                  ", padding = \"valid\", dilations = ", two(dil, 1), ")");
  };
  std::string e = Grouped(c, in, filters, groups, transposed, three ? 4 : 3);
  std::vector<std::string> pad_rows = {"[0, 0]"}, idx = {":"};
  if (lifted) {
    pad_rows.push_back("[0, 0]");
    idx.push_back(":");
  }
  bool padded = false;
  for (size_t i = 0; i < n; ++i) {
    // The output reads [begin, begin + size) of the full result and its
    // output padding, zeros outside it.
    const int64_t whole = full[i] + opad[i];
    const int64_t lo = std::max<int64_t>(0, -begin[i]),
                  hi = std::max<int64_t>(0, begin[i] + size[i] - whole);
    pad_rows.push_back(IntList({lo, opad[i] + hi}));
    padded = padded || lo > 0 || opad[i] + hi > 0;
    idx.push_back(StrCat(begin[i] + lo, ":", begin[i] + lo + size[i]));
  }
  pad_rows.push_back("[0, 0]");
  idx.push_back(":");
  if (padded) e = StrCat("pad(", e, ", [", Join(pad_rows), "])");
  e = c.Temp("full", e);
  e = StrCat(e, "[", Join(idx), "]");
  e = three ? ToNCDHW(e) : ToNCHW(e);
  if (lifted) e = StrCat("squeeze(", e, ", 2)");
  if (c.has_input(2)) {
    e = StrCat(e, " + reshape(", c.ref(2),
               lifted  ? ", [-1, 1])"
               : three ? ", [-1, 1, 1, 1])"
                       : ", [-1, 1, 1])");
  }
  std::vector<int64_t> dims = {x.dims[0], f.dims[1] * groups};
  dims.insert(dims.end(), size.begin(), size.end());
  return c.Out(0, e, x.dtype, dims);
}

// The index into data of `dims` flattened (row-major) of each element of
// a result of `shape` (as many axes): `at` on `axis`, the element's own
// coordinate on the others.
std::string FlatIndex(const std::vector<int64_t>& dims,
                      const std::vector<int64_t>& shape, int axis,
                      const std::string& at) {
  const int r = static_cast<int>(dims.size());
  std::vector<std::string> terms;
  int64_t stride = 1;
  for (int d = r - 1; d >= 0; --d) {
    const std::string coord = d == axis ? at : Iota(shape[d], r, d);
    terms.push_back(stride == 1 ? coord : StrCat(coord, " * ", stride));
    stride *= dims[d];
  }
  std::string linear = terms[0];
  for (size_t k = 1; k < terms.size(); ++k)
    linear = StrCat(terms[k], " + ", linear);
  return linear;
}

// The first sequence_lens[b] steps of each batch entry reversed, the rest
// as they are: one gather from the data flattened, as GatherElements.
absl::Status ReverseSequence(NodeContext& c) {
  RN_ASSIGN_OR_RETURN(int r, RankOf(c, 0));
  const Value& x = c.in(0);
  if (r < 2 || !AllKnown(x.dims)) {
    return c.Unsupported("ReverseSequence of sizes not known while importing");
  }
  const int64_t time = c.Int("time_axis", 0), batch = c.Int("batch_axis", 1);
  if (!((time == 0 && batch == 1) || (time == 1 && batch == 0))) {
    return c.Invalid("time_axis and batch_axis other than 0 and 1");
  }
  std::vector<int64_t> by_batch(r, 1);
  by_batch[batch] = x.dims[batch];
  const std::string lens = c.Temp(
      "lens",
      StrCat("reshape(cast(", c.ref(1), ", i64), ", IntList(by_batch), ")"));
  const std::string t = Iota(x.dims[time], r, static_cast<int>(time));
  const std::string from = c.Temp(
      "step",
      StrCat("where(", t, " < ", lens, ", ", lens, " - 1 - ", t, ", ", t, ")"));
  const std::string linear =
      FlatIndex(x.dims, x.dims, static_cast<int>(time), from);
  return c.Out(0, StrCat("gather(reshape(", c.ref(0), ", [-1]), ", linear, ")"),
               x.dtype, x.dims);
}

// numpy's implicit einsum output letters: those that appear once in the
// operands' terms, in alphabetical order.
std::string ImplicitLetters(const std::vector<std::string>& terms) {
  std::map<char, int> count;
  for (const std::string& t : terms) {
    for (char ch : t) {
      if (std::isalpha(static_cast<unsigned char>(ch))) ++count[ch];
    }
  }
  std::string out;
  for (const auto& [ch, n] : count) {
    if (n == 1) out += ch;
  }
  return out;
}

// An einsum equation's ellipses written out as letters the equation does
// not use (the same letters for every term, aligned from the right as
// numpy broadcasts them), from the operands' ranks; an implicit output
// gets the ellipsis's letters first, as numpy's. Unchanged without "...".
absl::StatusOr<std::string> SpellEllipses(NodeContext& c,
                                          const std::string& eq) {
  if (eq.find("...") == std::string::npos) return eq;
  std::string unused;
  for (char ch = 'A'; ch <= 'Z'; ++ch) {
    if (eq.find(ch) == std::string::npos) unused += ch;
  }
  for (char ch = 'a'; ch <= 'z'; ++ch) {
    if (eq.find(ch) == std::string::npos) unused += ch;
  }
  const size_t arrow = eq.find("->");
  std::vector<std::string> terms = absl::StrSplit(eq.substr(0, arrow), ',');
  if (static_cast<int>(terms.size()) != c.num_inputs()) {
    return c.Invalid(StrCat("the equation has ", terms.size(),
                            " operands, the node ", c.num_inputs(), " inputs"));
  }
  int most = 0;
  std::vector<int> spans(terms.size(), -1);
  for (size_t k = 0; k < terms.size(); ++k) {
    const size_t at = terms[k].find("...");
    if (at == std::string::npos) continue;
    RN_ASSIGN_OR_RETURN(int r, RankOf(c, static_cast<int>(k)));
    spans[k] = r - static_cast<int>(terms[k].size() - 3);
    if (spans[k] < 0) {
      return c.Invalid(StrCat("operand ", k, " has rank ", r, ", its term '",
                              terms[k], "' names more axes"));
    }
    most = std::max(most, spans[k]);
  }
  if (most > static_cast<int>(unused.size()))
    return c.Unsupported("an ellipsis of more axes than free letters");
  const std::string all = unused.substr(0, most);
  auto spell = [&](const std::string& term, int n) {
    const size_t at = term.find("...");
    if (at == std::string::npos) return term;
    return StrCat(term.substr(0, at), all.substr(most - n),
                  term.substr(at + 3));
  };
  std::string out;
  for (size_t k = 0; k < terms.size(); ++k)
    out += StrCat(k == 0 ? "" : ",", spell(terms[k], spans[k]));
  if (arrow != std::string::npos) {
    out += StrCat("->", spell(eq.substr(arrow + 2), most));
  } else {
    // numpy's implicit output: the ellipsis first.
    out += StrCat("->", all, ImplicitLetters(terms));
  }
  return out;
}

// Einsum: Runnel's einsum for one or two operands (with their ellipses,
// and a letter twice in one operand: a diagonal). More: each operand's
// axes put in one order of all the equation's letters (a transpose, and a
// 1 for each letter it lacks), the operands multiplied, the letters not in
// the output summed away, and the output's order made; ellipses written
// out as letters, and a letter twice in one operand refused.
absl::Status Einsum(NodeContext& c) {
  std::string given;
  for (char ch : c.Str("equation", "")) {
    if (ch != ' ') given += ch;
  }
  RN_ASSIGN_OR_RETURN(const std::string eq, SpellEllipses(c, given));
  const bool builtin = c.num_inputs() <= 2;
  const size_t arrow = eq.find("->");
  const std::string lhs = eq.substr(0, arrow);
  std::vector<std::string> operands;
  for (size_t at = 0;;) {
    const size_t comma = lhs.find(',', at);
    operands.push_back(lhs.substr(
        at, comma == std::string::npos ? std::string::npos : comma - at));
    if (comma == std::string::npos) break;
    at = comma + 1;
  }
  if (static_cast<int>(operands.size()) != c.num_inputs()) {
    return c.Invalid(StrCat("the equation has ", operands.size(),
                            " operands, the node ", c.num_inputs(), " inputs"));
  }
  std::string letters;  // every letter, in order of appearance
  std::map<char, int64_t> size;
  for (int k = 0; k < c.num_inputs(); ++k) {
    const std::string& sub = operands[k];
    const Value& v = c.in(k);
    if (!v.rank_known || v.dims.size() != sub.size()) {
      return c.Invalid(StrCat("operand ", k, " has rank ", v.dims.size(),
                              ", its subscripts '", sub, "' say ", sub.size()));
    }
    std::set<char> seen;
    for (size_t i = 0; i < sub.size(); ++i) {
      const char ch = sub[i];
      if (!std::isalpha(static_cast<unsigned char>(ch))) {
        return c.Invalid(StrCat("'", std::string(1, ch), "' in the equation"));
      }
      if (!seen.insert(ch).second && !builtin) {
        return c.Unsupported(
            "a letter twice in one operand, with more than two operands");
      }
      if (letters.find(ch) == std::string::npos) letters += ch;
      if (v.dims[i] > 1 || size.count(ch) == 0) size[ch] = v.dims[i];
    }
  }
  std::string out;
  if (arrow != std::string::npos) {
    out = eq.substr(arrow + 2);
  } else {
    out = ImplicitLetters(operands);
  }
  for (char ch : out) {
    if (letters.find(ch) == std::string::npos)
      return c.Invalid("an output letter no operand has");
  }
  std::vector<int64_t> dims;
  for (char ch : out) dims.push_back(size[ch]);
  if (builtin) {  // one matmul where it can; the equation as given
    std::string call = StrCat("einsum(\"", given, "\"");
    for (int k = 0; k < c.num_inputs(); ++k) call += StrCat(", ", c.ref(k));
    return c.Out(0, call + ")", c.in(0).dtype, dims);
  }
  // More operands: the order of the output's letters, then the summed ones.
  std::string order = out;
  for (char ch : letters) {
    if (out.find(ch) == std::string::npos) order += ch;
  }
  std::vector<std::string> factors;
  for (int k = 0; k < c.num_inputs(); ++k) {
    const std::string& sub = operands[k];
    std::vector<int64_t> perm;
    for (char ch : order) {
      const size_t at = sub.find(ch);
      if (at != std::string::npos) perm.push_back(static_cast<int64_t>(at));
    }
    std::string e = c.ref(k);
    bool identity = true;
    for (size_t i = 0; i < perm.size(); ++i)
      identity = identity && perm[i] == static_cast<int64_t>(i);
    if (!identity) e = StrCat("transpose(", e, ", ", IntList(perm), ")");
    for (size_t i = 0; i < order.size(); ++i) {
      if (sub.find(order[i]) == std::string::npos)
        e = StrCat("expand_dims(", e, ", ", i, ")");
    }
    factors.push_back(e);
  }
  std::string e = factors[0];
  for (size_t k = 1; k < factors.size(); ++k) e = StrCat(e, " * ", factors[k]);
  if (order.size() > out.size()) {
    std::vector<int64_t> summed;
    for (size_t i = out.size(); i < order.size(); ++i)
      summed.push_back(static_cast<int64_t>(i));
    e = StrCat("sum(", e, ", axis = ", IntList(summed), ")");
  }
  return c.Out(0, e, c.in(0).dtype, dims);
}

// One resized axis as taps: output position i is the sum over j of
// weight[j][i] * x[index[j][i]] (the indices clamped to the axis, as the
// edge repeated), and `outside[i]` when tf_crop_and_resize puts it past
// the input (then the extrapolation value). Built as ONNX's reference
// builds its window: the n nearest source positions around x_ori (ties
// to the smaller), n and the weights from the mode's kernel (stretched by
// 1 / scale and normalised when antialias downsamples), and with
// exclude_outside the taps past either end weighed 0 (the rest normalised).
struct Taps {
  std::vector<std::vector<int64_t>> index;
  std::vector<std::vector<double>> weight;
  std::vector<bool> outside;
};

absl::StatusOr<Taps> ResizeTaps(NodeContext& c, const std::string& mode,
                                const std::string& nearest, bool antialias,
                                double a, bool exclude_outside, int64_t n,
                                int64_t m, double scale,
                                const std::function<double(int64_t)>& source,
                                const std::vector<double>* roi) {
  Taps t;
  const double out_width = scale * n;
  for (int64_t i = 0; i < m; ++i) {
    double x;
    if (roi != nullptr) {  // tf_crop_and_resize
      const double span = ((*roi)[1] - (*roi)[0]) * (n - 1);
      x = (out_width == 1 ? span / 2 : i * span / (out_width - 1)) +
          (*roi)[0] * (n - 1);
      t.outside.push_back(x < 0 || x > n - 1);
    } else {
      x = source(i);
      t.outside.push_back(false);
    }
    const double ratio = x == std::floor(x) ? 1.0 : x - std::floor(x);
    std::vector<double> w;
    if (mode == "nearest") {
      bool right;
      if (ratio == 1.0)
        right = true;
      else if (nearest == "round_prefer_floor")
        right = ratio > 0.5;
      else if (nearest == "round_prefer_ceil")
        right = ratio >= 0.5;
      else if (nearest == "floor")
        right = false;
      else if (nearest == "ceil")
        right = true;
      else
        return c.Unsupported(StrCat("nearest_mode \"", nearest, "\""));
      w = {right ? 0.0 : 1.0, right ? 1.0 : 0.0};
    } else if (mode == "linear") {
      if (!antialias) {
        w = {1 - ratio, ratio};
      } else {
        const double s = std::min(scale, 1.0);
        const int64_t start = static_cast<int64_t>(std::floor(-1 / s)) + 1;
        for (int64_t k = start; k < 2 - start; ++k)
          w.push_back(std::clamp(1 - std::abs((k - ratio) * s), 0.0, 1.0));
      }
    } else {  // cubic
      auto kernel = [a](double v) {
        v = std::abs(v);
        if (v <= 1) return ((a + 2) * v - (a + 3)) * v * v + 1;
        if (v < 2) return ((a * v - 5 * a) * v + 8 * a) * v - 4 * a;
        return 0.0;
      };
      const double s = antialias ? std::min(scale, 1.0) : 1.0;
      const int64_t start = static_cast<int64_t>(std::floor(-2 / s)) + 1;
      for (int64_t k = start; k < 2 - start; ++k)
        w.push_back(kernel(s * (k - ratio)));
    }
    const int64_t taps = static_cast<int64_t>(w.size());
    if (antialias) {
      double total = 0;
      for (double v : w) total += v;
      for (double& v : w) v /= total;
    }
    // The window: the `taps` positions nearest x, ties to the smaller.
    const double pad = std::ceil(taps / 2.0);
    const double xp = x + pad;
    const int64_t p = static_cast<int64_t>(std::floor(xp));
    const double frac = xp - p;
    int64_t offset;
    if (taps % 2 == 0) {
      offset = frac == 0 ? -(taps / 2) : -(taps / 2) + 1;
    } else {
      const int64_t base = -((taps - 1) / 2);
      offset = frac <= 0.5 ? base : base + 1;
    }
    const int64_t first = p + offset - static_cast<int64_t>(pad);
    if (exclude_outside) {
      double total = 0;
      for (int64_t j = 0; j < taps; ++j) {
        if (first + j < 0 || first + j >= n) w[j] = 0;
        total += w[j];
      }
      if (total != 0) {
        for (double& v : w) v /= total;
      }
    }
    if (t.index.empty()) {
      t.index.resize(taps);
      t.weight.resize(taps);
    } else if (static_cast<int64_t>(t.index.size()) != taps) {
      return c.Invalid("a resize window whose size changes along the axis");
    }
    for (int64_t j = 0; j < taps; ++j) {
      t.index[j].push_back(std::clamp<int64_t>(first + j, 0, n - 1));
      t.weight[j].push_back(w[j]);
    }
  }
  return t;
}

// Resize (and Upsample) with nearest, linear or cubic interpolation, on
// sizes known while importing: per resized axis, the source indices (and
// for linear, the two neighbours' weights) computed here by the
// specification's coordinate transformation, then gathers along the axis.
// Cubic, antialias and tf_crop_and_resize: ResizeTaps' window, a gather
// per tap.
absl::Status Resize(NodeContext& c) {
  const Value& x = c.in(0);
  RN_ASSIGN_OR_RETURN(int r, RankOf(c, 0));
  if (!AllKnown(x.dims))
    return c.Unsupported("Resize of sizes not known while importing");
  const std::string mode = c.Str("mode", "nearest");
  if (mode != "nearest" && mode != "linear" && mode != "cubic")
    return c.Unsupported(StrCat("mode \"", mode, "\""));
  const std::string ctm =
      c.op() == "Upsample" || c.opset() < 11
          ? "asymmetric"
          : c.Str("coordinate_transformation_mode", "half_pixel");
  const std::string nearest =
      c.Str("nearest_mode", c.opset() < 11 ? "floor" : "round_prefer_floor");
  const bool antialias = c.Int("antialias", 0) != 0;
  if (antialias && mode == "nearest")
    return c.Invalid("antialias with mode \"nearest\"");
  std::vector<int64_t> axes = c.Ints("axes");
  for (int64_t& a : axes) {
    RN_ASSIGN_OR_RETURN(a, NormAxis(c, a, r));
  }
  if (axes.empty()) {
    for (int d = 0; d < r; ++d) axes.push_back(d);
  }
  const std::string policy = c.Str("keep_aspect_ratio_policy", "stretch");
  if (policy != "stretch" && policy != "not_larger" &&
      policy != "not_smaller") {
    return c.Invalid(StrCat("keep_aspect_ratio_policy \"", policy, "\""));
  }
  const double a = c.Float("cubic_coeff_a", -0.75f);
  const bool exclude_outside = c.Int("exclude_outside", 0) != 0;
  const float extrapolation = c.Float("extrapolation_value", 0.0f);
  // tf_crop_and_resize's region: per axis, its start and end as fractions
  // of the input's extent (roi, input 1: the starts, then the ends).
  std::vector<double> roi_of(2 * r);
  for (int d = 0; d < r; ++d) roi_of[r + d] = 1.0;
  const bool crop = ctm == "tf_crop_and_resize";
  if (crop) {
    if (!c.has_input(1)) return c.Invalid("tf_crop_and_resize without roi");
    if (!c.constant(1)) return c.NeedConstant(1, "roi");
  }
  // The scales, or the sizes.
  std::vector<double> scales;
  std::vector<int64_t> sizes;
  const int scales_at = c.op() == "Upsample" || c.opset() < 11 ? 1 : 2;
  if (c.op() == "Upsample" && c.opset() < 9) {
    return c.Unsupported("Upsample before opset 9");
  }
  if (c.has_input(scales_at) && c.constant(scales_at) &&
      c.constant(scales_at)->num_elements() > 0) {
    scales = c.constant(scales_at)->ToDoubles();
  } else if (c.has_input(scales_at + 1)) {
    RN_ASSIGN_OR_RETURN(sizes, c.ConstInts(scales_at + 1, "sizes"));
  } else if (c.has_input(scales_at)) {
    return c.NeedConstant(scales_at, "scales");
  } else {
    return c.Invalid("neither scales nor sizes");
  }
  if ((!scales.empty() && scales.size() != axes.size()) ||
      (!sizes.empty() && sizes.size() != axes.size())) {
    return c.Invalid("scales or sizes of the wrong length");
  }
  if (crop) {
    const std::vector<double> roi = c.constant(1)->ToDoubles();
    if (roi.size() != 2 * axes.size())
      return c.Invalid("roi of the wrong length");
    for (size_t i = 0; i < axes.size(); ++i) {
      roi_of[axes[i]] = roi[i];
      roi_of[r + axes[i]] = roi[axes.size() + i];
    }
  }
  // Each axis's scale and output size (the axes not listed keep theirs);
  // with sizes and a policy other than stretch, one scale for the listed
  // axes, the smallest (not_larger) or the largest, and sizes rounded
  // half up from it.
  std::vector<double> scale_of(r, 1.0);
  std::vector<int64_t> size_of = x.dims;
  for (size_t i = 0; i < axes.size(); ++i) {
    const int64_t d = axes[i], n = x.dims[d];
    if (sizes.empty()) {
      scale_of[d] = scales[i];
      size_of[d] = static_cast<int64_t>(std::floor(n * scales[i]));
    } else {
      size_of[d] = sizes[i];
      scale_of[d] = static_cast<double>(sizes[i]) / n;
    }
  }
  if (!sizes.empty() && policy != "stretch") {
    double one = scale_of[axes[0]];
    for (int64_t d : axes) {
      one = policy == "not_larger" ? std::min(one, scale_of[d])
                                   : std::max(one, scale_of[d]);
    }
    for (int64_t d : axes) {
      scale_of[d] = one;
      size_of[d] = static_cast<int64_t>(one * x.dims[d] + 0.5);
    }
  }
  std::string e = c.ref(0);
  std::vector<int64_t> dims = x.dims;
  for (int d = 0; d < r; ++d) {
    const int64_t n = x.dims[d];
    const int64_t m = size_of[d];
    const double scale = scale_of[d];
    const std::vector<double> roi = {roi_of[d], roi_of[r + d]};
    if (m == n && scale == 1.0 && roi[0] == 0.0 && roi[1] == 1.0) continue;
    if (m <= 0 || n <= 0) return c.Unsupported("an empty resize");
    auto source = [&](int64_t i) -> double {
      if (ctm == "half_pixel") return (i + 0.5) / scale - 0.5;
      if (ctm == "half_pixel_symmetric") {
        // Centred: the shift that rounding the output's length made.
        const double adjustment = m / (scale * n);
        return n / 2.0 * (1 - adjustment) + (i + 0.5) / scale - 0.5;
      }
      // (An output of one: -0.5, as the reference; nearest and linear
      // clamp it to the first element.)
      if (ctm == "pytorch_half_pixel")
        return m > 1 ? (i + 0.5) / scale - 0.5 : -0.5;
      if (ctm == "align_corners") {
        // The output's length before rounding, as the reference has it.
        const double len = sizes.empty() ? n * scale : static_cast<double>(m);
        return len > 1 ? i * static_cast<double>(n - 1) / (len - 1) : 0.0;
      }
      return i / scale;  // asymmetric
    };
    if (ctm != "half_pixel" && ctm != "pytorch_half_pixel" &&
        ctm != "align_corners" && ctm != "asymmetric" &&
        ctm != "half_pixel_symmetric" && !crop) {
      return c.Unsupported(
          StrCat("coordinate_transformation_mode \"", ctm, "\""));
    }
    if (mode == "cubic" || antialias || crop) {
      RN_ASSIGN_OR_RETURN(
          Taps t, ResizeTaps(c, mode, nearest, antialias, a, exclude_outside, n,
                             m, scale, source, crop ? &roi : nullptr));
      std::vector<int64_t> shape(r, 1);
      shape[d] = m;
      const std::string in = c.Temp(StrCat("in", d), e);
      std::vector<std::string> terms;
      for (size_t j = 0; j < t.index.size(); ++j) {
        std::vector<std::string> w;
        for (double v : t.weight[j]) w.push_back(F(static_cast<float>(v)));
        const std::string wj =
            c.Temp(StrCat("w", d, "_", j),
                   StrCat("reshape(cast([", Join(w), "], ", DTypeCode(x.dtype),
                          "), ", IntList(shape), ")"));
        terms.push_back(StrCat("gather(", in, ", ", IntList(t.index[j]),
                               ", axis = ", d, ") * ", wj));
      }
      e = SumOf(terms);
      if (std::find(t.outside.begin(), t.outside.end(), true) !=
          t.outside.end()) {
        std::vector<std::string> mask;
        for (bool o : t.outside) mask.push_back(o ? "true" : "false");
        e = StrCat("where(reshape([", Join(mask), "], ", IntList(shape),
                   "), cast(", F(extrapolation), ", ", DTypeCode(x.dtype),
                   "), ", e, ")");
      }
      dims[d] = m;
      continue;
    }
    std::vector<int64_t> lo, hi;
    std::vector<std::string> weights;
    for (int64_t i = 0; i < m; ++i) {
      const double s = source(i);
      if (mode == "nearest") {
        double k;
        if (nearest == "round_prefer_floor")
          k = std::ceil(s - 0.5);
        else if (nearest == "round_prefer_ceil")
          k = std::floor(s + 0.5);
        else if (nearest == "floor")
          k = std::floor(s);
        else if (nearest == "ceil")
          k = std::ceil(s);
        else
          return c.Unsupported(StrCat("nearest_mode \"", nearest, "\""));
        lo.push_back(std::clamp<int64_t>(static_cast<int64_t>(k), 0, n - 1));
      } else {
        const double cl = std::clamp(s, 0.0, static_cast<double>(n - 1));
        const int64_t i0 = static_cast<int64_t>(std::floor(cl));
        lo.push_back(i0);
        hi.push_back(std::min(i0 + 1, n - 1));
        weights.push_back(F(static_cast<float>(cl - i0)));
      }
    }
    if (mode == "nearest") {
      e = StrCat("gather(", e, ", ", IntList(lo), ", axis = ", d, ")");
    } else {
      std::vector<int64_t> shape(r, 1);
      shape[d] = m;
      const std::string w =
          c.Temp(StrCat("w", d),
                 StrCat("reshape(cast([", Join(weights), "], ",
                        DTypeCode(x.dtype), "), ", IntList(shape), ")"));
      const std::string in = c.Temp(StrCat("in", d), e);
      e = StrCat("gather(", in, ", ", IntList(lo), ", axis = ", d,
                 ") * (1.0 - ", w, ") + gather(", in, ", ", IntList(hi),
                 ", axis = ", d, ") * ", w);
    }
    dims[d] = m;
  }
  if (mode != "nearest") RN_RETURN_IF_ERROR(NeedFloat(c, 0));
  return c.Out(0, e, x.dtype, dims);
}

// ---------------------------------------------------------------- indexing

// GatherElements, ScatterElements, GatherND, ScatterND, TopK and NonZero
// as Runnel's index ops (framework/ops/index_ops.cc). ONNX's negative
// indices count from the end and Runnel's are refused, so each index below
// 0 gets the length of its axis added first.

// The length of input `i`'s dimension `d` as i64 code: a literal when
// known while importing.
std::string DimCode(NodeContext& c, int i, int64_t d) {
  const Value& v = c.in(i);
  if (v.rank_known && d < static_cast<int64_t>(v.dims.size()) &&
      v.dims[d] >= 0) {
    return StrCat(v.dims[d]);
  }
  return StrCat("cast(shape_of(", c.ref(i), ")[", d, "], i64)");
}

// A Shape of what the importer knows of input `i`.
Shape ShapeOf(NodeContext& c, int i) {
  return c.in(i).rank_known ? Shape(c.in(i).dims) : Shape::UnknownRank();
}

std::vector<int64_t> DimsOf(const Shape& s) {
  return s.unknown_rank() ? std::vector<int64_t>{} : s.dims();
}

absl::StatusOr<std::string> Reduction(NodeContext& c) {
  const std::string how = c.Str("reduction", "none");
  if (!ParseScatterReduction(how).ok()) {
    return c.Unsupported(StrCat("reduction = \"", how, "\""));
  }
  return how;
}

// GatherElements (reading) and ScatterElements and its opset-10 name
// Scatter (writing), along `axis`.
absl::Status AlongAxis(NodeContext& c) {
  RN_ASSIGN_OR_RETURN(int r, RankOf(c, 0));
  RN_ASSIGN_OR_RETURN(int64_t axis, NormAxis(c, c.Int("axis", 0), r));
  const std::string idx =
      c.Temp("index",
             FromEnd(StrCat("cast(", c.ref(1), ", i64)"), DimCode(c, 0, axis)));
  const Value& x = c.in(0);
  if (c.op() == "GatherElements") {
    return c.Out(
        0,
        StrCat("gather_elements(", c.ref(0), ", ", idx, ", axis = ", axis, ")"),
        x.dtype, c.in(1).dims, c.in(1).rank_known);
  }
  RN_ASSIGN_OR_RETURN(std::string how, Reduction(c));
  return c.Out(0,
               StrCat("scatter_elements(", c.ref(0), ", ", idx, ", ", c.ref(2),
                      ", axis = ", axis, ", reduction = \"", how, "\")"),
               x.dtype, x.dims, x.rank_known);
}

// GatherND and ScatterND: the tuples' coordinates from the end made
// positive against data's dimensions batch_dims .. batch_dims + k.
absl::Status Nd(NodeContext& c) {
  const bool gather = c.op() == "GatherND";
  const int64_t batch = gather ? c.Int("batch_dims", 0) : 0;
  const Value& x = c.in(0);
  const Value& i = c.in(1);
  if (!i.rank_known || i.dims.empty() || i.dims.back() < 0) {
    return c.Unsupported("index tuples of a length not known while importing");
  }
  const int64_t k = i.dims.back();
  const absl::StatusOr<Shape> out =
      GatherNdOutput(ShapeOf(c, 0), ShapeOf(c, 1), batch);
  if (!out.ok()) return c.Invalid(std::string(out.status().message()));
  std::string lengths = StrCat("cast(shape_of(", c.ref(0), ")[", batch, ":",
                               batch + k, "], i64)");
  if (x.rank_known && static_cast<int64_t>(x.dims.size()) >= batch + k) {
    const std::vector<int64_t> known(x.dims.begin() + batch,
                                     x.dims.begin() + batch + k);
    if (AllKnown(known)) lengths = IntList(known);
  }
  std::string idx = StrCat("cast(", c.ref(1), ", i64)");
  if (k > 0) idx = c.Temp("index", FromEnd(idx, lengths));
  if (gather) {
    return c.Out(0,
                 StrCat("gather_nd(", c.ref(0), ", ", idx,
                        ", batch_dims = ", batch, ")"),
                 x.dtype, DimsOf(*out), !out->unknown_rank());
  }
  RN_ASSIGN_OR_RETURN(std::string how, Reduction(c));
  return c.Out(0,
               StrCat("scatter_nd(", c.ref(0), ", ", idx, ", ", c.ref(2),
                      ", reduction = \"", how, "\")"),
               x.dtype, x.dims, x.rank_known);
}

// TopK: the values, and the positions as ONNX's i64. Runnel's are always
// sorted, which sorted = 0 allows.
absl::Status TopK(NodeContext& c) {
  if (c.in(0).dtype == DType::kBool) return c.Unsupported("dtype bool");
  RN_ASSIGN_OR_RETURN(int r, RankOf(c, 0));
  RN_ASSIGN_OR_RETURN(int64_t axis, NormAxis(c, c.Int("axis", -1), r));
  std::string k;
  int64_t known = -1;
  if (c.opset() < 10) {
    known = c.Int("k", 0);
    k = StrCat(known);
  } else {
    if (c.constant(1).has_value()) {
      const std::vector<int64_t> kv = c.constant(1)->ToInt64s();
      if (kv.size() != 1) return c.Invalid("k must hold one value");
      known = kv[0];
    }
    k = StrCat("reshape(", c.ref(1), ", [])");
  }
  const bool largest = c.Int("largest", 1) != 0;
  c.Int("sorted", 1);
  const Value& x = c.in(0);
  std::vector<int64_t> dims = x.dims;
  dims[axis] = known;
  const std::string both =
      c.Temp("top", StrCat("top_k(", c.ref(0), ", ", k, ", axis = ", axis,
                           ", largest = ", largest ? "true" : "false", ")"));
  RN_RETURN_IF_ERROR(c.Out(0, StrCat(both, "[0]"), x.dtype, dims));
  return c.Out(1, StrCat("cast(", both, "[1], i64)"), DType::kI64, dims);
}

// `v` (f32 code) reflected into [lo, hi] as GridSample's reference does:
// by the near border, again and again while outside.
std::string Reflect(NodeContext& c, const std::string& v, double lo,
                    double hi) {
  const double range = hi - lo;
  const std::string below = c.Temp("below", StrCat(lo, " - ", v));
  const std::string above = c.Temp("above", StrCat(v, " - ", hi));
  // dx past the near border folds n = floor(dx / range) times: an even n
  // lands r = dx - n * range inside the near border, an odd one r inside
  // the far one.
  auto fold = [&](const std::string& dx, double near, double far, bool upward) {
    const std::string n = StrCat("floor(", dx, " / ", range, ")");
    const std::string r = StrCat("(", dx, " - ", n, " * ", range, ")");
    return StrCat("where(", n, " % 2.0 == 0.0, ", near, upward ? " + " : " - ",
                  r, ", ", far, upward ? " - " : " + ", r, ")");
  };
  const std::string from_below = fold(below, lo, hi, true);
  const std::string from_above = fold(above, hi, lo, false);
  return StrCat("where(", v, " < ", lo, ", ", from_below, ", where(", v, " > ",
                hi, ", ", from_above, ", ", v, "))");
}

// TensorScatter (a KV cache's update): update's positions s along `axis`
// written at write_indices[batch] + s (modulo the cache's length when
// "circular"), one scatter_elements of indices made from them. The
// update's sizes must be known while importing.
absl::Status TensorScatter(NodeContext& c) {
  RN_ASSIGN_OR_RETURN(int r, RankOf(c, 0));
  RN_ASSIGN_OR_RETURN(int64_t axis, NormAxis(c, c.Int("axis", -2), r));
  const std::string mode = c.Str("mode", "linear");
  if (mode != "linear" && mode != "circular") {
    return c.Unsupported(StrCat("mode = \"", mode, "\""));
  }
  if (axis == 0) return c.Invalid("axis 0 is the batch");
  const Value& u = c.in(1);
  if (!u.rank_known || static_cast<int>(u.dims.size()) != r ||
      !AllKnown(u.dims)) {
    return c.Unsupported("an update of sizes not known while importing");
  }
  std::string at = Iota(u.dims[axis], r, static_cast<int>(axis));
  if (c.has_input(2)) {
    std::vector<int64_t> by_batch(r, 1);
    by_batch[0] = -1;
    at = StrCat(at, " + reshape(cast(", c.ref(2), ", i64), ", IntList(by_batch),
                ")");
  }
  if (mode == "circular") {
    at = StrCat("(", at, ") % ", DimCode(c, 0, axis));
  }
  const std::string idx =
      c.Temp("index", StrCat("broadcast_to(", at, ", ", IntList(u.dims), ")"));
  const Value& cache = c.in(0);
  return c.Out(0,
               StrCat("scatter_elements(", c.ref(0), ", ", idx, ", ", c.ref(1),
                      ", axis = ", axis, ")"),
               cache.dtype, cache.dims, cache.rank_known);
}

// GridSample of 4-D inputs, bilinear, nearest or bicubic (PyTorch's
// grid_sample, as ONNX's reference computes it): the grid's coordinates
// unnormalised, moved inside by the padding mode, then the taps read with
// one gather_nd each (batch_dims 1) from the image made NHWC, weighted and
// summed in the reference's order (along the width, then the height).
// Volumetric (5-D) inputs are refused.
absl::Status GridSample(NodeContext& c) {
  RN_RETURN_IF_ERROR(NeedFloat(c, 0));
  const Value& x = c.in(0);
  if (!x.rank_known || x.dims.size() != 4 || x.dims[2] < 0 || x.dims[3] < 0) {
    return c.Unsupported("a GridSample other than 2-D of sizes known");
  }
  const std::string mode =
      c.Str("mode", c.opset() >= 20 ? "linear" : "bilinear");
  const bool nearest = mode == "nearest";
  const bool cubic = mode == "cubic" || mode == "bicubic";
  if (!nearest && !cubic && mode != "linear" && mode != "bilinear") {
    return c.Unsupported(StrCat("mode = \"", mode, "\""));
  }
  const std::string padding = c.Str("padding_mode", "zeros");
  if (padding != "zeros" && padding != "border" && padding != "reflection") {
    return c.Unsupported(StrCat("padding_mode = \"", padding, "\""));
  }
  const bool align = c.Int("align_corners", 0) != 0;
  const std::string image =
      c.Temp("image", StrCat("transpose(", c.ref(0), ", [0, 2, 3, 1])"));
  // One axis: its coordinate from the grid, moved inside; `d` its length.
  auto coordinate = [&](int g, int64_t d) {
    const std::string n = StrCat(c.ref(1), "[:, :, :, ", g, "]");
    std::string v = align ? StrCat("(", n, " + 1.0) / 2.0 * ", d - 1)
                          : StrCat("((", n, " + 1.0) * ", d, " - 1.0) / 2.0");
    if (nearest) v = StrCat("round(", v, ")");
    v = c.Temp(g == 0 ? "x" : "y", v);
    const double lo = align ? 0.0 : -0.5, hi = align ? d - 1.0 : d - 0.5;
    const std::string outside =
        StrCat("(", v, " < ", lo, " or ", v, " > ", hi, ")");
    if (padding == "border") {
      v = c.Temp(g == 0 ? "x_in" : "y_in",
                 StrCat("where(", outside, ", clip(", v, ", 0.0, ", d - 1,
                        ".0), ", v, ")"));
    } else if (padding == "reflection") {
      v = c.Temp(
          g == 0 ? "x_in" : "y_in",
          StrCat("where(", outside, ", ", Reflect(c, v, lo, hi), ", ", v, ")"));
    }
    return v;
  };
  const std::string gx = coordinate(0, x.dims[3]);
  const std::string gy = coordinate(1, x.dims[2]);
  // The pixel at integer positions (i, j) ([N, Ho, Wo] i64) with the
  // padding rule, [N, Ho, Wo, C].
  auto pixel = [&](const std::string& i, const std::string& j) {
    auto inside = [&](const std::string& k, int64_t d) {
      if (padding == "border") return StrCat("clip(", k, ", 0, ", d - 1, ")");
      if (padding == "reflection") {
        const double lo = align ? 0.0 : -0.5, hi = align ? d - 1.0 : d - 0.5;
        return StrCat("cast(", Reflect(c, StrCat("cast(", k, ", f32)"), lo, hi),
                      ", i64)");
      }
      return StrCat("clip(", k, ", 0, ", d - 1, ")");
    };
    std::string at =
        StrCat("gather_nd(", image, ", stack([", inside(i, x.dims[2]), ", ",
               inside(j, x.dims[3]), "], axis = -1), batch_dims = 1)");
    if (padding == "zeros") {
      at = StrCat(at, " * expand_dims(cast(", i, " >= 0 and ", i, " < ",
                  x.dims[2], " and ", j, " >= 0 and ", j, " < ", x.dims[3],
                  ", ", DTypeCode(x.dtype), "), -1)");
    }
    return at;
  };
  std::string y;
  if (nearest) {
    y = pixel(StrCat("cast(", gy, ", i64)"), StrCat("cast(", gx, ", i64)"));
  } else if (cubic) {
    // Keys' cubic convolution (a = -0.75) over the 4 x 4 taps around the
    // position, along the width first.
    auto coeffs = [&](const std::string& v, const char* axis) {
      const std::string t =
          c.Temp(StrCat("t", axis),
                 StrCat("expand_dims(", v, " - floor(", v, "), -1)"));
      const std::string A = "(-0.75)";
      auto outer = [&](const std::string& u) {
        return StrCat("((", A, " * ", u, " - 5.0 * ", A, ") * ", u, " + 8.0 * ",
                      A, ") * ", u, " - 4.0 * ", A);
      };
      auto inner = [&](const std::string& u) {
        return StrCat("((", A, " + 2.0) * ", u, " - (", A, " + 3.0)) * ", u,
                      " * ", u, " + 1.0");
      };
      return std::vector<std::string>{
          c.Temp(StrCat("c0", axis), outer(StrCat("(", t, " + 1.0)"))),
          c.Temp(StrCat("c1", axis), inner(t)),
          c.Temp(StrCat("c2", axis), inner(StrCat("(1.0 - ", t, ")"))),
          c.Temp(StrCat("c3", axis), outer(StrCat("(2.0 - ", t, ")")))};
    };
    const std::vector<std::string> cx = coeffs(gx, "x"), cy = coeffs(gy, "y");
    const std::string i0 = c.Temp("i0", StrCat("cast(floor(", gy, "), i64)"));
    const std::string j0 = c.Temp("j0", StrCat("cast(floor(", gx, "), i64)"));
    std::vector<std::string> rows;
    for (int a = 0; a < 4; ++a) {
      const std::string i = StrCat(i0, " + ", a - 1);
      std::vector<std::string> terms;
      for (int b = 0; b < 4; ++b) {
        terms.push_back(
            StrCat(cx[b], " * ", pixel(i, StrCat(j0, " + ", b - 1))));
      }
      rows.push_back(c.Temp(StrCat("row", a), SumOf(terms)));
    }
    std::vector<std::string> terms;
    for (int a = 0; a < 4; ++a) terms.push_back(StrCat(cy[a], " * ", rows[a]));
    y = SumOf(terms);
  } else {
    const std::string x0 = c.Temp("x0", StrCat("floor(", gx, ")"));
    const std::string y0 = c.Temp("y0", StrCat("floor(", gy, ")"));
    const std::string wx =
        c.Temp("wx", StrCat("expand_dims(", gx, " - ", x0, ", -1)"));
    const std::string wy =
        c.Temp("wy", StrCat("expand_dims(", gy, " - ", y0, ", -1)"));
    const std::string i0 = c.Temp("i0", StrCat("cast(", y0, ", i64)"));
    const std::string j0 = c.Temp("j0", StrCat("cast(", x0, ", i64)"));
    auto row = [&](const std::string& i) {
      return StrCat("((1.0 - ", wx, ") * ", pixel(i, j0), " + ", wx, " * ",
                    pixel(i, StrCat(j0, " + 1")), ")");
    };
    y = StrCat("(1.0 - ", wy, ") * ", row(i0), " + ", wy, " * ",
               row(StrCat(i0, " + 1")));
  }
  std::vector<int64_t> dims = {x.dims[0], x.dims[1], -1, -1};
  const Value& grid = c.in(1);
  if (grid.rank_known && grid.dims.size() == 4) {
    dims[2] = grid.dims[1];
    dims[3] = grid.dims[2];
  }
  return c.Out(0, StrCat("transpose(", y, ", [0, 3, 1, 2])"), x.dtype, dims);
}

// DFT (opsets 17 and 20) on sizes known while importing: the signal's
// real and imaginary parts (the last dimension, 1 or 2) with the axis
// moved last and padded or cut to dft_length, then products with cosine
// and sine matrices built in the graph (their angles from integer n * k
// modulo the length, so they stay exact), in f64; onesided keeps the first
// length / 2 + 1 frequencies, inverse divides by the length, and inverse
// with onesided is numpy's irfft (a real signal from a half spectrum).
absl::Status Dft(NodeContext& c) {
  RN_RETURN_IF_ERROR(NeedFloat(c, 0));
  RN_ASSIGN_OR_RETURN(int r, RankOf(c, 0));
  const Value& x = c.in(0);
  if (!AllKnown(x.dims) || (x.dims.back() != 1 && x.dims.back() != 2)) {
    return c.Unsupported(
        "a DFT of sizes not known, or a last dimension other than 1 or 2");
  }
  int64_t axis = c.opset() >= 20 ? -2 : 1;
  if (c.opset() < 20) {
    axis = c.Int("axis", 1);
  } else if (c.has_input(2)) {
    RN_ASSIGN_OR_RETURN(std::vector<int64_t> a, c.ConstInts(2, "axis"));
    if (a.size() != 1) return c.Invalid("axis must hold one value");
    axis = a[0];
  }
  RN_ASSIGN_OR_RETURN(axis, NormAxis(c, axis, r));
  if (axis == r - 1) return c.Invalid("the axis is the complex dimension");
  const bool inverse = c.Int("inverse", 0) != 0;
  const bool onesided = c.Int("onesided", 0) != 0;
  const int64_t n_in = x.dims[axis];
  int64_t length = inverse && onesided ? 2 * (n_in - 1) : n_in;
  if (c.has_input(1)) {
    RN_ASSIGN_OR_RETURN(std::vector<int64_t> l, c.ConstInts(1, "dft_length"));
    if (l.size() != 1 || l[0] < 1)
      return c.Invalid("dft_length must be one positive value");
    length = l[0];
  }
  if (length < 1) return c.Invalid("a DFT of no length");
  // In f64, as the reference's FFT: exact zeros stay near zero.
  const std::string t = "f64";
  // Parts, rank r - 1, the axis last.
  std::vector<int64_t> perm;
  for (int i = 0; i < r - 1; ++i) {
    if (i != axis) perm.push_back(i);
  }
  perm.push_back(axis);
  auto part = [&](int which) {
    std::vector<std::string> at(r, ":");
    at.back() = StrCat(which);
    return StrCat("transpose(cast(", c.ref(0), "[", Join(at), "], f64), ",
                  IntList(perm), ")");
  };
  // The input's bins: the signal for a forward DFT, the spectrum for an
  // inverse one (a half spectrum of length / 2 + 1 for irfft).
  const int64_t bins = inverse && onesided ? length / 2 + 1 : length;
  auto fit = [&](const std::string& v) {
    if (n_in == bins) return v;
    if (n_in > bins)
      return StrCat(v, "[", Join(std::vector<std::string>(r - 2, ":")),
                    r > 2 ? ", " : "", ":", bins, "]");
    std::vector<std::string> rows(r - 2, "[0, 0]");
    rows.push_back(StrCat("[0, ", bins - n_in, "]"));
    return StrCat("pad(", v, ", [", Join(rows), "])");
  };
  const std::string re = c.Temp("re", fit(part(0)));
  const bool complex = x.dims.back() == 2;
  const std::string im = complex ? c.Temp("im", fit(part(1))) : "";
  const int64_t out = inverse ? length : (onesided ? length / 2 + 1 : length);
  // angle[k, n] = 2 pi ((k * n) mod length) / length, [bins, out].
  const std::string angle = c.Temp(
      "angle", StrCat("cast((reshape(arange(0, ", bins, ", dtype = i64), [",
                      bins, ", 1]) * reshape(arange(0, ", out,
                      ", dtype = i64), [1, ", out, "])) % ", length, ", ", t,
                      ") * (6.283185307179586 / ", length, ")"));
  std::string cosm = c.Temp("cos", StrCat("cos(", angle, ")"));
  std::string sinm = c.Temp("sin", StrCat("sin(", angle, ")"));
  std::string y_re, y_im;
  if (!inverse) {
    // X = sum x e^{-i angle}.
    y_re = complex ? StrCat(re, " @ ", cosm, " + ", im, " @ ", sinm)
                   : StrCat(re, " @ ", cosm);
    y_im = complex ? StrCat(im, " @ ", cosm, " - ", re, " @ ", sinm)
                   : StrCat("-(", re, " @ ", sinm, ")");
  } else if (!onesided) {
    y_re = StrCat("(", re, " @ ", cosm,
                  (complex ? StrCat(" - ", im, " @ ", sinm) : ""), ") / ",
                  length, ".0");
    y_im = StrCat("(", (complex ? StrCat(im, " @ ", cosm, " + ") : ""), re,
                  " @ ", sinm, ") / ", length, ".0");
  } else {
    // irfft: the half spectrum's bins weighed 2, but the first and (for
    // an even length) the middle one.
    std::vector<std::string> w;
    for (int64_t k = 0; k < bins; ++k) {
      w.push_back(k == 0 || (length % 2 == 0 && k == length / 2) ? "1.0"
                                                                 : "2.0");
    }
    const std::string weight = c.Temp(
        "weight",
        StrCat("reshape(cast([", Join(w), "], ", t, "), [", bins, ", 1])"));
    cosm = c.Temp("wcos", StrCat(cosm, " * ", weight));
    sinm = c.Temp("wsin", StrCat(sinm, " * ", weight));
    y_re = StrCat("(", re, " @ ", cosm,
                  (complex ? StrCat(" - ", im, " @ ", sinm) : ""), ") / ",
                  length, ".0");
  }
  // Back: [..., out, parts] with the frequency axis where it was.
  std::vector<int64_t> back(r);
  for (int i = 0; i < r - 1; ++i) back[perm[i]] = i;
  back[r - 1] = r - 1;
  const std::string parts =
      y_im.empty() ? StrCat("expand_dims(", y_re, ", -1)")
                   : StrCat("stack([", y_re, ", ", y_im, "], axis = -1)");
  std::vector<int64_t> dims = x.dims;
  dims[axis] = out;
  dims.back() = y_im.empty() ? 1 : 2;
  return c.Out(0,
               StrCat("cast(transpose(", parts, ", ", IntList(back), "), ",
                      DTypeCode(x.dtype), ")"),
               x.dtype, dims);
}

// NonMaxSuppression: Runnel's non_max_suppression; the optional inputs\'
// defaults are ONNX's (no boxes, a threshold of 0, no score floor).
absl::Status Nms(NodeContext& c) {
  const bool center = c.Int("center_point_box", 0) != 0;
  auto scalar = [&](int i, const std::string& absent) {
    return c.has_input(i) ? StrCat("reshape(", c.ref(i), ", [])") : absent;
  };
  return c.Out(0,
               StrCat("non_max_suppression(", c.ref(0), ", ", c.ref(1), ", ",
                      scalar(2, "0"), ", iou_threshold = ", scalar(3, "0.0"),
                      ", score_threshold = ", scalar(4, "-1.0 / 0.0"),
                      ", center_point_box = ", center ? "true" : "false", ")"),
               DType::kI64, {-1, 3});
}

// Unique: unique_all's four outputs, the ones the node names.
absl::Status Unique(NodeContext& c) {
  std::string axis = "none";
  if (c.has("axis")) {
    RN_ASSIGN_OR_RETURN(int r, RankOf(c, 0));
    RN_ASSIGN_OR_RETURN(int64_t a, NormAxis(c, c.Int("axis", 0), r));
    axis = StrCat(a);
  }
  const bool sorted = c.Int("sorted", 1) != 0;
  const std::string all =
      c.Temp("unique", StrCat("unique_all(", c.ref(0), ", axis = ", axis,
                              ", sorted = ", sorted ? "true" : "false", ")"));
  for (int i = 0; i < 4; ++i) {
    if (!c.has_output(i)) continue;
    std::vector<int64_t> dims = {-1};
    if (i == 0 && axis != "none") {
      dims = c.in(0).dims;
      dims[std::stoll(axis)] = -1;
    }
    RN_RETURN_IF_ERROR(c.Out(i, StrCat(all, "[", i, "]"),
                             i == 0 ? c.in(0).dtype : DType::kI64, dims));
  }
  return absl::OkStatus();
}

// AffineGrid (opset 20): the sampling grid of each batch entry's affine
// map `theta` ([N, 2, 3] or [N, 3, 4]) over an output of `size` ([N, C,
// H, W] or [N, C, D, H, W], known while importing): each position's
// normalised coordinates (x, y[, z], 1), x along the width, times theta
// transposed. The coordinates run from -1 to 1 over the pixels' centres,
// or over their corners with align_corners.
absl::Status AffineGrid(NodeContext& c) {
  RN_RETURN_IF_ERROR(NeedFloat(c, 0));
  RN_ASSIGN_OR_RETURN(std::vector<int64_t> size, c.ConstInts(1, "size"));
  const bool corners = c.Int("align_corners", 0) != 0;
  const Value& theta = c.in(0);
  const size_t n = size.size() - 2;  // spatial dimensions
  if ((size.size() != 4 && size.size() != 5) ||
      (theta.rank_known &&
       (theta.dims.size() != 3 ||
        (theta.dims[1] >= 0 && theta.dims[1] != static_cast<int64_t>(n)) ||
        (theta.dims[2] >= 0 &&
         theta.dims[2] != static_cast<int64_t>(n) + 1)))) {
    return c.Invalid(
        "size must be [N, C, H, W] or [N, C, D, H, W] and theta "
        "[N, 2, 3] or [N, 3, 4]");
  }
  const std::string dt = DTypeCode(theta.dtype);
  // The coordinates along each spatial dimension of `length` positions.
  auto axis = [&](int64_t length) {
    const std::string i = StrCat("arange(0, ", length, ", dtype = ", dt, ")");
    if (corners) {
      return length > 1
                 ? StrCat(i, " * ", F(2.0f / static_cast<float>(length - 1)),
                          " - 1.0")
                 : StrCat("zeros([1], dtype = ", dt, ") - 1.0");
    }
    return StrCat("(", i, " * 2.0 + 1.0) / ", F(static_cast<float>(length)),
                  " - 1.0");
  };
  // size's spatial part, d h w (or h w); the grid's components run x
  // (width) first.
  std::vector<int64_t> spatial(size.begin() + 2, size.end());
  std::vector<std::string> parts;
  for (size_t k = n; k-- > 0;) {
    std::vector<int64_t> shape(n, 1);
    shape[k] = spatial[k];
    parts.push_back(StrCat("broadcast_to(reshape(", axis(spatial[k]), ", ",
                           IntList(shape), "), ", IntList(spatial), ")"));
  }
  parts.push_back(StrCat("ones(", IntList(spatial), ", dtype = ", dt, ")"));
  int64_t positions = 1;
  for (int64_t d : spatial) positions *= d;
  const std::string base = c.Temp(
      "base", StrCat("reshape(stack([", Join(parts), "], axis = -1), ",
                     IntList({positions, static_cast<int64_t>(n) + 1}), ")"));
  std::vector<int64_t> dims = {size[0]};
  dims.insert(dims.end(), spatial.begin(), spatial.end());
  dims.push_back(static_cast<int64_t>(n));
  std::vector<int64_t> out = dims;
  out[0] = -1;
  return c.Out(0,
               StrCat("reshape(expand_dims(", base, ", 0) @ transpose(",
                      c.ref(0), ", [0, 2, 1]), ", IntList(out), ")"),
               theta.dtype, dims);
}

// CenterCropPad: along each of `axes` (every axis without them), the
// input cut to the target size around its centre, or padded with zeros
// around it; an odd difference leaves its extra element at the end. Sizes
// known while importing.
absl::Status CenterCropPad(NodeContext& c) {
  RN_ASSIGN_OR_RETURN(int r, RankOf(c, 0));
  const Value& x = c.in(0);
  RN_ASSIGN_OR_RETURN(std::vector<int64_t> shape, c.ConstInts(1, "shape"));
  std::vector<int64_t> axes = c.Ints("axes");
  if (axes.empty()) {
    for (int i = 0; i < r; ++i) axes.push_back(i);
  }
  if (axes.size() != shape.size()) {
    return c.Invalid("shape and axes differ in length");
  }
  std::vector<std::string> idx(r, ":"), pads(r, "[0, 0]");
  std::vector<int64_t> dims = x.dims;
  bool crop = false, pad = false;
  for (size_t k = 0; k < axes.size(); ++k) {
    RN_ASSIGN_OR_RETURN(int64_t a, NormAxis(c, axes[k], r));
    const int64_t dim = x.dims[a], want = shape[k];
    if (dim < 0) {
      return c.Unsupported("CenterCropPad of a size not known while importing");
    }
    if (want < 0) return c.Invalid(StrCat("a target size of ", want));
    if (want < dim) {
      const int64_t begin = (dim - want) / 2;
      idx[a] = StrCat(begin, ":", begin + want);
      crop = true;
    } else if (want > dim) {
      const int64_t before = (want - dim) / 2;
      pads[a] = IntList({before, want - dim - before});
      pad = true;
    }
    dims[a] = want;
  }
  std::string e = c.ref(0);
  if (crop) e = StrCat(e, "[", Join(idx), "]");
  if (pad) e = StrCat("pad(", e, ", [", Join(pads), "])");
  return c.Out(0, e, x.dtype, dims);
}

// Compress: the slices along `axis` (of the flattened input without one)
// where the condition holds, a gather at the condition's nonzero
// positions; a condition shorter than the axis leaves the rest out, one
// longer fails when it runs at the gather (an index past the axis).
absl::Status Compress(NodeContext& c) {
  const Value& x = c.in(0);
  const Value& cond = c.in(1);
  if (cond.dtype != DType::kBool || !cond.rank_known || cond.dims.size() != 1) {
    return c.Invalid("the condition must be a 1-D bool tensor");
  }
  std::string in = c.ref(0);
  std::vector<int64_t> dims = {-1};
  int64_t axis = 0;
  if (c.has("axis")) {
    RN_ASSIGN_OR_RETURN(int r, RankOf(c, 0));
    RN_ASSIGN_OR_RETURN(axis, NormAxis(c, c.Int("axis", 0), r));
    dims = x.dims;
    dims[axis] = -1;
  } else {
    in = StrCat("reshape(", in, ", [-1])");
  }
  return c.Out(0,
               StrCat("gather(", in, ", reshape(nonzero(", c.ref(1),
                      "), [-1]), axis = ", axis, ")"),
               x.dtype, dims);
}

// NonZero: one column per element (Runnel's nonzero gives rows).
absl::Status NonZero(NodeContext& c) {
  RN_ASSIGN_OR_RETURN(int r, RankOf(c, 0));
  return c.Out(0, StrCat("transpose(nonzero(", c.ref(0), "))"), DType::kI64,
               {r, -1});
}
}  // namespace

Translator FindTranslator(std::string_view op_type) {
  static const auto* table = [] {
    auto* t = new std::map<std::string, Translator, std::less<>>;
    for (const auto& [op, form] : UnaryTable()) (*t)[op] = Unary;
    for (const char* op :
         {"Elu", "LeakyRelu", "Selu", "HardSigmoid", "ThresholdedRelu", "Celu",
          "Gelu", "Shrink", "IsInf"}) {
      (*t)[op] = Activation;
    }
    for (const char* op :
         {"Add", "Sub", "Mul", "Div", "Pow", "Mod", "Equal", "Less", "Greater",
          "LessOrEqual", "GreaterOrEqual", "And", "Or", "Xor"}) {
      (*t)[op] = Binary;
    }
    for (const char* op : {"Max", "Min", "Sum", "Mean"}) (*t)[op] = Variadic;
    for (const char* op : {"ReduceSum", "ReduceMean", "ReduceMax", "ReduceMin",
                           "ReduceProd", "ReduceLogSumExp", "ReduceL1",
                           "ReduceL2", "ReduceSumSquare", "ReduceLogSum"}) {
      (*t)[op] = Reduce;
    }
    for (const char* op : {"Softmax", "LogSoftmax", "Hardmax"})
      (*t)[op] = Softmax;
    (*t)["ArgMax"] = ArgReduce;
    (*t)["ArgMin"] = ArgReduce;
    (*t)["PRelu"] = PRelu;
    (*t)["Where"] = Where;
    (*t)["Clip"] = Clip;
    (*t)["Cast"] = Cast;
    (*t)["CastLike"] = Cast;
    (*t)["MatMul"] = MatMul;
    (*t)["Gemm"] = Gemm;
    (*t)["CumSum"] = CumSum;
    (*t)["CumProd"] = CumProd;
    (*t)["RotaryEmbedding"] = RotaryEmbedding;
    (*t)["Attention"] = Attention;
    (*t)["Reshape"] = Reshape;
    (*t)["Transpose"] = Transpose;
    (*t)["Concat"] = Concat;
    (*t)["Split"] = Split;
    (*t)["Squeeze"] = Squeeze;
    (*t)["Unsqueeze"] = Unsqueeze;
    (*t)["Flatten"] = Flatten;
    (*t)["Expand"] = Expand;
    (*t)["Tile"] = Tile;
    (*t)["Gather"] = Gather;
    (*t)["Shape"] = ShapeOp;
    (*t)["Size"] = Size;
    (*t)["Constant"] = Constant;
    (*t)["ConstantOfShape"] = ConstantOfShape;
    (*t)["Range"] = Range;
    (*t)["Slice"] = Slice;
    (*t)["Pad"] = Pad;
    (*t)["Conv"] = Conv;
    (*t)["MaxPool"] = Pool;
    (*t)["AveragePool"] = Pool;
    (*t)["LpPool"] = SlicePool;
    (*t)["NegativeLogLikelihoodLoss"] = ClassLoss;
    (*t)["SoftmaxCrossEntropyLoss"] = ClassLoss;
    (*t)["LRN"] = Lrn;
    (*t)["GlobalAveragePool"] = GlobalPool;
    (*t)["GlobalMaxPool"] = GlobalPool;
    (*t)["BatchNormalization"] = BatchNorm;
    (*t)["InstanceNormalization"] = InstanceNorm;
    (*t)["LayerNormalization"] = LayerNorm;
    (*t)["Dropout"] = Dropout;
    (*t)["OneHot"] = OneHot;
    (*t)["RMSNormalization"] = RmsNorm;
    (*t)["Swish"] = Swish;
    (*t)["LpNormalization"] = LpNorm;
    (*t)["MeanVarianceNormalization"] = MeanVarianceNorm;
    (*t)["GroupNormalization"] = GroupNorm;
    (*t)["DepthToSpace"] = DepthSpace;
    (*t)["SpaceToDepth"] = DepthSpace;
    (*t)["EyeLike"] = EyeLike;
    (*t)["Trilu"] = Trilu;
    (*t)["ScatterND"] = Nd;
    (*t)["ScatterElements"] = AlongAxis;
    (*t)["Scatter"] = AlongAxis;
    (*t)["NonZero"] = NonZero;
    (*t)["Compress"] = Compress;
    (*t)["CenterCropPad"] = CenterCropPad;
    (*t)["AffineGrid"] = AffineGrid;
    (*t)["Unique"] = Unique;
    (*t)["TensorScatter"] = TensorScatter;
    (*t)["GridSample"] = GridSample;
    (*t)["NonMaxSuppression"] = Nms;
    (*t)["DFT"] = Dft;
    (*t)["ConvTranspose"] = ConvTranspose;
    (*t)["GatherElements"] = AlongAxis;
    (*t)["ReverseSequence"] = ReverseSequence;
    (*t)["GatherND"] = Nd;
    (*t)["Einsum"] = Einsum;
    (*t)["TopK"] = TopK;
    (*t)["Resize"] = Resize;
    (*t)["Upsample"] = Resize;
    (*t)["LSTM"] = Recurrent;
    (*t)["GRU"] = Recurrent;
    (*t)["RNN"] = Recurrent;
    return t;
  }();
  auto it = table->find(op_type);
  return it == table->end() ? nullptr : it->second;
}

}  // namespace runnel::onnx_import
