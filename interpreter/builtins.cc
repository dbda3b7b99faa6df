// The builtin table (docs/language.md §6). Op-backed builtins translate the
// language's arguments into an op's inputs and attributes and go through
// GraphBuilder::ApplyOp, so they follow the concrete/symbolic rule; host
// builtins (print, fmt, data files, ...) work on concrete values.
#include "interpreter/builtins.h"

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
#include "interpreter/control_flow.h"
#include "interpreter/data.h"
#include "interpreter/diag.h"
#include "interpreter/interpreter.h"
#include "io/csv_reader.h"
#include "io/idx_reader.h"
#include "io/npy.h"

namespace runnel::interp {

using Args = CallArgs;
using Result = absl::StatusOr<Value>;

// ---- argument helpers (builtins.h)
// --------------------------------------------------------

OpSite Site(const Args& a, bool named) {
  return OpSite{a.span, 0, named ? a.hint : ""};
}

std::string ParamName(const Args& a, int i) {
  return StrCat(a.builtin->name, ": '", a.builtin->params[i].name, "'");
}

absl::StatusOr<int64_t> IntArg(const Args& a, int i) {
  const Value& v = a[i];
  std::optional<int64_t> n = v.AsInt();
  if (!n || v.tensor().rank() != 0) {
    return ErrorAt(
        a.span_of(i),
        StrCat(ParamName(a, i), " must be an integer, got ", DescribeValue(v)));
  }
  return *n;
}

absl::StatusOr<double> NumberArg(const Args& a, int i) {
  const Value& v = a[i];
  std::optional<double> d = v.AsDouble();
  if (!d || v.tensor().rank() != 0 || v.tensor().dtype() == DType::kBool) {
    return ErrorAt(
        a.span_of(i),
        StrCat(ParamName(a, i), " must be a number, got ", DescribeValue(v)));
  }
  return *d;
}

absl::StatusOr<bool> BoolArg(const Args& a, int i) {
  const Value& v = a[i];
  if (!v.is_concrete() || v.tensor().dtype() != DType::kBool ||
      v.tensor().num_elements() != 1) {
    return ErrorAt(a.span_of(i),
                   StrCat(ParamName(a, i), " must be true or false, got ",
                          DescribeValue(v)));
  }
  return v.tensor().data<bool>()[0];
}

absl::StatusOr<std::string> StringArg(const Args& a, int i) {
  if (a[i].kind() != ValueKind::kString) {
    return ErrorAt(a.span_of(i),
                   StrCat(ParamName(a, i), " must be a string, got ",
                          DescribeValue(a[i])));
  }
  return a[i].str();
}

absl::StatusOr<DType> DTypeArg(const Args& a, int i) {
  if (a[i].kind() != ValueKind::kDType) {
    return ErrorAt(a.span_of(i),
                   StrCat(ParamName(a, i), " must be a dtype such as f32, got ",
                          DescribeValue(a[i])));
  }
  return a[i].dtype_value();
}

absl::Status CheckFile(const Args& a, const absl::Status& s) {
  if (s.ok()) return s;
  return ErrorAt(a.span, StrCat(a.builtin->name, ": ", ToStd(s.message())));
}

namespace {

// An int or a list/tuple/vector of ints.
absl::StatusOr<std::vector<int64_t>> IntsArg(Interpreter& in, const Args& a,
                                             int i) {
  const Value& v = a[i];
  if (v.is_concrete() && v.tensor().rank() == 0) {
    RN_ASSIGN_OR_RETURN(int64_t n, IntArg(a, i));
    return std::vector<int64_t>{n};
  }
  if (v.is_symbolic()) {
    return ErrorAt(a.span_of(i),
                   StrCat(ParamName(a, i), " must be concrete integers"));
  }
  RN_ASSIGN_OR_RETURN(
      Tensor t,
      in.builder().ToConcrete(v, DType::kI64, a.span_of(i), ParamName(a, i)));
  if (t.rank() > 1) {
    return ErrorAt(a.span_of(i),
                   StrCat(ParamName(a, i), " must be a list of integers"));
  }
  std::vector<int64_t> out(t.data<int64_t>(),
                           t.data<int64_t>() + t.num_elements());
  return out;
}

// Sets attribute `attr` from an int or int list argument, unless it is none.
absl::Status AxisAttr(Interpreter& in, const Args& a, int i, AttrMap* attrs,
                      const std::string& attr = "axis") {
  if (a[i].is_none()) return absl::OkStatus();
  if (a[i].is_concrete() && a[i].tensor().rank() == 0) {
    RN_ASSIGN_OR_RETURN(int64_t n, IntArg(a, i));
    (*attrs)[attr] = n;
    return absl::OkStatus();
  }
  RN_ASSIGN_OR_RETURN(std::vector<int64_t> v, IntsArg(in, a, i));
  (*attrs)[attr] = v;
  return absl::OkStatus();
}

// A shape argument: an int, a list of ints, or an integer vector tensor
// (symbolic too, e.g. shape_of(x)); gives an i32 vector value.
bool FitsI32(const Tensor& t) {
  for (int64_t d : t.ToInt64s()) {
    if (d < INT32_MIN || d > INT32_MAX) return false;
  }
  return true;
}

Result ShapeArg(Interpreter& in, const Args& a, int i) {
  const Value& v = a[i];
  if (v.is_symbolic()) {
    if (v.tensor_dtype() == DType::kI32 || v.tensor_dtype() == DType::kI64) {
      return v;
    }
    return in.builder().ApplyOp("cast", {v}, {{"dtype", DType::kI32}},
                                OpSite{a.span_of(i)});
  }
  if (v.is_sequence() && v.items().empty()) {
    return Value::Concrete(Tensor(DType::kI32, Shape{0}));
  }
  // i32, unless a dimension needs i64: sizes are never cut to 32 bits.
  RN_ASSIGN_OR_RETURN(Value tv,
                      in.builder().ToTensor(v, a.span_of(i), ParamName(a, i)));
  const DType dtype = tv.is_concrete() && tv.tensor().dtype() == DType::kI64 &&
                              !FitsI32(tv.tensor())
                          ? DType::kI64
                          : DType::kI32;
  RN_ASSIGN_OR_RETURN(Tensor t, in.builder().ToConcrete(tv, dtype, a.span_of(i),
                                                        ParamName(a, i)));
  if (t.rank() == 0) {
    RN_ASSIGN_OR_RETURN(t, t.Reshaped(Shape{1}));
  }
  if (t.rank() != 1) {
    return ErrorAt(a.span_of(i),
                   StrCat(ParamName(a, i), " must be a list of dimensions"));
  }
  return Value::Concrete(t);
}

// The shape of a tensor to make (zeros, fill, random_*): as ShapeArg, and
// every dimension known. `zeros([x.shape[0], 3])` for an x with a `?`:
// .shape gives -1 there, a size known only when the graph runs.
Result SizesArg(Interpreter& in, const Args& a, int i) {
  RN_ASSIGN_OR_RETURN(Value shape, ShapeArg(in, a, i));
  if (!shape.is_concrete()) return shape;
  const std::vector<int64_t> dims = shape.tensor().ToInt64s();
  if (std::any_of(dims.begin(), dims.end(), [](int64_t d) { return d < 0; })) {
    return ErrorAt(
        a.span_of(i),
        StrCat(ParamName(a, i), " ", Shape(dims).ToString(),
               " has an unknown (-1) dimension, as .shape gives for a `?`; "
               "for the size when the graph runs use shape_of(x), e.g. "
               "concat([shape_of(x)[0:1], [3]], 0)"));
  }
  return shape;
}

// A list or tuple of tensors (concat, stack). A bracketed list of concrete
// tensors of one shape was stacked into one tensor: its rows are the items.
absl::StatusOr<std::vector<Value>> TensorsArg(Interpreter& in, const Args& a,
                                              int i) {
  const Value& v = a[i];
  if (v.is_sequence()) return v.items();
  if (v.is_concrete() && v.tensor().rank() > 0) {
    std::vector<Value> rows;
    RN_ASSIGN_OR_RETURN(std::unique_ptr<Iterator> it, Iterate(v, a.span_of(i)));
    while (true) {
      RN_ASSIGN_OR_RETURN(std::optional<Value> row, it->Next());
      if (!row) break;
      rows.push_back(std::move(*row));
    }
    return rows;
  }
  if (v.is_tensor()) {
    return ErrorAt(
        a.span_of(i),
        StrCat(ParamName(a, i), " must be a list of tensors such as [a, b]"));
  }
  return ErrorAt(a.span_of(i),
                 StrCat(ParamName(a, i), " must be a list of tensors, got ",
                        DescribeValue(v)));
}

// ---- builtin definitions
// ----------------------------------------------------------

BuiltinParam P(std::string name) { return BuiltinParam(std::move(name)); }
BuiltinParam P(std::string name, Value def) {
  return BuiltinParam(std::move(name), std::move(def));
}
Value None() { return Value(); }

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

// Host values for fmt: numbers stay numbers so "{:.3f}" works; f32 values
// stay floats so "{}" prints 0.1, not 0.10000000149011612. With
// `ints_as_floats` integers become doubles too ("{:.2f}" of a step count).
absl::Status PushFormatArg(
    fmt::dynamic_format_arg_store<fmt::format_context>* store, const Value& v,
    const char* name, bool ints_as_floats) {
  auto push = [&](auto x) {
    if (name != nullptr) {
      store->push_back(fmt::arg(name, x));
    } else {
      store->push_back(x);
    }
  };
  if (v.is_concrete() && v.tensor().num_elements() == 1 &&
      v.tensor().rank() == 0) {
    const DType d = v.tensor().dtype();
    if (d == DType::kBool) {
      push(v.tensor().data<bool>()[0]);
    } else if (IsInteger(d) && !ints_as_floats) {
      push(*v.AsInt());
    } else if (d == DType::kF64 || IsInteger(d)) {
      push(*v.AsDouble());
    } else {
      push(static_cast<float>(*v.AsDouble()));
    }
  } else if (v.kind() == ValueKind::kString) {
    push(v.str());
  } else {
    push(FormatValue(v));
  }
  return absl::OkStatus();
}

// ---- datasets and progress bars
// -------------------------------------------------

class BatchIterator : public Iterator {
 public:
  BatchIterator(std::shared_ptr<const Dataset> d, std::vector<int64_t> order,
                int64_t size, bool drop_last)
      : d_(std::move(d)),
        order_(std::move(order)),
        size_(size),
        drop_last_(drop_last) {}
  absl::StatusOr<std::optional<Value>> Next() override {
    const int64_t n = static_cast<int64_t>(order_.size());
    if (pos_ >= n || (drop_last_ && pos_ + size_ > n)) {
      return std::optional<Value>();
    }
    const int64_t end = std::min(n, pos_ + size_);
    std::vector<int64_t> rows(order_.begin() + pos_, order_.begin() + end);
    pos_ = end;
    std::vector<Field> fields;
    for (const auto& [name, t] : d_->columns) {
      fields.emplace_back(name, Value::Concrete(GatherRows(t, rows)));
    }
    return std::optional<Value>(Value::Record(std::move(fields)));
  }

 private:
  std::shared_ptr<const Dataset> d_;
  std::vector<int64_t> order_;
  int64_t size_;
  bool drop_last_;
  int64_t pos_ = 0;
};

class BatchesIterable : public Iterable {
 public:
  BatchesIterable(std::shared_ptr<const Dataset> d, int64_t size, bool shuffle,
                  uint64_t seed, bool drop_last)
      : d_(std::move(d)),
        size_(size),
        shuffle_(shuffle),
        seed_(seed),
        drop_last_(drop_last) {}
  absl::StatusOr<std::unique_ptr<Iterator>> Begin() override {
    return std::unique_ptr<Iterator>(new BatchIterator(
        d_, RowOrder(d_->rows, shuffle_, seed_), size_, drop_last_));
  }
  int64_t Size() const override {
    return drop_last_ ? d_->rows / size_ : (d_->rows + size_ - 1) / size_;
  }
  std::string Describe() const override {
    return StrCat("batches of ", size_, " from ", d_->rows, " rows");
  }

 private:
  std::shared_ptr<const Dataset> d_;
  int64_t size_;
  bool shuffle_;
  uint64_t seed_;
  bool drop_last_;
};

class ProgressIterator : public Iterator {
 public:
  ProgressIterator(Reporter* r, std::unique_ptr<Iterator> inner,
                   std::string label, int64_t total)
      : r_(r), inner_(std::move(inner)) {
    r_->Begin(std::move(label), total);
  }
  ~ProgressIterator() override {
    if (!ended_) r_->End();
  }
  absl::StatusOr<std::optional<Value>> Next() override {
    if (started_) r_->Step();
    started_ = true;
    absl::StatusOr<std::optional<Value>> v = inner_->Next();
    if (!v.ok() || !v->has_value()) {
      if (!ended_) r_->End();
      ended_ = true;
    }
    return v;
  }

 private:
  Reporter* r_;
  std::unique_ptr<Iterator> inner_;
  bool started_ = false, ended_ = false;
};

class ProgressIterable : public Iterable {
 public:
  ProgressIterable(Interpreter* in, Value inner, std::string label,
                   SourceSpan span)
      : in_(in),
        inner_(std::move(inner)),
        label_(std::move(label)),
        span_(std::move(span)) {}
  absl::StatusOr<std::unique_ptr<Iterator>> Begin() override {
    RN_ASSIGN_OR_RETURN(std::unique_ptr<Iterator> it, Iterate(inner_, span_));
    return std::unique_ptr<Iterator>(
        new ProgressIterator(&in_->reporter(), std::move(it), label_, Size()));
  }
  int64_t Size() const override { return IterationCount(inner_); }
  std::string Describe() const override {
    return StrCat("progress \"", label_, "\"");
  }

 private:
  Interpreter* in_;
  Value inner_;
  std::string label_;
  SourceSpan span_;
};

// ---- host builtins
// -----------------------------------------------------------------

Result Print(Interpreter& in, Args& a) {
  if (in.check_mode()) return Value();
  std::string line;
  for (size_t i = 0; i < a.rest.size(); ++i) {
    if (i) line += " ";
    line += FormatValue(a.rest[i]);
  }
  line += "\n";
  std::fputs(line.c_str(), in.options().out);
  std::fflush(in.options().out);
  return Value();
}

Result Fmt(Interpreter& in, Args& a) {
  RN_ASSIGN_OR_RETURN(std::string format, StringArg(a, 0));
  std::string first_error;
  // An integer under a float spec ("{:.3f}") is formatted as a float, as
  // Python does: retry with integers as doubles before reporting.
  for (bool ints_as_floats : {false, true}) {
    fmt::dynamic_format_arg_store<fmt::format_context> store;
    for (const Value& v : a.rest) {
      RN_RETURN_IF_ERROR(PushFormatArg(&store, v, nullptr, ints_as_floats));
    }
    for (const Field& f : a.named) {
      RN_RETURN_IF_ERROR(
          PushFormatArg(&store, f.second, f.first.c_str(), ints_as_floats));
    }
    try {
      return Value::String(fmt::vformat(format, store));
    } catch (const fmt::format_error& e) {
      if (first_error.empty()) first_error = e.what();
    }
  }
  return ErrorAt(a.span, StrCat("fmt: ", first_error, " in \"", format, "\""));
}

Result Assert(Interpreter& in, Args& a) {
  if (in.check_mode()) return Value();
  const Value& c = a[0];
  if (c.is_symbolic()) {
    return ErrorAt(a.span_of(0),
                   "assert needs a concrete condition; this one is symbolic "
                   "(compute it with run first)");
  }
  if (!c.is_concrete()) {
    return ErrorAt(a.span_of(0), StrCat("assert needs a bool tensor, got ",
                                        DescribeValue(c)));
  }
  bool ok = true;
  for (double d : c.tensor().ToDoubles()) {
    if (d == 0 || std::isnan(d)) ok = false;
  }
  if (ok) return Value();
  std::string msg = "assertion failed";
  if (a[1].kind() == ValueKind::kString && !a[1].str().empty()) {
    msg += ": " + a[1].str();
  } else if (!a[1].is_none() && a[1].kind() != ValueKind::kString) {
    msg += ": " + FormatValue(a[1]);
  }
  return ErrorAt(a.span, msg);
}

Result Allclose(Interpreter& in, Args& a) {
  RN_ASSIGN_OR_RETURN(double rtol, NumberArg(a, 2));
  RN_ASSIGN_OR_RETURN(double atol, NumberArg(a, 3));
  for (int i : {0, 1}) {
    RN_ASSIGN_OR_RETURN(
        Value v, in.builder().ToTensor(a[i], a.span_of(i), ParamName(a, i)));
    if (v.is_symbolic()) {
      return ErrorAt(a.span_of(i),
                     "allclose needs concrete values; this one is symbolic "
                     "(compute it with run first)");
    }
  }
  RN_ASSIGN_OR_RETURN(Tensor x,
                      in.builder().ToConcrete(a[0], DType::kF64, a.span_of(0),
                                              ParamName(a, 0)));
  RN_ASSIGN_OR_RETURN(Tensor y,
                      in.builder().ToConcrete(a[1], DType::kF64, a.span_of(1),
                                              ParamName(a, 1)));
  OpSite site{a.span};
  Value vx = Value::Concrete(x), vy = Value::Concrete(y);
  RN_ASSIGN_OR_RETURN(Value diff,
                      in.builder().ApplyOp("sub", {vx, vy}, {}, site));
  RN_ASSIGN_OR_RETURN(diff, in.builder().ApplyOp("abs", {diff}, {}, site));
  RN_ASSIGN_OR_RETURN(Value tol, in.builder().ApplyOp("abs", {vy}, {}, site));
  RN_ASSIGN_OR_RETURN(
      tol, in.builder().ApplyOp(
               "mul", {tol, Value::Concrete(Tensor::Scalar<double>(rtol))}, {},
               site));
  RN_ASSIGN_OR_RETURN(
      tol, in.builder().ApplyOp(
               "add", {tol, Value::Concrete(Tensor::Scalar<double>(atol))}, {},
               site));
  RN_ASSIGN_OR_RETURN(
      Value ok, in.builder().ApplyOp("less_equal", {diff, tol}, {}, site));
  RN_ASSIGN_OR_RETURN(ok, in.builder().ApplyOp("all", {ok}, {}, site));
  return ok;
}

Result Len(Interpreter& in, Args& a) {
  const Value& v = a[0];
  int64_t n = -1;
  switch (v.kind()) {
    case ValueKind::kString:
      n = static_cast<int64_t>(v.str().size());
      break;
    case ValueKind::kSymbolic:
    case ValueKind::kTensor: {
      Shape s = v.tensor_shape();
      if (!s.unknown_rank() && s.rank() > 0) n = s.dim(0);
      if (s.rank() == 0 && !s.unknown_rank()) {
        return ErrorAt(a.span_of(0), "len() of a scalar");
      }
      break;
    }
    default:
      n = IterationCount(v);
  }
  if (n < 0) {
    return ErrorAt(a.span_of(0),
                   StrCat("len() is not known for ", DescribeValue(v)));
  }
  return Value::Int(n);
}

Result ToFloat(Interpreter& in, Args& a) {
  const Value& v = a[0];
  if (v.kind() == ValueKind::kString) {
    char* end = nullptr;
    double d = std::strtod(v.str().c_str(), &end);
    if (v.str().empty() || *end != '\0') {
      return ErrorAt(a.span_of(0),
                     StrCat("float(): \"", v.str(), "\" is not a number"));
    }
    return Value::Float(d);
  }
  std::optional<double> d = v.AsDouble();
  if (!d) {
    return ErrorAt(a.span_of(0), StrCat("float() needs a concrete scalar, got ",
                                        DescribeValue(v)));
  }
  return Value::Float(*d);
}

Result ToInt(Interpreter& in, Args& a) {
  const Value& v = a[0];
  double d;
  if (v.kind() == ValueKind::kString) {
    char* end = nullptr;
    long long i = std::strtoll(v.str().c_str(), &end, 10);
    if (v.str().empty() || *end != '\0') {
      return ErrorAt(a.span_of(0),
                     StrCat("int(): \"", v.str(), "\" is not an integer"));
    }
    d = static_cast<double>(i);
    if (i > INT32_MAX || i < INT32_MIN) {
      return Value::Concrete(Tensor::Scalar<int64_t>(i), true);
    }
    return Value::Int(i);
  }
  std::optional<double> x = v.AsDouble();
  if (!x || !std::isfinite(*x)) {
    return ErrorAt(a.span_of(0), StrCat("int() needs a finite concrete "
                                        "scalar, got ",
                                        DescribeValue(v)));
  }
  d = std::trunc(*x);
  if (d > INT32_MAX || d < INT32_MIN) {
    return Value::Concrete(Tensor::Scalar<int64_t>(static_cast<int64_t>(d)),
                           true);
  }
  return Value::Int(static_cast<int64_t>(d));
}

// sleep(seconds): waits on the host (benchmarks make stragglers with it);
// `runnel check` does not wait.
Result Sleep(Interpreter& in, Args& a) {
  RN_ASSIGN_OR_RETURN(double seconds, NumberArg(a, 0));
  if (!(seconds >= 0) || seconds > 86400) {
    return ErrorAt(a.span_of(0),
                   StrCat("sleep needs 0 to 86400 seconds, got ", seconds));
  }
  if (!in.check_mode()) {
    std::this_thread::sleep_for(std::chrono::duration<double>(seconds));
  }
  return None();
}

Result Exit(Interpreter& in, Args& a) {
  RN_ASSIGN_OR_RETURN(int64_t code, IntArg(a, 0));
  if (code < 0 || code > 255) {
    return ErrorAt(a.span_of(0),
                   StrCat("exit code must be in 0..255, got ", code));
  }
  return ExitRequest(in.check_mode() ? 0 : static_cast<int>(code));
}

// task(): this process's place in its cluster (docs/cluster.md).
Result Task(Interpreter& in, Args& a) {
  const Options& o = in.options();
  return Value::Record({{"job", Value::String(o.task_job)},
                        {"index", Value::Int(o.task_index)},
                        {"workers", Value::Int(o.task_workers)},
                        {"chief", Value::Bool(o.task_chief)}});
}

Result Arg(Interpreter& in, Args& a) {
  RN_ASSIGN_OR_RETURN(std::string name, StringArg(a, 0));
  const std::string* text = in.FindArg(name);
  const Value& def = a[1];
  if (text == nullptr) return def;
  auto bad = [&](const char* what) {
    return ErrorAt(a.span, StrCat("--arg ", name, "=", *text, ": expected ",
                                  what, " (like the default)"));
  };
  if (def.kind() == ValueKind::kString || def.is_none()) {
    return Value::String(*text);
  }
  if (def.is_concrete() && def.tensor().rank() == 0) {
    const DType d = def.tensor().dtype();
    char* end = nullptr;
    if (d == DType::kBool) {
      if (*text == "true" || *text == "1") return Value::Bool(true);
      if (*text == "false" || *text == "0") return Value::Bool(false);
      return bad("true or false");
    }
    if (IsInteger(d)) {
      long long v = std::strtoll(text->c_str(), &end, 10);
      if (text->empty() || *end != '\0') return bad("an integer");
      if (d == DType::kI32 && (v > INT32_MAX || v < INT32_MIN)) {
        return bad("an i32 integer");
      }
      RN_ASSIGN_OR_RETURN(Tensor t,
                          in.builder().Cast(Tensor::Scalar<int64_t>(v), d));
      return Value::Concrete(t, def.literal());
    }
    double v = std::strtod(text->c_str(), &end);
    if (text->empty() || *end != '\0') return bad("a number");
    RN_ASSIGN_OR_RETURN(Tensor t,
                        in.builder().Cast(Tensor::Scalar<double>(v), d));
    return Value::Concrete(t, def.literal());
  }
  return ErrorAt(a.span_of(1),
                 StrCat("arg(): the default must be a number, bool or string, "
                        "got ",
                        DescribeValue(def)));
}

Result Progress(Interpreter& in, Args& a) {
  std::string label;
  if (!a[1].is_none()) {
    RN_ASSIGN_OR_RETURN(label, StringArg(a, 1));
  }
  const Value& v = a[0];
  switch (v.kind()) {
    case ValueKind::kRange:
    case ValueKind::kTuple:
    case ValueKind::kList:
    case ValueKind::kTensor:
    case ValueKind::kDataset:
    case ValueKind::kIterable:
      break;
    default:
      return ErrorAt(a.span_of(0), StrCat("progress() needs something to "
                                          "iterate over, got ",
                                          DescribeValue(v)));
  }
  return Value::OfIterable(
      std::make_shared<ProgressIterable>(&in, v, label, a.span_of(0)));
}

Result Report(Interpreter& in, Args& a) {
  std::vector<std::pair<std::string, std::string>> json, shown;
  for (size_t i = 0; i < a.named.size(); ++i) {
    const auto& [name, v] = a.named[i];
    if (v.is_symbolic()) {
      return ErrorAt(
          a.named_spans[i],
          StrCat("report: '", name, "' is symbolic; fetch its value with run"));
    }
    if (v.is_concrete() && v.tensor().num_elements() == 1) {
      double d = *v.AsDouble();
      if (v.tensor().dtype() == DType::kBool) {
        json.emplace_back(name, d != 0 ? "true" : "false");
        shown.emplace_back(name, d != 0 ? "true" : "false");
      } else {
        const bool narrow =
            IsFloating(v.tensor().dtype()) && v.tensor().dtype() != DType::kF64;
        json.emplace_back(name, !std::isfinite(d) ? std::string("null")
                                : narrow
                                    ? fmt::format("{}", static_cast<float>(d))
                                    : fmt::format("{}", d));
        shown.emplace_back(name, IsInteger(v.tensor().dtype())
                                     ? fmt::format("{}", *v.AsInt())
                                     : fmt::format("{:.4g}", d));
      }
    } else {
      std::string s = FormatValue(v);
      json.emplace_back(name, JsonString(s));
      shown.emplace_back(name, s);
    }
  }
  if (!a.rest.empty()) {
    return ErrorAt(a.rest_spans[0],
                   "report takes named values: report(loss = l)");
  }
  if (!in.check_mode()) {
    // Each GPU's memory (common_runtime/trace.h); nothing without a GPU.
    MemoryReport memory = ReportMemory(DeviceMemoryOf(in.session().devices()));
    json.insert(json.end(), memory.json.begin(), memory.json.end());
    shown.insert(shown.end(), memory.shown.begin(), memory.shown.end());
  }
  RN_RETURN_IF_ERROR(in.reporter().Report(json, shown));
  return Value();
}

// ---- data builtins
// ---------------------------------------------------------------

Result LoadIdx(Interpreter& in, Args& a) {
  RN_ASSIGN_OR_RETURN(std::string path, StringArg(a, 0));
  absl::StatusOr<Tensor> t = ReadIdx(path);
  RN_RETURN_IF_ERROR(CheckFile(a, t.status()));
  return Value::Concrete(*t);
}

Result LoadNpy(Interpreter& in, Args& a) {
  RN_ASSIGN_OR_RETURN(std::string path, StringArg(a, 0));
  absl::StatusOr<Tensor> t = ReadNpy(path);
  RN_RETURN_IF_ERROR(CheckFile(a, t.status()));
  return Value::Concrete(*t);
}

// The bytes of a file as a u8 vector (text for character models).
Result LoadText(Interpreter& in, Args& a) {
  RN_ASSIGN_OR_RETURN(std::string path, StringArg(a, 0));
  absl::StatusOr<std::string> text = ReadFileToString(path);
  RN_RETURN_IF_ERROR(CheckFile(a, text.status()));
  Tensor t(DType::kU8, Shape{static_cast<int64_t>(text->size())});
  if (!text->empty()) std::memcpy(t.raw_data(), text->data(), text->size());
  return Value::Concrete(t);
}

Result SaveNpy(Interpreter& in, Args& a) {
  RN_ASSIGN_OR_RETURN(std::string path, StringArg(a, 0));
  RN_ASSIGN_OR_RETURN(
      Value v, in.builder().ToTensor(a[1], a.span_of(1), "save_npy: 'x'"));
  if (v.is_symbolic()) {
    return ErrorAt(a.span_of(1),
                   "save_npy needs a concrete tensor; this one is symbolic "
                   "(compute it with run first)");
  }
  if (in.check_mode()) return Value();
  RN_RETURN_IF_ERROR(CheckFile(a, WriteNpy(path, v.tensor())));
  return Value();
}

absl::StatusOr<std::shared_ptr<Dataset>> MakeDataset(
    Interpreter& in, const std::vector<Field>& columns,
    const std::vector<SourceSpan>& spans, const SourceSpan& span) {
  if (columns.empty()) {
    return ErrorAt(span,
                   "a dataset needs at least one column: dataset(x = "
                   "..., y = ...)");
  }
  auto d = std::make_shared<Dataset>();
  for (size_t i = 0; i < columns.size(); ++i) {
    const auto& [name, v] = columns[i];
    const SourceSpan& s = i < spans.size() ? spans[i] : span;
    RN_ASSIGN_OR_RETURN(
        Value t, in.builder().ToTensor(v, s, StrCat("column '", name, "'")));
    if (t.is_symbolic()) {
      return ErrorAt(s,
                     StrCat("column '", name, "' must be concrete data, got ",
                            DescribeValue(t)));
    }
    if (t.tensor().rank() == 0) {
      return ErrorAt(s, StrCat("column '", name,
                               "' must have a first dimension (rows), got a "
                               "scalar"));
    }
    const int64_t rows = t.tensor().dim(0);
    if (i > 0 && rows != d->rows) {
      return ErrorAt(s, StrCat("dataset columns must have the same number of "
                               "rows: '",
                               d->columns[0].first, "' has ", d->rows, ", '",
                               name, "' has ", rows));
    }
    d->rows = rows;
    d->columns.emplace_back(name, t.tensor());
  }
  return d;
}

Result DatasetFn(Interpreter& in, Args& a) {
  if (!a.rest.empty()) {
    return ErrorAt(a.rest_spans[0],
                   "dataset takes named columns: dataset(x = ..., y = ...)");
  }
  RN_ASSIGN_OR_RETURN(std::shared_ptr<Dataset> d,
                      MakeDataset(in, a.named, a.named_spans, a.span));
  return Value::OfDataset(std::move(d));
}

Result LoadCsv(Interpreter& in, Args& a) {
  RN_ASSIGN_OR_RETURN(std::string path, StringArg(a, 0));
  RN_ASSIGN_OR_RETURN(bool header, BoolArg(a, 1));
  absl::StatusOr<std::vector<std::pair<std::string, Tensor>>> cols =
      ReadCsv(path, header);
  RN_RETURN_IF_ERROR(CheckFile(a, cols.status()));
  auto d = std::make_shared<Dataset>();
  for (auto& [name, t] : *cols) {
    d->rows = t.dim(0);
    d->columns.emplace_back(name, std::move(t));
  }
  return Value::OfDataset(std::move(d));
}

Result Batches(Interpreter& in, Args& a) {
  const Value& ds = a[0];
  std::shared_ptr<const Dataset> d;
  if (ds.kind() == ValueKind::kDataset) {
    d = ds.dataset();
  } else if (ds.kind() == ValueKind::kRecord) {
    std::vector<SourceSpan> spans;
    RN_ASSIGN_OR_RETURN(std::shared_ptr<Dataset> made,
                        MakeDataset(in, ds.fields(), spans, a.span_of(0)));
    d = std::move(made);
  } else {
    return ErrorAt(a.span_of(0), StrCat("batches() needs a dataset, got ",
                                        DescribeValue(ds)));
  }
  RN_ASSIGN_OR_RETURN(int64_t size, IntArg(a, 1));
  if (size < 1) {
    return ErrorAt(a.span_of(1), StrCat("the batch size must be positive, "
                                        "got ",
                                        size));
  }
  RN_ASSIGN_OR_RETURN(bool shuffle, BoolArg(a, 2));
  RN_ASSIGN_OR_RETURN(int64_t seed, IntArg(a, 3));
  RN_ASSIGN_OR_RETURN(bool drop_last, BoolArg(a, 4));
  return Value::OfIterable(std::make_shared<BatchesIterable>(
      std::move(d), size, shuffle, static_cast<uint64_t>(seed), drop_last));
}

// ---- graph builtins
// -----------------------------------------------------------------

Result Group(Interpreter& in, Args& a) {
  std::vector<Node*> nodes;
  for (size_t i = 0; i < a.rest.size(); ++i) {
    RN_RETURN_IF_ERROR(
        in.builder().CollectNodes(a.rest[i], a.rest_spans[i], &nodes));
  }
  RN_ASSIGN_OR_RETURN(
      std::vector<Value> out,
      in.builder().ApplyOpN("noop", {}, {}, Site(a), std::move(nodes)));
  return out.empty() ? Value() : out[0];
}

Result TrainableVars(Interpreter& in, Args& a) {
  RN_ASSIGN_OR_RETURN(std::string scope, StringArg(a, 0));
  std::vector<Value> out;
  for (Node* n : in.builder().variables()) {
    absl::StatusOr<bool> trainable = n->attr<bool>("trainable");
    if (!trainable.ok() || !*trainable) continue;
    const std::string& name = n->name();
    const bool match = scope.empty() || name == scope ||
                       (name.size() > scope.size() &&
                        name.compare(0, scope.size(), scope) == 0 &&
                        (scope.back() == '/' || name[scope.size()] == '/'));
    if (match) out.push_back(Value::Symbolic({n, 0}));
  }
  return Value::List(std::move(out));
}

// summary(scope = ""): prints a table of the trainable vars whose names are
// in `scope` (as trainable_vars), each one's name, shape, dtype, element
// count and bytes, with the totals (Keras' model.summary()); returns the
// total element count.
Result Summary(Interpreter& in, Args& a) {
  RN_ASSIGN_OR_RETURN(Value vars, TrainableVars(in, a));
  std::vector<std::array<std::string, 5>> rows;
  rows.push_back({"name", "shape", "dtype", "params", "bytes"});
  int64_t params = 0;
  size_t bytes = 0;
  for (const Value& v : vars.items()) {
    const TensorSpec& spec = v.out().node->output(0);
    // A shape known only at run time counts nothing and says so.
    const int64_t n =
        spec.shape.IsFullyDefined() ? spec.shape.num_elements() : -1;
    const size_t b = n < 0 ? 0 : static_cast<size_t>(n) * DTypeSize(spec.dtype);
    params += std::max<int64_t>(n, 0);
    bytes += b;
    rows.push_back({v.out().node->name(), spec.shape.ToString(),
                    std::string(DTypeName(spec.dtype)), n < 0 ? "?" : StrCat(n),
                    n < 0 ? "?" : StrCat(b)});
  }
  std::array<size_t, 5> width{};
  for (const auto& row : rows) {
    for (size_t i = 0; i < row.size(); ++i) {
      width[i] = std::max(width[i], row[i].size());
    }
  }
  std::string table;
  for (const auto& row : rows) {
    // Names and dtypes to the left, numbers to the right.
    table += fmt::format("{:<{}}  {:<{}}  {:<{}}  {:>{}}  {:>{}}\n", row[0],
                         width[0], row[1], width[1], row[2], width[2], row[3],
                         width[3], row[4], width[4]);
  }
  table += StrCat("total: ", vars.items().size(), " trainable vars, ", params,
                  " params, ", bytes, " bytes\n");
  if (!in.check_mode()) {
    std::fputs(table.c_str(), in.options().out);
    std::fflush(in.options().out);
  }
  return Value::Int(params);
}

// leaves(x): the tensors of a tuple, list or record, nested or not, in order,
// as one list (tf.nest.flatten); a tensor is its own only leaf.
Result Leaves(Interpreter&, Args& a) {
  std::vector<Value> out;
  RN_RETURN_IF_ERROR(FlattenTensors(a[0], a.span_of(0), "leaves' items", &out));
  return Value::List(std::move(out));
}

// pack_as(like, leaves): `like`'s structure with `leaves` (a list or tuple) in
// place of its tensors, in the order leaves(like) gives them
// (tf.nest.pack_sequence_as).
Result PackAs(Interpreter&, Args& a) {
  std::vector<Value> old;
  RN_RETURN_IF_ERROR(
      FlattenTensors(a[0], a.span_of(0), "pack_as' structure", &old));
  if (!a[1].is_sequence()) {
    return ErrorAt(a.span_of(1),
                   StrCat("pack_as needs a list or tuple of leaves, got ",
                          DescribeValue(a[1])));
  }
  const std::vector<Value>& leaves = a[1].items();
  if (leaves.size() != old.size()) {
    return ErrorAt(a.span_of(1), StrCat("pack_as: the structure holds ",
                                        old.size(), " tensors but ",
                                        leaves.size(), " leaves were given"));
  }
  return Unflatten(a[0], leaves);
}

// with_values(g, values): a sparse gradient with g's rows and these values
// in place of g.values (one row per index), so that it stays sparse; how a
// script scales one (optim.clip_by_global_norm).
Result WithValues(Interpreter& in, Args& a) {
  std::optional<SparseGradient> sparse =
      a[0].is_symbolic() ? AsSparseGradient(a[0].out()) : std::nullopt;
  if (!sparse) {
    return ErrorAt(a.span_of(0),
                   StrCat("with_values needs a sparse gradient (the gradient "
                          "of a gather), got ",
                          DescribeValue(a[0])));
  }
  RN_ASSIGN_OR_RETURN(
      Value shape,
      in.builder().ApplyOp("shape_of", {Value::Symbolic(sparse->values)}, {},
                           Site(a)));
  RN_ASSIGN_OR_RETURN(Value values, in.builder().ApplyOp(
                                        "reshape", {a[1], shape}, {}, Site(a)));
  return in.builder().ApplyOp("gather_grad",
                              {Value::Symbolic(sparse->params),
                               Value::Symbolic(sparse->indices), values},
                              {{"axis", int64_t{0}}}, Site(a));
}

// grad(y, x) or grad(y, [x1, x2, ...]): the gradient of y (summed over its
// elements when it is not a scalar) as graph nodes, one per x, in the shape
// of the second argument. Both must be symbolic: a concrete y depends on no
// var or input.
Result Grad(Interpreter& in, Args& a) {
  const Value& y = a[0];
  if (in.builder().context().cf != nullptr) {
    return ErrorAt(a.span,
                   "grad inside an in-graph loop or 'if' is not supported; "
                   "take the gradient of the loop's or the if's result");
  }
  if (!y.is_symbolic()) {
    return ErrorAt(a.span_of(0),
                   StrCat("grad needs a symbolic y (computed from a var or "
                          "input), got ",
                          DescribeValue(y)));
  }
  const Value& xs = a[1];
  const bool many = xs.is_sequence();
  std::vector<Value> items = many ? xs.items() : std::vector<Value>{xs};
  std::vector<NodeOut> outs;
  for (const Value& x : items) {
    if (!x.is_symbolic()) {
      return ErrorAt(a.span_of(1),
                     StrCat("grad differentiates with respect to symbolic "
                            "tensors (a var, an input or a value computed "
                            "from them), got ",
                            DescribeValue(x)));
    }
    outs.push_back(x.out());
  }
  absl::StatusOr<std::vector<NodeOut>> grads =
      AddGradients(&in.graph(), y.out(), outs);
  if (!grads.ok()) {
    lang::Diagnostic d = ToDiagnostic(grads.status(), a.span);
    if (d.span.line != a.span.line || d.span.file != a.span.file ||
        d.span.col != a.span.col) {
      d.notes.push_back(Note(a.span, "while differentiating for this grad"));
    }
    return DiagStatus(std::move(d));
  }
  std::vector<Value> values;
  for (const NodeOut& g : *grads) values.push_back(Value::Symbolic(g));
  if (!many) return values[0];
  return xs.kind() == ValueKind::kTuple ? Value::Tuple(std::move(values))
                                        : Value::List(std::move(values));
}

// scan(f, xs, init) and map(f, xs): on the host when xs and init are
// concrete (the results stacked), else an in-graph loop.
Result ScanFn(Interpreter& in, Args& a) {
  const bool is_scan = a.builtin->name == "scan";
  const Value& f = a[0];
  Value xs = a[1];
  if (!xs.is_tensor()) {
    RN_ASSIGN_OR_RETURN(xs, in.builder().ToTensor(xs, a.span_of(1), "xs"));
  }
  if (xs.tensor_shape().rank() == 0) {
    return ErrorAt(a.span_of(1), StrCat(a.builtin->name,
                                        " loops over the first axis of xs, "
                                        "which is a scalar"));
  }
  StepFn call = [&](std::vector<Value> args) {
    std::vector<SourceSpan> spans(args.size(), a.span);
    return in.Call(f, std::move(args), std::move(spans), {}, {}, a.span);
  };
  const Value* init = is_scan ? &a[2] : nullptr;
  if (xs.is_symbolic() || (init != nullptr && init->contains_symbolic())) {
    return GraphScan(in.builder(), call, xs, init, Site(a));
  }
  RN_ASSIGN_OR_RETURN(std::unique_ptr<Iterator> it, Iterate(xs, a.span_of(1)));
  Value state = init != nullptr ? *init : Value();
  Value like;
  std::vector<std::vector<Value>> columns;
  while (true) {
    RN_ASSIGN_OR_RETURN(std::optional<Value> x, it->Next());
    if (!x) break;
    RN_ASSIGN_OR_RETURN(Value y,
                        init != nullptr ? call({state, *x}) : call({*x}));
    std::vector<Value> leaves;
    RN_RETURN_IF_ERROR(FlattenTensors(y, a.span, "the results of f", &leaves));
    if (columns.empty()) {
      columns.resize(leaves.size());
      like = y;
    }
    if (leaves.size() != columns.size()) {
      return ErrorAt(a.span, "f must give the same structure at every step");
    }
    for (size_t k = 0; k < leaves.size(); ++k) columns[k].push_back(leaves[k]);
    state = y;
  }
  if (columns.empty()) {
    return ErrorAt(a.span_of(1), StrCat(a.builtin->name,
                                        " over an empty xs has no results "
                                        "to stack"));
  }
  std::vector<Value> stacked;
  for (const std::vector<Value>& col : columns) {
    RN_ASSIGN_OR_RETURN(Value s,
                        in.builder().ApplyOp("stack", col, {}, Site(a)));
    stacked.push_back(s);
  }
  return Unflatten(like, stacked);
}

Result AssignFn(const std::string& op, Interpreter& in, Args& a) {
  const Value& target = a[0];
  if (!target.is_symbolic() || target.out().node->op() != "variable") {
    return ErrorAt(a.span_of(0), StrCat(op, " needs a var or state, got ",
                                        DescribeValue(target)));
  }
  return in.builder().Assign(op, target, a[1], Site(a));
}

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
       {"abs",     "neg",   "sign",  "sqrt",     "rsqrt", "square",
        "exp",     "log",   "log1p", "sin",      "cos",   "tanh",
        "sigmoid", "relu",  "elu",   "softplus", "erf",   "floor",
        "ceil",    "round", "isnan", "isfinite"}) {
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
  for (const char* op :
       {"sum", "mean", "max", "min", "prod", "all", "any", "logsumexp"}) {
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

// Linear algebra and NN.
void AddSparse(std::vector<Builtin>& b);

void AddNN(std::vector<Builtin>& b) {
  b.push_back(FromOp("matmul"));
  // The ops call their input `logits`; the language calls it x.
  b.push_back(FromOp("masked_softmax"));
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
  b.push_back(
      {"conv2d",
       {P("x"), P("filters"), P("strides", Value::Int(1)),
        P("padding", Value::String("same")), P("dilations", Value::Int(1))},
       [](Interpreter& in, Args& a) -> Result {
         AttrMap attrs;
         RN_RETURN_IF_ERROR(AxisAttr(in, a, 2, &attrs, "strides"));
         RN_ASSIGN_OR_RETURN(std::string padding, StringArg(a, 3));
         attrs["padding"] = padding;
         RN_RETURN_IF_ERROR(AxisAttr(in, a, 4, &attrs, "dilations"));
         return in.builder().ApplyOp("conv2d", {a[0], a[1]}, std::move(attrs),
                                     Site(a));
       }});
  for (const char* op : {"max_pool", "avg_pool"}) {
    b.push_back({op,
                 {P("x"), P("size"), P("strides", None()),
                  P("padding", Value::String("valid"))},
                 [op](Interpreter& in, Args& a) -> Result {
                   AttrMap attrs;
                   RN_RETURN_IF_ERROR(AxisAttr(in, a, 1, &attrs, "size"));
                   RN_RETURN_IF_ERROR(AxisAttr(in, a, 2, &attrs, "strides"));
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
  b.push_back({"embedding_lookup",
               {P("params"), P("ids")},
               [](Interpreter& in, Args& a) -> Result {
                 return in.builder().ApplyOp("gather", {a[0], a[1]},
                                             {{"axis", int64_t{0}}}, Site(a));
               }});
  AddSparse(b);
}

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
  for (const char* op : {"scatter_add", "scatter_sub", "scatter_update"}) {
    b.push_back(
        {op,
         {P("var"), P("indices"), P("updates")},
         [op](Interpreter& in, Args& a) -> Result {
           return in.builder().ApplyOp(op, {a[0], a[1], a[2]}, {}, Site(a));
         }});
  }
}

// Autodiff.
void AddAutodiff(std::vector<Builtin>& b) {
  b.push_back({"grad", {P("y"), P("xs")}, Grad});
  b.push_back({"with_values", {P("g"), P("values")}, WithValues});
  b.push_back({"leaves", {P("x")}, Leaves});
  b.push_back({"pack_as", {P("like"), P("leaves")}, PackAs});
  b.push_back(FromOp("stop_gradient"));
  b.push_back(
      {"trainable_vars", {P("scope", Value::String(""))}, TrainableVars});
  b.push_back({"summary", {P("scope", Value::String(""))}, Summary});
  b.push_back({"slot",
               {P("var"), P("name"), P("value", None())},
               [](Interpreter& in, Args& a) -> Result {
                 RN_ASSIGN_OR_RETURN(std::string name, StringArg(a, 1));
                 return in.builder().MakeSlot(a[0], name, a[2], a.span);
               }});
  b.push_back({"global_step", {}, [](Interpreter& in, Args& a) -> Result {
                 return in.builder().GlobalStep(a.span);
               }});
}

// Graph control.
void AddGraphControl(std::vector<Builtin>& b) {
  b.push_back({"group", {}, Group, /*variadic=*/true});
  b.push_back({"noop", {}, [](Interpreter& in, Args& a) -> Result {
                 return in.builder().ApplyOp("noop", {}, {}, Site(a));
               }});
  for (const char* op : {"identity", "check_numerics", "debug_print"}) {
    b.push_back(FromOp(op));
  }
}

// Loops over the first axis.
void AddLoops(std::vector<Builtin>& b) {
  b.push_back({"scan", {P("f"), P("xs"), P("init")}, ScanFn});
  b.push_back({"map", {P("f"), P("xs")}, ScanFn});
}

// Host.
void AddHost(std::vector<Builtin>& b) {
  b.push_back({"print", {}, Print, /*variadic=*/true});
  b.push_back({"fmt", {P("format")}, Fmt, true, true});
  b.push_back({"assert", {P("cond"), P("message", None())}, Assert});
  b.push_back({"allclose",
               {P("a"), P("b"), P("rtol", Value::Float(1e-5)),
                P("atol", Value::Float(1e-8))},
               Allclose});
  b.push_back({"len", {P("x")}, Len});
  b.push_back({"float", {P("x")}, ToFloat});
  b.push_back({"int", {P("x")}, ToInt});
  b.push_back({"exit", {P("code", Value::Int(0))}, Exit});
  b.push_back({"arg", {P("name"), P("default", None())}, Arg});
  b.push_back({"task", {}, Task});
  b.push_back({"sleep", {P("seconds")}, Sleep});
  b.push_back({"progress", {P("iterable"), P("label", None())}, Progress});
  b.push_back({"report", {}, Report, true, true});
}

// Data.
void AddData(std::vector<Builtin>& b) {
  b.push_back({"load_idx", {P("path")}, LoadIdx});
  b.push_back(
      {"load_csv", {P("path"), P("header", Value::Bool(true))}, LoadCsv});
  b.push_back({"load_npy", {P("path")}, LoadNpy});
  b.push_back({"load_text", {P("path")}, LoadText});
  b.push_back({"save_npy", {P("path"), P("x")}, SaveNpy});
  b.push_back({"dataset", {}, DatasetFn, true, true});
  b.push_back({"batches",
               {P("ds"), P("size"), P("shuffle", Value::Bool(false)),
                P("seed", Value::Int(0)), P("drop_last", Value::Bool(false))},
               Batches});
}

// Checkpoints (checkpoint_builtins.cc).
void AddCheckpoints(std::vector<Builtin>& b) {
  b.push_back({"save", {P("path")}, SaveBuiltin});
  b.push_back({"restore", {P("path")}, RestoreBuiltin});
}

std::vector<Builtin> MakeBuiltins() {
  std::vector<Builtin> b;
  AddCreation(b);
  AddElementWise(b);
  AddReductions(b);
  AddShape(b);
  AddNN(b);
  AddState(b);
  AddAutodiff(b);
  AddGraphControl(b);
  AddLoops(b);
  AddHost(b);
  AddData(b);
  AddCheckpoints(b);
  AddQueueBuiltins(b);
  AddTextBuiltins(b);

  // The ops each builtin applies: the op of its name, else these.
  const std::map<std::string, std::vector<std::string>> applies = {
      {"zeros", {"fill"}},
      {"ones", {"fill"}},
      {"arange", {"range"}},
      {"glorot_uniform", {"random_uniform"}},
      {"he_normal", {"random_normal"}},
      {"embedding_lookup", {"gather"}},
      {"group", {"noop"}},
      {"size", {"size", "queue_size"}},
      {"close", {"queue_close"}},
  };
  for (Builtin& builtin : b) {
    auto it = applies.find(builtin.name);
    if (it != applies.end()) {
      builtin.ops = it->second;
    } else if (OpRegistry::Global().Find(builtin.name) != nullptr) {
      builtin.ops = {builtin.name};
    }
  }
  return b;
}

}  // namespace

const std::string* Interpreter::FindArg(const std::string& name) const {
  const std::string* found = nullptr;
  for (const auto& [k, v] : options().args) {
    if (k == name) found = &v;  // the last one given wins
  }
  return found;
}

const std::vector<Builtin>& Builtins() {
  static const auto* table = new std::vector<Builtin>(MakeBuiltins());
  return *table;
}

}  // namespace runnel::interp
