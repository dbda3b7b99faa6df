// Element types of tensors.
//
// DType names the element type of a Tensor. f16 and bf16 are stored as their
// 16-bit patterns (`Half`, `BFloat16`); kernels reinterpret them as Eigen's
// half types, and `float16.h` converts them on the host.
#ifndef RUNNEL_FRAMEWORK_DTYPE_H_
#define RUNNEL_FRAMEWORK_DTYPE_H_

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>

#include "base/float16.h"

namespace runnel {

enum class DType : uint8_t {
  kF16,
  kBF16,
  kF32,
  kF64,
  kI8,
  kU8,
  kI32,
  kI64,
  kBool
};

inline constexpr DType kAllDTypes[] = {DType::kF16, DType::kBF16, DType::kF32,
                                       DType::kF64, DType::kI8,   DType::kU8,
                                       DType::kI32, DType::kI64,  DType::kBool};

size_t DTypeSize(DType dtype);
// The language's name: "f32", "i64", "bool", ...
std::string_view DTypeName(DType dtype);
std::optional<DType> DTypeFromName(std::string_view name);
bool IsFloating(DType dtype);  // f16 bf16 f32 f64
bool IsInteger(DType dtype);   // i8 u8 i32 i64
bool IsSigned(DType dtype);    // floating, i8, i32, i64
inline bool IsNumeric(DType dtype) { return dtype != DType::kBool; }

// C++ storage type <-> DType.
template <typename T>
struct DTypeOf;
template <>
struct DTypeOf<Half> {
  static constexpr DType value = DType::kF16;
};
template <>
struct DTypeOf<BFloat16> {
  static constexpr DType value = DType::kBF16;
};
template <>
struct DTypeOf<float> {
  static constexpr DType value = DType::kF32;
};
template <>
struct DTypeOf<double> {
  static constexpr DType value = DType::kF64;
};
template <>
struct DTypeOf<int8_t> {
  static constexpr DType value = DType::kI8;
};
template <>
struct DTypeOf<uint8_t> {
  static constexpr DType value = DType::kU8;
};
template <>
struct DTypeOf<int32_t> {
  static constexpr DType value = DType::kI32;
};
template <>
struct DTypeOf<int64_t> {
  static constexpr DType value = DType::kI64;
};
template <>
struct DTypeOf<bool> {
  static constexpr DType value = DType::kBool;
};

// Calls `fn(T{})` with T the storage type of `dtype` (Half/BFloat16 for the
// 16-bit floats). Use it to dispatch a template on a runtime dtype.
template <typename Fn>
decltype(auto) VisitDType(DType dtype, Fn&& fn) {
  switch (dtype) {
    case DType::kF16:
      return fn(Half{});
    case DType::kBF16:
      return fn(BFloat16{});
    case DType::kF32:
      return fn(float{});
    case DType::kF64:
      return fn(double{});
    case DType::kI8:
      return fn(int8_t{});
    case DType::kU8:
      return fn(uint8_t{});
    case DType::kI32:
      return fn(int32_t{});
    case DType::kI64:
      return fn(int64_t{});
    case DType::kBool:
      return fn(bool{});
  }
  return fn(float{});
}

}  // namespace runnel

#endif  // RUNNEL_FRAMEWORK_DTYPE_H_
