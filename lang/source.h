// A script's text, kept for diagnostics: maps spans back to source lines.
#ifndef RUNNEL_LANG_SOURCE_H_
#define RUNNEL_LANG_SOURCE_H_

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"

namespace runnel::lang {

class SourceFile {
 public:
  SourceFile(std::string path, std::string text);
  // Reads `path`; NotFound names the file and the reason.
  static absl::StatusOr<std::shared_ptr<SourceFile>> Read(
      const std::string& path);

  const std::string& path() const { return path_; }
  const std::string& text() const { return text_; }
  int num_lines() const { return static_cast<int>(line_starts_.size()); }
  // Line `n` (1-based) without its newline; empty when out of range.
  std::string_view Line(int n) const;

 private:
  std::string path_;
  std::string text_;
  std::vector<size_t> line_starts_;
};

}  // namespace runnel::lang

#endif  // RUNNEL_LANG_SOURCE_H_
