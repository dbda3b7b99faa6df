// Kernels of the creation ops (framework/ops/array_ops.cc): range, eye and
// one_hot. fill, zeros_like and ones_like share the GPU's kernels
// (kernels/common/array_kernels.h, registered in array_kernels.cc).
#include <cstring>

#include "base/strings.h"
#include "framework/kernel.h"
#include "kernels/common/array_util.h"

namespace runnel {
namespace {

// Every element of output 0 set to the element at `value`.
absl::Status FillOutput(OpKernelContext* ctx, const Shape& shape,
                        const void* value) {
  RN_ASSIGN_OR_RETURN(Tensor * y, ctx->allocate_output(0, shape));
  FillElements(ctx->intra_op_pool(), y->raw_data(), y->num_elements(), value,
               DTypeSize(y->dtype()));
  return absl::OkStatus();
}

template <typename T>
class RangeKernel : public OpKernel {
 public:
  absl::Status Compute(OpKernelContext* ctx) override {
    RN_ASSIGN_OR_RETURN(Shape shape, ConcreteOutputShape(*ctx));
    RN_ASSIGN_OR_RETURN(Tensor * y, ctx->allocate_output(0, shape));
    T* out = y->data<T>();
    const int64_t n = y->num_elements();
    if constexpr (std::is_integral_v<T>) {
      const int64_t start = ctx->input(0).data<T>()[0];
      const int64_t delta = ctx->input(2).data<T>()[0];
      for (int64_t i = 0; i < n; ++i)
        out[i] = static_cast<T>(start + i * delta);
    } else {
      // In double, so that each element is the nearest to its exact value.
      const double start = ToDouble(ctx->input(0).data<T>()[0]);
      const double delta = ToDouble(ctx->input(2).data<T>()[0]);
      for (int64_t i = 0; i < n; ++i) out[i] = FromDouble<T>(start + i * delta);
    }
    return absl::OkStatus();
  }
};

class EyeKernel : public OpKernel {
 public:
  absl::Status Compute(OpKernelContext* ctx) override {
    RN_ASSIGN_OR_RETURN(Shape shape, ConcreteOutputShape(*ctx));
    const Tensor zero = Tensor::ScalarOf(ctx->output_dtype(0), 0);
    const Tensor one = Tensor::ScalarOf(ctx->output_dtype(0), 1);
    RN_RETURN_IF_ERROR(FillOutput(ctx, shape, zero.raw_data()));
    const size_t esz = DTypeSize(ctx->output_dtype(0));
    char* out = static_cast<char*>(ctx->output(0).raw_data());
    const int64_t n = shape.dim(0), m = shape.dim(1);
    for (int64_t i = 0; i < std::min(n, m); ++i) {
      std::memcpy(out + (i * m + i) * esz, one.raw_data(), esz);
    }
    return absl::OkStatus();
  }
};

class OneHotKernel : public OpKernel {
 public:
  absl::Status Init(const Node& node) override {
    RN_ASSIGN_OR_RETURN(a_, OneHotAttrs::Of(node));
    return absl::OkStatus();
  }
  absl::Status Compute(OpKernelContext* ctx) override {
    const Tensor& indices = ctx->input(0);
    RN_ASSIGN_OR_RETURN(Shape shape, ConcreteOutputShape(*ctx));
    RN_RETURN_IF_ERROR(FillOutput(ctx, shape, a_.off.raw_data()));
    const int64_t inner = a_.OuterInner(indices).second;
    const int64_t depth = a_.depth;
    const size_t esz = DTypeSize(ctx->output_dtype(0));
    char* out = static_cast<char*>(ctx->output(0).raw_data());
    VisitDType(indices.dtype(), [&](auto zero) {
      using T = decltype(zero);
      if constexpr (std::is_integral_v<T>) {
        const T* idx = indices.data<T>();
        for (int64_t e = 0; e < indices.num_elements(); ++e) {
          const int64_t d = idx[e];
          if (d < 0 || d >= depth) continue;  // a row of off_value
          const int64_t o = e / inner, i = e % inner;
          std::memcpy(out + ((o * depth + d) * inner + i) * esz,
                      a_.on.raw_data(), esz);
        }
      }
    });
    return absl::OkStatus();
  }

 private:
  OneHotAttrs a_;
};

RUNNEL_STATIC_INIT(CreationKernels) {
  RegisterKernelForTypes<RangeKernel, Half, BFloat16, float, double, int8_t,
                         uint8_t, int32_t, int64_t>("range");
  RegisterKernelForAllTypes<EyeKernel>("eye");
  RegisterKernelForAllTypes<OneHotKernel>("one_hot");
}

}  // namespace
}  // namespace runnel
