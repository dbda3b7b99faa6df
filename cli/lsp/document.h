// An open text document as the editor holds it, and the translation between
// LSP positions (0-based line, column in UTF-16 code units or, when the
// client agrees, in UTF-8 bytes) and the scripts' spans (1-based line,
// 1-based byte column).
#ifndef RUNNEL_CLI_LSP_DOCUMENT_H_
#define RUNNEL_CLI_LSP_DOCUMENT_H_

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace runnel::lsp {

struct Position {
  int line = 0;       // 0-based
  int character = 0;  // 0-based, in the session's encoding
};

// One change of a text, in bytes: [start, start + removed) became
// `inserted` bytes.
struct Edit {
  size_t start = 0, removed = 0, inserted = 0;
};

// Where a byte offset of the text after `edits` (applied in order) was
// before them; nullopt for an offset inside text an edit inserted.
std::optional<size_t> MapBack(const std::vector<Edit>& edits, size_t offset);
// Where a byte offset of the text before `edits` is after them; nullopt for
// an offset inside text an edit removed.
std::optional<size_t> MapForward(const std::vector<Edit>& edits, size_t offset);

class Document {
 public:
  Document(std::string text, bool utf8) : utf8_(utf8) {
    SetText(std::move(text));
  }

  const std::string& text() const { return text_; }
  void SetText(std::string text);
  // Replaces [start, end) with `text` (an incremental change).
  Edit Replace(Position start, Position end, std::string_view text);

  // The byte offset of `p`, clamped to the text (a position past the end of
  // a line is that line's end).
  size_t Offset(Position p) const;
  // The position of 1-based `line` and byte column `col` (a span's start;
  // pass end_col + 1 for the end of an inclusive span).
  Position At(int line, int col) const;
  // 1-based line and byte column of `p`.
  std::pair<int, int> LineCol(Position p) const;
  // The same for a byte offset, and back (clamped to the text).
  std::pair<int, int> LineColAt(size_t offset) const;
  size_t OffsetOf(int line, int col) const;
  // Line `n` (0-based) without its line end.
  std::string_view Line(int n) const;
  int num_lines() const { return static_cast<int>(starts_.size()); }

 private:
  std::string text_;
  std::vector<size_t> starts_;  // where each line starts
  bool utf8_;
};

}  // namespace runnel::lsp

#endif  // RUNNEL_CLI_LSP_DOCUMENT_H_
