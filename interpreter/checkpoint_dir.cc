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

#include "base/status_macros.h"
#include "base/strings.h"
#include "common_runtime/saver.h"
#include "interpreter/run_host.h"
#include "io/checkpoint.h"

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

absl::Status RunHost::StartCheckpoints() {
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

// The step counters of the graph's synchronous optimizers
// (docs/cluster.md): the variables feeding its sync_barrier nodes.
std::vector<Node*> SyncCounters(const Graph& graph) {
  std::vector<Node*> out;
  for (const Node* n : graph.nodes()) {
    if (n->op() != "sync_barrier") continue;
    Node* counter = n->input(0).node;
    if (counter->op() == "variable" &&
        std::find(out.begin(), out.end(), counter) == out.end()) {
      out.push_back(counter);
    }
  }
  return out;
}

// Every variable's value between two steps of each synchronous optimizer:
// one run holds every optimizer's barrier (sync_hold: no applier is chosen
// once the step being applied has ended), reads every variable after the
// holds and releases the barriers after the reads. An applier's updates
// all happen between its choice and the end of its step, so none is half
// in. The nodes are made once per set of variables and counters.
absl::StatusOr<TensorMap> ReadBetweenSyncSteps(
    Session& session, const std::vector<Node*>& counters) {
  Graph& graph = session.graph();
  std::vector<Node*> vars;
  for (Node* n : graph.nodes()) {
    if (n->op() == "variable") vars.push_back(n);
  }
  const std::string prefix =
      StrCat("_snapshot/", vars.size(), "_", counters.size(), "/");
  auto name = [&](std::string_view role, const Node* n) {
    return StrCat(prefix, role, "/", n->name());
  };
  std::vector<NodeOut> reads;
  std::vector<Node*> releases;
  if (graph.FindNode(name("release", counters.back())) == nullptr) {
    std::vector<Node*> holds;
    for (Node* c : counters) {
      RN_ASSIGN_OR_RETURN(Node * h, graph.AddNode({.name = name("hold", c),
                                                   .op = "sync_hold",
                                                   .inputs = {{c, 0}},
                                                   .span = c->span()}));
      holds.push_back(h);
    }
    std::vector<Node*> read_nodes;
    for (Node* v : vars) {
      RN_ASSIGN_OR_RETURN(Node * r, graph.AddNode({.name = name("read", v),
                                                   .op = "read_variable",
                                                   .inputs = {{v, 0}},
                                                   .control_inputs = holds,
                                                   .span = v->span()}));
      read_nodes.push_back(r);
    }
    for (Node* c : counters) {
      RN_RETURN_IF_ERROR(graph
                             .AddNode({.name = name("release", c),
                                       .op = "sync_release",
                                       .inputs = {{c, 0}},
                                       .control_inputs = read_nodes,
                                       .span = c->span()})
                             .status());
    }
  }
  for (Node* v : vars) reads.push_back({graph.FindNode(name("read", v)), 0});
  for (Node* c : counters)
    releases.push_back(graph.FindNode(name("release", c)));
  RN_ASSIGN_OR_RETURN(std::vector<Tensor> values,
                      session.Run(Session::Feeds{}, reads, releases));
  TensorMap out;
  for (size_t i = 0; i < vars.size(); ++i) {
    out.emplace(vars[i]->name(), std::move(values[i]));
  }
  return out;
}

// Every variable's value. In a cluster the read is a consistent snapshot
// of the parameter servers, no step's updates half in: under synchronous
// replicas between two steps of each optimizer (ReadBetweenSyncSteps);
// under asynchronous training by freezing the admission of new steps
// (ClusterContext::ReadConsistently), which synchronous replicas cannot use
// (their waiting steps would wait for held ones).
absl::StatusOr<TensorMap> ReadSnapshot(Session& session) {
  ClusterContext* cluster = session.options().cluster.get();
  if (cluster == nullptr) return ReadVariables(session);
  const std::vector<Node*> counters = SyncCounters(session.graph());
  if (!counters.empty()) return ReadBetweenSyncSteps(session, counters);
  TensorMap values;
  RN_RETURN_IF_ERROR(
      cluster->ReadConsistently([&](int64_t snapshot) -> absl::Status {
        RN_ASSIGN_OR_RETURN(values, ReadVariables(session, snapshot));
        return absl::OkStatus();
      }));
  return values;
}

}  // namespace

absl::Status RunHost::SaveCheckpoint() {
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

absl::Status RunHost::CheckpointIfDue() {
  if (options_.checkpoint_dir.empty() || options_.check_mode)
    return absl::OkStatus();
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
  Node* step_node = graph_->FindNode("global_step");
  if (step_node == nullptr) return absl::OkStatus();
  RN_ASSIGN_OR_RETURN(std::vector<Tensor> step,
                      session().Run(Session::Feeds{}, {{step_node, 0}}, {}));
  RN_ASSIGN_OR_RETURN(int64_t now, step[0].ScalarAsInt());
  if (now - last_checkpoint_step_ < every) return absl::OkStatus();
  return SaveCheckpoint();
}

absl::Status RunHost::FinishCheckpoints() {
  if (options_.checkpoint_dir.empty() || options_.check_mode ||
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
