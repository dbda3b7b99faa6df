// Loops, conds and stacks on a device whose memory is not the host's, and
// the host-memory path of their predicates (HostMemory, framework/kernel.h),
// without a GPU: a fake "gpu" factory makes devices of kernel type
// "invgpu" whose memory holds every bool inverted. A kernel that read a
// predicate in device memory as if it were on the host would take the
// other branch, so these graphs give the CPU's values only if the executor
// copies each predicate to host memory (and only then).
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "base/float16.h"
#include "common_runtime/control_flow.h"
#include "common_runtime/session.h"
#include "framework/caching_allocator.h"
#include "framework/device_set.h"
#include "framework/kernel.h"
#include "kernels/common/control_flow_kernels.h"
#include "tests/util/test_util.h"

namespace runnel {
namespace {

using ::runnel::testing::ExpectTensor;
using ::runnel::testing::F32;
using ::runnel::testing::I32;

constexpr char kType[] = "invgpu";

std::atomic<int> g_to_device{0}, g_to_host{0};

// The device's representation of host tensor `t` (or the reverse: the
// same, as inverting twice is the identity).
Tensor Flip(const Tensor& t, Allocator* allocator) {
  Tensor out(t.dtype(), t.shape(), allocator);
  std::memcpy(out.raw_data(), t.raw_data(), t.bytes());
  if (t.dtype() == DType::kBool) {
    bool* b = out.data<bool>();
    for (int64_t i = 0; i < out.num_elements(); ++i) b[i] = !b[i];
  }
  return out;
}

// The device's memory: blocks it hands out, recorded so that a kernel can
// tell whether a buffer is in it.
class Raw : public RawAllocator {
 public:
  void* Alloc(size_t bytes) override {
    void* p = std::aligned_alloc(256, bytes);
    std::lock_guard<std::mutex> lock(mu_);
    blocks_[p] = bytes;
    return p;
  }
  void Free(void* p) override {
    {
      std::lock_guard<std::mutex> lock(mu_);
      blocks_.erase(p);
    }
    std::free(p);
  }
  static bool InDeviceMemory(const void* p) {
    std::lock_guard<std::mutex> lock(mu_);
    const char* c = static_cast<const char*>(p);
    for (const auto& [start, bytes] : blocks_) {
      const char* s = static_cast<const char*>(start);
      if (c >= s && c < s + bytes) return true;
    }
    return false;
  }

 private:
  static inline std::mutex mu_;
  static inline std::map<void*, size_t> blocks_;
};

std::atomic<int> g_swapped_out{0}, g_swapped_in{0};

// A value swapped out (swap_memory): its host form.
class InvSwapped final : public SwappedValue {
 public:
  InvSwapped(Device* device, Tensor host)
      : SwappedValue(device), host(std::move(host)) {}
  Tensor host;
};

class InvGpu final : public Device {
 public:
  InvGpu(std::string name, Allocator* allocator, ResourceMgr* resources)
      : Device(std::move(name), kType, allocator, nullptr, resources) {}
  bool SwapsToHost() const override { return true; }
  absl::StatusOr<std::shared_ptr<SwappedValue>> SwapOut(
      const Tensor& t) override {
    ++g_swapped_out;
    return std::make_shared<InvSwapped>(this, Flip(t, CpuAllocator::Get()));
  }
  absl::StatusOr<Tensor> SwapIn(const SwappedValue& v) override {
    ++g_swapped_in;
    return Flip(static_cast<const InvSwapped&>(v).host, allocator());
  }
  absl::StatusOr<Tensor> CopyToHost(const Tensor& t) override {
    ++g_to_host;
    return Flip(t, CpuAllocator::Get());
  }
  absl::StatusOr<Tensor> CopyFromHost(const Tensor& t) override {
    ++g_to_device;
    return Flip(t, allocator());
  }
};

class InvFactory final : public DeviceFactory {
 public:
  int Count(std::string*) override { return 1; }
  absl::StatusOr<std::unique_ptr<Device>> Create(int, const std::string& name,
                                                 ResourceMgr* resources,
                                                 const GpuOptions&) override {
    return std::unique_ptr<Device>(
        std::make_unique<InvGpu>(name, &allocator_, resources));
  }

 private:
  Raw raw_;
  CachingAllocator cache_{&raw_};
  StreamAllocator allocator_{"invgpu:0", &cache_, 0};
};

// The device's kernels: const (its value in device form, not counted as
// a copy), i32 add, i32 less (a bool: stored inverted), f32 neg,
// identity, the transfers and the control-flow ops.
class Const : public OpKernel {
 public:
  absl::Status Init(const Node& node) override {
    RN_ASSIGN_OR_RETURN(value_, node.attr<Tensor>("value"));
    return absl::OkStatus();
  }
  absl::Status Compute(OpKernelContext* ctx) override {
    return ctx->set_output(0, Flip(value_, ctx->device()->allocator()));
  }

 private:
  Tensor value_;
};
class AddI32 : public OpKernel {
 public:
  absl::Status Compute(OpKernelContext* ctx) override {
    RN_ASSIGN_OR_RETURN(Tensor * z, ctx->allocate_output(0, Shape{}));
    z->data<int32_t>()[0] =
        ctx->input(0).data<int32_t>()[0] + ctx->input(1).data<int32_t>()[0];
    return absl::OkStatus();
  }
};
class LessI32 : public OpKernel {
 public:
  absl::Status Compute(OpKernelContext* ctx) override {
    RN_ASSIGN_OR_RETURN(Tensor * z, ctx->allocate_output(0, Shape{}));
    z->data<bool>()[0] =
        !(ctx->input(0).data<int32_t>()[0] < ctx->input(1).data<int32_t>()[0]);
    return absl::OkStatus();
  }
};
class NegF32 : public OpKernel {
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
// cast between f32 and f16 only (an f16 transfer's).
class CastF32F16 : public OpKernel {
 public:
  absl::Status Compute(OpKernelContext* ctx) override {
    const Tensor& x = ctx->input(0);
    RN_ASSIGN_OR_RETURN(Tensor * y, ctx->allocate_output(0, x.shape()));
    for (int64_t i = 0; i < x.num_elements(); ++i) {
      if (x.dtype() == DType::kF32) {
        y->data<Half>()[i] = FloatToHalf(x.data<float>()[i]);
      } else {
        y->data<float>()[i] = HalfToFloat(x.data<Half>()[i]);
      }
    }
    return absl::OkStatus();
  }
};
class Forward : public OpKernel {
 public:
  absl::Status Compute(OpKernelContext* ctx) override {
    return ctx->set_output(0, ctx->input(0));
  }
};
// i32 `unique` computed on the host, as a GPU's: its outputs are
// allocated in host memory (HostMemory outputs), which it checks.
class HostUnique : public OpKernel {
 public:
  absl::Status Compute(OpKernelContext* ctx) override {
    const Tensor& x = ctx->input(0);
    const int64_t n = x.num_elements();
    std::vector<int32_t> distinct;
    RN_ASSIGN_OR_RETURN(Tensor * idx, ctx->allocate_output(1, Shape{n}));
    for (int64_t i = 0; i < n; ++i) {
      const int32_t v = x.data<int32_t>()[i];
      auto at = std::find(distinct.begin(), distinct.end(), v);
      idx->data<int32_t>()[i] = static_cast<int32_t>(at - distinct.begin());
      if (at == distinct.end()) distinct.push_back(v);
    }
    const int64_t m = static_cast<int64_t>(distinct.size());
    RN_ASSIGN_OR_RETURN(Tensor * y, ctx->allocate_output(0, Shape{m}));
    std::copy(distinct.begin(), distinct.end(), y->data<int32_t>());
    for (const Tensor* t : {idx, y}) {
      if (t->num_elements() > 0 && Raw::InDeviceMemory(t->raw_data())) {
        return absl::InternalError("a host-memory output in device memory");
      }
    }
    return absl::OkStatus();
  }
};
class Transfer : public OpKernel {
 public:
  absl::Status Compute(OpKernelContext*) override {
    return absl::InternalError("run by the executor");
  }
};

RUNNEL_STATIC_INIT(InvGpuKernels) {
  RegisterKernelForAllTypes<Const>("const", kType);
  RegisterKernel<AddI32>("add", kType, DType::kI32);
  RegisterKernel<LessI32>("less", kType, DType::kI32);
  RegisterKernel<NegF32>("neg", kType, DType::kF32);
  RegisterKernelForAllTypes<Forward>("identity", kType);
  RegisterKernel<CastF32F16>("cast", kType, DType::kF32);
  RegisterKernel<CastF32F16>("cast", kType, DType::kF16);
  RegisterKernelForAllTypes<Transfer>("_send", kType);
  RegisterKernelForAllTypes<Transfer>("_recv", kType);
  RegisterControlFlowKernels(kType);
  RegisterKernel<HostUnique>("unique", kType, DType::kI32,
                             {.inputs = {0}, .outputs = {0, 1}});
}

class InvGpus {
 public:
  InvGpus()
      : real_(
            RegisterDeviceFactory(kDeviceGpu, std::make_unique<InvFactory>())) {
    g_to_device = 0;
    g_to_host = 0;
    g_swapped_out = 0;
    g_swapped_in = 0;
  }
  ~InvGpus() { RegisterDeviceFactory(kDeviceGpu, std::move(real_)); }

 private:
  std::unique_ptr<DeviceFactory> real_;
};

// Nodes asked for `device` ("" for anywhere).
struct Builder {
  Graph& g;
  std::string device;
  NodeOut Op(const std::string& op, std::vector<NodeOut> inputs,
             AttrMap attrs = {}) {
    absl::StatusOr<Node*> n = g.AddNode({.name = g.UniqueName(op),
                                         .op = op,
                                         .inputs = std::move(inputs),
                                         .attrs = std::move(attrs),
                                         .device = device});
    EXPECT_TRUE(n.ok()) << n.status();
    return {*n, 0};
  }
  NodeOut Const(Tensor t) { return Op("const", {}, {{"value", std::move(t)}}); }
};

// `acc = 0; while i < n { acc += i }` with every node asked for `loop`,
// but the body's add asked for `body`. Returns the exits: the trip count
// and acc.
std::vector<NodeOut> SumLoop(Graph& g, int n, const std::string& loop,
                             const std::string& body) {
  Builder b{g, loop};
  WhileBuilder wb(
      &g,
      [&](NodeSpec spec, bool) -> absl::StatusOr<Node*> {
        spec.name = g.UniqueName(spec.name);
        spec.device = loop;
        return g.AddNode(std::move(spec));
      },
      [](NodeOut v) -> absl::StatusOr<NodeOut> { return v; }, "loop", "loop",
      SourceSpan{});
  auto top = *wb.Begin({b.Const(I32({0}, {}))}, {std::nullopt}, {});
  NodeOut limit = *wb.EnterInvariant(b.Const(I32({n}, {})));
  auto in = *wb.Condition(b.Op("less", {top[0], limit}));
  Builder inner{g, body};
  return *wb.Finish({inner.Op("add", {in[1], in[0]})}, {});
}

std::string DeviceOf(const std::shared_ptr<const Graph>& placed,
                     const std::string& op) {
  std::string device;
  for (const Node* n : placed->nodes()) {
    if (n->op() != op) continue;
    const std::string d = DeviceSet::ShortName(n->assigned_device());
    if (!device.empty() && d != device) return "both";
    device = d;
  }
  return device;
}

TEST(GpuControlFlowTest, LoopOnTheDeviceReadsItsConditionOnTheHost) {
  for (int n : {0, 1, 10}) {
    InvGpus fake;
    auto g = std::make_shared<Graph>();
    std::vector<NodeOut> exits = SumLoop(*g, n, "/gpu:0", "/gpu:0");
    Session session(g, {.num_threads = 2, .gpu_devices = -1});
    absl::StatusOr<std::vector<Tensor>> out =
        session.Run(Session::Feeds{}, exits, {});
    ASSERT_TRUE(out.ok()) << out.status();
    ExpectTensor((*out)[0], DType::kI32, {}, {double(n)});
    ExpectTensor((*out)[1], DType::kI32, {}, {n * (n - 1) / 2.0});
    // Each of the n + 1 conditions comes out of the device once, for its
    // loop_cond, and the two results for their fetches; nothing goes in.
    EXPECT_EQ(g_to_host.load(), n + 1 + 2);
    EXPECT_EQ(g_to_device.load(), 0);
    absl::StatusOr<std::shared_ptr<const Graph>> placed =
        session.PlacedGraph(Session::Feeds{}, exits, {});
    ASSERT_TRUE(placed.ok()) << placed.status();
    for (const char* op :
         {"enter", "merge", "switch", "loop_cond", "next_iteration", "exit"}) {
      EXPECT_EQ(DeviceOf(*placed, op), "/gpu:0") << op;
    }
  }
}

// The loop's control on the CPU, its body's add on the device: the device
// runs a copy of the control, whose switch takes the condition received
// from the CPU in host memory, as it came (never copied in).
TEST(GpuControlFlowTest, BodyOnTheDeviceFollowsTheConditionFromTheCpu) {
  InvGpus fake;
  auto g = std::make_shared<Graph>();
  std::vector<NodeOut> exits = SumLoop(*g, 4, "/cpu:0", "/gpu:0");
  Session session(g, {.num_threads = 2, .gpu_devices = -1});
  absl::StatusOr<std::vector<Tensor>> out =
      session.Run(Session::Feeds{}, exits, {});
  ASSERT_TRUE(out.ok()) << out.status();
  ExpectTensor((*out)[0], DType::kI32, {}, {4});
  ExpectTensor((*out)[1], DType::kI32, {}, {6});
  absl::StatusOr<std::shared_ptr<const Graph>> placed =
      session.PlacedGraph(Session::Feeds{}, exits, {});
  ASSERT_TRUE(placed.ok()) << placed.status();
  EXPECT_EQ(DeviceOf(*placed, "loop_cond"), "/cpu:0");
  EXPECT_EQ(DeviceOf(*placed, "add"), "both");
}

// `if a < b { -x } else { x }` on the device, its predicate computed
// there (and copied out for the switch) or fed from the host (received
// into host memory, not copied in).
TEST(GpuControlFlowTest, CondOnTheDeviceTakesTheBranchOfItsPredicate) {
  for (bool fed : {false, true}) {
    for (int a : {1, 3}) {
      InvGpus fake;
      auto g = std::make_shared<Graph>();
      Builder cpu{*g, ""};
      Builder gpu{*g, "/gpu:0"};
      NodeOut x = cpu.Op("placeholder", {},
                         {{"dtype", DType::kF32}, {"shape", Shape{2}}});
      NodeOut p = cpu.Op("placeholder", {},
                         {{"dtype", DType::kBool}, {"shape", Shape{}}});
      NodeOut pred = fed ? p
                         : gpu.Op("less", {gpu.Const(I32({a}, {})),
                                           gpu.Const(I32({2}, {}))});
      NodeOut sw = gpu.Op("switch", {x, pred});
      NodeOut neg = gpu.Op("neg", {{sw.node, 1}});
      NodeOut same = gpu.Op("identity", {{sw.node, 0}});
      NodeOut merged = gpu.Op("merge", {same, neg});
      Session session(g, {.num_threads = 2, .gpu_devices = -1});
      const bool taken = a < 2;
      Session::Feeds feeds = {{x, F32({1, -2}, {2})}};
      if (fed) feeds.push_back({p, Tensor::ScalarOf(DType::kBool, taken)});
      absl::StatusOr<std::vector<Tensor>> out =
          session.Run(feeds, {merged, {merged.node, 1}}, {});
      ASSERT_TRUE(out.ok()) << out.status();
      ExpectTensor(
          (*out)[0], DType::kF32, {2},
          taken ? std::vector<double>{-1, 2} : std::vector<double>{1, -2});
      ExpectTensor((*out)[1], DType::kI32, {}, {taken ? 1.0 : 0.0});
      // In: x only (a fed predicate stays in host memory). Out: the
      // computed predicate, and the merge's value (its index is made on
      // the host).
      EXPECT_EQ(g_to_device.load(), 1);
      EXPECT_EQ(g_to_host.load(), fed ? 1 : 2);
    }
  }
}

// A constant taken in host memory (a switch's predicate here; a reshape's
// shape, typically) is its value on the host: no copy out of the device.
TEST(GpuControlFlowTest, ConstantsAreReadOnTheHostWithoutACopy) {
  for (bool p : {false, true}) {
    InvGpus fake;
    auto g = std::make_shared<Graph>();
    Builder gpu{*g, "/gpu:0"};
    NodeOut x = gpu.Const(F32({5}, {}));
    NodeOut sw =
        gpu.Op("switch", {x, gpu.Const(Tensor::ScalarOf(DType::kBool, p))});
    NodeOut merged = gpu.Op("merge", {gpu.Op("neg", {{sw.node, 0}}),
                                      gpu.Op("identity", {{sw.node, 1}})});
    Session session(g, {.num_threads = 2, .gpu_devices = -1});
    absl::StatusOr<std::vector<Tensor>> out =
        session.Run(Session::Feeds{}, {merged}, {});
    ASSERT_TRUE(out.ok()) << out.status();
    ExpectTensor((*out)[0], DType::kF32, {}, {p ? 5.0 : -5.0});
    EXPECT_EQ(g_to_host.load(), 1);  // the result only
  }
}

// Pushes `true` onto a stack at index 1 + 2 and pops it, every node on
// `device`, the push with `swap` ("": none, "asked", "planned"); the pop's
// value, or the run's error.
absl::StatusOr<Tensor> PushAndPop(const std::string& device,
                                  const std::string& swap) {
  auto g = std::make_shared<Graph>();
  Builder b{*g, device};
  NodeOut stack = b.Op("stack_new", {}, {{"elem_dtype", DType::kBool}});
  NodeOut index = b.Op("add", {b.Const(I32({1}, {})), b.Const(I32({2}, {}))});
  NodeOut value = b.Const(Tensor::ScalarOf(DType::kBool, true));
  NodeOut pushed = b.Op("stack_push", {stack, index, value}, {{"swap", swap}});
  absl::StatusOr<Node*> pop =
      g->AddNode({.name = "pop",
                  .op = "stack_pop",
                  .inputs = {stack, index},
                  .control_inputs = {pushed.node},
                  .attrs = {{"elem_dtype", DType::kBool}, {"shape", Shape{}}},
                  .device = device});
  if (!pop.ok()) return pop.status();
  Session session(g, {.num_threads = 2, .gpu_devices = -1});
  RN_ASSIGN_OR_RETURN(std::vector<Tensor> out,
                      session.Run(Session::Feeds{}, {NodeOut{*pop, 0}}, {}));
  return out[0];
}

// A stack on the device keeps device tensors; its handle and index are
// read on the host (the index, computed on the device, copied out).
TEST(GpuControlFlowTest, StackOnTheDeviceHoldsDeviceTensors) {
  InvGpus fake;
  absl::StatusOr<Tensor> out = PushAndPop("/gpu:0", "");
  ASSERT_TRUE(out.ok()) << out.status();
  ExpectTensor(*out, DType::kBool, {}, {1});
  // The index for the push and the pop, and the value for the fetch.
  EXPECT_EQ(g_to_host.load(), 3);
  EXPECT_EQ(g_swapped_out.load(), 0);
}

// swap_memory: the device keeps the value in host memory (its host form:
// a bool the right way round) and gives it back in its own.
TEST(GpuControlFlowTest, StackOnTheDeviceSwapsToHostMemory) {
  for (const char* swap : {"asked", "planned"}) {
    InvGpus fake;
    absl::StatusOr<Tensor> out = PushAndPop("/gpu:0", swap);
    ASSERT_TRUE(out.ok()) << out.status();
    ExpectTensor(*out, DType::kBool, {}, {1});
    EXPECT_EQ(g_swapped_out.load(), 1) << swap;
    EXPECT_EQ(g_swapped_in.load(), 1) << swap;
  }
}

// On the CPU, whose memory is the host's, an asked swap keeps the value as
// it is; a budget's plan that counted on the swap is an error that says so.
TEST(GpuControlFlowTest, PlannedSwapOnTheCpuIsAnError) {
  InvGpus fake;
  absl::StatusOr<Tensor> asked = PushAndPop("/cpu:0", "asked");
  ASSERT_TRUE(asked.ok()) << asked.status();
  ExpectTensor(*asked, DType::kBool, {}, {1});
  absl::StatusOr<Tensor> planned = PushAndPop("/cpu:0", "planned");
  ASSERT_FALSE(planned.ok());
  EXPECT_NE(planned.status().message().find(
                "the memory budget's plan keeps this loop's saved values in "
                "host memory"),
            std::string::npos)
      << planned.status();
  EXPECT_EQ(g_swapped_out.load(), 0);
}

// `--transfer-dtype f16` with a GPU: the casts the partitioner adds go to
// the devices at both ends of each f32 edge, the GPU's included, and the
// value crosses (both ways) as f16.
TEST(GpuControlFlowTest, F16TransfersCastOnTheDevice) {
  InvGpus fake;
  auto g = std::make_shared<Graph>();
  Builder cpu{*g, ""};
  Builder gpu{*g, "/gpu:0"};
  constexpr int64_t kN = 2048;
  NodeOut x =
      cpu.Op("placeholder", {}, {{"dtype", DType::kF32}, {"shape", Shape{kN}}});
  NodeOut y = gpu.Op("neg", {x});
  Session session(g,
                  {.num_threads = 2, .gpu_devices = -1, .f16_transfers = true});
  std::vector<float> v(kN);
  for (int64_t i = 0; i < kN; ++i) v[i] = static_cast<float>(i) * 0.5f;
  // 1 + 2^-12 is no f16: it crosses as 1.
  v[1] = 1.0f + 1.0f / 4096;
  absl::StatusOr<std::vector<Tensor>> out =
      session.Run({{x, F32(v, Shape{kN})}}, {y}, {});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ((*out)[0].dtype(), DType::kF32);
  EXPECT_EQ((*out)[0].data<float>()[1], -1.0f);
  EXPECT_EQ((*out)[0].data<float>()[kN - 1], -1023.5f);
  EXPECT_EQ(g_to_device.load(), 1);
  EXPECT_EQ(g_to_host.load(), 1);
}

// A kernel whose outputs are in host memory (HostMemory.outputs) gets
// them allocated there (OpKernelContext::allocate_output), not in the
// device's memory, and their fetches need no copy out of the device.
TEST(GpuControlFlowTest, HostMemoryOutputsAreAllocatedOnTheHost) {
  InvGpus fake;
  auto g = std::make_shared<Graph>();
  Builder cpu{*g, ""};
  Builder gpu{*g, "/gpu:0"};
  NodeOut x =
      cpu.Op("placeholder", {}, {{"dtype", DType::kI32}, {"shape", Shape{5}}});
  NodeOut u = gpu.Op("unique", {x});
  const std::vector<NodeOut> fetches = {u, {u.node, 1}};
  Session session(g, {.num_threads = 2, .gpu_devices = -1});
  absl::StatusOr<std::vector<Tensor>> out =
      session.Run({{x, I32({4, 2, 4, 7, 2}, {5})}}, fetches, {});
  ASSERT_TRUE(out.ok()) << out.status();
  ExpectTensor((*out)[0], DType::kI32, {3}, {4, 2, 7});
  ExpectTensor((*out)[1], DType::kI32, {5}, {0, 1, 0, 2, 1});
  // The input arrives on the host, where unique takes it, and the
  // outputs leave from there: no copies.
  EXPECT_EQ(g_to_host.load(), 0);
  EXPECT_EQ(g_to_device.load(), 0);
  absl::StatusOr<std::shared_ptr<const Graph>> placed =
      session.PlacedGraph({{x, I32({4, 2, 4, 7, 2}, {5})}}, fetches, {});
  ASSERT_TRUE(placed.ok()) << placed.status();
  EXPECT_EQ(DeviceOf(*placed, "unique"), "/gpu:0");
}

}  // namespace
}  // namespace runnel
