// The options of `runnel run`, `check` and `graph` (cli/main.cc), read
// through one table: each option's name, whether it takes a value, which
// commands take it and what it sets. The table also gives "did you mean".
#ifndef RUNNEL_CLI_FLAGS_H_
#define RUNNEL_CLI_FLAGS_H_

#include <cstddef>
#include <string>
#include <vector>

#include "cli/graph_dot.h"
#include "interpreter/interpreter.h"

namespace runnel::cli {

// What the command line of `run`, `check` and `graph` asks for.
struct CommandLine {
  std::string command;  // run, check or graph
  std::string file, graph_out, metrics;
  std::string cluster_file, job, task_text, token_file;
  double retry_unreachable = 0;
  bool verbose = false;
  GraphView view;
  interp::Options options;
  // run: --feed NAME=FILE.npy ... --fetch NAME ... --out DIR
  std::vector<std::pair<std::string, std::string>> feeds;
  std::vector<std::string> fetches;
  std::string out_dir;
};

// Reads the options and FILE of `run`, `check` and `graph` (args[0] is the
// command) into `*cl`. Returns a usage error, or "".
std::string ParseCommandLine(const std::vector<std::string>& args,
                             CommandLine* cl);

// An integer in [min, max], the whole of `s`.
bool ParseInt(const std::string& s, long long min, long long max,
              long long* out);
// "cpu=N", "gpu=N" or "gpu=all", or both joined by a comma ("cpu=2,gpu=0"):
// N CPU devices (1 to 64), the first N GPUs or every visible one (-1).
bool ParseDevices(const std::string& v, int* cpus, int* gpus);
// "4G", "512M", "100K" or a byte count (binary units).
bool ParseBytes(const std::string& v, size_t* out);

}  // namespace runnel::cli

#endif  // RUNNEL_CLI_FLAGS_H_
