// This task's channels to the other tasks of the cluster: one gRPC channel
// per task, made at first use, with the typed and generic stubs the
// cluster (grpc_cluster.h) and the task server (grpc_server.h) call
// through. Transport failures come back as Unavailable naming the task.
// Calls to a replicated task (replica.h) go to its primary: found at
// first use, and again by Resolve after a failure, which promotes a backup
// where the primary is gone. A primary that falls silent with calls out
// to it is found by a probe (primary_watch.h).
#ifndef RUNNEL_DISTRIBUTED_GRPC_CHANNELS_H_
#define RUNNEL_DISTRIBUTED_GRPC_CHANNELS_H_

#include <grpcpp/generic/generic_stub.h>
#include <grpcpp/grpcpp.h>
#include <grpcpp/support/proto_buffer_reader.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_join.h"
#include "base/errors.h"
#include "base/status_macros.h"
#include "base/strings.h"
#include "common_runtime/rendezvous.h"
#include "distributed/cluster_spec.h"
#include "distributed/grpc_options.h"
#include "distributed/grpc_util.h"
#include "distributed/primary_watch.h"
#include "distributed/replica_choice.h"
#include "distributed/tensor_coding.h"
#include "distributed/worker.grpc.pb.h"
#include "distributed/worker.h"

namespace runnel {

class WorkerChannels {
 public:
  WorkerChannels(ClusterSpec spec, GrpcOptions options)
      : spec_(std::move(spec)), options_(std::move(options)) {}
  ~WorkerChannels() { watch_->Stop(); }

  // The typed stub of `task`'s service, and a generic one for raw calls,
  // on one channel.
  struct Stubs {
    std::unique_ptr<proto::WorkerService::Stub> typed;
    std::unique_ptr<grpc::GenericStub> generic;
  };

  absl::StatusOr<proto::WorkerService::Stub*> Stub(const std::string& task) {
    RN_ASSIGN_OR_RETURN(Stubs * stubs, StubsOf(task));
    return stubs->typed.get();
  }

  // (`at`: where the call goes, the primary's address for a replicated
  // task.)
  absl::StatusOr<Stubs*> StubsOf(const std::string& task,
                                 std::string* at = nullptr) {
    std::string address;
    if (spec_.is_replicated(task)) {
      {
        std::lock_guard<std::mutex> lock(primaries_->mu);
        if (auto it = primaries_->address.find(task);
            it != primaries_->address.end()) {
          address = it->second;
        }
      }
      if (address.empty()) {
        RN_ASSIGN_OR_RETURN(address,
                            Resolve(task, options_.connect_timeout_s, false));
      }
    } else {
      RN_ASSIGN_OR_RETURN(address, spec_.AddressOf(task));
    }
    if (at != nullptr) *at = address;
    return StubsAt(address, spec_.is_replicated(task));
  }

  // The address of `task`'s primary (replica.h), found by asking each of
  // its replicas. Where none is the primary, it promotes the replica that
  // holds the newest state, or, in a new cluster (every replica answers
  // and none holds any), the first. With `again`, it asks even when it
  // knew the primary (a call to it failed). Waits up to `seconds` for a
  // replica that can serve.
  //
  // Only a replica of the newest epoch this process has seen may serve: a
  // primary that was replaced while it was stopped still says it is the
  // primary until it hears of its successor, and its state lacks what the
  // successor did alone. Where every replica answers and none is of that
  // epoch, the task's state is lost (its newest primary died before the
  // other caught up): it is promoted empty (replica.h, DropState), and the
  // chief restores it from the newest checkpoint.
  absl::StatusOr<std::string> Resolve(const std::string& task, double seconds,
                                      bool again) {
    RN_ASSIGN_OR_RETURN(std::vector<std::string> replicas,
                        spec_.Replicas(task));
    std::mutex* resolving;
    {
      std::lock_guard<std::mutex> lock(mu_);
      resolving = &resolving_[task];
    }
    std::lock_guard<std::mutex> one(*resolving);
    if (!again) {
      std::lock_guard<std::mutex> lock(primaries_->mu);
      if (auto it = primaries_->address.find(task);
          it != primaries_->address.end()) {
        return it->second;
      }
    }
    const auto end = After(std::max(seconds, 0.0));
    std::string why;
    bool asked_again = false;
    for (;;) {
      std::vector<ReplicaAnswer> answers;
      std::vector<std::string> silent;
      std::vector<int> silent_index;
      for (size_t i = 0; i < replicas.size(); ++i) {
        RN_ASSIGN_OR_RETURN(Stubs * stubs, StubsAt(replicas[i], true));
        grpc::ClientContext ctx;
        Prepare(&ctx, task, /*setup=*/false);
        ctx.set_wait_for_ready(true);
        // A replica never heard from gets longer (its connection is new, and
        // at start-up the machine is busy starting every task): a needless
        // promotion there races the chief's initialization.
        bool heard = false;
        {
          std::lock_guard<std::mutex> lock(mu_);
          heard = answered_.contains(replicas[i]);
        }
        ctx.set_deadline(std::min(end, After(heard ? 0.2 : 1.0)));
        proto::GetStatusResponse resp;
        grpc::Status s =
            stubs->typed->GetStatus(&ctx, proto::GetStatusRequest(), &resp);
        if (s.ok()) {
          {
            std::lock_guard<std::mutex> lock(mu_);
            answered_.insert(replicas[i]);
          }
          answers.push_back({.index = static_cast<int>(i),
                             .primary = resp.primary(),
                             .epoch = resp.epoch(),
                             .holds_state = resp.holds_state()});
        } else {
          silent.push_back(StrCat(replicas[i], ": ", Reason(s)));
          silent_index.push_back(static_cast<int>(i));
        }
      }
      int64_t floor = 0;
      {
        std::lock_guard<std::mutex> lock(mu_);
        floor = epochs_[task];
      }
      const ReplicaChoice choice =
          ChooseReplica(answers, silent.empty(), floor, asked_again);
      if (choice.action == ReplicaChoice::kAskAgain) {
        asked_again = true;
        continue;
      }
      int64_t epoch = choice.epoch;
      bool chosen = choice.action == ReplicaChoice::kUse;
      if (choice.action == ReplicaChoice::kPromote) {
        absl::StatusOr<int64_t> promoted =
            Promote(task, replicas[choice.index], choice.epoch, choice.fresh,
                    silent_index);
        if (!promoted.ok()) {
          why = std::string(promoted.status().message());
        } else {
          chosen = true;
          epoch = *promoted;
          if (choice.fresh && floor > 0) {
            std::fprintf(stderr,
                         "note: no replica of %s holds its current state "
                         "(epoch %lld: its primary then died before the "
                         "other replica caught up); it starts empty, and "
                         "the chief restores it from the newest "
                         "checkpoint\n",
                         task.c_str(), static_cast<long long>(floor));
          }
        }
      }
      if (chosen) {
        {
          std::lock_guard<std::mutex> lock(mu_);
          epochs_[task] = std::max(epochs_[task], epoch);
        }
        std::lock_guard<std::mutex> lock(primaries_->mu);
        primaries_->address[task] = replicas[choice.index];
        return replicas[choice.index];
      }
      if (!silent.empty()) why = absl::StrJoin(silent, "; ");
      if (why.empty()) why = "no replica holds its state";
      if (std::chrono::system_clock::now() >= end) {
        return absl::UnavailableError(StrCat(
            task, " unreachable: none of its replicas can serve (", why, ")"));
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
  }

  // The stubs of the task listening at `address` (a `replica` of a
  // replicated task: found dead sooner, NewTaskChannel).
  absl::StatusOr<Stubs*> StubsAt(const std::string& address, bool replica) {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = stubs_.find(address);
    if (it != stubs_.end()) return it->second.get();
    std::shared_ptr<grpc::Channel> channel =
        NewTaskChannel(address, options_, replica);
    auto stubs = std::make_unique<Stubs>();
    stubs->typed = proto::WorkerService::NewStub(channel);
    stubs->generic = std::make_unique<grpc::GenericStub>(channel);
    Stubs* raw = stubs.get();
    stubs_.emplace(address, std::move(stubs));
    return raw;
  }

  // Calls fail at once when their task is down, except that the first
  // `setup` call to a task (registration, state) waits up to the connect
  // time-out for it to come up.
  void Prepare(grpc::ClientContext* ctx, const std::string& task, bool setup) {
    if (!options_.token.empty()) ctx->AddMetadata(kTokenKey, options_.token);
    if (!setup) return;
    ctx->set_deadline(After(options_.connect_timeout_s));
    std::lock_guard<std::mutex> lock(mu_);
    if (!reached_.contains(task)) ctx->set_wait_for_ready(true);
  }
  // Calls to `task` have succeeded: later ones do not wait for it.
  void Reached(const std::string& task) {
    std::lock_guard<std::mutex> lock(mu_);
    reached_.insert(task);
  }

  static absl::Status FromGrpc(const std::string& task, const grpc::Status& s) {
    if (s.ok()) return absl::OkStatus();
    switch (s.error_code()) {
      case grpc::StatusCode::UNAVAILABLE:
      case grpc::StatusCode::DEADLINE_EXCEEDED:
        return absl::UnavailableError(
            StrCat(task, " unreachable (", Reason(s), ")"));
      case grpc::StatusCode::UNAUTHENTICATED:
        return absl::UnauthenticatedError(
            StrCat(task, " refused the request: ", s.error_message()));
      default:
        return absl::Status(static_cast<absl::StatusCode>(s.error_code()),
                            StrCat(task, ": ", s.error_message()));
    }
  }

  // Fetches `key` from `task`'s rendezvous; `done` hears the outcome.
  // (A raw call through the generic stub: the answer's messages are read
  // straight from gRPC's buffers, tensor_coding.h.)
  void RecvTensor(const std::string& task, const std::string& key, int64_t step,
                  Rendezvous::Done done) {
    std::string address;
    absl::StatusOr<Stubs*> stubs = StubsOf(task, &address);
    if (!stubs.ok()) {
      done(stubs.status(), Tensor(), true);
      return;
    }
    auto ctx = std::make_shared<grpc::ClientContext>();
    if (spec_.is_replicated(task)) {
      done = [primaries = primaries_, watch = Watch(address, ctx), task,
              done = std::move(done)](const absl::Status& s, const Tensor& t,
                                      bool dead) {
        const absl::Status status = watch(task, s);
        primaries->Failed(task, status);
        done(status, t, dead);
      };
    }
    proto::RecvTensorRequest req;
    req.set_key(key);
    req.set_step_id(step);
    StartFetch(*stubs, task, "RecvTensor", req, {key}, std::move(ctx),
               [done = std::move(done)](const std::string&,
                                        const absl::Status& s, const Tensor& t,
                                        bool dead) { done(s, t, dead); });
  }

  // Fetches `keys` from `task`'s rendezvous in one call; `done` hears each
  // one's outcome, once, as it comes. (Not for a replicated task, whose
  // calls are watched: RecvTensor each.)
  using TensorsDone =
      std::function<void(const std::string& key, const absl::Status&,
                         const Tensor&, bool is_dead)>;
  void RecvTensors(const std::string& task, std::vector<std::string> keys,
                   int64_t step, TensorsDone done) {
    absl::StatusOr<Stubs*> stubs = StubsOf(task);
    if (!stubs.ok()) {
      for (const std::string& key : keys)
        done(key, stubs.status(), Tensor(), true);
      return;
    }
    proto::RecvTensorsRequest req;
    for (const std::string& key : keys) req.add_key(key);
    req.set_step_id(step);
    StartFetch(*stubs, task, "RecvTensors", req, std::move(keys),
               std::make_shared<grpc::ClientContext>(), std::move(done));
  }

  // `writer` and `update` tag the run's writes, `return_to` asks for the
  // values the run sends there with the answer and `end_step` lets the
  // step end there with it (worker.proto); `done` hears the outcome and
  // the answer.
  using RunDone =
      std::function<void(absl::Status, const proto::RunGraphResponse&)>;
  void RunGraph(const std::string& task, const std::string& handle,
                int64_t step, uint64_t seed, int64_t freeze_id,
                const std::string& writer, int64_t update,
                const std::string& return_to, bool end_step, RunDone done) {
    std::string address;
    absl::StatusOr<Stubs*> stubs = StubsOf(task, &address);
    if (!stubs.ok()) {
      done(stubs.status(), proto::RunGraphResponse());
      return;
    }
    struct Call {
      std::shared_ptr<grpc::ClientContext> ctx =
          std::make_shared<grpc::ClientContext>();
      proto::RunGraphRequest req;
      proto::RunGraphResponse resp;
    };
    auto* call = new Call;
    call->req.set_handle(handle);
    call->req.set_step_id(step);
    call->req.set_global_seed(seed);
    call->req.set_freeze_id(freeze_id);
    call->req.set_writer(writer);
    call->req.set_update_seq(update);
    call->req.set_return_to(return_to);
    call->req.set_end_step(end_step);
    Prepare(call->ctx.get(), task, /*setup=*/false);
    const bool replicated = spec_.is_replicated(task);
    (*stubs)->typed->async()->RunGraph(
        call->ctx.get(), &call->req, &call->resp,
        [primaries = replicated ? primaries_ : nullptr,
         watch = replicated ? Watch(address, call->ctx) : nullptr, call, task,
         done = std::move(done)](grpc::Status s) {
          absl::Status status =
              s.ok() ? StatusFromProto(call->resp.status()) : FromGrpc(task, s);
          if (watch != nullptr) status = watch(task, status);
          if (primaries != nullptr) primaries->Failed(task, status);
          done(status, call->resp);
          delete call;
        });
  }

  // Fire and forget: CancelStep (with `why`) or CleanupStep.
  void StepCall(const std::string& task, int64_t step, bool cancel,
                const absl::Status& why) {
    absl::StatusOr<proto::WorkerService::Stub*> stub = Stub(task);
    if (!stub.ok()) return;
    struct Call {
      grpc::ClientContext ctx;
      proto::StepRequest req;
      proto::StepResponse resp;
    };
    auto* call = new Call;
    call->req.set_step_id(step);
    if (cancel) StatusToProto(why, call->req.mutable_status());
    Prepare(&call->ctx, task, /*setup=*/false);
    call->ctx.set_deadline(After(10));
    auto after = [call](grpc::Status) { delete call; };
    if (cancel) {
      (*stub)->async()->CancelStep(&call->ctx, &call->req, &call->resp, after);
    } else {
      (*stub)->async()->CleanupStep(&call->ctx, &call->req, &call->resp, after);
    }
  }

  // A heartbeat from `from` to `task`: fire and forget, unless `wait`
  // (the last one, when leaving), which waits up to a second.
  void Heartbeat(const std::string& task, const std::string& from, bool leaving,
                 bool wait) {
    // A replicated task's every replica hears it: the one promoted next
    // knows the live workers already (a synchronous step waits for them),
    // and the beat never waits for a failover (Resolve).
    std::vector<std::string> addresses;
    const bool replicated = spec_.is_replicated(task);
    if (replicated) {
      absl::StatusOr<std::vector<std::string>> replicas = spec_.Replicas(task);
      if (!replicas.ok()) return;
      addresses = *std::move(replicas);
    } else {
      absl::StatusOr<std::string> address = spec_.AddressOf(task);
      if (!address.ok()) return;
      addresses.push_back(*std::move(address));
    }
    for (const std::string& address : addresses) {
      absl::StatusOr<Stubs*> stubs = StubsAt(address, replicated);
      if (!stubs.ok()) continue;
      struct Call {
        grpc::ClientContext ctx;
        proto::HeartbeatRequest req;
        proto::HeartbeatResponse resp;
      };
      auto call = std::make_shared<Call>();
      call->req.set_task(from);
      call->req.set_leaving(leaving);
      Prepare(&call->ctx, task, /*setup=*/false);
      call->ctx.set_deadline(After(1));
      if (wait) {
        (*stubs)->typed->Heartbeat(&call->ctx, call->req, &call->resp);
        continue;
      }
      (*stubs)->typed->async()->Heartbeat(&call->ctx, &call->req, &call->resp,
                                          [call](grpc::Status) {});
    }
  }

  absl::StatusOr<std::string> RegisterGraph(const std::string& task,
                                            const proto::GraphDef& def) {
    proto::RegisterGraphRequest req;
    *req.mutable_graph() = def;
    if (req.ByteSizeLong() > static_cast<size_t>(options_.max_message_bytes)) {
      return absl::InvalidArgumentError(
          StrCat("the graph for ", task, " is ", req.ByteSizeLong() >> 20,
                 " MiB, over the ", options_.max_message_bytes >> 20,
                 " MiB a message may carry (a large constant placed there?)"));
    }
    proto::RegisterGraphResponse resp;
    RN_RETURN_IF_ERROR(
        Call(task, /*setup=*/true,
             [&](proto::WorkerService::Stub* stub, grpc::ClientContext* ctx) {
               return stub->RegisterGraph(ctx, req, &resp);
             }));
    Reached(task);
    return resp.handle();
  }

  enum class VarCall { kState, kInit, kAssign, kRead };
  absl::StatusOr<proto::VariablesResponse> Variables(
      const std::string& task, VarCall which,
      const proto::VariablesRequest& req) {
    proto::VariablesResponse resp;
    RN_RETURN_IF_ERROR(
        Call(task, /*setup=*/true,
             [&](proto::WorkerService::Stub* stub, grpc::ClientContext* ctx) {
               switch (which) {
                 case VarCall::kState:
                   return stub->VariableState(ctx, req, &resp);
                 case VarCall::kInit:
                   return stub->InitVariables(ctx, req, &resp);
                 case VarCall::kAssign:
                   return stub->AssignVariables(ctx, req, &resp);
                 case VarCall::kRead:
                   break;
               }
               return stub->ReadVariables(ctx, req, &resp);
             }));
    Reached(task);
    return resp;
  }

  // Waits up to `seconds` for `task` to answer. (A call may still fail
  // at once on a connection to the task's previous process that is not
  // yet known to be gone: it is tried again.)
  // A replicated task: until one of its replicas serves as the primary
  // (Resolve).
  absl::Status WaitFor(const std::string& task, double seconds) {
    if (spec_.is_replicated(task)) {
      return Resolve(task, seconds, /*again=*/true).status();
    }
    RN_ASSIGN_OR_RETURN(proto::WorkerService::Stub * stub, Stub(task));
    const auto end = After(std::max(seconds, 0.0));
    for (;;) {
      grpc::ClientContext ctx;
      Prepare(&ctx, task, /*setup=*/false);
      ctx.set_wait_for_ready(true);
      ctx.set_deadline(end);
      proto::GetStatusResponse resp;
      absl::Status s = FromGrpc(
          task, stub->GetStatus(&ctx, proto::GetStatusRequest(), &resp));
      if (s.ok() || std::chrono::system_clock::now() >= end) return s;
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
  }

  // One phase of a snapshot's freeze; waits up to `seconds` for the answer.
  absl::StatusOr<proto::FreezeResponse> Freeze(const std::string& task,
                                               const proto::FreezeRequest& req,
                                               double seconds) {
    RN_ASSIGN_OR_RETURN(proto::WorkerService::Stub * stub, Stub(task));
    grpc::ClientContext ctx;
    Prepare(&ctx, task, /*setup=*/false);
    ctx.set_deadline(After(seconds));
    proto::FreezeResponse resp;
    RN_RETURN_IF_ERROR(FromGrpc(task, stub->Freeze(&ctx, req, &resp)));
    return resp;
  }

  absl::StatusOr<proto::GetStatusResponse> GetStatus(const std::string& task) {
    RN_ASSIGN_OR_RETURN(proto::WorkerService::Stub * stub, Stub(task));
    grpc::ClientContext ctx;
    Prepare(&ctx, task, /*setup=*/true);
    proto::GetStatusResponse resp;
    RN_RETURN_IF_ERROR(FromGrpc(
        task, stub->GetStatus(&ctx, proto::GetStatusRequest(), &resp)));
    return resp;
  }

 private:
  // One RecvTensor or RecvTensors call: each value's messages build it as
  // they come (TensorAssembler), and it is handed on when whole. A value
  // the answer leaves out or cuts short fails with the assembler's error,
  // naming its edge.
  class TensorsFetch
      : public grpc::ClientBidiReactor<grpc::ByteBuffer, grpc::ByteBuffer> {
   public:
    TensorsFetch(std::string task, std::vector<std::string> keys,
                 std::shared_ptr<grpc::ClientContext> ctx, TensorsDone done)
        : ctx(std::move(ctx)),
          task_(std::move(task)),
          keys_(std::move(keys)),
          done_(std::move(done)),
          delivered_(keys_.size(), false) {}

    void OnReadDone(bool ok) override {
      if (!ok) return;
      if (!current_.has_value()) current_.emplace(task_, &keys_);
      absl::Status s = current_->Add(&incoming);
      if (s.ok() && current_->complete()) {
        const int i = current_->index();
        if (delivered_[i]) {
          s = absl::DataLossError(
              StrCat(task_, " sent '", keys_[i], "' twice in one answer"));
        } else {
          delivered_[i] = true;
          done_(keys_[i], absl::OkStatus(), current_->value(),
                current_->is_dead());
          current_.reset();
        }
      }
      if (!s.ok()) {
        error_ = std::move(s);
        ctx->TryCancel();
        return;
      }
      StartRead(&incoming);
    }

    void OnDone(const grpc::Status& s) override {
      if (error_.ok() && !s.ok()) error_ = FromGrpc(task_, s);
      for (size_t i = 0; i < keys_.size(); ++i) {
        if (delivered_[i]) continue;
        absl::Status why = error_;
        if (why.ok()) {
          // Cut short, or never sent: what its assembler says of it.
          const bool cut =
              current_.has_value() && current_->index() == static_cast<int>(i);
          why = cut ? current_->Finish()
                    : TensorAssembler(task_, keys_[i]).Finish();
        }
        done_(keys_[i], why, Tensor(), true);
      }
      delete this;
    }

    const std::shared_ptr<grpc::ClientContext> ctx;  // shared with a watch
    grpc::ByteBuffer request;
    grpc::ByteBuffer incoming;

   private:
    const std::string task_;
    const std::vector<std::string> keys_;
    TensorsDone done_;
    std::vector<bool> delivered_;
    std::optional<TensorAssembler> current_;
    absl::Status error_;
  };

  // Starts `method` (RecvTensor or RecvTensors) on `task` with `request`,
  // its answer read by a TensorsFetch for `keys`.
  void StartFetch(Stubs* stubs, const std::string& task, const char* method,
                  const google::protobuf::Message& request,
                  std::vector<std::string> keys,
                  std::shared_ptr<grpc::ClientContext> ctx, TensorsDone done) {
    auto* fetch = new TensorsFetch(task, std::move(keys), std::move(ctx),
                                   std::move(done));
    const std::string bytes = request.SerializeAsString();
    grpc::Slice slice(bytes);
    fetch->request = grpc::ByteBuffer(&slice, 1);
    Prepare(fetch->ctx.get(), task, /*setup=*/false);
    stubs->generic->PrepareBidiStreamingCall(
        fetch->ctx.get(), StrCat("/runnel.proto.WorkerService/", method),
        grpc::StubOptions(), fetch);
    fetch->StartWriteLast(&fetch->request, grpc::WriteOptions());
    fetch->StartRead(&fetch->incoming);
    fetch->StartCall();
  }

  // A blocking call to `task` (`call` makes it on the stub with the
  // context), watched where the task is replicated; its status.
  absl::Status Call(
      const std::string& task, bool setup,
      const std::function<grpc::Status(proto::WorkerService::Stub*,
                                       grpc::ClientContext*)>& call) {
    std::string address;
    RN_ASSIGN_OR_RETURN(Stubs * stubs, StubsOf(task, &address));
    auto ctx = std::make_shared<grpc::ClientContext>();
    Prepare(ctx.get(), task, setup);
    if (!spec_.is_replicated(task)) {
      return FromGrpc(task, call(stubs->typed.get(), ctx.get()));
    }
    Watched watch = Watch(address, ctx);
    absl::Status s =
        watch(task, FromGrpc(task, call(stubs->typed.get(), ctx.get())));
    primaries_->Failed(task, s);
    return s;
  }

  // A call out to the primary at `address` through `ctx`, added to the
  // watch: what the call's callback runs on its status, which forgets the
  // call and makes a cancel by the watch an Unavailable naming `task`.
  using Watched =
      std::function<absl::Status(const std::string& task, absl::Status)>;
  Watched Watch(const std::string& address,
                std::shared_ptr<grpc::ClientContext> ctx) {
    const int64_t id = watch_->Add(address, std::move(ctx));
    return [watch = watch_, id](const std::string& task, absl::Status s) {
      std::optional<std::string> why = watch->Remove(id);
      if (!why.has_value() || s.ok()) return s;
      return absl::UnavailableError(StrCat(task, " unreachable (", *why, ")"));
    };
  }

  // The watch's probe: does the task at `address` answer GetStatus within
  // `deadline_s`? (Any answer from its server counts, an error too.)
  void Probe(const std::string& address, double deadline_s,
             std::function<void(bool)> answered) {
    absl::StatusOr<Stubs*> stubs = StubsAt(address, true);
    if (!stubs.ok()) {
      answered(true);  // nothing to tell by
      return;
    }
    struct Call {
      grpc::ClientContext ctx;
      proto::GetStatusRequest req;
      proto::GetStatusResponse resp;
    };
    auto* call = new Call;
    Prepare(&call->ctx, address, /*setup=*/false);
    call->ctx.set_deadline(After(deadline_s));
    (*stubs)->typed->async()->GetStatus(
        &call->ctx, &call->req, &call->resp,
        [call, answered = std::move(answered)](grpc::Status s) {
          delete call;
          answered(s.error_code() != grpc::StatusCode::UNAVAILABLE &&
                   s.error_code() != grpc::StatusCode::DEADLINE_EXCEEDED);
        });
  }

  // Makes the replica at `address` the primary of `task`, at `epoch` or
  // above (`fresh`: no replica holds any state); the replicas `silent` did
  // not answer.
  // Returns the epoch it serves at.
  absl::StatusOr<int64_t> Promote(const std::string& task,
                                  const std::string& address, int64_t epoch,
                                  bool fresh, const std::vector<int>& silent) {
    RN_ASSIGN_OR_RETURN(Stubs * stubs, StubsAt(address, true));
    grpc::ClientContext ctx;
    Prepare(&ctx, task, /*setup=*/false);
    ctx.set_deadline(After(2));
    proto::PromoteRequest req;
    req.set_epoch(epoch);
    req.set_fresh(fresh);
    for (int i : silent) req.add_silent(i);
    proto::PromoteResponse resp;
    RN_RETURN_IF_ERROR(FromGrpc(StrCat(task, " (at ", address, ")"),
                                stubs->typed->Promote(&ctx, req, &resp)));
    return resp.epoch();
  }

  const ClusterSpec spec_;
  const GrpcOptions options_;
  std::mutex mu_;
  // By address.
  absl::flat_hash_map<std::string, std::unique_ptr<Stubs>> stubs_;
  absl::flat_hash_set<std::string> reached_;
  // A replicated task's newest epoch seen, and the replicas that have
  // answered (Resolve).
  absl::flat_hash_map<std::string, int64_t> epochs_;
  absl::flat_hash_set<std::string> answered_;
  // A replicated task's primary, as last found (shared with the calls in
  // flight, which forget it when it fails them); one Resolve at a time per
  // task.
  struct Primaries {
    std::mutex mu;
    absl::flat_hash_map<std::string, std::string> address;
    // `task` failed a call with `s`: when `s` says it is unreachable (its
    // primary died, or is a backup now), the next call finds it again.
    void Failed(const std::string& task, const absl::Status& s) {
      if (s.code() != absl::StatusCode::kUnavailable) return;
      std::lock_guard<std::mutex> lock(mu);
      address.erase(task);
    }
  };
  const std::shared_ptr<Primaries> primaries_ = std::make_shared<Primaries>();
  std::map<std::string, std::mutex> resolving_;
  // Shared with the watched calls' callbacks; stopped by the destructor,
  // before the stubs its probes use go.
  const std::shared_ptr<PrimaryWatch> watch_ = std::make_shared<PrimaryWatch>(
      [this](const std::string& address, double deadline_s,
             std::function<void(bool)> answered) {
        Probe(address, deadline_s, std::move(answered));
      },
      PrimaryWatch::Options{});
};

// A task's Worker whose steps fetch the values other tasks send it
// through `channels`: those a partition receives outside its loops from
// one task in one RecvTensors call (RecvTensor each from a replicated
// task, whose calls are watched), any other with its own RecvTensor.
inline std::unique_ptr<Worker> NewGrpcWorker(
    std::string task, std::shared_ptr<WorkerChannels> channels,
    const ClusterSpec& spec) {
  return std::make_unique<Worker>(
      std::move(task),
      [channels](const std::string& src, const std::string& key, int64_t step,
                 Rendezvous::Done done) {
        channels->RecvTensor(src, key, step, std::move(done));
      },
      [channels, spec](const std::string& src, std::vector<std::string> keys,
                       int64_t step, WorkerChannels::TensorsDone done) {
        if (!spec.is_replicated(src)) {
          channels->RecvTensors(src, std::move(keys), step, std::move(done));
          return;
        }
        for (const std::string& key : keys) {
          channels->RecvTensor(
              src, key, step,
              [done, key](const absl::Status& s, const Tensor& t, bool dead) {
                done(key, s, t, dead);
              });
        }
      });
}

}  // namespace runnel

#endif  // RUNNEL_DISTRIBUTED_GRPC_CHANNELS_H_
