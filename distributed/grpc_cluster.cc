#include "distributed/grpc_cluster.h"

#include <random>
#include <utility>

#include "base/status_macros.h"
#include "base/strings.h"
#include "distributed/collectives.h"
#include "distributed/grpc_channels.h"
#include "distributed/grpc_service.h"
#include "distributed/grpc_util.h"
#include "framework/graph_def.h"

namespace runnel {
namespace {

// How long a snapshot's read may take before the freeze lapses.
constexpr double kSnapshotReadSeconds = 20;

// How long a leaving worker waits for the others to read the tensors of
// its last all-reduces (a straggler's last step).
constexpr double kCollectivesDrainSeconds = 30;

int64_t RandomStepBase() {
  std::random_device rd;
  const uint64_t v = (uint64_t{rd()} << 32) ^ rd();
  // Positive, with room for 2^32 steps above it.
  return static_cast<int64_t>((v >> 2) & ~uint64_t{0xffffffff});
}

}  // namespace

GrpcCluster::GrpcCluster(const ClusterSpec& spec, std::string task, bool chief,
                         GrpcOptions options)
    : spec_(spec),
      task_(std::move(task)),
      chief_(chief),
      options_(std::move(options)) {}

GrpcCluster::~GrpcCluster() {
  Leave();
  if (server_ != nullptr) server_->Shutdown();
}

std::vector<std::string> GrpcCluster::PsTasks() const {
  std::vector<std::string> out;
  for (int i = 0; i < spec_.num_tasks("ps"); ++i) {
    out.push_back(ClusterSpec::TaskName("ps", i));
  }
  return out;
}

void GrpcCluster::Beat() {
  std::unique_lock<std::mutex> lock(beat_mu_);
  while (!leaving_) {
    lock.unlock();
    for (const std::string& ps : PsTasks()) {
      channels_->Heartbeat(ps, task_, /*leaving=*/false, /*wait=*/false);
    }
    lock.lock();
    beat_cv_.wait_for(lock, std::chrono::milliseconds(500));
  }
}

void GrpcCluster::Leave() {
  {
    std::lock_guard<std::mutex> lock(beat_mu_);
    if (leaving_) return;
    leaving_ = true;
  }
  beat_cv_.notify_all();
  if (beater_.joinable()) beater_.join();
  // The other workers may not have read this worker's last all-reduce
  // tensors yet: they fetch them from this process.
  std::shared_ptr<WorkerCollectives> collectives;
  {
    std::lock_guard<std::mutex> lock(beat_mu_);
    collectives = collectives_;
  }
  if (collectives != nullptr && collectives->has_sent()) {
    collectives->Drain(kCollectivesDrainSeconds);
    // Taken is not yet sent: the server finishes the answers under way
    // (gRPC's graceful shutdown) before this process ends.
    server_->Shutdown();
  }
  for (const std::string& ps : PsTasks()) {
    channels_->Heartbeat(ps, task_, /*leaving=*/true, /*wait=*/true);
  }
}

absl::StatusOr<std::shared_ptr<GrpcCluster>> GrpcCluster::Start(
    const ClusterSpec& spec, const std::string& job, int task,
    GrpcOptions options) {
  RN_ASSIGN_OR_RETURN(std::string address, spec.Address(job, task));
  if (!spec.AllLoopback() && options.token.empty()) {
    return absl::InvalidArgumentError(
        "the cluster spec names addresses beyond this machine: every task "
        "needs --token-file");
  }
  if (spec.is_replicated(ClusterSpec::TaskName(job, task))) {
    return absl::InvalidArgumentError(
        StrCat(ClusterSpec::TaskName(job, task),
               " is replicated in the cluster spec, but a task that runs a "
               "script cannot be: only `runnel server` tasks (ps) can"));
  }
  const bool chief =
      job == "worker" ? task == 0 : spec.num_tasks("worker") == 0;
  auto cluster = std::shared_ptr<GrpcCluster>(new GrpcCluster(
      spec, ClusterSpec::TaskName(job, task), chief, std::move(options)));
  cluster->worker_index_ = job == "worker" ? task : -1;
  cluster->channels_ =
      std::make_shared<WorkerChannels>(spec, cluster->options_);
  cluster->worker_ = NewGrpcWorker(cluster->task_, cluster->channels_, spec);
  cluster->writer_ =
      StrCat(cluster->task_, "#", cluster->worker_->incarnation());
  RN_ASSIGN_OR_RETURN(
      cluster->server_,
      WorkerServer::Start(cluster->worker_.get(), ListenAddress(spec, address),
                          cluster->options_));
  GrpcCluster* raw = cluster.get();
  cluster->beater_ = std::thread([raw] { raw->Beat(); });
  return cluster;
}

const std::string& GrpcCluster::local_task() const { return task_; }

std::vector<std::string> GrpcCluster::remote_devices() const {
  std::vector<std::string> out;
  for (const std::string& t : spec_.TaskNames()) {
    if (t != task_) out.push_back(t + "/device:cpu:0");
  }
  return out;
}

void GrpcCluster::ServeDevices(const DeviceSet* devices,
                               ThreadPool* inter_op_pool) {
  worker_->ServeDevices(devices, inter_op_pool);
  if (worker_index_ < 0) return;
  // The all_reduce kernel's (framework/collectives.h).
  auto collectives = std::make_shared<WorkerCollectives>(
      worker_.get(), spec_.num_tasks("worker"), worker_index_);
  absl::Status s = devices->device(0)
                       ->resources()
                       ->LookupOrCreate<Collectives>(
                           Collectives::kName, [&] { return collectives; })
                       .status();
  (void)s;  // only this call makes a resource of that name
  std::lock_guard<std::mutex> lock(beat_mu_);
  collectives_ = std::move(collectives);
}

int64_t GrpcCluster::NewStepId() {
  static const int64_t base = RandomStepBase();
  static std::atomic<int64_t> next{1};
  return base + next.fetch_add(1);
}

std::shared_ptr<Rendezvous> GrpcCluster::StepRendezvous(int64_t step) {
  return worker_->Step(step);
}

absl::StatusOr<std::string> GrpcCluster::RegisterPartition(
    const std::string& task, const Graph& graph, bool sync) {
  {
    std::lock_guard<std::mutex> lock(used_mu_);
    used_.insert(task);
  }
  proto::GraphDef def = ToGraphDef(graph);
  def.set_commit_sends(sync && spec_.is_replicated(task));
  return channels_->RegisterGraph(task, def);
}

void GrpcCluster::RunPartition(const std::string& task,
                               const std::string& handle, int64_t step,
                               int64_t snapshot, int64_t update, bool returns,
                               bool ends, PartitionDone done) {
  // Only a replicated task keeps the writes' tags. (Its values are fetched:
  // a fetch from a primary that fails over is watched, primary_watch.h.)
  const bool tagged = spec_.is_replicated(task);
  std::shared_ptr<runnel::StepRendezvous> rendezvous;
  if (returns && !tagged) {
    rendezvous = worker_->Step(step);
    rendezvous->ReturnedBy(task);
  }
  channels_->RunGraph(task, handle, step, seed_, snapshot,
                      tagged ? writer_ : std::string(), tagged ? update : 0,
                      rendezvous != nullptr ? task_ : std::string(),
                      ends && !tagged,
                      [this, task, step, rendezvous, done = std::move(done)](
                          absl::Status s, const proto::RunGraphResponse& resp) {
                        if (s.ok() && rendezvous != nullptr) {
                          s = Deliver(task, step, resp, rendezvous);
                        }
                        done(s, s.ok() && resp.step_ended());
                      });
}

absl::Status GrpcCluster::Deliver(
    const std::string& task, int64_t step, const proto::RunGraphResponse& resp,
    const std::shared_ptr<runnel::StepRendezvous>& to) {
  auto foreign = [&](const std::string& key) {
    return TaskOfDevice(SrcDeviceOfKey(key)) != task ||
           TaskOfDevice(DstDeviceOfKey(key)) != task_;
  };
  for (const std::string& key : resp.left()) {
    if (foreign(key)) {
      return absl::DataLossError(
          StrCat(task, " left a value of another task: '", key, "'"));
    }
  }
  for (const proto::ReturnedTensor& r : resp.returned()) {
    if (foreign(r.key())) {
      return absl::DataLossError(
          StrCat(task, " returned a value of another task: '", r.key(), "'"));
    }
    Tensor value;
    if (!r.is_dead()) {
      absl::StatusOr<Tensor> v = FromProto(r.value());
      if (!v.ok()) {
        return absl::DataLossError(StrCat(task, " returned a malformed '",
                                          r.key(),
                                          "': ", v.status().message()));
      }
      value = *std::move(v);
    }
    RN_RETURN_IF_ERROR(to->Send(r.key(), std::move(value), r.is_dead()));
  }
  std::vector<std::string> left(resp.left().begin(), resp.left().end());
  to->Answered(task, left);
  for (const std::string& key : left) {
    channels_->RecvTensor(
        task, key, step,
        [r = to, key](const absl::Status& s, const Tensor& t, bool dead) {
          if (!s.ok()) {
            r->Abort(s);
          } else {
            (void)r->Send(key, t, dead);  // fails only in an aborted step
          }
        });
  }
  return absl::OkStatus();
}

int64_t GrpcCluster::NewUpdate() { return next_update_.fetch_add(1); }

void GrpcCluster::AbortStep(int64_t step, const std::vector<std::string>& tasks,
                            const absl::Status& status) {
  worker_->AbortStep(step, status);
  for (const std::string& t : tasks) {
    channels_->StepCall(t, step, /*cancel=*/true, status);
  }
}

void GrpcCluster::EndStep(int64_t step, const std::vector<std::string>& tasks) {
  worker_->EndStep(step);
  for (const std::string& t : tasks) {
    channels_->StepCall(t, step, /*cancel=*/false, absl::OkStatus());
  }
}

absl::StatusOr<std::vector<bool>> GrpcCluster::VariablesInitialized(
    const std::string& task, const std::vector<std::string>& names) {
  proto::VariablesRequest req;
  for (const std::string& n : names) req.add_name(n);
  RN_ASSIGN_OR_RETURN(
      proto::VariablesResponse resp,
      channels_->Variables(task, WorkerChannels::VarCall::kState, req));
  if (resp.initialized_size() != static_cast<int>(names.size())) {
    return absl::DataLossError(StrCat(task, " answered for ",
                                      resp.initialized_size(), " of ",
                                      names.size(), " variables"));
  }
  return std::vector<bool>(resp.initialized().begin(),
                           resp.initialized().end());
}

absl::Status GrpcCluster::InitVariables(const std::string& task,
                                        const std::vector<std::string>& names,
                                        const std::vector<Tensor>& values) {
  // Small variables go together; a large one in chunks of rows, so no
  // message nears gRPC's limit (an embedding table may be gigabytes).
  constexpr int64_t kChunkBytes = 32 << 20;
  proto::VariablesRequest small;
  int64_t small_bytes = 0;
  auto send = [&](const proto::VariablesRequest& req) {
    return channels_->Variables(task, WorkerChannels::VarCall::kInit, req)
        .status();
  };
  for (size_t i = 0; i < names.size(); ++i) {
    const Tensor& t = values[i];
    const int64_t bytes = static_cast<int64_t>(t.bytes());
    if (bytes <= kChunkBytes || t.rank() == 0 || t.dim(0) < 2) {
      if (small_bytes + bytes > kChunkBytes && small.name_size() > 0) {
        RN_RETURN_IF_ERROR(send(small));
        small.Clear();
        small_bytes = 0;
      }
      small.add_name(names[i]);
      *small.add_value() = ToProto(t);
      small_bytes += bytes;
      continue;
    }
    const int64_t rows = t.dim(0);
    const int64_t step = std::max<int64_t>(1, kChunkBytes / (bytes / rows));
    for (int64_t r = 0; r < rows; r += step) {
      const int64_t n = std::min(step, rows - r);
      std::vector<int64_t> dims = t.shape().dims();
      dims[0] = n;
      Tensor chunk(t.dtype(), Shape(dims));
      std::memcpy(chunk.raw_data(),
                  static_cast<const char*>(t.raw_data()) + r * (bytes / rows),
                  chunk.bytes());
      proto::VariablesRequest req;
      req.add_name(names[i]);
      *req.add_value() = ToProto(chunk);
      req.set_first_row(r);
      req.set_total_rows(rows);
      RN_RETURN_IF_ERROR(send(req));
    }
  }
  return small.name_size() > 0 ? send(small) : absl::OkStatus();
}

absl::StatusOr<std::vector<Tensor>> GrpcCluster::ReadVariables(
    const std::string& task, const std::vector<std::string>& names) {
  proto::VariablesRequest req;
  for (const std::string& n : names) req.add_name(n);
  RN_ASSIGN_OR_RETURN(
      proto::VariablesResponse resp,
      channels_->Variables(task, WorkerChannels::VarCall::kRead, req));
  std::vector<Tensor> out;
  for (const proto::TensorProto& p : resp.value()) {
    RN_ASSIGN_OR_RETURN(Tensor t, FromProto(p));
    out.push_back(std::move(t));
  }
  return out;
}

absl::Status GrpcCluster::FreezePs(const std::vector<std::string>& ps,
                                   int64_t id, double drain_s) {
  const double lease_s = drain_s + kSnapshotReadSeconds;
  const double rpc_s = drain_s + 5;
  proto::FreezeRequest req;
  req.set_freeze_id(id);
  req.set_lease_seconds(lease_s);
  // In turn: a step that got through on one ps before its freeze may be
  // held on another, so every ps admits the union of the open steps.
  absl::flat_hash_set<int64_t> open;
  for (const std::string& t : ps) {
    RN_ASSIGN_OR_RETURN(proto::FreezeResponse resp,
                        channels_->Freeze(t, req, rpc_s));
    open.insert(resp.open_step().begin(), resp.open_step().end());
  }
  req.mutable_step()->Assign(open.begin(), open.end());
  req.set_phase(proto::FreezeRequest::ADMIT);
  for (const std::string& t : ps) {
    RN_RETURN_IF_ERROR(channels_->Freeze(t, req, rpc_s).status());
  }
  // Each open step was open on some ps until it ended everywhere (EndStep
  // comes after all its partitions), so draining each ps of them is enough.
  req.set_phase(proto::FreezeRequest::DRAIN);
  const auto end =
      std::chrono::steady_clock::now() +
      std::chrono::microseconds(static_cast<int64_t>(drain_s * 1e6));
  for (const std::string& t : ps) {
    const double left =
        std::chrono::duration<double>(end - std::chrono::steady_clock::now())
            .count();
    req.set_wait_seconds(std::max(left, 0.0));
    RN_ASSIGN_OR_RETURN(proto::FreezeResponse resp,
                        channels_->Freeze(t, req, rpc_s));
    if (!resp.drained()) {
      return absl::DeadlineExceededError(
          StrCat(open.size(), " step(s) in flight did not end on ", t,
                 " within ", drain_s,
                 " s (a step waiting for another worker's: a queue, or a "
                 "synchronous barrier)"));
    }
  }
  return absl::OkStatus();
}

bool GrpcCluster::UnfreezePs(const std::vector<std::string>& ps, int64_t id) {
  proto::FreezeRequest req;
  req.set_phase(proto::FreezeRequest::UNFREEZE);
  req.set_freeze_id(id);
  bool held = true;
  for (const std::string& t : ps) {
    absl::StatusOr<proto::FreezeResponse> resp = channels_->Freeze(t, req, 5);
    held = held && resp.ok() && resp->held();
  }
  return held;
}

absl::Status GrpcCluster::ReadConsistently(
    const std::function<absl::Status(int64_t snapshot)>& read, double drain_s) {
  const std::vector<std::string> ps = PsTasks();
  if (ps.empty()) return read(0);
  static std::atomic<int64_t> next_id{1};
  // With replicated parameter servers a failover (a few seconds) can stop
  // a freeze, or end it under the read (the new primary was not frozen):
  // the snapshot is taken again, once the primaries answer.
  const int attempts = spec_.has_replicas() ? 4 : 1;
  for (int attempt = 1;; ++attempt) {
    const int64_t id = (RandomStepBase() >> 1) + next_id.fetch_add(1);
    absl::Status frozen = FreezePs(ps, id, drain_s);
    if (!frozen.ok()) {
      UnfreezePs(ps, id);
      if (attempt < attempts) {
        WaitForTasks(10).IgnoreError();
        continue;
      }
      WarnSnapshot(std::string(frozen.message()));
      return read(0);
    }
    const absl::Status s = read(id);
    if (UnfreezePs(ps, id) || !s.ok()) return s;
    if (attempt < attempts) {
      WaitForTasks(10).IgnoreError();
      continue;
    }
    WarnSnapshot(
        StrCat("a parameter server's freeze lapsed during the read "
               "(it took over ",
               kSnapshotReadSeconds, " s, or a backup took over)"));
    return s;
  }
}

void GrpcCluster::WarnSnapshot(std::string_view why) {
  unfrozen_reads_.fetch_add(1);
  if (snapshot_warned_.exchange(true)) return;
  std::fprintf(stderr,
               "warning: a checkpoint may mix a step's updates: the "
               "parameter servers could not be paused for it: %s (warned "
               "once)\n",
               std::string(why).c_str());
}

absl::Status GrpcCluster::WaitForTasks(double seconds) {
  const auto end =
      std::chrono::steady_clock::now() +
      std::chrono::microseconds(static_cast<int64_t>(seconds * 1e6));
  std::vector<std::string> tasks;
  {
    std::lock_guard<std::mutex> lock(used_mu_);
    tasks.assign(used_.begin(), used_.end());
  }
  if (tasks.empty()) tasks = spec_.TaskNames();
  for (const std::string& t : tasks) {
    if (t == task_) continue;
    const double left =
        std::chrono::duration<double>(end - std::chrono::steady_clock::now())
            .count();
    RN_RETURN_IF_ERROR(channels_->WaitFor(t, std::max(left, 0.001)));
  }
  return absl::OkStatus();
}

void GrpcCluster::Inform(const std::string& message) {
  std::fprintf(stderr, "note: %s\n", message.c_str());
}

}  // namespace runnel
