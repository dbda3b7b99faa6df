#include "distributed/replica.h"

#include <grpcpp/grpcpp.h>

#include <algorithm>
#include <cstdio>
#include <utility>

#include "base/status_macros.h"
#include "base/strings.h"
#include "distributed/grpc_util.h"
#include "framework/graph_def.h"
#include "framework/replicated_state.h"
#include "framework/variable.h"

namespace runnel {
namespace {

// How long a primary waits for a backup's answer before it fails the
// update (the worker then tries again).
constexpr double kReplicateSeconds = 5;
// A promoted primary's asking the replica it replaced: how long it waits,
// and how often it asks.
constexpr double kAskOutSeconds = 0.2;
constexpr std::chrono::milliseconds kAskOutEvery(250);

}  // namespace

ReplicaServer::ReplicaServer(std::string task, int index,
                             std::vector<std::string> addresses,
                             GrpcOptions options, ResourceMgr* resources,
                             int64_t incarnation)
    : task_(std::move(task)),
      index_(index),
      options_(std::move(options)),
      resources_(resources),
      incarnation_(incarnation) {
  std::lock_guard<std::mutex> lock(sync_mu_);
  for (size_t i = 0; i < addresses.size(); ++i) {
    if (static_cast<int>(i) == index_) continue;
    Peer peer;
    peer.index = static_cast<int>(i);
    peer.address = addresses[i];
    peer.stub = proto::WorkerService::NewStub(
        NewTaskChannel(addresses[i], options_, /*fast=*/true));
    peers_.push_back(std::move(peer));
  }
}

ReplicaServer::~ReplicaServer() = default;

std::string ReplicaServer::Name() const {
  return StrCat(task_, " (replica ", index_, ")");
}

absl::Status ReplicaServer::Demote(int64_t epoch) {
  const bool was = primary_;
  primary_ = false;
  epoch_ = std::max(epoch_, epoch);
  if (!was) return absl::OkStatus();
  return absl::UnavailableError(
      StrCat(Name(), " is no longer the task's primary (a backup took over)"));
}

void ReplicaServer::DropState() {
  if (holds_state_) {
    std::fprintf(stderr,
                 "note: %s drops its copy of the task's state: it is no "
                 "longer current\n",
                 Name().c_str());
  }
  holds_state_ = false;
  base_epoch_ = -1;
  for (const std::string& name : resources_->Names<Variable>()) {
    if (auto v = resources_->Lookup<Variable>(name)) {
      v->Install(Variable::Copy()).IgnoreError();  // (cannot fail: empty)
    }
  }
  resources_->Erase<ReplicatedState>();
  resources_->Erase<RandomCounter>();
}

absl::Status ReplicaServer::CheckPrimary() const {
  std::lock_guard<std::mutex> lock(mu_);
  if (primary_) return absl::OkStatus();
  return absl::UnavailableError(
      StrCat(Name(), " is a backup, not the task's primary"));
}

void ReplicaServer::Status(proto::GetStatusResponse* resp) const {
  std::lock_guard<std::mutex> lock(mu_);
  resp->set_replica(index_);
  resp->set_primary(primary_);
  resp->set_epoch(epoch_);
  resp->set_holds_state(holds_state_);
}

absl::StatusOr<int64_t> ReplicaServer::Promote(
    const proto::PromoteRequest& req) {
  std::lock_guard<std::mutex> lock(mu_);
  if (primary_ && epoch_ >= req.epoch()) return epoch_;
  if (!holds_state_ && !req.fresh()) {
    return absl::FailedPreconditionError(
        StrCat(Name(), " holds no copy of the task's state yet"));
  }
  // A task none of whose replicas holds its current state starts empty.
  if (req.fresh()) DropState();
  primary_ = true;
  holds_state_ = true;
  epoch_ = std::max(epoch_ + 1, req.epoch());
  silent_.assign(req.silent().begin(), req.silent().end());
  promoted_.store(true);
  return epoch_;
}

proto::ReplicateRequest ReplicaServer::Collect(
    bool full, std::map<std::string, uint64_t>* versions,
    std::map<std::string, uint64_t>* counters) {
  proto::ReplicateRequest req;
  req.set_full(full);
  // The states first, in their order (ReplicatedState::rank), then the
  // variables: a copy never holds an effect without its cause.
  std::vector<std::pair<std::string, std::shared_ptr<ReplicatedState>>>
      states;  // (by name, as Names gives them)
  for (const std::string& name : resources_->Names<ReplicatedState>()) {
    if (auto st = resources_->Lookup<ReplicatedState>(name)) {
      states.emplace_back(name, std::move(st));
    }
  }
  std::stable_sort(states.begin(), states.end(),
                   [](const auto& a, const auto& b) {
                     return a.second->rank() < b.second->rank();
                   });
  for (const auto& [name, state] : states) {
    const ReplicatedState& st = *state;
    auto sent = sent_versions_.find(name);
    if (!full && sent != sent_versions_.end() && sent->second == st.version()) {
      continue;
    }
    ReplicatedState::Saved saved = st.Save();
    proto::StateReplica* r = req.add_state();
    r->set_name(name);
    r->set_kind(st.kind());
    r->set_value(std::move(saved.bytes));
    (*versions)[name] = saved.version;
  }
  for (const std::string& name : resources_->Names<Variable>()) {
    std::shared_ptr<Variable> v = resources_->Lookup<Variable>(name);
    if (v == nullptr) continue;
    auto sent = sent_versions_.find(name);
    if (!full && sent != sent_versions_.end() && sent->second == v->version()) {
      continue;
    }
    absl::StatusOr<Variable::Copy> copy = v->Snapshot();
    if (!copy.ok()) continue;  // (a GPU's value; a ps holds none)
    proto::VariableReplica* r = req.add_variable();
    r->set_name(name);
    r->set_dtype(std::string(DTypeName(v->dtype())));
    ShapeToProto(v->shape(), r->mutable_shape());
    r->set_initialized(copy->initialized);
    if (copy->initialized) *r->mutable_value() = ToProto(copy->value);
    for (const auto& [writer, latest] : copy->applied.by_writer) {
      proto::WrittenKeys* k = r->add_applied();
      k->set_writer(writer);
      k->set_seq(latest.seq);
      for (const std::string& w : latest.writes) k->add_write(w);
    }
    (*versions)[name] = copy->version;
  }
  for (const std::string& name : resources_->Names<RandomCounter>()) {
    std::shared_ptr<RandomCounter> c = resources_->Lookup<RandomCounter>(name);
    if (c == nullptr) continue;
    const uint64_t next = c->next();
    auto sent = sent_counters_.find(name);
    if (!full && sent != sent_counters_.end() && sent->second == next) {
      continue;
    }
    proto::CounterReplica* r = req.add_counter();
    r->set_name(name);
    r->set_next(next);
    (*counters)[name] = next;
  }
  return req;
}

absl::StatusOr<proto::ReplicateResponse> ReplicaServer::Send(
    Peer& peer, const proto::ReplicateRequest& req, double seconds) {
  grpc::ClientContext ctx;
  if (!options_.token.empty()) ctx.AddMetadata(kTokenKey, options_.token);
  ctx.set_deadline(After(seconds));
  proto::ReplicateResponse resp;
  grpc::Status s = peer.stub->Replicate(&ctx, req, &resp);
  if (!s.ok()) {
    return absl::UnavailableError(
        StrCat(Name(), ": its backup at ", peer.address, " does not answer (",
               Reason(s), "); no update is acknowledged until it does"));
  }
  return resp;
}

absl::Status ReplicaServer::CheckSize(
    const proto::ReplicateRequest& req) const {
  if (req.ByteSizeLong() <= static_cast<size_t>(options_.max_message_bytes)) {
    return absl::OkStatus();
  }
  // (Permanent: not Unavailable, which workers would retry.)
  return absl::ResourceExhaustedError(StrCat(
      Name(), ": the state to copy to its backup is ", req.ByteSizeLong() >> 20,
      " MiB, over the ", options_.max_message_bytes >> 20,
      " MiB a message may carry; a replicated task does not split it yet"));
}

absl::Status ReplicaServer::Sync() {
  std::lock_guard<std::mutex> sync(sync_mu_);
  int64_t epoch = 0;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!primary_) {
      return absl::UnavailableError(
          StrCat(Name(), " is no longer the task's primary"));
    }
    epoch = epoch_;
  }
  if (seq_epoch_ != epoch) {  // promoted since: the backups' state is unknown
    seq_epoch_ = epoch;
    seq_ = 0;
    need_full_ = true;
  }
  const auto now = std::chrono::steady_clock::now();
  if (promoted_.exchange(false)) {
    // The replicas that did not answer the promoting worker just now (the
    // primary this one replaces among them) are out until they answer.
    std::vector<int> silent;
    {
      std::lock_guard<std::mutex> lock(mu_);
      silent = silent_;
    }
    for (Peer& peer : peers_) {
      peer.out =
          std::find(silent.begin(), silent.end(), peer.index) != silent.end();
      peer.next_ask = now + kAskOutEvery;
    }
  }
  std::map<std::string, uint64_t> versions, counters;
  // The message of what changed (or of the whole state), from this primary.
  auto message = [&](bool full) -> absl::StatusOr<proto::ReplicateRequest> {
    versions.clear();
    counters.clear();
    proto::ReplicateRequest req = Collect(full, &versions, &counters);
    req.set_epoch(epoch);
    req.set_sender(index_);
    req.set_sender_incarnation(incarnation_);
    RN_RETURN_IF_ERROR(CheckSize(req));
    return req;
  };
  RN_ASSIGN_OR_RETURN(proto::ReplicateRequest req, message(need_full_));
  if (!need_full_ && req.variable_size() == 0 && req.counter_size() == 0 &&
      req.state_size() == 0) {
    return absl::OkStatus();
  }
  for (Peer& peer : peers_) {
    if (peer.out && now < peer.next_ask) continue;
    for (int attempt = 0;; ++attempt) {
      req.set_seq(seq_ + 1);
      absl::StatusOr<proto::ReplicateResponse> resp =
          Send(peer, req, peer.out ? kAskOutSeconds : kReplicateSeconds);
      if (!resp.ok() && peer.out) {
        peer.next_ask = now + kAskOutEvery;
        break;  // still out: this update is held here alone
      }
      if (!resp.ok()) {
        need_full_ = true;  // the backup may or may not hold it
        return resp.status();
      }
      peer.out = false;
      if (resp->superseded()) {
        absl::Status demoted;
        {
          std::lock_guard<std::mutex> lock(mu_);
          demoted = Demote(resp->epoch());
          DropState();  // the newer primary served without it
        }
        if (!demoted.ok() && on_demote_) on_demote_(demoted);
        return absl::UnavailableError(
            StrCat(Name(), " is no longer the task's primary (replica at ",
                   peer.address, " follows a newer one)"));
      }
      if (!resp->needs_full()) break;
      if (attempt > 0 || req.full()) {
        need_full_ = true;
        return absl::UnavailableError(StrCat(Name(), ": its backup at ",
                                             peer.address,
                                             " did not take the whole state"));
      }
      // The backup restarted, or missed a message: the whole state.
      RN_ASSIGN_OR_RETURN(req, message(/*full=*/true));
    }
  }
  ++seq_;
  if (req.full()) {
    sent_versions_.clear();
    sent_counters_.clear();
  }
  for (const auto& [name, v] : versions) sent_versions_[name] = v;
  for (const auto& [name, c] : counters) sent_counters_[name] = c;
  need_full_ = false;
  return absl::OkStatus();
}

void ReplicaServer::Apply(const proto::ReplicateRequest& req,
                          proto::ReplicateResponse* resp) {
  absl::Status demoted;
  {
    std::lock_guard<std::mutex> lock(mu_);
    demoted = ApplyLocked(req, resp);
  }
  if (!demoted.ok() && on_demote_) on_demote_(demoted);
}

absl::Status ReplicaServer::ApplyLocked(const proto::ReplicateRequest& req,
                                        proto::ReplicateResponse* resp) {
  // A primary of an older epoch (or of the same, promoted by a worker that
  // saw another replica first: the lower index wins) is refused.
  if (req.epoch() < epoch_ ||
      (req.epoch() == epoch_ && primary_ && index_ < req.sender())) {
    resp->set_superseded(true);
    resp->set_epoch(epoch_);
    return absl::OkStatus();
  }
  absl::Status demoted = Demote(req.epoch());
  epoch_ = req.epoch();
  resp->set_epoch(epoch_);
  const bool based = base_incarnation_ == req.sender_incarnation() &&
                     base_epoch_ == req.epoch() && base_seq_ + 1 == req.seq();
  if (!req.full() && !based) {
    holds_state_ = false;  // not the current state, until the whole comes
    resp->set_needs_full(true);
    return demoted;
  }
  if (absl::Status s = Install(req); !s.ok()) {
    holds_state_ = false;
    base_epoch_ = -1;
    resp->set_needs_full(true);
    return demoted;
  }
  if (req.full()) {
    std::fprintf(stderr,
                 "note: %s holds the primary's whole state (replica %d, "
                 "epoch %lld)\n",
                 Name().c_str(), static_cast<int>(req.sender()),
                 static_cast<long long>(req.epoch()));
  }
  holds_state_ = true;
  base_incarnation_ = req.sender_incarnation();
  base_epoch_ = req.epoch();
  base_seq_ = req.seq();
  return demoted;
}

absl::Status ReplicaServer::Install(const proto::ReplicateRequest& req) {
  if (req.full()) {
    // What the message does not name, the primary does not hold.
    resources_->Erase<ReplicatedState>();
    resources_->Erase<RandomCounter>();
    std::set<std::string> named;
    for (const proto::VariableReplica& r : req.variable()) {
      named.insert(r.name());
    }
    for (const std::string& name : resources_->Names<Variable>()) {
      if (named.contains(name)) continue;
      if (auto v = resources_->Lookup<Variable>(name)) {
        RN_RETURN_IF_ERROR(v->Install(Variable::Copy()));
      }
    }
  }
  for (const proto::VariableReplica& r : req.variable()) {
    RN_ASSIGN_OR_RETURN(DType dtype, DTypeFromProto(r.dtype()));
    const Shape shape = ShapeFromProto(r.shape());
    RN_ASSIGN_OR_RETURN(std::shared_ptr<Variable> v,
                        resources_->LookupOrCreate<Variable>(r.name(), [&] {
                          return std::make_shared<Variable>(dtype, shape);
                        }));
    Variable::Copy copy;
    copy.initialized = r.initialized();
    if (copy.initialized) {
      RN_ASSIGN_OR_RETURN(copy.value, FromProto(r.value()));
    }
    for (const proto::WrittenKeys& k : r.applied()) {
      AppliedWrites::Latest& latest = copy.applied.by_writer[k.writer()];
      latest.seq = k.seq();
      latest.writes.insert(k.write().begin(), k.write().end());
    }
    RN_RETURN_IF_ERROR(v->Install(std::move(copy)));
  }
  for (const proto::StateReplica& r : req.state()) {
    std::shared_ptr<ReplicatedState> st =
        resources_->Lookup<ReplicatedState>(r.name());
    if (st == nullptr) {
      RN_ASSIGN_OR_RETURN(std::shared_ptr<ReplicatedState> made,
                          MakeReplicatedState(r.kind(), resources_));
      RN_ASSIGN_OR_RETURN(st, resources_->LookupOrCreate<ReplicatedState>(
                                  r.name(), [&] { return made; }));
    }
    RN_RETURN_IF_ERROR(st->Load(r.value()));
  }
  for (const proto::CounterReplica& c : req.counter()) {
    RN_ASSIGN_OR_RETURN(std::shared_ptr<RandomCounter> counter,
                        resources_->LookupOrCreate<RandomCounter>(c.name(), [] {
                          return std::make_shared<RandomCounter>();
                        }));
    counter->set_next(c.next());
  }
  return absl::OkStatus();
}

}  // namespace runnel
