// The kernel of `cast` (runtime/ops/math_ops.cc) for every pair of dtypes.
//
// Registered per source dtype; the target comes from attribute `dtype`.
// Conversions: anything to bool is x != 0; floats to integers truncate
// toward zero and saturate, nan giving 0 (C++ leaves those undefined);
// integers to narrower integers wrap; to a 16-bit float via float.
#include <limits>
#include <type_traits>

#include "kernels/cpu/broadcast.h"
#include "runtime/kernel.h"

namespace runnel {
namespace {

template <typename To, typename From>
To SaturatingFloatToInt(From v) {
  constexpr To kLo = std::numeric_limits<To>::lowest();
  constexpr To kHi = std::numeric_limits<To>::max();
  if (v != v) return 0;
  if (v <= static_cast<From>(kLo)) return kLo;
  // kHi rounds up to a power of two in From, so >= catches all overflow.
  if (v >= static_cast<From>(kHi)) return kHi;
  return static_cast<To>(v);
}

template <typename From, typename To>
void CastRange(const From* in, To* out, int64_t n) {
  using C = ComputeT<From>;
  if constexpr (std::is_same_v<To, bool>) {
    OutArray(out, n) = Load<C>(in, n) != C(0);
  } else if constexpr (!std::is_integral_v<C> && std::is_integral_v<To>) {
    for (int64_t i = 0; i < n; ++i) {
      out[i] = SaturatingFloatToInt<To>(LoadScalar<C>(in + i));
    }
  } else if constexpr (kIsHalfLike<To> && !std::is_same_v<C, float>) {
    Assign(OutArray(out, n), Load<C>(in, n).template cast<float>());
  } else {
    Assign(OutArray(out, n), Load<C>(in, n));
  }
}

template <typename From>
class CastKernel : public OpKernel {
 public:
  absl::Status Init(const Node& node) override {
    RN_ASSIGN_OR_RETURN(to_, node.attr<DType>("dtype"));
    return absl::OkStatus();
  }

  absl::Status Compute(OpKernelContext* ctx) override {
    const Tensor& x = ctx->input(0);
    if (to_ == x.dtype()) return ctx->set_output(0, x);
    RN_ASSIGN_OR_RETURN(Tensor * y, ctx->allocate_output(0, x.shape()));
    const From* in = x.data<From>();
    VisitDType(to_, [&](auto zero) {
      using To = decltype(zero);
      To* out = y->data<To>();
      ctx->intra_op_pool()->ParallelFor(
          x.num_elements(), /*cost=*/2, [&](int64_t begin, int64_t end) {
            CastRange<From, To>(in + begin, out + begin, end - begin);
          });
    });
    return absl::OkStatus();
  }

 private:
  DType to_ = DType::kF32;
};

RUNNEL_STATIC_INIT(CwiseCastKernels) {
  RegisterKernelForTypeList<CastKernel>("cast", AllTypes{});
}

}  // namespace
}  // namespace runnel
