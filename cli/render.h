// Writing pictures through external programs: Graphviz `dot` for graphs,
// gnuplot for training curves. Output goes to a temporary file and is
// renamed into place, so a failed render leaves no file behind.
#ifndef RUNNEL_CLI_RENDER_H_
#define RUNNEL_CLI_RENDER_H_

#include <string>

#include "absl/status/status.h"

namespace runnel::cli {

// Whether `program` is an executable on $PATH.
bool HasProgram(const std::string& program);

// Writes `text` to `path` through a temporary file and a rename.
absl::Status WriteFileAtomically(const std::string& path,
                                 const std::string& text);

// `path`'s extension without the dot ("svg"), or "".
std::string Extension(const std::string& path);

// Writes DOT text to `out`: as it is for OUT.dot, rendered by Graphviz for
// OUT.svg and OUT.png.
absl::Status WriteDot(const std::string& dot, const std::string& out);

// Runs the gnuplot `script` (which sets its terminal but not its output)
// with its output going to `out`.
absl::Status RunGnuplot(const std::string& script, const std::string& out);

}  // namespace runnel::cli

#endif  // RUNNEL_CLI_RENDER_H_
