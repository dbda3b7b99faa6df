// The interactive REPL (docs/language.md §8).
//
// On a terminal, lines are read with libedit (histedit.h): emacs key
// bindings, history in $RUNNEL_HISTORY or ~/.runnel_history, and tab
// completion of names in scope, builtins and module members. Characters
// come through our own read function (EL_GETCFN), so a Ctrl-C while typing
// makes el_gets return an error at once and the line is abandoned. While a
// statement runs, Ctrl-C calls Interpreter::Interrupt(), which the next loop
// iteration or `run` notices. When stdin is not a terminal, lines are read
// plainly (no prompts), so input can be piped.
#include "cli/repl.h"

#include <histedit.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <cerrno>
#include <climits>
#include <clocale>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <cwchar>
#include <iostream>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "base/read_file.h"
#include "base/strings.h"
#include "cli/def_help.h"
#include "cli/graph_dot.h"
#include "cli/op_catalog.h"
#include "cli/plot.h"
#include "cli/render.h"
#include "lang/ast.h"
#include "lang/keywords.h"
#include "lang/parser.h"
#include "lang/source.h"

namespace runnel::cli {
namespace {

constexpr char kHelp[] =
    "Type a statement to run it; an expression prints its value.\n"
    "Unfinished input continues on '...' lines.\n"
    "  :help        this text\n"
    "  :help NAME   a builtin's parameters and defaults and the doc of the\n"
    "               ops it applies (or an op's; docs/ops.md has them all);\n"
    "               a stdlib function's signature and doc (:help nn.dense)\n"
    "  :vars        the names defined in this session\n"
    "  :devices     the devices runs are placed on (docs/devices.md)\n"
    "  :graph [OUT] draw the graph built so far (OUT.svg, OUT.png; a file in\n"
    "               a temporary directory without OUT) and print its path;\n"
    "               options as for `runnel graph`: --expand SCOPE, --depth N,\n"
    "               --all. `:graph dot` prints the DOT text, `:graph list`\n"
    "               the nodes\n"
    "  :plot LOG... draw the curves of metrics logs (--metrics) with gnuplot\n"
    "               and print the picture's path; -o OUT names it\n"
    "  :load FILE   run FILE in this session\n"
    "  :reset       start over with a fresh graph and session\n"
    "  :quit        leave (or Ctrl-D on an empty line)\n"
    "Ctrl-C abandons the current input, or interrupts a running statement.\n";

std::atomic<bool> g_sigint{false};
std::atomic<interp::Interpreter*> g_running{nullptr};

extern "C" void OnSigint(int) {
  g_sigint.store(true);
  if (interp::Interpreter* interp = g_running.load()) interp->Interrupt();
}

// `:help NAME` for a function written in Runnel: `nn.dense` (a member of a
// module, imported or not) or a function the session defined; its header
// and doc comment, read from its file.
std::optional<std::string> FunctionHelp(interp::Interpreter& interp,
                                        const std::string& name) {
  std::string file;
  std::string function = name;
  if (size_t dot = name.find('.'); dot != std::string::npos) {
    const std::string module = name.substr(0, dot);
    function = name.substr(dot + 1);
    const interp::Binding* bound = interp.globals().FindLocal(module);
    if (bound != nullptr && bound->value.kind() == interp::ValueKind::kModule) {
      file = bound->value.module()->path;
    } else {
      lang::ImportStmt stmt;
      stmt.module = module;
      file = interp.modules().ResolveImport(stmt, "");
    }
  } else if (const interp::Binding* bound = interp.globals().FindLocal(name);
             bound != nullptr &&
             bound->value.kind() == interp::ValueKind::kFunction &&
             bound->value.function()->def != nullptr) {
    file = bound->value.function()->span.file.str();
  }
  if (file.empty() || function.empty() || function[0] == '_') {
    return std::nullopt;
  }
  absl::StatusOr<std::string> source = ReadFileToString(file);
  if (!source.ok()) return std::nullopt;
  return DefHelp(*source, function, file);
}

// One interpreter with its diagnostics sink.
struct Session {
  explicit Session(const interp::Options& options)
      : sink(stderr), interp(options, &sink) {}
  lang::DiagnosticSink sink;
  interp::Interpreter interp;
};

class Repl {
 public:
  explicit Repl(const interp::Options& options) : options_(options) {
    session_ = std::make_unique<Session>(options_);
  }

  // Evaluates one complete input; `name` is the source name diagnostics use.
  void Eval(const std::string& text) {
    const std::string name = StrCat("<stdin:", ++inputs_, ">");
    auto src = std::make_shared<lang::SourceFile>(name, text);
    interp::Interpreter& interp = session_->interp;
    interp.sink().AddSource(src);
    lang::ParseResult parsed = lang::Parse(*src);
    if (!parsed.errors.empty()) {
      for (const lang::Diagnostic& d : parsed.errors) interp.sink().Report(d);
      return;
    }
    std::shared_ptr<const lang::Program> program = std::move(parsed.program);
    bool print = false;
    if (!program->stmts.empty()) {
      const lang::Stmt& last = *program->stmts.back();
      if (last.kind == lang::StmtKind::kExpr) {
        const auto& es = static_cast<const lang::ExprStmt&>(last);
        print = es.expr && es.expr->kind != lang::ExprKind::kAssign;
      }
    }
    interp.ClearInterrupt();
    g_sigint.store(false);
    g_running.store(&interp);
    absl::StatusOr<interp::Value> v = interp.Evaluate(program);
    g_running.store(nullptr);
    const bool interrupted = g_sigint.exchange(false);
    interp.ClearInterrupt();
    std::fflush(stdout);
    if (!v.ok()) {
      interp.Report(v.status());
    } else if (print && !v->is_none()) {
      std::string s = interp::FormatValue(*v, true);
      std::printf("%s\n", s.c_str());
    }
    if (interrupted && v.ok()) std::fputs("interrupted\n", stderr);
    std::fflush(stdout);
    std::fflush(stderr);
  }

  // Runs a `:command`; false for :quit.
  bool Command(const std::string& line) {
    std::string cmd = line, arg;
    size_t sp = line.find_first_of(" \t");
    if (sp != std::string::npos) {
      cmd = line.substr(0, sp);
      size_t a = line.find_first_not_of(" \t", sp);
      size_t b = line.find_last_not_of(" \t\r\n");
      if (a != std::string::npos) arg = line.substr(a, b - a + 1);
    }
    interp::Interpreter& interp = session_->interp;
    if (cmd == ":quit" || cmd == ":q" || cmd == ":exit") return false;
    if ((cmd == ":help" || cmd == ":h" || cmd == ":?") && arg.empty()) {
      std::fputs(kHelp, stdout);
    } else if (cmd == ":help" || cmd == ":h" || cmd == ":?") {
      if (std::optional<std::string> help = HelpText(arg)) {
        std::fputs(help->c_str(), stdout);
      } else if (std::optional<std::string> def = FunctionHelp(interp, arg)) {
        std::fputs(def->c_str(), stdout);
      } else {
        std::fprintf(stderr, "no builtin, op or function named '%s'\n",
                     arg.c_str());
      }
    } else if (cmd == ":vars") {
      const std::vector<std::string> names = interp.globals().Names();
      if (names.empty()) std::puts("(no names defined)");
      for (const std::string& name : names) {
        const interp::Binding& binding = *interp.globals().FindLocal(name);
        std::string shown = interp::FormatValue(binding.value, true);
        if (shown.size() > 60) shown = shown.substr(0, 57) + "...";
        if (shown.find('\n') != std::string::npos) {
          shown = shown.substr(0, shown.find('\n')) + " ...";
        }
        std::printf("%s: %s = %s\n", name.c_str(),
                    interp::DescribeValue(binding.value).c_str(),
                    shown.c_str());
      }
    } else if (cmd == ":devices") {
      const DeviceSet& devices = interp.host().session().devices();
      for (int i = 0; i < devices.size(); ++i) {
        const Device& d = *devices.device(i);
        if (!devices.is_local(i)) {
          std::printf("%s  on another task\n", d.name().c_str());
          continue;
        }
        if (d.intra_op_pool() == nullptr) {  // a GPU
          std::printf("%s  %s, %s\n", DeviceSet::ShortName(d.name()).c_str(),
                      d.name().c_str(), d.Describe().c_str());
          continue;
        }
        std::printf("%s  %s, %d intra-op threads\n",
                    DeviceSet::ShortName(d.name()).c_str(), d.name().c_str(),
                    d.intra_op_pool()->num_threads());
      }
      if (!devices.gpu_note().empty()) {
        std::printf("no GPU: %s\n", devices.gpu_note().c_str());
      }
    } else if (cmd == ":graph") {
      DrawGraph(interp.graph(), Words(arg));
    } else if (cmd == ":plot") {
      DrawPlot(Words(arg));
    } else if (cmd == ":load") {
      if (arg.empty()) {
        std::fputs(":load needs a FILE\n", stderr);
      } else {
        g_sigint.store(false);
        g_running.store(&interp);
        interp.RunFile(arg);
        g_running.store(nullptr);
        if (g_sigint.exchange(false)) std::fputs("interrupted\n", stderr);
        interp.ClearInterrupt();
      }
    } else if (cmd == ":reset") {
      session_.reset();
      session_ = std::make_unique<Session>(options_);
      std::puts("a fresh graph and session");
    } else {
      std::fprintf(stderr, "unknown command '%s' (see :help)\n", cmd.c_str());
    }
    std::fflush(stdout);
    std::fflush(stderr);
    return true;
  }

  // `:graph [dot|list] [OUT] [--expand SCOPE]... [--depth N] [--all]`.
  void DrawGraph(const Graph& graph, const std::vector<std::string>& words) {
    GraphView view;
    std::string out, mode;
    for (size_t i = 0; i < words.size(); ++i) {
      auto take = [&](std::string* value) {
        if (i + 1 >= words.size()) return false;
        *value = words[++i];
        return true;
      };
      std::string error;
      if (TakeGraphViewOption(words[i], take, &view, &error)) {
        if (!error.empty()) return Fail(error);
      } else if (words[i] == "dot" || words[i] == "list") {
        mode = words[i];
      } else if (words[i][0] == '-' || !out.empty()) {
        return Fail(StrCat(":graph: unexpected '", words[i], "' (see :help)"));
      } else {
        out = words[i];
      }
    }
    if (mode == "list") {
      std::printf("%d nodes\n", graph.num_nodes());
      for (Node* n : graph.nodes()) {
        std::printf("  %s = %s\n", n->name().c_str(), n->op().c_str());
      }
      return;
    }
    absl::StatusOr<std::string> dot = GraphToDot(graph, view);
    if (!dot.ok()) return Fail(std::string(dot.status().message()));
    if (mode == "dot") {
      std::fputs(dot->c_str(), stdout);
      return;
    }
    if (out.empty() && !ScratchFile("graph.svg", &out)) return;
    Written(WriteDot(*dot, out), out);
  }

  // `:plot LOG... [-o OUT]`.
  void DrawPlot(const std::vector<std::string>& words) {
    std::vector<std::string> logs;
    std::string out;
    for (size_t i = 0; i < words.size(); ++i) {
      if (words[i] == "-o" && i + 1 < words.size()) {
        out = words[++i];
      } else if (words[i][0] == '-') {
        return Fail(StrCat(":plot: unexpected '", words[i], "' (see :help)"));
      } else {
        logs.push_back(words[i]);
      }
    }
    if (logs.empty()) return Fail(":plot needs a metrics FILE");
    if (out.empty() && !ScratchFile("curves.svg", &out)) return;
    Written(WritePlot(logs, out), out);
  }

  static void Fail(const std::string& message) {
    std::fprintf(stderr, "%s\n", message.c_str());
  }

  static void Written(const absl::Status& status, const std::string& out) {
    if (status.ok()) {
      std::printf("wrote %s\n", out.c_str());
    } else {
      Fail(std::string(status.message()));
    }
  }

  // `name` in this session's temporary directory (made on first use).
  bool ScratchFile(const std::string& name, std::string* path) {
    if (scratch_.empty()) {
      const char* tmp = std::getenv("TMPDIR");
      std::string dir =
          StrCat(tmp != nullptr && *tmp ? tmp : "/tmp", "/runnel-XXXXXX");
      if (mkdtemp(dir.data()) == nullptr) {
        Fail(StrCat("cannot create a temporary directory: ",
                    std::strerror(errno)));
        return false;
      }
      scratch_ = dir;
    }
    *path = scratch_ + "/" + name;
    return true;
  }

  static std::vector<std::string> Words(const std::string& text) {
    std::vector<std::string> words;
    size_t i = 0;
    while (true) {
      i = text.find_first_not_of(" \t", i);
      if (i == std::string::npos) break;
      size_t j = text.find_first_of(" \t", i);
      words.push_back(text.substr(i, j - i));
      i = j;
    }
    return words;
  }

  // The completions of `word` (which may be `module.prefix`).
  std::vector<std::string> Complete(const std::string& word) {
    std::set<std::string> out;
    interp::Interpreter& interp = session_->interp;
    size_t dot = word.rfind('.');
    if (dot != std::string::npos) {
      const std::string base = word.substr(0, dot);
      const std::string prefix = word.substr(dot + 1);
      interp::Binding* b = interp.globals().Find(base);
      if (b && b->value.kind() == interp::ValueKind::kModule) {
        const auto& m = b->value.module();
        if (m && m->env) {
          for (const std::string& name : m->env->Names()) {
            if (name.rfind(prefix, 0) == 0) out.insert(base + "." + name);
          }
        }
      }
    } else {
      std::vector<std::string> names;
      interp.globals().CollectNames(&names);
      for (const std::string& n : interp::Interpreter::BuiltinNames()) {
        names.push_back(n);
      }
      for (std::string_view k : lang::kKeywords) names.emplace_back(k);
      for (const std::string& n : names) {
        if (n.rfind(word, 0) == 0) out.insert(n);
      }
    }
    return {out.begin(), out.end()};
  }

  const interp::Options& options() const { return options_; }

 private:
  interp::Options options_;
  std::unique_ptr<Session> session_;
  int inputs_ = 0;
  std::string scratch_;  // the temporary directory for pictures
};

bool IsBlank(const std::string& s) {
  return s.find_first_not_of(" \t\r\n") == std::string::npos;
}

std::string Trim(const std::string& s) {
  size_t a = s.find_first_not_of(" \t\r\n");
  if (a == std::string::npos) return "";
  size_t b = s.find_last_not_of(" \t\r\n");
  return s.substr(a, b - a + 1);
}

// ---- the terminal: libedit ---------------------------------------------

Repl* g_repl = nullptr;
const char* g_prompt = ">>> ";

char* PromptFn(EditLine*) { return const_cast<char*>(g_prompt); }

// Reads one character; -1 (an error for el_gets) on Ctrl-C.
int GetChar(EditLine*, wchar_t* wc) {
  static mbstate_t state;
  while (true) {
    if (g_sigint.load()) return -1;
    char c;
    ssize_t n = read(STDIN_FILENO, &c, 1);
    if (n == 0) return 0;
    if (n < 0) {
      if (errno == EINTR) continue;  // g_sigint is checked above
      return -1;
    }
    wchar_t w;
    size_t r = std::mbrtowc(&w, &c, 1, &state);
    if (r == static_cast<size_t>(-2)) continue;  // partial UTF-8
    if (r == static_cast<size_t>(-1)) {
      state = mbstate_t{};
      w = static_cast<unsigned char>(c);
    }
    *wc = w;
    return 1;
  }
}

bool IsWordChar(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '.';
}

unsigned char CompleteFn(EditLine* el, int) {
  const LineInfo* li = el_line(el);
  const char* p = li->cursor;
  while (p > li->buffer && IsWordChar(p[-1])) --p;
  std::string word(p, li->cursor);
  if (word.empty() || !g_repl) return CC_ERROR;
  std::vector<std::string> matches = g_repl->Complete(word);
  if (matches.empty()) return CC_ERROR;
  // The longest common prefix.
  std::string common = matches[0];
  for (const std::string& m : matches) {
    size_t i = 0;
    while (i < common.size() && i < m.size() && common[i] == m[i]) ++i;
    common.resize(i);
  }
  if (common.size() > word.size()) {
    std::string rest = common.substr(word.size());
    el_insertstr(el, rest.c_str());
    return CC_REFRESH;
  }
  if (matches.size() == 1) return CC_REFRESH;
  std::string list = "\n";
  for (const std::string& m : matches) list += m + "  ";
  list += "\n";
  std::fputs(list.c_str(), stdout);
  std::fflush(stdout);
  return CC_REDISPLAY;
}

std::string HistoryPath() {
  if (const char* h = std::getenv("RUNNEL_HISTORY")) {
    if (*h) return h;
  }
  if (const char* home = std::getenv("HOME")) {
    if (*home) return StrCat(home, "/.runnel_history");
  }
  return "";
}

int RunTerminal(Repl& repl, const char* argv0) {
  g_repl = &repl;
  HistEvent ev;
  History* hist = history_init();
  history(hist, &ev, H_SETSIZE, 1000);
  history(hist, &ev, H_SETUNIQUE, 1);
  const std::string hist_path = HistoryPath();
  if (!hist_path.empty()) history(hist, &ev, H_LOAD, hist_path.c_str());

  EditLine* el = el_init(argv0, stdin, stdout, stderr);
  el_set(el, EL_EDITOR, "emacs");
  el_set(el, EL_SIGNAL, 0);
  el_set(el, EL_PROMPT, PromptFn);
  el_set(el, EL_HIST, history, hist);
  el_set(el, EL_GETCFN, GetChar);
  el_set(el, EL_ADDFN, "runnel-complete", "complete a name", CompleteFn);
  el_set(el, EL_BIND, "^I", "runnel-complete", nullptr);

  int status = interp::kExitOk;
  std::string pending;
  while (true) {
    g_prompt = pending.empty() ? ">>> " : "... ";
    g_sigint.store(false);
    int count = 0;
    const char* line = el_gets(el, &count);
    if (g_sigint.exchange(false)) {
      // Ctrl-C while typing: abandon the input.
      std::fputs("^C\n", stdout);
      std::fflush(stdout);
      pending.clear();
      continue;
    }
    if (line == nullptr || count <= 0) {
      if (!pending.empty()) {
        // Ctrl-D inside a statement: drop it.
        std::fputs("\n", stdout);
        pending.clear();
        continue;
      }
      std::fputs("\n", stdout);
      break;
    }
    std::string text(line, count);
    if (pending.empty() && IsBlank(text)) continue;
    if (pending.empty() && Trim(text).rfind(':', 0) == 0) {
      history(hist, &ev, H_ENTER, Trim(text).c_str());
      if (!hist_path.empty()) history(hist, &ev, H_SAVE, hist_path.c_str());
      if (!repl.Command(Trim(text))) break;
      continue;
    }
    pending += text;
    if (!pending.empty() && pending.back() != '\n') pending += '\n';
    if (lang::IsIncomplete(pending)) continue;
    std::string entry = pending;
    while (!entry.empty() && entry.back() == '\n') entry.pop_back();
    history(hist, &ev, H_ENTER, entry.c_str());
    if (!hist_path.empty()) history(hist, &ev, H_SAVE, hist_path.c_str());
    std::string input = std::move(pending);
    pending.clear();
    repl.Eval(input);
  }
  if (!hist_path.empty()) history(hist, &ev, H_SAVE, hist_path.c_str());
  el_end(el);
  history_end(hist);
  g_repl = nullptr;
  return status;
}

// ---- piped input ---------------------------------------------------------

int RunPiped(Repl& repl) {
  std::string pending, line;
  while (std::getline(std::cin, line)) {
    if (pending.empty() && IsBlank(line)) continue;
    if (pending.empty() && Trim(line).rfind(':', 0) == 0) {
      if (!repl.Command(Trim(line))) return interp::kExitOk;
      continue;
    }
    pending += line + "\n";
    if (lang::IsIncomplete(pending)) continue;
    std::string input = std::move(pending);
    pending.clear();
    repl.Eval(input);
  }
  if (!IsBlank(pending)) repl.Eval(pending);
  return interp::kExitOk;
}

int RunReplHere(const interp::Options& options) {
  struct sigaction sa;
  std::memset(&sa, 0, sizeof sa);
  sa.sa_handler = OnSigint;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = 0;  // no SA_RESTART: a read returns EINTR
  struct sigaction old;
  sigaction(SIGINT, &sa, &old);
  std::setlocale(LC_CTYPE, "");
  Repl repl(options);
  int status;
  if (isatty(STDIN_FILENO)) {
    std::puts("Runnel. Type :help for help, Ctrl-D to leave.");
    std::fflush(stdout);
    status = RunTerminal(repl, "runnel");
  } else {
    status = RunPiped(repl);
  }
  sigaction(SIGINT, &old, nullptr);
  return status;
}

}  // namespace

// The REPL runs on a thread with a large stack, as `runnel run` does, so
// deep recursion meets the interpreter's depth limit rather than the
// stack's end. SIGINT is blocked on the waiting main thread so that it
// reaches the REPL's thread (and interrupts its read).
int RunRepl(const interp::Options& options) {
  struct Call {
    const interp::Options* options;
    int status = interp::kExitError;
  } call{&options};
  pthread_attr_t attr;
  pthread_attr_init(&attr);
  pthread_attr_setstacksize(&attr, size_t{1} << 30);
  pthread_t thread;
  auto body = [](void* p) -> void* {
    auto* c = static_cast<Call*>(p);
    c->status = RunReplHere(*c->options);
    return nullptr;
  };
  if (pthread_create(&thread, &attr, body, &call) != 0) {
    pthread_attr_destroy(&attr);
    return RunReplHere(options);
  }
  pthread_attr_destroy(&attr);
  sigset_t block, old;
  sigemptyset(&block);
  sigaddset(&block, SIGINT);
  pthread_sigmask(SIG_BLOCK, &block, &old);
  pthread_join(thread, nullptr);
  pthread_sigmask(SIG_SETMASK, &old, nullptr);
  return call.status;
}
}  // namespace runnel::cli
