// The one table of element types. Every list of dtypes in the code (the
// DType enum, names, sizes, the storage types a template is visited with,
// the checkpoint format's codes, NumPy's descriptors, the GPU's element
// types) is expanded from this macro, so a dtype is added in one place.
//
// Plain preprocessor on purpose: nvcc includes it too (kernels/cuda), so it
// has no includes and names its storage types only as macro arguments.
//
//   X(Name, "name", HostType, GpuType, kind, checkpoint code, NumPy descr,
//     TensorFlow code)
//
// Name      the enumerator's suffix: DType::kF32, cuda::ElemType::kF32.
// "name"    the language's spelling (docs/language.md).
// HostType  the C++ storage type on the host (Half and BFloat16 hold the
//           16-bit patterns; base/float16.h).
// GpuType   the storage type in device code (cuda_fp16.h, cuda_bf16.h).
// kind      kFloat, kSigned, kUnsigned or kBool (DTypeKind).
// code      the dtype's number in checkpoint files (docs/checkpoints.md),
//           fixed whatever the order of this table.
// descr     NumPy's dtype descriptor when saving (.npy); nullptr where
//           NumPy has none.
// tf        the dtype's number in TensorFlow's DataType enum, which
//           TensorBoard's graphs use (io/tensorboard.proto).
#ifndef RUNNEL_FRAMEWORK_DTYPE_TABLE_H_
#define RUNNEL_FRAMEWORK_DTYPE_TABLE_H_

// clang-format off
#define RUNNEL_DTYPES(X)                                                   \
  X(F16,  "f16",  Half,     __half,        kFloat,    1, "<f2",    19)      \
  X(BF16, "bf16", BFloat16, __nv_bfloat16, kFloat,    2, nullptr,  14)      \
  X(F32,  "f32",  float,    float,         kFloat,    3, "<f4",     1)      \
  X(F64,  "f64",  double,   double,        kFloat,    4, "<f8",     2)      \
  X(I8,   "i8",   int8_t,   int8_t,        kSigned,   5, "|i1",     6)      \
  X(U8,   "u8",   uint8_t,  uint8_t,       kUnsigned, 6, "|u1",     4)      \
  X(I32,  "i32",  int32_t,  int32_t,       kSigned,   7, "<i4",     3)      \
  X(I64,  "i64",  int64_t,  int64_t,       kSigned,   8, "<i8",     9)      \
  X(Bool, "bool", bool,     bool,          kBool,     9, "|b1",    10)
// clang-format on

#endif  // RUNNEL_FRAMEWORK_DTYPE_TABLE_H_
