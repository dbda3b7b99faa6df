// In-graph if and loop (interpreter/control_flow.h): the graph they build,
// and what a loop's gradient holds in memory.
#include "interpreter/control_flow.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstring>
#include <optional>

#include "absl/strings/str_replace.h"
#include "base/thread_pool.h"
#include "framework/allocator.h"
#include "framework/device_set.h"
#include "framework/recompute_plan.h"
#include "interpreter/interpreter.h"

namespace runnel::interp {
namespace {

class ControlFlowTest : public ::testing::Test {
 protected:
  int Run(const std::string& source, int64_t memory_budget = 0) {
    err_ = std::tmpfile();
    sink_ = std::make_unique<lang::DiagnosticSink>(err_);
    Options options;
    options.threads = 2;
    options.memory_budget = memory_budget;
    options.err = err_;
    options.out = err_;
    interp_ = std::make_unique<Interpreter>(options, sink_.get());
    return interp_->RunSource("test.rnl", source);
  }
  std::string err() {
    std::fflush(err_);
    std::rewind(err_);
    std::string s;
    char buf[4096];
    size_t n;
    while ((n = std::fread(buf, 1, sizeof buf, err_)) > 0) s.append(buf, n);
    return s;
  }
  int Count(const std::string& op) {
    int n = 0;
    for (const Node* node : interp_->graph().nodes()) n += node->op() == op;
    return n;
  }
  // Runs `source` under `memory_budget` (asserting it succeeds); the most
  // the CPU allocator held beyond what it held before.
  size_t PeakOfRun(const std::string& source, int64_t memory_budget) {
    CpuAllocator* cpu = CpuAllocator::Get();
    const size_t before = cpu->bytes_in_use();
    cpu->ResetPeak();
    EXPECT_EQ(Run(source, memory_budget), 0) << err();
    return cpu->peak_bytes_in_use() - before;
  }
  // The stack_pops that keep what they read: recomputation's.
  int KeepingReads() {
    int n = 0;
    for (const Node* node : interp_->graph().nodes()) {
      n +=
          node->op() == "stack_pop" && node->attr<bool>("keep").value_or(false);
    }
    return n;
  }
  // The divisors of the `mod`s in the graph: recomputation's interval.
  std::vector<int> Intervals() {
    std::vector<int> k;
    for (const Node* node : interp_->graph().nodes()) {
      if (node->op() != "mod") continue;
      const Node* c = node->input(1).node;
      while (c->op() == "enter" || c->op() == "maximum") c = c->input(0).node;
      if (c->op() != "const") continue;
      k.push_back(c->attr<Tensor>("value")->data<int32_t>()[0]);
    }
    return k;
  }
  void TearDown() override {
    interp_.reset();
    if (err_) std::fclose(err_);
  }
  std::FILE* err_ = nullptr;
  std::unique_ptr<lang::DiagnosticSink> sink_;
  std::unique_ptr<Interpreter> interp_;
};

TEST_F(ControlFlowTest, IfBuildsOneSwitchPerOuterValueAndOneMergePerResult) {
  ASSERT_EQ(Run(R"RNL(
input p: f32[]
input q: f32[]
let (a, b) = if p > 0.0 { (p * q, q) } else { (q, p + q) }
)RNL"),
            0)
      << err();
  // The predicate's own switch, then p and q once each into the branches.
  EXPECT_EQ(Count("switch"), 3);
  EXPECT_EQ(Count("merge"), 2);
}

TEST_F(ControlFlowTest, LoopIsNotUnrolled) {
  ASSERT_EQ(Run(R"RNL(
input n: i32[]
let s = loop s = 0.0 for i in 0..n { s + 1.0 }
assert((run s with {n: 1000}) == 1000.0, "a thousand iterations")
)RNL"),
            0)
      << err();
  EXPECT_EQ(Count("next_iteration"), 2);  // the counter and s
  EXPECT_EQ(Count("exit"), 2);
}

// A gradient through 10,000 iterations of a 1,000-float state keeps one
// state per iteration on a stack (40 MB) for the backward loop, and gives
// it all back when the run ends. Measured loosely, never timed.
TEST_F(ControlFlowTest, LoopGradientHoldsItsStacksOnlyDuringTheRun) {
  CpuAllocator* cpu = CpuAllocator::Get();
  const size_t before = cpu->bytes_in_use();
  cpu->ResetPeak();
  ASSERT_EQ(Run(R"RNL(
input u: f32[1000]
let y = loop x = u for i in 0..10000 { x * 0.999 + sin(x) * 0.001 }
let g = grad(sum(y), u)
let v = run g with {u: ones([1000])}
assert(v.shape[0] == 1000 and all(v > 0.0), "a gradient came back")
)RNL"),
            0)
      << err();
  const size_t stacks = size_t{10000} * 1000 * sizeof(float);
  const size_t peak = cpu->peak_bytes_in_use() - before;
  EXPECT_GE(peak, stacks * 9 / 10) << "the forward values were saved";
  EXPECT_LE(peak, stacks * 3) << "about the stacks' size, not more";
  const size_t after = cpu->bytes_in_use();
  EXPECT_LE(after, before + stacks / 20) << "the stacks were freed";
}

constexpr const char* kLongLoop = R"RNL(
input u: f32[1000]
let y = loop x = u for i in 0..10000 { x * 0.999 + sin(x) * 0.001 }
let g = grad(sum(y), u)
let v = run g with {u: ones([1000])}
assert(v.shape[0] == 1000 and all(v > 0.0), "a gradient came back")
)RNL";

// A loop variable the body never reads (here `wide`, 4 KB, made again from
// the narrow state at each iteration) gets a zero gradient made like its
// incoming gradient: the backward loop does not pop it, so the stacks do
// not keep 10,000 of them (40 MB) only for their shape.
TEST_F(ControlFlowTest, UnreadLoopVariableIsNotKeptForItsGradient) {
  const size_t peak = PeakOfRun(R"RNL(
input u: f32[10]
let (y, wide) = loop (x, wide) = (u, zeros([1000])) for i in 0..10000 {
    (x * 0.999 + sin(x) * 0.001, tile(x, [100]))
}
let g = grad(sum(y) + sum(wide), u)
let v = run g with {u: ones([10])}
assert(v.shape[0] == 10 and all(v > 0.0), "a gradient came back")
)RNL",
                                0);
  EXPECT_LE(peak, size_t{8} << 20) << "the wide variable was kept";
}

// kLongLoop's stacks without recomputation: 10,000 states of 1,000 floats.
constexpr size_t kLongLoopStacks = size_t{10000} * 1000 * sizeof(float);

// Under a budget of a tenth of those stacks, the gradient recomputes as
// few iterations as fit: the forward loop saves its state every k
// iterations of the first ~90% and keeps the last ~10%'s values, as
// without recomputation, so the stacks hold up to the budget, not less.
TEST_F(ControlFlowTest, RecomputingLoopGradientFitsTheBudget) {
  const size_t budget = kLongLoopStacks / 10;
  const size_t peak = PeakOfRun(kLongLoop, budget);
  EXPECT_LE(peak, budget) << "within the budget";
  EXPECT_GE(peak, budget / 2) << "the budget is used: values are kept";
  EXPECT_GT(KeepingReads(), 0) << "the saved state is read back";
  const std::vector<int> k = Intervals();
  ASSERT_FALSE(k.empty());
  for (int each : k) {
    EXPECT_EQ(each, k[0]) << "one interval for the loop";
  }
  EXPECT_GE(k[0], 30);
}

// A budget of a fortieth leaves room for few values past the split: the
// gradient computes again nearly every iteration, with k near the square
// root of 10,000, and the stacks hold about 2 * 100 states.
TEST_F(ControlFlowTest, SmallBudgetComputesAgainNearlyEveryIteration) {
  const size_t budget = kLongLoopStacks / 40;
  EXPECT_LE(PeakOfRun(kLongLoop, budget), budget) << "within the budget";
  const std::vector<int> k = Intervals();
  ASSERT_FALSE(k.empty());
  EXPECT_GE(k[0], 30);
  EXPECT_LE(k[0], 300);
}

// A plan that computes again only the first iterations gives the gradient
// of one that computes them all again (an explicit interval, which the
// budget leaves alone), bit for bit: for a trip count known when the graph
// is built and for one fed at run time (the plan made by recompute_plan).
// Past the split, the forward loop pushes the values themselves, through
// the switch on whether its iteration recomputes.
TEST_F(ControlFlowTest, SplitPlanGivesTheSameGradient) {
  const std::string head = R"RNL(
input xs: f32[400, 4, 64]
input ys: f32[?, 4, 64]
var w = random_normal([64], stddev = 0.5, seed = 1)
let data = run random_normal([400, 4, 64], seed = 2)
def rnn(s, k) { sum(scan(fn(h, x) => tanh(h * w + x) * 0.9 + sin(h) * 0.1, s, zeros([4, 64]), checkpoint = k) ** 2) }
)RNL";
  // The static trip count (xs), then the one fed at run time (ys).
  for (const char* seq : {"xs", "ys"}) {
    SCOPED_TRACE(seq);
    const std::string runs = absl::StrReplaceAll(R"RNL(
let (planned, every) = run (grad(rnn(SEQ, 0), w), grad(rnn(SEQ, 20), w)) with {SEQ: data}
assert(all(planned == every), "the split plan's gradient")
)RNL",
                                                 {{"SEQ", seq}});
    ASSERT_EQ(Run(head + runs, 300000), 0) << err();
    int pushed_past_split = 0;
    for (const Node* node : interp_->graph().nodes()) {
      pushed_past_split +=
          node->op() == "stack_push" && node->input(2).node->op() == "switch";
    }
    EXPECT_GT(pushed_past_split, 0);
  }
}

// Dropout in the loop: its mask, as large as the state, is drawn again
// when recomputing, from the index of its first draw, which is all the
// forward loop stores of it (8 bytes an iteration: random_reserve's, while
// the draw itself is dropout_at's). Stored, the masks alone would need the
// whole 40 MB, and the budget would refuse the loop.
TEST_F(ControlFlowTest, RecomputationDrawsADropoutMaskAgain) {
  const size_t budget = kLongLoopStacks / 10;
  const size_t peak = PeakOfRun(R"RNL(
input u: f32[1000]
let y = loop x = u for i in 0..10000 { x * 0.999 + dropout(sin(x), 0.5, seed = 3) * 0.001 }
let g = grad(sum(y), u)
let v = run g with {u: ones([1000])}
assert(v.shape[0] == 1000 and all(v > 0.0), "a gradient came back")
)RNL",
                                budget);
  EXPECT_LE(peak, budget) << "within the budget";
  EXPECT_GT(KeepingReads(), 0) << "the saved state is read back";
  EXPECT_EQ(Count("random_reserve"), 1);
  EXPECT_EQ(Count("dropout_at"), 2) << "the forward loop's and its copy's";
}

// A budget the stacks fit: nothing is recomputed.
TEST_F(ControlFlowTest, BudgetTheStacksFitChangesNothing) {
  ASSERT_EQ(Run(kLongLoop, int64_t{1} << 30), 0) << err();
  EXPECT_EQ(KeepingReads(), 0);
  EXPECT_TRUE(Intervals().empty());
}

// A budget that even recomputation cannot meet is an error at the loop.
TEST_F(ControlFlowTest, BudgetTooSmallIsAnErrorAtTheLoop) {
  EXPECT_EQ(Run(kLongLoop, 1000), 1);
  EXPECT_NE(err().find("test.rnl:3:9: error: grad: --memory-budget 1000: the "
                       "gradient of this loop needs stacks of"),
            std::string::npos)
      << err();
}

// nn.lstm and nn.gru hand `checkpoint` to their time loop.
TEST_F(ControlFlowTest, RecurrentLayersTakeACheckpointInterval) {
  ASSERT_EQ(Run(R"RNL(
import nn
input seq: f32[2, ?, 3]
let (o, s) = nn.lstm(seq, 5, seed = 4, checkpoint = 3)
let (r, t) = nn.gru(seq, 5, seed = 6, checkpoint = 4)
let g = grad(sum(o) + sum(r), seq)
let v = run g with {seq: ones([2, 9, 3])}
)RNL"),
            0)
      << err();
  EXPECT_GT(KeepingReads(), 0);
  std::vector<int> k = Intervals();
  std::sort(k.begin(), k.end());
  k.erase(std::unique(k.begin(), k.end()), k.end());
  EXPECT_EQ(k, (std::vector<int>{3, 4}));
}

// swap_memory without a GPU: a "gpu:0" that runs the CPU's kernels in host
// memory, but gives back what a loop's gradient swaps out from a copy of
// its own, counting the copies each way.
std::atomic<int> g_swapped_out{0}, g_swapped_in{0};

Tensor Copy(const Tensor& t) {
  Tensor c(t.dtype(), t.shape());
  if (t.bytes() > 0) std::memcpy(c.raw_data(), t.raw_data(), t.bytes());
  return c;
}

class HostCopy final : public SwappedValue {
 public:
  HostCopy(Device* device, Tensor t) : SwappedValue(device), copy(Copy(t)) {}
  Tensor copy;
};

class SwappingDevice final : public Device {
 public:
  SwappingDevice(std::string name, ThreadPool* pool, ResourceMgr* resources)
      : Device(std::move(name), kDeviceCpu, CpuAllocator::Get(), pool,
               resources) {}
  bool SwapsToHost() const override { return true; }
  absl::StatusOr<std::shared_ptr<SwappedValue>> SwapOut(
      const Tensor& t) override {
    ++g_swapped_out;
    return std::make_shared<HostCopy>(this, t);
  }
  absl::StatusOr<Tensor> SwapIn(const SwappedValue& v) override {
    ++g_swapped_in;
    return Copy(static_cast<const HostCopy&>(v).copy);
  }
};

class SwappingFactory final : public DeviceFactory {
 public:
  int Count(std::string*) override { return 1; }
  absl::StatusOr<std::unique_ptr<Device>> Create(int, const std::string& name,
                                                 ResourceMgr* resources,
                                                 const GpuOptions&) override {
    return std::unique_ptr<Device>(
        std::make_unique<SwappingDevice>(name, &pool_, resources));
  }

 private:
  ThreadPool pool_{2, "swapping-gpu"};
};

class SwapMemoryTest : public ControlFlowTest {
 protected:
  void SetUp() override {
    real_ =
        RegisterDeviceFactory(kDeviceGpu, std::make_unique<SwappingFactory>());
    g_swapped_out = 0;
    g_swapped_in = 0;
  }
  void TearDown() override {
    ControlFlowTest::TearDown();
    RegisterDeviceFactory(kDeviceGpu, std::move(real_));
  }
  // The budget's plan swapped the loop's values, and computed none again;
  // each went out and came back.
  void ExpectPlannedSwap() {
    EXPECT_GT(Swapping("planned"), 0);
    EXPECT_EQ(KeepingReads(), 0) << "nothing is computed again";
    EXPECT_GT(g_swapped_out.load(), 0);
    EXPECT_EQ(g_swapped_in.load(), g_swapped_out.load());
  }
  // The stack_pushes whose `swap` is `how`.
  int Swapping(const std::string& how) {
    int n = 0;
    for (const Node* node : interp_->graph().nodes()) {
      n += node->op() == "stack_push" &&
           node->attr<std::string>("swap").value_or("") == how;
    }
    return n;
  }
  std::unique_ptr<DeviceFactory> real_;
};

// A scan on the "GPU" whose gradient keeps its values in host memory gives
// the gradient it gives without, bit for bit.
TEST_F(SwapMemoryTest, SwappedStacksGiveTheSameGradient) {
  ASSERT_EQ(Run(R"RNL(
input xs: f32[?, 2, 4]
var w = [[0.5, -0.2, 0.1, 0.0], [0.3, 0.4, -0.1, 0.2],
         [0.0, 0.1, 0.2, -0.3], [0.2, 0.0, 0.1, 0.4]]
device "/gpu:0" {
    def loss(swap) {
        sum(scan(fn(h, x) => tanh(h @ w + x), xs, zeros([2, 4]), swap_memory = swap) ** 2)
    }
    let kept = grad(loss(false), w)
    let swapped = grad(loss(true), w)
}
let data = run random_normal([30, 2, 4], seed = 1)
let (a, b) = run (kept, swapped) with {xs: data}
assert(all(a == b), "the same gradient, bit for bit")
assert(any(a != 0.0), "a gradient")
)RNL"),
            0)
      << err();
  EXPECT_GT(Swapping("asked"), 0);
  EXPECT_EQ(Swapping("planned"), 0);
  // Each iteration of the one run swaps each value out once and back once.
  EXPECT_GT(g_swapped_out.load(), 0);
  EXPECT_EQ(g_swapped_out.load() % 30, 0);
  EXPECT_EQ(g_swapped_in.load(), g_swapped_out.load());
}

// Swapping changes no gradient, whatever the body holds: a tuple state, an
// if, random draws and dropout, a nested scan (swapping too).
TEST_F(SwapMemoryTest, SwappedGradientsEqualKeptOnesInEveryKindOfBody) {
  ASSERT_EQ(Run(R"RNL(
input xs: f32[?, 3, 4]
device "/gpu:0" {
    var w = random_normal([4, 4], stddev = 0.5, seed = 1)
    var v = random_normal([4], seed = 3)
}
let data = run random_normal([13, 3, 4], seed = 2)
def same(f, what) {
    device "/gpu:0" {
        let kept = grad(f(false), [w, v, xs])
        let swapped = grad(f(true), [w, v, xs])
    }
    let (a, b) = run (kept, swapped) with {xs: data}
    for i in 0..3 {
        assert(all(a[i] == b[i]), fmt("{}: the same gradient", what))
    }
    assert(sum(abs(a[0])) + sum(abs(a[1])) > 0.0, fmt("{}: a gradient", what))
}
same(fn(s) => sum(scan(fn(c, x) => (c[0] * 0.9 + tanh(x @ w) * cast(c[1], f32), c[1] + 1), xs,
                       (zeros([3, 4]), 1), swap_memory = s)[0]),
     "tuple state")
same(fn(s) => sum(scan(fn(h, x) => if sum(x) > 0.0 { tanh(h @ w) + x } else { h * v - x },
                       xs, zeros([3, 4]), swap_memory = s)),
     "if in the body")
same(fn(s) => sum(scan(fn(h, x) => dropout(tanh(h @ w + x), 0.3, seed = 5) +
                                   (if sum(x) > 0.0 { random_normal([3, 4], seed = 9) } else { h }),
                       xs, zeros([3, 4]), swap_memory = s)),
     "dropout and a draw in an if")
same(fn(s) => sum(scan(fn(h, x) => scan(fn(g, r) => tanh(g * v + r), x, h[0], swap_memory = s)[-1] * h + x,
                       xs, ones([3, 4]), swap_memory = s)),
     "nested scans")
)RNL"),
            0)
      << err();
  EXPECT_GT(g_swapped_out.load(), 0);
  EXPECT_EQ(g_swapped_in.load(), g_swapped_out.load());
}

// Under a budget the stacks do not fit, with a device that swaps: the plan
// weighs swapping against recomputing. This loop's values are small beside
// the time of its body's kernels (at the GPU's nominal rates), so it swaps
// instead of computing again, and the gradient is the one without a budget.
TEST_F(SwapMemoryTest, BudgetPlanSwapsWhenThatCostsLess) {
  const char* source = R"RNL(
input u: f32[1000]
device "/gpu:0" {
    let y = loop x = u for i in 0..200 { x * 0.999 + sin(x) * 0.001 }
    let g = grad(sum(y), u)
}
let v = run g with {u: ones([1000])}
assert(v.shape[0] == 1000 and all(v > 0.0), "a gradient came back")
)RNL";
  ASSERT_EQ(Run(source, 400000), 0) << err();
  ExpectPlannedSwap();
}

// A loop asked onto the CPU is never planned to swap: it recomputes.
TEST_F(SwapMemoryTest, BudgetPlanForALoopOnTheCpuRecomputes) {
  ASSERT_EQ(Run(R"RNL(
input u: f32[1000]
device "/cpu:0" {
    let y = loop x = u for i in 0..200 { x * 0.999 + sin(x) * 0.001 }
    let g = grad(sum(y), u)
}
let v = run g with {u: ones([1000])}
assert(v.shape[0] == 1000 and all(v > 0.0), "a gradient came back")
)RNL",
                400000),
            0)
      << err();
  EXPECT_EQ(Swapping("planned"), 0);
  EXPECT_GT(KeepingReads(), 0) << "the saved state is read back";
  EXPECT_EQ(g_swapped_out.load(), 0);
}

// A while loop's count is known only when it ends, so a budget cannot plan
// its recomputation (an error without a device that swaps); with one, the
// plan swaps, and the gradient is the one without a budget.
TEST_F(SwapMemoryTest, BudgetPlanSwapsAWhileLoop) {
  const char* source = R"RNL(
input u: f32[1000]
device "/gpu:0" {
    let (y, i) = loop (x, i) = (u, 0) while i < 200 { (x * 0.999 + sin(x) * 0.001, i + 1) }
    let g = grad(sum(y), u)
}
let v = run g with {u: ones([1000])}
assert(v.shape[0] == 1000 and all(v > 0.0), "a gradient came back")
)RNL";
  ASSERT_EQ(Run(source, 400000), 0) << err();
  ExpectPlannedSwap();
}

// 1,000 iterations of 1,000 bytes each (the state as large) under a
// budget of 300,000: computing again the first 704 iterations from the
// state saved every 176 (4 states) leaves 296 iterations' values kept, and
// a segment with the iterations in flight beside it is 176 + 4 < 296:
// 4,000 + 296,000 bytes. No split below 704 fits (by hand: the split is
// m k >= 700 + m, with k + 4 <= 300 - m).
TEST(PlanCheckpointsTest, ComputesAgainTheFewestIterationsThatFit) {
  const LoopStackSizes sizes{1000, 1000, 0, 1000};
  const CheckpointPlan plan = PlanCheckpoints(sizes, 300000);
  EXPECT_EQ(plan.k, 176);
  EXPECT_EQ(plan.split, 704);
  EXPECT_EQ(plan.held, 300000);
  EXPECT_EQ(StacksHeld(sizes, plan.k, plan.split), plan.held);
  const CheckpointPlan all = PlanCheckpoints(sizes, 1000000);
  EXPECT_EQ(all.k, 0) << "everything fits";
  EXPECT_EQ(all.held, 1000000);
}

// Against every interval and split, for sizes of every kind: the plan
// fits when anything does, and no plan that fits computes again fewer
// iterations (or, as many, holds less).
TEST(PlanCheckpointsTest, NoPlanThatFitsComputesAgainLess) {
  for (const LoopStackSizes& sizes :
       {LoopStackSizes{300, 50, 0, 200}, LoopStackSizes{300, 500, 8, 100},
        LoopStackSizes{97, 1000, 0, 3000}, LoopStackSizes{64, 100, 10, 10},
        LoopStackSizes{1, 100, 0, 100}}) {
    const int64_t t = sizes.trips;
    for (int64_t budget = 100; budget <= t * 1200; budget = budget * 3 / 2) {
      SCOPED_TRACE(testing::Message()
                   << "trips " << t << " recomputed " << sizes.recomputed
                   << " stored " << sizes.stored << " state " << sizes.state
                   << " budget " << budget);
      const CheckpointPlan plan = PlanCheckpoints(sizes, budget);
      std::optional<CheckpointPlan> best;
      int64_t least = StacksHeld(sizes, 0, 0);
      for (int64_t k = 1; k <= t; ++k) {
        for (int64_t split = k; split <= t; split = std::min(split + k, t)) {
          const int64_t held = StacksHeld(sizes, k, split);
          if (split == t) least = std::min(least, held);
          if (held <= budget && (!best || split < best->split ||
                                 (split == best->split && held < best->held)))
            best = CheckpointPlan{k, split, held};
          if (split == t) break;
        }
      }
      if (StacksHeld(sizes, 0, 0) <= budget) {
        EXPECT_EQ(plan.k, 0);
      } else if (best) {
        ASSERT_LE(plan.held, budget);
        EXPECT_EQ(plan.split, best->split);
        EXPECT_EQ(plan.held, best->held);
        EXPECT_EQ(plan.split % plan.k == 0 || plan.split == t, true);
      } else {
        EXPECT_GT(plan.held, budget);
        EXPECT_EQ(plan.split, t);
        EXPECT_EQ(plan.held, least);
      }
      EXPECT_EQ(StacksHeld(sizes, plan.k, plan.split), plan.held);
    }
  }
}

TEST(SwapCostsTest, SwapsWhenTheCopiesCostLessThanTheForwardIteration) {
  // 1 MB over 20 GB/s: 50 us each way.
  EXPECT_TRUE(SwapCostsLess(1e6, 200e-6, 2e10));  // 50 in < 200 again
  EXPECT_TRUE(SwapCostsLess(1e6, 60e-6, 2e10));   // 50 in < 60 again
  EXPECT_FALSE(SwapCostsLess(1e6, 50e-6, 2e10));  // 50 in, not < 50 again
  EXPECT_FALSE(SwapCostsLess(1e6, 40e-6, 2e10));  // 50 in + 10 out > 40
  EXPECT_FALSE(SwapCostsLess(1e6, 200e-6, 0));    // no link
}
}  // namespace
}  // namespace runnel::interp
