#include "cli/lsp/checker.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <iostream>
#include <iterator>
#include <mutex>
#include <tuple>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_join.h"
#include "base/strings.h"
#include "framework/dtype.h"
#include "interpreter/builtins.h"
#include "interpreter/interpreter.h"
#include "interpreter/large_stack.h"
#include "interpreter/observer.h"
#include "nlohmann/json.hpp"

extern char** environ;

namespace runnel::lsp {
namespace {

using json = nlohmann::json;

// ---- the type of a value, as hover shows it
// ----------------------------------

std::string TypeOf(const interp::Value& v, int depth = 0) {
  using interp::ValueKind;
  auto items = [&](const std::vector<interp::Value>& xs) {
    std::vector<std::string> parts;
    for (size_t i = 0; i < xs.size() && i < 8; ++i) {
      parts.push_back(depth < 3 ? TypeOf(xs[i], depth + 1) : "…");
    }
    if (xs.size() > 8) parts.push_back("…");
    return absl::StrJoin(parts, ", ");
  };
  switch (v.kind()) {
    case ValueKind::kTensor:
    case ValueKind::kSymbolic: {
      const Shape& shape = v.tensor_shape();
      std::string dims;
      if (shape.unknown_rank()) {
        dims = "[*]";
      } else {
        std::vector<std::string> ds;
        for (int64_t d : shape.dims()) {
          ds.push_back(d < 0 ? "?" : std::to_string(d));
        }
        dims = StrCat("[", absl::StrJoin(ds, ", "), "]");
      }
      std::string t = StrCat(DTypeName(v.tensor_dtype()), dims);
      if (v.is_concrete() && shape.dims().empty() && !shape.unknown_rank()) {
        t += StrCat(" = ", interp::FormatValue(v));
      }
      return t;
    }
    case ValueKind::kNone:
      return "none";
    case ValueKind::kOp:
      return "op";
    case ValueKind::kString:
      return "string";
    case ValueKind::kDType:
      return "dtype";
    case ValueKind::kTuple:
      return StrCat("(", items(v.items()), ")");
    case ValueKind::kList:
      return StrCat("list [", items(v.items()), "]");
    case ValueKind::kRecord: {
      std::vector<std::string> parts;
      for (const interp::Field& f : v.fields()) {
        parts.push_back(StrCat(f.first, ": ",
                               depth < 3 ? TypeOf(f.second, depth + 1) : "…"));
      }
      return StrCat("{", absl::StrJoin(parts, ", "), "}");
    }
    case ValueKind::kRange:
      return "range";
    case ValueKind::kFunction: {
      const auto& f = v.function();
      std::vector<std::string> ps;
      if (f->builtin != nullptr) {
        for (const auto& p : f->builtin->params) ps.push_back(p.name);
      } else {
        for (const lang::Param& p : f->params()) ps.push_back(p.name);
      }
      return StrCat("fn ", f->name, "(", absl::StrJoin(ps, ", "), ")");
    }
    case ValueKind::kModule:
      return StrCat("module ", v.module()->name);
    case ValueKind::kDataset:
      return "dataset";
    case ValueKind::kIterable:
      return "iterable";
  }
  return "value";
}

// ---- what the checker tells -------------------------------------------------

using SpanKey = std::tuple<int, int, int, int>;
using DeclKey = std::tuple<int, int, std::string>;

class Recorder : public interp::Observer {
 public:
  explicit Recorder(FileName file) : file_(file) {}

  void Evaluated(const lang::Expr& e, const interp::Value& v) override {
    if (e.span.file != file_) return;
    switch (e.kind) {
      case lang::ExprKind::kInt:
      case lang::ExprKind::kFloat:
      case lang::ExprKind::kString:
      case lang::ExprKind::kBool:
      case lang::ExprKind::kNone:
        return;  // a literal says what it is
      default:
        break;
    }
    const SpanKey key{e.span.line, e.span.col, e.span.end_line, e.span.end_col};
    if (seen_.insert(key).second) types_.push_back({e.span, TypeOf(v)});
  }

  void Bound(const std::string& name, const interp::Binding& b) override {
    if (b.span.file != file_) return;
    const DeclKey key{b.span.line, b.span.col, name};
    if (bound_.contains(key)) return;
    std::string extra;
    if (b.kind == interp::BindingKind::kVar ||
        b.kind == interp::BindingKind::kState) {
      std::vector<std::string> parts;
      if (b.kind == interp::BindingKind::kVar && b.value.is_tensor() &&
          IsFloating(b.value.tensor_dtype())) {
        parts.push_back("trainable");
      } else {
        parts.push_back("not trainable");
      }
      const Node* node = b.value.node();
      if (node != nullptr && !node->requested_device().empty()) {
        parts.push_back(node->requested_device());
      } else {
        parts.push_back("default device");
      }
      extra = absl::StrJoin(parts, ", ");
    }
    bound_.emplace(key, std::make_pair(TypeOf(b.value), extra));
  }

  std::vector<Typed> TakeTypes() {
    std::sort(types_.begin(), types_.end(), [](const Typed& a, const Typed& b) {
      return std::tie(a.span.line, a.span.col) <
             std::tie(b.span.line, b.span.col);
    });
    return std::move(types_);
  }
  std::vector<CheckResult::Bound> TakeBound() {
    std::vector<CheckResult::Bound> out;
    for (auto& [key, value] : bound_) {
      out.push_back({.line = std::get<0>(key),
                     .col = std::get<1>(key),
                     .name = std::get<2>(key),
                     .type = std::move(value.first),
                     .extra = std::move(value.second)});
    }
    return out;
  }

 private:
  FileName file_;
  std::vector<Typed> types_;
  absl::flat_hash_set<SpanKey> seen_;
  absl::flat_hash_map<DeclKey, std::pair<std::string, std::string>> bound_;
};

// ---- JSON, for the child's answer
// ---------------------------------------------

json SpanJson(const SourceSpan& s) {
  return {s.file.str(), s.line, s.col, s.end_line, s.end_col};
}
SourceSpan SpanOf(const json& j) {
  return {.file = FileName(j.at(0).get<std::string>()),
          .line = j.at(1).get<int>(),
          .col = j.at(2).get<int>(),
          .end_line = j.at(3).get<int>(),
          .end_col = j.at(4).get<int>()};
}

json DiagnosticJson(const lang::Diagnostic& d) {
  json notes = json::array();
  for (const lang::Diagnostic& n : d.notes) notes.push_back(DiagnosticJson(n));
  return {{"severity", static_cast<int>(d.severity)},
          {"message", d.message},
          {"span", SpanJson(d.span)},
          {"caret", d.caret_col},
          {"notes", notes}};
}
lang::Diagnostic DiagnosticOf(const json& j) {
  lang::Diagnostic d;
  d.severity = static_cast<lang::Severity>(
      std::clamp(j.at("severity").get<int>(), 0, 2));
  d.message = j.at("message").get<std::string>();
  d.span = SpanOf(j.at("span"));
  d.caret_col = j.at("caret").get<int>();
  for (const json& n : j.at("notes")) d.notes.push_back(DiagnosticOf(n));
  return d;
}

std::string ToJson(const CheckResult& r) {
  json diags = json::array(), types = json::array(), bound = json::array();
  for (const lang::Diagnostic& d : r.diagnostics) {
    diags.push_back(DiagnosticJson(d));
  }
  for (const Typed& t : r.types) {
    types.push_back(
        {t.span.line, t.span.col, t.span.end_line, t.span.end_col, t.type});
  }
  for (const CheckResult::Bound& b : r.bound) {
    bound.push_back({b.line, b.col, b.name, b.type, b.extra});
  }
  return json{{"diagnostics", diags}, {"types", types}, {"bound", bound}}.dump(
      -1, ' ', false, json::error_handler_t::replace);
}

CheckResult FromJson(const std::string& text, const std::string& path) {
  const json j = json::parse(text);
  CheckResult r;
  for (const json& d : j.at("diagnostics")) {
    r.diagnostics.push_back(DiagnosticOf(d));
  }
  const FileName file(path);
  for (const json& t : j.at("types")) {
    r.types.push_back({.span = {.file = file,
                                .line = t.at(0).get<int>(),
                                .col = t.at(1).get<int>(),
                                .end_line = t.at(2).get<int>(),
                                .end_col = t.at(3).get<int>()},
                       .type = t.at(4).get<std::string>()});
  }
  for (const json& b : j.at("bound")) {
    r.bound.push_back({.line = b.at(0).get<int>(),
                       .col = b.at(1).get<int>(),
                       .name = b.at(2).get<std::string>(),
                       .type = b.at(3).get<std::string>(),
                       .extra = b.at(4).get<std::string>()});
  }
  return r;
}

// The checker process running now (0: none), and whether checks are
// cancelled (CancelChecks).
std::mutex g_child_mu;
pid_t g_child = 0;
bool g_cancelled = false;

// The result of a check that did not finish: its reason, at line 1.
CheckResult Failed(const std::string& message) {
  CheckResult r;
  lang::Diagnostic d;
  d.message = message;
  r.diagnostics.push_back(std::move(d));
  return r;
}

}  // namespace

CheckResult CheckHere(const std::string& path, std::string text,
                      const std::string& stdlib_dir) {
  CheckResult result;
  Recorder recorder{FileName(path)};
  interp::Options io;
  io.check_mode = true;
  io.stdlib_dir = stdlib_dir;
  io.observer = &recorder;
  io.threads = 1;
  {
    lang::DiagnosticSink sink(&result.diagnostics);
    interp::Interpreter interp(io, &sink);
    interp.RunSource(path, std::move(text));
  }
  result.types = recorder.TakeTypes();
  result.bound = recorder.TakeBound();
  return result;
}

CheckResult CheckInChild(const std::string& runnel_exe, const std::string& path,
                         const std::string& text, double timeout_s) {
  int to_child[2], from_child[2];
  if (pipe2(to_child, O_CLOEXEC) != 0) {
    return Failed(StrCat("could not check: pipe: ", std::strerror(errno)));
  }
  if (pipe2(from_child, O_CLOEXEC) != 0) {
    close(to_child[0]);
    close(to_child[1]);
    return Failed(StrCat("could not check: pipe: ", std::strerror(errno)));
  }
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, to_child[0], 0);
  posix_spawn_file_actions_adddup2(&actions, from_child[1], 1);
  std::vector<std::string> args = {runnel_exe, "lsp", "--check-file", path};
  std::vector<char*> argv;
  for (std::string& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  pid_t pid = 0;
  int spawned = ECANCELED;
  {
    std::lock_guard<std::mutex> lock(g_child_mu);
    if (!g_cancelled) {
      spawned = posix_spawn(&pid, runnel_exe.c_str(), &actions, nullptr,
                            argv.data(), environ);
      if (spawned == 0) g_child = pid;
    }
  }
  posix_spawn_file_actions_destroy(&actions);
  close(to_child[0]);
  close(from_child[1]);
  if (spawned != 0) {
    close(to_child[1]);
    close(from_child[0]);
    return Failed(StrCat("could not start the checker ", runnel_exe, ": ",
                         std::strerror(spawned)));
  }
  // The child reads all its input before it writes: write, then read.
  for (size_t at = 0; at < text.size();) {
    const ssize_t n = write(to_child[1], text.data() + at, text.size() - at);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;  // it died; its status says how
    at += static_cast<size_t>(n);
  }
  close(to_child[1]);
  std::string out;
  const auto deadline = std::chrono::steady_clock::now() +
                        std::chrono::duration<double>(timeout_s);
  bool timed_out = false;
  while (true) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) {
      timed_out = true;
      break;
    }
    pollfd p{.fd = from_child[0], .events = POLLIN, .revents = 0};
    const int ready = poll(&p, 1, static_cast<int>(left.count()));
    if (ready < 0 && errno == EINTR) continue;
    if (ready <= 0) continue;  // the deadline is checked above
    char buf[1 << 16];
    const ssize_t n = read(from_child[0], buf, sizeof(buf));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    out.append(buf, static_cast<size_t>(n));
  }
  close(from_child[0]);
  if (timed_out) kill(pid, SIGKILL);
  int status = 0;
  {
    // Reaped under the lock, so CancelChecks never signals a reused pid.
    std::lock_guard<std::mutex> lock(g_child_mu);
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    g_child = 0;
  }
  if (timed_out) {
    return Failed(StrCat(
        "checking stopped after ", timeout_s,
        " s (a host loop that does not end?): no diagnostics or types beyond "
        "the syntax until it finishes in time"));
  }
  if (WIFSIGNALED(status)) {
    return Failed(StrCat("the checker crashed (signal ", WTERMSIG(status),
                         ") on this text: a bug in runnel; `runnel check ",
                         path, "` shows it"));
  }
  try {
    return FromJson(out, path);
  } catch (const std::exception& e) {
    return Failed(StrCat("the checker's answer could not be read (exit status ",
                         WIFEXITED(status) ? WEXITSTATUS(status) : -1,
                         "): ", e.what()));
  }
}

void CancelChecks() {
  std::lock_guard<std::mutex> lock(g_child_mu);
  g_cancelled = true;
  if (g_child != 0) kill(g_child, SIGKILL);
}

int CheckFileMain(const std::string& path) {
  std::string text(std::istreambuf_iterator<char>(std::cin), {});
  std::string out;
  interp::LargeStackThread thread(
      [&] { out = ToJson(CheckHere(path, std::move(text), "")); });
  thread.Join();
  std::fwrite(out.data(), 1, out.size(), stdout);
  std::fflush(stdout);
  return 0;
}

}  // namespace runnel::lsp
