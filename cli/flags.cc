#include "cli/flags.h"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdint>
#include <cstdlib>
#include <functional>
#include <optional>

#include "base/strings.h"
#include "framework/device_set.h"
#include "interpreter/diag.h"
#include "lang/keywords.h"

namespace runnel::cli {

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

bool ParseDevices(const std::string& v, int* cpus, int* gpus) {
  long long n = *cpus;
  long long g = *gpus;
  size_t start = 0;
  while (start <= v.size()) {
    size_t comma = v.find(',', start);
    if (comma == std::string::npos) comma = v.size();
    const std::string part = v.substr(start, comma - start);
    if (part.rfind("cpu=", 0) == 0) {
      if (!ParseInt(part.substr(4), 1, 64, &n)) return false;
    } else if (part == "gpu=all") {
      g = -1;
    } else if (part.rfind("gpu=", 0) == 0) {
      if (!ParseInt(part.substr(4), 0, 64, &g)) return false;
    } else {
      return false;
    }
    start = comma + 1;
  }
  *cpus = static_cast<int>(n);
  *gpus = static_cast<int>(g);
  return true;
}

bool ParseBytes(const std::string& v, size_t* out) {
  if (v.empty()) return false;
  int shift = 0;
  std::string digits = v;
  switch (v.back()) {
    case 'K':
    case 'k':
      shift = 10;
      break;
    case 'M':
    case 'm':
      shift = 20;
      break;
    case 'G':
    case 'g':
      shift = 30;
      break;
    case 'T':
    case 't':
      shift = 40;
      break;
    default:
      break;
  }
  if (shift > 0) digits.pop_back();
  long long n = 0;
  if (!ParseInt(digits, 1, INT64_MAX >> shift, &n)) return false;
  *out = static_cast<size_t>(n) << shift;
  return true;
}

namespace {

// One option of `run`, `check` and `graph`: its name, whether it takes a
// value, which commands take it, and what it does. `apply` gets the value
// (nullopt when the command line ends before it) and returns a usage error,
// or "" when all is well.
struct Flag {
  enum class For { kAll, kRun, kGraph };
  const char* name;
  bool takes_value;
  For commands;
  std::function<std::string(const std::optional<std::string>& value,
                            CommandLine& cl)>
      apply;
};

// `--name` with a non-empty value stored in `*into`.
Flag StringFlag(const char* name, Flag::For commands,
                std::string CommandLine::*into, const char* error) {
  return {name, true, commands,
          [into, error](const std::optional<std::string>& v, CommandLine& cl) {
            if (!v.has_value() || v->empty()) return std::string(error);
            cl.*into = *v;
            return std::string();
          }};
}

// A name a script can bind: a letter or '_', then letters, digits and
// '_', not a keyword.
bool IsName(const std::string& s) {
  if (s.empty() || std::isdigit(static_cast<unsigned char>(s[0]))) {
    return false;
  }
  for (char c : s) {
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_') return false;
  }
  return std::find(lang::kKeywords.begin(), lang::kKeywords.end(), s) ==
         lang::kKeywords.end();
}

// The options, in the order `did you mean` considers them.
const std::vector<Flag>& Flags() {
  using Value = std::optional<std::string>;
  using F = Flag::For;
  static const auto* flags = new std::vector<Flag>{
      {"--arg", true, F::kAll,
       [](const Value& kv, CommandLine& cl) -> std::string {
         if (!kv.has_value()) return "--arg needs NAME=VALUE";
         size_t eq = kv->find('=');
         if (eq == std::string::npos || eq == 0) {
           return StrCat("--arg needs NAME=VALUE, got '", *kv, "'");
         }
         cl.options.args.emplace_back(kv->substr(0, eq), kv->substr(eq + 1));
         return "";
       }},
      {"--seed", true, F::kAll,
       [](const Value& v, CommandLine& cl) -> std::string {
         long long n = 0;
         if (!v.has_value() || !ParseInt(*v, 0, INT64_MAX, &n)) {
           return "--seed needs a non-negative integer";
         }
         cl.options.seed = static_cast<uint64_t>(n);
         return "";
       }},
      {"--threads", true, F::kAll,
       [](const Value& v, CommandLine& cl) -> std::string {
         long long n = 0;
         if (!v.has_value() || !ParseInt(*v, 1, 4096, &n)) {
           return "--threads needs a positive integer";
         }
         cl.options.threads = static_cast<int>(n);
         return "";
       }},
      {"--devices", true, F::kAll,
       [](const Value& v, CommandLine& cl) -> std::string {
         interp::Options& o = cl.options;
         if (!v.has_value() ||
             !ParseDevices(*v, &o.cpu_devices, &o.gpu_devices)) {
           return StrCat(
               "--devices needs cpu=N (N from 1 to 64), gpu=N "
               "or gpu=all, or both (cpu=2,gpu=1), got '",
               v.value_or(""), "'");
         }
         std::string why;
         const int visible = VisibleGpus(&why);
         if (o.gpu_devices > visible) {
           return StrCat("--devices ", *v, ": asked for ", o.gpu_devices,
                         " GPU", o.gpu_devices == 1 ? "" : "s", " but ",
                         visible == 0
                             ? "none is visible: " + why
                             : StrCat("only ", visible, " is visible"));
         }
         return "";
       }},
      {"--gpu-memory", true, F::kAll,
       [](const Value& v, CommandLine& cl) -> std::string {
         if (!v.has_value() || !ParseBytes(*v, &cl.options.gpu_memory)) {
           return "--gpu-memory needs a size: bytes, or with K, M, G or T "
                  "(e.g. 8G)";
         }
         return "";
       }},
      {"--memory-budget", true, F::kAll,
       [](const Value& v, CommandLine& cl) -> std::string {
         size_t bytes = 0;
         if (!v.has_value() || !ParseBytes(*v, &bytes) || bytes == 0) {
           return "--memory-budget needs a size: bytes, or with K, M, G or T "
                  "(e.g. 512M)";
         }
         cl.options.memory_budget = static_cast<int64_t>(bytes);
         return "";
       }},
      {"--verbose", false, F::kAll,
       [](const Value&, CommandLine& cl) -> std::string {
         cl.verbose = true;
         return "";
       }},
      {"--trace", true, F::kAll,
       [](const Value& v, CommandLine& cl) -> std::string {
         if (!v.has_value() || v->empty()) return "--trace needs a file name";
         cl.options.trace_file = *v;
         return "";
       }},
      {"--trace-runs", true, F::kAll,
       [](const Value& v, CommandLine& cl) -> std::string {
         long long first = 0, last = 0;
         const size_t dots = v.has_value() ? v->find("..") : std::string::npos;
         if (dots == std::string::npos ||
             !ParseInt(v->substr(0, dots), 1, INT64_MAX, &first) ||
             !ParseInt(v->substr(dots + 2), first, INT64_MAX, &last)) {
           return "--trace-runs needs A..B (run numbers from 1, A <= B)";
         }
         cl.options.trace_first = first;
         cl.options.trace_last = last;
         return "";
       }},
      {"--retry-unreachable", true, F::kAll,
       [](const Value& v, CommandLine& cl) -> std::string {
         long long n = 0;
         if (!v.has_value() || !ParseInt(*v, 0, 86400, &n)) {
           return "--retry-unreachable needs seconds (0 to 86400)";
         }
         cl.retry_unreachable = static_cast<double>(n);
         return "";
       }},
      {"--checkpoint-dir", true, F::kAll,
       [](const Value& v, CommandLine& cl) -> std::string {
         if (!v.has_value() || v->empty()) {
           return "--checkpoint-dir needs a directory";
         }
         cl.options.checkpoint_dir = *v;
         return "";
       }},
      {"--checkpoint-every", true, F::kAll,
       [](const Value& value, CommandLine& cl) -> std::string {
         const std::string v = value.value_or("");
         const bool steps = v.size() > 5 && v.substr(v.size() - 5) == "steps";
         const std::string number =
             steps ? v.substr(0, v.size() - 5)
                   : (!v.empty() && v.back() == 's' ? v.substr(0, v.size() - 1)
                                                    : v);
         long long n = 0;
         if (!ParseInt(number, 1, INT64_MAX, &n)) {
           return "--checkpoint-every needs Ns (seconds) or Nsteps, "
                  "N a positive integer";
         }
         cl.options.checkpoint_seconds = steps ? 0 : static_cast<double>(n);
         cl.options.checkpoint_steps = steps ? n : 0;
         return "";
       }},
      {"--keep", true, F::kAll,
       [](const Value& v, CommandLine& cl) -> std::string {
         long long n = 0;
         if (!v.has_value() || !ParseInt(*v, 1, 1000000, &n)) {
           return "--keep needs a positive integer";
         }
         cl.options.checkpoint_keep = static_cast<int>(n);
         return "";
       }},
      {"--soft-placement", false, F::kAll,
       [](const Value&, CommandLine& cl) -> std::string {
         cl.options.soft_placement = true;
         return "";
       }},
      {"--transfer-dtype", true, F::kAll,
       [](const Value& v, CommandLine& cl) -> std::string {
         if (!v.has_value() || (*v != "f16" && *v != "f32")) {
           return "--transfer-dtype needs f16 or f32";
         }
         cl.options.f16_transfers = *v == "f16";
         return "";
       }},
      StringFlag("--metrics", F::kAll, &CommandLine::metrics,
                 "--metrics needs a file name"),
      {"--logdir", true, F::kRun,
       [](const Value& v, CommandLine& cl) -> std::string {
         if (!v.has_value() || v->empty()) return "--logdir needs a directory";
         cl.options.logdir = *v;
         return "";
       }},
      {"--histograms-every", true, F::kRun,
       [](const Value& v, CommandLine& cl) -> std::string {
         long long n = 0;
         if (!v.has_value() || !ParseInt(*v, 1, INT64_MAX, &n)) {
           return "--histograms-every needs a number of steps (1 or more)";
         }
         cl.options.histograms_every = n;
         return "";
       }},
      {"--feed", true, F::kRun,
       [](const Value& v, CommandLine& cl) -> std::string {
         const size_t eq = v.has_value() ? v->find('=') : std::string::npos;
         if (eq == std::string::npos || eq + 1 == v->size()) {
           return "--feed needs NAME=FILE.npy";
         }
         const std::string name = v->substr(0, eq);
         if (!IsName(name)) {
           return StrCat(
               "--feed needs the name of an input of the script, "
               "got '",
               name, "'");
         }
         cl.feeds.emplace_back(name, v->substr(eq + 1));
         return "";
       }},
      {"--fetch", true, F::kRun,
       [](const Value& v, CommandLine& cl) -> std::string {
         if (!v.has_value() || !IsName(*v)) {
           return StrCat(
               "--fetch needs the name of a value the script "
               "binds at its top level, got '",
               v.value_or(""), "'");
         }
         cl.fetches.push_back(*v);
         return "";
       }},
      StringFlag("--out", F::kRun, &CommandLine::out_dir,
                 "--out needs a directory"),
      StringFlag("--cluster", F::kRun, &CommandLine::cluster_file,
                 "--cluster needs a value"),
      StringFlag("--job", F::kRun, &CommandLine::job, "--job needs a value"),
      StringFlag("--task", F::kRun, &CommandLine::task_text,
                 "--task needs a value"),
      StringFlag("--token-file", F::kRun, &CommandLine::token_file,
                 "--token-file needs a value"),
      StringFlag("-o", F::kGraph, &CommandLine::graph_out,
                 "-o needs a file name"),
  };
  return *flags;
}

// The usage error for an option `command` does not take, with the nearest
// one it does.
std::string UnknownOption(const std::string& a, const std::string& command) {
  std::vector<std::string> known;
  for (const Flag& f : Flags()) {
    if (f.commands == Flag::For::kAll ||
        (f.commands == Flag::For::kRun &&
         (command == "run" || command == "export")) ||
        (f.commands == Flag::For::kGraph &&
         (command == "graph" || command == "export"))) {
      known.push_back(f.name);
    }
  }
  if (command == "graph") {
    known.insert(known.end(), {"--all", "--depth", "--expand", "--placed"});
  }
  std::string message = StrCat("unknown option '", a, "' for '", command, "'");
  if (std::string best = interp::ClosestName(a, known); !best.empty()) {
    message += StrCat("; did you mean '", best, "'?");
  }
  return message;
}

}  // namespace

std::string ParseCommandLine(const std::vector<std::string>& args,
                             CommandLine* cl) {
  for (size_t i = 1; i < args.size(); ++i) {
    std::string a = args[i];
    std::optional<std::string> inline_value;
    if (a.rfind("--", 0) == 0) {
      size_t eq = a.find('=');
      if (eq != std::string::npos && a.rfind("--arg", 0) != 0) {
        inline_value = a.substr(eq + 1);
        a = a.substr(0, eq);
      } else if (a.rfind("--arg=", 0) == 0) {
        inline_value = a.substr(6);
        a = "--arg";
      }
    }
    auto take = [&](std::string* out) {
      if (inline_value.has_value()) {
        *out = *inline_value;
        return true;
      }
      if (i + 1 >= args.size()) return false;
      *out = args[++i];
      return true;
    };
    const Flag* flag = nullptr;
    for (const Flag& f : Flags()) {
      if (a == f.name) flag = &f;
    }
    // `export` runs the script, so it takes `run`'s options, and -o.
    const bool runs = cl->command == "run" || cl->command == "export";
    if (flag != nullptr && flag->commands == Flag::For::kRun && !runs) {
      return StrCat(a, " is an option of 'run'");
    }
    if (flag != nullptr &&
        (flag->commands != Flag::For::kGraph || cl->command == "graph" ||
         cl->command == "export")) {
      std::optional<std::string> value;
      if (std::string v; flag->takes_value && take(&v)) value = v;
      if (std::string error = flag->apply(value, *cl); !error.empty()) {
        return error;
      }
    } else if (std::string error;
               cl->command == "graph" &&
               TakeGraphViewOption(a, take, &cl->view, &error)) {
      if (!error.empty()) return error;
    } else if (!a.empty() && a[0] == '-' && a != "-") {
      return UnknownOption(a, cl->command);
    } else if (cl->file.empty()) {
      cl->file = a;
    } else {
      return StrCat("unexpected argument '", a, "'");
    }
  }
  if (cl->file.empty()) return StrCat("'", cl->command, "' needs a FILE");
  return "";
}

}  // namespace runnel::cli
