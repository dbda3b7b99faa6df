#include "base/float16.h"

#include <Eigen/Core>
#include <bit>

namespace runnel {

Half FloatToHalf(float f) {
  return Half{Eigen::numext::bit_cast<uint16_t>(Eigen::half(f))};
}
float HalfToFloat(Half h) {
  return static_cast<float>(Eigen::numext::bit_cast<Eigen::half>(h.bits));
}
BFloat16 FloatToBFloat16(float f) {
  return BFloat16{Eigen::numext::bit_cast<uint16_t>(Eigen::bfloat16(f))};
}
float BFloat16ToFloat(BFloat16 b) {
  return static_cast<float>(Eigen::numext::bit_cast<Eigen::bfloat16>(b.bits));
}

}  // namespace runnel
