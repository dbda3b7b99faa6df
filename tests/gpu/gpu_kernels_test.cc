// Every GPU kernel (kernels/cuda) against its CPU kernel on the same
// inputs, within tolerances per dtype, and the gradients of the
// differentiable ops the same way (their backward nodes ask for the GPU
// too; those without a GPU kernel run on the CPU). Also the GPU allocator's
// limit and its out-of-memory message. ctest label `gpu`; without a GPU
// every test is skipped, saying why (docs/gpu.md).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <memory>
#include <string>
#include <vector>

#include "runtime/device_set.h"
#include "runtime/gradients.h"
#include "runtime/session.h"
#include "runtime/strings.h"
#include "tests/util/test_util.h"

namespace runnel {
namespace {

#define SKIP_WITHOUT_GPU()                                         \
  do {                                                             \
    std::string why;                                               \
    if (VisibleGpus(&why) == 0) GTEST_SKIP() << "no GPU: " << why; \
  } while (0)

struct Tolerance {
  double rtol, atol;
};
Tolerance ToleranceOf(DType d, bool matmul) {
  switch (d) {
    case DType::kF32:
      return matmul ? Tolerance{1e-4, 1e-5} : Tolerance{2e-6, 1e-6};
    case DType::kF64:
      return {1e-12, 1e-13};
    case DType::kF16:
    case DType::kBF16:
      return {2e-2, 1e-2};
    default:
      return {0, 0};  // integers and bool: exact
  }
}

// Random values of `dtype` and `shape`: in [lo, hi) for floats, small
// integers for integers, alternating for bool.
Tensor Random(DType dtype, const Shape& shape, int seed, double lo = -2,
              double hi = 2) {
  const std::vector<float> u =
      testing::PatternValues(shape.num_elements(), seed, 7919);
  std::vector<double> v(u.size());
  for (size_t i = 0; i < u.size(); ++i) v[i] = lo + (u[i] + 1) / 2 * (hi - lo);
  Tensor t(dtype, shape);
  for (size_t i = 0; i < v.size(); ++i) {
    switch (dtype) {
      case DType::kF32:
        t.data<float>()[i] = static_cast<float>(v[i]);
        break;
      case DType::kF64:
        t.data<double>()[i] = v[i];
        break;
      case DType::kI32:
        t.data<int32_t>()[i] = static_cast<int32_t>(std::lround(v[i] * 50));
        break;
      case DType::kI64:
        t.data<int64_t>()[i] = std::lround(v[i] * 50);
        break;
      case DType::kBool:
        t.data<bool>()[i] = u[i] > 0;
        break;
      default: {
        Tensor f =
            Tensor::FromVector(std::vector<float>(u.begin(), u.end()), shape);
        return testing::Run1("cast", {f}, {{"dtype", dtype}});
      }
    }
  }
  return t;
}

struct Result {
  std::vector<Tensor> values;       // the op's output, then each gradient
  std::vector<std::string> on_gpu;  // the op nodes placed on a GPU
};

// `op` of `inputs` (fed through placeholders), and with `grad` the
// gradients of sum(op(...)) with respect to the float inputs, run with the
// op asking for `device` ("" = CPU only).
Result RunOp(const std::string& op, const std::vector<Tensor>& inputs,
             const AttrMap& attrs, const std::string& device, bool grad) {
  auto g = std::make_shared<Graph>();
  std::vector<NodeOut> ins;
  Session::Feeds feeds;
  for (size_t i = 0; i < inputs.size(); ++i) {
    absl::StatusOr<Node*> p =
        g->AddNode({.name = StrCat("in", i),
                    .op = "placeholder",
                    .attrs = {{"dtype", inputs[i].dtype()},
                              {"shape", inputs[i].shape()}}});
    EXPECT_TRUE(p.ok()) << p.status();
    if (!p.ok()) return {};
    ins.push_back({*p, 0});
    feeds.push_back({{*p, 0}, inputs[i]});
  }
  absl::StatusOr<Node*> y = g->AddNode(
      {.name = "y", .op = op, .inputs = ins, .attrs = attrs, .device = device});
  EXPECT_TRUE(y.ok()) << y.status();
  if (!y.ok()) return {};
  std::vector<NodeOut> fetches = {{*y, 0}};
  if (grad) {
    absl::StatusOr<std::vector<NodeOut>> dx =
        AddGradients(g.get(), {*y, 0}, ins);
    EXPECT_TRUE(dx.ok()) << dx.status();
    if (!dx.ok()) return {};
    fetches.insert(fetches.end(), dx->begin(), dx->end());
  }
  Session session(g, {.num_threads = 2,
                      .gpu_devices = device.empty() ? 0 : 1,
                      .warn = [](const Node&, const std::string&) {}});
  absl::StatusOr<std::vector<Tensor>> out = session.Run(feeds, fetches, {});
  EXPECT_TRUE(out.ok()) << op << ": " << out.status();
  if (!out.ok()) return {};
  Result r{*out, {}};
  absl::StatusOr<std::shared_ptr<const Graph>> placed =
      session.PlacedGraph(feeds, fetches, {});
  EXPECT_TRUE(placed.ok()) << placed.status();
  if (placed.ok()) {
    for (const Node* n : (*placed)->nodes()) {
      if (n->assigned_device().find("/device:gpu:") != std::string::npos) {
        r.on_gpu.push_back(n->name());
      }
    }
  }
  return r;
}

void ExpectClose(const Tensor& gpu, const Tensor& cpu, Tolerance tol,
                 const std::string& what) {
  ASSERT_EQ(gpu.dtype(), cpu.dtype()) << what;
  ASSERT_EQ(gpu.shape(), cpu.shape()) << what;
  const std::vector<double> a = gpu.ToDoubles(), b = cpu.ToDoubles();
  int bad = 0;
  for (size_t i = 0; i < a.size() && bad < 5; ++i) {
    if (std::isnan(a[i]) && std::isnan(b[i])) continue;
    if (a[i] == b[i]) continue;  // infinities too
    if (!(std::fabs(a[i] - b[i]) <= tol.atol + tol.rtol * std::fabs(b[i]))) {
      ADD_FAILURE() << what << ": element " << i << ": GPU " << a[i] << ", CPU "
                    << b[i];
      ++bad;
    }
  }
}

// Runs the op on both devices and compares; the op itself must have run on
// the GPU.
void Compare(const std::string& op, const std::vector<Tensor>& inputs,
             const AttrMap& attrs = {}, bool grad = false) {
  const std::string what = StrCat(
      op, "(", DTypeName(inputs[0].dtype()), inputs[0].shape().ToString(),
      inputs.size() > 1 ? StrCat(", ", inputs[1].shape().ToString()) : "", ")");
  SCOPED_TRACE(what);
  Result cpu = RunOp(op, inputs, attrs, "", grad);
  Result gpu = RunOp(op, inputs, attrs, "/gpu:0", grad);
  ASSERT_EQ(cpu.values.size(), gpu.values.size());
  EXPECT_NE(std::find(gpu.on_gpu.begin(), gpu.on_gpu.end(), "y"),
            gpu.on_gpu.end())
      << what << " did not run on the GPU";
  const Tolerance tol = ToleranceOf(cpu.values[0].dtype(), op == "matmul");
  for (size_t i = 0; i < cpu.values.size(); ++i) {
    ExpectClose(gpu.values[i], cpu.values[i],
                i == 0 ? tol : Tolerance{tol.rtol * 10, tol.atol * 10},
                i == 0 ? what : StrCat(what, " gradient ", i - 1));
  }
}

const std::vector<std::vector<Shape>> kBinaryShapes = {
    {Shape{3, 5}, Shape{3, 5}},
    {Shape{3, 1, 5}, Shape{4, 5}},
    {Shape{5}, Shape{}},
    {Shape{2, 3, 4}, Shape{3, 1}},
    {Shape{1 << 20}, Shape{1 << 20}},
    {Shape{0, 3}, Shape{3}},
};

TEST(GpuKernelsTest, BinaryArithmetic) {
  SKIP_WITHOUT_GPU();
  for (const char* op : {"add", "sub", "mul", "maximum", "minimum"}) {
    for (DType d : {DType::kF32, DType::kF64, DType::kI32, DType::kI64}) {
      for (const auto& s : kBinaryShapes) {
        const bool grad = d == DType::kF32 || d == DType::kF64;
        Compare(op, {Random(d, s[0], 1), Random(d, s[1], 2)}, {},
                grad && s[0].num_elements() < 1000);
      }
    }
  }
  for (const char* op : {"div", "floordiv", "mod", "pow"}) {
    for (DType d : {DType::kF32, DType::kF64}) {
      for (const auto& s : kBinaryShapes) {
        // Positive operands: pow of a negative base is NaN on both, and a
        // divisor near zero makes floordiv a coin toss.
        const bool grad = std::string(op) == "div" || std::string(op) == "pow";
        Compare(op, {Random(d, s[0], 3, 0.5, 3), Random(d, s[1], 4, 0.5, 3)},
                {}, grad && s[0].num_elements() < 1000);
      }
    }
  }
}

TEST(GpuKernelsTest, ComparisonsAndLogic) {
  SKIP_WITHOUT_GPU();
  for (const char* op : {"equal", "not_equal", "less", "less_equal", "greater",
                         "greater_equal"}) {
    for (DType d : {DType::kF32, DType::kF64, DType::kI32, DType::kI64}) {
      for (const auto& s : kBinaryShapes) {
        Tensor a = Random(d, s[0], 5), b = Random(d, s[1], 6);
        Compare(op, {a, b});
        Compare(op, {a, a});  // equal everywhere
      }
    }
  }
  for (const char* op : {"logical_and", "logical_or", "equal", "not_equal"}) {
    Compare(op, {Random(DType::kBool, Shape{4, 5}, 7),
                 Random(DType::kBool, Shape{5}, 8)});
  }
  Compare("logical_not", {Random(DType::kBool, Shape{9}, 9)});
}

TEST(GpuKernelsTest, Unary) {
  SKIP_WITHOUT_GPU();
  struct U {
    const char* op;
    double lo, hi;
    bool ints, grad;
  };
  const std::vector<U> ops = {
      {"abs", -3, 3, true, true},         {"neg", -3, 3, true, true},
      {"sign", -3, 3, true, false},       {"square", -3, 3, true, true},
      {"relu", -3, 3, true, true},        {"floor", -3, 3, false, false},
      {"ceil", -3, 3, false, false},      {"round", -3, 3, false, false},
      {"isnan", -3, 3, true, false},      {"isfinite", -3, 3, true, false},
      {"sqrt", 0.1, 4, false, true},      {"rsqrt", 0.1, 4, false, true},
      {"exp", -5, 5, false, true},        {"log", 0.1, 4, false, true},
      {"log1p", -0.5, 4, false, true},    {"sin", -4, 4, false, true},
      {"cos", -4, 4, false, true},        {"tanh", -4, 4, false, true},
      {"sigmoid", -8, 8, false, true},    {"elu", -3, 3, false, true},
      {"softplus", -30, 30, false, true},
  };
  for (const U& u : ops) {
    for (DType d : {DType::kF32, DType::kF64, DType::kI32, DType::kI64}) {
      const bool is_int = d == DType::kI32 || d == DType::kI64;
      if (is_int && !u.ints) continue;
      for (const Shape& s : {Shape{7, 13}, Shape{(1 << 20) + 3}, Shape{}}) {
        Compare(u.op, {Random(d, s, 10, u.lo, u.hi)}, {},
                u.grad && !is_int && s.num_elements() < 1000);
      }
    }
  }
  // NaN and the infinities where they matter.
  const float inf = INFINITY, nan = NAN;
  Tensor special = testing::F32(
      {nan, inf, -inf, 0.0f, -0.0f, 2.5f, -2.5f, 0.5f, 1.5f}, Shape{9});
  for (const char* op :
       {"abs", "neg", "sign", "relu", "round", "floor", "isnan", "isfinite",
        "exp", "tanh", "sigmoid", "softplus", "elu"}) {
    Compare(op, {special});
  }
  Compare("maximum", {special, testing::F32({1}, Shape{1})});
  Compare("minimum", {testing::F32({1}, Shape{1}), special});
}

TEST(GpuKernelsTest, MatMul) {
  SKIP_WITHOUT_GPU();
  struct M {
    Shape a, b;
    bool ta, tb;
  };
  const std::vector<M> cases = {
      {Shape{4, 5}, Shape{5, 3}, false, false},
      {Shape{5, 4}, Shape{5, 3}, true, false},
      {Shape{4, 5}, Shape{3, 5}, false, true},
      {Shape{5, 4}, Shape{3, 5}, true, true},
      {Shape{2, 4, 5}, Shape{2, 5, 3}, false, false},    // strided batch
      {Shape{2, 4, 5}, Shape{5, 3}, false, false},       // b repeated
      {Shape{2, 1, 4, 5}, Shape{3, 5, 6}, false, true},  // irregular batch
      {Shape{128, 784}, Shape{784, 256}, false, false},
      {Shape{3, 0}, Shape{0, 4}, false, false},  // empty sum: zeros
  };
  for (DType d : {DType::kF32, DType::kF64, DType::kF16, DType::kBF16}) {
    for (const M& m : cases) {
      Shape b = m.b;
      if (m.tb && m.b.rank() == 3) b = Shape{3, 6, 5};
      const bool grad =
          (d == DType::kF32 || d == DType::kF64) && m.a.num_elements() < 10000;
      Compare("matmul", {Random(d, m.a, 11, -1, 1), Random(d, b, 12, -1, 1)},
              {{"transpose_a", m.ta}, {"transpose_b", m.tb}}, grad);
    }
  }
}

// The allocator's limit holds, and running out names the sizes.
TEST(GpuKernelsTest, MemoryLimitAndOutOfMemory) {
  SKIP_WITHOUT_GPU();
  auto g = std::make_shared<Graph>();
  absl::StatusOr<Node*> x = g->AddNode(
      {.name = "x",
       .op = "placeholder",
       .attrs = {{"dtype", DType::kF32}, {"shape", Shape{64 << 20}}}});
  ASSERT_TRUE(x.ok());
  absl::StatusOr<Node*> y = g->AddNode(
      {.name = "y", .op = "neg", .inputs = {{*x, 0}}, .device = "/gpu:0"});
  ASSERT_TRUE(y.ok());
  // 256 MiB do not fit a 200 MiB limit (cuBLASLt's workspace holds 32).
  Session session(g, {.num_threads = 2,
                      .gpu_devices = 1,
                      .gpu = {.memory_limit = size_t{200} << 20}});
  absl::StatusOr<std::vector<Tensor>> out = session.Run(
      {{NodeOut{*x, 0}, Tensor::Zeros(DType::kF32, Shape{64 << 20})}},
      {NodeOut{*y, 0}}, {});
  ASSERT_FALSE(out.ok());
  EXPECT_NE(out.status().message().find(
                "out of memory (268435456 bytes requested; gpu:0: "),
            std::string::npos)
      << out.status();
  EXPECT_NE(out.status().message().find("limit 200 MiB)"), std::string::npos)
      << out.status();
  // Without the limit the same run works.
  Session unlimited(g, {.num_threads = 2, .gpu_devices = 1});
  out = unlimited.Run(
      {{NodeOut{*x, 0}, Tensor::Zeros(DType::kF32, Shape{64 << 20})}},
      {NodeOut{*y, 0}}, {});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ((*out)[0].at<float>(12345), 0.0f);
}

}  // namespace
}  // namespace runnel
