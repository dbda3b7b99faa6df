// The GPU's variable ops, fused optimizer updates and random ops against
// the CPU's (kernels/cuda/state*, optim*, random*): the same graph run in a
// session with the GPU and in one without, compared exactly where the
// kernels compute the same IEEE operations (docs/gpu.md). Skipped without a
// GPU.
#include <gtest/gtest.h>

#include <algorithm>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "base/strings.h"
#include "common_runtime/session.h"
#include "tests/gpu/gpu_compare.h"
#include "tests/util/test_util.h"

namespace runnel {
namespace {

using ::runnel::testing::I32;
using ::runnel::testing::I64;

// Builds a graph of variables and the ops that update them.
class StateGraph {
 public:
  StateGraph() : g_(std::make_shared<Graph>()) {}
  Node* Const(const Tensor& t) {
    return Check(g_->AddConst(t, StrCat("c", count_++)));
  }
  Node* Var(const std::string& name, const Tensor& init) {
    Node* c = Const(init);
    Node* v = Check(g_->AddNode({.name = name,
                                 .op = "variable",
                                 .attrs = {{"dtype", init.dtype()},
                                           {"shape", init.shape()},
                                           {"initializer", c->name() + ":0"}},
                                 .device = device_}));
    vars_.push_back(v);
    return v;
  }
  Node* Op(const std::string& op, std::vector<NodeOut> inputs,
           AttrMap attrs = {}) {
    Node* n = Check(g_->AddNode({.name = StrCat(op, count_++),
                                 .op = op,
                                 .inputs = std::move(inputs),
                                 .attrs = std::move(attrs),
                                 .device = device_}));
    ops_.push_back(n);
    return n;
  }
  void set_device(std::string d) { device_ = std::move(d); }
  std::shared_ptr<Graph> graph() const { return g_; }
  const std::vector<Node*>& vars() const { return vars_; }
  const std::vector<Node*>& ops() const { return ops_; }

 private:
  Node* Check(absl::StatusOr<Node*> n) {
    EXPECT_TRUE(n.ok()) << n.status();
    return n.ok() ? *n : nullptr;
  }
  std::shared_ptr<Graph> g_;
  std::string device_;
  int count_ = 0;
  std::vector<Node*> vars_, ops_;
};

struct StateResult {
  absl::Status status;
  std::vector<Tensor> values;  // each variable's, after the runs
  std::vector<std::string> on_gpu;
};

// Builds with `build` (every node asking for /gpu:0 when `gpu`), runs each
// update op in turn `steps` times, then reads the variables.
StateResult RunState(const std::function<void(StateGraph&)>& build, bool gpu,
                     int steps = 3) {
  StateGraph b;
  if (gpu) b.set_device("/gpu:0");
  build(b);
  Session session(b.graph(), {.num_threads = 2,
                              .gpu_devices = gpu ? 1 : 0,
                              .warn = [](const Node&, const std::string&) {}});
  StateResult r;
  for (int s = 0; s < steps && r.status.ok(); ++s) {
    for (Node* op : b.ops()) {
      r.status = session.Run(Session::Feeds{}, {}, {op}).status();
      if (!r.status.ok()) return r;
    }
  }
  std::vector<NodeOut> fetches;
  for (Node* v : b.vars()) fetches.push_back({v, 0});
  absl::StatusOr<std::vector<Tensor>> out =
      session.Run(Session::Feeds{}, fetches, {});
  if (!out.ok()) {
    r.status = out.status();
    return r;
  }
  r.values = *out;
  absl::StatusOr<std::shared_ptr<const Graph>> placed =
      session.PlacedGraph(Session::Feeds{}, {}, b.ops());
  if (placed.ok()) {
    for (const Node* n : (*placed)->nodes()) {
      if (n->assigned_device().find("/device:gpu:") != std::string::npos) {
        r.on_gpu.push_back(n->name());
      }
    }
  }
  return r;
}

// The GPU's run equals the CPU's exactly (or both fail alike), and the
// updates ran on the GPU.
void CompareState(const std::string& what,
                  const std::function<void(StateGraph&)>& build) {
  SCOPED_TRACE(what);
  StateResult cpu = RunState(build, false), gpu = RunState(build, true);
  ASSERT_EQ(gpu.status.code(), cpu.status.code()) << gpu.status;
  ASSERT_EQ(gpu.status.message(), cpu.status.message());
  if (!cpu.status.ok()) return;
  ASSERT_EQ(gpu.values.size(), cpu.values.size());
  for (size_t i = 0; i < cpu.values.size(); ++i) {
    ExpectClose(gpu.values[i], cpu.values[i], {0, 0}, StrCat(what, " var ", i));
  }
  EXPECT_FALSE(gpu.on_gpu.empty()) << what << ": nothing ran on the GPU";
}

const std::vector<DType> kNumbers = {DType::kF32, DType::kF64, DType::kI32,
                                     DType::kI64};

TEST(GpuStateTest, AssignOps) {
  SKIP_WITHOUT_GPU();
  for (DType d : kNumbers) {
    for (const Shape& s : {Shape{}, Shape{0}, Shape{3, 5}, Shape{1 << 20}}) {
      CompareState(
          StrCat("assign ", DTypeName(d), s.ToString()), [&](StateGraph& b) {
            Node* v = b.Var("v", Random(d, s, 1));
            Node* w = b.Var("w", Random(d, s, 2));
            b.Op("assign_add", {{v, 0}, {b.Const(Random(d, s, 3)), 0}});
            b.Op("assign_sub", {{w, 0}, {b.Const(Random(d, s, 4)), 0}});
            b.Op("assign", {{v, 0}, {w, 0}});
          });
    }
  }
}

TEST(GpuStateTest, Scatters) {
  SKIP_WITHOUT_GPU();
  for (DType d : kNumbers) {
    for (const char* op : {"scatter_add", "scatter_sub", "scatter_update"}) {
      // Repeated rows combine in order; i32 and i64 indices; a table of
      // 200k rows.
      const Tensor idx32 = I32({3, 0, 3, 49, 3, 7}, {2, 3});
      const Tensor idx64 = I64({199999, 5, 199999}, {3});
      CompareState(StrCat(op, " ", DTypeName(d)), [&](StateGraph& b) {
        Node* v = b.Var("v", Random(d, Shape{50, 7}, 5));
        Node* t = b.Var("t", Random(d, Shape{200000, 4}, 6));
        b.Op(op, {{v, 0},
                  {b.Const(idx32), 0},
                  {b.Const(Random(d, Shape{2, 3, 7}, 7)), 0}});
        b.Op(op, {{t, 0},
                  {b.Const(idx64), 0},
                  {b.Const(Random(d, Shape{3, 4}, 8)), 0}});
      });
      // An index out of range fails with the CPU's message, and changes
      // nothing.
      CompareState(StrCat(op, " out of range"), [&](StateGraph& b) {
        Node* v = b.Var("v", Random(d, Shape{4, 2}, 9));
        b.Op(op, {{v, 0},
                  {b.Const(I32({1, 4}, {2})), 0},
                  {b.Const(Random(d, Shape{2, 2}, 10)), 0}});
      });
    }
  }
}

// Adam's coefficients at step 2 (beta1, 1 - beta1, ..., the corrections).
void AddAdamScalars(StateGraph& b, DType d, std::vector<NodeOut>& in) {
  for (double x : {0.9, 1 - 0.9, 0.999, 1 - 0.999, 1e-8, 1 - 0.9 * 0.9,
                   1 - 0.999 * 0.999}) {
    in.push_back({b.Const(Tensor::ScalarOf(d, x)), 0});
  }
}

// The 16-bit floats compute in f32 and round each result, on both
// devices: equal bit for bit too.
const std::vector<DType> kOptimizerDTypes = {DType::kF32, DType::kF64,
                                             DType::kF16, DType::kBF16};

TEST(GpuStateTest, FusedOptimizerUpdates) {
  SKIP_WITHOUT_GPU();
  for (DType d : kOptimizerDTypes) {
    for (const Shape& s : {Shape{}, Shape{0}, Shape{7, 3}, Shape{1 << 20}}) {
      auto scalar = [&](StateGraph& b, double x) {
        return NodeOut{b.Const(Tensor::ScalarOf(d, x)), 0};
      };
      const std::string what = StrCat(DTypeName(d), s.ToString());
      CompareState("sgd " + what, [&](StateGraph& b) {
        Node* v = b.Var("v", Random(d, s, 11));
        b.Op("apply_sgd",
             {{v, 0}, scalar(b, 0.01), {b.Const(Random(d, s, 12)), 0}});
      });
      for (bool nesterov : {false, true}) {
        CompareState("momentum " + what, [&](StateGraph& b) {
          Node* v = b.Var("v", Random(d, s, 13));
          Node* buf = b.Var("v/momentum", Random(d, s, 14));
          b.Op("apply_momentum",
               {{v, 0},
                {buf, 0},
                scalar(b, 0.01),
                {b.Const(Random(d, s, 15)), 0},
                scalar(b, 0.9)},
               {{"nesterov", nesterov}});
        });
      }
      CompareState("adam " + what, [&](StateGraph& b) {
        Node* v = b.Var("v", Random(d, s, 16));
        Node* m = b.Var("v/adam_m", Random(d, s, 17));
        Node* sq = b.Var("v/adam_v", Random(d, s, 18, 0, 1));
        std::vector<NodeOut> in = {{v, 0},
                                   {m, 0},
                                   {sq, 0},
                                   scalar(b, 0.001),
                                   {b.Const(Random(d, s, 19)), 0}};
        AddAdamScalars(b, d, in);
        b.Op("apply_adam", in);
      });
    }
  }
}

// The sparse updates: rows of a table (i32 and i64 indices, in any order),
// and their errors (a repeated row) with the CPU's message, nothing
// changed.
TEST(GpuStateTest, SparseOptimizerUpdates) {
  SKIP_WITHOUT_GPU();
  for (DType d : kOptimizerDTypes) {
    auto scalar = [&](StateGraph& b, double x) {
      return NodeOut{b.Const(Tensor::ScalarOf(d, x)), 0};
    };
    for (const Tensor& idx :
         {I32({7, 0, 3}, {3}), I64({49999, 2}, {2}), I32({1, 1}, {2})}) {
      const int64_t k = idx.num_elements();
      const Shape table{50000, 5};
      const std::string what = StrCat(DTypeName(d), " ", idx.DebugString());
      for (bool nesterov : {false, true}) {
        CompareState("sparse momentum " + what, [&](StateGraph& b) {
          Node* v = b.Var("v", Random(d, table, 31));
          Node* buf = b.Var("v/momentum", Random(d, table, 32));
          b.Op("sparse_apply_momentum",
               {{v, 0},
                {buf, 0},
                scalar(b, 0.01),
                {b.Const(Random(d, Shape{k, 5}, 33)), 0},
                {b.Const(idx), 0},
                scalar(b, 0.9)},
               {{"nesterov", nesterov}});
        });
      }
      CompareState("sparse adam " + what, [&](StateGraph& b) {
        Node* v = b.Var("v", Random(d, table, 34));
        Node* m = b.Var("v/adam_m", Random(d, table, 35));
        Node* sq = b.Var("v/adam_v", Random(d, table, 36, 0, 1));
        std::vector<NodeOut> in = {{v, 0},
                                   {m, 0},
                                   {sq, 0},
                                   scalar(b, 0.001),
                                   {b.Const(Random(d, Shape{k, 5}, 37)), 0},
                                   {b.Const(idx), 0}};
        AddAdamScalars(b, d, in);
        b.Op("sparse_apply_adam", in);
      });
    }
  }
}

// Without any device asked for, a variable and its update go to the GPU.
TEST(GpuStateTest, VariablesAndUpdatesArePlacedOnTheGpu) {
  SKIP_WITHOUT_GPU();
  StateGraph b;
  Node* v = b.Var("v", Random(DType::kF32, Shape{100}, 20));
  b.Op("apply_sgd", {{v, 0},
                     {b.Const(Tensor::ScalarOf(DType::kF32, 0.1)), 0},
                     {b.Const(Random(DType::kF32, Shape{100}, 21)), 0}});
  Session session(b.graph(), {.num_threads = 2, .gpu_devices = 1});
  absl::StatusOr<std::shared_ptr<const Graph>> placed =
      session.PlacedGraph(Session::Feeds{}, {}, b.ops());
  ASSERT_TRUE(placed.ok()) << placed.status();
  for (const Node* n : (*placed)->nodes()) {
    if (n->op() == "variable" || n->op() == "apply_sgd") {
      EXPECT_NE(n->assigned_device().find("/device:gpu:0"), std::string::npos)
          << n->name();
    }
  }
}

// Random ops: the GPU samples the CPU's numbers. Uniform samples and
// dropout are exact; normals go through log and cos, where CUDA's double
// functions may differ from glibc's in the last bits (base/philox.h).
TEST(GpuStateTest, RandomNumbersMatchTheCpu) {
  SKIP_WITHOUT_GPU();
  const Tensor shape = I32({1000, 1000}, {2});
  for (DType d : {DType::kF32, DType::kF64}) {
    for (const char* op : {"random_normal", "truncated_normal"}) {
      const AttrMap attrs = {
          {"dtype", d}, {"seed", int64_t{3}}, {"mean", 1.5}, {"stddev", 2.0}};
      Result cpu = RunOp(op, {shape}, attrs, "", false);
      Result gpu = RunOp(op, {shape}, attrs, "/gpu:0", false);
      ASSERT_FALSE(gpu.on_gpu.empty()) << op;
      ExpectClose(
          gpu.values[0], cpu.values[0],
          d == DType::kF32 ? Tolerance{1.2e-7, 1e-7} : Tolerance{1e-14, 1e-14},
          StrCat(op, " ", DTypeName(d)));
    }
  }
  for (DType d : kNumbers) {
    const AttrMap attrs = {{"dtype", d},
                           {"seed", int64_t{4}},
                           {"minval", d == DType::kF32 || d == DType::kF64
                                          ? AttrValue(-3.0)
                                          : AttrValue(int64_t{-3})},
                           {"maxval", d == DType::kF32 || d == DType::kF64
                                          ? AttrValue(5.0)
                                          : AttrValue(int64_t{5})}};
    Result cpu = RunOp("random_uniform", {shape}, attrs, "", false);
    Result gpu = RunOp("random_uniform", {shape}, attrs, "/gpu:0", false);
    ASSERT_FALSE(gpu.on_gpu.empty());
    ExpectClose(gpu.values[0], cpu.values[0], {0, 0},
                StrCat("random_uniform ", DTypeName(d)));
  }
  for (DType d : {DType::kF32, DType::kF64}) {
    for (bool training : {true, false}) {
      const std::vector<Tensor> in = {
          Random(d, Shape{1 << 20}, 22), Tensor::ScalarOf(d, 0.3),
          Tensor::FromVector(std::vector<bool>{training}, Shape{})};
      const AttrMap attrs = {{"seed", int64_t{5}}};
      Result cpu = RunOp("dropout", in, attrs, "", false);
      Result gpu = RunOp("dropout", in, attrs, "/gpu:0", false);
      ASSERT_FALSE(gpu.on_gpu.empty());
      ExpectClose(gpu.values[0], cpu.values[0], {0, 0},
                  StrCat("dropout ", DTypeName(d)));
    }
    Compare("dropout",
            {Random(d, Shape{0}, 24), Tensor::ScalarOf(d, 0.5),
             Tensor::FromVector(std::vector<bool>{true}, Shape{})},
            {{"seed", int64_t{6}}});
  }
  // The replays of a draw in a loop (NAME_at): `first`, read on the host,
  // places the draws in the stream of node `stream`, as on the CPU.
  const Tensor first = Tensor::ScalarOf(DType::kI64, 12345);
  for (DType d : {DType::kF32, DType::kF64}) {
    const AttrMap attrs = {
        {"dtype", d}, {"seed", int64_t{3}}, {"stream", "drawn"}};
    Result cpu = RunOp("random_normal_at", {shape, first}, attrs, "", false);
    Result gpu =
        RunOp("random_normal_at", {shape, first}, attrs, "/gpu:0", false);
    ASSERT_FALSE(gpu.on_gpu.empty());
    ExpectClose(
        gpu.values[0], cpu.values[0],
        d == DType::kF32 ? Tolerance{1.2e-7, 1e-7} : Tolerance{1e-14, 1e-14},
        StrCat("random_normal_at ", DTypeName(d)));
    const std::vector<Tensor> in = {
        Random(d, Shape{1 << 16}, 25), Tensor::ScalarOf(d, 0.3),
        Tensor::FromVector(std::vector<bool>{true}, Shape{}), first};
    const AttrMap dropout = {{"seed", int64_t{5}}, {"stream", "dropped"}};
    cpu = RunOp("dropout_at", in, dropout, "", false);
    gpu = RunOp("dropout_at", in, dropout, "/gpu:0", false);
    ASSERT_FALSE(gpu.on_gpu.empty());
    ExpectClose(gpu.values[0], cpu.values[0], {0, 0},
                StrCat("dropout_at ", DTypeName(d)));
  }
}

}  // namespace
}  // namespace runnel
