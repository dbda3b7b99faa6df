// Kernels of unique, unsorted_segment_sum, dynamic_partition and
// dynamic_stitch (framework/ops/sparse_ops.cc). They move rows: the slices
// of a tensor below the dimensions its index tensor covers.
#include <algorithm>
#include <cstring>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "base/strings.h"
#include "framework/kernel.h"
#include "kernels/common/array_util.h"
#include "kernels/cpu/eigen_types.h"

namespace runnel {
namespace {

Shape WithRows(int64_t rows, const std::vector<int64_t>& row_dims) {
  std::vector<int64_t> dims{rows};
  dims.insert(dims.end(), row_dims.begin(), row_dims.end());
  return Shape(std::move(dims));
}

int64_t RowBytes(const std::vector<int64_t>& row_dims, DType dtype) {
  int64_t n = static_cast<int64_t>(DTypeSize(dtype));
  for (int64_t d : row_dims) n *= d;
  return n;
}

template <typename T>
class UniqueKernel : public OpKernel {
 public:
  absl::Status Compute(OpKernelContext* ctx) override {
    const Tensor& x = ctx->input(0);
    const T* v = x.data<T>();
    const int64_t n = x.num_elements();
    absl::flat_hash_map<T, int32_t> position;
    std::vector<T> distinct;
    RN_ASSIGN_OR_RETURN(Tensor * idx, ctx->allocate_output(1, Shape{n}));
    int32_t* out_idx = idx->data<int32_t>();
    for (int64_t i = 0; i < n; ++i) {
      auto [it, fresh] =
          position.try_emplace(v[i], static_cast<int32_t>(distinct.size()));
      if (fresh) distinct.push_back(v[i]);
      out_idx[i] = it->second;
    }
    const int64_t m = static_cast<int64_t>(distinct.size());
    RN_ASSIGN_OR_RETURN(Tensor * y, ctx->allocate_output(0, Shape{m}));
    if (m > 0) std::memcpy(y->raw_data(), distinct.data(), m * sizeof(T));
    return absl::OkStatus();
  }
};

template <typename T>
class SegmentSumKernel : public OpKernel {
 public:
  absl::Status Compute(OpKernelContext* ctx) override {
    const Tensor& data = ctx->input(0);
    RN_ASSIGN_OR_RETURN(SegmentSumPlan plan,
                        PlanSegmentSum(data, ctx->input(1), ctx->input(2)));
    const int64_t num = plan.num, row = plan.row_size();
    const std::vector<int64_t>& ids = plan.ids;
    RN_ASSIGN_OR_RETURN(Tensor * y,
                        ctx->allocate_output(0, plan.output_shape()));
    using A = AccumType<T>;
    std::vector<A> sum(static_cast<size_t>(num * row), A(0));
    const auto* src = reinterpret_cast<const EigenType<T>*>(data.raw_data());
    for (size_t j = 0; j < ids.size(); ++j) {
      A* dst = sum.data() + ids[j] * row;
      const auto* s = src + static_cast<int64_t>(j) * row;
      for (int64_t k = 0; k < row; ++k) dst[k] += static_cast<A>(s[k]);
    }
    auto* out = reinterpret_cast<EigenType<T>*>(y->raw_data());
    for (size_t i = 0; i < sum.size(); ++i) {
      out[i] = static_cast<EigenType<T>>(sum[i]);
    }
    return absl::OkStatus();
  }
};

class PartitionKernel : public OpKernel {
 public:
  absl::Status Compute(OpKernelContext* ctx) override {
    const Tensor& x = ctx->input(0);
    const Tensor& parts = ctx->input(1);
    const int n = ctx->num_outputs();
    RN_ASSIGN_OR_RETURN(std::vector<int64_t> row_dims,
                        RowDims(x, parts, "partitions"));
    const int32_t* p = parts.data<int32_t>();
    const int64_t m = parts.num_elements();
    std::vector<int64_t> count(n, 0);
    for (int64_t j = 0; j < m; ++j) {
      if (p[j] < 0 || p[j] >= n) {
        return absl::InvalidArgumentError(
            StrCat("partition ", p[j], " (partitions[", j,
                   "]) is out of range [0, ", n, ")"));
      }
      ++count[p[j]];
    }
    const int64_t bytes = RowBytes(row_dims, x.dtype());
    std::vector<char*> dst(n);
    for (int i = 0; i < n; ++i) {
      RN_ASSIGN_OR_RETURN(
          Tensor * out, ctx->allocate_output(i, WithRows(count[i], row_dims)));
      dst[i] = static_cast<char*>(out->raw_data());
    }
    const char* src = static_cast<const char*>(x.raw_data());
    for (int64_t j = 0; j < m; ++j) {
      std::memcpy(dst[p[j]], src + j * bytes, bytes);
      dst[p[j]] += bytes;
    }
    return absl::OkStatus();
  }
};

class StitchKernel : public OpKernel {
 public:
  absl::Status Compute(OpKernelContext* ctx) override {
    const int n = ctx->num_inputs() / 2;
    std::vector<int64_t> row_dims;
    int64_t rows = 0;
    for (int m = 0; m < n; ++m) {
      RN_ASSIGN_OR_RETURN(
          std::vector<int64_t> r,
          RowDims(ctx->input(m), ctx->input(n + m), StrCat("indices_", m)));
      if (m == 0) {
        row_dims = r;
      } else if (r != row_dims) {
        return absl::InvalidArgumentError(StrCat(
            "the rows of values_", m, " ", Shape(r).ToString(),
            " differ from those of values_0 ", Shape(row_dims).ToString()));
      }
      const Tensor& idx = ctx->input(n + m);
      const int32_t* ix = idx.data<int32_t>();
      for (int64_t j = 0; j < idx.num_elements(); ++j) {
        if (ix[j] < 0) {
          return absl::InvalidArgumentError(StrCat(
              "index ", ix[j], " (indices_", m, "[", j, "]) is negative"));
        }
        rows = std::max<int64_t>(rows, int64_t{ix[j]} + 1);
      }
    }
    RN_ASSIGN_OR_RETURN(Tensor * y,
                        ctx->allocate_output(0, WithRows(rows, row_dims)));
    const int64_t bytes = RowBytes(row_dims, y->dtype());
    char* dst = static_cast<char*>(y->raw_data());
    std::memset(dst, 0, y->bytes());
    for (int m = 0; m < n; ++m) {
      const Tensor& idx = ctx->input(n + m);
      const int32_t* ix = idx.data<int32_t>();
      const char* src = static_cast<const char*>(ctx->input(m).raw_data());
      for (int64_t j = 0; j < idx.num_elements(); ++j) {
        std::memcpy(dst + ix[j] * bytes, src + j * bytes, bytes);
      }
    }
    return absl::OkStatus();
  }
};

RUNNEL_STATIC_INIT(SparseKernels) {
  RegisterKernelForTypes<UniqueKernel, int32_t, int64_t>("unique");
  // A GPU's unique (see sparse_kernels.h): its outputs are indices, which
  // the GPU's kernels read on the host, so it works in host memory.
  RegisterKernelForTypes<UniqueKernel, int32_t, int64_t>(
      "unique", kDeviceGpu, {.inputs = {0}, .outputs = {0, 1}});
  RegisterKernelForTypes<SegmentSumKernel, Half, BFloat16, float, double,
                         int32_t, int64_t>("unsorted_segment_sum");
  RegisterKernelForAllTypes<PartitionKernel>("dynamic_partition");
  RegisterKernelForAllTypes<StitchKernel>("dynamic_stitch");
}

}  // namespace
}  // namespace runnel
