// What the language server knows about one version of a document: the
// parse (with recovery, so a half-typed file still has an outline), the
// checker's diagnostics, types and shapes (the interpreter in check mode,
// as `runnel check` runs it, watched through interp::Observer), and the
// names: every declaration and every use resolved to it by the language's
// scoping (docs/language.md §3).
#ifndef RUNNEL_CLI_LSP_ANALYSIS_H_
#define RUNNEL_CLI_LSP_ANALYSIS_H_

#include <filesystem>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "base/source_span.h"
#include "cli/lsp/checker.h"
#include "lang/ast.h"
#include "lang/diagnostics.h"
#include "lang/parser.h"
#include "lang/source.h"

namespace runnel::lsp {

enum class SymbolKind {
  kLet,
  kVar,
  kState,
  kInput,
  kParam,
  kDef,
  kImport,
  kLoop,   // a loop's state or a `for`'s variable
  kScope,  // a `scope "name" { }` block (document symbols only)
};
const char* SymbolKindName(SymbolKind k);

struct Symbol {
  std::string name;
  SymbolKind kind = SymbolKind::kLet;
  SourceSpan name_span;  // the name where it is declared
  SourceSpan full;       // the whole declaration
  // Where it is visible: from its declaration to the end of its block (a
  // whole block for a function, which later code may call).
  SourceSpan visible;
  int parent = -1;         // the enclosing def or scope (document symbols)
  bool top_level = false;  // not inside a function, loop or branch body
  const lang::DefStmt* def = nullptr;  // kDef
  std::vector<std::string> params;     // kDef, and functions bound by let
  std::string import_path;             // kImport: the file it reads
  std::string module;                  // kImport of a stdlib module
  std::string type;   // from the checker, when it got there: "f32[?, 256]"
  std::string extra;  // "trainable, /cpu:0" for a var
};

// A use of a declared name.
struct Reference {
  SourceSpan span;
  int symbol = -1;
};

// A name the document does not declare: a builtin, a dtype, or a member
// of an imported module (`nn.dense`: the span of `dense`).
struct External {
  SourceSpan span;
  std::string name;    // "matmul", "nn.dense"
  std::string module;  // the import's symbol name for a member, else ""
  int import = -1;     // the import symbol, for a member
};

// A member of a module, read from the module's own file.
struct ModuleMember {
  std::string name;
  SymbolKind kind = SymbolKind::kDef;
  SourceSpan name_span;  // in the module's file
  std::vector<std::string> params;
};

struct Analysis {
  std::string path;
  std::shared_ptr<const lang::SourceFile> source;
  std::shared_ptr<lang::Program> program;  // never null
  std::shared_ptr<void> parse_tree;
  bool syntax_ok = true;
  bool checked = false;  // the checker ran (only without syntax errors)
  std::vector<lang::Diagnostic> diagnostics;
  std::vector<Symbol> symbols;
  std::vector<Reference> refs;
  std::vector<External> externals;
  std::vector<Typed> types;  // sorted by start
  double parse_ms = 0, check_ms = 0;

  // The innermost declaration or use at 1-based `line`, byte `col`.
  int SymbolAt(int line, int col, SourceSpan* span = nullptr) const;
  const External* ExternalAt(int line, int col) const;
  // The smallest expression the checker typed that holds the position.
  const Typed* TypeAt(int line, int col) const;
  // Symbols visible at the position, innermost first, each name once.
  std::vector<int> VisibleAt(int line, int col) const;
};

struct AnalyzeOptions {
  std::string stdlib_dir;  // "" = the interpreter's default
  bool check = true;       // run the checker (when the syntax is fine)
  // The runnel binary to check in a child process (checker.h), killed
  // after check_timeout_s; "" checks in this process.
  std::string checker;
  double check_timeout_s = 20;
};

// Parses and checks `text` as the file `path` (imports resolve from its
// directory and the stdlib).
std::unique_ptr<Analysis> Analyze(const std::string& path, std::string text,
                                  const AnalyzeOptions& options);

// An imported module's file, read and parsed, and its public members:
// top-level defs, lets and vars whose names do not start with '_'.
struct ModuleFile {
  std::shared_ptr<const lang::SourceFile> source;
  lang::ParseResult parsed;  // its program is never null
  std::vector<ModuleMember> members;
};

// The module files that hover, definition, completion and signature help
// read: each read and parsed once, and again only when its modification
// time changes. Not thread-safe (the server's reading thread owns it).
class ModuleCache {
 public:
  // nullptr when the file cannot be read.
  const ModuleFile* Get(const std::string& path);

 private:
  struct Entry {
    std::filesystem::file_time_type mtime;
    std::unique_ptr<ModuleFile> file;
  };
  std::map<std::string, Entry> files_;
};

// The file `import NAME` or `import "file"` in `path` reads.
std::string ResolveImport(const lang::ImportStmt& s, const std::string& path,
                          const std::string& stdlib_dir);

bool Contains(const SourceSpan& s, int line, int col);

}  // namespace runnel::lsp

#endif  // RUNNEL_CLI_LSP_ANALYSIS_H_
