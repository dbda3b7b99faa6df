// What the random ops' CPU and GPU kernels share (kernels/cpu/
// random_kernels.cc, kernels/cuda/random_kernels.cc): the reservation of a
// node's draws and the reading of its attributes, so that both sample the
// same stream with the same parameters.
#ifndef RUNNEL_KERNELS_COMMON_RANDOM_UTIL_H_
#define RUNNEL_KERNELS_COMMON_RANDOM_UTIL_H_

#include <cmath>
#include <cstdint>
#include <limits>
#include <string_view>
#include <type_traits>

#include "absl/status/statusor.h"
#include "base/random.h"
#include "base/strings.h"
#include "framework/kernel.h"
#include "kernels/common/array_util.h"

namespace runnel {

// Reserves `n` draws of the node's stream (its RandomCounter resource) for
// a node whose `seed` attribute is `seed`. A replay (NAME_at, framework/
// ops/random_ops.cc) reserves nothing: its draws start at its last input,
// `first` (in host memory), in the stream of node `stream`.
absl::StatusOr<RandomSampler> ReserveSamples(OpKernelContext* ctx, int64_t seed,
                                             int64_t n);

// random_reserve, on the host for every device (its inputs and output in
// host memory): reserves the draws of node `stream`'s counter and gives
// the first one's index.
void RegisterRandomReserveKernel(const std::string& device);

// An int or float attribute as an integer, exactly for ints (a float is
// rounded up).
absl::StatusOr<int64_t> IntegralAttr(const Node& node, std::string_view name);

// random_uniform's attributes: for floats [min, max) and the largest T
// below max (rounding a sample to T may reach max, which is excluded); for
// integers [min_int, min_int + range).
struct UniformRange {
  double min = 0, max = 1;
  double below_max = 0;  // a T value
  int64_t min_int = 0;
  uint64_t range = 1;
};

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

template <typename T>
absl::StatusOr<UniformRange> UniformRangeOf(const Node& node) {
  UniformRange r;
  if constexpr (std::is_integral_v<T>) {
    RN_ASSIGN_OR_RETURN(r.min_int, IntegralAttr(node, "minval"));
    RN_ASSIGN_OR_RETURN(int64_t max, IntegralAttr(node, "maxval"));
    if (max <= r.min_int) {
      return absl::InvalidArgumentError(
          StrCat("random_uniform: need minval < maxval, got [", r.min_int, ", ",
                 max, ")"));
    }
    r.range = static_cast<uint64_t>(max) - static_cast<uint64_t>(r.min_int);
  } else {
    RN_ASSIGN_OR_RETURN(r.min, node.attr<double>("minval"));
    RN_ASSIGN_OR_RETURN(r.max, node.attr<double>("maxval"));
    r.below_max = ToDouble(Below<T>(r.max));
  }
  return r;
}

}  // namespace runnel

#endif  // RUNNEL_KERNELS_COMMON_RANDOM_UTIL_H_
