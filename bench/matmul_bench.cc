// Benchmark: f32 matmul through the runtime (eager, so shape inference,
// kernel creation and output allocation are included) against PyTorch on
// the same shapes and thread count. The comparison (peer tuning,
// alternating rounds, the report with the GEMM floor) is
// bench/matmul_peer.py, to which this hands itself over; with --runnel-only
// it times Runnel alone and prints `RESULT <workload> <seconds per product>`
// (--peak: only the 1024^3 product, as `gemm`, for other benchmarks'
// floors).
//
//   build-release/matmul_bench [--threads N] [--rounds N] [--runnel-only]
//                              [--peak]
//
// Not a test: nothing here asserts a speed.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "bench/peer.h"
#include "common_runtime/eager.h"
#include "framework/tensor.h"

namespace runnel {
namespace {

struct Workload {
  std::string name;
  int64_t m, k, n;
  int iters;  // matmuls per timed rep
};

Tensor Filled(int64_t rows, int64_t cols, uint32_t seed) {
  Tensor t(DType::kF32, Shape{rows, cols});
  float* p = t.data<float>();
  for (int64_t i = 0; i < rows * cols; ++i) {
    seed = seed * 1664525u + 1013904223u;
    p[i] = static_cast<float>(seed >> 8) / 16777216.0f;
  }
  return t;
}

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

// Median seconds per product over `reps` timed runs of `w.iters` products.
absl::StatusOr<double> TimeRunnel(EagerContext& ctx, const Workload& w,
                                  int reps) {
  Tensor a = Filled(w.m, w.k, 1), b = Filled(w.k, w.n, 2);
  for (int i = 0; i < 3; ++i) {
    absl::StatusOr<Tensor> c = ctx.Execute1("matmul", {a, b});
    if (!c.ok()) return c.status();
  }
  std::vector<double> seconds;
  for (int r = 0; r < reps; ++r) {
    auto start = std::chrono::steady_clock::now();
    for (int i = 0; i < w.iters; ++i) {
      absl::StatusOr<Tensor> c = ctx.Execute1("matmul", {a, b});
      if (!c.ok()) return c.status();
    }
    std::chrono::duration<double> d = std::chrono::steady_clock::now() - start;
    seconds.push_back(d.count() / w.iters);
  }
  return Median(seconds);
}

int Main(int argc, char** argv) {
  bench::HandOffToDriver(argc, argv, "matmul_peer.py");
  EagerContext ctx(
      {.num_threads = bench::ThreadsArg(argc, argv, 2), .seed = 0});
  // The same workloads as bench/matmul_peer.py.
  std::vector<Workload> workloads = {
      {"1024^3", 1024, 1024, 1024, 5},
      {"128x784x256", 128, 784, 256, 50},
  };
  if (bench::HasFlag(argc, argv, "--peak")) {
    workloads = {{"gemm", 1024, 1024, 1024, 1}};
  }
  for (const Workload& w : workloads) {
    absl::StatusOr<double> seconds = TimeRunnel(ctx, w, 10);
    if (!seconds.ok()) {
      std::fprintf(stderr, "matmul_bench: %s\n",
                   std::string(seconds.status().message()).c_str());
      return 1;
    }
    bench::Result(w.name, *seconds);
  }
  return 0;
}

}  // namespace
}  // namespace runnel

int main(int argc, char** argv) { return runnel::Main(argc, argv); }
