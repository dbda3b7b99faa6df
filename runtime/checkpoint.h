// Checkpoints: named tensors in one file, and the session hooks that save
// and restore every variable of a session (docs/language.md §6).
//
//   RN_RETURN_IF_ERROR(SaveVariables(session, "model.ckpt"));
//   ...
//   RN_RETURN_IF_ERROR(RestoreVariables(session, "model.ckpt"));
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
// Thread-safety: the functions keep no state. RestoreVariables assigns the
// variables one after another once everything has been checked, so a `run`
// on another thread at the same moment may see some variables restored and
// others not; the interpreter never does that.
#ifndef RUNNEL_RUNTIME_CHECKPOINT_H_
#define RUNNEL_RUNTIME_CHECKPOINT_H_

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "runtime/graph.h"
#include "runtime/tensor.h"

namespace runnel {

class Session;

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

// ---- session hooks ----------------------------------------------------------

// The `variable` nodes of the session's graph, in id order.
std::vector<const Node*> VariableNodes(Session& session);

// The current value of every variable of the session, by node name. A
// variable never initialised yet is initialised first (its initializer
// runs, as a `run` that reads it would), so saving never skips one.
absl::StatusOr<TensorMap> ReadVariables(Session& session);

// ReadVariables, then WriteCheckpoint.
absl::Status SaveVariables(Session& session, const std::string& path);

// A variable a checkpoint cannot restore, for pointing at its declaration.
struct CheckpointMismatch {
  const Node* variable;
  bool missing;  // not in the checkpoint at all (else another dtype/shape)
  // "'w' is f32[3] but the checkpoint has f32[2]"
  std::string problem;
};

// Gives every variable of the session its value from `values`, or changes
// nothing: when a variable is missing from `values` or has another dtype or
// shape there, returns InvalidArgument naming all of them (and fills
// `mismatches`, when given). Names in `values` that are no variable are
// ignored, as TensorFlow's restore ignores them. `source` names where the
// values came from in messages. A restored variable counts as initialised:
// a later run does not run its initializer.
absl::Status AssignVariables(Session& session, const TensorMap& values,
                             const std::string& source,
                             std::vector<CheckpointMismatch>* mismatches);

// ReadCheckpoint, then AssignVariables: a file that cannot be read changes
// no variable either. `extra`, when given, receives the names in the file
// that are no variable of the session.
absl::Status RestoreVariables(
    Session& session, const std::string& path,
    std::vector<CheckpointMismatch>* mismatches = nullptr,
    std::vector<std::string>* extra = nullptr);

}  // namespace runnel

#endif  // RUNNEL_RUNTIME_CHECKPOINT_H_
