// The kernel of `cast` (framework/ops/math_ops.cc) for every pair of dtypes.
//
// Registered per source dtype; the target comes from attribute `dtype`.
// Conversions: anything to bool is x != 0; floats to integers truncate
// toward zero and saturate, nan giving 0 (C++ leaves those undefined);
// integers to narrower integers wrap; to a 16-bit float via float.
#include <limits>
#include <type_traits>

#include "framework/kernel.h"
#include "kernels/cpu/broadcast.h"

namespace runnel {
namespace {

// Branch-free, so the blocked loop below vectorises.
template <typename To, typename From>
To SaturatingFloatToInt(From v) {
  constexpr To kLo = std::numeric_limits<To>::lowest();
  constexpr To kHi = std::numeric_limits<To>::max();
  constexpr From lo = static_cast<From>(kLo);
  // hi is kHi, or the power of two above it where From cannot hold kHi, so
  // c >= hi catches every value that would overflow.
  constexpr From hi = static_cast<From>(kHi);
  From c = v != v ? From(0) : v;
  c = c < lo ? lo : c;
  return c >= hi ? kHi : static_cast<To>(c);
}

template <typename From, typename To>
void CastRange(const From* in, To* out, int64_t n) {
  using C = AccumType<From>;
  if constexpr (kIsHalfLike<From> && std::is_same_v<To, float>) {
    WidenToFloat(in, out, n);
  } else if constexpr (kIsHalfLike<To> && std::is_same_v<From, float>) {
    NarrowFromFloat(in, out, n);
  } else if constexpr (kIsHalfLike<From> || kIsHalfLike<To>) {
    // Through float, a block at a time.
    float buf[kWidenBlock];
    for (int64_t off = 0; off < n; off += kWidenBlock) {
      const int64_t m = std::min(kWidenBlock, n - off);
      if constexpr (kIsHalfLike<From>) {
        WidenToFloat(in + off, buf, m);
        CastRange<float, To>(buf, out + off, m);
      } else {
        CastRange<From, float>(in + off, buf, m);
        NarrowFromFloat(buf, out + off, m);
      }
    }
  } else if constexpr (std::is_same_v<To, bool>) {
    OutArray(out, n) = InArray(in, n) != C(0);
  } else if constexpr (!std::is_integral_v<C> && std::is_integral_v<To>) {
    int64_t i = 0;
    for (; i + 8 <= n; i += 8) {
      for (int j = 0; j < 8; ++j) {
        out[i + j] = SaturatingFloatToInt<To>(in[i + j]);
      }
    }
    for (; i < n; ++i) out[i] = SaturatingFloatToInt<To>(in[i]);
  } else {
    Assign(OutArray(out, n), InArray(in, n));
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
