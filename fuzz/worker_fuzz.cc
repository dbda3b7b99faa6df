// Fuzzes a parameter server's gRPC handlers (distributed/) with
// malformed protobufs: a TaskServer runs in this process, and for the given
// number of seconds requests built from valid seeds, with random bytes
// flipped, inserted, deleted and repeated, go to each of its methods as raw
// bytes (a GenericStub, so that what cannot parse reaches the server too).
// Every reply must be OK or an error; the server must never crash, and must
// still answer at the end. RecvTensor's answers are fuzzed too: malformed
// messages go to the receiver's TensorAssembler (tensor_coding.h), which
// must answer each with OK or an error. Prints what it sent and how the
// server answered.
//
//   worker_fuzz [SECONDS] [SEED]          (default 20 s, seed 1)
#include <grpcpp/generic/generic_stub.h>
#include <grpcpp/grpcpp.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <future>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "distributed/cluster_spec.h"
#include "distributed/grpc_cluster.h"
#include "distributed/grpc_server.h"
#include "distributed/tensor_coding.h"
#include "distributed/worker.grpc.pb.h"
#include "framework/graph.h"
#include "framework/graph_def.h"

namespace runnel {
namespace {

constexpr char kPs[] = "/job:ps/task:0/device:cpu:0";

Node* AddNode(Graph& g, NodeSpec spec) {
  absl::StatusOr<Node*> n = g.AddNode(std::move(spec));
  if (!n.ok()) {
    std::fprintf(stderr, "seed graph: %s\n",
                 std::string(n.status().message()).c_str());
    std::exit(2);
  }
  (*n)->set_assigned_device(kPs);
  return *n;
}

// A partition as a worker would register it: a variable, its read, an
// update, and a send of a product to the worker.
proto::GraphDef SeedGraph() {
  Graph g;
  Node* init = *g.AddConst(Tensor::FromVector<float>({1, 2}, Shape{2}), "init");
  init->set_assigned_device(kPs);
  Node* w = AddNode(g, {.name = "w",
                        .op = "variable",
                        .attrs = {{"dtype", DType::kF32},
                                  {"shape", Shape{2}},
                                  {"initializer", std::string("init:0")}}});
  Node* read =
      AddNode(g, {.name = "read", .op = "read_variable", .inputs = {{w, 0}}});
  Node* y =
      AddNode(g, {.name = "y", .op = "mul", .inputs = {{read, 0}, {read, 0}}});
  AddNode(g,
          {.name = "bump", .op = "assign_add", .inputs = {{w, 0}, {init, 0}}});
  AddNode(g, {.name = "_send/y.0/to_1",
              .op = "_send",
              .inputs = {{y, 0}},
              .attrs = {{"send_device", std::string(kPs)},
                        {"recv_device",
                         std::string("/job:worker/task:0/device:cpu:0")},
                        {"edge", std::string("y:0")}}});
  return ToGraphDef(g);
}

std::string Mutate(std::string s, std::mt19937_64& rng);

std::map<std::string, std::vector<std::string>> Seeds(
    const std::string& handle) {
  std::map<std::string, std::vector<std::string>> seeds;
  auto add = [&](const std::string& method,
                 const google::protobuf::Message& m) {
    seeds[method].push_back(m.SerializeAsString());
  };
  proto::RegisterGraphRequest reg;
  *reg.mutable_graph() = SeedGraph();
  add("RegisterGraph", reg);
  proto::RunGraphRequest run;
  run.set_handle(handle);
  run.set_step_id(7);
  add("RunGraph", run);
  run.set_step_id(8);
  run.set_return_to("/job:worker/task:0");
  run.set_end_step(true);
  add("RunGraph", run);
  proto::StepRequest step;
  step.set_step_id(7);
  step.mutable_status()->set_code(10);
  step.mutable_status()->set_message("why");
  step.mutable_status()->set_node("y");
  add("CancelStep", step);
  add("CleanupStep", step);
  proto::VariablesRequest vars;
  vars.add_name("w");
  *vars.add_value() = ToProto(Tensor::FromVector<float>({3, 4}, Shape{2}));
  add("VariableState", vars);
  add("InitVariables", vars);
  add("AssignVariables", vars);
  add("ReadVariables", vars);
  proto::HeartbeatRequest beat;
  beat.set_task("/job:worker/task:0");
  add("Heartbeat", beat);
  add("GetStatus", proto::GetStatusRequest());
  proto::RecvTensorRequest recv;
  recv.set_key(
      RendezvousKey(kPs, "/job:worker/task:0/device:cpu:0", "y:0", 0, 0, 7));
  recv.set_step_id(7);
  add("RecvTensor", recv);
  // Freezes with short leases, so that held RunGraphs go on soon.
  proto::FreezeRequest freeze;
  freeze.set_freeze_id(9);
  freeze.set_lease_seconds(0.05);
  freeze.add_step(7);
  freeze.set_wait_seconds(0.05);
  for (auto phase :
       {proto::FreezeRequest::FREEZE, proto::FreezeRequest::ADMIT,
        proto::FreezeRequest::DRAIN, proto::FreezeRequest::UNFREEZE}) {
    freeze.set_phase(phase);
    add("Freeze", freeze);
  }
  return seeds;
}

// RecvTensor answers as a sender writes them, each message flattened.
std::vector<std::string> AnswerSeeds() {
  std::vector<std::string> out;
  auto add = [&](const absl::Status& s, const Tensor& t, bool dead,
                 size_t chunk) {
    TensorMessages messages(s, t, dead, chunk);
    grpc::ByteBuffer b;
    while (messages.Next(&b)) {
      std::vector<grpc::Slice> slices;
      (void)b.Dump(&slices);
      std::string bytes;
      for (const grpc::Slice& sl : slices) {
        bytes.append(reinterpret_cast<const char*>(sl.begin()), sl.size());
      }
      out.push_back(std::move(bytes));
    }
  };
  add(absl::OkStatus(), Tensor::FromVector<float>({1, 2, 3, 4}, Shape{2, 2}),
      false, 8);
  add(absl::OkStatus(), Tensor::FromVector<int32_t>({5}, Shape{}), false, 64);
  add(absl::OkStatus(), Tensor(), true, 64);
  add(absl::OkStatus(), Tensor(DType::kF32, Shape{0, 3}), false, 64);
  add(absl::InternalError("the step failed"), Tensor(), false, 64);
  return out;
}

// Feeds 1 to 4 mutated answer messages to a receiver; OK or an error.
std::string FuzzAnswer(const std::vector<std::string>& seeds,
                       std::mt19937_64& rng) {
  TensorAssembler in("/job:ps/task:0", "a;b;y:0;0:0;7");
  const int n = 1 + static_cast<int>(rng() % 4);
  for (int i = 0; i < n; ++i) {
    std::string bytes = seeds[rng() % seeds.size()];
    if (rng() % 4 != 0) bytes = Mutate(bytes, rng);
    grpc::Slice slice(bytes);
    grpc::ByteBuffer message(&slice, 1);
    if (!in.Add(&message).ok()) return "error";
  }
  return in.Finish().ok() ? "ok" : "error";
}

std::string Mutate(std::string s, std::mt19937_64& rng) {
  const int edits = 1 + static_cast<int>(rng() % 3);
  for (int e = 0; e < edits; ++e) {
    const size_t at = s.empty() ? 0 : rng() % s.size();
    switch (rng() % 5) {
      case 0:
        if (!s.empty()) s[at] = static_cast<char>(rng());
        break;
      case 1:
        s.insert(s.begin() + at, static_cast<char>(rng()));
        break;
      case 2:
        if (!s.empty()) s.erase(at, 1 + rng() % 8);
        break;
      case 3:
        if (!s.empty()) s.insert(at, s.substr(at, 1 + rng() % 16));
        break;
      default:  // a varint at its extreme
        s.insert(at,
                 std::string("\xff\xff\xff\xff\xff\xff\xff\xff\xff\x01", 10));
    }
  }
  return s;
}

int Main(int argc, char** argv) {
  const double seconds = argc > 1 ? std::atof(argv[1]) : 20;
  std::mt19937_64 rng(argc > 2 ? std::strtoull(argv[2], nullptr, 10) : 1);
  const std::vector<int> ports = FreeLoopbackPorts(2);
  const ClusterSpec spec = ClusterSpec::Loopback(1, 1, ports);
  GrpcOptions options;
  options.connect_timeout_s = 1;
  absl::StatusOr<std::unique_ptr<TaskServer>> server =
      TaskServer::Start(spec, "ps", 0, 2, options);
  if (!server.ok()) {
    std::fprintf(stderr, "%s\n",
                 std::string(server.status().message()).c_str());
    return 2;
  }
  absl::StatusOr<std::string> handle =
      (*server)->worker().RegisterGraph(SeedGraph());
  if (!handle.ok()) {
    std::fprintf(stderr, "seed graph: %s\n",
                 std::string(handle.status().message()).c_str());
    return 2;
  }
  auto channel = grpc::CreateChannel(*spec.Address("ps", 0),
                                     grpc::InsecureChannelCredentials());
  grpc::GenericStub stub(channel);
  const auto seeds = Seeds(*handle);
  const std::vector<std::string> answers = AnswerSeeds();
  std::vector<std::string> methods;
  for (const auto& [m, s] : seeds) methods.push_back(m);
  std::map<std::string, std::map<std::string, int>> outcomes;
  const auto end =
      std::chrono::steady_clock::now() +
      std::chrono::microseconds(static_cast<int64_t>(seconds * 1e6));
  int64_t sent = 0;
  while (std::chrono::steady_clock::now() < end) {
    const std::string& method = methods[rng() % methods.size()];
    const auto& pool = seeds.at(method);
    const std::string bytes = Mutate(pool[rng() % pool.size()], rng);
    grpc::Slice slice(bytes);
    grpc::ByteBuffer request(&slice, 1), response;
    grpc::ClientContext ctx;
    // A RecvTensor for a value never sent waits for it: cancelled soon.
    ctx.set_deadline(std::chrono::system_clock::now() +
                     (method == "RecvTensor" ? std::chrono::milliseconds(50)
                                             : std::chrono::seconds(5)));
    std::promise<grpc::Status> done;
    stub.UnaryCall(&ctx, "/runnel.proto.WorkerService/" + method, {}, &request,
                   &response, [&done](grpc::Status s) { done.set_value(s); });
    const grpc::Status s = done.get_future().get();
    ++outcomes[method]
              [s.ok() ? "ok" : "error " + std::to_string(s.error_code())];
    ++sent;
    ++outcomes["(RecvTensor answers)"][FuzzAnswer(answers, rng)];
  }
  // Still alive and answering?
  auto typed = proto::WorkerService::NewStub(channel);
  grpc::ClientContext ctx;
  proto::GetStatusResponse status;
  const grpc::Status alive =
      typed->GetStatus(&ctx, proto::GetStatusRequest(), &status);
  std::printf("worker_fuzz: %lld malformed requests in %.0f s\n",
              static_cast<long long>(sent), seconds);
  for (const auto& [method, counts] : outcomes) {
    std::printf("  %-16s", method.c_str());
    for (const auto& [what, n] : counts)
      std::printf(" %s: %d", what.c_str(), n);
    std::printf("\n");
  }
  if (!alive.ok()) {
    std::printf("the server stopped answering: %s\n",
                alive.error_message().c_str());
    return 1;
  }
  std::printf("the server still answers (%lld graphs registered)\n",
              static_cast<long long>(status.registered_graphs()));
  return 0;
}

}  // namespace
}  // namespace runnel

int main(int argc, char** argv) { return runnel::Main(argc, argv); }
