// Indexing and slicing of values (docs/language.md §3): tuples and lists by
// a concrete index, tensors by indices, slices, strides and symbolic
// indices (gathers).
#include "interpreter/indexing.h"

#include <algorithm>

#include "base/status_macros.h"
#include "base/strings.h"
#include "interpreter/data.h"
#include "interpreter/diag.h"

namespace runnel::interp {
namespace {

// x[s] on `axis` for a subscript with a symbolic index or bound.
absl::StatusOr<Value> DynamicSubscript(GraphBuilder& b, const Value& x,
                                       const Subscript& s, int64_t axis,
                                       const OpSite& site);

}  // namespace

namespace {

// A concrete integer index or slice bound into `*out`; unchanged when `v` is
// none (absent).
absl::Status IntOf(const Value& v, const SourceSpan& span,
                   std::optional<int64_t>* out) {
  if (v.is_none()) return absl::OkStatus();
  std::optional<int64_t> i = v.AsInt();
  if (!i || v.tensor().rank() != 0) {
    return ErrorAt(span, StrCat("an index must be a concrete integer, got ",
                                DescribeValue(v)));
  }
  *out = *i;
  return absl::OkStatus();
}

// Tuples, lists, strings, datasets (by rows) and records (by field name):
// one subscript, concrete.
absl::StatusOr<Value> IndexHostValue(const Value& target,
                                     const std::vector<Subscript>& subs,
                                     const OpSite& site) {
  if (subs.size() != 1) {
    return ErrorAt(site.span,
                   StrCat(DescribeValue(target), " takes a single index"));
  }
  const Subscript& s = subs[0];
  if (target.kind() == ValueKind::kRecord) {
    if (s.is_slice || s.index.kind() != ValueKind::kString) {
      return ErrorAt(s.span, "a record is indexed by a field name string");
    }
    if (const Value* v = target.FindField(s.index.str())) return *v;
    return ErrorAt(s.span,
                   StrCat("the record has no field '", s.index.str(), "'"));
  }
  int64_t n = target.kind() == ValueKind::kString ? target.str().size()
              : target.kind() == ValueKind::kDataset
                  ? target.dataset()->rows
                  : static_cast<int64_t>(target.items().size());
  std::vector<int64_t> picked;
  bool single = false;
  if (!s.is_slice) {
    std::optional<int64_t> i;
    RN_RETURN_IF_ERROR(IntOf(s.index, s.span, &i));
    if (!i) return ErrorAt(s.span, "an index is needed");
    int64_t k = *i < 0 ? *i + n : *i;
    if (k < 0 || k >= n) {
      return ErrorAt(s.span, StrCat("index ", *i, " is out of range for ",
                                    DescribeValue(target), " of length ", n));
    }
    picked.push_back(k);
    single = true;
  } else {
    std::optional<int64_t> lo, hi, step;
    RN_RETURN_IF_ERROR(IntOf(s.lo, s.span, &lo));
    RN_RETURN_IF_ERROR(IntOf(s.hi, s.span, &hi));
    RN_RETURN_IF_ERROR(IntOf(s.step, s.span, &step));
    int64_t st = step.value_or(1);
    if (st == 0) return ErrorAt(s.span, "a slice step cannot be zero");
    auto norm = [n](int64_t i) { return i < 0 ? i + n : i; };
    if (st > 0) {
      int64_t b = lo ? std::clamp<int64_t>(norm(*lo), 0, n) : 0;
      int64_t e = hi ? std::clamp<int64_t>(norm(*hi), 0, n) : n;
      for (int64_t i = b; i < e; i += st) picked.push_back(i);
    } else {
      int64_t b = lo ? std::clamp<int64_t>(norm(*lo), -1, n - 1) : n - 1;
      int64_t e = hi ? std::clamp<int64_t>(norm(*hi), -1, n - 1) : -1;
      for (int64_t i = b; i > e; i += st) picked.push_back(i);
    }
  }
  if (target.kind() == ValueKind::kString) {
    std::string out;
    for (int64_t i : picked) out += target.str()[i];
    return Value::String(out);
  }
  if (target.kind() == ValueKind::kDataset) {
    auto d = std::make_shared<Dataset>();
    d->rows = static_cast<int64_t>(picked.size());
    for (const auto& [name, t] : target.dataset()->columns) {
      d->columns.emplace_back(name, GatherRows(t, picked));
    }
    if (single) {
      Value rec = d->AsRecord();
      std::vector<Field> fields;
      for (const Field& f : rec.fields()) {
        const Tensor& t = f.second.tensor();
        std::vector<int64_t> dims(t.shape().dims().begin() + 1,
                                  t.shape().dims().end());
        RN_ASSIGN_OR_RETURN(Tensor r, t.Reshaped(Shape(dims)));
        fields.emplace_back(f.first, Value::Concrete(r));
      }
      return Value::Record(std::move(fields));
    }
    return Value::OfDataset(std::move(d));
  }
  if (single) return target.items()[picked[0]];
  std::vector<Value> items;
  for (int64_t i : picked) items.push_back(target.items()[i]);
  return target.kind() == ValueKind::kTuple ? Value::Tuple(std::move(items))
                                            : Value::List(std::move(items));
}

// One element of a concrete tensor (`x.shape[1]`), picked here rather than
// by a strided_slice kernel; nullopt for anything else, and for an index
// out of range (the general path reports it).
std::optional<Value> ConcreteElement(const Value& target,
                                     const std::vector<Subscript>& subs) {
  if (!target.is_concrete() ||
      static_cast<int>(subs.size()) != target.tensor().rank()) {
    return std::nullopt;
  }
  const Tensor& t = target.tensor();
  int64_t offset = 0;
  for (size_t k = 0; k < subs.size(); ++k) {
    const Subscript& s = subs[k];
    std::optional<int64_t> i;
    if (!s.is_slice && s.index.is_concrete() && s.index.tensor().rank() == 0) {
      i = s.index.AsInt();
    }
    const int64_t n = t.shape().dim(static_cast<int>(k));
    if (!i || *i < -n || *i >= n) return std::nullopt;
    offset = offset * n + (*i < 0 ? *i + n : *i);
  }
  Tensor out(t.dtype(), Shape{});
  const size_t size = DTypeSize(t.dtype());
  std::memcpy(out.raw_data(),
              static_cast<const char*>(t.raw_data()) + offset * size, size);
  return Value::Concrete(std::move(out));
}

bool IsSymbolic(const Subscript& s) {
  return s.index.is_symbolic() || s.lo.is_symbolic() || s.hi.is_symbolic() ||
         s.step.is_symbolic();
}

// Concrete indices and slices of a tensor: one strided_slice.
absl::StatusOr<Value> StridedSlice(GraphBuilder& b, const Value& target,
                                   const std::vector<Subscript>& subs,
                                   const OpSite& site) {
  std::vector<int64_t> begin, end, strides;
  int64_t begin_mask = 0, end_mask = 0, shrink = 0;
  for (size_t k = 0; k < subs.size(); ++k) {
    const Subscript& s = subs[k];
    if (!s.is_slice) {
      if (s.index.is_concrete() && s.index.tensor().rank() > 0) {
        return ErrorAt(s.span,
                       "indexing with a tensor of indices is not supported; "
                       "use gather(x, indices)");
      }
      std::optional<int64_t> i;
      RN_RETURN_IF_ERROR(IntOf(s.index, s.span, &i));
      if (!i) return ErrorAt(s.span, "an index is needed");
      // Said here, at the subscript, rather than by the op it becomes.
      const Shape shape = target.tensor_shape();
      if (!shape.unknown_rank() && static_cast<int>(k) < shape.rank() &&
          shape.dim(k) >= 0 && (*i >= shape.dim(k) || *i < -shape.dim(k))) {
        return ErrorAt(
            s.span,
            StrCat("index ", *i, " is out of range for axis ", k, " of size ",
                   shape.dim(k), " (shape ", shape.ToString(), ")"));
      }
      begin.push_back(*i);
      end.push_back(*i + 1);
      strides.push_back(1);
      shrink |= int64_t{1} << k;
      continue;
    }
    std::optional<int64_t> lo, hi, step;
    RN_RETURN_IF_ERROR(IntOf(s.lo, s.span, &lo));
    RN_RETURN_IF_ERROR(IntOf(s.hi, s.span, &hi));
    RN_RETURN_IF_ERROR(IntOf(s.step, s.span, &step));
    if (step && *step == 0) {
      return ErrorAt(s.span, "a slice step cannot be zero");
    }
    begin.push_back(lo.value_or(0));
    end.push_back(hi.value_or(0));
    strides.push_back(step.value_or(1));
    if (!lo) begin_mask |= int64_t{1} << k;
    if (!hi) end_mask |= int64_t{1} << k;
  }
  AttrMap attrs = {{"begin", begin},       {"end", end},
                   {"strides", strides},   {"begin_mask", begin_mask},
                   {"end_mask", end_mask}, {"shrink_axis_mask", shrink}};
  return b.ApplyOp("strided_slice", {target}, std::move(attrs), site);
}

// Symbolic subscripts anywhere (`t[k:k+2]`, `t[:, k]`, `t[k, 1]`): the
// concrete ones first, with the symbolic axes kept whole; then each
// symbolic one by a gather on its axis, the last first, so the axes before
// it keep their positions.
absl::StatusOr<Value> SymbolicSubscripts(GraphBuilder& b, const Value& target,
                                         const std::vector<Subscript>& subs,
                                         const OpSite& site) {
  std::vector<Subscript> rest = subs;
  std::vector<size_t> dynamic;
  bool all_whole = true;
  for (size_t k = 0; k < subs.size(); ++k) {
    if (IsSymbolic(subs[k])) {
      rest[k] = Subscript{.is_slice = true, .span = subs[k].span};
      dynamic.push_back(k);
    } else {
      all_whole = all_whole && subs[k].is_slice && subs[k].lo.is_none() &&
                  subs[k].hi.is_none() && subs[k].step.is_none();
    }
  }
  Value x = target;
  if (!all_whole) {
    RN_ASSIGN_OR_RETURN(x, Index(b, target, rest, OpSite(site.span)));
  }
  for (auto it = dynamic.rbegin(); it != dynamic.rend(); ++it) {
    int64_t axis = 0;  // the axis's position once scalar indices are gone
    for (size_t j = 0; j < *it; ++j) axis += rest[j].is_slice ? 1 : 0;
    RN_ASSIGN_OR_RETURN(x, DynamicSubscript(b, x, subs[*it], axis, site));
  }
  return x;
}

}  // namespace

absl::StatusOr<Value> Index(GraphBuilder& b, const Value& target,
                            const std::vector<Subscript>& subs,
                            const OpSite& site) {
  if (target.is_sequence() || target.kind() == ValueKind::kString ||
      target.kind() == ValueKind::kDataset ||
      target.kind() == ValueKind::kRecord) {
    return IndexHostValue(target, subs, site);
  }
  if (!target.is_tensor()) {
    return ErrorAt(site.span, StrCat("cannot index ", DescribeValue(target)));
  }
  if (std::optional<Value> element = ConcreteElement(target, subs)) {
    return *element;
  }
  // A symbolic scalar index: dynamic_index.
  if (subs.size() == 1 && !subs[0].is_slice && subs[0].index.is_symbolic()) {
    return b.ApplyOp("dynamic_index", {target, subs[0].index}, {}, site);
  }
  if (std::any_of(subs.begin(), subs.end(), IsSymbolic)) {
    return SymbolicSubscripts(b, target, subs, site);
  }
  return StridedSlice(b, target, subs, site);
}

namespace {

absl::StatusOr<Value> DynamicSubscript(GraphBuilder& b, const Value& x,
                                       const Subscript& s, int64_t axis,
                                       const OpSite& site) {
  const OpSite at(s.span);
  std::optional<int64_t> step;
  if (s.step.is_symbolic()) {
    return ErrorAt(s.span, "a slice step must be a concrete integer");
  }
  if (!s.step.is_none()) {
    step = s.step.AsInt();
    if (!step || s.step.tensor().rank() != 0) {
      return ErrorAt(s.span, StrCat("a slice step must be an integer, got ",
                                    DescribeValue(s.step)));
    }
    if (*step == 0) return ErrorAt(s.span, "a slice step cannot be zero");
  }
  // Indices compute in i64 when any bound is i64, else in i32.
  DType dtype = DType::kI32;
  for (const Value* v : {&s.index, &s.lo, &s.hi}) {
    if (v->is_none()) continue;
    if (!v->is_tensor() || v->tensor_shape().rank() != 0 ||
        !IsInteger(v->tensor_dtype())) {
      return ErrorAt(s.span, StrCat("an index must be an integer scalar, got ",
                                    DescribeValue(*v)));
    }
    if (v->tensor_dtype() == DType::kI64) dtype = DType::kI64;
  }
  auto cast = [&](const Value& v) -> absl::StatusOr<Value> {
    if (v.tensor_dtype() == dtype) return v;
    return b.ApplyOp("cast", {v}, {{"dtype", dtype}}, at);
  };
  // The axis's length: static when known, else from shape_of at run time.
  const Shape shape = x.tensor_shape();
  if (shape.unknown_rank() || axis >= shape.rank()) {
    return ErrorAt(s.span, StrCat("too many indices for ", DescribeValue(x)));
  }
  Value dim;
  if (shape.dim(axis) >= 0) {
    dim = Value::Concrete(dtype == DType::kI64
                              ? Tensor::Scalar<int64_t>(shape.dim(axis))
                              : Tensor::Scalar<int32_t>(shape.dim(axis)));
  } else {
    RN_ASSIGN_OR_RETURN(Value shape_of,
                        b.ApplyOp("shape_of", {x}, {{"out_type", dtype}}, at));
    RN_ASSIGN_OR_RETURN(
        dim,
        Index(b, shape_of, {Subscript{.index = Value::Int(axis, false)}}, at));
  }
  // Python's rule: a negative index counts from the end.
  auto from_end = [&](const Value& v) -> absl::StatusOr<Value> {
    RN_ASSIGN_OR_RETURN(Value i, cast(v));
    RN_ASSIGN_OR_RETURN(Value neg,
                        b.ApplyOp("less", {i, Value::Int(0)}, {}, at));
    RN_ASSIGN_OR_RETURN(Value shifted, b.ApplyOp("add", {i, dim}, {}, at));
    return b.ApplyOp("where", {neg, shifted, i}, {}, at);
  };
  AttrMap axis_attr = {{"axis", axis}};
  if (!s.is_slice) {
    RN_ASSIGN_OR_RETURN(Value i, from_end(s.index));
    return b.ApplyOp("gather", {x, i}, std::move(axis_attr), site);
  }
  // A slice gathers range(lo, hi, step), its bounds clamped as in Python:
  // to [0, dim] going forward, to [-1, dim - 1] going backward.
  const int64_t st = step.value_or(1);
  RN_ASSIGN_OR_RETURN(Value last,
                      b.ApplyOp("sub", {dim, Value::Int(1)}, {}, at));
  const Value low = st > 0 ? Value::Int(0) : Value::Int(-1);
  const Value high = st > 0 ? dim : last;
  auto bound = [&](const Value& v,
                   const Value& absent) -> absl::StatusOr<Value> {
    if (v.is_none()) return absent;
    RN_ASSIGN_OR_RETURN(Value i, from_end(v));
    RN_ASSIGN_OR_RETURN(i, b.ApplyOp("maximum", {i, low}, {}, at));
    return b.ApplyOp("minimum", {i, high}, {}, at);
  };
  RN_ASSIGN_OR_RETURN(Value lo, bound(s.lo, st > 0 ? Value::Int(0) : last));
  RN_ASSIGN_OR_RETURN(Value hi, bound(s.hi, st > 0 ? dim : Value::Int(-1)));
  RN_ASSIGN_OR_RETURN(Value delta, cast(Value::Int(st)));
  RN_ASSIGN_OR_RETURN(lo, cast(lo));
  RN_ASSIGN_OR_RETURN(hi, cast(hi));
  RN_ASSIGN_OR_RETURN(Value ids, b.ApplyOp("range", {lo, hi, delta}, {}, at));
  return b.ApplyOp("gather", {x, ids}, std::move(axis_attr), site);
}

}  // namespace

}  // namespace runnel::interp
