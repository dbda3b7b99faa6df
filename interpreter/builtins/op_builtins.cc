// The builtins that apply ops: creation, element-wise, reductions, shapes,
// neural networks, sparse updates, state.
#include <fmt/args.h>
#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <map>
#include <optional>
#include <thread>

#include "base/read_file.h"
#include "base/status_macros.h"
#include "base/strings.h"
#include "common_runtime/gradients.h"
#include "common_runtime/trace.h"
#include "framework/op_registry.h"
#include "framework/window.h"
#include "interpreter/builtins/internal.h"
#include "interpreter/control_flow.h"
#include "interpreter/data.h"
#include "interpreter/diag.h"
#include "interpreter/interpreter.h"
#include "io/csv_reader.h"
#include "io/idx_reader.h"
#include "io/npy.h"

namespace runnel::interp {

BuiltinParam P(std::string name) { return BuiltinParam(std::move(name)); }
BuiltinParam P(std::string name, Value def) {
  return BuiltinParam(std::move(name), std::move(def));
}

namespace {

// A default attribute value as the language writes it.
Value AttrDefault(const AttrValue& v) {
  if (const bool* x = std::get_if<bool>(&v)) return Value::Bool(*x);
  if (const int64_t* x = std::get_if<int64_t>(&v)) return Value::Int(*x);
  if (const double* x = std::get_if<double>(&v)) return Value::Float(*x);
  if (const std::string* x = std::get_if<std::string>(&v)) {
    return Value::String(*x);
  }
  if (const DType* x = std::get_if<DType>(&v)) return Value::OfDType(*x);
  return None();  // not a parameter type of any builtin
}

// Attribute `name` from argument `i`, converted like its default. An
// attribute without one, such as a reduction's `axis`, takes an int or a
// list of ints, and none leaves it absent.
absl::Status SetAttr(Interpreter& in, const Args& a, int i, const OpDef& def,
                     const std::string& name, AttrMap* attrs) {
  auto it = def.default_attrs.find(name);
  if (it == def.default_attrs.end()) return AxisAttr(in, a, i, attrs, name);
  const AttrValue& d = it->second;
  if (std::holds_alternative<bool>(d)) {
    RN_ASSIGN_OR_RETURN((*attrs)[name], BoolArg(a, i));
  } else if (std::holds_alternative<int64_t>(d)) {
    RN_ASSIGN_OR_RETURN((*attrs)[name], IntArg(a, i));
  } else if (std::holds_alternative<double>(d)) {
    RN_ASSIGN_OR_RETURN((*attrs)[name], NumberArg(a, i));
  } else if (std::holds_alternative<std::string>(d)) {
    RN_ASSIGN_OR_RETURN((*attrs)[name], StringArg(a, i));
  } else if (std::holds_alternative<DType>(d)) {
    RN_ASSIGN_OR_RETURN((*attrs)[name], DTypeArg(a, i));
  }
  return absl::OkStatus();
}

}  // namespace

// The builtin of op `op`, made from its definition: one parameter per
// input, then one per declared attribute with its default (none for one
// without), under the op's name; the op's one output, or a tuple.
Builtin FromOp(const std::string& op) {
  const OpDef* def = OpRegistry::Global().Find(op);
  if (def == nullptr || def->variadic) {
    std::fprintf(stderr, "runnel: builtin of unknown or variadic op '%s'\n",
                 op.c_str());
    std::abort();  // a mistake in the builtin table, found at start-up
  }
  std::vector<BuiltinParam> params;
  for (const std::string& input : def->inputs) params.push_back(P(input));
  for (const std::string& attr : def->attr_names) {
    auto it = def->default_attrs.find(attr);
    params.push_back(P(attr, it == def->default_attrs.end()
                                 ? None()
                                 : AttrDefault(it->second)));
  }
  return Builtin{
      op, std::move(params), [def](Interpreter& in, Args& a) -> Result {
        const int n = static_cast<int>(def->inputs.size());
        std::vector<Value> inputs(a.values.begin(), a.values.begin() + n);
        AttrMap attrs;
        const int m = static_cast<int>(def->attr_names.size());
        for (int i = 0; i < m; ++i) {
          RN_RETURN_IF_ERROR(
              SetAttr(in, a, n + i, *def, def->attr_names[i], &attrs));
        }
        return in.builder().ApplyOp(def->name, std::move(inputs),
                                    std::move(attrs), Site(a));
      }};
}

namespace {

// argmax, argmin: the ops have `keepdims` (they share the reductions'
// definition), which the language leaves out, and take a single axis.
Builtin ArgReduction(std::string name) {
  return Builtin{name,
                 {P("x"), P("axis", None())},
                 [name](Interpreter& in, Args& a) -> Result {
                   AttrMap attrs;
                   if (!a[1].is_none()) {
                     RN_ASSIGN_OR_RETURN(int64_t axis, IntArg(a, 1));
                     attrs["axis"] = axis;
                   }
                   return in.builder().ApplyOp(name, {a[0]}, std::move(attrs),
                                               Site(a));
                 }};
}

// The dimensions a concrete, non-negative integer vector (`[3, 4]` stacks
// into one) or a list of such scalars spells, or nullopt.
std::optional<Shape> ListedDims(const Value& v) {
  std::vector<int64_t> dims;
  auto add = [&](int64_t d) {
    if (d < 0) return false;
    dims.push_back(d);
    return true;
  };
  if (v.is_concrete()) {
    const Tensor& t = v.tensor();
    if (t.rank() != 1 || !IsInteger(t.dtype())) return std::nullopt;
    for (int64_t d : t.ToInt64s()) {
      if (!add(d)) return std::nullopt;
    }
    return Shape(std::move(dims));
  }
  if (!v.is_sequence()) return std::nullopt;
  for (const Value& item : v.items()) {
    if (!item.is_concrete() || item.tensor().rank() != 0) return std::nullopt;
    std::optional<int64_t> d = item.AsInt();
    if (!d || !add(*d)) return std::nullopt;
  }
  return Shape(std::move(dims));
}

// zeros/ones: fill(shape, v as dtype).
Builtin FillWith(std::string name, double v) {
  return Builtin{
      name,
      {P("shape"), P("dtype", Value::OfDType(DType::kF32))},
      [v](Interpreter& in, Args& a) -> Result {
        // The common `ones([n, m])`: the tensor at once, rather
        // than three eager ops (stack, cast, fill). Half types
        // and anything unusual take the general path.
        if (std::optional<Shape> dims = ListedDims(a[0])) {
          RN_ASSIGN_OR_RETURN(DType d, DTypeArg(a, 1));
          if (d != DType::kF16 && d != DType::kBF16) {
            Tensor t(d, *std::move(dims));
            VisitDType(d, [&](auto x) {
              using T = decltype(x);
              if constexpr (!std::is_same_v<T, Half> &&
                            !std::is_same_v<T, BFloat16>) {
                std::fill_n(t.data<T>(), t.num_elements(), static_cast<T>(v));
              }
            });
            return Value::Concrete(std::move(t));
          }
        }
        RN_ASSIGN_OR_RETURN(Value shape, SizesArg(in, a, 0));
        RN_ASSIGN_OR_RETURN(DType d, DTypeArg(a, 1));
        Value scalar = Value::Concrete(Tensor::ScalarOf(d, v));
        return in.builder().ApplyOp("fill", {shape, scalar}, {}, Site(a));
      }};
}

// random_normal / truncated_normal / random_uniform.
Builtin Random(std::string name, std::string op, std::string p1, std::string a1,
               double d1, std::string p2, std::string a2, double d2) {
  return Builtin{name,
                 {P("shape"), P(p1, Value::Float(d1)), P(p2, Value::Float(d2)),
                  P("seed", None()), P("dtype", Value::OfDType(DType::kF32))},
                 [op, a1, a2](Interpreter& in, Args& a) -> Result {
                   RN_ASSIGN_OR_RETURN(Value shape, SizesArg(in, a, 0));
                   RN_ASSIGN_OR_RETURN(double x1, NumberArg(a, 1));
                   RN_ASSIGN_OR_RETURN(double x2, NumberArg(a, 2));
                   int64_t seed = -1;
                   if (!a[3].is_none()) {
                     RN_ASSIGN_OR_RETURN(seed, IntArg(a, 3));
                   }
                   RN_ASSIGN_OR_RETURN(DType d, DTypeArg(a, 4));
                   return in.builder().ApplyOp(
                       op, {shape},
                       {{a1, x1}, {a2, x2}, {"seed", seed}, {"dtype", d}},
                       Site(a));
                 }};
}

// glorot_uniform and he_normal are defined in stdlib/nn.rnl; these builtins
// forward to them, so the names work without `import nn`.
Builtin Initializer(std::string name) {
  return Builtin{
      name,
      {P("shape"), P("seed", None()), P("dtype", Value::OfDType(DType::kF32))},
      [name](Interpreter& in, Args& a) -> Result {
        RN_ASSIGN_OR_RETURN(Value f, in.StdlibMember("nn", name, a.span));
        return in.Call(f, {a[0], a[1], a[2]},
                       {a.span_of(0), a.span_of(1), a.span_of(2)}, {}, {},
                       a.span, a.hint);
      }};
}

}  // namespace

Result AssignFn(const std::string& op, Interpreter& in, Args& a) {
  const Value& target = a[0];
  if (!target.is_symbolic() || target.out().node->op() != "variable") {
    return ErrorAt(a.span_of(0), StrCat(op, " needs a var or state, got ",
                                        DescribeValue(target)));
  }
  return in.builder().Assign(op, target, a[1], Site(a));
}

namespace {

// The fused optimizer updates (framework/ops/optim_ops.cc): the first
// `vars` arguments are vars or states, the rest tensors; the optional
// trailing bool arguments are the op's attributes `bool_attrs`.
Builtin ApplyBuiltin(const std::string& op, std::vector<BuiltinParam> params,
                     int vars, std::vector<std::string> bool_attrs = {}) {
  return {op, std::move(params),
          [op, vars, bool_attrs](Interpreter& in, Args& a) -> Result {
            for (int i = 0; i < vars; ++i) {
              if (!a[i].is_symbolic() || !IsVariableNode(a[i].out().node)) {
                return ErrorAt(a.span_of(i),
                               StrCat(ParamName(a, i), " must be a var or ",
                                      "state, got ", DescribeValue(a[i])));
              }
            }
            const int tensors =
                static_cast<int>(a.builtin->params.size() - bool_attrs.size());
            std::vector<Value> inputs;
            for (int i = 0; i < tensors; ++i) inputs.push_back(a[i]);
            AttrMap attrs;
            for (size_t k = 0; k < bool_attrs.size(); ++k) {
              RN_ASSIGN_OR_RETURN(attrs[bool_attrs[k]],
                                  BoolArg(a, tensors + static_cast<int>(k)));
            }
            return in.builder().ApplyOp(op, std::move(inputs), std::move(attrs),
                                        Site(a));
          }};
}

}  // namespace

// Creation.
void AddCreation(std::vector<Builtin>& b) {
  const Value f32 = Value::OfDType(DType::kF32);
  b.push_back(FillWith("zeros", 0));
  b.push_back(FillWith("ones", 1));
  b.push_back({"fill",
               {P("shape"), P("value"), P("dtype", None())},
               [](Interpreter& in, Args& a) -> Result {
                 RN_ASSIGN_OR_RETURN(Value shape, SizesArg(in, a, 0));
                 RN_ASSIGN_OR_RETURN(Value v,
                                     in.builder().ToTensor(a[1], a.span_of(1),
                                                           "fill: 'value'"));
                 if (!a[2].is_none()) {
                   RN_ASSIGN_OR_RETURN(DType d, DTypeArg(a, 2));
                   if (v.tensor_dtype() != d) {
                     RN_ASSIGN_OR_RETURN(
                         v, in.builder().ApplyOp("cast", {v}, {{"dtype", d}},
                                                 OpSite{a.span_of(1)}));
                   }
                 }
                 return in.builder().ApplyOp("fill", {shape, v}, {}, Site(a));
               }});
  b.push_back(FromOp("zeros_like"));
  b.push_back(FromOp("ones_like"));
  b.push_back({"arange",
               {P("start"), P("stop", None()), P("step", Value::Int(1)),
                P("dtype", None())},
               [](Interpreter& in, Args& a) -> Result {
                 Value start = a[0], stop = a[1], step = a[2];
                 if (stop.is_none()) {
                   stop = start;
                   start = Value::Int(0);
                 }
                 std::vector<Value> v = {start, stop, step};
                 if (!a[3].is_none()) {
                   RN_ASSIGN_OR_RETURN(DType d, DTypeArg(a, 3));
                   for (Value& x : v) {
                     RN_ASSIGN_OR_RETURN(
                         x, in.builder().ApplyOp("cast", {x}, {{"dtype", d}},
                                                 OpSite{a.span}));
                   }
                 }
                 return in.builder().ApplyOp("range", v, {}, Site(a));
               }});
  b.push_back({"eye",
               {P("n"), P("m", None()), P("dtype", f32)},
               [](Interpreter& in, Args& a) -> Result {
                 AttrMap attrs;
                 RN_ASSIGN_OR_RETURN(int64_t n, IntArg(a, 0));
                 attrs["n"] = n;
                 if (!a[1].is_none()) {
                   RN_ASSIGN_OR_RETURN(int64_t m, IntArg(a, 1));
                   attrs["m"] = m;
                 }
                 RN_ASSIGN_OR_RETURN(DType d, DTypeArg(a, 2));
                 attrs["dtype"] = d;
                 return in.builder().ApplyOp("eye", {}, std::move(attrs),
                                             Site(a));
               }});
  b.push_back({"one_hot",
               {P("indices"), P("depth"), P("on_value", Value::Float(1)),
                P("off_value", Value::Float(0)), P("dtype", f32),
                P("axis", Value::Int(-1))},
               [](Interpreter& in, Args& a) -> Result {
                 RN_ASSIGN_OR_RETURN(int64_t depth, IntArg(a, 1));
                 RN_ASSIGN_OR_RETURN(double on, NumberArg(a, 2));
                 RN_ASSIGN_OR_RETURN(double off, NumberArg(a, 3));
                 RN_ASSIGN_OR_RETURN(DType d, DTypeArg(a, 4));
                 RN_ASSIGN_OR_RETURN(int64_t axis, IntArg(a, 5));
                 return in.builder().ApplyOp("one_hot", {a[0]},
                                             {{"depth", depth},
                                              {"on_value", on},
                                              {"off_value", off},
                                              {"dtype", d},
                                              {"axis", axis}},
                                             Site(a));
               }});
  b.push_back(Random("random_normal", "random_normal", "mean", "mean", 0,
                     "stddev", "stddev", 1));
  b.push_back(Random("random_uniform", "random_uniform", "min", "minval", 0,
                     "max", "maxval", 1));
  b.push_back(Random("truncated_normal", "truncated_normal", "mean", "mean", 0,
                     "stddev", "stddev", 1));
  b.push_back(Initializer("glorot_uniform"));
  b.push_back(Initializer("he_normal"));
}

// Element-wise.
void AddElementWise(std::vector<Builtin>& b) {
  for (const char* op :
       {"abs",      "neg",      "sign", "sqrt",  "rsqrt", "square",  "exp",
        "log",      "log1p",    "sin",  "cos",   "tanh",  "sigmoid", "relu",
        "elu",      "softplus", "erf",  "floor", "ceil",  "round",   "isnan",
        "isfinite", "asin",     "acos", "atan",  "asinh", "acosh",   "atanh"}) {
    b.push_back(FromOp(op));
  }
  for (const char* op : {"pow", "maximum", "minimum", "clip", "where"}) {
    b.push_back(FromOp(op));
  }
  b.push_back(
      {"cast", {P("x"), P("dtype")}, [](Interpreter& in, Args& a) -> Result {
         RN_ASSIGN_OR_RETURN(DType d, DTypeArg(a, 1));
         return in.builder().ApplyOp("cast", {a[0]}, {{"dtype", d}}, Site(a));
       }});
}

// Reductions.
void AddReductions(std::vector<Builtin>& b) {
  for (const char* op : {"sum", "mean", "max", "min", "prod", "all", "any",
                         "logsumexp", "cumsum"}) {
    b.push_back(FromOp(op));
  }
  b.push_back(ArgReduction("argmax"));
  b.push_back(ArgReduction("argmin"));
}

// Shape.
void AddShape(std::vector<Builtin>& b) {
  b.push_back(
      {"reshape", {P("x"), P("shape")}, [](Interpreter& in, Args& a) -> Result {
         RN_ASSIGN_OR_RETURN(Value shape, ShapeArg(in, a, 1));
         return in.builder().ApplyOp("reshape", {a[0], shape}, {}, Site(a));
       }});
  b.push_back({"transpose",
               {P("x"), P("perm", None())},
               [](Interpreter& in, Args& a) -> Result {
                 AttrMap attrs;
                 if (!a[1].is_none()) {
                   RN_ASSIGN_OR_RETURN(std::vector<int64_t> perm,
                                       IntsArg(in, a, 1));
                   attrs["perm"] = perm;
                 }
                 return in.builder().ApplyOp("transpose", {a[0]},
                                             std::move(attrs), Site(a));
               }});
  b.push_back({"expand_dims",
               {P("x"), P("axis")},
               [](Interpreter& in, Args& a) -> Result {
                 RN_ASSIGN_OR_RETURN(int64_t axis, IntArg(a, 1));
                 return in.builder().ApplyOp("expand_dims", {a[0]},
                                             {{"axis", axis}}, Site(a));
               }});
  b.push_back({"squeeze",
               {P("x"), P("axis", None())},
               [](Interpreter& in, Args& a) -> Result {
                 AttrMap attrs;
                 RN_RETURN_IF_ERROR(AxisAttr(in, a, 1, &attrs));
                 if (attrs.count("axis") &&
                     std::holds_alternative<int64_t>(attrs["axis"])) {
                   attrs["axis"] =
                       std::vector<int64_t>{std::get<int64_t>(attrs["axis"])};
                 }
                 return in.builder().ApplyOp("squeeze", {a[0]},
                                             std::move(attrs), Site(a));
               }});
  for (const char* op : {"concat", "stack"}) {
    b.push_back({op,
                 {P("xs"), P("axis", Value::Int(0))},
                 [op](Interpreter& in, Args& a) -> Result {
                   RN_ASSIGN_OR_RETURN(std::vector<Value> xs,
                                       TensorsArg(in, a, 0));
                   RN_ASSIGN_OR_RETURN(int64_t axis, IntArg(a, 1));
                   return in.builder().ApplyOp(op, std::move(xs),
                                               {{"axis", axis}}, Site(a));
                 }});
  }
  b.push_back({"unstack",
               {P("x"), P("axis", Value::Int(0))},
               [](Interpreter& in, Args& a) -> Result {
                 RN_ASSIGN_OR_RETURN(int64_t axis, IntArg(a, 1));
                 RN_ASSIGN_OR_RETURN(
                     std::vector<Value> out,
                     in.builder().ApplyOpN("unstack", {a[0]}, {{"axis", axis}},
                                           Site(a)));
                 return Value::Tuple(std::move(out));
               }});
  b.push_back({"split",
               {P("x"), P("n"), P("axis", Value::Int(0))},
               [](Interpreter& in, Args& a) -> Result {
                 RN_ASSIGN_OR_RETURN(int64_t n, IntArg(a, 1));
                 RN_ASSIGN_OR_RETURN(int64_t axis, IntArg(a, 2));
                 RN_ASSIGN_OR_RETURN(
                     std::vector<Value> out,
                     in.builder().ApplyOpN("split", {a[0]},
                                           {{"num", n}, {"axis", axis}},
                                           Site(a)));
                 return Value::Tuple(std::move(out));
               }});
  b.push_back(
      {"slice",
       {P("x"), P("begin"), P("size")},
       [](Interpreter& in, Args& a) -> Result {
         RN_ASSIGN_OR_RETURN(Value begin, ShapeArg(in, a, 1));
         RN_ASSIGN_OR_RETURN(Value size, ShapeArg(in, a, 2));
         return in.builder().ApplyOp("slice", {a[0], begin, size}, {}, Site(a));
       }});
  b.push_back({"gather",
               {P("x"), P("indices"), P("axis", Value::Int(0))},
               [](Interpreter& in, Args& a) -> Result {
                 RN_ASSIGN_OR_RETURN(int64_t axis, IntArg(a, 2));
                 return in.builder().ApplyOp("gather", {a[0], a[1]},
                                             {{"axis", axis}}, Site(a));
               }});
  b.push_back({"tile",
               {P("x"), P("multiples")},
               [](Interpreter& in, Args& a) -> Result {
                 RN_ASSIGN_OR_RETURN(Value m, ShapeArg(in, a, 1));
                 return in.builder().ApplyOp("tile", {a[0], m}, {}, Site(a));
               }});
  b.push_back({"pad",
               {P("x"), P("paddings"), P("value", Value::Int(0))},
               [](Interpreter& in, Args& a) -> Result {
                 // i64 when a padding needs it: never cut to 32 bits.
                 RN_ASSIGN_OR_RETURN(Value pv,
                                     in.builder().ToTensor(a[1], a.span_of(1),
                                                           "pad: 'paddings'"));
                 const DType pd = pv.is_concrete() &&
                                          pv.tensor().dtype() == DType::kI64 &&
                                          !FitsI32(pv.tensor())
                                      ? DType::kI64
                                      : DType::kI32;
                 RN_ASSIGN_OR_RETURN(
                     Tensor p, in.builder().ToConcrete(pv, pd, a.span_of(1),
                                                       "pad: 'paddings'"));
                 return in.builder().ApplyOp(
                     "pad", {a[0], Value::Concrete(p), a[2]}, {}, Site(a));
               }});
  b.push_back({"broadcast_to",
               {P("x"), P("shape")},
               [](Interpreter& in, Args& a) -> Result {
                 RN_ASSIGN_OR_RETURN(Value shape, ShapeArg(in, a, 1));
                 return in.builder().ApplyOp("broadcast_to", {a[0], shape}, {},
                                             Site(a));
               }});
  for (const char* op : {"shape_of", "size", "rank"}) b.push_back(FromOp(op));
}

namespace {

// Linear algebra and NN.
void AddSparse(std::vector<Builtin>& b);

}  // namespace

namespace {

// A convolution's strides, padding and dilations, the arguments from
// a[first] on.
absl::Status ConvArgs(Interpreter& in, const Args& a, int first,
                      AttrMap* attrs) {
  RN_RETURN_IF_ERROR(AxisAttr(in, a, first, attrs, "strides"));
  RN_ASSIGN_OR_RETURN(std::string padding, StringArg(a, first + 1));
  (*attrs)["padding"] = padding;
  return AxisAttr(in, a, first + 2, attrs, "dilations");
}

}  // namespace

void AddNN(std::vector<Builtin>& b) {
  b.push_back(FromOp("matmul"));
  // acc + a @ b in one pass over the sum (the sgemm adds the product in):
  // an LSTM step's projected input plus its recurrent product.
  b.push_back(FromOp("matmul_add"));
  // The ops call their input `logits`; the language calls it x.
  b.push_back(FromOp("masked_softmax"));
  b.push_back(FromOp("scaled_dot_product_attention"));
  // The fused recurrent cells under nn.lstm and nn.gru: (h, c_next), and
  // h_next.
  b.push_back(FromOp("lstm_cell"));
  b.push_back(FromOp("gru_cell"));
  // nn.lstm's whole f32 sequence: (hs, h, c, cs, gates); the bias `b`
  // and the `lengths` are its optional inputs, in that order (the op's
  // attribute `bias` says whether b is there).
  b.push_back({"lstm_sequence",
               {P("z"), P("h0"), P("c0"), P("w_h"), P("lengths", None()),
                P("b", None())},
               [](Interpreter& in, Args& a) -> Result {
                 std::vector<Value> inputs(a.values.begin(),
                                           a.values.begin() + 4);
                 const bool bias = !a[5].is_none();
                 if (bias) inputs.push_back(a[5]);
                 if (!a[4].is_none()) inputs.push_back(a[4]);
                 return in.builder().ApplyOp("lstm_sequence", std::move(inputs),
                                             {{"bias", bias}}, Site(a));
               }});
  for (const char* op : {"softmax", "log_softmax"}) {
    b.push_back(
        {op,
         {P("x"), P("axis", Value::Int(-1))},
         [op](Interpreter& in, Args& a) -> Result {
           RN_ASSIGN_OR_RETURN(int64_t axis, IntArg(a, 1));
           return in.builder().ApplyOp(op, {a[0]}, {{"axis", axis}}, Site(a));
         }});
  }
  for (const char* op :
       {"softmax_cross_entropy", "sparse_softmax_cross_entropy",
        "sigmoid_cross_entropy", "bias_add", "l2_loss"}) {
    b.push_back(FromOp(op));
  }
  for (const char* op : {"conv2d", "conv3d"}) {
    b.push_back(
        {op,
         {P("x"), P("filters"), P("strides", Value::Int(1)),
          P("padding", Value::String("same")), P("dilations", Value::Int(1))},
         [op](Interpreter& in, Args& a) -> Result {
           AttrMap attrs;
           RN_RETURN_IF_ERROR(ConvArgs(in, a, 2, &attrs));
           return in.builder().ApplyOp(op, {a[0], a[1]}, std::move(attrs),
                                       Site(a));
         }});
  }
  // conv2d_transpose: the gradient of a conv2d with respect to its input,
  // applied to x (TensorFlow's tf.nn.conv2d_transpose, PyTorch's
  // ConvTranspose2d): filters are [h, w, out_channels, in_channels], the
  // filters of the conv2d it reverses. output_shape is that conv2d's input
  // shape; without it, the one a conv2d with these strides maps to x's
  // size (x's height and width times the strides for "same").
  // conv3d_transpose is the same of conv3d (NDHWC, [d, h, w, out, in]).
  for (int spatial : {2, 3}) {
    const std::string name =
        spatial == 3 ? "conv3d_transpose" : "conv2d_transpose";
    const std::string backprop =
        spatial == 3 ? "conv3d_backprop_input" : "conv2d_backprop_input";
    b.push_back(
        {name,
         {P("x"), P("filters"), P("output_shape", None()),
          P("strides", Value::Int(1)), P("padding", Value::String("same")),
          P("dilations", Value::Int(1))},
         [name, backprop, spatial](Interpreter& in, Args& a) -> Result {
           AttrMap attrs;
           RN_RETURN_IF_ERROR(ConvArgs(in, a, 3, &attrs));
           std::optional<TensorSpec> xs = SpecOf(a[0]), fs = SpecOf(a[1]);
           if (!xs || !fs) {
             return absl::InvalidArgumentError(
                 StrCat(name, ": x and filters must be tensors"));
           }
           const int rank = spatial + 2;
           Value shape;
           if (!a[2].is_none()) {
             RN_ASSIGN_OR_RETURN(shape, SizesArg(in, a, 2));
           } else {
             const Shape& x = xs->shape;
             const Shape& f = fs->shape;
             bool known = !x.unknown_rank() && x.rank() == rank &&
                          !f.unknown_rank() && f.rank() == rank;
             for (int i = 0; known && i < spatial; ++i) {
               known = x.dim(1 + i) >= 0 && f.dim(i) >= 0;
             }
             if (!known || f.dim(spatial) < 0) {
               return absl::InvalidArgumentError(
                   StrCat(name, ": the output's size is not known from x ",
                          x.ToString(), " and filters ", f.ToString(),
                          "; give output_shape"));
             }
             // The attributes as the convolution's shape function reads
             // them.
             RN_ASSIGN_OR_RETURN(ConvAttrs conv, ReadConvAttrs(attrs, spatial));
             const int64_t st3[3] = {conv.strides.d, conv.strides.h,
                                     conv.strides.w};
             const int64_t dil3[3] = {conv.dilations.d, conv.dilations.h,
                                      conv.dilations.w};
             std::vector<int32_t> rest;
             for (int i = 0; i < spatial; ++i) {
               const int j = i + 3 - spatial;  // d, h, w
               const int64_t span = (f.dim(i) - 1) * dil3[j] + 1;
               rest.push_back(static_cast<int32_t>(
                   conv.same ? x.dim(1 + i) * st3[j]
                             : (x.dim(1 + i) - 1) * st3[j] + span));
             }
             rest.push_back(static_cast<int32_t>(f.dim(spatial)));
             // The batch from x, when the graph runs.
             RN_ASSIGN_OR_RETURN(
                 Value sx,
                 in.builder().ApplyOp("shape_of", {a[0]}, {}, Site(a)));
             RN_ASSIGN_OR_RETURN(
                 Value n,
                 in.builder().ApplyOp("strided_slice", {sx},
                                      {{"begin", std::vector<int64_t>{0}},
                                       {"end", std::vector<int64_t>{1}},
                                       {"strides", std::vector<int64_t>{1}}},
                                      Site(a)));
             RN_ASSIGN_OR_RETURN(
                 shape,
                 in.builder().ApplyOp(
                     "concat", {n, Value::Concrete(Tensor::FromVector(rest))},
                     {{"axis", int64_t{0}}}, Site(a)));
           }
           // The backprop op reads only its first input's shape.
           RN_ASSIGN_OR_RETURN(
               Value like,
               in.builder().ApplyOp(
                   "fill",
                   {shape, Value::Concrete(Tensor::ScalarOf(xs->dtype, 0))}, {},
                   Site(a)));
           return in.builder().ApplyOp(backprop, {like, a[1], a[0]},
                                       std::move(attrs), Site(a));
         }});
  }
  for (const char* op : {"max_pool", "avg_pool", "max_pool_with_argmax",
                         "max_pool3d", "avg_pool3d"}) {
    b.push_back({op,
                 {P("x"), P("size"), P("strides", None()),
                  P("padding", Value::String("valid")), P("dilations", None())},
                 [op](Interpreter& in, Args& a) -> Result {
                   AttrMap attrs;
                   RN_RETURN_IF_ERROR(AxisAttr(in, a, 1, &attrs, "size"));
                   RN_RETURN_IF_ERROR(AxisAttr(in, a, 2, &attrs, "strides"));
                   RN_RETURN_IF_ERROR(AxisAttr(in, a, 4, &attrs, "dilations"));
                   RN_ASSIGN_OR_RETURN(std::string padding, StringArg(a, 3));
                   attrs["padding"] = padding;
                   return in.builder().ApplyOp(op, {a[0]}, std::move(attrs),
                                               Site(a));
                 }});
  }
  b.push_back(
      {"dropout",
       {P("x"), P("rate"), P("training", Value::Bool(true)), P("seed", None())},
       [](Interpreter& in, Args& a) -> Result {
         AttrMap attrs;
         if (!a[3].is_none()) {
           RN_ASSIGN_OR_RETURN(int64_t seed, IntArg(a, 3));
           attrs["seed"] = seed;
         }
         // Output 1, the scale each element was multiplied by, is for the
         // gradient; the language's dropout is y alone.
         RN_ASSIGN_OR_RETURN(
             std::vector<Value> out,
             in.builder().ApplyOpN("dropout", {a[0], a[1], a[2]},
                                   std::move(attrs), Site(a)));
         return out[0];
       }});
  // The fused ops under nn.gelu, nn.layer_norm and nn.batch_norm, under
  // names of their
  // own: the standard library's functions of the ops' names would hide
  // builtins called the same inside nn.rnl.
  Builtin gelu = FromOp("gelu");
  gelu.name = "gelu_exact";
  b.push_back(std::move(gelu));
  // (y, mean, variance): the batch's statistics feed nn.batch_norm's moving
  // ones.
  Builtin batch_norm = FromOp("batch_norm");
  batch_norm.name = "batch_normalize";
  b.push_back(std::move(batch_norm));
  b.push_back({"layer_normalize",
               {P("x"), P("scale"), P("offset"), P("eps", Value::Float(1e-5))},
               [](Interpreter& in, Args& a) -> Result {
                 RN_ASSIGN_OR_RETURN(double eps, NumberArg(a, 3));
                 // Outputs 1 and 2, each row's mean and rstd, are for the
                 // gradient; the language's layer_normalize is y alone.
                 RN_ASSIGN_OR_RETURN(
                     std::vector<Value> out,
                     in.builder().ApplyOpN("layer_norm", {a[0], a[1], a[2]},
                                           {{"eps", eps}}, Site(a)));
                 return out[0];
               }});
  b.push_back({"embedding_lookup",
               {P("params"), P("ids")},
               [](Interpreter& in, Args& a) -> Result {
                 return in.builder().ApplyOp("gather", {a[0], a[1]},
                                             {{"axis", int64_t{0}}}, Site(a));
               }});
  b.push_back(FromOp("resize"));  // framework/ops/image_ops.cc
  b.push_back({"non_max_suppression",
               {P("boxes"), P("scores"), P("max_per_class"),
                P("iou_threshold", Value::Float(0.5)),
                P("score_threshold", Value::Float(-INFINITY)),
                P("center_point_box", Value::Bool(false))},
               [](Interpreter& in, Args& a) -> Result {
                 RN_ASSIGN_OR_RETURN(bool center, BoolArg(a, 5));
                 return in.builder().ApplyOp(
                     "non_max_suppression", {a[0], a[1], a[2], a[3], a[4]},
                     {{"center_point_box", center}}, Site(a));
               }});
  // The index ops (framework/ops/index_ops.cc).
  for (const char* op : {"gather_elements", "scatter_elements", "gather_nd",
                         "scatter_nd", "top_k", "nonzero", "unique_all"}) {
    b.push_back(FromOp(op));
  }
  AddSparse(b);
}

namespace {

// Sparse gradients and sharded lookups (framework/ops/sparse_ops.cc).
void AddSparse(std::vector<Builtin>& b) {
  b.push_back({"unique", {P("x")}, [](Interpreter& in, Args& a) -> Result {
                 RN_ASSIGN_OR_RETURN(
                     std::vector<Value> out,
                     in.builder().ApplyOpN("unique", {a[0]}, {}, Site(a)));
                 return Value::Tuple(std::move(out));
               }});
  b.push_back({"unsorted_segment_sum",
               {P("data"), P("segment_ids"), P("num_segments")},
               [](Interpreter& in, Args& a) -> Result {
                 return in.builder().ApplyOp("unsorted_segment_sum",
                                             {a[0], a[1], a[2]}, {}, Site(a));
               }});
  b.push_back({"dynamic_partition",
               {P("x"), P("partitions"), P("n")},
               [](Interpreter& in, Args& a) -> Result {
                 RN_ASSIGN_OR_RETURN(int64_t n, IntArg(a, 2));
                 RN_ASSIGN_OR_RETURN(
                     std::vector<Value> out,
                     in.builder().ApplyOpN("dynamic_partition", {a[0], a[1]},
                                           {{"num_partitions", n}}, Site(a)));
                 return Value::List(std::move(out));
               }});
  b.push_back(
      {"dynamic_stitch",
       {P("indices"), P("values")},
       [](Interpreter& in, Args& a) -> Result {
         RN_ASSIGN_OR_RETURN(std::vector<Value> indices, TensorsArg(in, a, 0));
         RN_ASSIGN_OR_RETURN(std::vector<Value> values, TensorsArg(in, a, 1));
         if (indices.size() != values.size()) {
           return ErrorAt(a.span, StrCat("dynamic_stitch: ", indices.size(),
                                         " index tensors but ", values.size(),
                                         " value tensors"));
         }
         // The op takes the values first (they choose its kernel).
         values.insert(values.end(), indices.begin(), indices.end());
         return in.builder().ApplyOp("dynamic_stitch", std::move(values), {},
                                     Site(a));
       }});
}

}  // namespace

// State.
void AddState(std::vector<Builtin>& b) {
  for (const char* op : {"assign", "assign_add", "assign_sub"}) {
    b.push_back(
        {op, {P("var"), P("value")}, [op](Interpreter& in, Args& a) -> Result {
           return AssignFn(op, in, a);
         }});
  }
  b.push_back(ApplyBuiltin("apply_sgd", {P("var"), P("lr"), P("grad")}, 1));
  b.push_back(ApplyBuiltin("apply_momentum",
                           {P("var"), P("buf"), P("lr"), P("grad"),
                            P("momentum"), P("nesterov", Value::Bool(false))},
                           2, {"nesterov"}));
  b.push_back(
      ApplyBuiltin("apply_adam",
                   {P("var"), P("m"), P("v"), P("lr"), P("grad"), P("beta1"),
                    P("one_minus_beta1"), P("beta2"), P("one_minus_beta2"),
                    P("eps"), P("correction1"), P("correction2")},
                   3));
  b.push_back(
      ApplyBuiltin("sparse_apply_momentum",
                   {P("var"), P("buf"), P("lr"), P("grad"), P("indices"),
                    P("momentum"), P("nesterov", Value::Bool(false))},
                   2, {"nesterov"}));
  b.push_back(ApplyBuiltin(
      "sparse_apply_adam",
      {P("var"), P("m"), P("v"), P("lr"), P("grad"), P("indices"), P("beta1"),
       P("one_minus_beta1"), P("beta2"), P("one_minus_beta2"), P("eps"),
       P("correction1"), P("correction2")},
      3));
  // Synchronous replicas (stdlib/optim.rnl, docs/cluster.md).
  b.push_back({"sync_accumulate",
               {P("var"), P("grad"), P("step"), P("replicas")},
               [](Interpreter& in, Args& a) -> Result {
                 RN_ASSIGN_OR_RETURN(int64_t replicas, IntArg(a, 3));
                 return in.builder().ApplyOp("sync_accumulate",
                                             {a[0], a[1], a[2]},
                                             {{"replicas", replicas}}, Site(a));
               }});
  b.push_back(
      {"sync_take",
       {P("var"), P("step")},
       [](Interpreter& in, Args& a) -> Result {
         return in.builder().ApplyOp("sync_take", {a[0], a[1]}, {}, Site(a));
       }});
  b.push_back({"sync_barrier",
               {P("step_var"), P("step"), P("replicas")},
               [](Interpreter& in, Args& a) -> Result {
                 RN_ASSIGN_OR_RETURN(int64_t replicas, IntArg(a, 2));
                 return in.builder().ApplyOp("sync_barrier", {a[0], a[1]},
                                             {{"replicas", replicas}}, Site(a));
               }});
  b.push_back(
      {"sync_advance",
       {P("step_var"), P("step")},
       [](Interpreter& in, Args& a) -> Result {
         return in.builder().ApplyOp("sync_advance", {a[0], a[1]}, {}, Site(a));
       }});
  // All-reduce between workers (the optimizers' reduce = "all").
  b.push_back(FromOp("all_reduce"));
  for (const char* op : {"scatter_add", "scatter_sub", "scatter_update"}) {
    b.push_back(
        {op,
         {P("var"), P("indices"), P("updates")},
         [op](Interpreter& in, Args& a) -> Result {
           return in.builder().ApplyOp(op, {a[0], a[1], a[2]}, {}, Site(a));
         }});
  }
}

}  // namespace runnel::interp
