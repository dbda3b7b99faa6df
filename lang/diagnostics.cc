#include "lang/diagnostics.h"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

#include "runtime/strings.h"

namespace runnel::lang {

SourceFile::SourceFile(std::string path, std::string text)
    : path_(std::move(path)), text_(std::move(text)) {
  line_starts_.push_back(0);
  for (size_t i = 0; i < text_.size(); ++i) {
    if (text_[i] == '\n' && i + 1 < text_.size()) line_starts_.push_back(i + 1);
  }
}

absl::StatusOr<std::shared_ptr<SourceFile>> SourceFile::Read(
    const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    return absl::NotFoundError(
        StrCat(path, ": cannot open: ", std::strerror(errno)));
  }
  std::ostringstream ss;
  ss << in.rdbuf();
  return std::make_shared<SourceFile>(path, ss.str());
}

std::string_view SourceFile::Line(int n) const {
  if (n < 1 || n > num_lines()) return {};
  size_t start = line_starts_[n - 1];
  size_t end = text_.find('\n', start);
  if (end == std::string::npos) end = text_.size();
  if (end > start && text_[end - 1] == '\r') --end;
  return std::string_view(text_).substr(start, end - start);
}

void DiagnosticSink::AddSource(std::shared_ptr<const SourceFile> file) {
  sources_[file->path()] = std::move(file);
}

const SourceFile* DiagnosticSink::FindSource(const std::string& path) const {
  auto it = sources_.find(path);
  return it == sources_.end() ? nullptr : it->second.get();
}

namespace {
const char* SeverityText(Severity s) {
  switch (s) {
    case Severity::kError:
      return "error";
    case Severity::kWarning:
      return "warning";
    case Severity::kNote:
      return "note";
  }
  return "error";
}
}  // namespace

std::string DiagnosticSink::RenderOne(const Diagnostic& d) const {
  std::string out;
  if (d.span.known()) out += d.span.ToString() + ": ";
  out += StrCat(SeverityText(d.severity), ": ", d.message, "\n");
  const SourceFile* src = d.span.known() ? FindSource(d.span.file) : nullptr;
  if (src == nullptr || d.severity == Severity::kNote) return out;
  std::string_view line = src->Line(d.span.line);
  if (line.empty()) return out;
  out += fmt::format("{:>5} | {}\n", d.span.line, line);
  // Underline the span on its first line: `~` over it, `^` at the caret.
  const int first = d.span.col;
  int last = d.span.end_line == d.span.line ? d.span.end_col
                                            : static_cast<int>(line.size());
  last = std::max(first, std::min(last, static_cast<int>(line.size())));
  const int caret = d.caret_col > 0 ? d.caret_col : first;
  std::string marks;
  for (int c = 1; c <= std::max(last, caret); ++c) {
    if (c == caret) {
      marks += '^';
    } else if (c >= first && c <= last) {
      marks += '~';
    } else {
      // Keep tabs so the marks line up under tab-indented code.
      marks += (c - 1 < static_cast<int>(line.size()) && line[c - 1] == '\t')
                   ? '\t'
                   : ' ';
    }
  }
  out += fmt::format("{:>5} | {}\n", "", marks);
  return out;
}

std::string DiagnosticSink::Render(const Diagnostic& d) const {
  std::string out = RenderOne(d);
  for (const Diagnostic& n : d.notes) out += RenderOne(n);
  return out;
}

void DiagnosticSink::Report(const Diagnostic& d) {
  if (d.severity == Severity::kError) ++errors_;
  std::string text = Render(d);
  std::fputs(text.c_str(), out_);
  std::fflush(out_);
}

}  // namespace runnel::lang
