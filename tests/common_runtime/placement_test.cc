// Devices, the placer, and sessions over several CPU devices
// (docs/devices.md). The partitioner and the rendezvous have files of their
// own (partition_test.cc, rendezvous_test.cc).
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "common_runtime/partition.h"
#include "common_runtime/placer.h"
#include "common_runtime/rendezvous.h"
#include "common_runtime/session.h"
#include "framework/device_set.h"
#include "tests/util/test_ops.h"
#include "tests/util/test_util.h"

namespace runnel {
namespace {

using ::runnel::testing::Add;
using ::runnel::testing::ExpectTensor;
using ::runnel::testing::F32;
using ::runnel::testing::Placeholder;

using ::runnel::testing::kCpu0;
using ::runnel::testing::kCpu1;

Node* Requested(Graph& g, const std::string& name, const std::string& op,
                std::vector<NodeOut> inputs, const std::string& device,
                AttrMap attrs = {}) {
  absl::StatusOr<Node*> n = g.AddNode({.name = name,
                                       .op = op,
                                       .inputs = std::move(inputs),
                                       .attrs = std::move(attrs),
                                       .device = device});
  EXPECT_TRUE(n.ok()) << n.status();
  return n.ok() ? *n : nullptr;
}

// ---- device set and placer

// The CPU devices share one intra-op pool of all the threads.
TEST(DeviceSetTest, SharesThePoolAndMatchesSpecs) {
  ResourceMgr resources;
  DeviceSet set(2, 4, &resources);
  ASSERT_EQ(set.size(), 2);
  EXPECT_EQ(set.device(1)->name(), kCpu1);
  EXPECT_EQ(set.device(0)->intra_op_pool()->num_threads(), 4);
  EXPECT_EQ(set.device(1)->intra_op_pool(), set.device(0)->intra_op_pool());
  EXPECT_EQ(set.Describe(), "/cpu:0, /cpu:1");
  EXPECT_EQ(set.Matching(*DeviceSpec::Parse("/cpu:1")), std::vector<int>{1});
  EXPECT_EQ(set.Matching(*DeviceSpec::Parse("/job:localhost")),
            (std::vector<int>{0, 1}));
  EXPECT_TRUE(set.Matching(*DeviceSpec::Parse("/gpu:0")).empty());
}

TEST(PlacerTest, ConstraintsAndColocation) {
  ResourceMgr resources;
  DeviceSet set(2, 2, &resources);
  Graph g;
  Node* x = Placeholder(g, "x", Shape{2});
  Node* v = Requested(g, "v", "variable", {}, "/cpu:1",
                      {{"dtype", DType::kF32}, {"shape", Shape{2}}});
  Node* slot = Add(g, "v/adam_m", "variable", {},
                   {{"dtype", DType::kF32}, {"shape", Shape{2}}});
  Node* read = Add(g, "read", "read_variable", {{v, 0}});
  Node* up = Add(g, "up", "assign_add", {{v, 0}, {x, 0}});
  Node* y = Requested(g, "y", "neg", {{x, 0}}, "/cpu:0");
  ASSERT_TRUE(PlaceGraph(g, set).ok());
  for (Node* n : {v, slot, read, up}) EXPECT_EQ(n->assigned_device(), kCpu1);
  EXPECT_EQ(y->assigned_device(), kCpu0);
}

// An optimizer's arithmetic runs beside its variable; the gradient (a
// matmul over the batch) stays where its inputs are.
TEST(PlacerTest, UpdateMathGoesWithItsVariable) {
  ResourceMgr resources;
  DeviceSet set(2, 2, &resources);
  Graph g;
  Node* xt = Placeholder(g, "xt", Shape{4, 64});
  Node* dy = Placeholder(g, "dy", Shape{64, 1});
  Node* w = Requested(g, "w", "variable", {}, "/cpu:1",
                      {{"dtype", DType::kF32}, {"shape", Shape{4, 1}}});
  Node* m = Add(g, "w/m", "variable", {},
                {{"dtype", DType::kF32}, {"shape", Shape{4, 1}}});
  Node* gw = Add(g, "gw", "matmul", {{xt, 0}, {dy, 0}});
  Node* read_m = Add(g, "read_m", "read_variable", {{m, 0}});
  Node* mix = Add(g, "mix", "add", {{read_m, 0}, {gw, 0}});
  Node* set_m = Add(g, "set_m", "assign", {{m, 0}, {mix, 0}});
  Node* lr = *g.AddConst(F32({0.1f}, {}), "lr");
  Node* step = Add(g, "step", "mul", {{set_m, 0}, {lr, 0}});
  Node* up = Add(g, "up", "assign_sub", {{w, 0}, {step, 0}});
  ASSERT_TRUE(PlaceGraph(g, set).ok());
  for (Node* n : {w, m, read_m, mix, set_m, step, up}) {
    EXPECT_EQ(n->assigned_device(), kCpu1) << n->name();
  }
  EXPECT_EQ(gw->assigned_device(), kCpu0);
  EXPECT_EQ(xt->assigned_device(), kCpu0);
}

// A lookup in a table goes with the table, so only its rows cross; a
// gather placed explicitly, or along another axis, stays where it was put.
// The ids, a feed, go with their first consumer, the lookup.
TEST(PlacerTest, LookupGoesWithItsTable) {
  ResourceMgr resources;
  DeviceSet set(2, 2, &resources);
  Graph g;
  Node* ids = Add(g, "ids", "placeholder", {},
                  {{"dtype", DType::kI32}, {"shape", Shape{8}}});
  Node* table = Requested(g, "table", "variable", {}, "/cpu:1",
                          {{"dtype", DType::kF32}, {"shape", Shape{1000, 4}}});
  Node* read = Add(g, "read", "read_variable", {{table, 0}});
  Node* rows = Add(g, "rows", "gather", {{read, 0}, {ids, 0}});
  Node* there =
      Requested(g, "there", "gather", {{read, 0}, {ids, 0}}, "/cpu:0");
  Node* cols =
      Add(g, "cols", "gather", {{read, 0}, {ids, 0}}, {{"axis", int64_t{1}}});
  Node* loss = Add(g, "loss", "sum", {{rows, 0}});
  ASSERT_TRUE(PlaceGraph(g, set).ok());
  EXPECT_EQ(rows->assigned_device(), kCpu1);
  EXPECT_EQ(read->assigned_device(), kCpu1);
  EXPECT_EQ(there->assigned_device(), kCpu0);
  EXPECT_EQ(ids->assigned_device(), kCpu1);
  (void)cols;
  (void)loss;
}

TEST(PlacerTest, ConflictsAndMissingDevices) {
  ResourceMgr resources;
  DeviceSet set(2, 2, &resources);
  Graph g;
  Node* x = Placeholder(g, "x", Shape{2});
  Node* v = Requested(g, "v", "variable", {}, "/cpu:0",
                      {{"dtype", DType::kF32}, {"shape", Shape{2}}});
  Requested(g, "up", "assign_add", {{v, 0}, {x, 0}}, "/cpu:1");
  absl::Status s = PlaceGraph(g, set);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("must share a device with 'v'"), std::string::npos)
      << s;

  Graph h;
  Node* z = Placeholder(h, "z", Shape{2});
  Node* far = Requested(h, "far", "neg", {{z, 0}}, "/gpu:3");
  s = PlaceGraph(h, set);
  EXPECT_NE(s.message().find("no device matches /device:gpu:3"),
            std::string::npos)
      << s;
  std::vector<std::string> warnings;
  PlacerOptions soft{.soft_placement = true,
                     .warn = [&](const Node& n, const std::string& m) {
                       warnings.push_back(n.name() + ": " + m);
                     }};
  ASSERT_TRUE(PlaceGraph(h, set, soft).ok());
  EXPECT_EQ(far->assigned_device(), kCpu0);
  ASSERT_EQ(warnings.size(), 1u);
  EXPECT_NE(warnings[0].find("far: no device matches"), std::string::npos);
}

// Round rates for placement tests: the answers below are worked out by
// hand from them (and the placer's rule that a node leaves its input's
// device only to finish 10% and 20 us earlier).
CostRates Rates(double matmul = 1e10, double transfer = 1e10,
                double transcendental = 1e9) {
  CostRates r;
  r.matmul_flops_per_s = matmul;
  r.elementwise_bytes_per_s = 1e10;
  r.transcendental_bytes_per_s = transcendental;
  r.reduction_bytes_per_s = 1e10;
  r.node_overhead_s = 1e-6;
  r.transfer_latency_s = 1e-5;
  r.transfer_bytes_per_s = transfer;
  return r;
}

PlacerOptions With(const CostRates& rates) {
  return {.rates = [rates](const Device&) { return rates; }};
}

// Two independent heavy products go to different devices; a chain stays
// on one; with one device everything is on it, and nothing is measured.
TEST(PlacerTest, CostModelSpreadsIndependentWorkOnly) {
  ResourceMgr resources;
  DeviceSet two(2, 2, &resources);
  Graph g;
  Node* a = Placeholder(g, "a", Shape{512, 512});
  Node* b = Placeholder(g, "b", Shape{512, 512});
  Node* p = Add(g, "p", "matmul", {{a, 0}, {a, 0}});
  Node* q = Add(g, "q", "matmul", {{b, 0}, {b, 0}});
  Node* chain = Add(g, "chain", "matmul", {{p, 0}, {p, 0}});
  ASSERT_TRUE(PlaceGraph(g, two, With(Rates())).ok());
  EXPECT_NE(p->assigned_device(), q->assigned_device());
  EXPECT_EQ(chain->assigned_device(), p->assigned_device());

  DeviceSet one(1, 2, &resources);
  bool asked = false;
  ASSERT_TRUE(PlaceGraph(g, one,
                         {.rates =
                              [&](const Device&) {
                                asked = true;
                                return Rates();
                              }})
                  .ok());
  for (Node* n : g.nodes()) EXPECT_EQ(n->assigned_device(), kCpu0);
  EXPECT_FALSE(asked);
  EXPECT_DOUBLE_EQ(EstimatedFlops(*p, 32), 2.0 * 512 * 512 * 512);
}

// What takes nothing from another group (a variable, a constant, a feed)
// goes where its first consumer goes, not to the device idle at its turn
// in the list: the bias of a layer whose product keeps /cpu:0 busy stays
// with the product's bias_add (which the old list scheduling pulled over
// to it); a second tower's weight goes with the product that moved to
// /cpu:1.
TEST(PlacerTest, SourcesGoWithTheirFirstConsumer) {
  ResourceMgr resources;
  DeviceSet two(2, 2, &resources);
  Graph g;
  Node* x = Placeholder(g, "x", Shape{512, 512});
  auto variable = [&](const std::string& name, Shape shape) {
    return Add(g, name, "variable", {},
               {{"dtype", DType::kF32}, {"shape", shape}});
  };
  Node* w = variable("w", Shape{512, 512});
  Node* p = Add(g, "p", "matmul", {{x, 0}, {w, 0}});
  Node* b = variable("b", Shape{512});
  Node* y = Add(g, "y", "bias_add", {{p, 0}, {b, 0}});
  Node* w2 = variable("w2", Shape{512, 512});
  Node* q = Add(g, "q", "matmul", {{x, 0}, {w2, 0}});
  ASSERT_TRUE(PlaceGraph(g, two, With(Rates())).ok());
  EXPECT_EQ(p->assigned_device(), kCpu0);
  EXPECT_EQ(y->assigned_device(), kCpu0);
  EXPECT_EQ(b->assigned_device(), kCpu0) << "the bias crossed to /cpu:1";
  EXPECT_EQ(w->assigned_device(), kCpu0);
  EXPECT_EQ(q->assigned_device(), kCpu1);
  EXPECT_EQ(w2->assigned_device(), kCpu1);
}

// A device left with a small share of the work (here a tanh of four
// floats, sent to /cpu:1 because /cpu:0 was busy with the product at its
// turn) gives it back to the first: a graph that fits one device runs as
// one piece, with no partition and no transfers for crumbs.
TEST(PlacerTest, CrumbsGoBackToTheFirstDevice) {
  ResourceMgr resources;
  DeviceSet two(2, 2, &resources);
  Graph g;
  Node* x = Placeholder(g, "x", Shape{512, 512});
  Node* p = Add(g, "p", "matmul", {{x, 0}, {x, 0}});
  Node* s = Placeholder(g, "s", Shape{4});
  Node* t = Add(g, "t", "tanh", {{s, 0}});
  ASSERT_TRUE(PlaceGraph(g, two, With(Rates())).ok());
  EXPECT_EQ(p->assigned_device(), kCpu0);
  EXPECT_EQ(t->assigned_device(), kCpu0);
  EXPECT_EQ(s->assigned_device(), kCpu0);
}

// Each class of op costs its own measure over its own rate.
TEST(PlacerTest, EstimatedSecondsByKernelClass) {
  Graph g;
  Node* a = Placeholder(g, "a", Shape{2, 3});
  Node* b = Placeholder(g, "b", Shape{3, 4});
  Node* x = Placeholder(g, "x", Shape{1000});
  Node* mm = Add(g, "mm", "matmul", {{a, 0}, {b, 0}});
  Node* add = Add(g, "add", "add", {{x, 0}, {x, 0}});
  Node* tanh = Add(g, "tanh", "tanh", {{x, 0}});
  Node* sum = Add(g, "sum", "sum", {{x, 0}});
  Node* shaped = Add(g, "shaped", "identity", {{x, 0}});
  CostRates r = Rates(4.8e7, 1e10, 8e6);
  r.elementwise_bytes_per_s = 1.2e7;
  r.reduction_bytes_per_s = 4e6;
  EXPECT_DOUBLE_EQ(EstimatedSeconds(*mm, r, 32), 1e-6 + 48 / 4.8e7);
  EXPECT_DOUBLE_EQ(EstimatedSeconds(*add, r, 32), 1e-6 + 12000 / 1.2e7);
  EXPECT_DOUBLE_EQ(EstimatedSeconds(*tanh, r, 32), 1e-6 + 8000 / 8e6);
  EXPECT_DOUBLE_EQ(EstimatedSeconds(*sum, r, 32), 1e-6 + 4000 / 4e6);
  EXPECT_DOUBLE_EQ(EstimatedSeconds(*shaped, r, 32), 1e-6);

  // A convolution and its gradients: 18 products (3x3 window, 2 channels)
  // for each of the 80 outputs (4x4, 5 filters), twice for the adds.
  Node* image = Placeholder(g, "image", Shape{1, 4, 4, 2});
  Node* filters = Placeholder(g, "filters", Shape{3, 3, 2, 5});
  Node* conv = Add(g, "conv", "conv2d", {{image, 0}, {filters, 0}});
  Node* dx = Add(g, "dx", "conv2d_backprop_input",
                 {{image, 0}, {filters, 0}, {conv, 0}});
  Node* dw = Add(g, "dw", "conv2d_backprop_filter",
                 {{image, 0}, {filters, 0}, {conv, 0}});
  for (Node* n : {conv, dx, dw}) {
    EXPECT_DOUBLE_EQ(EstimatedFlops(*n, 32), 2.0 * 80 * 18) << n->op();
  }
}

// A whole LSTM sequence: a product of h[t-1] [batch, units] and w_h
// [units, 4 units] for each step; its gradient has two. The lengths, one
// more input, change nothing.
TEST(PlacerTest, EstimatedFlopsOfAnLstmSequence) {
  Graph g;
  Node* z = Placeholder(g, "z", Shape{5, 2, 12});
  Node* state = Placeholder(g, "state", Shape{2, 3});
  Node* w = Placeholder(g, "w", Shape{3, 12});
  const NodeOut lengths =
      testing::Const(g, Tensor::FromVector<int32_t>({1, 5}, Shape{2}));
  const double products = 2.0 * (5 * 2 * 12) * 3;
  for (bool with_lengths : {false, true}) {
    const std::string suffix = with_lengths ? "_lengths" : "";
    std::vector<NodeOut> in = {{z, 0}, {state, 0}, {state, 0}, {w, 0}};
    if (with_lengths) in.push_back(lengths);
    Node* fwd = Add(g, "seq" + suffix, "lstm_sequence", in);
    std::vector<NodeOut> grad_in = {{fwd, 4},   {fwd, 3},   {fwd, 0},
                                    {state, 0}, {state, 0}, {w, 0},
                                    {fwd, 0},   {fwd, 1},   {fwd, 2}};
    if (with_lengths) grad_in.push_back(lengths);
    Node* grad = Add(g, "grad" + suffix, "lstm_sequence_grad", grad_in);
    EXPECT_DOUBLE_EQ(EstimatedFlops(*fwd, 32), products) << suffix;
    EXPECT_DOUBLE_EQ(EstimatedFlops(*grad, 32), 2 * products) << suffix;
  }
}

// p and q both read x (1 MiB) on /cpu:0; each takes 26.8 ms at 10
// Gflop/s. With transfers at 10 GB/s, q finishes on /cpu:1 at 26.9 ms
// instead of 53.7 ms and moves; at 10 MB/s x takes 105 ms to cross and q
// stays behind p.
TEST(PlacerTest, TransferRateDecidesWhetherWorkSpreads) {
  ResourceMgr resources;
  DeviceSet two(2, 2, &resources);
  Graph g;
  Node* x = Placeholder(g, "x", Shape{512, 512});
  Node* p = Add(g, "p", "matmul", {{x, 0}, {x, 0}});
  Node* q = Add(g, "q", "matmul", {{x, 0}, {x, 0}});
  ASSERT_TRUE(PlaceGraph(g, two, With(Rates(1e10, 1e10))).ok());
  EXPECT_EQ(p->assigned_device(), kCpu0);
  EXPECT_EQ(q->assigned_device(), kCpu1);
  ASSERT_TRUE(PlaceGraph(g, two, With(Rates(1e10, 1e7))).ok());
  EXPECT_EQ(p->assigned_device(), kCpu0);
  EXPECT_EQ(q->assigned_device(), kCpu0);
}

// Two tanh over 64k floats: at 1 GB/s each takes 0.52 ms and the second
// gains 0.5 ms on /cpu:1 (the input crosses in 36 us); at 100 GB/s each
// takes 6 us, less than the 20 us a move must gain.
TEST(PlacerTest, ElementwiseRateDecidesWhetherWorkSpreads) {
  ResourceMgr resources;
  DeviceSet two(2, 2, &resources);
  Graph g;
  Node* x = Placeholder(g, "x", Shape{65536});
  Node* s = Add(g, "s", "tanh", {{x, 0}});
  Node* t = Add(g, "t", "tanh", {{x, 0}});
  ASSERT_TRUE(PlaceGraph(g, two, With(Rates(1e10, 1e10, 1e9))).ok());
  EXPECT_NE(s->assigned_device(), t->assigned_device());
  ASSERT_TRUE(PlaceGraph(g, two, With(Rates(1e10, 1e10, 1e11))).ok());
  EXPECT_EQ(s->assigned_device(), kCpu0);
  EXPECT_EQ(t->assigned_device(), kCpu0);
}

// Devices may differ: a product moves to a device ten times faster at
// matmul (2.7 ms there against 26.8 ms), its input, a feed, with it, and
// stays when both are equal.
TEST(PlacerTest, WorkGoesToTheFasterDevice) {
  ResourceMgr resources;
  DeviceSet two(2, 2, &resources);
  Graph g;
  Node* x = Placeholder(g, "x", Shape{512, 512});
  Node* p = Add(g, "p", "matmul", {{x, 0}, {x, 0}});
  PlacerOptions fast_second{.rates = [](const Device& d) {
    return Rates(d.name() == kCpu1 ? 1e11 : 1e10);
  }};
  ASSERT_TRUE(PlaceGraph(g, two, fast_second).ok());
  EXPECT_EQ(x->assigned_device(), kCpu1);
  EXPECT_EQ(p->assigned_device(), kCpu1);
  ASSERT_TRUE(PlaceGraph(g, two, With(Rates())).ok());
  EXPECT_EQ(x->assigned_device(), kCpu0);
  EXPECT_EQ(p->assigned_device(), kCpu0);
}

// ---- sessions over two devices

TEST(MultiDeviceSessionTest, ResultsMatchOneDeviceAndErrorsAbortAll) {
  auto build = [](Graph& g) {
    Node* x = Placeholder(g, "x", Shape{2});
    Node* a = Requested(g, "a", "exp", {{x, 0}}, "/cpu:0");
    Node* b = Requested(g, "b", "mul", {{a, 0}, {x, 0}}, "/cpu:1");
    Requested(g, "c", "check_numerics", {{b, 0}}, "/cpu:0",
              {{"message", std::string("c")}});
  };
  auto run = [&](int devices, const Tensor& x) {
    auto g = std::make_shared<Graph>();
    build(*g);
    Session s(g, {.num_threads = 2, .cpu_devices = devices});
    return s.Run({{"x", x}}, {"c"}, {});
  };
  const Tensor x = F32({1, 2}, {2});
  absl::StatusOr<std::vector<Tensor>> one = run(1, x);
  absl::StatusOr<std::vector<Tensor>> two = run(2, x);
  ASSERT_TRUE(one.ok()) << one.status();
  ASSERT_TRUE(two.ok()) << two.status();
  EXPECT_EQ((*one)[0].ToDoubles(), (*two)[0].ToDoubles());
  absl::StatusOr<std::vector<Tensor>> bad = run(2, F32({1000, 1}, {2}));
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("Inf"), std::string::npos)
      << bad.status();
}

}  // namespace
}  // namespace runnel
