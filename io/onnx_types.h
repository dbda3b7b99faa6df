// ONNX's element types against Runnel's dtypes, one table for `runnel
// import` and `runnel export` (io/onnx_import.h, io/onnx_export.h).
#ifndef RUNNEL_IO_ONNX_TYPES_H_
#define RUNNEL_IO_ONNX_TYPES_H_

#include <cstdint>
#include <optional>
#include <utility>

#include "framework/dtype.h"
#include "io/onnx.pb.h"

namespace runnel {

// Every dtype with its TensorProto.DataType; ONNX types not listed have no
// Runnel dtype.
inline constexpr std::pair<DType, onnx::DataType> kOnnxTypes[] = {
    {DType::kF32, onnx::FLOAT},   {DType::kF64, onnx::DOUBLE},
    {DType::kF16, onnx::FLOAT16}, {DType::kBF16, onnx::BFLOAT16},
    {DType::kI8, onnx::INT8},     {DType::kU8, onnx::UINT8},
    {DType::kI32, onnx::INT32},   {DType::kI64, onnx::INT64},
    {DType::kBool, onnx::BOOL}};

// The DType of an ONNX element type, or nullopt when Runnel has none.
inline std::optional<DType> FromOnnx(int32_t elem_type) {
  for (const auto& [dtype, onnx_type] : kOnnxTypes) {
    if (onnx_type == elem_type) return dtype;
  }
  return std::nullopt;
}

// The ONNX element type of a dtype.
inline int32_t OnnxType(DType dtype) {
  for (const auto& [d, onnx_type] : kOnnxTypes) {
    if (d == dtype) return onnx_type;
  }
  return onnx::UNDEFINED;
}

}  // namespace runnel

#endif  // RUNNEL_IO_ONNX_TYPES_H_
