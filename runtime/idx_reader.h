// Reads IDX files (the MNIST format), plain or gzip-compressed.
//
// An IDX file is a 4-byte magic (0, 0, type code, rank), `rank` big-endian
// u32 dimensions, then the elements big-endian in row-major order. Type
// codes: 0x08 u8, 0x09 i8, 0x0B i16 (read as i32), 0x0C i32, 0x0D f32,
// 0x0E f64. Any malformed or truncated file is an error naming the path.
#ifndef RUNNEL_RUNTIME_IDX_READER_H_
#define RUNNEL_RUNTIME_IDX_READER_H_

#include <string>

#include "absl/status/statusor.h"
#include "runtime/tensor.h"

namespace runnel {

absl::StatusOr<Tensor> ReadIdx(const std::string& path);

// Reads a whole file, gunzipping it when it starts with the gzip magic.
absl::StatusOr<std::string> ReadMaybeGzipped(const std::string& path);

}  // namespace runnel

#endif  // RUNNEL_RUNTIME_IDX_READER_H_
