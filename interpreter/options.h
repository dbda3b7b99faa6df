// The interpreter's options (the command line's, cli/flags.cc) and the
// exit statuses of a script.
#ifndef RUNNEL_INTERPRETER_OPTIONS_H_
#define RUNNEL_INTERPRETER_OPTIONS_H_

#include <cstdint>
#include <cstdio>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "common_runtime/cluster_context.h"

namespace runnel::interp {

class Observer;  // interpreter/observer.h

struct Options {
  uint64_t seed = 0;
  int threads = 0;                                        // 0 = all cores
  std::vector<std::pair<std::string, std::string>> args;  // --arg k=v
  std::string metrics_file;
  // --logdir DIR [--histograms-every N] (docs/training.md): TensorBoard's
  // event file of the run (interpreter/summaries.h); 0 = the default, 100.
  std::string logdir;
  int64_t histograms_every = 0;
  // --devices cpu=N, --soft-placement, --transfer-dtype f16
  // (docs/devices.md).
  int cpu_devices = 1;
  // --devices gpu=N|all (-1: every visible GPU), --gpu-memory SIZE
  // (docs/gpu.md).
  int gpu_devices = -1;
  size_t gpu_memory = 0;
  // --memory-budget BYTES (docs/training.md): the most the stacks of each
  // loop's gradient may hold; gradients through loops recompute to fit.
  int64_t memory_budget = 0;
  bool soft_placement = false;
  bool f16_transfers = false;
  // --trace FILE [--trace-runs A..B]: a trace of the runs numbered A to B
  // (from 1) of the script.
  std::string trace_file;
  int64_t trace_first = 10, trace_last = 12;
  // --checkpoint-dir DIR [--checkpoint-every 60s|500steps] [--keep 3]
  // (docs/checkpoints.md): restore from DIR's newest checkpoint, save
  // periodically and at the end (the chief, in a cluster).
  std::string checkpoint_dir;
  double checkpoint_seconds = 60;  // 0 when counting steps
  int64_t checkpoint_steps = 0;
  int checkpoint_keep = 3;
  bool check_mode = false;
  // `runnel run --cluster c.json --job J --task N` (docs/cluster.md): this
  // process's task, which `task()` describes, and its cluster.
  std::shared_ptr<ClusterContext> cluster;
  std::string task_job = "localhost";
  int task_index = 0;
  int task_workers = 1;
  int task_ps = 0;  // parameter-server tasks in the cluster
  bool task_chief = true;
  std::FILE* out = stdout;  // print
  std::FILE* err = stderr;  // progress bars
  // Where `import NAME` looks: "" = $RUNNEL_STDLIB_PATH, else the build's
  // stdlib directory.
  std::string stdlib_dir;
  // Told of every value and binding (the language server); not owned.
  Observer* observer = nullptr;
};

// Exit statuses (docs/language.md §7).
inline constexpr int kExitOk = 0;
inline constexpr int kExitError = 1;
inline constexpr int kExitUsage = 2;

}  // namespace runnel::interp

#endif  // RUNNEL_INTERPRETER_OPTIONS_H_
