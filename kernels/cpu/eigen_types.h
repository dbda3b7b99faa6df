// Eigen's scalar types for tensor storage types, for CPU kernels.
//
// The 16-bit floats are stored as bit patterns (Half, BFloat16) and
// reinterpreted as Eigen::half / Eigen::bfloat16; arithmetic on them is done
// in float, so a result is rounded to 16 bits once. Needs only Eigen/Core:
// the element-wise kernels include this without Eigen's Tensor module.
#ifndef RUNNEL_KERNELS_CPU_EIGEN_TYPES_H_
#define RUNNEL_KERNELS_CPU_EIGEN_TYPES_H_

#include <Eigen/Core>
#include <type_traits>

#include "framework/dtype.h"

namespace runnel {

template <typename T>
struct EigenTypeOf {
  using type = T;
};
template <>
struct EigenTypeOf<Half> {
  using type = Eigen::half;
};
template <>
struct EigenTypeOf<BFloat16> {
  using type = Eigen::bfloat16;
};
template <typename T>
using EigenType = typename EigenTypeOf<T>::type;

// The type arithmetic on T is done in.
template <typename T>
using AccumType =
    std::conditional_t<std::is_same_v<T, Half> || std::is_same_v<T, BFloat16>,
                       float, EigenType<T>>;

}  // namespace runnel

#endif  // RUNNEL_KERNELS_CPU_EIGEN_TYPES_H_
