#include "framework/ops/index_checks.h"

#include <algorithm>
#include <cstdint>
#include <numeric>

#include "absl/container/flat_hash_map.h"
#include "base/status_macros.h"
#include "base/strings.h"
#include "framework/shape_fns.h"

namespace runnel {
namespace {

absl::Status Invalid(std::string message) {
  return absl::InvalidArgumentError(std::move(message));
}

// "[1, 0]": the coordinates of the `flat`-th element of `shape`.
std::string Position(const Shape& shape, int64_t flat) {
  std::vector<int64_t> at(shape.rank());
  for (int d = shape.rank() - 1; d >= 0; --d) {
    const int64_t n = std::max<int64_t>(shape.dim(d), 1);
    at[d] = flat % n;
    flat /= n;
  }
  std::string s = "[";
  for (size_t d = 0; d < at.size(); ++d) s += StrCat(d ? ", " : "", at[d]);
  return s + "]";
}

absl::Status OutOfRange(int64_t index, const Shape& indices, int64_t flat,
                        int64_t n, int axis, const Shape& data) {
  return Invalid(StrCat("index ", index, " (indices", Position(indices, flat),
                        ") is out of range [0, ", n, ") for axis ", axis,
                        " of ", data.ToString()));
}

// Row-major strides, in elements, of `shape`.
std::vector<int64_t> Strides(const Shape& shape) {
  std::vector<int64_t> s(shape.rank(), 1);
  for (int d = shape.rank() - 2; d >= 0; --d)
    s[d] = s[d + 1] * shape.dim(d + 1);
  return s;
}

}  // namespace

absl::StatusOr<ScatterReduction> ParseScatterReduction(std::string_view name) {
  if (name == "none") return ScatterReduction::kNone;
  if (name == "add") return ScatterReduction::kAdd;
  if (name == "mul") return ScatterReduction::kMul;
  if (name == "max") return ScatterReduction::kMax;
  if (name == "min") return ScatterReduction::kMin;
  return Invalid(StrCat("reduction must be \"none\", \"add\", \"mul\", ",
                        "\"max\" or \"min\", got \"", name, "\""));
}

absl::Status CheckAlongAxis(const Shape& data, const Shape& indices,
                            const Shape& updates, int64_t axis,
                            std::string_view updates_name) {
  if (!indices.IsCompatibleWith(updates)) {
    return Invalid(StrCat(updates_name, " ", updates.ToString(),
                          " must have the indices' shape ",
                          indices.ToString()));
  }
  if (data.unknown_rank()) return absl::OkStatus();
  if (data.rank() == 0) return Invalid("needs data of rank 1 or more");
  RN_ASSIGN_OR_RETURN(int a, NormalizeAxis(axis, data.rank()));
  if (indices.unknown_rank()) return absl::OkStatus();
  if (indices.rank() != data.rank()) {
    return Invalid(StrCat("indices ", indices.ToString(),
                          " must have the rank of ", data.ToString()));
  }
  for (int d = 0; d < data.rank(); ++d) {
    if (d != a && data.dim(d) >= 0 && indices.dim(d) > data.dim(d)) {
      return Invalid(StrCat("indices ", indices.ToString(), " are longer than ",
                            data.ToString(), " along axis ", d, " (only axis ",
                            a, " is indexed)"));
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<Shape> GatherNdOutput(const Shape& x, const Shape& indices,
                                     int64_t batch_dims) {
  if (batch_dims < 0) {
    return Invalid(StrCat("batch_dims must not be negative, got ", batch_dims));
  }
  if (!indices.unknown_rank() && indices.rank() <= batch_dims) {
    return Invalid(StrCat("indices ", indices.ToString(), " need more than ",
                          batch_dims, " dimensions (batch_dims ", batch_dims,
                          ", then the tuples)"));
  }
  if (x.unknown_rank() || indices.unknown_rank()) return Shape::UnknownRank();
  const int64_t k = indices.dim(indices.rank() - 1);
  if (k < 0) return Shape::UnknownRank();
  if (batch_dims + k > x.rank()) {
    return Invalid(StrCat("index tuples of ", k, " with batch_dims ",
                          batch_dims, " index more dimensions than ",
                          x.ToString(), " has"));
  }
  for (int d = 0; d < batch_dims; ++d) {
    if (x.dim(d) >= 0 && indices.dim(d) >= 0 && x.dim(d) != indices.dim(d)) {
      return Invalid(StrCat("the batch dimensions of indices ",
                            indices.ToString(), " and of ", x.ToString(),
                            " differ"));
    }
  }
  std::vector<int64_t> dims(indices.dims().begin(), indices.dims().end() - 1);
  for (int d = 0; d < batch_dims; ++d) {
    if (dims[d] < 0) dims[d] = x.dim(d);
  }
  dims.insert(dims.end(), x.dims().begin() + batch_dims + k, x.dims().end());
  return Shape(std::move(dims));
}

absl::Status CheckTopK(int64_t k, int64_t n) {
  if (n > INT32_MAX) {
    return Invalid(StrCat("top_k's positions are i32: an axis of ", n,
                          " is longer than they reach"));
  }
  if (k < 0 || (n >= 0 && k > n)) {
    return Invalid(
        StrCat("k = ", k, " is out of range [0, ", n, "] for an axis of ", n));
  }
  return absl::OkStatus();
}

absl::StatusOr<TopKAttrs> TopKAttrs::Of(const Node& node) {
  TopKAttrs a;
  RN_ASSIGN_OR_RETURN(a.axis, node.attr<int64_t>("axis"));
  RN_ASSIGN_OR_RETURN(a.largest, node.attr<bool>("largest"));
  return a;
}

absl::StatusOr<UniqueAttrs> UniqueAttrs::Of(const Node& node) {
  UniqueAttrs a;
  const absl::StatusOr<int64_t> axis = node.attr<int64_t>("axis");
  if (axis.ok()) a.axis = *axis;
  RN_ASSIGN_OR_RETURN(a.sorted, node.attr<bool>("sorted"));
  return a;
}

absl::StatusOr<UniquePlan> PlanUnique(const Shape& x,
                                      std::optional<int64_t> axis) {
  UniquePlan p;
  p.n = x.num_elements();
  if (!axis) return p;
  if (x.rank() == 0) return Invalid("x must have an axis, got a scalar");
  RN_ASSIGN_OR_RETURN(p.axis, NormalizeAxis(*axis, x.rank()));
  p.outer = p.inner = 1;
  for (int d = 0; d < p.axis; ++d) p.outer *= x.dim(d);
  for (int d = p.axis + 1; d < x.rank(); ++d) p.inner *= x.dim(d);
  p.n = x.dim(p.axis);
  return p;
}

Shape UniquePlan::Values(const Shape& x, int64_t m) const {
  if (axis < 0) return Shape{m};
  std::vector<int64_t> dims = x.dims();
  dims[axis] = m;
  return Shape(std::move(dims));
}

absl::StatusOr<TopKPlan> PlanTopK(const Tensor& x, const Tensor& k,
                                  int64_t axis) {
  if (x.rank() == 0) return Invalid("x must have an axis, got a scalar");
  TopKPlan p;
  RN_ASSIGN_OR_RETURN(p.axis, NormalizeAxis(axis, x.rank()));
  p.k = k.ToInt64s()[0];
  RN_RETURN_IF_ERROR(CheckTopK(p.k, x.dim(p.axis)));
  std::vector<int64_t> dims = x.shape().dims();
  dims[p.axis] = p.k;
  p.output = Shape(std::move(dims));
  return p;
}

absl::StatusOr<AlongAxisPlan> PlanAlongAxis(const Shape& data,
                                            const Tensor& indices,
                                            int64_t axis) {
  RN_RETURN_IF_ERROR(
      CheckAlongAxis(data, indices.shape(), indices.shape(), axis, "indices"));
  const int a = *NormalizeAxis(axis, data.rank());
  const std::vector<int64_t> stride = Strides(data);
  const std::vector<int64_t> index = indices.ToInt64s();
  AlongAxisPlan plan;
  plan.target.resize(index.size());
  std::vector<int64_t> at(indices.rank(), 0);  // the element's coordinates
  const int64_t n = data.dim(a);
  for (size_t j = 0; j < index.size(); ++j) {
    if (index[j] < 0 || index[j] >= n) {
      return OutOfRange(index[j], indices.shape(), static_cast<int64_t>(j), n,
                        a, data);
    }
    int64_t t = 0;
    for (int d = 0; d < data.rank(); ++d) {
      t += (d == a ? index[j] : at[d]) * stride[d];
    }
    plan.target[j] = t;
    for (int d = indices.rank() - 1; d >= 0 && ++at[d] == indices.dim(d); --d) {
      at[d] = 0;
    }
  }
  return plan;
}

absl::StatusOr<NdPlan> PlanNd(const Shape& data, const Tensor& indices,
                              int64_t batch_dims) {
  NdPlan plan;
  RN_ASSIGN_OR_RETURN(plan.output,
                      GatherNdOutput(data, indices.shape(), batch_dims));
  const int b = static_cast<int>(batch_dims);
  const int64_t k = indices.dim(indices.rank() - 1);
  const std::vector<int64_t> stride = Strides(data);
  for (int d = b + static_cast<int>(k); d < data.rank(); ++d) {
    plan.slice *= data.dim(d);
  }
  int64_t batches = 1;
  for (int d = 0; d < b; ++d) batches *= data.dim(d);
  const int64_t batch_stride = b > 0 ? stride[b - 1] : 0;
  const std::vector<int64_t> index = indices.ToInt64s();
  int64_t tuples = 1;
  for (int d = 0; d + 1 < indices.rank(); ++d) tuples *= indices.dim(d);
  const int64_t per_batch = batches > 0 ? tuples / batches : 0;
  plan.target.resize(tuples);
  for (int64_t t = 0; t < tuples; ++t) {
    int64_t at = per_batch > 0 ? (t / per_batch) * batch_stride : 0;
    for (int64_t m = 0; m < k; ++m) {
      const int64_t v = index[t * k + m];
      const int d = b + static_cast<int>(m);
      if (v < 0 || v >= data.dim(d)) {
        return OutOfRange(v, indices.shape(), t * k + m, data.dim(d), d, data);
      }
      at += v * stride[d];
    }
    plan.target[t] = at;
  }
  return plan;
}

absl::Status CheckDistinctTargets(const std::vector<int64_t>& target,
                                  const Shape& index_shape,
                                  std::string_view name,
                                  std::string_view clash) {
  absl::flat_hash_map<int64_t, int64_t> first;
  first.reserve(target.size());
  for (size_t j = 0; j < target.size(); ++j) {
    auto [it, fresh] = first.try_emplace(target[j], static_cast<int64_t>(j));
    if (!fresh) {
      return Invalid(StrCat(
          name, Position(index_shape, it->second), " and ", name,
          Position(index_shape, static_cast<int64_t>(j)), " ", clash,
          "; with reduction \"none\" the result would depend "
          "on their order: give distinct indices, or a reduction (\"add\", "
          "\"max\", \"min\", \"mul\")"));
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<ScatterAttrs> ScatterAttrs::Of(const Node& node, bool nd) {
  ScatterAttrs a;
  RN_ASSIGN_OR_RETURN(std::string r, node.attr<std::string>("reduction"));
  RN_ASSIGN_OR_RETURN(a.how, ParseScatterReduction(r));
  RN_ASSIGN_OR_RETURN(a.at, node.attr<int64_t>(nd ? "batch_dims" : "axis"));
  return a;
}

absl::StatusOr<ScatterPlan> PlanScatter(bool nd, const Shape& data,
                                        const Tensor& indices,
                                        const Shape& updates, int64_t at,
                                        ScatterReduction how) {
  ScatterPlan plan;
  Shape tuples = indices.shape();  // where the targets' positions are
  if (nd) {
    RN_ASSIGN_OR_RETURN(NdPlan p, PlanNd(data, indices, at));
    if (updates != p.output) {
      return Invalid(
          StrCat("updates ", updates.ToString(), " must have shape ",
                 p.output.ToString(),
                 " (the indices' shape without its last dimension, then data's "
                 "past the indexed dimensions)"));
    }
    plan.target = std::move(p.target);
    plan.slice = p.slice;
    tuples.mutable_dims().pop_back();
  } else {
    if (updates != indices.shape()) {
      return Invalid(StrCat("updates ", updates.ToString(),
                            " must have the indices' shape ",
                            indices.shape().ToString()));
    }
    RN_ASSIGN_OR_RETURN(AlongAxisPlan p, PlanAlongAxis(data, indices, at));
    plan.target = std::move(p.target);
  }
  if (how == ScatterReduction::kNone && plan.slice > 0) {
    RN_RETURN_IF_ERROR(
        CheckDistinctTargets(plan.target, tuples, nd ? "indices" : "updates",
                             nd ? "name one slice" : "write one element"));
  }
  return plan;
}

TargetGroups GroupTargets(const std::vector<int64_t>& target) {
  TargetGroups g;
  g.order.resize(target.size());
  std::iota(g.order.begin(), g.order.end(), int64_t{0});
  std::stable_sort(g.order.begin(), g.order.end(),
                   [&](int64_t a, int64_t b) { return target[a] < target[b]; });
  for (size_t k = 0; k < g.order.size(); ++k) {
    const int64_t t = target[g.order[k]];
    if (g.places.empty() || g.places.back() != t) {
      g.places.push_back(t);
      g.starts.push_back(static_cast<int64_t>(k));
    }
  }
  g.starts.push_back(static_cast<int64_t>(g.order.size()));
  return g;
}

}  // namespace runnel
