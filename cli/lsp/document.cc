#include "cli/lsp/document.h"

#include <algorithm>

namespace runnel::lsp {
namespace {

// The length of the UTF-8 sequence that starts with `lead` (1 for a stray
// continuation byte, which then counts as one unit).
int SequenceLength(unsigned char lead) {
  if (lead >= 0xF0) return 4;
  if (lead >= 0xE0) return 3;
  if (lead >= 0xC0) return 2;
  return 1;
}

}  // namespace

void Document::SetText(std::string text) {
  text_ = std::move(text);
  starts_.assign(1, 0);
  for (size_t i = 0; i < text_.size(); ++i) {
    if (text_[i] == '\n') starts_.push_back(i + 1);
  }
}

std::string_view Document::Line(int n) const {
  if (n < 0 || n >= num_lines()) return {};
  const size_t start = starts_[n];
  size_t end = n + 1 < num_lines() ? starts_[n + 1] - 1 : text_.size();
  if (end > start && text_[end - 1] == '\r') --end;
  return std::string_view(text_).substr(start, end - start);
}

size_t Document::Offset(Position p) const {
  if (p.line < 0) return 0;
  if (p.line >= num_lines()) return text_.size();
  const std::string_view line = Line(p.line);
  size_t byte = 0;
  int units = 0;
  while (byte < line.size() && units < p.character) {
    const int len = SequenceLength(static_cast<unsigned char>(line[byte]));
    units += utf8_ ? len : (len == 4 ? 2 : 1);
    byte = std::min(line.size(), byte + len);
  }
  return starts_[p.line] + byte;
}

Position Document::At(int line, int col) const {
  Position p{.line = std::max(0, line - 1), .character = 0};
  const std::string_view text = Line(p.line);
  const size_t bytes = std::min<size_t>(std::max(0, col - 1), text.size());
  if (utf8_) {
    p.character = static_cast<int>(bytes);
    return p;
  }
  for (size_t b = 0; b < bytes;) {
    const int len = SequenceLength(static_cast<unsigned char>(text[b]));
    p.character += len == 4 ? 2 : 1;
    b += len;
  }
  return p;
}

std::pair<int, int> Document::LineCol(Position p) const {
  return LineColAt(Offset(p));
}

Edit Document::Replace(Position start, Position end, std::string_view text) {
  size_t a = Offset(start), b = Offset(end);
  if (b < a) std::swap(a, b);
  std::string next = text_.substr(0, a);
  next.append(text);
  next.append(text_, b, std::string::npos);
  SetText(std::move(next));
  return {.start = a, .removed = b - a, .inserted = text.size()};
}

std::pair<int, int> Document::LineColAt(size_t offset) const {
  offset = std::min(offset, text_.size());
  const size_t line = std::upper_bound(starts_.begin(), starts_.end(), offset) -
                      starts_.begin() - 1;
  return {static_cast<int>(line) + 1,
          static_cast<int>(offset - starts_[line]) + 1};
}

size_t Document::OffsetOf(int line, int col) const {
  if (line < 1) return 0;
  if (line > num_lines()) return text_.size();
  const size_t end = line < num_lines() ? starts_[line] : text_.size();
  return std::min(end, starts_[line - 1] + std::max(0, col - 1));
}

std::optional<size_t> MapBack(const std::vector<Edit>& edits, size_t offset) {
  for (auto e = edits.rbegin(); e != edits.rend(); ++e) {
    if (offset < e->start) continue;
    if (offset < e->start + e->inserted) return std::nullopt;
    offset = offset - e->inserted + e->removed;
  }
  return offset;
}

std::optional<size_t> MapForward(const std::vector<Edit>& edits,
                                 size_t offset) {
  for (const Edit& e : edits) {
    if (offset < e.start) continue;
    if (offset < e.start + e.removed) return std::nullopt;
    offset = offset - e.removed + e.inserted;
  }
  return offset;
}

}  // namespace runnel::lsp
