// Executor overhead: a chain of 1000 scalar adds run as one graph, against
// the same 1000 adds in PyTorch eager mode, in the same invocation. The
// comparison (peer tuning, alternating rounds, report) is bench/chain_peer.py,
// to which this hands itself over; with --runnel-only it times Runnel alone
// and prints `RESULT chain <seconds per add>`.
//
//   build-release/chain_bench [--threads N] [--rounds N] [--runnel-only]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "bench/peer.h"
#include "common_runtime/session.h"

using namespace runnel;

int main(int argc, char** argv) {
  bench::HandOffToDriver(argc, argv, "chain_peer.py");
  int threads = bench::ThreadsArg(argc, argv, 2);
  constexpr int kOps = 1000;
  auto g = std::make_shared<Graph>();
  Node* one = *g->AddConst(Tensor::Scalar<float>(1.0f), "one");
  NodeOut cur{one, 0};
  for (int i = 0; i < kOps; ++i) {
    auto n = g->AddNode({.name = "add_" + std::to_string(i),
                         .op = "add",
                         .inputs = {cur, {one, 0}}});
    if (!n.ok()) {
      std::fprintf(stderr, "chain_bench: %s\n", n.status().ToString().c_str());
      return 1;
    }
    cur = {*n, 0};
  }
  Session session(g, {.num_threads = threads});
  auto run = [&] {
    auto out = session.Run(Session::Feeds{}, {cur}, {});
    if (!out.ok() || (*out)[0].at<float>(0) != kOps + 1) {
      std::fprintf(stderr, "chain_bench: wrong result\n");
      std::exit(1);
    }
  };
  for (int i = 0; i < 20; ++i) run();  // warm-up, builds the executor
  std::vector<double> us;
  for (int rep = 0; rep < 15; ++rep) {
    auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < 20; ++i) run();
    auto t1 = std::chrono::steady_clock::now();
    us.push_back(std::chrono::duration<double, std::micro>(t1 - t0).count() /
                 (20.0 * kOps));
  }
  std::sort(us.begin(), us.end());
  bench::Result("chain", us[us.size() / 2] * 1e-6);
  return 0;
}
