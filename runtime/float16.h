// Host-side conversions between float and the 16-bit float storage types.
// Round-to-nearest-even, as Eigen's half types do, so host and kernel agree.
#ifndef RUNNEL_RUNTIME_FLOAT16_H_
#define RUNNEL_RUNTIME_FLOAT16_H_

#include "runtime/dtype.h"

namespace runnel {

Half FloatToHalf(float f);
float HalfToFloat(Half h);
BFloat16 FloatToBFloat16(float f);
float BFloat16ToFloat(BFloat16 b);

}  // namespace runnel

#endif  // RUNNEL_RUNTIME_FLOAT16_H_
