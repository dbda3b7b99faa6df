// GPUs in the device set, placement by kernel availability, and values
// crossing into and out of a device whose memory is not the host's, all
// without a GPU: a fake "gpu" factory makes devices of kernel type
// "fakegpu" (host memory behind a CachingAllocator, copies counted) that
// have kernels for a few ops only (docs/gpu.md).
#include <gtest/gtest.h>

#include <atomic>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "common_runtime/saver.h"
#include "common_runtime/session.h"
#include "common_runtime/trace.h"
#include "framework/caching_allocator.h"
#include "framework/device_set.h"
#include "framework/kernel.h"
#include "io/checkpoint.h"
#include "tests/util/test_ops.h"
#include "tests/util/test_util.h"

namespace runnel {
namespace {

using ::runnel::testing::Add;
using ::runnel::testing::ExpectTensor;
using ::runnel::testing::F32;
using ::runnel::testing::I32;
using ::runnel::testing::Placeholder;

constexpr char kFakeType[] = "fakegpu";

class HostRaw : public RawAllocator {
 public:
  void* Alloc(size_t bytes) override { return std::aligned_alloc(256, bytes); }
  void Free(void* p) override { std::free(p); }
};

std::atomic<int> g_copies_to_device{0}, g_copies_to_host{0};

class FakeGpu final : public Device {
 public:
  FakeGpu(std::string name, Allocator* allocator, ThreadPool* pool,
          ResourceMgr* resources, const CachingAllocator* cache)
      : Device(std::move(name), kFakeType, allocator, pool, resources),
        cache_(cache) {}
  absl::StatusOr<Tensor> CopyToHost(const Tensor& t) override {
    ++g_copies_to_host;
    return t.Clone();
  }
  absl::StatusOr<Tensor> CopyFromHost(const Tensor& t) override {
    ++g_copies_to_device;
    Tensor d(t.dtype(), t.shape(), allocator());
    std::memcpy(d.raw_data(), t.raw_data(), t.bytes());
    return d;
  }
  std::string Describe() const override { return "fake"; }
  std::optional<CachingAllocatorStats> MemoryStats() const override {
    return cache_->stats();
  }

 private:
  const CachingAllocator* cache_;
};

class FakeFactory final : public DeviceFactory {
 public:
  explicit FakeFactory(int count) : count_(count) {}
  int Count(std::string* why_none) override {
    if (count_ == 0) *why_none = "the fake has none";
    return count_;
  }
  absl::StatusOr<std::unique_ptr<Device>> Create(
      int index, const std::string& name, ResourceMgr* resources,
      const GpuOptions& options) override {
    cache_.SetLimit(options.memory_limit);
    return std::unique_ptr<Device>(std::make_unique<FakeGpu>(
        name, &allocator_, &pool_, resources, &cache_));
  }

 private:
  int count_;
  ThreadPool pool_{2};
  HostRaw raw_;
  CachingAllocator cache_{&raw_};
  StreamAllocator allocator_{"fakegpu:0", &cache_, 0};
};

// neg on the fake device: the only arithmetic it has.
class FakeNeg : public OpKernel {
 public:
  absl::Status Compute(OpKernelContext* ctx) override {
    const Tensor& x = ctx->input(0);
    RN_ASSIGN_OR_RETURN(Tensor * y, ctx->allocate_output(0, x.shape()));
    for (int64_t i = 0; i < x.num_elements(); ++i) {
      y->data<float>()[i] = -x.data<float>()[i];
    }
    return absl::OkStatus();
  }
};
class FakeTransfer : public OpKernel {
 public:
  absl::Status Compute(OpKernelContext*) override {
    return absl::InternalError("run by the executor");
  }
};

RUNNEL_STATIC_INIT(FakeGpuKernels) {
  RegisterKernel<FakeNeg>("neg", kFakeType, DType::kF32);
  // Variables and a fused update, with the CPU's kernels (the fake's memory
  // is the host's), so that a variable's group can go to the fake.
  for (const char* op :
       {"variable", "read_variable", "assign_add", "apply_sgd"}) {
    KernelRegistry::Global().Register(
        op, kFakeType, DType::kF32, [](const Node& node) {
          return KernelRegistry::Global().Create(node, kDeviceCpu);
        });
  }
  RegisterKernelForAllTypes<FakeTransfer>("_send", kFakeType);
  RegisterKernelForAllTypes<FakeTransfer>("_recv", kFakeType);
}

// Puts a fake in place of the real GPU factory for one test.
class FakeGpus {
 public:
  explicit FakeGpus(int count)
      : real_(RegisterDeviceFactory(kDeviceGpu,
                                    std::make_unique<FakeFactory>(count))) {}
  ~FakeGpus() { RegisterDeviceFactory(kDeviceGpu, std::move(real_)); }

 private:
  std::unique_ptr<DeviceFactory> real_;
};

TEST(GpuDeviceTest, GpusJoinAfterTheCpus) {
  FakeGpus fake(2);
  ResourceMgr resources;
  DeviceSet all(1, 2, &resources);
  ASSERT_TRUE(all.AddGpus(-1, &resources).ok());
  EXPECT_EQ(all.Describe(), "/cpu:0, /gpu:0, /gpu:1");
  EXPECT_EQ(all.num_local(), 3);
  EXPECT_EQ(all.gpu_note(), "");
  EXPECT_EQ(all.device(1)->type(), kFakeType);

  DeviceSet one(2, 2, &resources);
  ASSERT_TRUE(one.AddGpus(1, &resources).ok());
  EXPECT_EQ(one.Describe(), "/cpu:0, /cpu:1, /gpu:0");

  DeviceSet none(1, 2, &resources);
  ASSERT_TRUE(none.AddGpus(0, &resources).ok());
  EXPECT_EQ(none.Describe(), "/cpu:0");

  DeviceSet too_many(1, 2, &resources);
  absl::Status s = too_many.AddGpus(3, &resources);
  EXPECT_EQ(s.message(), "asked for 3 GPUs but only 2 is visible");
}

TEST(GpuDeviceTest, NoGpuIsNoErrorUnlessOneIsAskedFor) {
  FakeGpus fake(0);
  ResourceMgr resources;
  DeviceSet all(1, 2, &resources);
  ASSERT_TRUE(all.AddGpus(-1, &resources).ok());
  EXPECT_EQ(all.Describe(), "/cpu:0");
  EXPECT_EQ(all.gpu_note(), "the fake has none");
  DeviceSet one(1, 2, &resources);
  EXPECT_EQ(one.AddGpus(1, &resources).message(),
            "asked for 1 GPU but none is visible: the fake has none");
}

// What this machine has: without a GPU, a reason (no driver, or a build
// without CUDA) and no error for gpu=all.
TEST(GpuDeviceTest, ThisMachineSaysWhyItHasNoGpu) {
  std::string why;
  if (VisibleGpus(&why) > 0) GTEST_SKIP() << "this machine has a GPU";
  EXPECT_FALSE(why.empty());
  ResourceMgr resources;
  DeviceSet all(1, 2, &resources);
  ASSERT_TRUE(all.AddGpus(-1, &resources).ok());
  EXPECT_EQ(all.gpu_note(), why);
  Session session(std::make_shared<Graph>(), {.gpu_devices = 1});
  absl::StatusOr<std::vector<Tensor>> out =
      session.Run(std::vector<std::pair<std::string, Tensor>>{}, {}, {});
  EXPECT_EQ(out.status().message(),
            "asked for 1 GPU but none is visible: " + why);
}

// neg asked for on the GPU runs there; abs (no kernel there) comes back to
// the CPU with a warning; values cross once each way.
TEST(GpuDeviceTest, NodesRunWhereTheirKernelsAreAndValuesCross) {
  FakeGpus fake(1);
  auto g = std::make_shared<Graph>();
  Node* x = Placeholder(*g, "x", Shape{3});
  absl::StatusOr<Node*> neg = g->AddNode(
      {.name = "neg", .op = "neg", .inputs = {{x, 0}}, .device = "/gpu:0"});
  ASSERT_TRUE(neg.ok()) << neg.status();
  absl::StatusOr<Node*> abs = g->AddNode(
      {.name = "abs", .op = "abs", .inputs = {{*neg, 0}}, .device = "/gpu:0"});
  ASSERT_TRUE(abs.ok()) << abs.status();
  Node* sum = Add(*g, "sum", "add", {{*abs, 0}, {*neg, 0}});
  std::vector<std::string> warnings;
  Session session(g, {.num_threads = 2,
                      .gpu_devices = -1,
                      .warn = [&](const Node& n, const std::string& m) {
                        warnings.push_back(n.name() + ": " + m);
                      }});
  g_copies_to_device = 0;
  g_copies_to_host = 0;
  absl::StatusOr<std::vector<Tensor>> out =
      session.Run({{"x", F32({1, -2, 3}, {3})}}, {"sum"}, {});
  ASSERT_TRUE(out.ok()) << out.status();
  ExpectTensor((*out)[0], DType::kF32, Shape{3}, {0, 4, 0}, 0);
  EXPECT_EQ(g_copies_to_device.load(), 1);  // x
  EXPECT_EQ(g_copies_to_host.load(), 1);    // neg, for abs and sum
  ASSERT_EQ(warnings.size(), 1u);
  EXPECT_EQ(warnings[0],
            "abs: 'abs' (abs) has no fakegpu kernel for its dtype; placed on "
            "the CPU");
  absl::StatusOr<std::shared_ptr<const Graph>> placed = session.PlacedGraph(
      {{NodeOut{x, 0}, F32({1, -2, 3}, {3})}}, {NodeOut{sum, 0}}, {});
  ASSERT_TRUE(placed.ok()) << placed.status();
  for (const Node* n : (*placed)->nodes()) {
    const std::string device = DeviceSet::ShortName(n->assigned_device());
    EXPECT_EQ(device, n->name() == "neg" ? "/gpu:0" : "/cpu:0") << n->name();
  }
}

// A GPU's allocator stats reach the trace and `report`
// (common_runtime/trace.h); a session without a GPU adds nothing to either.
TEST(GpuDeviceTest, MemoryStatsReachTheTraceAndReport) {
  {
    auto g = std::make_shared<Graph>();
    Placeholder(*g, "x", Shape{3});
    Session cpu_only(g, {.num_threads = 1});
    EXPECT_TRUE(DeviceMemoryOf(cpu_only.devices()).empty());
    Tracer tracer;
    TraceMemory(cpu_only.devices(), tracer);
    EXPECT_EQ(tracer.ToJson().find("\"ph\": \"C\""), std::string::npos);
    EXPECT_TRUE(ReportMemory({}).json.empty());
  }
  FakeGpus fake(1);
  auto g = std::make_shared<Graph>();
  Node* x = Placeholder(*g, "x", Shape{1024});
  absl::StatusOr<Node*> neg = g->AddNode(
      {.name = "neg", .op = "neg", .inputs = {{x, 0}}, .device = "/gpu:0"});
  ASSERT_TRUE(neg.ok()) << neg.status();
  Session session(g, {.num_threads = 2, .gpu_devices = -1});
  absl::StatusOr<std::vector<Tensor>> out = session.Run(
      {{"x", F32(std::vector<float>(1024, 1.0f), {1024})}}, {"neg"}, {});
  ASSERT_TRUE(out.ok()) << out.status();
  const std::vector<DeviceMemory> memory = DeviceMemoryOf(session.devices());
  ASSERT_EQ(memory.size(), 1u);
  EXPECT_EQ(memory[0].device, "/gpu:0");
  // x and neg's output (4 KiB each) lived on the fake GPU in one segment.
  EXPECT_GE(memory[0].stats.peak_in_use, 8192u);
  EXPECT_EQ(memory[0].stats.reserved, size_t{2} << 20);
  EXPECT_EQ(memory[0].stats.peak_reserved, size_t{2} << 20);

  const MemoryReport report = ReportMemory(memory);
  ASSERT_EQ(report.json.size(), 3u);
  EXPECT_EQ(report.json[0].first, "gpu0_mem_in_use");
  EXPECT_EQ(report.json[1], (std::pair<std::string, std::string>{
                                "gpu0_mem_reserved", "2.000"}));
  EXPECT_EQ(report.json[2],
            (std::pair<std::string, std::string>{"gpu0_mem_peak", "2.000"}));
  ASSERT_EQ(report.shown.size(), 1u);
  EXPECT_EQ(report.shown[0].first, "gpu0 mem");
  EXPECT_NE(report.shown[0].second.find("peak 2 MiB"), std::string::npos)
      << report.shown[0].second;

  Tracer tracer;
  TraceMemory(session.devices(), tracer);
  const std::string json = tracer.ToJson();
  EXPECT_NE(json.find("{\"ph\": \"C\", \"pid\": 1, \"name\": \"/gpu:0 memory "
                      "(MiB)\""),
            std::string::npos)
      << json;
  EXPECT_NE(json.find("\"reserved\": 2.000, \"peak reserved\": 2.000"),
            std::string::npos)
      << json;
}

// A variable, its reads and its fused update go to the GPU when it has
// kernels for all of them: the weights move there once and stay between
// steps. A checkpoint reads the value through a copy out of the GPU, and a
// restored value (in host memory) moves in again. A variable one of whose
// users has no GPU kernel (scatter_add here) stays on the CPU with all its
// users.
TEST(GpuDeviceTest, VariablesAndTheirUpdatesGoToTheGpu) {
  FakeGpus fake(1);
  auto g = std::make_shared<Graph>();
  Node* init = *g->AddConst(F32({1, 2, 3}, {3}), "init");
  Node* w = Add(*g, "w", "variable", {},
                {{"dtype", DType::kF32},
                 {"shape", Shape{3}},
                 {"initializer", std::string("init:0")}});
  Node* grad = Placeholder(*g, "grad", Shape{3});
  Node* lr = Placeholder(*g, "lr", Shape{});
  Node* step = Add(*g, "step", "apply_sgd", {{w, 0}, {lr, 0}, {grad, 0}});
  Node* read = Add(*g, "read", "read_variable", {{w, 0}});
  Node* y = Add(*g, "y", "neg", {{read, 0}});
  Node* zeros = *g->AddConst(F32({0, 0}, {2}), "zeros");
  Node* u = Add(*g, "u", "variable", {},
                {{"dtype", DType::kF32},
                 {"shape", Shape{2}},
                 {"initializer", std::string("zeros:0")}});
  Node* at = *g->AddConst(I32({1}, {1}), "at");
  Node* one = *g->AddConst(F32({1}, {1}), "one");
  Node* bump = Add(*g, "bump", "scatter_add", {{u, 0}, {at, 0}, {one, 0}});
  (void)init;
  (void)zeros;
  Session session(g, {.num_threads = 2, .gpu_devices = -1});
  const Session::Feeds feed = {{NodeOut{grad, 0}, F32({2, 2, 2}, {3})},
                               {NodeOut{lr, 0}, F32({0.5f}, {})}};
  absl::StatusOr<std::shared_ptr<const Graph>> placed =
      session.PlacedGraph(feed, {NodeOut{y, 0}}, {step, bump});
  ASSERT_TRUE(placed.ok()) << placed.status();
  for (const Node* n : (*placed)->nodes()) {
    const std::string device = DeviceSet::ShortName(n->assigned_device());
    if (n->name() == "w" || n->name() == "step" || n->name() == "read" ||
        n->name() == "y") {
      EXPECT_EQ(device, "/gpu:0") << n->name();
    }
    if (n->name() == "u" || n->name() == "bump") {
      EXPECT_EQ(device, "/cpu:0") << n->name();
    }
  }

  for (int i = 0; i < 2; ++i) {
    absl::StatusOr<std::vector<Tensor>> out =
        session.Run(feed, {}, {step, bump});
    ASSERT_TRUE(out.ok()) << out.status();
  }
  g_copies_to_host = 0;
  absl::StatusOr<TensorMap> saved = ReadVariables(session);
  ASSERT_TRUE(saved.ok()) << saved.status();
  ExpectTensor(saved->at("w"), DType::kF32, Shape{3}, {-1, 0, 1}, 0);
  ExpectTensor(saved->at("u"), DType::kF32, Shape{2}, {0, 2}, 0);
  // Both come out of the GPU: a plan that only reads variables puts them
  // there too (u moves in, and back to the CPU at its next use).
  EXPECT_EQ(g_copies_to_host.load(), 2);

  ASSERT_TRUE(
      AssignVariables(session,
                      {{"w", F32({5, 5, 5}, {3})}, {"u", F32({7, 7}, {2})}},
                      "the test", nullptr)
          .ok());
  absl::StatusOr<std::vector<Tensor>> out = session.Run(feed, {}, {step, bump});
  ASSERT_TRUE(out.ok()) << out.status();
  absl::StatusOr<TensorMap> after = ReadVariables(session);
  ASSERT_TRUE(after.ok()) << after.status();
  ExpectTensor(after->at("w"), DType::kF32, Shape{3}, {4, 4, 4}, 0);
  ExpectTensor(after->at("u"), DType::kF32, Shape{2}, {7, 8}, 0);
}

}  // namespace
}  // namespace runnel
