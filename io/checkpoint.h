// Checkpoints: named tensors in one file (docs/language.md §6). Saving and
// restoring a session's variables is common_runtime/saver.h.
//
// docs/checkpoints.md is the file format: a header with a magic and a
// version, an index of name, dtype, shape, offset and CRC-32 per tensor,
// then each tensor's little-endian bytes on a 64-byte boundary.
//
// Writing is atomic: the file is written beside its final path under a
// temporary name, fsync'd, renamed over `path` and the directory fsync'd,
// so a crash or a failed write leaves any previous file at `path` whole and
// no temporary file behind. Reading verifies the whole file (header, index,
// every tensor's checksum) before returning anything, and every error names
// the file and, where one is at fault, the tensors.
//
// Thread-safety: the functions keep no state.
#ifndef RUNNEL_IO_CHECKPOINT_H_
#define RUNNEL_IO_CHECKPOINT_H_

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "framework/tensor.h"

namespace runnel {

// Tensors by name; a std::map so a file's index is in name order and the
// same values always give the same bytes.
using TensorMap = std::map<std::string, Tensor>;

inline constexpr uint32_t kCheckpointVersion = 1;

// Writes `tensors` to `path` atomically (see above). Errors name `path`.
absl::Status WriteCheckpoint(const std::string& path, const TensorMap& tensors);

// Reads and verifies the whole checkpoint at `path`. NotFound when it
// cannot be opened; DataLoss when it is truncated, corrupt or not a
// checkpoint; Unimplemented for a format version this build does not read.
absl::StatusOr<TensorMap> ReadCheckpoint(const std::string& path);

}  // namespace runnel

#endif  // RUNNEL_IO_CHECKPOINT_H_
