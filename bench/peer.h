// Helpers for benchmarks that run the same workload in PyTorch (the peer)
// in the same invocation. Header-only: each benchmark is one executable.
#ifndef RUNNEL_BENCH_PEER_H_
#define RUNNEL_BENCH_PEER_H_

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <string>

namespace runnel::bench {

// --threads N from the command line, or `fallback`.
inline int ThreadsArg(int argc, char** argv, int fallback) {
  for (int i = 1; i + 1 < argc; ++i) {
    if (std::strcmp(argv[i], "--threads") == 0) return std::atoi(argv[i + 1]);
  }
  return fallback;
}

// The path of bench/<script>: beside this header, or under bench/ from
// the working directory (run_all.sh runs from the repository root).
inline std::string PeerScript(const std::string& script) {
  namespace fs = std::filesystem;
  for (const fs::path& p : {fs::path(__FILE__).parent_path() / script,
                            fs::current_path() / "bench" / script}) {
    if (fs::exists(p)) return p.string();
  }
  return script;
}

// Runs the peer script under Debian's python3 (which has torch; a pyenv
// python3 earlier on PATH does not) with --threads and the BLAS/OpenMP
// thread counts pinned, and returns the number it prints, or -1 when the
// peer is unavailable.
inline double RunPeer(const std::string& script, int threads,
                      const std::string& extra = "") {
  const std::string n = std::to_string(threads);
  std::string cmd = "OMP_NUM_THREADS=" + n + " OPENBLAS_NUM_THREADS=" + n +
                    " /usr/bin/python3 '" + PeerScript(script) +
                    "' --threads " + n + " " + extra;
  FILE* p = popen(cmd.c_str(), "r");
  if (p == nullptr) return -1;
  char buf[256] = {0};
  double value = -1;
  if (std::fgets(buf, sizeof buf, p) != nullptr) value = std::atof(buf);
  if (pclose(p) != 0) return -1;
  return value;
}

}  // namespace runnel::bench

#endif  // RUNNEL_BENCH_PEER_H_
