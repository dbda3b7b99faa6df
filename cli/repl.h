// The interactive read-eval-print loop (docs/language.md §8): `runnel` with no
// arguments. It keeps one Interpreter (so one graph and one session) for
// the whole session.
#ifndef RUNNEL_CLI_REPL_H_
#define RUNNEL_CLI_REPL_H_

#include "interpreter/interpreter.h"

namespace runnel::cli {

// Runs the REPL on the terminal until Ctrl-D or `:quit`; returns the exit
// status for the process.
int RunRepl(const interp::Options& options);

}  // namespace runnel::cli

#endif  // RUNNEL_CLI_REPL_H_
