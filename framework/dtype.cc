#include "framework/dtype.h"

namespace runnel {

size_t DTypeSize(DType dtype) {
  switch (dtype) {
    case DType::kF16:
    case DType::kBF16:
      return 2;
    case DType::kF32:
    case DType::kI32:
      return 4;
    case DType::kF64:
    case DType::kI64:
      return 8;
    case DType::kI8:
    case DType::kU8:
    case DType::kBool:
      return 1;
  }
  return 0;
}

std::string_view DTypeName(DType dtype) {
  switch (dtype) {
    case DType::kF16:
      return "f16";
    case DType::kBF16:
      return "bf16";
    case DType::kF32:
      return "f32";
    case DType::kF64:
      return "f64";
    case DType::kI8:
      return "i8";
    case DType::kU8:
      return "u8";
    case DType::kI32:
      return "i32";
    case DType::kI64:
      return "i64";
    case DType::kBool:
      return "bool";
  }
  return "?";
}

std::optional<DType> DTypeFromName(std::string_view name) {
  for (DType d : kAllDTypes) {
    if (DTypeName(d) == name) return d;
  }
  return std::nullopt;
}

bool IsFloating(DType d) {
  return d == DType::kF16 || d == DType::kBF16 || d == DType::kF32 ||
         d == DType::kF64;
}
bool IsInteger(DType d) {
  return d == DType::kI8 || d == DType::kU8 || d == DType::kI32 ||
         d == DType::kI64;
}
bool IsSigned(DType d) {
  return IsFloating(d) || d == DType::kI8 || d == DType::kI32 ||
         d == DType::kI64;
}

}  // namespace runnel
