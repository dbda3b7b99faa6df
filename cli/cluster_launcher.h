// `runnel cluster FILE --ps P --workers W [--ps-replicas R] [--restart]
// [run options]` (docs/cluster.md): the whole cluster on this machine. It
// writes a spec of loopback ports, starts P `runnel server` tasks (R
// replicas of each: "ps:0.1" is task 0's second) and W `runnel run FILE`
// workers, prefixes each task's output lines ("[worker:1] "), restarts a
// task that a signal killed when `--restart` is given (a replica of a
// replicated ps always, so that it rejoins as a backup), stops everything
// on Ctrl-C, and exits with the first failing worker's status (0 when every
// worker succeeded).
#ifndef RUNNEL_CLI_CLUSTER_LAUNCHER_H_
#define RUNNEL_CLI_CLUSTER_LAUNCHER_H_

#include <string>
#include <vector>

namespace runnel::cli {

struct ClusterLaunch {
  std::string runnel;  // this program
  std::string file;
  int ps = 1;
  int workers = 1;
  int ps_replicas = 1;
  bool restart = false;
  // Options every worker gets (--arg, --seed, --checkpoint-dir, ...).
  std::vector<std::string> worker_args;
  // Options every task gets (--threads).
  std::vector<std::string> task_args;
};

// Runs the cluster to its end; returns the exit status.
int LaunchCluster(const ClusterLaunch& launch);

}  // namespace runnel::cli

#endif  // RUNNEL_CLI_CLUSTER_LAUNCHER_H_
