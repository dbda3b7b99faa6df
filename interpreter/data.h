// Host-side data files and datasets for data builtins (docs/language.md §6):
// NumPy .npy files, CSV files, and row selection for `batches`.
#ifndef RUNNEL_INTERPRETER_DATA_H_
#define RUNNEL_INTERPRETER_DATA_H_

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "runtime/tensor.h"

namespace runnel::interp {

// Reads a .npy file (format versions 1-3, C order, either byte order).
// Supported element types: f2 f4 f8 i1 u1 i2 u2 (read as i32) i4 u4 (read
// as i64) i8 b1. Errors name the file.
absl::StatusOr<Tensor> ReadNpy(const std::string& path);
// Writes `t` as a version 1.0 .npy file, little-endian, C order. The file
// appears atomically: it is written to a temporary file beside `path`,
// flushed to disk and renamed, so a reader never sees a torn file.
absl::Status WriteNpy(const std::string& path, const Tensor& t);

// A CSV file of numbers: one f32 vector per column, named by the header
// line (or c0, c1, ... without one). Errors name the file and line.
absl::StatusOr<std::vector<std::pair<std::string, Tensor>>> ReadCsv(
    const std::string& path, bool header);

// Rows `rows` of `t` along axis 0 (a copy).
Tensor GatherRows(const Tensor& t, const std::vector<int64_t>& rows);
// 0..n-1, shuffled deterministically by `seed` when `shuffle`.
std::vector<int64_t> RowOrder(int64_t n, bool shuffle, uint64_t seed);

}  // namespace runnel::interp

#endif  // RUNNEL_INTERPRETER_DATA_H_
