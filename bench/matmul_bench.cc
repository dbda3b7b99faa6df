// Benchmark: f32 matmul through the runtime (eager, so shape inference,
// kernel creation and output allocation are included) against PyTorch on
// the same shapes and thread count, run from bench/matmul_peer.py.
//
//   build-release/matmul_bench [--threads N] [--reps R] [--rounds N]
//                              [--no-peer]
//
// Prints, per shape, a line like
//   matmul f32 1024^3: runnel 61.2 GFLOP/s, pytorch 65.0 GFLOP/s, ratio 0.94
// Not a test: nothing here asserts a speed.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "bench/peer.h"
#include "runtime/eager.h"
#include "runtime/strings.h"
#include "runtime/tensor.h"

namespace runnel {
namespace {

struct Options {
  int threads = 2;
  int reps = 10;
  // Runnel and PyTorch alternate this many times; each reports the median
  // round, so a burst of load from other processes hits both alike.
  int rounds = 3;
  bool peer = true;
};

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

// Median GFLOP/s over `reps` timed runs of `w.iters` products.
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
  return 2.0 * w.m * w.k * w.n / Median(seconds) / 1e9;
}

int Main(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg == "--threads" && i + 1 < argc) {
      o.threads = std::atoi(argv[++i]);
    } else if (arg == "--reps" && i + 1 < argc) {
      o.reps = std::max(1, std::atoi(argv[++i]));
    } else if (arg == "--rounds" && i + 1 < argc) {
      o.rounds = std::max(1, std::atoi(argv[++i]));
    } else if (arg == "--no-peer") {
      o.peer = false;
    } else {
      std::fprintf(
          stderr,
          "usage: %s [--threads N] [--reps R] [--rounds N] [--no-peer]\n",
          argv[0]);
      return 2;
    }
  }
  EagerContext ctx({.num_threads = o.threads, .seed = 0});
  std::printf(
      "matmul benchmark, %d threads, median of %d reps, median of %d "
      "alternating rounds\n",
      o.threads, o.reps, o.rounds);
  const std::vector<Workload> workloads = {
      {"1024^3", 1024, 1024, 1024, 5},
      {"[128,784]x[784,256]", 128, 784, 256, 50},
  };
  for (const Workload& w : workloads) {
    std::vector<double> ours_by_round, theirs_by_round;
    for (int r = 0; r < o.rounds; ++r) {
      absl::StatusOr<double> ours = TimeRunnel(ctx, w, o.reps);
      if (!ours.ok()) {
        std::fprintf(stderr, "matmul_bench: %s\n",
                     std::string(ours.status().message()).c_str());
        return 1;
      }
      ours_by_round.push_back(*ours);
      if (o.peer) {
        const double theirs =
            bench::RunPeer("matmul_peer.py", o.threads,
                           StrCat("--m ", w.m, " --k ", w.k, " --n ", w.n,
                                  " --iters ", w.iters, " --reps ", o.reps));
        if (theirs > 0) theirs_by_round.push_back(theirs);
      }
    }
    const double ours = Median(ours_by_round);
    if (!theirs_by_round.empty()) {
      const double theirs = Median(theirs_by_round);
      std::printf(
          "matmul f32 %s: runnel %.1f GFLOP/s, pytorch %.1f GFLOP/s, ratio "
          "%.2f\n",
          w.name.c_str(), ours, theirs, ours / theirs);
    } else {
      std::printf("matmul f32 %s: runnel %.1f GFLOP/s, pytorch n/a\n",
                  w.name.c_str(), ours);
    }
    std::string detail = "  rounds: runnel";
    for (double g : ours_by_round)
      detail += StrCat(" ", fmt::format("{:.1f}", g));
    if (!theirs_by_round.empty()) {
      detail += ", pytorch";
      for (double g : theirs_by_round) {
        detail += StrCat(" ", fmt::format("{:.1f}", g));
      }
    }
    std::printf("%s\n", detail.c_str());
    std::fflush(stdout);
  }
  return 0;
}

}  // namespace
}  // namespace runnel

int main(int argc, char** argv) { return runnel::Main(argc, argv); }
