// Where in a script a graph node came from. The runtime only carries spans;
// the interpreter turns them into `file:line:col` diagnostics.
#ifndef RUNNEL_RUNTIME_SOURCE_SPAN_H_
#define RUNNEL_RUNTIME_SOURCE_SPAN_H_

#include <string>

namespace runnel {

struct SourceSpan {
  std::string file;  // empty when the node was made by C++ code
  int line = 0;      // 1-based; 0 = unknown
  int col = 0;       // 1-based
  int end_line = 0;  // the span's last character, inclusive
  int end_col = 0;

  bool known() const { return line > 0; }
  // "model.rnl:12:17", or "" when unknown.
  std::string ToString() const;
};

}  // namespace runnel

#endif  // RUNNEL_RUNTIME_SOURCE_SPAN_H_
