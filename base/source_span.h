// Where in a script a graph node came from. The runtime only carries spans;
// the interpreter turns them into `file:line:col` diagnostics.
#ifndef RUNNEL_BASE_SOURCE_SPAN_H_
#define RUNNEL_BASE_SOURCE_SPAN_H_

#include <mutex>
#include <ostream>
#include <string>
#include <string_view>
#include <unordered_set>

#include "base/strings.h"

namespace runnel {

// The name of a script file, interned: every AST node, graph node and value
// site holds a span, spans are copied a great deal, and copying this copies
// a pointer. Two FileNames are equal when their names are.
class FileName {
 public:
  FileName() = default;                                       // ""
  FileName(std::string_view name) : name_(Intern(name)) {}    // NOLINT
  FileName(const std::string& name) : name_(Intern(name)) {}  // NOLINT
  FileName(const char* name) : name_(Intern(name)) {}         // NOLINT

  const std::string& str() const { return name_ ? *name_ : Empty(); }
  operator const std::string&() const { return str(); }  // NOLINT
  bool empty() const { return name_ == nullptr; }

  friend bool operator==(const FileName& a, const FileName& b) {
    return a.name_ == b.name_;
  }
  friend bool operator!=(const FileName& a, const FileName& b) {
    return a.name_ != b.name_;
  }
  friend std::ostream& operator<<(std::ostream& os, const FileName& f) {
    return os << f.str();
  }

 private:
  // One string per name, never freed; null for "". Inline so that lang/ can
  // use spans without linking the runtime.
  static const std::string* Intern(std::string_view name) {
    if (name.empty()) return nullptr;
    static std::mutex mu;
    static auto* names = new std::unordered_set<std::string>;
    std::lock_guard<std::mutex> lock(mu);
    return &*names->emplace(name).first;
  }
  static const std::string& Empty() {
    static const std::string* const empty = new std::string;
    return *empty;
  }

  const std::string* name_ = nullptr;
};

struct SourceSpan {
  FileName file;     // empty when the node was made by C++ code
  int line = 0;      // 1-based; 0 = unknown
  int col = 0;       // 1-based
  int end_line = 0;  // the span's last character, inclusive
  int end_col = 0;

  bool known() const { return line > 0; }
  // "model.rnl:12:17", or "" when unknown. Inline so that lang/ can use spans
  // without linking the runtime.
  std::string ToString() const {
    if (!known()) return "";
    return StrCat(file.empty() ? std::string_view("<input>")
                               : std::string_view(file.str()),
                  ":", line, ":", col);
  }
};

}  // namespace runnel

template <>
struct fmt::formatter<runnel::FileName> : fmt::formatter<std::string_view> {
  auto format(const runnel::FileName& f, format_context& ctx) const {
    return fmt::formatter<std::string_view>::format(f.str(), ctx);
  }
};

#endif  // RUNNEL_BASE_SOURCE_SPAN_H_
