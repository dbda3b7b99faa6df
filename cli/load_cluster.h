// Loads the cluster layer (distributed/cluster_module.h) when a command
// first needs it: `runnel server`, `runnel cluster`, and runs given
// --cluster. A script that uses no cluster never loads gRPC.
#ifndef RUNNEL_CLI_LOAD_CLUSTER_H_
#define RUNNEL_CLI_LOAD_CLUSTER_H_

#include "absl/status/statusor.h"
#include "distributed/cluster_module.h"

namespace runnel::cli {

// The cluster layer: linked into this program (the tests), or else the
// module runnel_cluster.so beside the executable, loaded once. The error
// names the file and why it did not load.
absl::StatusOr<const ClusterModule*> LoadCluster();

}  // namespace runnel::cli

#endif  // RUNNEL_CLI_LOAD_CLUSTER_H_
