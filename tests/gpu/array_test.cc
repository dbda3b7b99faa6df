// The GPU's cast, shape, slicing and creation kernels (kernels/cuda/
// cast*.{cu,cc}, array*.{cu,cc}) against the CPU's on the same inputs,
// their gradients too, and a loop and a cond run on the GPU (control flow
// with its predicates in host memory). ctest label `gpu`; skipped without
// a GPU (docs/gpu.md).
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "base/strings.h"
#include "common_runtime/control_flow.h"
#include "common_runtime/gradients.h"
#include "common_runtime/session.h"
#include "tests/gpu/gpu_compare.h"
#include "tests/util/test_util.h"

namespace runnel {
namespace {

using ::runnel::testing::F32;

const std::vector<DType> kEveryDType(std::begin(kAllDTypes),
                                     std::end(kAllDTypes));

Tensor I64s(const std::vector<int64_t>& v, Shape s) {
  Tensor t(DType::kI64, std::move(s));
  for (size_t i = 0; i < v.size(); ++i) t.data<int64_t>()[i] = v[i];
  return t;
}

bool IsFloat(DType d) { return d == DType::kF32 || d == DType::kF64; }

// The same values, bit for bit (NaNs equal).
void ExpectSame(const Tensor& gpu, const Tensor& cpu, const std::string& what) {
  ExpectClose(gpu, cpu, Tolerance{0, 0}, what);
}

// Every pair of dtypes, on values that exercise rounding: f16 ties, its
// subnormals and overflow, the saturation of floats to integers, NaN and
// the infinities; exact against the CPU.
TEST(GpuArrayTest, CastEveryPairRoundsAsTheCpu) {
  SKIP_WITHOUT_GPU();
  const float nan = NAN, inf = INFINITY;
  const Tensor special = F32({nan,
                              -nan,
                              inf,
                              -inf,
                              0.0f,
                              -0.0f,
                              1.0f + 1.0f / 2048,
                              1.0f + 3.0f / 2048,
                              65504.0f,
                              65520.0f,
                              1e5f,
                              6e-8f,
                              3e-8f,
                              1e-6f,
                              -1e-6f,
                              2.5f,
                              -2.5f,
                              127.9f,
                              128.0f,
                              -129.0f,
                              255.5f,
                              256.0f,
                              3e9f,
                              -3e9f,
                              1e20f,
                              -1e20f,
                              0.1f,
                              1.00390625f,
                              1.005859375f},
                             Shape{29});
  for (DType from : kEveryDType) {
    for (Tensor x : {Random(from, Shape{1000}, 21, -300, 300),
                     Random(from, Shape{(1 << 20) + 5}, 22)}) {
      for (DType to : kEveryDType) {
        const AttrMap attrs = {{"dtype", to}};
        const std::string what =
            StrCat("cast ", DTypeName(from), " to ", DTypeName(to));
        Result cpu = RunOp("cast", {x}, attrs, "", false);
        Result gpu = RunOp("cast", {x}, attrs, "/gpu:0", false);
        ASSERT_EQ(cpu.values.size(), 1u) << what;
        ASSERT_EQ(gpu.values.size(), 1u) << what;
        ExpectSame(gpu.values[0], cpu.values[0], what);
      }
    }
  }
  for (DType to : kEveryDType) {
    const AttrMap attrs = {{"dtype", to}};
    Result cpu = RunOp("cast", {special}, attrs, "", false);
    Result gpu = RunOp("cast", {special}, attrs, "/gpu:0", false);
    ASSERT_EQ(gpu.values.size(), 1u);
    ExpectSame(gpu.values[0], cpu.values[0],
               StrCat("cast of special f32 values to ", DTypeName(to)));
    // And back: the 16-bit patterns widen exactly.
    Result back = RunOp("cast", {cpu.values[0]}, {{"dtype", DType::kF32}},
                        "/gpu:0", false);
    Result back_cpu =
        RunOp("cast", {cpu.values[0]}, {{"dtype", DType::kF32}}, "", false);
    ASSERT_EQ(back.values.size(), 1u);
    ExpectSame(back.values[0], back_cpu.values[0],
               StrCat("cast back from ", DTypeName(to)));
  }
  Compare("cast", {Random(DType::kF32, Shape{3, 4}, 23)},
          {{"dtype", DType::kF64}}, /*grad=*/true);
}

TEST(GpuArrayTest, ViewsShareTheBuffer) {
  SKIP_WITHOUT_GPU();
  for (DType d : kEveryDType) {
    const Tensor x = Random(d, Shape{2, 3, 4}, 31);
    Compare("reshape", {x, I64s({4, -1}, Shape{2})}, {}, IsFloat(d));
    Compare("expand_dims", {x}, {{"axis", int64_t{1}}}, IsFloat(d));
    Compare("squeeze", {Random(d, Shape{2, 1, 4}, 32)}, {}, IsFloat(d));
  }
}

TEST(GpuArrayTest, Transpose) {
  SKIP_WITHOUT_GPU();
  for (DType d : kEveryDType) {
    Compare("transpose", {Random(d, Shape{3, 5}, 41)}, {}, IsFloat(d));
    Compare("transpose", {Random(d, Shape{2, 3, 4, 5}, 42)},
            {{"perm", std::vector<int64_t>{2, 0, 3, 1}}}, IsFloat(d));
  }
  Compare("transpose", {Random(DType::kF32, Shape{1024, 1025}, 43)});
  Compare("transpose", {Random(DType::kF32, Shape{0, 4}, 44)});
}

TEST(GpuArrayTest, JoinAndSplit) {
  SKIP_WITHOUT_GPU();
  for (DType d : kEveryDType) {
    const bool g = IsFloat(d);
    for (int64_t axis : {0, 1, -1}) {
      Compare("concat",
              {Random(d, Shape{2, 3, 4}, 51), Random(d, Shape{2, 3, 4}, 52),
               Random(d, Shape{2, 3, 4}, 53)},
              {{"axis", axis}}, g);
      Compare("stack", {Random(d, Shape{3, 4}, 54), Random(d, Shape{3, 4}, 55)},
              {{"axis", axis}}, g);
      Compare("split", {Random(d, Shape{6, 6, 6}, 56)},
              {{"axis", axis}, {"num", int64_t{3}}}, g);
      Compare("unstack", {Random(d, Shape{2, 3, 4}, 57)}, {{"axis", axis}}, g);
    }
  }
  // Uneven parts, an empty one, and a big one.
  Compare("concat",
          {Random(DType::kF32, Shape{4, 1}, 58),
           Random(DType::kF32, Shape{4, 0}, 59),
           Random(DType::kF32, Shape{4, 300000}, 60)},
          {{"axis", int64_t{1}}});
}

TEST(GpuArrayTest, TileAndBroadcast) {
  SKIP_WITHOUT_GPU();
  for (DType d : kEveryDType) {
    const bool g = IsFloat(d);
    Compare("tile", {Random(d, Shape{2, 3}, 61), I64s({3, 2}, Shape{2})}, {},
            g);
    Compare("broadcast_to",
            {Random(d, Shape{3, 1}, 62), I64s({2, 3, 4}, Shape{3})}, {}, g);
    Compare("broadcast_to", {Random(d, Shape{4}, 63), I64s({4}, Shape{1})}, {},
            g);
  }
  Compare("tile",
          {Random(DType::kF32, Shape{1000, 1}, 64), I64s({1, 1000}, Shape{2})});
}

TEST(GpuArrayTest, Slices) {
  SKIP_WITHOUT_GPU();
  for (DType d : kEveryDType) {
    const bool g = IsFloat(d);
    Compare("slice",
            {Random(d, Shape{5, 6, 7}, 71), I64s({1, 0, 2}, Shape{3}),
             I64s({3, -1, 4}, Shape{3})},
            {}, g);
    Compare("strided_slice", {Random(d, Shape{6, 7}, 72)},
            {{"begin", std::vector<int64_t>{5, 1}},
             {"end", std::vector<int64_t>{0, 7}},
             {"strides", std::vector<int64_t>{-2, 3}}},
            g);
    Compare("strided_slice", {Random(d, Shape{6, 7}, 73)},
            {{"begin", std::vector<int64_t>{2, 0}},
             {"end", std::vector<int64_t>{3, 0}},
             {"shrink_axis_mask", int64_t{1}},
             {"end_mask", int64_t{2}}},
            g);
    Compare("pad",
            {Random(d, Shape{3, 4}, 74), I64s({1, 2, 0, 3}, Shape{2, 2}),
             Random(d, Shape{}, 75)},
            {}, g);
    Compare("dynamic_index", {Random(d, Shape{5, 3}, 76), I64s({-2}, Shape{})},
            {}, g);
  }
}

Tensor I32s(const std::vector<int32_t>& v, Shape s) {
  return Tensor::FromVector(v, std::move(s));
}

// gather on every dtype and axis; its gradient (gather_grad: repeated
// indices summed in index order, without atomics) must match the CPU's
// exactly.
TEST(GpuArrayTest, GatherAndItsGradient) {
  SKIP_WITHOUT_GPU();
  const Tensor idx = I32s({3, 0, 3, 1, 3, 4, 0}, Shape{7});
  for (DType d : kEveryDType) {
    for (int64_t axis : {0, 1, -1}) {
      Compare("gather", {Random(d, Shape{5, 5, 6}, 101), idx}, {{"axis", axis}},
              IsFloat(d));
    }
  }
  Compare("gather", {Random(DType::kF32, Shape{10000, 64}, 102),
                     I64s({9999, 0, 5000, 5000}, Shape{2, 2})});
  for (DType d : {DType::kF32, DType::kF64, DType::kI32, DType::kI64}) {
    const Tensor params = Random(d, Shape{5, 300}, 103);
    // 2000 indices in [0, 5): many repeats of each row.
    Tensor rows = Random(DType::kI32, Shape{2000}, 104);
    for (int64_t i = 0; i < rows.num_elements(); ++i) {
      rows.data<int32_t>()[i] = ((rows.data<int32_t>()[i] % 5) + 5) % 5;
    }
    const AttrMap attrs = {{"axis", int64_t{0}}};
    const Tensor dy = Random(d, Shape{2000, 300}, 105);
    Result cpu = RunOp("gather_grad", {params, rows, dy}, attrs, "", false);
    Result gpu =
        RunOp("gather_grad", {params, rows, dy}, attrs, "/gpu:0", false);
    ASSERT_EQ(gpu.values.size(), 1u);
    ExpectSame(gpu.values[0], cpu.values[0],
               StrCat("gather_grad ", DTypeName(d)));
  }
}

// The error of `op`(x, index) (an index out of range), on the CPU and on
// the GPU.
std::vector<std::string> ErrorsOnBothDevices(const std::string& op,
                                             const Tensor& x,
                                             const Tensor& index) {
  std::vector<std::string> messages;
  for (const std::string device : {"", "/gpu:0"}) {
    auto g = std::make_shared<Graph>();
    absl::StatusOr<Node*> xn = g->AddConst(x, "x");
    absl::StatusOr<Node*> in = g->AddConst(index, "i");
    EXPECT_TRUE(xn.ok() && in.ok());
    absl::StatusOr<Node*> y = g->AddNode({.name = "y",
                                          .op = op,
                                          .inputs = {{*xn, 0}, {*in, 0}},
                                          .device = device});
    EXPECT_TRUE(y.ok()) << y.status();
    Session s(g, {.num_threads = 2, .gpu_devices = device.empty() ? 0 : 1});
    absl::StatusOr<std::vector<Tensor>> out =
        s.Run(Session::Feeds{}, {NodeOut{*y, 0}}, {});
    EXPECT_FALSE(out.ok());
    messages.push_back(std::string(out.status().message()));
  }
  return messages;
}

// Indices out of range are checked on the host (they are in host memory)
// and fail as on the CPU, before anything runs.
TEST(GpuArrayTest, IndicesOutOfRangeFailAsOnTheCpu) {
  SKIP_WITHOUT_GPU();
  std::vector<std::string> m = ErrorsOnBothDevices(
      "dynamic_index", F32({1, 2, 3}, Shape{3}), I64s({3}, Shape{}));
  EXPECT_EQ(m[1], m[0]);
  EXPECT_NE(m[0].find("out of range"), std::string::npos) << m[0];
  m = ErrorsOnBothDevices("gather", F32({1, 2, 3}, Shape{3}),
                          I32s({0, 5}, Shape{2}));
  EXPECT_EQ(m[1], m[0]);
  EXPECT_NE(m[0].find("index 5 (indices[1]) is out of range [0, 3)"),
            std::string::npos)
      << m[0];
}

TEST(GpuArrayTest, Creation) {
  SKIP_WITHOUT_GPU();
  for (DType d : kEveryDType) {
    Compare("fill", {I64s({3, 1000}, Shape{2}), Random(d, Shape{}, 81)});
    Compare("zeros_like", {Random(d, Shape{7, 9}, 82)});
    Compare("ones_like", {Random(d, Shape{7, 9}, 83)});
  }
  Compare("zeros_like", {Random(DType::kF32, Shape{0}, 84)});
}

// Runs `build`'s graph (its nodes asking for `device`) and returns the
// fetched values.
std::vector<Tensor> RunGraph(
    const std::string& device,
    const std::function<std::vector<NodeOut>(Graph&, const std::string&)>&
        build) {
  auto g = std::make_shared<Graph>();
  std::vector<NodeOut> fetches = build(*g, device);
  Session s(g, {.num_threads = 2, .gpu_devices = device.empty() ? 0 : 1});
  absl::StatusOr<std::vector<Tensor>> out =
      s.Run(Session::Feeds{}, fetches, {});
  EXPECT_TRUE(out.ok()) << out.status();
  if (out.ok() && !device.empty()) {
    absl::StatusOr<std::shared_ptr<const Graph>> placed =
        s.PlacedGraph(Session::Feeds{}, fetches, {});
    EXPECT_TRUE(placed.ok()) << placed.status();
    int switch_on_gpu = 0;
    for (const Node* n : (*placed)->nodes()) {
      const bool on_gpu =
          n->assigned_device().find("/device:gpu:") != std::string::npos;
      switch_on_gpu += on_gpu && n->op() == "switch";
    }
    EXPECT_GT(switch_on_gpu, 0) << "the control flow did not run on the GPU";
  }
  return out.ok() ? *out : std::vector<Tensor>{};
}

NodeOut Op(Graph& g, const std::string& device, const std::string& op,
           std::vector<NodeOut> inputs, AttrMap attrs = {}) {
  absl::StatusOr<Node*> n = g.AddNode({.name = g.UniqueName(op),
                                       .op = op,
                                       .inputs = std::move(inputs),
                                       .attrs = std::move(attrs),
                                       .device = device});
  EXPECT_TRUE(n.ok()) << n.status();
  return n.ok() ? NodeOut{*n, 0} : NodeOut{};
}

// `while i < 10 { x = x * 0.5 + 1 }` on x of 1000 f32 and the gradient
// of sum(x) with respect to its start (through the loop's stacks).
std::vector<NodeOut> HalvingLoop(Graph& g, const std::string& device) {
  NodeOut x0 = Op(g, device, "const", {},
                  {{"value", Random(DType::kF32, Shape{1000}, 91)}});
  WhileBuilder wb(
      &g,
      [&](NodeSpec spec, bool) -> absl::StatusOr<Node*> {
        spec.name = g.UniqueName(spec.name);
        spec.device = device;
        return g.AddNode(std::move(spec));
      },
      [](NodeOut v) -> absl::StatusOr<NodeOut> { return v; }, "halve", "halve",
      SourceSpan{});
  std::vector<NodeOut> top = *wb.Begin({x0}, {Shape{1000}}, {});
  NodeOut ten = *wb.EnterInvariant(Op(
      g, device, "const", {}, {{"value", Tensor::ScalarOf(DType::kI32, 10)}}));
  NodeOut half = *wb.EnterInvariant(
      Op(g, device, "const", {}, {{"value", F32({0.5f}, Shape{})}}));
  NodeOut one = *wb.EnterInvariant(
      Op(g, device, "const", {}, {{"value", F32({1.0f}, Shape{})}}));
  std::vector<NodeOut> in = *wb.Condition(Op(g, device, "less", {top[0], ten}));
  NodeOut next =
      Op(g, device, "add", {Op(g, device, "mul", {in[1], half}), one});
  std::vector<NodeOut> exits = *wb.Finish({next}, {});
  NodeOut y = Op(g, device, "mul", {exits[1], exits[1]});
  absl::StatusOr<std::vector<NodeOut>> dx = AddGradients(&g, y, {x0});
  EXPECT_TRUE(dx.ok()) << dx.status();
  if (!dx.ok()) return {exits[0], exits[1]};
  return {exits[0], exits[1], (*dx)[0]};
}

TEST(GpuArrayTest, LoopAndItsGradientOnTheGpu) {
  SKIP_WITHOUT_GPU();
  std::vector<Tensor> cpu = RunGraph("", HalvingLoop);
  std::vector<Tensor> gpu = RunGraph("/gpu:0", HalvingLoop);
  ASSERT_EQ(cpu.size(), 3u);
  ASSERT_EQ(gpu.size(), 3u);
  ExpectSame(gpu[0], cpu[0], "trip count");
  ExpectClose(gpu[1], cpu[1], ToleranceOf(DType::kF32, false), "loop value");
  ExpectClose(gpu[2], cpu[2], ToleranceOf(DType::kF32, false), "loop gradient");
}

// `if a < b { x * 2 } else { -x }`, the predicate computed on the GPU.
TEST(GpuArrayTest, CondOnTheGpu) {
  SKIP_WITHOUT_GPU();
  for (int a : {1, 3}) {
    auto build = [a](Graph& g, const std::string& device) {
      NodeOut x = Op(g, device, "const", {},
                     {{"value", Random(DType::kF32, Shape{777}, 92)}});
      NodeOut pred = Op(g, device, "less",
                        {Op(g, device, "const", {},
                            {{"value", Tensor::ScalarOf(DType::kI32, a)}}),
                         Op(g, device, "const", {},
                            {{"value", Tensor::ScalarOf(DType::kI32, 2)}})});
      NodeOut sw = Op(g, device, "switch", {x, pred});
      NodeOut two = Op(g, device, "const", {}, {{"value", F32({2}, Shape{})}});
      NodeOut t = Op(g, device, "mul", {{sw.node, 1}, two});
      NodeOut f = Op(g, device, "neg", {{sw.node, 0}});
      NodeOut m = Op(g, device, "merge", {f, t});
      return std::vector<NodeOut>{m, {m.node, 1}};
    };
    std::vector<Tensor> cpu = RunGraph("", build);
    std::vector<Tensor> gpu = RunGraph("/gpu:0", build);
    ASSERT_EQ(cpu.size(), 2u);
    ASSERT_EQ(gpu.size(), 2u);
    ExpectSame(gpu[0], cpu[0], "cond value");
    ExpectSame(gpu[1], cpu[1], "cond branch");
  }
}

// The index ops (kernels/cuda/index_kernels.cc): the gathers on every
// dtype, the scatters with every reduction on the dtypes the GPU computes
// in (many updates of one place, combined in the CPU's order, so exactly),
// and their gradients.
TEST(GpuArrayTest, IndexOpsAndTheirGradients) {
  SKIP_WITHOUT_GPU();
  const Tensor along = I64s({4, 0, 4, 1, 3, 2, 0, 0, 1, 4, 2, 3}, Shape{2, 6});
  for (DType d : kEveryDType) {
    Compare("gather_elements", {Random(d, Shape{2, 6}, 111), along},
            {{"axis", int64_t{1}}}, IsFloat(d));
    Compare(
        "gather_nd",
        {Random(d, Shape{3, 4, 5}, 112), I64s({2, 1, 0, 3, 2, 1}, Shape{3, 2})},
        {}, IsFloat(d));
  }
  Compare(
      "gather_nd",
      {Random(DType::kF32, Shape{3, 4, 5}, 113), I64s({1, 3, 0}, Shape{3, 1})},
      {{"batch_dims", int64_t{1}}}, true);
  // 64 updates of 4 places.
  Tensor many = Random(DType::kI32, Shape{64, 1}, 114);
  for (int64_t i = 0; i < 64; ++i) {
    many.data<int32_t>()[i] = ((many.data<int32_t>()[i] % 4) + 4) % 4;
  }
  for (DType d : {DType::kF32, DType::kF64, DType::kI32, DType::kI64,
                  DType::kF16, DType::kBF16}) {
    for (const char* how : {"add", "mul", "max", "min"}) {
      const AttrMap attrs = {{"reduction", std::string(how)}};
      Compare("scatter_nd",
              {Random(d, Shape{4, 3}, 115, 0.5, 1.5), many,
               Random(d, Shape{64, 3}, 116, 0.9, 1.1)},
              attrs, false);
    }
  }
  for (const char* how : {"none", "add"}) {
    const AttrMap attrs = {{"reduction", std::string(how)},
                           {"axis", int64_t{0}}};
    Compare("scatter_elements",
            {Random(DType::kF32, Shape{3, 3}, 117),
             I64s({2, 0, 1, 0, 1, 2}, Shape{2, 3}),
             Random(DType::kF32, Shape{2, 3}, 118)},
            attrs, true);
  }
  Compare("scatter_nd",
          {Random(DType::kBool, Shape{5}, 119), I64s({3, 1}, Shape{2, 1}),
           Random(DType::kBool, Shape{2}, 120)});
}

// top_k (one thread per line) along each axis, both ways, with its
// gradient; and resize (kernels/cuda/image.cu) in every mode, up and down.
// nonzero: the count read back to size the output, the coordinates in the
// CPU's row-major order; zeros every third element (and a NaN, which is
// not zero), no element, a scalar, a rank of 8.
TEST(GpuArrayTest, Nonzero) {
  SKIP_WITHOUT_GPU();
  for (DType d : {DType::kF32, DType::kF64, DType::kI32, DType::kI64,
                  DType::kF16, DType::kBF16, DType::kBool}) {
    for (const Shape& s :
         {Shape{7}, Shape{3, 5}, Shape{2, 3, 4, 5}, Shape{0, 3}, Shape{},
          Shape{2, 1, 2, 1, 2, 1, 2, 3}, Shape{100000}}) {
      Tensor x = Random(d, s, 117, 0.5, 1.5);
      // Zero bits are zero (false) in each of these types.
      const size_t size = DTypeSize(d);
      auto* bytes = static_cast<uint8_t*>(x.raw_data());
      for (int64_t i = 0; i < x.num_elements(); i += 3) {
        std::memset(bytes + i * size, 0, size);
      }
      if (x.num_elements() > 1) {
        if (d == DType::kF32) x.data<float>()[1] = std::nanf("");
        if (d == DType::kF64) x.data<double>()[1] = std::nan("");
      }
      Compare("nonzero", {x}, {}, false);
    }
  }
}

TEST(GpuArrayTest, TopKAndResize) {
  SKIP_WITHOUT_GPU();
  for (DType d : {DType::kF32, DType::kF64, DType::kI32, DType::kI64,
                  DType::kF16, DType::kBF16}) {
    for (int64_t axis : {0, 1, -1}) {
      for (bool largest : {true, false}) {
        Compare("top_k",
                {Random(d, Shape{6, 7, 5}, 121), Tensor::Scalar<int32_t>(3)},
                {{"axis", axis}, {"largest", largest}}, IsFloat(d));
      }
    }
  }
  for (DType d : {DType::kF32, DType::kF64, DType::kF16, DType::kBF16}) {
    for (const char* method : {"linear", "nearest"}) {
      for (const char* coordinates :
           {"half_pixel", "align_corners", "asymmetric"}) {
        for (const std::vector<int64_t>& size :
             {std::vector<int64_t>{9, 13}, std::vector<int64_t>{2, 3}}) {
          Compare("resize", {Random(d, Shape{2, 5, 6, 3}, 122)},
                  {{"size", size},
                   {"method", std::string(method)},
                   {"coordinates", std::string(coordinates)}},
                  IsFloat(d));
        }
      }
    }
  }
}

// unique_all: a stable merge sort with the CPU's comparison on the GPU,
// the number of distinct values read back, then the outputs; over the
// elements and over slices along each axis, sorted and in order of first
// appearance, with repeats, NaNs (one value) and -0 (equal to 0).
TEST(GpuArrayTest, UniqueAll) {
  SKIP_WITHOUT_GPU();
  for (DType d : {DType::kF32, DType::kF64, DType::kI32, DType::kI64,
                  DType::kF16, DType::kBF16, DType::kBool}) {
    for (const Shape& s :
         {Shape{0}, Shape{1}, Shape{4, 3}, Shape{2, 6, 3}, Shape{5000}}) {
      Tensor x = Random(d, s, 125, -3, 3);
      if (d == DType::kF32 || d == DType::kF64) {
        const std::vector<double> drawn = x.ToDoubles();
        for (int64_t i = 0; i < x.num_elements(); ++i) {
          const double v = std::floor(drawn[i]);  // repeats
          const double w = i % 7 == 3 ? std::nan("") : i % 5 == 2 ? -0.0 : v;
          if (d == DType::kF32) {
            x.data<float>()[i] = static_cast<float>(w);
          } else {
            x.data<double>()[i] = w;
          }
        }
      }
      for (bool sorted : {true, false}) {
        Compare("unique_all", {x}, {{"sorted", sorted}});
        if (s.rank() < 2) continue;
        for (int64_t axis = -1; axis < s.rank(); ++axis) {
          Compare("unique_all", {x}, {{"axis", axis}, {"sorted", sorted}});
        }
      }
    }
  }
}

// non_max_suppression: every pair's overlap as a bit on the GPU
// (kernels/cuda/image.cu), the CPU's selection on the host from them, so
// the same boxes in the same order. Boxes with corners in either order or
// as centres and sizes, scores in eighths (ties kept in order by
// position), three classes, 3,000 boxes (47 words of bits a box), none.
TEST(GpuArrayTest, NonMaxSuppression) {
  SKIP_WITHOUT_GPU();
  for (DType d : {DType::kF32, DType::kF64}) {
    for (int64_t n : {int64_t{0}, int64_t{1}, int64_t{70}, int64_t{3000}}) {
      Tensor boxes = Random(d, Shape{2, n, 4}, 123, 0, 10);
      Tensor scores = Random(d, Shape{2, 3, n}, 124, 0, 1);
      for (int64_t i = 0; i < scores.num_elements(); ++i) {
        if (d == DType::kF32) {
          float& v = scores.data<float>()[i];
          v = std::floor(v * 8) / 8;
        } else {
          double& v = scores.data<double>()[i];
          v = std::floor(v * 8) / 8;
        }
      }
      for (bool center : {false, true}) {
        for (double iou : {0.0, 0.3, 0.7}) {
          Compare("non_max_suppression",
                  {boxes, scores, Tensor::Scalar<int64_t>(n / 3 + 1),
                   Tensor::Scalar<float>(static_cast<float>(iou)),
                   Tensor::Scalar<float>(0.2f)},
                  {{"center_point_box", center}});
        }
      }
    }
  }
}

}  // namespace
}  // namespace runnel
