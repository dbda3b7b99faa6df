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
#include "framework/dtype_table.h"

namespace runnel {

#define RUNNEL_DTYPE_ENUMERATOR(Name, ...) k##Name,
enum class DType : uint8_t { RUNNEL_DTYPES(RUNNEL_DTYPE_ENUMERATOR) };
#undef RUNNEL_DTYPE_ENUMERATOR
#define RUNNEL_DTYPE_VALUE(Name, ...) DType::k##Name,
inline constexpr DType kAllDTypes[] = {RUNNEL_DTYPES(RUNNEL_DTYPE_VALUE)};
#undef RUNNEL_DTYPE_VALUE

// What arithmetic a dtype has.
enum class DTypeKind : uint8_t { kFloat, kSigned, kUnsigned, kBool };

// A dtype's facts, from the table (dtype_table.h).
struct DTypeInfo {
  std::string_view name;  // the language's name: "f32", "i64", "bool"
  size_t size;            // bytes per element
  DTypeKind kind;
  uint32_t checkpoint_code;  // its number in checkpoint files
  const char* numpy_descr;   // NumPy's descriptor; nullptr if none
  int tensorflow_code;       // its number in TensorFlow's DataType enum
};

#define RUNNEL_DTYPE_INFO(Name, name, Host, Gpu, kind, code, descr, tf) \
  DTypeInfo{name, sizeof(Host), DTypeKind::kind, code, descr, tf},
inline constexpr DTypeInfo kDTypeInfo[] = {RUNNEL_DTYPES(RUNNEL_DTYPE_INFO)};
#undef RUNNEL_DTYPE_INFO

constexpr const DTypeInfo& InfoOf(DType dtype) {
  return kDTypeInfo[static_cast<size_t>(dtype)];
}
constexpr size_t DTypeSize(DType dtype) { return InfoOf(dtype).size; }
constexpr std::string_view DTypeName(DType dtype) { return InfoOf(dtype).name; }
std::optional<DType> DTypeFromName(std::string_view name);
constexpr bool IsFloating(DType d) {  // f16 bf16 f32 f64
  return InfoOf(d).kind == DTypeKind::kFloat;
}
constexpr bool IsInteger(DType d) {  // i8 u8 i32 i64
  return InfoOf(d).kind == DTypeKind::kSigned ||
         InfoOf(d).kind == DTypeKind::kUnsigned;
}
constexpr bool IsSigned(DType d) {  // floating, i8, i32, i64
  return InfoOf(d).kind == DTypeKind::kFloat ||
         InfoOf(d).kind == DTypeKind::kSigned;
}
constexpr bool IsNumeric(DType d) { return InfoOf(d).kind != DTypeKind::kBool; }

// C++ storage type <-> DType.
template <typename T>
struct DTypeOf;
#define RUNNEL_DTYPE_OF(Name, name, Host, ...)     \
  template <>                                      \
  struct DTypeOf<Host> {                           \
    static constexpr DType value = DType::k##Name; \
  };
RUNNEL_DTYPES(RUNNEL_DTYPE_OF)
#undef RUNNEL_DTYPE_OF

// Calls `fn(T{})` with T the storage type of `dtype` (Half/BFloat16 for the
// 16-bit floats). Use it to dispatch a template on a runtime dtype.
template <typename Fn>
decltype(auto) VisitDType(DType dtype, Fn&& fn) {
#define RUNNEL_DTYPE_CASE(Name, name, Host, ...) \
  case DType::k##Name:                           \
    return fn(Host{});
  switch (dtype) { RUNNEL_DTYPES(RUNNEL_DTYPE_CASE) }
#undef RUNNEL_DTYPE_CASE
  return fn(float{});
}

}  // namespace runnel

#endif  // RUNNEL_FRAMEWORK_DTYPE_H_
