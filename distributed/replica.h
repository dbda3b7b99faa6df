// One replica of a replicated parameter-server task (docs/cluster.md,
// "Replicated parameter servers"): primary-backup replication by state.
//
// Every replica process of a task serves the same task name and device;
// one is the primary. After each partition that ran on the primary, and
// each set of variables, the primary sends every backup the variables
// (with the writes they hold, framework/variable.h: WriteKey) and random
// counters that changed since its last message, and answers its caller
// only once every backup holds them. So whatever a worker was told is
// done is on every replica, and a worker that retries a step after the
// primary died finds on the backup the writes it already made, which are
// not made again.
//
// Roles: every replica starts as a backup. A worker that finds no primary
// promotes one (the replica holding the newest state, or in a new cluster,
// where none holds any, the first), with an epoch higher than any it saw.
// A backup takes messages from a primary of its epoch or a higher one and
// refuses older ones, so a primary that was replaced, and may not know it,
// cannot acknowledge anything more: its next message is refused and it
// steps down. A replica that restarts comes back as a backup without
// state and gets the whole state in the primary's next message.
//
// A promoted primary serves alone while the replica it replaced does not
// answer (it is dead or stopped; it cannot acknowledge anything, as above),
// asking it again each second; once it answers it is a backup again, and
// every update waits for it as before. A primary whose backup stops
// answering otherwise fails its updates (the workers retry them) until the
// backup is back: only a worker that cannot reach the primary may promote,
// so that two replicas never serve alone at once.
#ifndef RUNNEL_DISTRIBUTED_REPLICA_H_
#define RUNNEL_DISTRIBUTED_REPLICA_H_

#include <atomic>
#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "distributed/grpc_options.h"
#include "distributed/worker.grpc.pb.h"
#include "distributed/worker.h"
#include "framework/resource_mgr.h"

namespace runnel {

class ReplicaServer : public Replication {
 public:
  // Replica `index` of `task`, whose replicas listen at `addresses`; its
  // state is `resources`.
  ReplicaServer(std::string task, int index, std::vector<std::string> addresses,
                GrpcOptions options, ResourceMgr* resources,
                int64_t incarnation);
  ~ReplicaServer() override;

  absl::Status CheckPrimary() const override;
  absl::Status Sync() override;
  // Called with why when this replica stops being the primary (the steps
  // open here are aborted with it: their values must come from the new
  // primary).
  void set_on_demote(std::function<void(const absl::Status&)> f) {
    on_demote_ = std::move(f);
  }

  // The service's side (worker.proto).
  void Status(proto::GetStatusResponse* resp) const;
  void Apply(const proto::ReplicateRequest& req,
             proto::ReplicateResponse* resp);
  absl::StatusOr<int64_t> Promote(const proto::PromoteRequest& req);

 private:
  struct Peer {
    int index = 0;
    std::string address;
    std::unique_ptr<proto::WorkerService::Stub> stub;
    // Out of the replica set since this replica's promotion (it did not
    // answer): asked again at `next_ask`, and skipped until it answers.
    bool out = false;
    std::chrono::steady_clock::time_point next_ask;
  };
  // The message of the state written since the last one (all of it when
  // `full`), and the versions it carries.
  proto::ReplicateRequest Collect(bool full,
                                  std::map<std::string, uint64_t>* versions,
                                  std::map<std::string, uint64_t>* counters)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(sync_mu_);
  // ResourceExhausted when `req` is over the largest message.
  absl::Status CheckSize(const proto::ReplicateRequest& req) const;
  // Sends `req` to `peer`; its answer.
  absl::StatusOr<proto::ReplicateResponse> Send(
      Peer& peer, const proto::ReplicateRequest& req, double seconds);
  absl::Status Install(const proto::ReplicateRequest& req);
  // Apply's work; returns Demote's status.
  absl::Status ApplyLocked(const proto::ReplicateRequest& req,
                           proto::ReplicateResponse* resp)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  std::string Name() const;  // "/job:ps/task:0 (replica 1)"
  // Steps down (under mu_); the status for on_demote_, or OK when this was
  // no primary.
  absl::Status Demote(int64_t epoch) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Forgets the state (a primary that a newer one replaced, whose state
  // lacks what that one did alone and may hold what it never
  // acknowledged; a replica promoted empty, `fresh`): every variable
  // uninitialized, the replicated states and random counters gone, as in
  // a replica just started. Only a replica that holds the current state
  // is promoted with it; where none does (the newest primary died before
  // the other caught up), the task starts empty and the chief restores it
  // from the newest checkpoint, never from a stale copy.
  void DropState() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const std::string task_;
  const int index_;
  const GrpcOptions options_;
  ResourceMgr* const resources_;
  const int64_t incarnation_;
  std::function<void(const absl::Status&)> on_demote_;

  // The role (under mu_).
  mutable std::mutex mu_;
  bool primary_ ABSL_GUARDED_BY(mu_) = false;
  int64_t epoch_ ABSL_GUARDED_BY(mu_) = 0;
  bool holds_state_ ABSL_GUARDED_BY(mu_) = false;
  // The replicas that did not answer the worker that promoted this one.
  std::vector<int> silent_ ABSL_GUARDED_BY(mu_);
  // A backup's base: the primary (incarnation, epoch) and the last of its
  // messages installed.
  int64_t base_incarnation_ ABSL_GUARDED_BY(mu_) = 0;
  int64_t base_epoch_ ABSL_GUARDED_BY(mu_) = -1;
  int64_t base_seq_ ABSL_GUARDED_BY(mu_) = 0;

  // The primary's side (under sync_mu_, held while a message is out).
  std::mutex sync_mu_;
  std::vector<Peer> peers_ ABSL_GUARDED_BY(sync_mu_);
  int64_t seq_ ABSL_GUARDED_BY(sync_mu_) = 0;
  int64_t seq_epoch_ ABSL_GUARDED_BY(sync_mu_) = -1;
  bool need_full_ ABSL_GUARDED_BY(sync_mu_) = true;
  // Set by Promote: the silent peers are out until they answer.
  std::atomic<bool> promoted_{false};
  // What the backups hold: each variable's and state's version, each
  // counter's value.
  std::map<std::string, uint64_t> sent_versions_ ABSL_GUARDED_BY(sync_mu_);
  std::map<std::string, uint64_t> sent_counters_ ABSL_GUARDED_BY(sync_mu_);
};

}  // namespace runnel

#endif  // RUNNEL_DISTRIBUTED_REPLICA_H_
