#include "distributed/worker.h"

#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/io/zero_copy_stream_impl_lite.h>

#include <algorithm>
#include <map>
#include <random>
#include <utility>

#include "absl/strings/match.h"
#include "base/errors.h"
#include "base/status_macros.h"
#include "base/strings.h"
#include "distributed/cluster_spec.h"
#include "framework/graph_def.h"
#include "framework/kernel.h"
#include "framework/live_workers.h"
#include "framework/replicated_state.h"
#include "framework/variable.h"

namespace runnel {
namespace {

// How many ended steps a worker remembers, to refuse late requests.
constexpr size_t kEndedSteps = 4096;
// A step whose partition here ended this long ago without the step ending
// (its master died before EndStep) no longer counts as open.
constexpr std::chrono::seconds kStaleStep(30);
// The longest lease a freeze may ask for.
constexpr double kMaxLeaseSeconds = 60;

std::chrono::steady_clock::time_point LeaseEnd(double seconds) {
  // (NaN, from a malformed request, is 0.)
  seconds = seconds > 0 ? std::min(seconds, kMaxLeaseSeconds) : 0.0;
  return std::chrono::steady_clock::now() +
         std::chrono::microseconds(static_cast<int64_t>(seconds * 1e6));
}

// Ops whose state (other than variables and random counters) a replicated
// task does not copy to its backups: queues, readers.
bool UnreplicatedState(const std::string& op) {
  return op == "queue" || op.starts_with("enqueue") ||
         op.starts_with("dequeue") || op == "queue_size" ||
         op == "queue_close" || op == "read_idx";
}

int64_t RandomIncarnation() {
  std::random_device rd;
  const uint64_t v = (uint64_t{rd()} << 32) ^ rd();
  return static_cast<int64_t>(v >> 1);
}

// The bytes of `def` with map fields in a fixed order, so that equal graphs
// give equal bytes.
std::string DeterministicBytes(const proto::GraphDef& def) {
  std::string bytes;
  {
    google::protobuf::io::StringOutputStream out(&bytes);
    google::protobuf::io::CodedOutputStream coded(&out);
    coded.SetSerializationDeterministic(true);
    def.SerializeToCodedStream(&coded);
  }
  return bytes;
}

}  // namespace

bool StepRendezvous::Recv(const std::string& key, Done done,
                          absl::Status* status, Tensor* value, bool* is_dead) {
  const std::string src_task = TaskOfDevice(SrcDeviceOfKey(key));
  if (src_task == task_) {
    return Rendezvous::Recv(key, std::move(done), status, value, is_dead);
  }
  {
    std::lock_guard<std::mutex> lock(returned_mu_);
    if (prefetched_.contains(key)) {
      return Rendezvous::Recv(key, std::move(done), status, value, is_dead);
    }
    if (auto it = returned_by_.find(src_task); it != returned_by_.end()) {
      if (it->second && !left_.contains(key) && !Holds(key)) {
        *status = absl::DataLossError(
            StrCat(src_task, "'s run ended without sending '", key, "'"));
        *is_dead = true;
        return true;
      }
      return Rendezvous::Recv(key, std::move(done), status, value, is_dead);
    }
  }
  fetch_(src_task, key, step_, std::move(done));
  return false;
}

void StepRendezvous::Prefetch(const std::vector<std::string>& keys) {
  if (fetch_many_ == nullptr) return;
  std::map<std::string, std::vector<std::string>> by_task;
  {
    std::lock_guard<std::mutex> lock(returned_mu_);
    for (const std::string& key : keys) {
      std::string src_task = TaskOfDevice(SrcDeviceOfKey(key));
      if (src_task == task_ || returned_by_.contains(src_task) ||
          prefetched_.contains(key)) {
        continue;
      }
      by_task[std::move(src_task)].push_back(key);
    }
    std::erase_if(by_task, [](const auto& t) { return t.second.size() < 2; });
    for (const auto& [task, ks] : by_task)
      prefetched_.insert(ks.begin(), ks.end());
  }
  for (auto& [task, ks] : by_task) {
    // The rendezvous outlives the call: the step's end waits for nothing,
    // so the call keeps it.
    fetch_many_(task, std::move(ks), step_,
                [self = shared_from_this()](const std::string& key,
                                            const absl::Status& s,
                                            const Tensor& t, bool dead) {
                  if (!s.ok()) {
                    self->Abort(s);
                  } else {
                    // Fails only in an aborted step.
                    (void)self->Send(key, t, dead);
                  }
                });
  }
}

void StepRendezvous::ReturnedBy(const std::string& task) {
  std::lock_guard<std::mutex> lock(returned_mu_);
  returned_by_.emplace(task, false);
}

void StepRendezvous::Answered(const std::string& task,
                              const std::vector<std::string>& left) {
  {
    std::lock_guard<std::mutex> lock(returned_mu_);
    returned_by_[task] = true;
    left_.insert(left.begin(), left.end());
  }
  const absl::flat_hash_set<std::string> fetched(left.begin(), left.end());
  FailWaiters(
      [&](const std::string& key) {
        return TaskOfDevice(SrcDeviceOfKey(key)) == task &&
               !fetched.contains(key);
      },
      absl::DataLossError(StrCat(
          task, "'s run ended without sending a value this step waits for")));
}

Worker::Worker(std::string task, StepRendezvous::Fetch fetch,
               StepRendezvous::FetchMany fetch_many)
    : task_(std::move(task)),
      fetch_(std::move(fetch)),
      fetch_many_(std::move(fetch_many)),
      incarnation_(RandomIncarnation()) {}

Worker::~Worker() = default;

void Worker::ServeDevices(const DeviceSet* devices, ThreadPool* inter_op_pool,
                          int expected_workers) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    devices_ = devices;
    inter_op_pool_ = inter_op_pool;
  }
  if (expected_workers > 0) {
    absl::Status s =
        resources()
            ->LookupOrCreate<LiveWorkers>(
                LiveWorkers::kName,
                [&] { return std::make_shared<LiveWorkers>(expected_workers); })
            .status();
    (void)s;  // a fresh resource manager: nothing else holds the name
  }
}

void Worker::set_replication(Replication* replication) {
  replication_ = replication;
  ResourceMgr* rm = resources();
  if (rm == nullptr || replication == nullptr) return;
  absl::Status s =
      rm->LookupOrCreate<ReplicaCommit>(ReplicaCommit::kName, [replication] {
          return std::make_shared<ReplicaCommit>(
              [replication] { return replication->Sync(); });
        }).status();
  (void)s;  // a fresh resource manager: nothing else holds the name
}

void Worker::Heartbeat(const std::string& task, bool leaving) {
  ResourceMgr* rm = resources();
  if (rm == nullptr) return;
  if (auto live = rm->Lookup<LiveWorkers>(LiveWorkers::kName)) {
    live->Beat(task, leaving);
  }
}

std::shared_ptr<StepRendezvous> Worker::Step(int64_t step) {
  std::lock_guard<std::mutex> lock(mu_);
  if (ended_.contains(step)) {
    auto r = std::make_shared<StepRendezvous>(task_, step, fetch_, fetch_many_);
    r->Abort(absl::AbortedError(StrCat("step ", step, " has ended")));
    return r;
  }
  std::shared_ptr<StepRendezvous>& r = steps_[step];
  if (r == nullptr)
    r = std::make_shared<StepRendezvous>(task_, step, fetch_, fetch_many_);
  return r;
}

absl::StatusOr<std::shared_ptr<StepRendezvous>> Worker::PrimaryStep(
    int64_t step) {
  std::shared_ptr<StepRendezvous> r = Step(step);
  if (absl::Status s = CheckPrimary(); !s.ok()) {
    EndStep(step);
    return s;
  }
  return r;
}

void Worker::AbortStep(int64_t step, const absl::Status& status) {
  Step(step)->Abort(status);
}

void Worker::AbortAllSteps(const absl::Status& status) {
  std::vector<std::pair<int64_t, std::shared_ptr<StepRendezvous>>> open;
  std::vector<int64_t> ran;
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (const auto& [step, r] : steps_) open.emplace_back(step, r);
    for (const auto& [step, o] : open_) ran.push_back(step);
  }
  for (const auto& [step, r] : open) r->Abort(status);
  // Their masters end them with the new primary: they are over here (a
  // snapshot's freeze, should this replica become the primary again, must
  // not wait for them).
  for (const auto& [step, r] : open) EndStep(step);
  for (int64_t step : ran) EndStep(step);
}

void Worker::EndStep(int64_t step) {
  std::shared_ptr<StepRendezvous> r;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = steps_.find(step);
    if (it != steps_.end()) {
      r = std::move(it->second);
      steps_.erase(it);
    }
    open_.erase(step);
    admission_cv_.notify_all();
    if (ended_.insert(step).second) {
      ended_order_.push_back(step);
      if (ended_order_.size() > kEndedSteps) {
        ended_.erase(ended_order_.front());
        ended_order_.pop_front();
      }
    }
  }
  // Values nobody received (an untaken branch's) go with it.
  if (r != nullptr) {
    r->Abort(absl::AbortedError(StrCat("step ", step, " has ended")));
  }
}

absl::Status Worker::CheckPrimary() const {
  return replication_ == nullptr ? absl::OkStatus()
                                 : replication_->CheckPrimary();
}

absl::StatusOr<std::string> Worker::RegisterGraph(const proto::GraphDef& def) {
  RN_RETURN_IF_ERROR(CheckPrimary());
  if (replication_ != nullptr) {
    for (const proto::NodeDef& n : def.node()) {
      if (!UnreplicatedState(n.op())) continue;
      return AttachNode(
          absl::UnimplementedError(
              StrCat("'", n.op(),
                     "' keeps state that a replicated parameter server "
                     "does not copy to its backups yet (queues and readers are "
                     "not replicated): place it on a task without replicas, or "
                     "run without --ps-replicas")),
          n.name(),
          SourceSpan{n.span().file(), n.span().line(), n.span().col(),
                     n.span().end_line(), n.span().end_col()});
    }
  }
  std::string bytes = DeterministicBytes(def);
  std::lock_guard<std::mutex> lock(mu_);
  if (auto it = handle_of_.find(bytes); it != handle_of_.end()) {
    return it->second;
  }
  if (devices_ == nullptr) {
    return absl::FailedPreconditionError(
        StrCat(task_, " runs no graphs (it serves no devices)"));
  }
  auto graph = std::make_shared<Graph>();
  RN_RETURN_IF_ERROR(FromGraphDef(def, graph.get()));
  Device* device = nullptr;
  for (const Node* n : graph->nodes()) {
    Device* d = devices_->Find(n->assigned_device());
    const int i = devices_->IndexOf(n->assigned_device());
    if (d == nullptr || !devices_->is_local(i) ||
        (device != nullptr && d != device)) {
      return absl::InvalidArgumentError(
          StrCat("a partition registered with ", task_, " has node '",
                 n->name(), "' on '", n->assigned_device(),
                 "', which is not one device of this task"));
    }
    device = d;
  }
  if (device == nullptr) {
    return absl::InvalidArgumentError("an empty partition was registered");
  }
  RN_ASSIGN_OR_RETURN(std::unique_ptr<Executor> executor,
                      Executor::Create(graph, device, inter_op_pool_));
  // Unique to this process: a handle from another process of the task (a
  // restarted one, the other replica) never names a graph here.
  const std::string handle =
      StrCat(task_, "#", incarnation_, ".", graphs_.size() + 1);
  auto r = std::make_shared<Registered>();
  // (The session marks every partition of a step with synchronous
  // replicas: GrpcCluster::RegisterPartition.)
  r->commits = replication_ != nullptr && def.commit_sends();
  r->graph = std::move(graph);
  r->executor = std::move(executor);
  graphs_.emplace(handle, std::move(r));
  handle_of_.emplace(std::move(bytes), handle);
  return handle;
}

void Worker::set_log(std::function<void(const std::string&)> log) {
  std::lock_guard<std::mutex> lock(mu_);
  log_ = std::move(log);
}

int Worker::num_graphs() const {
  std::lock_guard<std::mutex> lock(mu_);
  return static_cast<int>(graphs_.size());
}

absl::Status Worker::RunGraph(const std::string& handle, int64_t step,
                              uint64_t global_seed, int64_t freeze_id,
                              const std::function<bool()>& cancelled,
                              const UpdateTag* update, Returned* returned) {
  std::shared_ptr<Registered> r;
  std::function<void(const std::string&)> log;
  RN_ASSIGN_OR_RETURN(std::shared_ptr<StepRendezvous> rendezvous,
                      PrimaryStep(step));
  {
    std::unique_lock<std::mutex> lock(mu_);
    auto it = graphs_.find(handle);
    if (it == graphs_.end()) {
      // Registered with another process of this task: the caller's plan is
      // stale (Unavailable: the session plans the run again).
      const std::string of_task = StrCat(task_, "#");
      const std::string ours = StrCat(of_task, incarnation_, ".");
      if (absl::StartsWith(handle, of_task) &&
          !absl::StartsWith(handle, ours)) {
        return absl::UnavailableError(
            StrCat(task_, " has no graph '", handle,
                   "': it was registered with another process of the task "
                   "(one that restarted, or the replica a backup replaced)"));
      }
      return absl::NotFoundError(StrCat(task_, " has no graph '", handle, "'"));
    }
    r = it->second;
    // Held while frozen. Admission and counting the step open happen under
    // one lock, so a freeze sees every step that got through before it.
    for (;;) {
      const auto now = std::chrono::steady_clock::now();
      ExpireFreeze(now);
      if (frozen_.id == 0 || freeze_id == frozen_.id ||
          frozen_.admitted.contains(step)) {
        break;
      }
      lock.unlock();
      absl::Status aborted = rendezvous->AbortStatus();
      if (!aborted.ok()) return aborted;
      if (cancelled != nullptr && cancelled()) {
        return absl::CancelledError(StrCat("step ", step, " was cancelled"));
      }
      lock.lock();
      admission_cv_.wait_until(
          lock,
          std::min(frozen_.lease_end, now + std::chrono::milliseconds(200)));
    }
    if (!ended_.contains(step)) ++open_[step].running;
    log = log_;
  }
  if (log) log(StrCat("step ", step, ": ", handle, " runs"));
  rendezvous->Prefetch(r->executor->RootRecvKeys(step));
  CallFrame frame;
  absl::Status s = r->executor->Run(
      {.call_frame = &frame,
       .global_seed = global_seed,
       .rendezvous = rendezvous.get(),
       .step_id = step,
       .update = replication_ != nullptr ? update : nullptr,
       .before_send = r->commits ? std::function<absl::Status()>(
                                       [this] { return replication_->Sync(); })
                                 : nullptr});
  // A replicated task answers once its backups hold what the run wrote.
  if (s.ok() && replication_ != nullptr) s = replication_->Sync();
  // A replica that stepped down during the run ends the step here: its
  // master ends it with the new primary, and the demotion's
  // AbortAllSteps may have missed it (counted open just after). Else it
  // would count as open for kStaleStep, and hold up a snapshot's freeze
  // should this replica be the primary again.
  const absl::Status primary =
      replication_ != nullptr ? replication_->CheckPrimary() : absl::OkStatus();
  const bool demoted = !primary.ok();
  // What failed here after the step-down failed for it: the replica drops
  // its state when it learns of its successor (replica.h, DropState), and a
  // kernel of the run then finds a variable uninitialized. The master must
  // hear "not the primary" (Unavailable) and run the step again with the
  // successor, not a kernel's error, which would end the run and lose the
  // training (the cluster.netns flake under packet loss).
  if (demoted && !s.ok()) s = primary;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (auto it = open_.find(step); it != open_.end()) {
      --it->second.running;
      it->second.last_end = std::chrono::steady_clock::now();
    }
  }
  if (demoted) EndStep(step);
  if (returned != nullptr && s.ok() && !demoted) {
    TakeReturned(step, *rendezvous, returned);
  }
  admission_cv_.notify_all();
  if (log) {
    log(StrCat("step ", step, ": ", handle, " ended",
               s.ok() ? std::string() : StrCat(" (", s.ToString(), ")")));
  }
  return s;
}

void Worker::TakeReturned(int64_t step, StepRendezvous& rendezvous,
                          Returned* returned) {
  bool rest = false;
  std::vector<Rendezvous::Held> sent = rendezvous.Take(
      [&](const std::string& key) {
        return !returned->to.empty() &&
               TaskOfDevice(DstDeviceOfKey(key)) == returned->to;
      },
      &rest);
  int64_t bytes = 0;
  for (Rendezvous::Held& h : sent) {
    if (h.is_dead || static_cast<int64_t>(h.value.bytes()) <= kReturnedBytes) {
      bytes += h.is_dead ? 0 : static_cast<int64_t>(h.value.bytes());
      returned->values.push_back(std::move(h));
      continue;
    }
    // Held again for the caller's RecvTensor, which copies it once.
    returned->left.push_back(h.key);
    absl::Status s = rendezvous.Send(h.key, std::move(h.value), h.is_dead);
    // Fails only in a step aborted since: the caller's fetch hears why.
    (void)s;
  }
  AddBytesSent(bytes);
  if (returned->may_end && !rest && returned->left.empty()) {
    EndStep(step);
    returned->step_ended = true;
  }
}

void Worker::ExpireFreeze(std::chrono::steady_clock::time_point now) {
  if (frozen_.id != 0 && now >= frozen_.lease_end) {
    frozen_ = Frozen();
    admission_cv_.notify_all();
  }
}

bool Worker::IsOpen(int64_t step,
                    std::chrono::steady_clock::time_point now) const {
  auto it = open_.find(step);
  return it != open_.end() &&
         (it->second.running > 0 || now - it->second.last_end < kStaleStep);
}

std::vector<int64_t> Worker::Freeze(int64_t freeze_id, double lease_s) {
  std::lock_guard<std::mutex> lock(mu_);
  const auto now = std::chrono::steady_clock::now();
  frozen_ = Frozen();
  frozen_.id = freeze_id;
  frozen_.lease_end = LeaseEnd(lease_s);
  std::vector<int64_t> out;
  for (auto it = open_.begin(); it != open_.end();) {
    if (IsOpen(it->first, now)) {
      out.push_back(it->first);
      ++it;
    } else {
      open_.erase(it++);  // stale: its master is gone
    }
  }
  return out;
}

absl::Status Worker::Admit(int64_t freeze_id, const std::vector<int64_t>& steps,
                           double lease_s) {
  std::lock_guard<std::mutex> lock(mu_);
  ExpireFreeze(std::chrono::steady_clock::now());
  if (frozen_.id != freeze_id || freeze_id == 0) {
    return absl::FailedPreconditionError(
        StrCat(task_, ": the freeze lapsed (its lease ran out)"));
  }
  frozen_.lease_end = LeaseEnd(lease_s);
  frozen_.admitted.insert(steps.begin(), steps.end());
  admission_cv_.notify_all();
  return absl::OkStatus();
}

absl::StatusOr<bool> Worker::Drain(int64_t freeze_id,
                                   const std::vector<int64_t>& steps,
                                   double wait_s, double lease_s,
                                   const std::function<bool()>& cancelled) {
  const auto end = LeaseEnd(wait_s);
  std::unique_lock<std::mutex> lock(mu_);
  for (;;) {
    const auto now = std::chrono::steady_clock::now();
    ExpireFreeze(now);
    if (frozen_.id != freeze_id || freeze_id == 0) {
      return absl::FailedPreconditionError(
          StrCat(task_, ": the freeze lapsed (its lease ran out)"));
    }
    frozen_.lease_end = std::max(frozen_.lease_end, LeaseEnd(lease_s));
    bool open = false;
    for (int64_t s : steps) open = open || IsOpen(s, now);
    if (!open) return true;
    if (now >= end || (cancelled != nullptr && cancelled())) return false;
    admission_cv_.wait_until(
        lock, std::min(end, now + std::chrono::milliseconds(200)));
  }
}

bool Worker::Unfreeze(int64_t freeze_id) {
  std::lock_guard<std::mutex> lock(mu_);
  ExpireFreeze(std::chrono::steady_clock::now());
  if (frozen_.id != freeze_id || freeze_id == 0) return false;
  frozen_ = Frozen();
  admission_cv_.notify_all();
  return true;
}

ResourceMgr* Worker::resources() const {
  std::lock_guard<std::mutex> lock(mu_);
  return devices_ == nullptr ? nullptr : devices_->device(0)->resources();
}

absl::StatusOr<ResourceMgr*> Worker::State() const {
  ResourceMgr* rm = resources();
  if (rm == nullptr) {
    return absl::FailedPreconditionError(StrCat(task_, " holds no state"));
  }
  return rm;
}

absl::StatusOr<std::vector<bool>> Worker::VariablesInitialized(
    const std::vector<std::string>& names) const {
  RN_RETURN_IF_ERROR(CheckPrimary());
  RN_ASSIGN_OR_RETURN(ResourceMgr * rm, State());
  std::vector<bool> out;
  for (const std::string& name : names) {
    std::shared_ptr<Variable> v = rm->Lookup<Variable>(name);
    out.push_back(v != nullptr && v->initialized());
  }
  return out;
}

absl::Status Worker::SetVariables(const std::vector<std::string>& names,
                                  const std::vector<Tensor>& values,
                                  bool overwrite) {
  RN_RETURN_IF_ERROR(CheckPrimary());
  RN_ASSIGN_OR_RETURN(ResourceMgr * rm, State());
  if (names.size() != values.size()) {
    return absl::InvalidArgumentError(
        StrCat(names.size(), " variable names but ", values.size(), " values"));
  }
  for (size_t i = 0; i < names.size(); ++i) {
    const Tensor& t = values[i];
    RN_ASSIGN_OR_RETURN(std::shared_ptr<Variable> v,
                        rm->LookupOrCreate<Variable>(names[i], [&] {
                          return std::make_shared<Variable>(t.dtype(),
                                                            t.shape());
                        }));
    if (!overwrite && v->initialized()) continue;
    absl::Status s = v->Assign(t);
    if (!s.ok()) {
      return absl::InvalidArgumentError(
          StrCat("variable '", names[i], "' on ", task_, ": ", s.message()));
    }
  }
  return replication_ != nullptr ? replication_->Sync() : absl::OkStatus();
}

absl::StatusOr<std::vector<Tensor>> Worker::ReadVariables(
    const std::vector<std::string>& names) const {
  RN_RETURN_IF_ERROR(CheckPrimary());
  RN_ASSIGN_OR_RETURN(ResourceMgr * rm, State());
  std::vector<Tensor> out;
  for (const std::string& name : names) {
    std::shared_ptr<Variable> v = rm->Lookup<Variable>(name);
    if (v == nullptr) {
      return absl::NotFoundError(
          StrCat(task_, " has no variable '", name, "'"));
    }
    // In host memory, also when a GPU of this task holds it.
    RN_RETURN_IF_ERROR(v->MoveTo(nullptr));
    RN_ASSIGN_OR_RETURN(Tensor t, v->Read());
    out.push_back(std::move(t));
  }
  return out;
}

}  // namespace runnel
