// CPU kernels of the index ops (framework/ops/index_ops.cc): the gathers
// copy elements or slices to where the plan (framework/ops/index_checks.h)
// says; the scatters combine the updates into a copy of the data in order,
// one at a time; top_k sorts each line's positions partially; nonzero
// counts, then writes the coordinates.
#include <algorithm>
#include <cstring>
#include <numeric>
#include <optional>
#include <type_traits>

#include "base/status_macros.h"
#include "framework/ops/index_checks.h"
#include "framework/shape_fns.h"
#include "kernels/common/array_util.h"
#include "kernels/cpu/broadcast.h"
#include "kernels/cpu/eigen_support.h"

namespace runnel {
namespace {

// Copies `n` elements of `bytes` bytes each from src[from(j)] to dst[j].
template <typename From>
void CopyElements(ThreadPool* pool, int64_t bytes, int64_t n, const void* src,
                  void* dst, From from) {
  auto run = [&](auto word) {
    using W = decltype(word);
    const W* s = static_cast<const W*>(src);
    W* d = static_cast<W*>(dst);
    pool->ParallelFor(n, 4, [&](int64_t begin, int64_t end) {
      for (int64_t j = begin; j < end; ++j) d[j] = s[from(j)];
    });
  };
  switch (bytes) {
    case 1:
      return run(uint8_t{});
    case 2:
      return run(uint16_t{});
    case 4:
      return run(uint32_t{});
    default:
      return run(uint64_t{});
  }
}

class GatherElementsKernel : public OpKernel {
 public:
  absl::Status Compute(OpKernelContext* ctx) override {
    const Tensor& x = ctx->input(0);
    const Tensor& indices = ctx->input(1);
    RN_ASSIGN_OR_RETURN(int64_t axis, ctx->node().attr<int64_t>("axis"));
    RN_ASSIGN_OR_RETURN(AlongAxisPlan plan,
                        PlanAlongAxis(x.shape(), indices, axis));
    RN_ASSIGN_OR_RETURN(Tensor * y, ctx->allocate_output(0, indices.shape()));
    CopyElements(ctx->intra_op_pool(), DTypeSize(x.dtype()),
                 indices.num_elements(), x.raw_data(), y->raw_data(),
                 [&](int64_t j) { return plan.target[j]; });
    return absl::OkStatus();
  }
};

class GatherNdKernel : public OpKernel {
 public:
  absl::Status Compute(OpKernelContext* ctx) override {
    const Tensor& x = ctx->input(0);
    RN_ASSIGN_OR_RETURN(int64_t batch, ctx->node().attr<int64_t>("batch_dims"));
    RN_ASSIGN_OR_RETURN(NdPlan plan, PlanNd(x.shape(), ctx->input(1), batch));
    RN_ASSIGN_OR_RETURN(Tensor * y, ctx->allocate_output(0, plan.output));
    const int64_t bytes = plan.slice * DTypeSize(x.dtype());
    const char* src = static_cast<const char*>(x.raw_data());
    char* dst = static_cast<char*>(y->raw_data());
    const int64_t esize = DTypeSize(x.dtype());
    ctx->intra_op_pool()->ParallelFor(
        static_cast<int64_t>(plan.target.size()), bytes / 4 + 5,
        [&](int64_t begin, int64_t end) {
          for (int64_t t = begin; t < end; ++t) {
            std::memcpy(dst + t * bytes, src + plan.target[t] * esize, bytes);
          }
        });
    return absl::OkStatus();
  }
};

// Integers as their unsigned twins, whose arithmetic wraps.
template <typename A>
auto Wrapping(A a) {
  if constexpr (std::is_integral_v<A>) {
    return static_cast<std::make_unsigned_t<A>>(a);
  } else {
    return a;
  }
}

// What a scatter's update does to the element there. Integers wrap, as
// their `add` and `mul` do; max and min keep a NaN from either side.
template <typename A>
A Combine(ScatterReduction how, A there, A update) {
  if constexpr (std::is_same_v<A, bool>) {
    return update;
  } else {
    switch (how) {
      case ScatterReduction::kAdd:
        return static_cast<A>(Wrapping(there) + Wrapping(update));
      case ScatterReduction::kMul:
        return static_cast<A>(Wrapping(there) * Wrapping(update));
      case ScatterReduction::kMax:
        return (update > there || update != update) ? update : there;
      case ScatterReduction::kMin:
        return (update < there || update != update) ? update : there;
      case ScatterReduction::kNone:
        break;
    }
    return update;
  }
}

// scatter_elements (kNd false) and scatter_nd (true): y = data, then each
// slice of updates (one element for scatter_elements) combined into y at
// its target, in order.
template <typename T, bool kNd>
class ScatterKernel : public OpKernel {
 public:
  absl::Status Init(const Node& node) override {
    RN_ASSIGN_OR_RETURN(attrs_, ScatterAttrs::Of(node, kNd));
    return absl::OkStatus();
  }

  absl::Status Compute(OpKernelContext* ctx) override {
    const Tensor& data = ctx->input(0);
    const Tensor& indices = ctx->input(1);
    const Tensor& updates = ctx->input(2);
    RN_ASSIGN_OR_RETURN(ScatterPlan plan,
                        PlanScatter(kNd, data.shape(), indices, updates.shape(),
                                    attrs_.at, attrs_.how));
    const int64_t slice = plan.slice;
    const std::vector<int64_t>& target = plan.target;
    bool forwarded = false;
    RN_ASSIGN_OR_RETURN(Tensor * y, ctx->forward_input_or_allocate(
                                        0, 0, data.shape(), &forwarded));
    if (!forwarded) {
      ParallelMemcpy(ctx->intra_op_pool(), y->raw_data(), data.raw_data(),
                     data.num_elements() * sizeof(T));
    }
    using E = EigenType<T>;
    using A = AccumType<T>;
    E* out = EigenMutableData<T>(y);
    const E* in = EigenData<T>(updates);
    for (size_t j = 0; j < target.size(); ++j) {
      E* dst = out + target[j];
      const E* src = in + static_cast<int64_t>(j) * slice;
      for (int64_t e = 0; e < slice; ++e) {
        dst[e] = static_cast<E>(Combine<A>(attrs_.how, static_cast<A>(dst[e]),
                                           static_cast<A>(src[e])));
      }
    }
    return absl::OkStatus();
  }

 private:
  ScatterAttrs attrs_;
};

template <typename T>
using ScatterElementsKernel = ScatterKernel<T, false>;
template <typename T>
using ScatterNdKernel = ScatterKernel<T, true>;

// top_k: each line's positions, the first k put in order by value (NaN
// first when largest, last when not), equal values by position.
template <typename T>
class TopKKernel : public OpKernel {
 public:
  absl::Status Init(const Node& node) override {
    RN_ASSIGN_OR_RETURN(attrs_, TopKAttrs::Of(node));
    return absl::OkStatus();
  }

  absl::Status Compute(OpKernelContext* ctx) override {
    const Tensor& x = ctx->input(0);
    RN_ASSIGN_OR_RETURN(TopKPlan plan, PlanTopK(x, ctx->input(1), attrs_.axis));
    const int axis = plan.axis;
    const int64_t k = plan.k;
    RN_ASSIGN_OR_RETURN(Tensor * values, ctx->allocate_output(0, plan.output));
    RN_ASSIGN_OR_RETURN(Tensor * indices, ctx->allocate_output(1, plan.output));
    if (k == 0) return absl::OkStatus();
    const AxisLines lines(x.shape(), axis);
    using A = AccumType<T>;
    const EigenType<T>* in = EigenData<T>(x);
    EigenType<T>* out = EigenMutableData<T>(values);
    int32_t* pos = indices->data<int32_t>();
    const bool largest = attrs_.largest;
    ctx->intra_op_pool()->ParallelFor(
        lines.count(), lines.len * 8, [&](int64_t begin, int64_t end) {
          std::vector<A> v(lines.len);
          std::vector<int32_t> order(lines.len);
          for (int64_t l = begin; l < end; ++l) {
            const int64_t s = lines.start(l);
            for (int64_t i = 0; i < lines.len; ++i) {
              v[i] = static_cast<A>(in[s + i * lines.inner]);
            }
            std::iota(order.begin(), order.end(), 0);
            auto before = [&](int32_t i, int32_t j) {
              const A a = v[i], b = v[j];
              const bool an = a != a, bn = b != b;  // NaN: the largest
              if (an != bn) return largest ? an : bn;
              if (!an && a != b) return largest ? a > b : a < b;
              return i < j;
            };
            std::partial_sort(order.begin(), order.begin() + k, order.end(),
                              before);
            const int64_t o =
                (l / lines.inner) * k * lines.inner + l % lines.inner;
            for (int64_t r = 0; r < k; ++r) {
              out[o + r * lines.inner] = static_cast<EigenType<T>>(v[order[r]]);
              pos[o + r * lines.inner] = order[r];
            }
          }
        });
    return absl::OkStatus();
  }

 private:
  TopKAttrs attrs_;
};

template <typename T>
class NonzeroKernel : public OpKernel {
 public:
  absl::Status Compute(OpKernelContext* ctx) override {
    const Tensor& x = ctx->input(0);
    const EigenType<T>* in = EigenData<T>(x);
    const int64_t n = x.num_elements();
    const auto zero = static_cast<EigenType<T>>(0);
    int64_t count = 0;
    for (int64_t j = 0; j < n; ++j) count += in[j] != zero;
    const int r = x.rank();
    RN_ASSIGN_OR_RETURN(Tensor * y, ctx->allocate_output(0, Shape{count, r}));
    int64_t* out = y->data<int64_t>();
    std::vector<int64_t> at(r, 0);
    for (int64_t j = 0; j < n; ++j) {
      if (in[j] != zero) {
        std::copy(at.begin(), at.end(), out);
        out += r;
      }
      for (int d = r - 1; d >= 0 && ++at[d] == x.dim(d); --d) at[d] = 0;
    }
    return absl::OkStatus();
  }
};

// unique_all: x's slices along the axis (its elements without one)
// sorted stably by value, NaN as one value above the rest; each run of
// equal slices is one distinct value, its first position the run's first.
template <typename T>
class UniqueAllKernel : public OpKernel {
 public:
  absl::Status Init(const Node& node) override {
    RN_ASSIGN_OR_RETURN(attrs_, UniqueAttrs::Of(node));
    return absl::OkStatus();
  }

  absl::Status Compute(OpKernelContext* ctx) override {
    const Tensor& x = ctx->input(0);
    RN_ASSIGN_OR_RETURN(const UniquePlan plan,
                        PlanUnique(x.shape(), attrs_.axis));
    const int64_t outer = plan.outer, n = plan.n, inner = plan.inner;
    using A = AccumType<T>;
    const EigenType<T>* in = EigenData<T>(x);
    auto at = [&](int64_t j, int64_t o, int64_t i) {
      return static_cast<A>(in[(o * n + j) * inner + i]);
    };
    // -1, 0, 1 as slice j is before, equal to or after slice k.
    auto compare = [&](int64_t j, int64_t k) {
      for (int64_t o = 0; o < outer; ++o) {
        for (int64_t i = 0; i < inner; ++i) {
          const A u = at(j, o, i), v = at(k, o, i);
          const bool un = u != u, vn = v != v;  // NaN: one value, the largest
          if (un || vn) {
            if (un != vn) return un ? 1 : -1;
          } else if (u != v) {
            return u < v ? -1 : 1;
          }
        }
      }
      return 0;
    };
    std::vector<int64_t> order(n);
    std::iota(order.begin(), order.end(), int64_t{0});
    std::stable_sort(order.begin(), order.end(),
                     [&](int64_t j, int64_t k) { return compare(j, k) < 0; });
    // Runs of equal slices: each one's first position and size, and the
    // run of each slice.
    std::vector<int64_t> first, count, run_of(n);
    for (int64_t r = 0; r < n; ++r) {
      if (r == 0 || compare(order[r - 1], order[r]) != 0) {
        first.push_back(order[r]);
        count.push_back(0);
      }
      ++count.back();
      run_of[order[r]] = static_cast<int64_t>(first.size()) - 1;
    }
    const int64_t m = static_cast<int64_t>(first.size());
    // The runs' output order: sorted, or by first appearance.
    std::vector<int64_t> rank(m);
    std::iota(rank.begin(), rank.end(), int64_t{0});
    if (!attrs_.sorted) {
      std::sort(rank.begin(), rank.end(),
                [&](int64_t p, int64_t q) { return first[p] < first[q]; });
    }
    std::vector<int64_t> place(m);  // run -> its output position
    for (int64_t p = 0; p < m; ++p) place[rank[p]] = p;
    RN_ASSIGN_OR_RETURN(Tensor * values,
                        ctx->allocate_output(0, plan.Values(x.shape(), m)));
    RN_ASSIGN_OR_RETURN(Tensor * positions, ctx->allocate_output(1, Shape{m}));
    RN_ASSIGN_OR_RETURN(Tensor * inverse, ctx->allocate_output(2, Shape{n}));
    RN_ASSIGN_OR_RETURN(Tensor * counts, ctx->allocate_output(3, Shape{m}));
    EigenType<T>* out = EigenMutableData<T>(values);
    for (int64_t p = 0; p < m; ++p) {
      const int64_t j = first[rank[p]];
      positions->data<int64_t>()[p] = j;
      counts->data<int64_t>()[p] = count[rank[p]];
      for (int64_t o = 0; o < outer; ++o) {
        for (int64_t i = 0; i < inner; ++i) {
          out[(o * m + p) * inner + i] = in[(o * n + j) * inner + i];
        }
      }
    }
    for (int64_t j = 0; j < n; ++j) {
      inverse->data<int64_t>()[j] = place[run_of[j]];
    }
    return absl::OkStatus();
  }

 private:
  UniqueAttrs attrs_;
};

RUNNEL_STATIC_INIT(IndexKernels) {
  RegisterKernelForTypeList<UniqueAllKernel>("unique_all", AllTypes{});
  RegisterKernelForAllTypes<GatherElementsKernel>("gather_elements");
  RegisterKernelForAllTypes<GatherNdKernel>("gather_nd");
  RegisterKernelForTypeList<ScatterElementsKernel>("scatter_elements",
                                                   AllTypes{});
  RegisterKernelForTypeList<ScatterNdKernel>("scatter_nd", AllTypes{});
  RegisterKernelForTypeList<TopKKernel>("top_k", NumericTypes{});
  RegisterKernelForTypeList<NonzeroKernel>("nonzero", AllTypes{});
}

}  // namespace
}  // namespace runnel
