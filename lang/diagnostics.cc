#include "lang/diagnostics.h"

#include <algorithm>
#include <cstdint>
#include <vector>

#include "base/read_file.h"
#include "base/strings.h"

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
  absl::StatusOr<std::string> text = ReadFileToString(path);
  if (!text.ok()) return text.status();
  return std::make_shared<SourceFile>(path, *std::move(text));
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

namespace {

// How one character of a source line is shown.
enum class Shown : uint8_t {
  kAsIs,       // printable: its bytes
  kTab,        // spaces to the next tab stop
  kCodePoint,  // escaped: <U+XXXX>
  kByte,       // not UTF-8: <XX>
  kInside,     // a continuation byte of the character before
};

constexpr int kTabStop = 8;

// Characters that would move the cursor, change the terminal's state or
// reorder the text around them: C0 and C1 controls, DEL, the bidirectional
// marks, embeddings, overrides and isolates, line and paragraph separators
// and the byte order mark.
bool IsControl(uint32_t cp) {
  return cp < 0x20 || (cp >= 0x7F && cp <= 0x9F) || cp == 0x200E ||
         cp == 0x200F || (cp >= 0x2028 && cp <= 0x202E) ||
         (cp >= 0x2066 && cp <= 0x2069) || cp == 0xFEFF;
}

// The UTF-8 sequence at s[i]: its length and code point, or 0 when the
// bytes there are not well-formed UTF-8.
int DecodeUtf8(std::string_view s, size_t i, uint32_t* cp) {
  const auto byte = [&](size_t k) { return static_cast<uint8_t>(s[k]); };
  const uint8_t b0 = byte(i);
  int len = 0;
  uint32_t min = 0;
  if (b0 < 0x80) {
    *cp = b0;
    return 1;
  } else if ((b0 & 0xE0) == 0xC0) {
    len = 2, min = 0x80, *cp = b0 & 0x1F;
  } else if ((b0 & 0xF0) == 0xE0) {
    len = 3, min = 0x800, *cp = b0 & 0x0F;
  } else if ((b0 & 0xF8) == 0xF0) {
    len = 4, min = 0x10000, *cp = b0 & 0x07;
  } else {
    return 0;
  }
  if (i + len > s.size()) return 0;
  for (int k = 1; k < len; ++k) {
    if ((byte(i + k) & 0xC0) != 0x80) return 0;
    *cp = (*cp << 6) | (byte(i + k) & 0x3F);
  }
  if (*cp < min || *cp > 0x10FFFF || (*cp >= 0xD800 && *cp <= 0xDFFF)) {
    return 0;
  }
  return len;
}

// Classifies the character at s[i]; `*len` is its length in bytes.
Shown Classify(std::string_view s, size_t i, int* len, uint32_t* cp) {
  *len = DecodeUtf8(s, i, cp);
  if (*len == 0) {
    *len = 1;
    return Shown::kByte;
  }
  if (*cp == '\t') return Shown::kTab;
  return IsControl(*cp) ? Shown::kCodePoint : Shown::kAsIs;
}

// Appends the escaped form of a character Classify did not show as is.
void AppendEscaped(std::string* out, Shown how, std::string_view s, size_t i,
                   uint32_t cp) {
  if (how == Shown::kByte) {
    *out += fmt::format("<{:02X}>", static_cast<uint8_t>(s[i]));
  } else {
    *out += fmt::format("<U+{:04X}>", cp);
  }
}

}  // namespace

std::string EscapeControls(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (size_t i = 0; i < text.size();) {
    int len = 0;
    uint32_t cp = 0;
    const Shown how = Classify(text, i, &len, &cp);
    if (how == Shown::kAsIs || how == Shown::kTab ||
        (how == Shown::kCodePoint && cp == '\n')) {
      out.append(text.substr(i, len));
    } else {
      AppendEscaped(&out, how, text, i, cp);
    }
    i += len;
  }
  return out;
}

SourceExcerpt Excerpt(std::string_view line, int first, int last, int caret,
                      int max_width) {
  // Columns are 1-based bytes; the marks may go one past the line's end
  // (where something is missing), and no further.
  const int n = static_cast<int>(line.size());
  first = std::clamp(first, 1, n + 1);
  last = std::max(first, std::min(last, n));
  caret = caret > 0 ? std::min(caret, n + 1) : first;
  const int end = std::max({n, last, caret});  // last column with a mark
  // Per column: how it is shown, its width and where it starts.
  std::vector<Shown> how(end + 1, Shown::kAsIs);
  std::vector<int> width(end + 1, 1), pos(end + 2, 0);
  for (int c = 1; c <= end; ++c) {
    pos[c + 1] = pos[c];
    if (c > n) {
      pos[c + 1] += 1;
      continue;
    }
    int len = 0;
    uint32_t cp = 0;
    how[c] = Classify(line, c - 1, &len, &cp);
    switch (how[c]) {
      case Shown::kAsIs:
        width[c] = 1;
        break;
      case Shown::kTab:
        width[c] = kTabStop - pos[c] % kTabStop;
        break;
      case Shown::kCodePoint:
        width[c] = 8;  // <U+XXXX>: IsControl takes no code point above FFFF
        break;
      case Shown::kByte:
        width[c] = 4;
        break;
      case Shown::kInside:
        break;
    }
    pos[c + 1] = pos[c] + width[c];
    for (int k = 1; k < len && c + 1 <= n; ++k) {
      ++c;
      how[c] = Shown::kInside;
      width[c] = 0;
      pos[c + 1] = pos[c];
    }
  }
  // A span starts, and the caret points, at the first byte of a character.
  while (first > 1 && how[first] == Shown::kInside) --first;
  while (caret > 1 && how[caret] == Shown::kInside) --caret;
  // The window [from, to] of columns to show.
  int from = 1, to = end;
  if (pos[end + 1] > max_width) {
    const int budget = std::max(max_width - 6, 16);  // room for two "..."
    int start = std::max(0, pos[caret] - budget / 3);
    start = std::min(start, std::max(0, pos[end + 1] - budget));
    while (from < end && (pos[from] < start || how[from] == Shown::kInside)) {
      ++from;
    }
    to = from;
    while (to < end && pos[to + 2] - pos[from] <= budget) ++to;
  }
  SourceExcerpt e;
  if (from > 1) {
    e.text = "...";
    e.marks = "   ";
  }
  for (int c = from; c <= std::min(to, n); ++c) {
    switch (how[c]) {
      case Shown::kAsIs: {
        int len = 0;
        uint32_t cp = 0;
        Classify(line, c - 1, &len, &cp);
        e.text.append(line.substr(c - 1, len));
        break;
      }
      case Shown::kTab:
        e.text.append(width[c], ' ');
        break;
      case Shown::kCodePoint:
      case Shown::kByte: {
        int len = 0;
        uint32_t cp = 0;
        Classify(line, c - 1, &len, &cp);
        AppendEscaped(&e.text, how[c], line, c - 1, cp);
        break;
      }
      case Shown::kInside:
        break;
    }
  }
  if (to < n) e.text += "...";
  for (int c = from; c <= std::min(to, std::max(last, caret)); ++c) {
    const bool under = c >= first && c <= last;
    if (width[c] == 0) continue;
    e.marks += c == caret ? '^' : under ? '~' : ' ';
    e.marks.append(width[c] - 1, under ? '~' : ' ');
  }
  return e;
}

std::string DiagnosticSink::RenderOne(const Diagnostic& d) const {
  std::string out;
  if (d.span.known()) out += d.span.ToString() + ": ";
  out +=
      StrCat(SeverityText(d.severity), ": ", EscapeControls(d.message), "\n");
  const SourceFile* src = d.span.known() ? FindSource(d.span.file) : nullptr;
  if (src == nullptr || d.severity == Severity::kNote) return out;
  std::string_view line = src->Line(d.span.line);
  if (line.empty()) return out;
  const int last = d.span.end_line == d.span.line
                       ? d.span.end_col
                       : static_cast<int>(line.size());
  const SourceExcerpt excerpt = Excerpt(line, d.span.col, last, d.caret_col);
  out += fmt::format("{:>5} | {}\n", d.span.line, excerpt.text);
  out += fmt::format("{:>5} | {}\n", "", excerpt.marks);
  return out;
}

std::string DiagnosticSink::Render(const Diagnostic& d) const {
  std::string out = RenderOne(d);
  for (const Diagnostic& n : d.notes) out += RenderOne(n);
  return out;
}

void DiagnosticSink::Report(const Diagnostic& d) {
  if (d.severity == Severity::kError) ++errors_;
  if (into_ != nullptr) {
    into_->push_back(d);
    return;
  }
  std::string text = Render(d);
  std::fwrite(text.data(), 1, text.size(), out_);
  std::fflush(out_);
}

}  // namespace runnel::lang
