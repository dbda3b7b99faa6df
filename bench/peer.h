// Helpers for the C++ benchmarks, which compare with PyTorch (the peer)
// through a Python driver (bench/<name>_peer.py, built on bench/peer.py):
// the driver tunes the peer, alternates rounds of the two sides and
// reports. Run without --runnel-only, a benchmark hands itself over to its
// driver; the driver runs it again with --runnel-only for each round, and
// it prints `RESULT <workload> <seconds>` lines. Header-only: each
// benchmark is one executable.
#ifndef RUNNEL_BENCH_PEER_H_
#define RUNNEL_BENCH_PEER_H_

#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

namespace runnel::bench {

// The value after `name` on the command line, or `fallback`.
inline std::string StringArg(int argc, char** argv, const char* name,
                             const std::string& fallback) {
  for (int i = 1; i + 1 < argc; ++i) {
    if (std::strcmp(argv[i], name) == 0) return argv[i + 1];
  }
  return fallback;
}

inline int IntArg(int argc, char** argv, const char* name, int fallback) {
  const std::string value = StringArg(argc, argv, name, "");
  return value.empty() ? fallback : std::atoi(value.c_str());
}

// --threads N from the command line, or `fallback`.
inline int ThreadsArg(int argc, char** argv, int fallback) {
  return IntArg(argc, argv, "--threads", fallback);
}

inline bool HasFlag(int argc, char** argv, const char* flag) {
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], flag) == 0) return true;
  }
  return false;
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

// Unless --runnel-only is given, replaces this process with
// `/usr/bin/python3 bench/<driver> --compare <this executable> ARGS...`
// (Debian's python3, which has torch). Returns only for --runnel-only, or
// with an error message when the driver cannot be started.
inline void HandOffToDriver(int argc, char** argv, const std::string& driver) {
  if (HasFlag(argc, argv, "--runnel-only")) return;
  std::error_code ec;
  const std::string self =
      std::filesystem::read_symlink("/proc/self/exe", ec).string();
  std::vector<std::string> args = {"/usr/bin/python3", PeerScript(driver),
                                   "--compare", ec ? argv[0] : self};
  for (int i = 1; i < argc; ++i) args.push_back(argv[i]);
  std::vector<char*> cargs;
  for (std::string& a : args) cargs.push_back(a.data());
  cargs.push_back(nullptr);
  std::fflush(stdout);
  execv(cargs[0], cargs.data());
  std::fprintf(stderr,
               "%s: cannot run %s (%s); --runnel-only times Runnel alone\n",
               argv[0], args[1].c_str(), std::strerror(errno));
  std::exit(1);
}

// One RESULT line for the driver.
inline void Result(const std::string& workload, double seconds) {
  std::printf("RESULT %s %.9f\n", workload.c_str(), seconds);
  std::fflush(stdout);
}

}  // namespace runnel::bench

#endif  // RUNNEL_BENCH_PEER_H_
