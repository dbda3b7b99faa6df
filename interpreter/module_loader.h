// Where imports come from: resolving `import NAME` (the standard library,
// --stdlib-dir or $RUNNEL_STDLIB_PATH) and `import "file" as x`, parsing
// each file once (its syntax errors reported before anything runs), the
// modules loaded so far, and the programs kept alive while functions point
// into them. Evaluating a module is the interpreter's (LoadModule).
#ifndef RUNNEL_INTERPRETER_MODULE_LOADER_H_
#define RUNNEL_INTERPRETER_MODULE_LOADER_H_

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "interpreter/options.h"
#include "interpreter/value.h"
#include "lang/ast.h"
#include "lang/diagnostics.h"

namespace runnel::interp {

class ModuleLoader {
 public:
  // `options` and `sink` outlive the loader.
  ModuleLoader(const Options& options, lang::DiagnosticSink* sink)
      : options_(options), sink_(sink) {}

  // The file `s` imports from `file`: a path relative to `file`'s
  // directory, or the first stdlib directory holding NAME.rnl (the first
  // candidate when none does).
  std::string ResolveImport(const lang::ImportStmt& s,
                            const std::string& file) const;
  // Whether `import name` from `use`'s file would find a module.
  bool IsStdlibModule(const std::string& name, const SourceSpan& use) const;

  // Parses `path` once (later calls return the same program) and, ahead of
  // time, the files it imports. Syntax errors go to the sink and set
  // *parse_errors; an unreadable file is the status.
  absl::StatusOr<std::shared_ptr<const lang::Program>> ParseFile(
      const std::string& path, bool* parse_errors);
  // Parses the files `program` (in `file`) imports that exist.
  void PreloadImports(const lang::Program& program, const std::string& file,
                      bool* parse_errors);

  // Every `--arg NAME=...` must be read by an `arg("NAME")` of the script
  // or a module it imports: a misspelt name would otherwise be ignored.
  // Says which is not (with the closest name read) before anything runs;
  // says nothing when an arg() takes its name from a value.
  absl::Status CheckArgsRead(const lang::Program& program) const;

  // The modules loaded or loading, by path.
  std::shared_ptr<Module> FindModule(const std::string& path) const;
  void AddModule(const std::string& path, std::shared_ptr<Module> module);
  void ForgetModule(const std::string& path) { modules_.erase(path); }

  // Programs (and parse trees) whose functions may still be called.
  void Keep(std::shared_ptr<const lang::Program> program) {
    kept_.push_back(std::move(program));
  }
  void KeepParseTree(std::shared_ptr<void> tree) {
    kept_parse_trees_.push_back(std::move(tree));
  }
  const std::vector<std::shared_ptr<const lang::Program>>& kept() const {
    return kept_;
  }

 private:
  std::string StdlibDir() const;

  const Options& options_;
  lang::DiagnosticSink* sink_;
  std::map<std::string, std::shared_ptr<const lang::Program>> programs_;
  std::map<std::string, std::shared_ptr<Module>> modules_;
  std::vector<std::shared_ptr<const lang::Program>> kept_;
  std::vector<std::shared_ptr<void>> kept_parse_trees_;
};

}  // namespace runnel::interp

#endif  // RUNNEL_INTERPRETER_MODULE_LOADER_H_
