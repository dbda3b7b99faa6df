// In-graph if and loop (interpreter/control_flow.h): the graph they build,
// and what a loop's gradient holds in memory.
#include "interpreter/control_flow.h"

#include <gtest/gtest.h>

#include <cstdio>

#include "framework/allocator.h"
#include "interpreter/interpreter.h"

namespace runnel::interp {
namespace {

class ControlFlowTest : public ::testing::Test {
 protected:
  int Run(const std::string& source) {
    err_ = std::tmpfile();
    sink_ = std::make_unique<lang::DiagnosticSink>(err_);
    Options options;
    options.threads = 2;
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

}  // namespace
}  // namespace runnel::interp
