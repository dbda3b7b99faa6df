// Host-side conversions between float and the 16-bit float storage types,
// and between double and any storage type. Round-to-nearest-even, as
// Eigen's half types do, so host and kernel agree.
#ifndef RUNNEL_BASE_FLOAT16_H_
#define RUNNEL_BASE_FLOAT16_H_

#include <cstdint>
#include <type_traits>

namespace runnel {

// The storage of f16 and bf16 tensor elements: their 16-bit patterns.
struct Half {
  uint16_t bits;
};
struct BFloat16 {
  uint16_t bits;
};

Half FloatToHalf(float f);
float HalfToFloat(Half h);
BFloat16 FloatToBFloat16(float f);
float BFloat16ToFloat(BFloat16 b);

// Host conversions between double and any storage type: 16-bit floats
// through float, bool as v != 0, integers by static_cast.
template <typename T>
double ToDouble(T v) {
  if constexpr (std::is_same_v<T, Half>) {
    return HalfToFloat(v);
  } else if constexpr (std::is_same_v<T, BFloat16>) {
    return BFloat16ToFloat(v);
  } else {
    return static_cast<double>(v);
  }
}
template <typename T>
T FromDouble(double v) {
  if constexpr (std::is_same_v<T, Half>) {
    return FloatToHalf(static_cast<float>(v));
  } else if constexpr (std::is_same_v<T, BFloat16>) {
    return FloatToBFloat16(static_cast<float>(v));
  } else if constexpr (std::is_same_v<T, bool>) {
    return v != 0;
  } else {
    return static_cast<T>(v);
  }
}

}  // namespace runnel

#endif  // RUNNEL_BASE_FLOAT16_H_
