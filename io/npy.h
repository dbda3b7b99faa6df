// NumPy .npy files: the `load_npy` and `save_npy` builtins
// (docs/language.md §6) and anything else that exchanges arrays with NumPy.
#ifndef RUNNEL_IO_NPY_H_
#define RUNNEL_IO_NPY_H_

#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "framework/tensor.h"

namespace runnel {

// Reads a .npy file (format versions 1-3, C order, either byte order).
// Supported element types: f2 f4 f8 i1 u1 i2 u2 (read as i32) i4 u4 (read
// as i64) i8 b1. Errors name the file.
absl::StatusOr<Tensor> ReadNpy(const std::string& path);

// Writes `t` as a version 1.0 .npy file, little-endian, C order. The file
// appears atomically: it is written to a temporary file beside `path`,
// flushed to disk and renamed, so a reader never sees a torn file.
absl::Status WriteNpy(const std::string& path, const Tensor& t);

}  // namespace runnel

#endif  // RUNNEL_IO_NPY_H_
