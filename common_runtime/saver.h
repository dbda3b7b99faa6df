// Saving and restoring every variable of a session through a checkpoint
// file (io/checkpoint.h is the file).
//
//   RN_RETURN_IF_ERROR(SaveVariables(session, "model.ckpt"));
//   ...
//   RN_RETURN_IF_ERROR(RestoreVariables(session, "model.ckpt"));
//
// Thread-safety: the functions keep no state. RestoreVariables assigns the
// variables one after another once everything has been checked, so a `run`
// on another thread at the same moment may see some variables restored and
// others not; the interpreter never does that.
#ifndef RUNNEL_COMMON_RUNTIME_SAVER_H_
#define RUNNEL_COMMON_RUNTIME_SAVER_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "framework/graph.h"
#include "io/checkpoint.h"

namespace runnel {

class Session;

// The `variable` nodes of the session's graph, in id order.
std::vector<const Node*> VariableNodes(Session& session);

// The current value of every variable of the session, by node name. A
// variable never initialised yet is initialised first (its initializer
// runs, as a `run` that reads it would), so saving never skips one.
// `snapshot`: the run's RunOptions::snapshot.
absl::StatusOr<TensorMap> ReadVariables(Session& session, int64_t snapshot = 0);

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

#endif  // RUNNEL_COMMON_RUNTIME_SAVER_H_
