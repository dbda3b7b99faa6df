#include "distributed/grpc_service.h"

#include <google/protobuf/stubs/logging.h>
#include <grpcpp/grpcpp.h>
#include <grpcpp/support/proto_buffer_reader.h>

#include <algorithm>
#include <deque>
#include <optional>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "base/errors.h"
#include "base/status_macros.h"
#include "base/strings.h"
#include "distributed/grpc_util.h"
#include "distributed/replica.h"
#include "distributed/tensor_coding.h"
#include "distributed/worker.grpc.pb.h"
#include "framework/graph_def.h"

namespace runnel {
namespace {

// An answer that is an error, at once.
class FinishedWriter : public grpc::ServerWriteReactor<grpc::ByteBuffer> {
 public:
  explicit FinishedWriter(const grpc::Status& s) { Finish(s); }
  void OnDone() override { delete this; }
};

// One RecvTensor or RecvTensors answer: each of the step's values as it
// is sent here, one value's messages at a time, in the order they come
// (RecvTensor's one value has index 0, which its header leaves out).
class TensorsSender : public grpc::ServerWriteReactor<grpc::ByteBuffer> {
 public:
  explicit TensorsSender(Worker* worker)
      : worker_(worker), state_(std::make_shared<State>()) {
    state_->sender = this;
  }

  template <typename Keys>
  void Start(const Keys& keys, int64_t step_id) {
    total_ = static_cast<int>(keys.size());
    absl::StatusOr<std::shared_ptr<StepRendezvous>> step =
        worker_->PrimaryStep(step_id);
    for (int i = 0; i < total_; ++i) {
      if (!step.ok()) {
        Deliver(state_, i, step.status(), Tensor(), true);
        continue;
      }
      absl::Status status;
      Tensor value;
      bool dead = false;
      std::shared_ptr<State> state = state_;
      const bool here = (*step)->Recv(
          keys[i],
          [state, i](const absl::Status& s, const Tensor& v, bool d) {
            Deliver(state, i, s, v, d);
          },
          &status, &value, &dead);
      if (here) Deliver(state_, i, status, value, dead);
    }
    if (total_ == 0) {
      finish_called_ = true;
      Finish(grpc::Status::OK);
    }
  }

  void OnCancel() override {
    {
      std::lock_guard<std::mutex> lock(state_->mu);
      state_->finished = true;
      // A write under way fails, and its end finishes the call.
      if (writing_ || finish_called_) return;
      finish_called_ = true;
    }
    Finish(grpc::Status(grpc::StatusCode::CANCELLED, "cancelled"));
  }

  void OnWriteDone(bool ok) override {
    {
      std::lock_guard<std::mutex> lock(state_->mu);
      if (!ok) state_->finished = true;
      if (state_->finished) {
        writing_ = false;
        if (finish_called_) return;
        finish_called_ = true;
        ok = false;
      }
    }
    if (!ok) {
      Finish(grpc::Status(grpc::StatusCode::CANCELLED, "the receiver left"));
      return;
    }
    WriteNext();
  }

  void OnDone() override { delete this; }

 private:
  // The values' arrivals and the call's end meet here: once `finished`,
  // no arrival touches the reactor (which may be gone).
  struct State {
    std::mutex mu;
    bool finished = false;
    TensorsSender* sender = nullptr;
  };

  static void Deliver(const std::shared_ptr<State>& state, int index,
                      const absl::Status& status, const Tensor& value,
                      bool dead) {
    TensorsSender* sender;
    {
      std::lock_guard<std::mutex> lock(state->mu);
      if (state->finished) return;
      sender = state->sender;
      sender->queue_.emplace_back(status, value, dead, kTensorChunkBytes,
                                  index);
      if (sender->writing_) return;
      sender->writing_ = true;  // this thread writes next
    }
    sender->WriteNext();
  }

  // Starts the next message's write, or, with nothing left to write, ends
  // the call once every value has gone (or the call was cancelled). Only
  // the thread that set `writing_` calls it.
  void WriteNext() {
    grpc::Status finish;
    bool write = false;
    {
      std::lock_guard<std::mutex> lock(state_->mu);
      while (!queue_.empty() && !state_->finished) {
        if (queue_.front().Next(&message_)) break;
        worker_->AddBytesSent(queue_.front().bytes());
        queue_.pop_front();
        ++sent_;
      }
      write = !queue_.empty() && !state_->finished;
      if (!write) {
        writing_ = false;
        if (finish_called_ || (sent_ < total_ && !state_->finished)) return;
        if (sent_ < total_) {
          finish = grpc::Status(grpc::StatusCode::CANCELLED, "cancelled");
        }
        state_->finished = true;
        finish_called_ = true;
      }
    }
    if (write) {
      StartWrite(&message_);
    } else {
      Finish(finish);
    }
  }

  Worker* const worker_;
  const std::shared_ptr<State> state_;
  // Under state_->mu:
  std::deque<TensorMessages> queue_;
  bool writing_ = false;  // a thread is writing (until its write is done)
  bool finish_called_ = false;
  int sent_ = 0;
  int total_ = 0;
  grpc::ByteBuffer message_;
};

// The Worker service over gRPC's synchronous API (each request holds one
// of the server's threads while it runs), but for RecvTensor.
class WorkerServiceImpl final
    : public proto::WorkerService::WithRawCallbackMethod_RecvTensor<
          proto::WorkerService::WithRawCallbackMethod_RecvTensors<
              proto::WorkerService::Service>> {
 public:
  WorkerServiceImpl(Worker* worker, std::string token, ReplicaServer* replica)
      : worker_(worker), token_(std::move(token)), replica_(replica) {}

  grpc::Status GetStatus(grpc::ServerContext* ctx,
                         const proto::GetStatusRequest*,
                         proto::GetStatusResponse* resp) override {
    if (grpc::Status s = Check(ctx); !s.ok()) return s;
    resp->set_task(worker_->task());
    resp->add_device(worker_->task() + "/device:cpu:0");
    resp->set_bytes_sent(worker_->bytes_sent());
    resp->set_registered_graphs(worker_->num_graphs());
    resp->set_incarnation(worker_->incarnation());
    if (replica_ != nullptr) replica_->Status(resp);
    return grpc::Status::OK;
  }

  grpc::Status Replicate(grpc::ServerContext* ctx,
                         const proto::ReplicateRequest* req,
                         proto::ReplicateResponse* resp) override {
    if (grpc::Status s = CheckReplica(ctx); !s.ok()) return s;
    replica_->Apply(*req, resp);
    return grpc::Status::OK;
  }

  grpc::Status Promote(grpc::ServerContext* ctx,
                       const proto::PromoteRequest* req,
                       proto::PromoteResponse* resp) override {
    if (grpc::Status s = CheckReplica(ctx); !s.ok()) return s;
    absl::StatusOr<int64_t> epoch = replica_->Promote(*req);
    if (!epoch.ok()) return ToGrpc(epoch.status());
    resp->set_epoch(*epoch);
    return grpc::Status::OK;
  }

  grpc::Status RegisterGraph(grpc::ServerContext* ctx,
                             const proto::RegisterGraphRequest* req,
                             proto::RegisterGraphResponse* resp) override {
    if (grpc::Status s = Check(ctx); !s.ok()) return s;
    absl::StatusOr<std::string> handle = worker_->RegisterGraph(req->graph());
    if (!handle.ok()) return ToGrpc(handle.status());
    resp->set_handle(*handle);
    return grpc::Status::OK;
  }

  grpc::Status RunGraph(grpc::ServerContext* ctx,
                        const proto::RunGraphRequest* req,
                        proto::RunGraphResponse* resp) override {
    if (grpc::Status s = Check(ctx); !s.ok()) return s;
    const UpdateTag update{.writer = req->writer(), .seq = req->update_seq()};
    Returned returned;
    returned.to = req->return_to();
    returned.may_end = req->end_step();
    StatusToProto(
        worker_->RunGraph(
            req->handle(), req->step_id(), req->global_seed(), req->freeze_id(),
            [ctx] { return ctx->IsCancelled(); },
            req->writer().empty() ? nullptr : &update,
            returned.to.empty() && !returned.may_end ? nullptr : &returned),
        resp->mutable_status());
    for (Rendezvous::Held& h : returned.values) {
      proto::ReturnedTensor* r = resp->add_returned();
      r->set_key(std::move(h.key));
      r->set_is_dead(h.is_dead);
      if (!h.is_dead) *r->mutable_value() = ToProto(h.value);
    }
    for (std::string& key : returned.left) resp->add_left(std::move(key));
    resp->set_step_ended(returned.step_ended);
    return grpc::Status::OK;
  }

  grpc::Status Freeze(grpc::ServerContext* ctx, const proto::FreezeRequest* req,
                      proto::FreezeResponse* resp) override {
    if (grpc::Status s = Check(ctx); !s.ok()) return s;
    const std::vector<int64_t> steps(req->step().begin(), req->step().end());
    switch (req->phase()) {
      case proto::FreezeRequest::FREEZE:
        for (int64_t s :
             worker_->Freeze(req->freeze_id(), req->lease_seconds())) {
          resp->add_open_step(s);
        }
        return grpc::Status::OK;
      case proto::FreezeRequest::ADMIT:
        return ToGrpc(
            worker_->Admit(req->freeze_id(), steps, req->lease_seconds()));
      case proto::FreezeRequest::DRAIN: {
        absl::StatusOr<bool> drained = worker_->Drain(
            req->freeze_id(), steps, req->wait_seconds(), req->lease_seconds(),
            [ctx] { return ctx->IsCancelled(); });
        if (!drained.ok()) return ToGrpc(drained.status());
        resp->set_drained(*drained);
        return grpc::Status::OK;
      }
      case proto::FreezeRequest::UNFREEZE:
        resp->set_held(worker_->Unfreeze(req->freeze_id()));
        return grpc::Status::OK;
      default:
        return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT,
                            "an unknown freeze phase");
    }
  }

  // RecvTensor and RecvTensors are served raw, through the callback API:
  // they hold no thread while the tensors are not there yet, and their
  // answers' bytes are the tensors' own (tensor_coding.h).
  grpc::ServerWriteReactor<grpc::ByteBuffer>* RecvTensor(
      grpc::CallbackServerContext* ctx,
      const grpc::ByteBuffer* request) override {
    proto::RecvTensorRequest req;
    return Send(ctx, request, &req, [&](TensorsSender* sender) {
      sender->Start(std::vector<std::string>{req.key()}, req.step_id());
    });
  }

  grpc::ServerWriteReactor<grpc::ByteBuffer>* RecvTensors(
      grpc::CallbackServerContext* ctx,
      const grpc::ByteBuffer* request) override {
    proto::RecvTensorsRequest req;
    return Send(ctx, request, &req, [&](TensorsSender* sender) {
      sender->Start(req.key(), req.step_id());
    });
  }

  grpc::Status CancelStep(grpc::ServerContext* ctx,
                          const proto::StepRequest* req,
                          proto::StepResponse*) override {
    if (grpc::Status s = Check(ctx); !s.ok()) return s;
    absl::Status why = StatusFromProto(req->status());
    worker_->AbortStep(req->step_id(),
                       why.ok() ? absl::AbortedError("step cancelled") : why);
    return grpc::Status::OK;
  }

  grpc::Status CleanupStep(grpc::ServerContext* ctx,
                           const proto::StepRequest* req,
                           proto::StepResponse*) override {
    if (grpc::Status s = Check(ctx); !s.ok()) return s;
    worker_->EndStep(req->step_id());
    return grpc::Status::OK;
  }

  grpc::Status VariableState(grpc::ServerContext* ctx,
                             const proto::VariablesRequest* req,
                             proto::VariablesResponse* resp) override {
    if (grpc::Status s = Check(ctx); !s.ok()) return s;
    absl::StatusOr<std::vector<bool>> ready =
        worker_->VariablesInitialized({req->name().begin(), req->name().end()});
    if (!ready.ok()) return ToGrpc(ready.status());
    for (bool b : *ready) resp->add_initialized(b);
    return grpc::Status::OK;
  }

  grpc::Status InitVariables(grpc::ServerContext* ctx,
                             const proto::VariablesRequest* req,
                             proto::VariablesResponse*) override {
    return Set(ctx, *req, /*overwrite=*/false);
  }

  grpc::Status AssignVariables(grpc::ServerContext* ctx,
                               const proto::VariablesRequest* req,
                               proto::VariablesResponse*) override {
    return Set(ctx, *req, /*overwrite=*/true);
  }

  grpc::Status Heartbeat(grpc::ServerContext* ctx,
                         const proto::HeartbeatRequest* req,
                         proto::HeartbeatResponse*) override {
    if (grpc::Status s = Check(ctx); !s.ok()) return s;
    worker_->Heartbeat(req->task(), req->leaving());
    return grpc::Status::OK;
  }

  grpc::Status ReadVariables(grpc::ServerContext* ctx,
                             const proto::VariablesRequest* req,
                             proto::VariablesResponse* resp) override {
    if (grpc::Status s = Check(ctx); !s.ok()) return s;
    absl::StatusOr<std::vector<Tensor>> values =
        worker_->ReadVariables({req->name().begin(), req->name().end()});
    if (!values.ok()) return ToGrpc(values.status());
    for (const Tensor& t : *values) *resp->add_value() = ToProto(t);
    return grpc::Status::OK;
  }

 private:
  // The answer to a RecvTensor(s) request: an error at once (a request
  // without the token, to a backup, which runs no steps, or malformed),
  // else a sender that `start` starts with the request parsed into `req`.
  template <typename Request>
  grpc::ServerWriteReactor<grpc::ByteBuffer>* Send(
      grpc::CallbackServerContext* ctx, const grpc::ByteBuffer* request,
      Request* req, const std::function<void(TensorsSender*)>& start) {
    if (grpc::Status s = Check(ctx); !s.ok()) return new FinishedWriter(s);
    if (replica_ != nullptr) {
      if (absl::Status s = replica_->CheckPrimary(); !s.ok()) {
        return new FinishedWriter(ToGrpc(s));
      }
    }
    grpc::ByteBuffer copy(*request);  // shares the slices
    grpc::ProtoBufferReader reader(&copy);
    if (!reader.status().ok() || !req->ParseFromZeroCopyStream(&reader)) {
      return new FinishedWriter(
          grpc::Status(grpc::StatusCode::INVALID_ARGUMENT,
                       StrCat("a malformed ", Request::descriptor()->name())));
    }
    worker_->AddRecvCall();
    auto* sender = new TensorsSender(worker_);
    start(sender);
    return sender;
  }

  // Check, and that this task is one replica of a replicated task.
  grpc::Status CheckReplica(const grpc::ServerContextBase* ctx) const {
    if (grpc::Status s = Check(ctx); !s.ok()) return s;
    if (replica_ != nullptr) return grpc::Status::OK;
    return ToGrpc(absl::FailedPreconditionError(
        StrCat(worker_->task(), " is not a replicated task")));
  }

  grpc::Status Check(const grpc::ServerContextBase* ctx) const {
    if (token_.empty()) return grpc::Status::OK;
    const auto& md = ctx->client_metadata();
    auto it = md.find(kTokenKey);
    if (it == md.end() ||
        !SameToken(std::string_view(it->second.data(), it->second.size()),
                   token_)) {
      return grpc::Status(grpc::StatusCode::UNAUTHENTICATED,
                          "a request without this cluster's token");
    }
    return grpc::Status::OK;
  }

  grpc::Status Set(grpc::ServerContext* ctx, const proto::VariablesRequest& req,
                   bool overwrite) {
    if (grpc::Status s = Check(ctx); !s.ok()) return s;
    std::vector<Tensor> values;
    for (const proto::TensorProto& p : req.value()) {
      absl::StatusOr<Tensor> t = FromProto(p);
      if (!t.ok()) return ToGrpc(t.status());
      values.push_back(std::move(*t));
    }
    if (req.total_rows() > 0) {
      if (values.size() != 1 || req.name_size() != 1) {
        return ToGrpc(absl::InvalidArgumentError(
            "a chunk of a variable carries one name and one value"));
      }
      absl::StatusOr<std::optional<Tensor>> whole =
          AddChunk(req.name(0), req.first_row(), req.total_rows(), values[0]);
      if (!whole.ok()) return ToGrpc(whole.status());
      if (!whole->has_value()) return grpc::Status::OK;  // more to come
      values = {std::move(**whole)};
    }
    return ToGrpc(worker_->SetVariables({req.name().begin(), req.name().end()},
                                        values, overwrite));
  }

  // Copies a chunk into the variable's assembly; the whole value once the
  // last rows are in.
  absl::StatusOr<std::optional<Tensor>> AddChunk(const std::string& name,
                                                 int64_t first, int64_t total,
                                                 const Tensor& chunk) {
    std::lock_guard<std::mutex> lock(chunks_mu_);
    Assembly& a = chunks_[name];
    if (a.value.empty()) {
      std::vector<int64_t> dims = chunk.shape().dims();
      if (dims.empty()) {
        return absl::InvalidArgumentError("a chunk of a scalar variable");
      }
      dims[0] = total;
      a.value = Tensor(chunk.dtype(), Shape(dims));
    }
    const int64_t rows = chunk.rank() > 0 ? chunk.dim(0) : 0;
    const int64_t row_bytes =
        a.value.dim(0) > 0 ? static_cast<int64_t>(a.value.bytes()) / total : 0;
    if (chunk.dtype() != a.value.dtype() || first < 0 || first + rows > total ||
        total != a.value.dim(0) ||
        static_cast<int64_t>(chunk.bytes()) != rows * row_bytes) {
      chunks_.erase(name);
      return absl::InvalidArgumentError(StrCat(
          "a chunk of variable '", name, "' (rows ", first, "..", first + rows,
          " of ", total, ") does not fit its other chunks"));
    }
    std::memcpy(static_cast<char*>(a.value.raw_data()) + first * row_bytes,
                chunk.raw_data(), chunk.bytes());
    a.rows += rows;
    if (a.rows < total) return std::optional<Tensor>();
    std::optional<Tensor> whole = std::move(a.value);
    chunks_.erase(name);
    return whole;
  }

  struct Assembly {
    Tensor value;
    int64_t rows = 0;
  };

  Worker* const worker_;
  const std::string token_;
  ReplicaServer* const replica_;
  std::mutex chunks_mu_;
  absl::flat_hash_map<std::string, Assembly> chunks_;
};

}  // namespace

WorkerServer::WorkerServer() = default;

absl::StatusOr<std::unique_ptr<WorkerServer>> WorkerServer::Start(
    Worker* worker, const std::string& address, const GrpcOptions& options,
    ReplicaServer* replica) {
  // A malformed request is answered with an error; protobuf's own log
  // line for it (invalid UTF-8, ...) would let any client flood stderr.
  static std::once_flag quiet;
  std::call_once(quiet, [] { google::protobuf::SetLogHandler(nullptr); });
  auto server = std::unique_ptr<WorkerServer>(new WorkerServer);
  server->service_ =
      std::make_unique<WorkerServiceImpl>(worker, options.token, replica);
  grpc::ServerBuilder builder;
  int port = 0;
  builder.AddListeningPort(address, grpc::InsecureServerCredentials(), &port);
  builder.RegisterService(server->service_.get());
  builder.SetMaxReceiveMessageSize(options.max_message_bytes);
  builder.SetMaxSendMessageSize(options.max_message_bytes);
  // Clients ping every 2 s to find dead tasks; allow it.
  builder.AddChannelArgument(GRPC_ARG_KEEPALIVE_PERMIT_WITHOUT_CALLS, 1);
  builder.AddChannelArgument(
      GRPC_ARG_HTTP2_MIN_RECV_PING_INTERVAL_WITHOUT_DATA_MS, 1000);
  builder.AddChannelArgument(GRPC_ARG_HTTP2_MAX_PING_STRIKES, 0);
  server->server_ = builder.BuildAndStart();
  if (server->server_ == nullptr || port == 0) {
    return absl::UnavailableError(
        StrCat(worker->task(), " cannot listen on ", address,
               " (is the port in use, or the address not this machine's?)"));
  }
  return server;
}

void WorkerServer::Wait() { server_->Wait(); }

void WorkerServer::Shutdown() {
  std::call_once(shutdown_, [this] { server_->Shutdown(After(1)); });
}

WorkerServer::~WorkerServer() { Shutdown(); }

}  // namespace runnel
