// Kernels of the slicing ops (framework/ops/array_ops.cc): slice,
// strided_slice, dynamic_index, gather and pad. They move bytes, so one
// kernel serves every dtype.
#include <cstring>
#include <type_traits>

#include "base/strings.h"
#include "framework/kernel.h"
#include "framework/ops/array_ops.h"
#include "framework/shape_fns.h"
#include "kernels/common/array_util.h"

namespace runnel {
namespace {

// Copies the block of `x` at `begin` (per axis) with steps `step` and
// extent `size` into `y`, whose layout is row-major over `size`.
void CopyBlock(ThreadPool* pool, const Tensor& x,
               const std::vector<int64_t>& begin,
               const std::vector<int64_t>& step,
               const std::vector<int64_t>& size, Tensor* y) {
  if (y->num_elements() == 0) return;
  const size_t esz = DTypeSize(x.dtype());
  std::vector<int64_t> strides = RowMajorStrides(x.shape());
  int64_t offset = 0;
  std::vector<int64_t> src(x.rank());
  for (int k = 0; k < x.rank(); ++k) {
    offset += begin[k] * strides[k];
    src[k] = step[k] * strides[k];
  }
  StridedCopy(pool, esz, size,
              static_cast<const char*>(x.raw_data()) +
                  offset * static_cast<int64_t>(esz),
              src, y->raw_data(), RowMajorStrides(size));
}

class SliceKernel : public OpKernel {
 public:
  absl::Status Compute(OpKernelContext* ctx) override {
    const Tensor& x = ctx->input(0);
    RN_ASSIGN_OR_RETURN(Shape shape, ConcreteOutputShape(*ctx));
    if (shape == x.shape()) return ctx->set_output(0, x);
    RN_ASSIGN_OR_RETURN(Tensor * y, ctx->allocate_output(0, shape));
    CopyBlock(ctx->intra_op_pool(), x, ctx->input(1).ToInt64s(),
              std::vector<int64_t>(x.rank(), 1), shape.dims(), y);
    return absl::OkStatus();
  }
};

class StridedSliceKernel : public OpKernel {
 public:
  absl::Status Compute(OpKernelContext* ctx) override {
    const Tensor& x = ctx->input(0);
    absl::StatusOr<StridedSlicePlan> plan =
        PlanStridedSlice(x.shape(), ctx->node().attrs());
    if (!plan.ok()) {
      return absl::Status(plan.status().code(),
                          StrCat("strided_slice: ", plan.status().message()));
    }
    if (plan->size == x.shape().dims() &&
        plan->stride == std::vector<int64_t>(x.rank(), 1)) {
      RN_ASSIGN_OR_RETURN(Tensor view, x.Reshaped(plan->output));
      return ctx->set_output(0, std::move(view));
    }
    RN_ASSIGN_OR_RETURN(Tensor * y, ctx->allocate_output(0, plan->output));
    CopyBlock(ctx->intra_op_pool(), x, plan->begin, plan->stride, plan->size,
              y);
    return absl::OkStatus();
  }
};

class DynamicIndexKernel : public OpKernel {
 public:
  absl::Status Compute(OpKernelContext* ctx) override {
    const Tensor& x = ctx->input(0);
    RN_ASSIGN_OR_RETURN(Shape shape, ConcreteOutputShape(*ctx));
    RN_ASSIGN_OR_RETURN(int64_t i, AxisPosition(ctx->input(1), x.dim(0)));
    RN_ASSIGN_OR_RETURN(Tensor * y, ctx->allocate_output(0, shape));
    ParallelMemcpy(ctx->intra_op_pool(), y->raw_data(),
                   static_cast<const char*>(x.raw_data()) + i * y->bytes(),
                   y->bytes());
    return absl::OkStatus();
  }
};

// Output 0 of dynamic_update_index / dynamic_index_add: x, in x's own
// buffer when the executor hands it over (a scan's accumulator, a loop
// gradient's sum), so a step costs one row; and which row the value goes
// to. The value must fit one row of x.
absl::StatusOr<std::pair<Tensor*, int64_t>> RowUpdate(OpKernelContext* ctx) {
  const Tensor& x = ctx->input(0);
  RN_ASSIGN_OR_RETURN(int64_t i,
                      RowUpdatePosition(x, ctx->input(1), ctx->input(2)));
  bool forwarded = false;
  RN_ASSIGN_OR_RETURN(
      Tensor * y, ctx->forward_input_or_allocate(0, 0, x.shape(), &forwarded));
  if (!forwarded) {
    ParallelMemcpy(ctx->intra_op_pool(), y->raw_data(), x.raw_data(),
                   x.bytes());
  }
  return std::make_pair(y, i);
}

// dynamic_update_index(x, index, value): x[index] = value.
class DynamicUpdateIndexKernel : public OpKernel {
 public:
  absl::Status Compute(OpKernelContext* ctx) override {
    RN_ASSIGN_OR_RETURN(auto at, RowUpdate(ctx));
    const Tensor& value = ctx->input(2);
    ParallelMemcpy(
        ctx->intra_op_pool(),
        static_cast<char*>(at.first->raw_data()) + at.second * value.bytes(),
        value.raw_data(), value.bytes());
    return absl::OkStatus();
  }
};

// dynamic_index_add(x, index, value): x[index] += value.
template <typename T>
class DynamicIndexAddKernel : public OpKernel {
 public:
  absl::Status Compute(OpKernelContext* ctx) override {
    RN_ASSIGN_OR_RETURN(auto at, RowUpdate(ctx));
    const Tensor& value = ctx->input(2);
    const int64_t n = value.num_elements();
    T* row = at.first->data<T>() + at.second * n;
    const T* v = value.data<T>();
    for (int64_t k = 0; k < n; ++k) row[k] += v[k];
    return absl::OkStatus();
  }
};

// dynamic_update_index_grad(dy, index) -> (dy with row index zeroed, that
// row), the first in dy's buffer when nothing else holds it.
class DynamicUpdateIndexGradKernel : public OpKernel {
 public:
  absl::Status Compute(OpKernelContext* ctx) override {
    const Tensor& dy = ctx->input(0);
    RN_ASSIGN_OR_RETURN(int64_t i, RowPosition(dy, ctx->input(1)));
    std::vector<int64_t> row_dims(dy.shape().dims().begin() + 1,
                                  dy.shape().dims().end());
    RN_ASSIGN_OR_RETURN(Tensor * row,
                        ctx->allocate_output(1, Shape(std::move(row_dims))));
    char* at = static_cast<char*>(dy.raw_data()) + i * row->bytes();
    ParallelMemcpy(ctx->intra_op_pool(), row->raw_data(), at, row->bytes());
    bool forwarded = false;
    RN_ASSIGN_OR_RETURN(Tensor * dx, ctx->forward_input_or_allocate(
                                         0, 0, dy.shape(), &forwarded));
    if (!forwarded) {
      ParallelMemcpy(ctx->intra_op_pool(), dx->raw_data(), dy.raw_data(),
                     dy.bytes());
    }
    std::memset(static_cast<char*>(dx->raw_data()) + i * row->bytes(), 0,
                row->bytes());
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

class PadKernel : public OpKernel {
 public:
  absl::Status Compute(OpKernelContext* ctx) override {
    const Tensor& x = ctx->input(0);
    RN_ASSIGN_OR_RETURN(Shape shape, ConcreteOutputShape(*ctx));
    if (shape == x.shape()) return ctx->set_output(0, x);
    RN_ASSIGN_OR_RETURN(Tensor * y, ctx->allocate_output(0, shape));
    const size_t esz = DTypeSize(x.dtype());
    FillElements(ctx->intra_op_pool(), y->raw_data(), y->num_elements(),
                 ctx->input(2).raw_data(), esz);
    if (x.num_elements() == 0) return absl::OkStatus();
    const std::vector<int64_t> pads = ctx->input(1).ToInt64s();
    const std::vector<int64_t> strides = RowMajorStrides(shape);
    int64_t offset = 0;
    for (int k = 0; k < x.rank(); ++k) offset += pads[2 * k] * strides[k];
    StridedCopy(
        ctx->intra_op_pool(), esz, x.shape().dims(), x.raw_data(),
        RowMajorStrides(x.shape()),
        static_cast<char*>(y->raw_data()) + offset * static_cast<int64_t>(esz),
        strides);
    return absl::OkStatus();
  }
};

RUNNEL_STATIC_INIT(SliceKernels) {
  RegisterKernelForAllTypes<SliceKernel>("slice");
  RegisterKernelForAllTypes<StridedSliceKernel>("strided_slice");
  RegisterKernelForAllTypes<DynamicIndexKernel>("dynamic_index");
  RegisterKernelForAllTypes<DynamicUpdateIndexKernel>("dynamic_update_index");
  RegisterKernelForAllTypes<DynamicUpdateIndexGradKernel>(
      "dynamic_update_index_grad");
  RegisterKernelForTypes<DynamicIndexAddKernel, float, double, int32_t,
                         int64_t>("dynamic_index_add");
  RegisterKernelForAllTypes<GatherKernel>("gather");
  RegisterKernelForAllTypes<PadKernel>("pad");
}

}  // namespace
}  // namespace runnel
