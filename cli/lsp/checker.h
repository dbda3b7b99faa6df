// The checker as the language server runs it: the interpreter in check mode
// (as `runnel check`), watched through interp::Observer, so that besides
// the diagnostics it tells the type of every expression evaluated and of
// every name bound.
//
// The server runs it in a child process (`runnel lsp --check-file PATH`,
// the text on its stdin, the findings as JSON on its stdout): a script
// whose host loop never ends, or a bug that crashes the interpreter, costs
// that check and never the server, which says so in a diagnostic.
#ifndef RUNNEL_CLI_LSP_CHECKER_H_
#define RUNNEL_CLI_LSP_CHECKER_H_

#include <string>
#include <string_view>
#include <vector>

#include "base/source_span.h"
#include "lang/diagnostics.h"

namespace runnel::lsp {

// A type the checker found for an expression.
struct Typed {
  SourceSpan span;
  std::string type;  // "f32[?, 256]", "fn dense(x, units, ...)", ...
};

struct CheckResult {
  std::vector<lang::Diagnostic> diagnostics;
  std::vector<Typed> types;  // in the checked file only, sorted by start
  // Names bound in the checked file: where (the span the interpreter binds
  // them with), their type and, for variables, "trainable, /device:cpu:0".
  struct Bound {
    int line = 0, col = 0;
    std::string name, type, extra;
  };
  std::vector<Bound> bound;
};

// Checks `text` as the file `path` in this process.
CheckResult CheckHere(const std::string& path, std::string text,
                      const std::string& stdlib_dir);

// The same in a child process running `runnel_exe`, killed after
// `timeout_s` seconds. Never fails: a crash, a timeout or unreadable output
// is an error diagnostic of the result.
CheckResult CheckInChild(const std::string& runnel_exe, const std::string& path,
                         const std::string& text, double timeout_s);

// Stops the check running in a child process, if any, and refuses every
// later one (the server is exiting): they end at once with an error
// diagnostic.
void CancelChecks();

// `runnel lsp --check-file PATH`: checks the text on stdin as PATH and
// writes the result as JSON on stdout. Returns the exit status.
int CheckFileMain(const std::string& path);

}  // namespace runnel::lsp

#endif  // RUNNEL_CLI_LSP_CHECKER_H_
