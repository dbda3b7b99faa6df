// Kernels of the random ops (runtime/ops/random_ops.cc). Element i of a run
// is sampled from counter `first + i` of the node's stream, where the run
// reserved [first, first + n) from the node's RandomCounter; the values are
// therefore the same whatever the number of threads.
#include <algorithm>
#include <bit>
#include <cmath>
#include <limits>

#include "kernels/cpu/array_util.h"
#include "kernels/cpu/eigen_types.h"
#include "runtime/kernel.h"
#include "runtime/random.h"
#include "runtime/strings.h"

namespace runnel {
namespace {

// Rough cycles to sample one element, for ParallelFor.
constexpr int64_t kUniformCost = 40;
constexpr int64_t kNormalCost = 150;

// The largest T strictly below `limit`.
template <typename T>
T Below(double limit) {
  T t = FromDouble<T>(limit);
  while (ToDouble(t) >= limit) {
    if constexpr (std::is_same_v<T, Half> || std::is_same_v<T, BFloat16>) {
      // Sign-magnitude bits: step the magnitude towards -inf.
      if (t.bits == 0) {
        t.bits = 0x8001;
      } else if (t.bits & 0x8000) {
        ++t.bits;
      } else {
        --t.bits;
      }
    } else {
      t = std::nextafter(t, -std::numeric_limits<T>::infinity());
    }
  }
  return t;
}

class RandomKernel : public OpKernel {
 public:
  absl::Status Init(const Node& node) override {
    RN_ASSIGN_OR_RETURN(seed_, node.attr<int64_t>("seed"));
    return absl::OkStatus();
  }

 protected:
  // Reserves `n` draws of this node's stream.
  absl::StatusOr<RandomSampler> Reserve(OpKernelContext* ctx, int64_t n) {
    const std::string& name = ctx->node().name();
    RN_ASSIGN_OR_RETURN(
        std::shared_ptr<RandomCounter> counter,
        ctx->resources()->LookupOrCreate<RandomCounter>("random:" + name, [] {
          return std::make_shared<RandomCounter>();
        }));
    return RandomSampler(EffectiveSeed(ctx->global_seed(), seed_, name),
                         counter->Reserve(n));
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
          return FromDouble<T>(mean_ + stddev_ * z);
        });
  }

 private:
  double mean_ = 0, stddev_ = 1;
};

template <typename T>
using RandomNormalKernel = NormalKernel<T, false>;
template <typename T>
using TruncatedNormalKernel = NormalKernel<T, true>;

// Reads an int or float attribute as an integer, exactly for ints.
absl::StatusOr<int64_t> IntegralAttr(const Node& node, std::string_view name) {
  absl::StatusOr<int64_t> i = node.attr<int64_t>(name);
  if (i.ok()) return i;
  RN_ASSIGN_OR_RETURN(double d, node.attr<double>(name));
  return static_cast<int64_t>(std::ceil(d));
}

template <typename T>
class RandomUniformKernel : public RandomKernel {
 public:
  absl::Status Init(const Node& node) override {
    RN_RETURN_IF_ERROR(RandomKernel::Init(node));
    if constexpr (std::is_integral_v<T>) {
      RN_ASSIGN_OR_RETURN(min_int_, IntegralAttr(node, "minval"));
      RN_ASSIGN_OR_RETURN(int64_t max, IntegralAttr(node, "maxval"));
      if (max <= min_int_) {
        return absl::InvalidArgumentError(
            StrCat("random_uniform: need minval < maxval, got [", min_int_,
                   ", ", max, ")"));
      }
      range_ = static_cast<uint64_t>(max) - static_cast<uint64_t>(min_int_);
    } else {
      RN_ASSIGN_OR_RETURN(min_, node.attr<double>("minval"));
      RN_ASSIGN_OR_RETURN(max_, node.attr<double>("maxval"));
      below_max_ = Below<T>(max_);
    }
    return absl::OkStatus();
  }
  absl::Status Compute(OpKernelContext* ctx) override {
    if constexpr (std::is_integral_v<T>) {
      return Sample<T>(ctx, kUniformCost,
                       [this](const RandomSampler& s, int64_t i) {
                         return static_cast<T>(static_cast<uint64_t>(min_int_) +
                                               s.UniformInt(i, range_));
                       });
    } else {
      return Sample<T>(
          ctx, kUniformCost, [this](const RandomSampler& s, int64_t i) {
            double v = min_ + s.Uniform(i) * (max_ - min_);
            T t = FromDouble<T>(v);
            // Rounding to T may reach maxval, which is excluded.
            return max_ > min_ && ToDouble(t) >= max_ ? below_max_ : t;
          });
    }
  }

 private:
  double min_ = 0, max_ = 1;
  T below_max_{};
  int64_t min_int_ = 0;
  uint64_t range_ = 1;
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
    if (!(rate >= 0 && rate < 1)) {
      return absl::InvalidArgumentError(
          StrCat("dropout: rate must be in [0, 1), got ", rate));
    }
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
  RegisterKernelForTypes<RandomNormalKernel, Half, BFloat16, float, double>(
      "random_normal");
  RegisterKernelForTypes<TruncatedNormalKernel, Half, BFloat16, float, double>(
      "truncated_normal");
  RegisterKernelForTypes<RandomUniformKernel, Half, BFloat16, float, double,
                         int8_t, uint8_t, int32_t, int64_t>("random_uniform");
  RegisterKernelForTypes<DropoutKernel, Half, BFloat16, float, double>(
      "dropout");
}

}  // namespace
}  // namespace runnel
