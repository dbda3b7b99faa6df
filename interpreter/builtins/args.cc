// Reading builtins' arguments (builtins.h, builtins/internal.h).
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
#include "interpreter/builtins/internal.h"
#include "interpreter/control_flow.h"
#include "interpreter/data.h"
#include "interpreter/diag.h"
#include "interpreter/interpreter.h"
#include "io/csv_reader.h"
#include "io/idx_reader.h"
#include "io/npy.h"

namespace runnel::interp {

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
                      const std::string& attr) {
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

std::optional<TensorSpec> SpecOf(const Value& v) {
  if (v.is_concrete())
    return TensorSpec{v.tensor().dtype(), v.tensor().shape()};
  if (v.is_symbolic()) return v.out().node->output(v.out().index);
  return std::nullopt;
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

}  // namespace runnel::interp
