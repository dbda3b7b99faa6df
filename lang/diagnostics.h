// Diagnostics: errors and notes that point into scripts (docs/language.md §7).
//
//   model.rnl:12:17: error: matmul: inner dimensions differ: ...
//      12 | let logits = h @ w2
//         |              ~~^~~~
//   model.rnl:4:1: note: w2 declared here
//
// A Diagnostic has a severity, a message, the span it underlines (with `~`)
// and the caret column inside it (`^`); notes follow it. DiagnosticSink
// renders them against the SourceFiles it knows, to a stream.
#ifndef RUNNEL_LANG_DIAGNOSTICS_H_
#define RUNNEL_LANG_DIAGNOSTICS_H_

#include <cstdio>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "lang/source.h"
#include "runtime/source_span.h"

namespace runnel::lang {

enum class Severity { kError, kWarning, kNote };

struct Diagnostic {
  Severity severity = Severity::kError;
  std::string message;
  SourceSpan span;    // may be unknown (no location line is printed)
  int caret_col = 0;  // 0 = the span's first column
  std::vector<Diagnostic> notes;
};

class DiagnosticSink {
 public:
  explicit DiagnosticSink(std::FILE* out = stderr) : out_(out) {}

  void AddSource(std::shared_ptr<const SourceFile> file);
  const SourceFile* FindSource(const std::string& path) const;

  void Report(const Diagnostic& d);
  // The rendered text, as Report prints it.
  std::string Render(const Diagnostic& d) const;
  int error_count() const { return errors_; }

 private:
  std::string RenderOne(const Diagnostic& d) const;
  std::FILE* out_;
  std::map<std::string, std::shared_ptr<const SourceFile>> sources_;
  int errors_ = 0;
};

}  // namespace runnel::lang

#endif  // RUNNEL_LANG_DIAGNOSTICS_H_
