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
#include "lang/ast_walk.h"
#include "lang/parser.h"

#ifndef RUNNEL_STDLIB_DIR
#define RUNNEL_STDLIB_DIR "stdlib"
#endif

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
  PreloadImports(*program, path, &parse_errors);
  if (parse_errors) return kExitUsage;
  if (absl::Status args = CheckArgsRead(*program); !args.ok()) {
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
  if (streamed.stopped) {
    kept_.push_back(program);  // functions point into it
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
  absl::Status runners = StopRunners();
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
  kept_parse_trees_.push_back(std::move(result.parse_tree));
  return result;
}

std::string Interpreter::StdlibDir() const {
  if (!options_.stdlib_dir.empty()) return options_.stdlib_dir;
  if (const char* env = std::getenv("RUNNEL_STDLIB_PATH")) {
    if (*env != '\0') return env;
  }
  return RUNNEL_STDLIB_DIR;
}

std::string Interpreter::ResolveImport(const lang::ImportStmt& s,
                                       const std::string& file) const {
  if (!s.path.empty()) {
    fs::path p(s.path);
    if (p.is_relative()) p = fs::path(file).parent_path() / p;
    return p.lexically_normal().string();
  }
  // $RUNNEL_STDLIB_PATH may list several directories, ':'-separated.
  const std::string dirs = StdlibDir();
  size_t start = 0;
  std::string first;
  while (true) {
    size_t colon = dirs.find(':', start);
    std::string dir = dirs.substr(
        start, colon == std::string::npos ? std::string::npos : colon - start);
    if (!dir.empty()) {
      fs::path p = fs::path(dir) / (s.module + ".rnl");
      std::string candidate = p.lexically_normal().string();
      if (first.empty()) first = candidate;
      std::error_code ec;
      if (fs::exists(p, ec)) return candidate;
    }
    if (colon == std::string::npos) break;
    start = colon + 1;
  }
  return first;
}

absl::StatusOr<std::shared_ptr<const lang::Program>> Interpreter::ParseFile(
    const std::string& path, bool* parse_errors) {
  auto it = programs_.find(path);
  if (it != programs_.end()) return it->second;
  absl::StatusOr<std::shared_ptr<lang::SourceFile>> src =
      lang::SourceFile::Read(path);
  if (!src.ok()) return src.status();
  sink_->AddSource(*src);
  lang::ParseResult parsed = lang::Parse(**src);
  if (!parsed.errors.empty()) {
    for (const lang::Diagnostic& d : parsed.errors) sink_->Report(d);
    *parse_errors = true;
    return absl::InvalidArgumentError("parse errors");
  }
  std::shared_ptr<const lang::Program> program = std::move(parsed.program);
  programs_[path] = program;
  PreloadImports(*program, path, parse_errors);
  return program;
}

void Interpreter::PreloadImports(const lang::Program& program,
                                 const std::string& file, bool* parse_errors) {
  for (const lang::StmtPtr& s : program.stmts) {
    if (s->kind != lang::StmtKind::kImport) continue;
    const auto& imp = static_cast<const lang::ImportStmt&>(*s);
    const std::string path = ResolveImport(imp, file);
    if (programs_.count(path)) continue;
    std::error_code ec;
    if (!fs::exists(path, ec)) continue;  // reported when the import runs
    (void)ParseFile(path, parse_errors);
  }
}

absl::Status Interpreter::CheckArgsRead(const lang::Program& program) const {
  if (options_.args.empty()) return absl::OkStatus();
  std::vector<std::string> read;
  bool dynamic = false;
  auto collect = [&](const lang::Expr& e) {
    if (e.kind != lang::ExprKind::kCall) return;
    const auto& call = static_cast<const lang::CallExpr&>(e);
    if (call.callee->kind != lang::ExprKind::kName ||
        static_cast<const lang::NameExpr&>(*call.callee).name != "arg" ||
        call.args.empty()) {
      return;
    }
    const lang::Expr& name = *call.args[0].value;
    if (name.kind == lang::ExprKind::kString) {
      read.push_back(static_cast<const lang::StringExpr&>(name).value);
    } else {
      dynamic = true;
    }
  };
  lang::WalkExprs(program, collect);
  for (const auto& [path, module] : programs_)
    lang::WalkExprs(*module, collect);
  if (dynamic) return absl::OkStatus();
  for (const auto& [name, value] : options_.args) {
    if (std::find(read.begin(), read.end(), name) != read.end()) continue;
    std::string message = StrCat("--arg ", name, "=", value,
                                 ": the script reads no arg('", name, "')");
    if (std::string best = ClosestName(name, read); !best.empty()) {
      message += StrCat("; did you mean '", best, "'?");
    } else if (read.empty()) {
      message += "; it reads no --arg at all";
    } else {
      std::sort(read.begin(), read.end());
      read.erase(std::unique(read.begin(), read.end()), read.end());
      message += StrCat("; it reads ", absl::StrJoin(read, ", "));
    }
    return absl::InvalidArgumentError(message);
  }
  return absl::OkStatus();
}

absl::Status Interpreter::ExecImport(const lang::ImportStmt& s) {
  RN_ASSIGN_OR_RETURN(std::shared_ptr<Module> module, LoadModule(s));
  const std::string alias = s.alias.empty() ? s.module : s.alias;
  env_->Define(alias,
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
  const std::string path = ResolveImport(s, s.span.file);
  const std::string alias = s.alias.empty() ? s.module : s.alias;
  auto found = modules_.find(path);
  std::shared_ptr<Module> module;
  if (found != modules_.end()) {
    module = found->second;
    if (module->loading) {
      return ErrorAt(s.span, StrCat("import cycle: '", path,
                                    "' is imported while it is being "
                                    "loaded"));
    }
  } else {
    bool parse_errors = false;
    absl::StatusOr<std::shared_ptr<const lang::Program>> program =
        ParseFile(path, &parse_errors);
    if (parse_errors) return ExitRequest(kExitUsage);
    if (!program.ok()) {
      if (!s.module.empty()) {
        return ErrorAt(s.span, StrCat("no module named '", s.module,
                                      "' (looked for ", path, ")"));
      }
      return ErrorAt(s.span, StrCat("cannot import \"", s.path,
                                    "\": ", ToStd(program.status().message())));
    }
    kept_.push_back(*program);
    module = std::make_shared<Module>();
    module->name = alias;
    module->path = path;
    module->env = std::make_shared<Env>(builtins_, true);
    modules_[path] = module;
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
      modules_.erase(path);
      return AddNote(st, s.span, StrCat("in the module imported here"));
    }
  }
  return module;
}

}  // namespace runnel::interp
