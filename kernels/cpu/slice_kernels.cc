// The CPU's kernels of gather and dynamic_index_add (framework/ops/
// array_ops.cc). The other slicing ops' kernels are shared with the GPU
// (kernels/common/array_kernels.h, registered in array_kernels.cc).
#include <cstring>
#include <type_traits>

#include "base/strings.h"
#include "framework/kernel.h"
#include "framework/ops/array_ops.h"
#include "framework/shape_fns.h"
#include "kernels/common/array_kernels.h"
#include "kernels/common/array_util.h"
#include "kernels/cpu/array_primitives.h"

namespace runnel {
namespace {

// dynamic_index_add(x, index, value): x[index] += value.
template <typename T>
class DynamicIndexAddKernel : public OpKernel {
 public:
  absl::Status Compute(OpKernelContext* ctx) override {
    RN_ASSIGN_OR_RETURN(auto at, array_kernels::RowUpdate<CpuArrays>(ctx));
    const Tensor& value = ctx->input(2);
    const int64_t n = value.num_elements();
    T* row = at.first->data<T>() + at.second * n;
    const T* v = value.data<T>();
    for (int64_t k = 0; k < n; ++k) row[k] += v[k];
    return absl::OkStatus();
  }
};

class GatherKernel : public OpKernel {
 public:
  absl::Status Compute(OpKernelContext* ctx) override {
    const Tensor& params = ctx->input(0);
    const Tensor& indices = ctx->input(1);
    RN_ASSIGN_OR_RETURN(Shape shape, ConcreteOutputShape(*ctx));
    RN_ASSIGN_OR_RETURN(int64_t axis, ctx->node().attr<int64_t>("axis"));
    RN_ASSIGN_OR_RETURN(int a, NormalizeAxis(axis, params.rank()));
    int64_t outer = 1, inner = DTypeSize(params.dtype());
    for (int k = 0; k < a; ++k) outer *= params.dim(k);
    for (int k = a + 1; k < params.rank(); ++k) inner *= params.dim(k);
    const int64_t n = params.dim(a);
    const std::vector<int64_t> idx = indices.ToInt64s();
    const int64_t m = static_cast<int64_t>(idx.size());
    RN_RETURN_IF_ERROR(CheckGatherIndices(idx, n, a, params.shape()));
    RN_ASSIGN_OR_RETURN(Tensor * y, ctx->allocate_output(0, shape));
    const char* src = static_cast<const char*>(params.raw_data());
    char* dst = static_cast<char*>(y->raw_data());
    // Rows of a fixed small size copy much faster than through memcpy's
    // generic path.
    auto copy_rows = [&](auto fixed) {
      constexpr int64_t kBytes = decltype(fixed)::value;
      const int64_t bytes = kBytes > 0 ? kBytes : inner;
      ctx->intra_op_pool()->ParallelFor(
          outer * m, bytes / 4 + 5, [&](int64_t begin, int64_t end) {
            int64_t o = begin / m, j = begin % m;
            for (int64_t w = begin; w < end; ++w) {
              std::memcpy(dst + w * bytes, src + (o * n + idx[j]) * bytes,
                          kBytes > 0 ? kBytes : bytes);
              if (++j == m) {
                j = 0;
                ++o;
              }
            }
          });
    };
    switch (inner) {
      case 1:
        copy_rows(std::integral_constant<int64_t, 1>());
        break;
      case 2:
        copy_rows(std::integral_constant<int64_t, 2>());
        break;
      case 4:
        copy_rows(std::integral_constant<int64_t, 4>());
        break;
      case 8:
        copy_rows(std::integral_constant<int64_t, 8>());
        break;
      default:
        copy_rows(std::integral_constant<int64_t, 0>());
    }
    return absl::OkStatus();
  }
};

RUNNEL_STATIC_INIT(SliceKernels) {
  RegisterKernelForTypes<DynamicIndexAddKernel, float, double, int32_t,
                         int64_t>("dynamic_index_add");
  RegisterKernelForAllTypes<GatherKernel>("gather");
}

}  // namespace
}  // namespace runnel
