// Where in a script a graph node came from. The runtime only carries spans;
// the interpreter turns them into `file:line:col` diagnostics.
#ifndef RUNNEL_RUNTIME_SOURCE_SPAN_H_
#define RUNNEL_RUNTIME_SOURCE_SPAN_H_

#include <string>

#include "runtime/strings.h"

namespace runnel {

struct SourceSpan {
  std::string file;  // empty when the node was made by C++ code
  int line = 0;      // 1-based; 0 = unknown
  int col = 0;       // 1-based
  int end_line = 0;  // the span's last character, inclusive
  int end_col = 0;

  bool known() const { return line > 0; }
  // "model.rnl:12:17", or "" when unknown. Inline so that lang/ can use spans
  // without linking the runtime.
  std::string ToString() const {
    if (!known()) return "";
    return StrCat(file.empty() ? "<input>" : file, ":", line, ":", col);
  }
};

}  // namespace runnel

#endif  // RUNNEL_RUNTIME_SOURCE_SPAN_H_
