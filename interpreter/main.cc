// The `runnel` command (docs/language.md §8).
//
//   runnel                                 the REPL
//   runnel run FILE [--arg k=v]... [--seed N] [--threads N] [--metrics FILE]
//   runnel check FILE [--arg k=v]...       build and shape-check, run nothing
//   runnel graph FILE [-o out.dot|out.svg] the graph `check` builds, as DOT
//
// Exit status: 0 success; 1 an error or failed assert while running; 2 a
// usage or parse error.
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <functional>
#include <string>
#include <vector>

#include "interpreter/graph_dot.h"
#include "interpreter/interpreter.h"
#include "interpreter/large_stack.h"
#include "interpreter/repl.h"
#include "lang/diagnostics.h"
#include "runtime/strings.h"

namespace runnel::interp {
namespace {

constexpr char kUsage[] =
    "usage: runnel                          start the interactive REPL\n"
    "       runnel run FILE [options]       run a script\n"
    "       runnel check FILE [options]     parse, build the graph and check "
    "shapes;\n"
    "                                       run nothing\n"
    "       runnel graph FILE [-o OUT]      write the graph `check` builds as "
    "Graphviz\n"
    "                                       DOT (OUT.dot, OUT.svg; stdout "
    "without -o)\n"
    "       runnel --help | --version\n"
    "\n"
    "options:\n"
    "  --arg NAME=VALUE   a value for arg(\"NAME\", default) in the script "
    "(repeatable)\n"
    "  --seed N           the global random seed (default 0)\n"
    "  --threads N        threads per pool (default: all cores)\n"
    "  --metrics FILE     append one JSON line per report(...) to FILE\n"
    "\n"
    "exit status: 0 success, 1 error or failed assert, 2 usage or parse "
    "error\n";

int Usage(const std::string& problem) {
  std::fprintf(stderr, "runnel: %s\n(see 'runnel --help')\n", problem.c_str());
  return kExitUsage;
}

bool ParseInt(const std::string& s, long long min, long long max,
              long long* out) {
  if (s.empty()) return false;
  char* end = nullptr;
  errno = 0;
  long long v = std::strtoll(s.c_str(), &end, 10);
  if (errno != 0 || *end != '\0' || v < min || v > max) return false;
  *out = v;
  return true;
}

// Runs `fn` on a thread with a large stack, so deep recursion in a script
// meets the interpreter's depth limit long before the machine's stack.
// `runnel run`: the first Ctrl-C asks the interpreter to stop at the next
// statement, loop step or kernel boundary (the run reports "interrupted" at
// that place and exits 1); a second one ends the process at once.
std::atomic<Interpreter*> g_batch_interp{nullptr};

extern "C" void OnBatchSigint(int) {
  if (Interpreter* interp = g_batch_interp.load()) interp->Interrupt();
  std::signal(SIGINT, SIG_DFL);
}

int RunWithLargeStack(const std::function<int()>& fn) {
  int result = kExitError;
  LargeStackThread([&] { result = fn(); }).Join();
  return result;
}

bool HasDot() {
  const char* path = std::getenv("PATH");
  std::string dirs = path ? path : "/usr/bin:/bin";
  size_t start = 0;
  while (start <= dirs.size()) {
    size_t colon = dirs.find(':', start);
    std::string dir = dirs.substr(
        start, colon == std::string::npos ? std::string::npos : colon - start);
    if (dir.empty()) dir = ".";
    if (access((dir + "/dot").c_str(), X_OK) == 0) return true;
    if (colon == std::string::npos) break;
    start = colon + 1;
  }
  return false;
}

bool EndsWith(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() &&
         s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

// Writes `text` to `path` through a temporary file and a rename.
bool WriteFileAtomically(const std::string& path, const std::string& text) {
  const std::string tmp = path + ".tmp";
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    if (!out) return false;
    out << text;
    out.flush();
    if (!out) {
      std::remove(tmp.c_str());
      return false;
    }
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    std::remove(tmp.c_str());
    return false;
  }
  return true;
}

int WriteGraph(const Graph& graph, const std::string& out) {
  const std::string dot = GraphToDot(graph);
  if (out.empty() || out == "-") {
    std::fputs(dot.c_str(), stdout);
    return kExitOk;
  }
  if (EndsWith(out, ".svg")) {
    if (!HasDot()) {
      std::fprintf(stderr,
                   "runnel: writing %s needs the Graphviz 'dot' program, "
                   "which is not installed; install graphviz, or write DOT "
                   "with -o %s.dot\n",
                   out.c_str(), out.substr(0, out.size() - 4).c_str());
      return kExitError;
    }
    char dot_path[] = "/tmp/runnel-graph-XXXXXX";
    int fd = mkstemp(dot_path);
    if (fd < 0) {
      std::fprintf(stderr, "runnel: cannot create a temporary file: %s\n",
                   std::strerror(errno));
      return kExitError;
    }
    if (write(fd, dot.data(), dot.size()) != static_cast<ssize_t>(dot.size())) {
      close(fd);
      std::remove(dot_path);
      std::fprintf(stderr, "runnel: cannot write a temporary file\n");
      return kExitError;
    }
    close(fd);
    const std::string tmp_svg = out + ".tmp";
    std::string cmd = StrCat("dot -Tsvg -o '", tmp_svg, "' '", dot_path, "'");
    const int rc = std::system(cmd.c_str());
    std::remove(dot_path);
    if (rc != 0 || std::rename(tmp_svg.c_str(), out.c_str()) != 0) {
      std::remove(tmp_svg.c_str());
      std::fprintf(stderr, "runnel: dot failed to write %s\n", out.c_str());
      return kExitError;
    }
    return kExitOk;
  }
  if (!WriteFileAtomically(out, dot)) {
    std::fprintf(stderr, "runnel: cannot write %s: %s\n", out.c_str(),
                 std::strerror(errno));
    return kExitError;
  }
  return kExitOk;
}

int Main(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  Options options;
  if (args.empty()) return RunRepl(options);
  const std::string command = args[0];
  if (command == "--help" || command == "-h" || command == "help") {
    std::fputs(kUsage, stdout);
    return kExitOk;
  }
  if (command == "--version") {
    std::printf("runnel %s\n", RUNNEL_VERSION);
    return kExitOk;
  }
  if (command != "run" && command != "check" && command != "graph") {
    return Usage(StrCat("unknown command '", command, "'"));
  }
  std::string file, graph_out, metrics;
  for (size_t i = 1; i < args.size(); ++i) {
    std::string a = args[i];
    std::string value;
    bool has_value = false;
    if (a.rfind("--", 0) == 0) {
      size_t eq = a.find('=');
      if (eq != std::string::npos && a.rfind("--arg", 0) != 0) {
        value = a.substr(eq + 1);
        a = a.substr(0, eq);
        has_value = true;
      } else if (a.rfind("--arg=", 0) == 0) {
        value = a.substr(6);
        a = "--arg";
        has_value = true;
      }
    }
    auto take = [&](std::string* out) {
      if (has_value) {
        *out = value;
        return true;
      }
      if (i + 1 >= args.size()) return false;
      *out = args[++i];
      return true;
    };
    if (a == "--arg") {
      std::string kv;
      if (!take(&kv)) return Usage("--arg needs NAME=VALUE");
      size_t eq = kv.find('=');
      if (eq == std::string::npos || eq == 0) {
        return Usage(StrCat("--arg needs NAME=VALUE, got '", kv, "'"));
      }
      options.args.emplace_back(kv.substr(0, eq), kv.substr(eq + 1));
    } else if (a == "--seed") {
      std::string v;
      long long n = 0;
      if (!take(&v) || !ParseInt(v, 0, INT64_MAX, &n)) {
        return Usage("--seed needs a non-negative integer");
      }
      options.seed = static_cast<uint64_t>(n);
    } else if (a == "--threads") {
      std::string v;
      long long n = 0;
      if (!take(&v) || !ParseInt(v, 1, 4096, &n)) {
        return Usage("--threads needs a positive integer");
      }
      options.threads = static_cast<int>(n);
    } else if (a == "--metrics") {
      if (!take(&metrics) || metrics.empty()) {
        return Usage("--metrics needs a file name");
      }
    } else if (a == "-o" && command == "graph") {
      if (!take(&graph_out) || graph_out.empty()) {
        return Usage("-o needs a file name");
      }
    } else if (!a.empty() && a[0] == '-' && a != "-") {
      return Usage(StrCat("unknown option '", a, "' for '", command, "'"));
    } else if (file.empty()) {
      file = a;
    } else {
      return Usage(StrCat("unexpected argument '", a, "'"));
    }
  }
  if (file.empty()) return Usage(StrCat("'", command, "' needs a FILE"));
  options.metrics_file = metrics;
  options.check_mode = command != "run";
  return RunWithLargeStack([&]() -> int {
    lang::DiagnosticSink sink(stderr);
    Interpreter interp(options, &sink);
    g_batch_interp.store(&interp);
    if (command == "run") std::signal(SIGINT, OnBatchSigint);
    const int status = interp.RunFile(file);
    std::signal(SIGINT, SIG_DFL);
    g_batch_interp.store(nullptr);
    const int code = status != kExitOk || command != "graph"
                         ? status
                         : WriteGraph(interp.graph(), graph_out);
    // Everything the program wrote is complete (checkpoints and .npy files
    // are fsync'd when written); flush the streams and leave without
    // freeing the graph, the AST and the session piece by piece, which
    // took a tenth of `runnel check` on a large script.
    std::fflush(nullptr);
    std::_Exit(code);
  });
}

}  // namespace
}  // namespace runnel::interp

int main(int argc, char** argv) {
  // The interpreter turns every failure into a diagnostic; this is the last
  // guard, so that nothing ever reaches std::terminate.
  try {
    return runnel::interp::Main(argc, argv);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "runnel: internal error: %s\n", e.what());
    return runnel::interp::kExitError;
  }
}
