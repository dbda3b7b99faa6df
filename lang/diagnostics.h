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
#include <string_view>
#include <vector>

#include "base/source_span.h"
#include "lang/source.h"

namespace runnel::lang {

enum class Severity { kError, kWarning, kNote };

struct Diagnostic {
  Severity severity = Severity::kError;
  std::string message;
  SourceSpan span;    // may be unknown (no location line is printed)
  int caret_col = 0;  // 0 = the span's first column
  std::vector<Diagnostic> notes;
};

// A source line as a diagnostic echoes it, and the line of marks under it.
struct SourceExcerpt {
  std::string text;
  std::string marks;
};

// The widest echo of a source line, in columns; a wider line is cut to a
// window around the caret, with "..." where it is cut.
inline constexpr int kMaxExcerptWidth = 100;

// Echoes `line` for a terminal: tabs become spaces (tab stops every 8
// columns), control characters are shown as <U+0000> and bytes that are not
// UTF-8 as <FF>. `marks` underlines the byte columns [first, last] (1-based)
// with '~' and puts '^' under `caret` (0: `first`), each under the character
// it marks in `text`.
SourceExcerpt Excerpt(std::string_view line, int first, int last, int caret,
                      int max_width = kMaxExcerptWidth);

// `text` with control characters other than newline and tab escaped as in
// Excerpt, so that a message cannot cut or garble what a terminal shows.
std::string EscapeControls(std::string_view text);

class DiagnosticSink {
 public:
  explicit DiagnosticSink(std::FILE* out = stderr) : out_(out) {}
  // Keeps what is reported in `*into` instead of printing it (the language
  // server sends it to the editor).
  explicit DiagnosticSink(std::vector<Diagnostic>* into)
      : out_(nullptr), into_(into) {}

  void AddSource(std::shared_ptr<const SourceFile> file);
  const SourceFile* FindSource(const std::string& path) const;

  void Report(const Diagnostic& d);
  // The rendered text, as Report prints it.
  std::string Render(const Diagnostic& d) const;
  int error_count() const { return errors_; }

 private:
  std::string RenderOne(const Diagnostic& d) const;
  std::FILE* out_;
  std::vector<Diagnostic>* into_ = nullptr;
  std::map<std::string, std::shared_ptr<const SourceFile>> sources_;
  int errors_ = 0;
};

}  // namespace runnel::lang

#endif  // RUNNEL_LANG_DIAGNOSTICS_H_
