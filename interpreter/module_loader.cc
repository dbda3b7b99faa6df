#include "interpreter/module_loader.h"

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <filesystem>
#include <utility>

#include "absl/strings/str_join.h"
#include "base/strings.h"
#include "interpreter/diag.h"
#include "lang/ast_walk.h"
#include "lang/parser.h"

#ifndef RUNNEL_STDLIB_DIR
#define RUNNEL_STDLIB_DIR "stdlib"
#endif

namespace runnel::interp {

namespace fs = std::filesystem;

std::string ModuleLoader::StdlibDir() const {
  if (!options_.stdlib_dir.empty()) return options_.stdlib_dir;
  if (const char* env = std::getenv("RUNNEL_STDLIB_PATH")) {
    if (*env != '\0') return env;
  }
  return RUNNEL_STDLIB_DIR;
}

std::string ModuleLoader::ResolveImport(const lang::ImportStmt& s,
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

absl::StatusOr<std::shared_ptr<const lang::Program>> ModuleLoader::ParseFile(
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

void ModuleLoader::PreloadImports(const lang::Program& program,
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

absl::Status ModuleLoader::CheckArgsRead(const lang::Program& program) const {
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

bool ModuleLoader::IsStdlibModule(const std::string& name,
                                  const SourceSpan& use) const {
  if (name.empty() || !std::all_of(name.begin(), name.end(), [](char c) {
        return std::isalnum(static_cast<unsigned char>(c)) || c == '_';
      })) {
    return false;
  }
  lang::ImportStmt s;
  s.module = name;
  std::error_code ec;
  return std::filesystem::exists(ResolveImport(s, use.file.str()), ec);
}

std::shared_ptr<Module> ModuleLoader::FindModule(
    const std::string& path) const {
  auto it = modules_.find(path);
  return it == modules_.end() ? nullptr : it->second;
}

void ModuleLoader::AddModule(const std::string& path,
                             std::shared_ptr<Module> module) {
  modules_[path] = std::move(module);
}

}  // namespace runnel::interp
