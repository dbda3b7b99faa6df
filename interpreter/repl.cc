// Placeholder until the REPL lands: says so and exits with the usage status.
#include "interpreter/repl.h"

#include <cstdio>

namespace runnel::interp {

int RunRepl(const Options& options) {
  std::fputs(
      "runnel: the interactive REPL is not available yet; run a script with "
      "'runnel run FILE' (see 'runnel --help')\n",
      stderr);
  return kExitUsage;
}

}  // namespace runnel::interp
