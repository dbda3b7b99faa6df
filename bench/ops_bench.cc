// The heavy ops of the training benchmarks' steps (bench/train_bench.py),
// one at a time: the convolutions of the tutorial CNN (batch 64) and their
// gradients, its first dense layer and its gradients, max pooling, and the
// MLP's first layer (batch 128), each against the same op in PyTorch
// (channels-last, as Runnel's NHWC). It shows where a step's time goes and
// which ops lose to the peer. The comparison is bench/ops_peer.py, to which
// this hands itself over; with --runnel-only it times Runnel alone and
// prints `RESULT <op> <seconds>`, each the median of 20 eager calls
// (--only NAME: that op alone; --calls N: N calls, for a profiler).
//
//   build-release/ops_bench [--threads N] [--rounds N] [--runnel-only]
//                           [--only NAME] [--calls N]
//
// Not a test: nothing here asserts a speed.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <string>
#include <vector>

#include "bench/peer.h"
#include "common_runtime/eager.h"
#include "framework/tensor.h"

namespace runnel {
namespace {

Tensor Filled(const Shape& shape, uint32_t seed) {
  Tensor t(DType::kF32, shape);
  float* p = t.data<float>();
  for (int64_t i = 0; i < t.num_elements(); ++i) {
    seed = seed * 1664525u + 1013904223u;
    p[i] = static_cast<float>(seed >> 8) / 16777216.0f - 0.5f;
  }
  return t;
}

// [time, time]: query i keeps keys 0..i.
Tensor CausalMask(int64_t time) {
  Tensor t(DType::kBool, Shape{time, time});
  bool* p = t.data<bool>();
  for (int64_t i = 0; i < time; ++i) {
    for (int64_t j = 0; j < time; ++j) p[i * time + j] = j <= i;
  }
  return t;
}

// The char transformer's queries, keys and values: [batch, heads, time,
// dim].
const Shape kHeads{32, 4, 128, 32};

struct Op {
  std::string name;  // as in bench/ops_peer.py
  std::string op;
  std::vector<Shape> inputs;
  AttrMap attrs;
};

int Main(int argc, char** argv) {
  bench::HandOffToDriver(argc, argv, "ops_peer.py");
  EagerContext ctx(
      {.num_threads = bench::ThreadsArg(argc, argv, 2), .seed = 0});
  const AttrMap pool = {{"size", int64_t{2}}, {"padding", "valid"}};
  const AttrMap ta = {{"transpose_a", true}}, tb = {{"transpose_b", true}};
  const std::vector<Op> ops = {
      {"conv1", "conv2d", {{64, 28, 28, 1}, {5, 5, 1, 32}}, {}},
      {"conv1_dw",
       "conv2d_backprop_filter",
       {{64, 28, 28, 1}, {5, 5, 1, 32}, {64, 28, 28, 32}},
       {}},
      {"pool1", "max_pool", {{64, 28, 28, 32}}, pool},
      {"pool1_dx",
       "max_pool_grad",
       {{64, 28, 28, 32}, {64, 14, 14, 32}, {64, 14, 14, 32}},
       pool},
      {"conv2", "conv2d", {{64, 14, 14, 32}, {5, 5, 32, 64}}, {}},
      {"conv2_dx",
       "conv2d_backprop_input",
       {{64, 14, 14, 32}, {5, 5, 32, 64}, {64, 14, 14, 64}},
       {}},
      {"conv2_dw",
       "conv2d_backprop_filter",
       {{64, 14, 14, 32}, {5, 5, 32, 64}, {64, 14, 14, 64}},
       {}},
      {"fc1", "matmul", {{64, 3136}, {3136, 1024}}, {}},
      {"fc1_dw", "matmul", {{64, 3136}, {64, 1024}}, ta},
      {"fc1_dx", "matmul", {{64, 1024}, {3136, 1024}}, tb},
      {"mlp1", "matmul", {{128, 784}, {784, 256}}, {}},
      {"mlp1_dw", "matmul", {{128, 784}, {128, 256}}, ta},
      // The char transformer's (examples/char_transformer.rnl): batch 32,
      // 128 steps, 4 heads of 32, causal attention, a GELU MLP of 512.
      {"att", "scaled_dot_product_attention", {kHeads, kHeads, kHeads, {}}, {}},
      {"att_grad",
       "scaled_dot_product_attention_grad",
       {kHeads, kHeads, kHeads, {}, kHeads},
       {}},
      {"gelu_grad", "gelu_grad", {{4096, 512}, {4096, 512}}, {}},
      // Its MLP's products (32 x 128 rows): fc1 128 -> 512, fc2 512 -> 128.
      {"tf_fc1", "matmul", {{4096, 128}, {128, 512}}, {}},
      {"tf_fc1_dx", "matmul", {{4096, 512}, {128, 512}}, tb},
      {"tf_fc1_dw", "matmul", {{4096, 128}, {4096, 512}}, ta},
      {"tf_fc2", "matmul", {{4096, 512}, {512, 128}}, {}},
      {"tf_fc2_dx", "matmul", {{4096, 128}, {512, 128}}, tb},
      {"tf_fc2_dw", "matmul", {{4096, 512}, {4096, 128}}, ta},
      {"bias_grad", "sum", {{4096, 512}}, {{"axis", int64_t{0}}}},
  };
  const std::string only = bench::StringArg(argc, argv, "--only", "");
  const int calls = std::max(bench::IntArg(argc, argv, "--calls", 20), 1);
  for (const Op& op : ops) {
    if (!only.empty() && op.name != only) continue;
    std::vector<Tensor> inputs;
    for (const Shape& s : op.inputs) {
      inputs.push_back(Filled(s, static_cast<uint32_t>(inputs.size() + 1)));
    }
    if (op.op.starts_with("scaled_dot_product_attention")) {
      inputs[3] = CausalMask(kHeads.dim(2));
    }
    if (op.op == "max_pool_grad") {  // y must be max_pool(x)
      absl::StatusOr<Tensor> y = ctx.Execute1("max_pool", {inputs[0]}, pool);
      if (!y.ok()) return 1;
      inputs[1] = *y;
    }
    std::vector<double> seconds;
    for (int r = 0; r < calls + 3; ++r) {
      auto start = std::chrono::steady_clock::now();
      absl::StatusOr<std::vector<Tensor>> out =
          ctx.Execute(op.op, inputs, op.attrs);
      if (!out.ok()) {
        std::fprintf(stderr, "ops_bench: %s: %s\n", op.name.c_str(),
                     std::string(out.status().message()).c_str());
        return 1;
      }
      std::chrono::duration<double> d =
          std::chrono::steady_clock::now() - start;
      if (r >= 3) seconds.push_back(d.count());  // 3 warm-up calls
    }
    std::sort(seconds.begin(), seconds.end());
    bench::Result(op.name, seconds[seconds.size() / 2]);
  }
  return 0;
}

}  // namespace
}  // namespace runnel

int main(int argc, char** argv) { return runnel::Main(argc, argv); }
