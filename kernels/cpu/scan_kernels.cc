// cumsum (framework/ops/math_ops.cc): running sums along one axis, each
// line on its own, in the accumulation type (the 16-bit floats in f32,
// rounded once per element, integers wrapping as their addition does).
#include <type_traits>

#include "framework/ops/kernel_checks.h"
#include "framework/shape_fns.h"
#include "kernels/common/array_util.h"
#include "kernels/cpu/broadcast.h"
#include "kernels/cpu/eigen_support.h"

namespace runnel {
namespace {

template <typename T>
class CumsumKernel : public OpKernel {
 public:
  absl::Status Init(const Node& node) override {
    RN_ASSIGN_OR_RETURN(attrs_, CumsumAttrs::Of(node));
    return absl::OkStatus();
  }

  absl::Status Compute(OpKernelContext* ctx) override {
    const Tensor& x = ctx->input(0);
    RN_ASSIGN_OR_RETURN(const int axis, NormalizeAxis(attrs_.axis, x.rank()));
    RN_ASSIGN_OR_RETURN(Tensor * y, ctx->allocate_output(0, x.shape()));
    if (x.num_elements() == 0) return absl::OkStatus();
    const AxisLines lines(x.shape(), axis);
    const EigenType<T>* in = EigenData<T>(x);
    EigenType<T>* out = EigenMutableData<T>(y);
    using A = AccumType<T>;
    ctx->intra_op_pool()->ParallelFor(
        lines.count(), lines.len * 2, [&](int64_t begin, int64_t end) {
          for (int64_t l = begin; l < end; ++l) {
            const int64_t s = lines.start(l);
            A sum = A(0);
            for (int64_t k = 0; k < lines.len; ++k) {
              const int64_t j = attrs_.reverse ? lines.len - 1 - k : k;
              const int64_t at = s + j * lines.inner;
              const A v = static_cast<A>(in[at]);
              if (!attrs_.exclusive) sum = Add(sum, v);
              out[at] = static_cast<EigenType<T>>(sum);
              if (attrs_.exclusive) sum = Add(sum, v);
            }
          }
        });
    return absl::OkStatus();
  }

 private:
  // Integer sums wrap, as the integers' `add` does; no signed overflow.
  static AccumType<T> Add(AccumType<T> a, AccumType<T> b) {
    using A = AccumType<T>;
    if constexpr (std::is_integral_v<A> && std::is_signed_v<A>) {
      using U = std::make_unsigned_t<A>;
      return static_cast<A>(static_cast<U>(a) + static_cast<U>(b));
    } else {
      return a + b;
    }
  }

  CumsumAttrs attrs_;
};

RUNNEL_STATIC_INIT(ScanKernels) {
  RegisterKernelForTypeList<CumsumKernel>("cumsum", NumericTypes{});
}

}  // namespace
}  // namespace runnel
