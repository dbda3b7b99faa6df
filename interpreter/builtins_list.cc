// interpreter/builtins.list, embedded at build time (the CMake build writes
// builtins_list.inc from it), so the interpreter can check its table against
// the one list of builtin names.
#include <sstream>

#include "interpreter/interpreter.h"

namespace runnel::interp {

std::vector<std::string> Interpreter::BuiltinsListNames() {
  static const char kText[] =
#include "interpreter/builtins_list.inc"
      ;
  std::vector<std::string> names;
  std::istringstream in(kText);
  std::string line;
  while (std::getline(in, line)) {
    size_t hash = line.find('#');
    if (hash != std::string::npos) line.resize(hash);
    size_t a = line.find_first_not_of(" \t\r");
    if (a == std::string::npos) continue;
    size_t b = line.find_last_not_of(" \t\r");
    names.push_back(line.substr(a, b - a + 1));
  }
  return names;
}

const std::string* Interpreter::FindArg(const std::string& name) const {
  const std::string* found = nullptr;
  for (const auto& [k, v] : options_.args) {
    if (k == name) found = &v;  // the last one given wins
  }
  return found;
}

}  // namespace runnel::interp
