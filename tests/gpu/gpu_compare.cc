#include "tests/gpu/gpu_compare.h"

#include <algorithm>
#include <cmath>
#include <memory>

#include "base/strings.h"
#include "common_runtime/gradients.h"
#include "common_runtime/session.h"
#include "tests/util/test_util.h"

namespace runnel {

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

Tensor Random(DType dtype, const Shape& shape, int seed, double lo, double hi) {
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
        // The 16-bit floats and 8-bit integers: v (in [lo, hi)) cast as
        // the CPU casts.
        Tensor f =
            Tensor::FromVector(std::vector<float>(v.begin(), v.end()), shape);
        return testing::Run1("cast", {f}, {{"dtype", dtype}});
      }
    }
  }
  return t;
}

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
  std::vector<NodeOut> fetches;
  for (int o = 0; o < (*y)->num_outputs(); ++o) fetches.push_back({*y, o});
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
  Result r{*out, {}, {}, (*y)->num_outputs()};
  absl::StatusOr<std::shared_ptr<const Graph>> placed =
      session.PlacedGraph(feeds, fetches, {});
  EXPECT_TRUE(placed.ok()) << placed.status();
  if (placed.ok()) {
    for (const Node* n : (*placed)->nodes()) {
      if (n->assigned_device().find("/device:gpu:") != std::string::npos) {
        r.on_gpu.push_back(n->name());
        r.ops_on_gpu.push_back(n->op());
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

void Compare(const std::string& op, const std::vector<Tensor>& inputs,
             const AttrMap& attrs, bool grad, bool long_sum,
             const std::vector<std::string>& also_on_gpu) {
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
  const Tolerance tol = ToleranceOf(
      cpu.values[0].dtype(), long_sum || op == "matmul" || op == "matmul_add");
  for (size_t i = 0; i < cpu.values.size(); ++i) {
    const int grad_index = static_cast<int>(i) - cpu.num_outputs;
    ExpectClose(gpu.values[i], cpu.values[i],
                grad_index < 0 ? tol : Tolerance{tol.rtol * 10, tol.atol * 10},
                grad_index < 0 ? StrCat(what, " output ", i)
                               : StrCat(what, " gradient ", grad_index));
  }
  for (const std::string& other : also_on_gpu) {
    EXPECT_NE(std::find(gpu.ops_on_gpu.begin(), gpu.ops_on_gpu.end(), other),
              gpu.ops_on_gpu.end())
        << what << ": no " << other << " ran on the GPU";
  }
}

}  // namespace runnel
