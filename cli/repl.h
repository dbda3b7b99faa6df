// The interactive read-eval-print loop (docs/language.md §8): `runnel` with no
// arguments. It keeps one Interpreter (so one graph and one session) for
// the whole session.
#ifndef RUNNEL_CLI_REPL_H_
#define RUNNEL_CLI_REPL_H_

#include "interpreter/interpreter.h"

namespace runnel::interp {

// Runs the REPL on the terminal until Ctrl-D or `:quit`; returns the exit
// status for the process.
int RunRepl(const Options& options);

}  // namespace runnel::interp

#endif  // RUNNEL_CLI_REPL_H_
