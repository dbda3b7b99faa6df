// --checkpoint-dir (docs/checkpoints.md, docs/language.md §10): at the first
// run every var and state takes its value from the directory's newest
// checkpoint instead of its initializer; checkpoints are written every
// --checkpoint-every (seconds, or global steps), at the end of the script
// (also after an error or Ctrl-C), as DIR/ckpt-STEP.ckpt through the atomic
// writer, and only the --keep newest stay. In a cluster the chief does
// this, for the shared state too (a consistent snapshot of it); the other
// workers' runs wait for it.
#include <dirent.h>
#include <sys/stat.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "interpreter/interpreter.h"
#include "runtime/checkpoint.h"
#include "runtime/distributed/grpc_worker.h"
#include "runtime/status_macros.h"
#include "runtime/strings.h"

namespace runnel::interp {
namespace {

double Now() {
  return std::chrono::duration<double>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

// The checkpoints in `dir`, newest (highest step) first: (step, path).
std::vector<std::pair<int64_t, std::string>> Checkpoints(
    const std::string& dir) {
  std::vector<std::pair<int64_t, std::string>> out;
  DIR* d = ::opendir(dir.c_str());
  if (d == nullptr) return out;
  while (dirent* e = ::readdir(d)) {
    const std::string name = e->d_name;
    if (name.rfind("ckpt-", 0) != 0 || name.size() < 11 ||
        name.substr(name.size() - 5) != ".ckpt") {
      continue;
    }
    const std::string digits = name.substr(5, name.size() - 10);
    char* end = nullptr;
    const long long step = std::strtoll(digits.c_str(), &end, 10);
    if (digits.empty() || *end != '\0') continue;
    out.emplace_back(step, dir + "/" + name);
  }
  ::closedir(d);
  std::sort(out.rbegin(), out.rend());
  return out;
}

}  // namespace

absl::Status Interpreter::StartCheckpoints() {
  checkpoints_started_ = true;
  last_checkpoint_time_ = Now();
  if (!options_.task_chief) {
    std::fprintf(options_.err,
                 "note: --checkpoint-dir: the chief (worker 0) writes and "
                 "restores the checkpoints; this worker only waits for it\n");
    return absl::OkStatus();
  }
  if (::mkdir(options_.checkpoint_dir.c_str(), 0777) != 0 && errno != EEXIST) {
    return absl::FailedPreconditionError(
        StrCat("--checkpoint-dir: cannot make '", options_.checkpoint_dir,
               "': ", std::strerror(errno)));
  }
  // The newest checkpoint that reads whole (the atomic writer never leaves
  // a torn one, but a disk may).
  for (const auto& [step, path] : Checkpoints(options_.checkpoint_dir)) {
    absl::StatusOr<TensorMap> values = ReadCheckpoint(path);
    if (!values.ok()) {
      std::fprintf(options_.err, "warning: skipping %s: %s\n", path.c_str(),
                   std::string(values.status().message()).c_str());
      continue;
    }
    std::fprintf(options_.err,
                 "note: restoring %zu variable(s) from %s (global step "
                 "%lld)\n",
                 values->size(), path.c_str(), static_cast<long long>(step));
    last_checkpoint_step_ = step;
    session().set_initial_values(
        std::make_shared<const TensorMap>(std::move(*values)),
        StrCat("checkpoint '", path, "'"));
    break;
  }
  return absl::OkStatus();
}

namespace {

// Whether the graph trains with synchronous replicas (docs/cluster.md).
bool HasSyncReplicas(const Graph& graph) {
  for (const Node* n : graph.nodes()) {
    if (n->op() == "sync_barrier") return true;
  }
  return false;
}

// Every variable's value. In a cluster under asynchronous training the
// read is a consistent snapshot of the parameter servers: no step's
// updates half in (GrpcCluster::ReadConsistently). Synchronous replicas
// are not frozen (their waiting steps would wait for held ones): each of
// their global steps needs the chief's gradient too unless there are
// backup workers, so between the chief's runs the variables do not move.
absl::StatusOr<TensorMap> ReadSnapshot(Session& session) {
  TensorMap values;
  auto read = [&]() -> absl::Status {
    RN_ASSIGN_OR_RETURN(values, ReadVariables(session));
    return absl::OkStatus();
  };
  auto* grpc = dynamic_cast<GrpcCluster*>(session.options().cluster.get());
  if (grpc == nullptr || HasSyncReplicas(session.graph())) {
    RN_RETURN_IF_ERROR(read());
  } else {
    RN_RETURN_IF_ERROR(grpc->ReadConsistently(read));
  }
  return values;
}

}  // namespace

absl::Status Interpreter::SaveCheckpoint() {
  RN_ASSIGN_OR_RETURN(TensorMap values, ReadSnapshot(session()));
  int64_t step = last_checkpoint_step_ + 1;
  if (auto it = values.find("global_step"); it != values.end()) {
    absl::StatusOr<int64_t> s = it->second.ScalarAsInt();
    if (s.ok()) step = *s;
  }
  const std::string path =
      StrCat(options_.checkpoint_dir, "/ckpt-", step, ".ckpt");
  RN_RETURN_IF_ERROR(WriteCheckpoint(path, values));
  last_checkpoint_step_ = step;
  last_checkpoint_time_ = Now();
  // A task that restarts empty is restored from this one.
  session().set_initial_values(
      std::make_shared<const TensorMap>(std::move(values)),
      StrCat("checkpoint '", path, "'"));
  const auto all = Checkpoints(options_.checkpoint_dir);
  for (size_t i = options_.checkpoint_keep; i < all.size(); ++i) {
    std::remove(all[i].second.c_str());
  }
  return absl::OkStatus();
}

absl::Status Interpreter::MaybeCheckpoint() {
  if (options_.checkpoint_dir.empty() || check_mode()) return absl::OkStatus();
  if (!checkpoints_started_) return StartCheckpoints();
  if (!options_.task_chief) return absl::OkStatus();
  if (options_.checkpoint_seconds > 0) {
    if (Now() - last_checkpoint_time_ < options_.checkpoint_seconds) {
      return absl::OkStatus();
    }
    return SaveCheckpoint();
  }
  // Counting global steps: look every few runs.
  const int64_t every = options_.checkpoint_steps;
  if (runs_ - runs_at_last_check_ < std::max<int64_t>(1, every / 20)) {
    return absl::OkStatus();
  }
  runs_at_last_check_ = runs_;
  Node* step_node = graph().FindNode("global_step");
  if (step_node == nullptr) return absl::OkStatus();
  RN_ASSIGN_OR_RETURN(std::vector<Tensor> step,
                      session().Run(Session::Feeds{}, {{step_node, 0}}, {}));
  RN_ASSIGN_OR_RETURN(int64_t now, step[0].ScalarAsInt());
  if (now - last_checkpoint_step_ < every) return absl::OkStatus();
  return SaveCheckpoint();
}

absl::Status Interpreter::FinishCheckpoints() {
  if (options_.checkpoint_dir.empty() || check_mode() ||
      !checkpoints_started_ || !options_.task_chief) {
    return absl::OkStatus();
  }
  absl::Status s = SaveCheckpoint();
  if (!s.ok()) {
    return absl::Status(s.code(),
                        StrCat("--checkpoint-dir: the last checkpoint was not "
                               "written: ",
                               s.message()));
  }
  std::fprintf(options_.err, "note: checkpoint written to %s/ckpt-%lld.ckpt\n",
               options_.checkpoint_dir.c_str(),
               static_cast<long long>(last_checkpoint_step_));
  return absl::OkStatus();
}

}  // namespace runnel::interp
