// The `runnel` command (docs/language.md §8).
//
//   runnel                                 the REPL
//   runnel run FILE [--arg k=v]... [--seed N] [--threads N] [--metrics FILE]
//   runnel check FILE [--arg k=v]...       build and shape-check, run nothing
//   runnel graph FILE [-o out.dot|out.svg|out.png] [--expand SCOPE]...
//                [--depth N] [--all]      the graph `check` builds
//   runnel plot LOG... [-o out.svg|out.png|out.gp]  training curves
//   runnel ops --json                      the op registry and builtins
//   runnel lsp                             the language server (stdio)
//   runnel server --cluster c.json --job J --task N   a task of a cluster
//   runnel cluster FILE --ps P --workers W [--restart] a cluster on loopback
//
// Exit status: 0 success; 1 an error or failed assert while running; 2 a
// usage or parse error.
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <functional>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_join.h"
#include "absl/synchronization/mutex.h"
#include "base/executable_path.h"
#include "base/strings.h"
#include "cli/cluster_launcher.h"
#include "cli/flags.h"
#include "cli/graph_dot.h"
#include "cli/load_cluster.h"
#include "cli/lsp/checker.h"
#include "cli/lsp/server.h"
#include "cli/op_catalog.h"
#include "cli/plot.h"
#include "cli/render.h"
#include "cli/repl.h"
#include "common_runtime/cost_model.h"
#include "common_runtime/placer.h"
#include "common_runtime/saver.h"
#include "distributed/cluster_module.h"
#include "framework/device_set.h"
#include "interpreter/diag.h"
#include "interpreter/interpreter.h"
#include "interpreter/large_stack.h"
#include "interpreter/summaries.h"
#include "io/npy.h"
#include "io/onnx_export.h"
#include "io/onnx_import.h"
#include "lang/diagnostics.h"
#include "lang/parser.h"

namespace runnel::cli {
namespace {

constexpr char kUsage[] =
    "usage: runnel                          start the interactive REPL\n"
    "       runnel run FILE [options]       run a script\n"
    "       runnel check FILE [options]     parse, build the graph and check "
    "shapes;\n"
    "                                       run nothing\n"
    "       runnel graph FILE [-o OUT]      draw the graph `check` builds: "
    "Graphviz DOT\n"
    "                                       (OUT.dot, or stdout without -o), "
    "OUT.svg\n"
    "                                       or OUT.png; one box per name "
    "scope\n"
    "       runnel plot LOG... [-o OUT]     draw the curves of --metrics logs "
    "with\n"
    "                                       gnuplot (OUT.svg, OUT.png; the "
    "script to\n"
    "                                       stdout without -o, or OUT.gp)\n"
    "       runnel import MODEL.onnx -o OUT.rnl [--const NAME=FILE.npy]...\n"
    "                                       an ONNX model as a Runnel script "
    "(its\n"
    "                                       initializers in OUT.ckpt; "
    "docs/onnx.md)\n"
    "       runnel export FILE --fetch NAME... -o OUT.onnx [run's options]\n"
    "                                       run FILE, then write the graph "
    "that "
    "computes\n"
    "                                       the fetches as an ONNX model "
    "(docs/onnx.md)\n"
    "       runnel ops --json               every op and builtin as JSON "
    "(docs/ops.md\n"
    "                                       is made from it)\n"
    "       runnel lsp [--log-timing] [--check-timeout S]\n"
    "                                       the language server, over stdio "
    "(docs/editors.md)\n"
    "       runnel server --cluster C.json --job J --task N [--replica R]\n"
    "                     [--verbose]       serve a task (or one replica of "
    "it)\n"
    "                                       of a cluster (docs/cluster.md)\n"
    "       runnel cluster FILE --ps P --workers W [--ps-replicas R]\n"
    "                     [--restart] [options]\n"
    "                                       run FILE on a cluster of P "
    "parameter\n"
    "                                       servers (R replicas each) and W "
    "workers\n"
    "                                       on this machine\n"
    "       runnel --help | --version\n"
    "\n"
    "options:\n"
    "  --arg NAME=VALUE   a value for arg(\"NAME\", default) in the script "
    "(repeatable)\n"
    "  --seed N           the global random seed (default 0)\n"
    "  --threads N        threads per pool (default: all cores)\n"
    "  --metrics FILE     append one JSON line per report(...) to FILE\n"
    "  --logdir DIR       write TensorBoard's event file of the run in DIR:\n"
    "                     report(...) scalars, the graph, histograms\n"
    "  --histograms-every N  histograms of the trainable vars every N\n"
    "                     global steps (default 100; needs --logdir)\n"
    "  --fetch NAME --out DIR [--feed INPUT=FILE.npy]...  after the script,\n"
    "                     run the top-level value NAME (repeatable) with\n"
    "                     the inputs fed from .npy files; write DIR/NAME.npy\n"
    "  --devices cpu=N    N CPU devices sharing the --threads threads; each\n"
    "                     run is placed and partitioned over them\n"
    "                     (docs/devices.md)\n"
    "  --devices gpu=N|all  the GPUs to use besides (default all visible;\n"
    "                     gpu=0 for none; docs/gpu.md), e.g. cpu=2,gpu=1\n"
    "  --gpu-memory SIZE  the most memory each GPU's allocator holds (8G)\n"
    "  --memory-budget SIZE  the most the stacks of each loop's gradient\n"
    "                     hold; gradients through loops recompute to fit\n"
    "  --soft-placement   a device block no device matches warns, not fails\n"
    "  --trace FILE       write a Chrome/Perfetto trace of runs 10 to 12\n"
    "  --trace-runs A..B  the runs to trace instead\n"
    "  --transfer-dtype f16  f32 tensors cross devices as f16\n"
    "  --verbose          print the devices and the placer's measured rates\n"
    "  --checkpoint-dir DIR  restore from DIR's newest checkpoint, then save\n"
    "                     there periodically and at the end\n"
    "  --checkpoint-every 60s|500steps  how often (default 60s)\n"
    "  --keep N           the checkpoints kept (default 3)\n"
    "  --cluster C.json --job J --task N\n"
    "                     run as task N of job J of the cluster C.json\n"
    "  --token-file F     the cluster's shared token (required when its spec\n"
    "                     names addresses beyond this machine)\n"
    "  --retry-unreachable S  retry a run whose task is unreachable for up to\n"
    "                     S seconds, once it is back (runnel cluster "
    "--restart)\n"
    "\n"
    "graph options:\n"
    "  --expand SCOPE     open SCOPE's box (repeatable), e.g. --expand dense\n"
    "  --depth N          show N levels of scopes (default 1: a box per "
    "top-level\n"
    "                     scope)\n"
    "  --all              draw every node\n"
    "\n"
    "exit status: 0 success, 1 error or failed assert, 2 usage or parse "
    "error\n";

// --verbose: the devices, and with several the cost model's rates for
// each kind of local device (docs/devices.md).
void PrintDevices(const DeviceSet& devices) {
  std::set<std::pair<std::string, int>> kinds;
  for (int i = 0; i < devices.size(); ++i) {
    const Device& d = *devices.device(i);
    if (!devices.is_local(i)) {
      std::fprintf(stderr, "device %s: on another task\n", d.name().c_str());
      continue;
    }
    const int threads = d.intra_op_pool()->num_threads();
    std::fprintf(stderr, "device %s: %d intra-op thread%s\n", d.name().c_str(),
                 threads, threads == 1 ? "" : "s");
    kinds.emplace(d.type(), threads);
  }
  if (devices.num_local() < 2) return;
  for (const auto& [type, threads] : kinds) {
    CostModel& model = CostModel::Global();
    std::fprintf(stderr, "cost model, %s with %d thread%s: %s (%s)\n",
                 type.c_str(), threads, threads == 1 ? "" : "s",
                 model.RatesFor(type, threads).ToString().c_str(),
                 model.SourceOf(type, threads).c_str());
  }
}

int Usage(const std::string& problem) {
  std::fprintf(stderr, "runnel: %s\n(see 'runnel --help')\n", problem.c_str());
  return interp::kExitUsage;
}

// Runs `fn` on a thread with a large stack, so deep recursion in a script
// meets the interpreter's depth limit long before the machine's stack.
// `runnel run`: the first Ctrl-C asks the interpreter to stop at the next
// statement, loop step or kernel boundary (the run reports "interrupted" at
// that place and exits 1); a second one ends the process at once.
std::atomic<interp::Interpreter*> g_batch_interp{nullptr};

extern "C" void OnBatchSigint(int) {
  if (interp::Interpreter* interp = g_batch_interp.load()) interp->Interrupt();
  std::signal(SIGINT, SIG_DFL);
}

int RunWithLargeStack(const std::function<int()>& fn) {
  int result = interp::kExitError;
  interp::LargeStackThread([&] { result = fn(); }).Join();
  return result;
}

// The DOT text of the graph in `view`, written to `out` (stdout for "").
int WriteGraph(const Graph& graph, const GraphView& view,
               const std::string& out) {
  absl::StatusOr<std::string> dot = GraphToDot(graph, view);
  absl::Status status = dot.status();
  if (status.ok() && (out.empty() || out == "-")) {
    std::fputs(dot->c_str(), stdout);
  } else if (status.ok()) {
    status = WriteDot(*dot, out);
  }
  if (!status.ok()) {
    std::fprintf(stderr, "runnel: %s\n", std::string(status.message()).c_str());
    return interp::kExitError;
  }
  return interp::kExitOk;
}

// `runnel plot LOG... [-o OUT]`.
int Plot(const std::vector<std::string>& args) {
  std::vector<std::string> logs;
  std::string out;
  for (size_t i = 1; i < args.size(); ++i) {
    if (args[i] == "-o" || args[i].rfind("-o=", 0) == 0) {
      if (args[i] == "-o" && i + 1 < args.size()) {
        out = args[++i];
      } else {
        out = args[i].size() > 3 ? args[i].substr(3) : "";
      }
      if (out.empty()) return Usage("-o needs a file name");
    } else if (args[i].size() > 1 && args[i][0] == '-') {
      return Usage(StrCat("unknown option '", args[i], "' for 'plot'"));
    } else {
      logs.push_back(args[i]);
    }
  }
  if (logs.empty()) return Usage("'plot' needs a metrics FILE");
  const absl::Status status = WritePlot(logs, out);
  if (!status.ok()) {
    const std::string message(status.message());
    // Errors in a log name their line ("m.jsonl:3: error: ...").
    std::fprintf(
        stderr, "%s%s\n",
        message.find(": error: ") == std::string::npos ? "runnel: " : "",
        message.c_str());
    return interp::kExitError;
  }
  return interp::kExitOk;
}

// The path of this program, for the tasks `runnel cluster` starts.
std::string SelfPath(const char* argv0) {
  std::string path = ExecutablePath();
  return path.empty() ? argv0 : path;
}

// The value of option `a` ("--job ps" or "--job=ps") at args[*i].
bool TakeValue(const std::vector<std::string>& args, size_t* i,
               const std::string& name, std::string* out) {
  const std::string& a = args[*i];
  if (a.rfind(name + "=", 0) == 0) {
    *out = a.substr(name.size() + 1);
    return true;
  }
  if (a != name || *i + 1 >= args.size()) return false;
  *out = args[++*i];
  return true;
}

// `runnel import MODEL.onnx -o OUT.rnl [--const NAME=FILE.npy]...`.
int Import(const std::vector<std::string>& args) {
  OnnxImportOptions options;
  for (size_t i = 1; i < args.size(); ++i) {
    std::string value;
    if (TakeValue(args, &i, "-o", &value)) {
      options.script_path = value;
    } else if (TakeValue(args, &i, "--const", &value)) {
      const size_t eq = value.find('=');
      if (eq == std::string::npos || eq == 0 || eq + 1 == value.size()) {
        return Usage("--const takes NAME=FILE.npy");
      }
      absl::StatusOr<Tensor> t = ReadNpy(value.substr(eq + 1));
      if (!t.ok()) {
        std::fprintf(stderr, "error: --const: %s\n",
                     std::string(t.status().message()).c_str());
        return interp::kExitError;
      }
      options.constants[value.substr(0, eq)] = std::move(*t);
    } else if (args[i].size() > 1 && args[i][0] == '-') {
      return Usage(StrCat("unknown option '", args[i], "' for 'import'"));
    } else if (options.model_path.empty()) {
      options.model_path = args[i];
    } else {
      return Usage("'import' takes one MODEL.onnx");
    }
  }
  if (options.model_path.empty()) return Usage("'import' needs a MODEL.onnx");
  if (options.script_path.empty()) return Usage("'import' needs -o OUT.rnl");
  if (absl::Status s = ImportOnnx(options); !s.ok()) {
    std::fprintf(stderr, "error: %s\n", std::string(s.message()).c_str());
    return interp::kExitError;
  }
  return interp::kExitOk;
}

std::atomic<bool> g_server_stop{false};
extern "C" void OnServerSignal(int) { g_server_stop.store(true); }

// `runnel lsp`: the language server on stdin and stdout, on a thread with
// the interpreter's large stack (the checker runs there).
int Lsp(const std::vector<std::string>& args) {
  lsp::ServerOptions options;
  // The server's own checker process (cli/lsp/checker.h).
  if (args.size() == 3 && args[1] == "--check-file") {
    return lsp::CheckFileMain(args[2]);
  }
  for (size_t i = 1; i < args.size(); ++i) {
    if (args[i] == "--log-timing") {
      options.log_timing = true;
    } else if (args[i] == "--check-timeout" && i + 1 < args.size()) {
      char* end = nullptr;
      options.check_timeout_s = std::strtod(args[++i].c_str(), &end);
      if (*end != '\0' || !(options.check_timeout_s > 0)) {
        return Usage("--check-timeout takes a number of seconds above 0");
      }
    } else if (args[i] != "--stdio") {  // what some clients add
      return Usage(StrCat("'lsp' does not take '", args[i], "'"));
    }
  }
  int status = interp::kExitError;
  interp::LargeStackThread thread(
      [&] { status = lsp::Serve(stdin, stdout, options); });
  thread.Join();
  return status;
}

// `runnel server --cluster C.json --job J --task N [--replica R]
// [--threads N] [--token-file F] [--verbose]`: serves until SIGINT or
// SIGTERM.
int Server(const std::vector<std::string>& args) {
  std::string cluster_file, job, task_text, threads_text, token_file,
      replica_text = "0";
  bool verbose = false;
  for (size_t i = 1; i < args.size(); ++i) {
    std::string v;
    if (args[i] == "--verbose") {
      verbose = true;
      continue;
    }
    if (TakeValue(args, &i, "--cluster", &cluster_file) ||
        TakeValue(args, &i, "--job", &job) ||
        TakeValue(args, &i, "--task", &task_text) ||
        TakeValue(args, &i, "--replica", &replica_text) ||
        TakeValue(args, &i, "--threads", &threads_text) ||
        TakeValue(args, &i, "--token-file", &token_file)) {
      continue;
    }
    return Usage(StrCat("unknown option '", args[i], "' for 'server'"));
  }
  long long task = 0, threads = 0, replica = 0;
  if (!ParseInt(replica_text, 0, 64, &replica)) {
    return Usage("--replica needs a replica index (0 to 64)");
  }
  if (cluster_file.empty() || job.empty() ||
      !ParseInt(task_text, 0, 1 << 20, &task)) {
    return Usage("'server' needs --cluster FILE --job NAME --task N");
  }
  if (!threads_text.empty() && !ParseInt(threads_text, 1, 4096, &threads)) {
    return Usage("--threads needs a positive integer");
  }
  const absl::StatusOr<const ClusterModule*> cluster = LoadCluster();
  absl::StatusOr<std::unique_ptr<ServedTask>> served =
      cluster.ok() ? (*cluster)->Serve({.cluster_file = cluster_file,
                                        .token_file = token_file,
                                        .job = job,
                                        .task = static_cast<int>(task)},
                                       static_cast<int>(threads),
                                       static_cast<int>(replica))
                   : cluster.status();
  if (!served.ok()) {
    std::fprintf(stderr, "error: %s\n",
                 std::string(served.status().message()).c_str());
    return interp::kExitError;
  }
  std::unique_ptr<ServedTask> server = std::move(*served);
  if (verbose) {
    // Each partition a step runs here, as it starts and as it ends.
    server->set_log([](const std::string& line) {
      std::fprintf(stderr, "%s\n", line.c_str());
      std::fflush(stderr);
    });
  }
  if (server->replicated()) {
    std::printf("%s (replica %lld) serving at %s\n", server->task().c_str(),
                replica, server->address().c_str());
  } else {
    std::printf("%s serving at %s\n", server->task().c_str(),
                server->address().c_str());
  }
  std::fflush(stdout);
  std::signal(SIGINT, OnServerSignal);
  std::signal(SIGTERM, OnServerSignal);
  std::thread stopper([&] {
    while (!g_server_stop.load()) {
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    server->Shutdown();
  });
  server->Wait();
  stopper.join();
  std::fflush(nullptr);
  std::_Exit(interp::kExitOk);
}

// `runnel cluster FILE --ps P --workers W [--ps-replicas R] [--restart]
// [run options]`.
int Cluster(const std::vector<std::string>& args, const char* argv0) {
  ClusterLaunch launch;
  launch.runnel = SelfPath(argv0);
  std::string ps_text = "1", workers_text, threads, replicas_text = "1";
  for (size_t i = 1; i < args.size(); ++i) {
    if (TakeValue(args, &i, "--ps", &ps_text) ||
        TakeValue(args, &i, "--workers", &workers_text) ||
        TakeValue(args, &i, "--ps-replicas", &replicas_text)) {
      continue;
    }
    if (TakeValue(args, &i, "--threads", &threads)) {
      launch.task_args = {"--threads", threads};
    } else if (args[i] == "--restart") {
      launch.restart = true;
    } else if (args[i].rfind("--cluster", 0) == 0 ||
               args[i].rfind("--job", 0) == 0 ||
               args[i].rfind("--task", 0) == 0) {
      return Usage(StrCat("'cluster' chooses ", args[i], " itself"));
    } else if (!args[i].empty() && args[i][0] == '-') {
      // A run option: every worker gets it (with its value, if any).
      launch.worker_args.push_back(args[i]);
      if (args[i].find('=') == std::string::npos && i + 1 < args.size() &&
          args[i] != "--soft-placement" && args[i][0] == '-' &&
          (args[i + 1].empty() || args[i + 1][0] != '-')) {
        launch.worker_args.push_back(args[++i]);
      }
    } else if (launch.file.empty()) {
      launch.file = args[i];
    } else {
      return Usage(StrCat("unexpected argument '", args[i], "'"));
    }
  }
  long long ps = 0, workers = 0;
  if (launch.file.empty()) return Usage("'cluster' needs a FILE");
  if (!ParseInt(ps_text, 0, 64, &ps) ||
      !ParseInt(workers_text, 1, 64, &workers)) {
    return Usage("'cluster' needs --workers W (1 to 64) and --ps P (0 to 64)");
  }
  long long replicas = 1;
  if (!ParseInt(replicas_text, 1, 8, &replicas)) {
    return Usage("--ps-replicas needs a number of replicas (1 to 8)");
  }
  if (replicas > 1 && ps == 0) {
    return Usage("--ps-replicas replicates the ps tasks, and there are none");
  }
  launch.ps = static_cast<int>(ps);
  launch.workers = static_cast<int>(workers);
  launch.ps_replicas = static_cast<int>(replicas);
  return LaunchCluster(launch);
}

// Joins the cluster the command line names, if any. Returns an exit status
// when it cannot (printed), or nullopt.
std::optional<int> JoinCluster(CommandLine& cl, JoinedCluster* joined) {
  interp::Options& options = cl.options;
  if (cl.cluster_file.empty() && cl.job.empty() && cl.task_text.empty()) {
    if (!cl.token_file.empty()) {
      return Usage("--token-file is for cluster runs (--cluster)");
    }
    return std::nullopt;
  }
  long long task = 0;
  if (cl.cluster_file.empty() || cl.job.empty() ||
      !ParseInt(cl.task_text, 0, 1 << 20, &task)) {
    return Usage("a cluster run needs --cluster FILE --job NAME --task N");
  }
  const absl::StatusOr<const ClusterModule*> cluster = LoadCluster();
  absl::StatusOr<JoinedCluster> started =
      cluster.ok() ? (*cluster)->Join({.cluster_file = cl.cluster_file,
                                       .token_file = cl.token_file,
                                       .job = cl.job,
                                       .task = static_cast<int>(task)},
                                      cl.retry_unreachable, options.seed)
                   : cluster.status();
  if (!started.ok()) {
    std::fprintf(stderr, "error: %s\n",
                 std::string(started.status().message()).c_str());
    return interp::kExitError;
  }
  *joined = std::move(*started);
  options.cluster = joined->context;
  options.task_chief = joined->context->is_chief();
  options.task_job = cl.job;
  options.task_index = static_cast<int>(task);
  options.task_workers = joined->workers;
  options.task_ps = joined->ps;
  return std::nullopt;
}

// A Runnel string literal of `s`, as `print` quotes strings in a tuple.
std::string StringLiteral(const std::string& s) {
  return interp::FormatValue(interp::Value::String(s), /*quote_strings=*/true);
}

// `--feed NAME=FILE.npy ... --fetch NAME ... --out DIR`: after the script,
// one run of the named values with the named inputs fed from .npy files,
// each value written to DIR/NAME.npy (save_npy: complete or not at all).
// It is evaluated as the Runnel code it means, in the script's global
// scope, as the source "<command line>", so that its errors are the
// language's own: an unknown name (with the closest one), a feed that is
// not an input or has the wrong dtype or shape, a missing feed.
int FetchToFiles(interp::Interpreter& interp, const CommandLine& cl) {
  std::error_code ec;
  std::filesystem::create_directories(cl.out_dir, ec);
  if (ec) {
    std::fprintf(stderr, "error: --out %s: %s\n", cl.out_dir.c_str(),
                 ec.message().c_str());
    return interp::kExitError;
  }
  std::vector<std::string> feeds;
  for (const auto& [name, file] : cl.feeds) {
    feeds.push_back(StrCat(name, ": load_npy(", StringLiteral(file), ")"));
  }
  std::string code =
      StrCat("let __fetched = run (", absl::StrJoin(cl.fetches, ", "),
             cl.fetches.size() == 1 ? ",)" : ")");
  if (!feeds.empty())
    code += StrCat(" with {", absl::StrJoin(feeds, ", "), "}");
  code += "\n";
  for (size_t i = 0; i < cl.fetches.size(); ++i) {
    const std::string path =
        (std::filesystem::path(cl.out_dir) / (cl.fetches[i] + ".npy")).string();
    code += StrCat("save_npy(", StringLiteral(path), ", __fetched[", i, "])\n");
  }
  auto source = std::make_shared<lang::SourceFile>("<command line>", code);
  interp.sink().AddSource(source);
  lang::ParseResult parsed = lang::Parse(*source);
  for (const lang::Diagnostic& d : parsed.errors) interp.sink().Report(d);
  if (!parsed.ok()) return interp::kExitUsage;
  absl::StatusOr<interp::Value> done = interp.Evaluate(
      std::shared_ptr<const lang::Program>(std::move(parsed.program)));
  return done.ok() ? interp::kExitOk : interp.Report(done.status());
}

// `runnel export`: after the script, the graph that computes the fetches,
// with the variables' values at that moment, as an ONNX model.
int ExportToOnnx(interp::Interpreter& interp, const CommandLine& cl) {
  std::vector<OnnxExportFetch> fetches;
  for (const std::string& name : cl.fetches) {
    interp::Binding* b = interp.globals().Find(name);
    if (b == nullptr || !b->value.is_symbolic()) {
      std::fprintf(stderr,
                   "error: --fetch %s: the script binds no graph value of that "
                   "name at its top level\n",
                   name.c_str());
      return interp::kExitError;
    }
    fetches.push_back({name, b->value.out()});
  }
  absl::StatusOr<TensorMap> variables = ReadVariables(interp.host().session());
  absl::Status s = variables.ok()
                       ? ExportOnnx(fetches, *variables, cl.graph_out)
                       : variables.status();
  if (!s.ok()) {
    std::fprintf(stderr, "error: %s\n", std::string(s.message()).c_str());
    return interp::kExitError;
  }
  return interp::kExitOk;
}

// Runs, checks or draws the script; never returns (std::_Exit).
int RunScript(const CommandLine& cl, const JoinedCluster& cluster) {
  const std::string& command = cl.command;
  return RunWithLargeStack([&]() -> int {
    lang::DiagnosticSink sink(stderr);
    interp::Interpreter interp(cl.options, &sink);
    if (cl.verbose) PrintDevices(interp.host().session().devices());
    g_batch_interp.store(&interp);
    if (command == "run") std::signal(SIGINT, OnBatchSigint);
    int status = interp.RunFile(cl.file);
    if (status == interp::kExitOk && !cl.fetches.empty() &&
        !cl.out_dir.empty()) {
      status = FetchToFiles(interp, cl);
    }
    if (status == interp::kExitOk && command == "export") {
      status = ExportToOnnx(interp, cl);
    }
    // The last checkpoint, also after an error or Ctrl-C; the graph's
    // last form in the TensorBoard events.
    if (absl::Status s = interp.host().FinishCheckpoints(); !s.ok()) {
      std::fprintf(stderr, "error: %s\n", std::string(s.message()).c_str());
      status = interp::kExitError;
    }
    if (interp.summaries() != nullptr) {
      if (absl::Status s = interp.summaries()->Finish(interp.host()); !s.ok()) {
        std::fprintf(stderr, "error: --logdir: %s\n",
                     std::string(s.message()).c_str());
        status = interp::kExitError;
      }
    }
    if (status == interp::kExitOk) {
      if (absl::Status s = interp.host().FinishTrace(); !s.ok()) {
        std::fprintf(stderr, "error: %s\n", std::string(s.message()).c_str());
        status = interp::kExitError;
      }
    }
    std::signal(SIGINT, SIG_DFL);
    g_batch_interp.store(nullptr);
    if (status == interp::kExitOk && command == "graph" && cl.view.placed) {
      // The whole graph, placed as runs would be (docs/devices.md).
      absl::Status s =
          PlaceGraph(interp.graph(), interp.host().session().devices(),
                     {.soft_placement = cl.options.soft_placement,
                      .warn = [](const Node&, const std::string&) {}});
      if (!s.ok()) status = interp.Report(s);
    }
    const int code = status != interp::kExitOk || command != "graph"
                         ? status
                         : WriteGraph(interp.graph(), cl.view, cl.graph_out);
    // Everything the program wrote is complete (checkpoints and .npy files
    // are fsync'd when written); flush the streams and leave without
    // freeing the graph, the AST and the session piece by piece, which
    // took a tenth of `runnel check` on a large script.
    // Synchronous replicas stop counting this worker at once.
    if (cluster.leave) cluster.leave();
    std::fflush(nullptr);
    std::_Exit(code);
  });
}

int Main(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  if (args.empty()) return RunRepl(interp::Options{});
  const std::string command = args[0];
  if (command == "--help" || command == "-h" || command == "help") {
    std::fputs(kUsage, stdout);
    return interp::kExitOk;
  }
  if (command == "--version") {
    std::printf("runnel %s\n", RUNNEL_VERSION);
    return interp::kExitOk;
  }
  if (command == "plot") return Plot(args);
  if (command == "server") return Server(args);
  if (command == "lsp") return Lsp(args);
  if (command == "import") return Import(args);
  if (command == "cluster") return Cluster(args, argv[0]);
  if (command == "ops") {
    if (args.size() != 2 || args[1] != "--json") {
      return Usage("'ops' takes --json");
    }
    std::fputs(OpsJson().c_str(), stdout);
    return interp::kExitOk;
  }
  if (command != "run" && command != "check" && command != "graph" &&
      command != "export") {
    return Usage(StrCat("unknown command '", command, "'"));
  }
  CommandLine cl;
  cl.command = command;
  if (std::string error = ParseCommandLine(args, &cl); !error.empty()) {
    return Usage(error);
  }
  JoinedCluster cluster;
  if (std::optional<int> failed = JoinCluster(cl, &cluster)) {
    return *failed;
  }
  if (cl.options.histograms_every > 0 && cl.options.logdir.empty()) {
    return Usage("--histograms-every needs --logdir DIR");
  }
  if (command == "export" && (cl.fetches.empty() || cl.graph_out.empty())) {
    return Usage(
        "'export' needs --fetch NAME (the values to compute) and -o OUT.onnx");
  }
  if (!cl.fetches.empty() && cl.out_dir.empty() && command != "export") {
    return Usage("--fetch needs --out DIR, where NAME.npy is written");
  }
  if (cl.fetches.empty() && (!cl.feeds.empty() || !cl.out_dir.empty())) {
    return Usage(StrCat(cl.feeds.empty() ? "--out" : "--feed",
                        " needs --fetch NAME, the value to run"));
  }
  if (!cl.fetches.empty() && !cl.cluster_file.empty()) {
    return Usage("--fetch runs in one process; it does not take --cluster");
  }
  cl.options.metrics_file = cl.metrics;
  cl.options.check_mode = command != "run" && command != "export";
  return RunScript(cl, cluster);
}

}  // namespace
}  // namespace runnel::cli

int main(int argc, char** argv) {
#ifdef NDEBUG
  // Debian builds Abseil with its debug checks on: every absl::Mutex (gRPC
  // takes several per call) then keeps a global graph of lock orders, a
  // few per cent of a cluster step. Release builds do without; debug
  // builds keep the check.
  absl::SetMutexDeadlockDetectionMode(absl::OnDeadlockCycle::kIgnore);
#endif
  // The interpreter turns every failure into a diagnostic; this is the last
  // guard, so that nothing ever reaches std::terminate.
  try {
    return runnel::cli::Main(argc, argv);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "runnel: internal error: %s\n", e.what());
    return runnel::interp::kExitError;
  }
}
