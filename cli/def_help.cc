#include "cli/def_help.h"

#include <algorithm>
#include <vector>

#include "base/strings.h"

namespace runnel::cli {
namespace {

std::vector<std::string_view> Lines(std::string_view text) {
  std::vector<std::string_view> lines;
  size_t start = 0;
  while (start <= text.size()) {
    const size_t end = std::min(text.find('\n', start), text.size());
    lines.push_back(text.substr(start, end - start));
    start = end + 1;
  }
  return lines;
}

std::string_view StripLeft(std::string_view s) {
  const size_t first = s.find_first_not_of(" \t");
  return first == std::string_view::npos ? std::string_view() : s.substr(first);
}

// "def f(a,\n      b = 1)" -> "def f(a, b = 1)": from `def` to the
// parenthesis closing the parameters, each run of whitespace one space.
std::string Header(const std::vector<std::string_view>& lines, size_t first) {
  std::string header;
  int depth = 0;
  for (size_t i = first; i < lines.size(); ++i) {
    for (char c : lines[i]) {
      const bool space = c == ' ' || c == '\t';
      if (space && (header.empty() || header.back() == ' ')) continue;
      header += space ? ' ' : c;
      if (c == '(') ++depth;
      if (c == ')' && --depth == 0) return header;
    }
    if (!header.empty() && header.back() != ' ') header += ' ';
  }
  return header;  // unbalanced: the parser reports it
}

}  // namespace

std::optional<std::string> DefHelp(std::string_view source,
                                   std::string_view name,
                                   std::string_view file) {
  const std::vector<std::string_view> lines = Lines(source);
  const std::string def = StrCat("def ", name);
  for (size_t i = 0; i < lines.size(); ++i) {
    if (lines[i].substr(0, def.size()) != def) continue;
    if (StripLeft(lines[i].substr(def.size())).substr(0, 1) != "(") continue;
    std::string help =
        StrCat(Header(lines, i), "\n  (", file, ":", i + 1, ")\n");
    size_t top = i;
    while (top > 0 && StripLeft(lines[top - 1]).substr(0, 1) == "#") --top;
    for (size_t k = top; k < i; ++k) {
      std::string_view text = StripLeft(lines[k]).substr(1);  // past '#'
      if (text.substr(0, 1) == " ") text.remove_prefix(1);
      help += StrCat("  ", text, "\n");
    }
    return help;
  }
  return std::nullopt;
}

}  // namespace runnel::cli
