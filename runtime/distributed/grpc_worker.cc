#include "runtime/distributed/grpc_worker.h"

#include <google/protobuf/stubs/logging.h>
#include <grpcpp/generic/generic_stub.h>
#include <grpcpp/grpcpp.h>
#include <grpcpp/support/proto_buffer_reader.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstring>
#include <optional>
#include <random>
#include <thread>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "runtime/distributed/tensor_coding.h"
#include "runtime/distributed/worker.grpc.pb.h"
#include "runtime/errors.h"
#include "runtime/graph_def.h"
#include "runtime/read_file.h"
#include "runtime/status_macros.h"
#include "runtime/strings.h"

namespace runnel {
namespace {

constexpr char kTokenKey[] = "runnel-token";
// How long a snapshot's read may take before the freeze lapses.
constexpr double kSnapshotReadSeconds = 20;
// The freeze whose snapshot this thread reads (ReadConsistently).
thread_local int64_t t_freeze_id = 0;

std::chrono::system_clock::time_point After(double seconds) {
  return std::chrono::system_clock::now() +
         std::chrono::microseconds(static_cast<int64_t>(seconds * 1e6));
}

grpc::Status ToGrpc(const absl::Status& s) {
  if (s.ok()) return grpc::Status::OK;
  return grpc::Status(static_cast<grpc::StatusCode>(s.code()),
                      std::string(s.message()));
}

// A short reason for a transport failure.
std::string Reason(const grpc::Status& s) {
  const std::string& m = s.error_message();
  if (m.find("onnection refused") != std::string::npos) {
    return "connection refused";
  }
  if (s.error_code() == grpc::StatusCode::DEADLINE_EXCEEDED) {
    return "no answer in time";
  }
  if (m.find("keepalive") != std::string::npos ||
      m.find("ping") != std::string::npos) {
    return "no answer to keepalive pings";
  }
  if (m.find("Socket closed") != std::string::npos ||
      m.find("reset") != std::string::npos ||
      m.find("Broken pipe") != std::string::npos ||
      m.find("GOAWAY") != std::string::npos) {
    return "connection lost";
  }
  return m;
}

// Constant-time comparison of a request's token with ours.
bool SameToken(std::string_view a, std::string_view b) {
  unsigned char diff = a.size() == b.size() ? 0 : 1;
  const size_t n = std::max(a.size(), b.size());
  for (size_t i = 0; i < n; ++i) {
    const unsigned char x = i < a.size() ? a[i] : 0;
    const unsigned char y = i < b.size() ? b[i] : 0;
    diff |= x ^ y;
  }
  return diff == 0;
}

// An answer that is an error, at once.
class FinishedWriter : public grpc::ServerWriteReactor<grpc::ByteBuffer> {
 public:
  explicit FinishedWriter(const grpc::Status& s) { Finish(s); }
  void OnDone() override { delete this; }
};

// One RecvTensor answer: waits for the step's value in the rendezvous,
// then writes its messages, one at a time.
class TensorSender : public grpc::ServerWriteReactor<grpc::ByteBuffer> {
 public:
  explicit TensorSender(Worker* worker)
      : worker_(worker), state_(std::make_shared<State>()) {
    state_->sender = this;
  }

  void Start(const proto::RecvTensorRequest& req) {
    std::shared_ptr<StepRendezvous> r = worker_->Step(req.step_id());
    std::shared_ptr<State> state = state_;
    absl::Status status;
    Tensor value;
    bool dead = false;
    const bool here = r->Recv(
        req.key(),
        [state](const absl::Status& s, const Tensor& v, bool d) {
          if (TensorSender* sender = Claim(*state)) sender->Send(s, v, d);
        },
        &status, &value, &dead);
    if (!here) return;
    if (TensorSender* sender = Claim(*state_)) {
      sender->Send(status, value, dead);
    }
  }

  void OnCancel() override {
    {
      std::lock_guard<std::mutex> lock(state_->mu);
      // Once the value is claimed, the failing write finishes the call.
      if (state_->claimed) return;
      state_->finished = true;
    }
    Finish(grpc::Status(grpc::StatusCode::CANCELLED, "cancelled"));
  }

  void OnWriteDone(bool ok) override {
    if (!ok) {
      Finish(grpc::Status(grpc::StatusCode::CANCELLED, "the receiver left"));
      return;
    }
    WriteNext();
  }

  void OnDone() override { delete this; }

 private:
  // Who answers: the value's arrival, or a cancellation before it (the
  // value may come later, after this reactor is gone).
  struct State {
    std::mutex mu;
    bool claimed = false;
    bool finished = false;
    TensorSender* sender = nullptr;
  };
  static TensorSender* Claim(State& state) {
    std::lock_guard<std::mutex> lock(state.mu);
    if (state.finished) return nullptr;
    state.claimed = true;
    return state.sender;
  }

  void Send(const absl::Status& status, const Tensor& value, bool dead) {
    messages_.emplace(status, value, dead);
    WriteNext();
  }

  void WriteNext() {
    if (messages_->Next(&message_)) {
      StartWrite(&message_);
      return;
    }
    worker_->AddBytesSent(messages_->bytes());
    Finish(grpc::Status::OK);
  }

  Worker* const worker_;
  const std::shared_ptr<State> state_;
  std::optional<TensorMessages> messages_;
  grpc::ByteBuffer message_;
};

// The Worker service over gRPC's synchronous API (each request holds one
// of the server's threads while it runs), but for RecvTensor.
class WorkerServiceImpl final
    : public proto::WorkerService::WithRawCallbackMethod_RecvTensor<
          proto::WorkerService::Service> {
 public:
  WorkerServiceImpl(Worker* worker, std::string token)
      : worker_(worker), token_(std::move(token)) {}

  grpc::Status GetStatus(grpc::ServerContext* ctx,
                         const proto::GetStatusRequest*,
                         proto::GetStatusResponse* resp) override {
    if (grpc::Status s = Check(ctx); !s.ok()) return s;
    resp->set_task(worker_->task());
    resp->add_device(worker_->task() + "/device:cpu:0");
    resp->set_bytes_sent(worker_->bytes_sent());
    resp->set_registered_graphs(worker_->num_graphs());
    resp->set_incarnation(worker_->incarnation());
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
    StatusToProto(worker_->RunGraph(req->handle(), req->step_id(),
                                    req->global_seed(), req->freeze_id(),
                                    [ctx] { return ctx->IsCancelled(); }),
                  resp->mutable_status());
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

  // RecvTensor is served raw, through the callback API: it holds no
  // thread while the tensor is not there yet, and its answer's bytes are
  // the tensor's own (tensor_coding.h).
  grpc::ServerWriteReactor<grpc::ByteBuffer>* RecvTensor(
      grpc::CallbackServerContext* ctx,
      const grpc::ByteBuffer* request) override {
    if (grpc::Status s = Check(ctx); !s.ok()) return new FinishedWriter(s);
    proto::RecvTensorRequest req;
    grpc::ByteBuffer copy(*request);  // shares the slices
    grpc::ProtoBufferReader reader(&copy);
    if (!reader.status().ok() || !req.ParseFromZeroCopyStream(&reader)) {
      return new FinishedWriter(grpc::Status(grpc::StatusCode::INVALID_ARGUMENT,
                                             "a malformed RecvTensorRequest"));
    }
    auto* sender = new TensorSender(worker_);
    sender->Start(req);
    return sender;
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
  std::mutex chunks_mu_;
  absl::flat_hash_map<std::string, Assembly> chunks_;
};

}  // namespace

// ---------------------------------------------------------------------------

class WorkerChannels {
 public:
  WorkerChannels(ClusterSpec spec, GrpcOptions options)
      : spec_(std::move(spec)), options_(std::move(options)) {}

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

  absl::StatusOr<Stubs*> StubsOf(const std::string& task) {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = stubs_.find(task);
    if (it != stubs_.end()) return it->second.get();
    RN_ASSIGN_OR_RETURN(std::string address, spec_.AddressOf(task));
    grpc::ChannelArguments args;
    args.SetMaxReceiveMessageSize(options_.max_message_bytes);
    args.SetMaxSendMessageSize(options_.max_message_bytes);
    // A task that stops answering is found within seconds.
    args.SetInt(GRPC_ARG_KEEPALIVE_TIME_MS, 2000);
    args.SetInt(GRPC_ARG_KEEPALIVE_TIMEOUT_MS, 3000);
    args.SetInt(GRPC_ARG_KEEPALIVE_PERMIT_WITHOUT_CALLS, 1);
    args.SetInt(GRPC_ARG_HTTP2_MAX_PINGS_WITHOUT_DATA, 0);
    // A restarted task is found again quickly.
    args.SetInt(GRPC_ARG_INITIAL_RECONNECT_BACKOFF_MS, 100);
    args.SetInt(GRPC_ARG_MIN_RECONNECT_BACKOFF_MS, 100);
    args.SetInt(GRPC_ARG_MAX_RECONNECT_BACKOFF_MS, 1000);
    auto channel = grpc::CreateCustomChannel(
        address, grpc::InsecureChannelCredentials(), args);
    auto stubs = std::make_unique<Stubs>();
    stubs->typed = proto::WorkerService::NewStub(channel);
    stubs->generic = std::make_unique<grpc::GenericStub>(channel);
    Stubs* raw = stubs.get();
    stubs_.emplace(task, std::move(stubs));
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
    absl::StatusOr<Stubs*> stubs = StubsOf(task);
    if (!stubs.ok()) {
      done(stubs.status(), Tensor(), true);
      return;
    }
    proto::RecvTensorRequest req;
    req.set_key(key);
    req.set_step_id(step);
    auto* fetch = new TensorFetch(task, key, std::move(done));
    const std::string bytes = req.SerializeAsString();
    grpc::Slice slice(bytes);
    fetch->request = grpc::ByteBuffer(&slice, 1);
    Prepare(&fetch->ctx, task, /*setup=*/false);
    (*stubs)->generic->PrepareBidiStreamingCall(
        &fetch->ctx, "/runnel.proto.WorkerService/RecvTensor",
        grpc::StubOptions(), fetch);
    fetch->StartWriteLast(&fetch->request, grpc::WriteOptions());
    fetch->StartRead(&fetch->incoming);
    fetch->StartCall();
  }

  void RunGraph(const std::string& task, const std::string& handle,
                int64_t step, uint64_t seed, int64_t freeze_id,
                std::function<void(absl::Status)> done) {
    absl::StatusOr<proto::WorkerService::Stub*> stub = Stub(task);
    if (!stub.ok()) {
      done(stub.status());
      return;
    }
    struct Call {
      grpc::ClientContext ctx;
      proto::RunGraphRequest req;
      proto::RunGraphResponse resp;
    };
    auto* call = new Call;
    call->req.set_handle(handle);
    call->req.set_step_id(step);
    call->req.set_global_seed(seed);
    call->req.set_freeze_id(freeze_id);
    Prepare(&call->ctx, task, /*setup=*/false);
    (*stub)->async()->RunGraph(
        &call->ctx, &call->req, &call->resp,
        [call, task, done = std::move(done)](grpc::Status s) {
          absl::Status status =
              s.ok() ? StatusFromProto(call->resp.status()) : FromGrpc(task, s);
          delete call;
          done(status);
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
    absl::StatusOr<proto::WorkerService::Stub*> stub = Stub(task);
    if (!stub.ok()) return;
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
      (*stub)->Heartbeat(&call->ctx, call->req, &call->resp);
      return;
    }
    (*stub)->async()->Heartbeat(&call->ctx, &call->req, &call->resp,
                                [call](grpc::Status) {});
  }

  absl::StatusOr<std::string> RegisterGraph(const std::string& task,
                                            const proto::GraphDef& def) {
    RN_ASSIGN_OR_RETURN(proto::WorkerService::Stub * stub, Stub(task));
    grpc::ClientContext ctx;
    Prepare(&ctx, task, /*setup=*/true);
    proto::RegisterGraphRequest req;
    *req.mutable_graph() = def;
    if (req.ByteSizeLong() > static_cast<size_t>(options_.max_message_bytes)) {
      return absl::InvalidArgumentError(
          StrCat("the graph for ", task, " is ", req.ByteSizeLong() >> 20,
                 " MiB, over the ", options_.max_message_bytes >> 20,
                 " MiB a message may carry (a large constant placed there?)"));
    }
    proto::RegisterGraphResponse resp;
    RN_RETURN_IF_ERROR(FromGrpc(task, stub->RegisterGraph(&ctx, req, &resp)));
    Reached(task);
    return resp.handle();
  }

  enum class VarCall { kState, kInit, kAssign, kRead };
  absl::StatusOr<proto::VariablesResponse> Variables(
      const std::string& task, VarCall which,
      const proto::VariablesRequest& req) {
    RN_ASSIGN_OR_RETURN(proto::WorkerService::Stub * stub, Stub(task));
    grpc::ClientContext ctx;
    Prepare(&ctx, task, /*setup=*/true);
    proto::VariablesResponse resp;
    grpc::Status s;
    switch (which) {
      case VarCall::kState:
        s = stub->VariableState(&ctx, req, &resp);
        break;
      case VarCall::kInit:
        s = stub->InitVariables(&ctx, req, &resp);
        break;
      case VarCall::kAssign:
        s = stub->AssignVariables(&ctx, req, &resp);
        break;
      case VarCall::kRead:
        s = stub->ReadVariables(&ctx, req, &resp);
        break;
    }
    RN_RETURN_IF_ERROR(FromGrpc(task, s));
    Reached(task);
    return resp;
  }

  // Waits up to `seconds` for `task` to answer. (A call may still fail
  // at once on a connection to the task's previous process that is not
  // yet known to be gone: it is tried again.)
  absl::Status WaitFor(const std::string& task, double seconds) {
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
  // One RecvTensor call: its messages build the tensor as they come.
  class TensorFetch
      : public grpc::ClientBidiReactor<grpc::ByteBuffer, grpc::ByteBuffer> {
   public:
    TensorFetch(std::string task, const std::string& key, Rendezvous::Done done)
        : task_(std::move(task)), done_(std::move(done)), tensor_(task_, key) {}

    void OnReadDone(bool ok) override {
      if (!ok) return;
      absl::Status s = tensor_.Add(&incoming);
      if (!s.ok()) {
        error_ = std::move(s);
        ctx.TryCancel();
        return;
      }
      StartRead(&incoming);
    }

    void OnDone(const grpc::Status& s) override {
      if (error_.ok() && !s.ok()) error_ = FromGrpc(task_, s);
      if (error_.ok()) error_ = tensor_.Finish();
      if (error_.ok()) {
        done_(absl::OkStatus(), tensor_.value(), tensor_.is_dead());
      } else {
        done_(error_, Tensor(), true);
      }
      delete this;
    }

    grpc::ClientContext ctx;
    grpc::ByteBuffer request;
    grpc::ByteBuffer incoming;

   private:
    const std::string task_;
    Rendezvous::Done done_;
    TensorAssembler tensor_;
    absl::Status error_;
  };

  const ClusterSpec spec_;
  const GrpcOptions options_;
  std::mutex mu_;
  absl::flat_hash_map<std::string, std::unique_ptr<Stubs>> stubs_;
  absl::flat_hash_set<std::string> reached_;
};

// ---------------------------------------------------------------------------

class WorkerServer {
 public:
  static absl::StatusOr<std::unique_ptr<WorkerServer>> Start(
      Worker* worker, const std::string& address, const GrpcOptions& options) {
    // A malformed request is answered with an error; protobuf's own log
    // line for it (invalid UTF-8, ...) would let any client flood stderr.
    static std::once_flag quiet;
    std::call_once(quiet, [] { google::protobuf::SetLogHandler(nullptr); });
    auto server = std::unique_ptr<WorkerServer>(new WorkerServer);
    server->service_ =
        std::make_unique<WorkerServiceImpl>(worker, options.token);
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

  void Wait() { server_->Wait(); }
  void Shutdown() {
    std::call_once(shutdown_, [this] { server_->Shutdown(After(1)); });
  }
  ~WorkerServer() { Shutdown(); }

 private:
  WorkerServer() = default;
  std::unique_ptr<WorkerServiceImpl> service_;
  std::unique_ptr<grpc::Server> server_;
  std::once_flag shutdown_;
};

namespace {

// The address to listen on: the spec's, or every interface at its port
// when it names another machine's name or address.
std::string ListenAddress(const ClusterSpec& spec, const std::string& address) {
  if (spec.AllLoopback()) return address;
  return "0.0.0.0" + address.substr(address.rfind(':'));
}

int64_t RandomStepBase() {
  std::random_device rd;
  const uint64_t v = (uint64_t{rd()} << 32) ^ rd();
  // Positive, with room for 2^32 steps above it.
  return static_cast<int64_t>((v >> 2) & ~uint64_t{0xffffffff});
}

}  // namespace

absl::StatusOr<std::string> ReadTokenFile(const std::string& path) {
  RN_ASSIGN_OR_RETURN(std::string text, ReadFileToString(path));
  const std::string line = text.substr(0, text.find('\n'));
  if (line.empty()) {
    return absl::InvalidArgumentError(
        StrCat(path, ": the token file's first line is empty"));
  }
  return line;
}

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
  const bool chief =
      job == "worker" ? task == 0 : spec.num_tasks("worker") == 0;
  auto cluster = std::shared_ptr<GrpcCluster>(new GrpcCluster(
      spec, ClusterSpec::TaskName(job, task), chief, std::move(options)));
  cluster->channels_ =
      std::make_shared<WorkerChannels>(spec, cluster->options_);
  std::shared_ptr<WorkerChannels> channels = cluster->channels_;
  cluster->worker_ = std::make_unique<Worker>(
      cluster->task_, [channels](const std::string& src, const std::string& key,
                                 int64_t step, Rendezvous::Done done) {
        channels->RecvTensor(src, key, step, std::move(done));
      });
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
}

int64_t GrpcCluster::NewStepId() {
  static const int64_t base = RandomStepBase();
  static std::atomic<int64_t> next{1};
  const int64_t step = base + next.fetch_add(1);
  if (t_freeze_id != 0) {
    std::lock_guard<std::mutex> lock(snapshot_mu_);
    snapshot_steps_[step] = t_freeze_id;
  }
  return step;
}

std::shared_ptr<Rendezvous> GrpcCluster::StepRendezvous(int64_t step) {
  return worker_->Step(step);
}

absl::StatusOr<std::string> GrpcCluster::RegisterPartition(
    const std::string& task, const Graph& graph) {
  return channels_->RegisterGraph(task, ToGraphDef(graph));
}

void GrpcCluster::RunPartition(const std::string& task,
                               const std::string& handle, int64_t step,
                               std::function<void(absl::Status)> done) {
  int64_t freeze_id = 0;
  {
    std::lock_guard<std::mutex> lock(snapshot_mu_);
    if (auto it = snapshot_steps_.find(step); it != snapshot_steps_.end()) {
      freeze_id = it->second;
    }
  }
  channels_->RunGraph(task, handle, step, seed_, freeze_id, std::move(done));
}

void GrpcCluster::AbortStep(int64_t step, const std::vector<std::string>& tasks,
                            const absl::Status& status) {
  worker_->AbortStep(step, status);
  for (const std::string& t : tasks) {
    channels_->StepCall(t, step, /*cancel=*/true, status);
  }
}

void GrpcCluster::EndStep(int64_t step, const std::vector<std::string>& tasks) {
  {
    std::lock_guard<std::mutex> lock(snapshot_mu_);
    snapshot_steps_.erase(step);
  }
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
          StrCat(open.size(), " step(s) in flight did not end within ", drain_s,
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
    const std::function<absl::Status()>& read, double drain_s) {
  const std::vector<std::string> ps = PsTasks();
  if (ps.empty()) return read();
  static std::atomic<int64_t> next_id{1};
  const int64_t id = (RandomStepBase() >> 1) + next_id.fetch_add(1);
  absl::Status frozen = FreezePs(ps, id, drain_s);
  if (!frozen.ok()) {
    UnfreezePs(ps, id);
    WarnSnapshot(std::string(frozen.message()));
    return read();
  }
  absl::Status s;
  t_freeze_id = id;
  s = read();
  t_freeze_id = 0;
  if (!UnfreezePs(ps, id) && s.ok()) {
    WarnSnapshot(
        StrCat("a parameter server's freeze lapsed during the read "
               "(it took over ",
               kSnapshotReadSeconds, " s)"));
  }
  return s;
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
  for (const std::string& t : spec_.TaskNames()) {
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

// ---------------------------------------------------------------------------

absl::StatusOr<std::unique_ptr<TaskServer>> TaskServer::Start(
    const ClusterSpec& spec, const std::string& job, int task, int threads,
    GrpcOptions options) {
  RN_ASSIGN_OR_RETURN(std::string address, spec.Address(job, task));
  if (!spec.AllLoopback() && options.token.empty()) {
    return absl::InvalidArgumentError(
        "the cluster spec names addresses beyond this machine: every task "
        "needs --token-file");
  }
  auto s = std::unique_ptr<TaskServer>(new TaskServer);
  const std::string name = ClusterSpec::TaskName(job, task);
  threads = threads > 0 ? threads : ThreadPool::DefaultNumThreads();
  s->inter_op_pool_ = std::make_unique<ThreadPool>(threads);
  s->intra_op_pool_ = std::make_unique<ThreadPool>(threads);
  s->devices_ = std::make_unique<DeviceSet>(1, threads, &s->resources_,
                                            s->intra_op_pool_.get(), name);
  s->channels_ = std::make_shared<WorkerChannels>(spec, options);
  std::shared_ptr<WorkerChannels> channels = s->channels_;
  s->worker_ = std::make_unique<Worker>(
      name, [channels](const std::string& src, const std::string& key,
                       int64_t step, Rendezvous::Done done) {
        channels->RecvTensor(src, key, step, std::move(done));
      });
  s->worker_->ServeDevices(s->devices_.get(), s->inter_op_pool_.get(),
                           spec.num_tasks("worker"));
  RN_ASSIGN_OR_RETURN(
      s->server_, WorkerServer::Start(s->worker_.get(),
                                      ListenAddress(spec, address), options));
  return s;
}

TaskServer::~TaskServer() { Shutdown(); }

void TaskServer::Wait() { server_->Wait(); }

void TaskServer::Shutdown() {
  if (server_ != nullptr) server_->Shutdown();
}

absl::StatusOr<int64_t> TaskBytesSent(const ClusterSpec& spec,
                                      const std::string& task,
                                      const GrpcOptions& options) {
  WorkerChannels channels(spec, options);
  RN_ASSIGN_OR_RETURN(proto::GetStatusResponse resp, channels.GetStatus(task));
  return resp.bytes_sent();
}

}  // namespace runnel
