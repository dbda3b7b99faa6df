// `runnel lsp`: a Language Server Protocol 3.17 server over stdio
// (docs/editors.md). It reuses the checker `runnel check` runs (one source
// of diagnostics, types and shapes): each version of a document is parsed
// and checked once (cli/lsp/analysis.h), and every request is answered from
// that.
//
// Features: diagnostics (on open and on every change, incremental sync),
// hover (kind, dtype and shape; signatures and doc comments of functions,
// builtins and ops), go to definition and find references (into imported
// modules too), completion (names in scope, keywords, builtins, dtypes,
// module members, the keyword arguments of the call being written),
// signature help, document symbols and semantic tokens. No formatter exists,
// so formatting is not offered.
//
// A request that fails (malformed, or a bug here) gets an error response;
// the server goes on.
#ifndef RUNNEL_CLI_LSP_SERVER_H_
#define RUNNEL_CLI_LSP_SERVER_H_

#include <cstdio>
#include <string>

namespace runnel::lsp {

struct ServerOptions {
  std::string stdlib_dir;   // "" = the interpreter's default
  bool log_timing = false;  // --log-timing: each request's time on stderr
  // A check taking longer is stopped, and a diagnostic says so.
  double check_timeout_s = 20;
};

// Serves one client on `in` and `out` until `exit`; returns the exit status
// (0 after a `shutdown`, 1 otherwise, as the protocol says).
int Serve(std::FILE* in, std::FILE* out, const ServerOptions& options);

}  // namespace runnel::lsp

#endif  // RUNNEL_CLI_LSP_SERVER_H_
