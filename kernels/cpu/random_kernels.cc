// Kernels of the random ops (framework/ops/random_ops.cc). Element i of a run
// is sampled from counter `first + i` of the node's stream, where the run
// reserved [first, first + n) from the node's RandomCounter; the values are
// therefore the same whatever the number of threads.
#include <algorithm>
#include <bit>

#include "base/philox.h"
#include "base/random.h"
#include "base/strings.h"
#include "framework/kernel.h"
#include "framework/ops/kernel_checks.h"
#include "kernels/common/array_util.h"
#include "kernels/common/random_util.h"
#include "kernels/cpu/eigen_types.h"

namespace runnel {
namespace {

// Rough cycles to sample one element, for ParallelFor.
constexpr int64_t kUniformCost = 40;
constexpr int64_t kNormalCost = 150;

class RandomKernel : public OpKernel {
 public:
  absl::Status Init(const Node& node) override {
    RN_ASSIGN_OR_RETURN(seed_, node.attr<int64_t>("seed"));
    return absl::OkStatus();
  }

 protected:
  // Reserves `n` draws of this node's stream.
  absl::StatusOr<RandomSampler> Reserve(OpKernelContext* ctx, int64_t n) {
    return ReserveSamples(ctx, seed_, n);
  }

  // Allocates output 0 (its shape from the `shape` input) and sets element
  // i to sample(sampler, i).
  template <typename T, typename Fn>
  absl::Status Sample(OpKernelContext* ctx, int64_t cost, Fn sample) {
    RN_ASSIGN_OR_RETURN(Shape shape, ConcreteOutputShape(*ctx));
    RN_ASSIGN_OR_RETURN(Tensor * y, ctx->allocate_output(0, shape));
    const int64_t n = y->num_elements();
    RN_ASSIGN_OR_RETURN(RandomSampler sampler, Reserve(ctx, n));
    T* out = y->data<T>();
    ctx->intra_op_pool()->ParallelFor(n, cost, [&](int64_t b, int64_t e) {
      for (int64_t i = b; i < e; ++i) out[i] = sample(sampler, i);
    });
    return absl::OkStatus();
  }

 private:
  int64_t seed_ = -1;
};

// random_normal (kTruncated false) and truncated_normal (true).
template <typename T, bool kTruncated>
class NormalKernel : public RandomKernel {
 public:
  absl::Status Init(const Node& node) override {
    RN_RETURN_IF_ERROR(RandomKernel::Init(node));
    RN_ASSIGN_OR_RETURN(mean_, node.attr<double>("mean"));
    RN_ASSIGN_OR_RETURN(stddev_, node.attr<double>("stddev"));
    return absl::OkStatus();
  }
  absl::Status Compute(OpKernelContext* ctx) override {
    return Sample<T>(
        ctx, kNormalCost, [this](const RandomSampler& s, int64_t i) {
          double z = kTruncated ? s.TruncatedNormal(i) : s.Normal(i);
          return FromDouble<T>(philox::Affine(z, stddev_, mean_));
        });
  }

 private:
  double mean_ = 0, stddev_ = 1;
};

template <typename T>
using RandomNormalKernel = NormalKernel<T, false>;
template <typename T>
using TruncatedNormalKernel = NormalKernel<T, true>;

template <typename T>
class RandomUniformKernel : public RandomKernel {
 public:
  absl::Status Init(const Node& node) override {
    RN_RETURN_IF_ERROR(RandomKernel::Init(node));
    RN_ASSIGN_OR_RETURN(r_, UniformRangeOf<T>(node));
    below_max_ = FromDouble<T>(r_.below_max);
    return absl::OkStatus();
  }
  absl::Status Compute(OpKernelContext* ctx) override {
    if constexpr (std::is_integral_v<T>) {
      return Sample<T>(
          ctx, kUniformCost, [this](const RandomSampler& s, int64_t i) {
            return static_cast<T>(static_cast<uint64_t>(r_.min_int) +
                                  s.UniformInt(i, r_.range));
          });
    } else {
      return Sample<T>(
          ctx, kUniformCost, [this](const RandomSampler& s, int64_t i) {
            double v = philox::Affine(s.Uniform(i), r_.max - r_.min, r_.min);
            T t = FromDouble<T>(v);
            // Rounding to T may reach maxval, which is excluded.
            return r_.max > r_.min && ToDouble(t) >= r_.max ? below_max_ : t;
          });
    }
  }

 private:
  UniformRange r_;
  T below_max_{};
};

// Outputs y and scale, with y = x * scale computed in x's dtype the way
// mul computes it, so the gradient dy * scale matches y exactly.
template <typename T>
class DropoutKernel : public RandomKernel {
 public:
  absl::Status Compute(OpKernelContext* ctx) override {
    const Tensor& x = ctx->input(0);
    const double rate = ToDouble(ctx->input(1).data<T>()[0]);
    const bool training = ctx->input(2).data<bool>()[0];
    RN_RETURN_IF_ERROR(CheckDropoutRate(rate));
    const int64_t n = x.num_elements();
    RN_ASSIGN_OR_RETURN(Tensor * scale, ctx->allocate_output(1, x.shape()));
    T* s = scale->data<T>();
    if (!training || rate == 0) {
      const T one = FromDouble<T>(1);
      ctx->intra_op_pool()->ParallelFor(
          n, 1, [&](int64_t b, int64_t e) { std::fill(s + b, s + e, one); });
      return ctx->set_output(0, x);
    }
    RN_ASSIGN_OR_RETURN(Tensor * y, ctx->allocate_output(0, x.shape()));
    RN_ASSIGN_OR_RETURN(RandomSampler sampler, Reserve(ctx, n));
    using A = AccumType<T>;
    const T kept = FromDouble<T>(1.0 / (1.0 - rate));
    const A kept_a = static_cast<A>(std::bit_cast<EigenType<T>>(kept));
    const T zero = FromDouble<T>(0);
    const auto* in = reinterpret_cast<const EigenType<T>*>(x.data<T>());
    auto* out = reinterpret_cast<EigenType<T>*>(y->data<T>());
    ctx->intra_op_pool()->ParallelFor(
        n, kUniformCost, [&](int64_t b, int64_t e) {
          for (int64_t i = b; i < e; ++i) {
            if (sampler.Uniform(i) < rate) {
              s[i] = zero;
              out[i] = EigenType<T>(0);
            } else {
              s[i] = kept;
              out[i] =
                  static_cast<EigenType<T>>(static_cast<A>(in[i]) * kept_a);
            }
          }
        });
    return absl::OkStatus();
  }
};

RUNNEL_STATIC_INIT(RandomKernels) {
  // Each op and its replay (framework/ops/random_ops.cc): one kernel,
  // which reserves its draws or takes the replay's `first`.
  for (const char* at : {"", "_at"}) {
    RegisterKernelForTypes<RandomNormalKernel, Half, BFloat16, float, double>(
        StrCat("random_normal", at));
    RegisterKernelForTypes<TruncatedNormalKernel, Half, BFloat16, float,
                           double>(StrCat("truncated_normal", at));
    RegisterKernelForTypes<RandomUniformKernel, Half, BFloat16, float, double,
                           int8_t, uint8_t, int32_t, int64_t>(
        StrCat("random_uniform", at));
    RegisterKernelForTypes<DropoutKernel, Half, BFloat16, float, double>(
        StrCat("dropout", at));
  }
  RegisterRandomReserveKernel(kDeviceCpu);
}

}  // namespace
}  // namespace runnel
