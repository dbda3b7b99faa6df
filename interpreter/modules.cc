// Scripts and modules: parsing files (all syntax errors before anything
// runs), `import NAME` from the standard library and `import "file" as x`.
#include <algorithm>
#include <condition_variable>
#include <cstdlib>
#include <filesystem>
#include <mutex>
#include <thread>
#include <utility>

#include "absl/strings/str_join.h"
#include "base/status_macros.h"
#include "base/strings.h"
#include "interpreter/diag.h"
#include "interpreter/interpreter.h"
#include "interpreter/large_stack.h"
#include "interpreter/restore.h"
#include "interpreter/summaries.h"
#include "lang/ast_walk.h"
#include "lang/parser.h"

namespace runnel::interp {

namespace fs = std::filesystem;

int Interpreter::RunSource(const std::string& path, std::string text) {
  auto src = std::make_shared<lang::SourceFile>(path, std::move(text));
  sink_->AddSource(src);
  // Only checking evaluates statements while the rest is parsed: a run
  // must not start when a line further down has a syntax error.
  Streamed streamed;
  lang::ParseResult parsed = options_.check_mode
                                 ? ParseWhileEvaluating(*src, &streamed)
                                 : lang::Parse(*src);
  if (!parsed.errors.empty()) {
    for (const lang::Diagnostic& d : parsed.errors) sink_->Report(d);
    return kExitUsage;
  }
  std::shared_ptr<const lang::Program> program = std::move(parsed.program);
  bool parse_errors = false;
  modules_.PreloadImports(*program, path, &parse_errors);
  if (parse_errors) return kExitUsage;
  if (absl::Status args = modules_.CheckArgsRead(*program); !args.ok()) {
    lang::Diagnostic d;
    d.message = std::string(ToStd(args.message()));
    sink_->Report(d);
    return kExitUsage;
  }
  if (!options_.metrics_file.empty()) {
    absl::Status s = reporter_->OpenMetrics(options_.metrics_file);
    if (!s.ok()) {
      lang::Diagnostic d;
      d.message = std::string(ToStd(s.message()));
      sink_->Report(d);
      return kExitUsage;
    }
  }
  if (!options_.logdir.empty() && !options_.check_mode) {
    absl::StatusOr<std::unique_ptr<Summaries>> s = Summaries::Open(options_);
    if (!s.ok()) {
      lang::Diagnostic d;
      d.message = std::string(ToStd(s.status().message()));
      sink_->Report(d);
      return kExitUsage;
    }
    summaries_ = *std::move(s);
  }
  if (streamed.stopped) {
    modules_.Keep(program);  // functions point into it
    return Report(streamed.status);
  }
  // Free the parser's tree and tokens on another thread while the program
  // runs: for a large script that takes a while. (Checking kept them.)
  std::thread free_parse_tree;
  if (parsed.parse_tree != nullptr) {
    free_parse_tree = std::thread(
        [tree = std::move(parsed.parse_tree)]() mutable { tree.reset(); });
  }
  absl::StatusOr<Value> v = Evaluate(program, streamed.done);
  if (free_parse_tree.joinable()) free_parse_tree.join();
  // The script is over (or failed): its runners stop. A runner's own error
  // is reported when nothing else was.
  absl::Status runners = host_->StopRunners();
  if (!v.ok()) return Report(v.status());
  return Report(runners);
}

// Both cores at work: the parser on a thread of its own, and this one
// evaluating each top-level statement as soon as it is parsed. Checking has
// no effects outside the interpreter (no output, no files, no runs), so the
// order of errors is all that could tell, and it stays as if the whole
// script were parsed first:
// - A syntax error anywhere voids what was evaluated: the caller reports
//   the syntax errors alone.
// - Evaluation pauses, for the caller to go on, at the first statement that
//   imports: imported files are parsed, and their syntax errors reported,
//   before anything runs.
// - An error, or a `return` at the top level, ends evaluation; the caller
//   reports the error once the parse has succeeded.
lang::ParseResult Interpreter::ParseWhileEvaluating(const lang::SourceFile& src,
                                                    Streamed* streamed) {
  std::mutex mu;
  std::condition_variable parsed_more;
  std::vector<const lang::Stmt*> queue;  // guarded by mu
  bool paused = false;                   // guarded by mu
  bool done = false;                     // guarded by mu
  lang::ParseResult result;
  LargeStackThread parser([&] {
    result = lang::Parse(src, [&](const lang::Stmt& stmt, bool imports) {
      std::lock_guard<std::mutex> lock(mu);
      paused = paused || imports;
      if (paused) return;
      queue.push_back(&stmt);
      parsed_more.notify_one();
    });
    std::lock_guard<std::mutex> lock(mu);
    done = true;
    parsed_more.notify_one();
  });

  std::shared_ptr<Env> outer = std::exchange(env_, globals_);
  signal_ = Signal::kNone;
  std::vector<const lang::Stmt*> batch;
  while (!streamed->stopped) {
    {
      std::unique_lock<std::mutex> lock(mu);
      parsed_more.wait(lock, [&] { return !queue.empty() || done; });
      if (queue.empty()) break;
      batch.swap(queue);
    }
    for (const lang::Stmt* stmt : batch) {
      Value ignored;
      absl::Status s = Exec(*stmt, &ignored);
      if (!s.ok() || signal_ != Signal::kNone) {
        streamed->status = std::move(s);
        streamed->stopped = true;
        break;
      }
      ++streamed->done;
    }
    batch.clear();
  }
  signal_ = Signal::kNone;
  env_ = std::move(outer);
  parser.Join();
  // Functions evaluated above point into the statements, which the tree
  // keeps when the parse failed; and freeing it would take a while.
  modules_.KeepParseTree(std::move(result.parse_tree));
  return result;
}

absl::Status Interpreter::ExecImport(const lang::ImportStmt& s) {
  RN_ASSIGN_OR_RETURN(std::shared_ptr<Module> module, LoadModule(s));
  const std::string alias = s.alias.empty() ? s.module : s.alias;
  Define(*env_, alias,
         Binding{Value::OfModule(module), BindingKind::kImport, s.span});
  return absl::OkStatus();
}

absl::StatusOr<Value> Interpreter::StdlibMember(const std::string& module,
                                                const std::string& name,
                                                const SourceSpan& span) {
  lang::ImportStmt s;
  s.module = module;
  s.span = span;
  RN_ASSIGN_OR_RETURN(std::shared_ptr<Module> m, LoadModule(s));
  Binding* b = m->env->FindLocal(name);
  if (b == nullptr) {
    return ErrorAt(span, StrCat("module ", module, " has no '", name, "'"));
  }
  return b->value;
}

absl::StatusOr<std::shared_ptr<Module>> Interpreter::LoadModule(
    const lang::ImportStmt& s) {
  const std::string path = modules_.ResolveImport(s, s.span.file);
  const std::string alias = s.alias.empty() ? s.module : s.alias;
  std::shared_ptr<Module> module = modules_.FindModule(path);
  if (module != nullptr) {
    if (module->loading) {
      return ErrorAt(s.span, StrCat("import cycle: '", path,
                                    "' is imported while it is being "
                                    "loaded"));
    }
  } else {
    bool parse_errors = false;
    absl::StatusOr<std::shared_ptr<const lang::Program>> program =
        modules_.ParseFile(path, &parse_errors);
    if (parse_errors) return ExitRequest(kExitUsage);
    if (!program.ok()) {
      if (!s.module.empty()) {
        return ErrorAt(s.span, StrCat("no module named '", s.module,
                                      "' (looked for ", path, ")"));
      }
      return ErrorAt(s.span, StrCat("cannot import \"", s.path,
                                    "\": ", ToStd(program.status().message())));
    }
    modules_.Keep(*program);
    module = std::make_shared<Module>();
    module->name = alias;
    module->path = path;
    module->env = std::make_shared<Env>(builtins_, true);
    modules_.AddModule(path, module);
    // A module runs at the top level of its own: its own names, no
    // enclosing device or `after` block, nodes under a scope named after it.
    Value ignored;
    absl::Status st;
    {
      BuildScope top = builder_.Replace();
      BuildScope scope = builder_.OpenScope(fs::path(path).stem().string(),
                                            /*unique=*/false);
      Restore<std::shared_ptr<Env>> env(&env_, module->env);
      Restore<int> loops(&loop_depth_, 0);
      Restore<int> functions(&function_depth_, 0);
      st = ExecStmts((*program)->stmts, &ignored);
      signal_ = Signal::kNone;
    }
    module->loading = false;
    if (!st.ok()) {
      modules_.ForgetModule(path);
      return AddNote(st, s.span, StrCat("in the module imported here"));
    }
  }
  return module;
}

}  // namespace runnel::interp
