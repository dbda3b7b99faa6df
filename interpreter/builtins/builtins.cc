// The builtin table: every builtin, and the ops each applies.
#include <map>

#include "framework/op_registry.h"
#include "interpreter/builtins/internal.h"
#include "interpreter/interpreter.h"

namespace runnel::interp {
namespace {

std::vector<Builtin> MakeBuiltins() {
  std::vector<Builtin> b;
  AddCreation(b);
  AddElementWise(b);
  AddReductions(b);
  AddShape(b);
  AddEinsum(b);
  AddNN(b);
  AddState(b);
  AddAutodiff(b);
  AddGraphControl(b);
  AddLoops(b);
  AddHost(b);
  AddData(b);
  AddCheckpoints(b);
  AddQueueBuiltins(b);
  AddTextBuiltins(b);

  // The ops each builtin applies: the op of its name, else these.
  const std::map<std::string, std::vector<std::string>> applies = {
      {"zeros", {"fill"}},
      {"conv2d_transpose", {"conv2d_backprop_input", "fill"}},
      {"conv3d_transpose", {"conv3d_backprop_input", "fill"}},
      {"ones", {"fill"}},
      {"arange", {"range"}},
      {"glorot_uniform", {"random_uniform"}},
      {"he_normal", {"random_normal"}},
      {"embedding_lookup", {"gather"}},
      {"gelu_exact", {"gelu"}},
      {"layer_normalize", {"layer_norm"}},
      {"batch_normalize", {"batch_norm"}},
      {"group", {"noop"}},
      {"size", {"size", "queue_size"}},
      {"close", {"queue_close"}},
      // The host's exit(code), not the loops' `exit` op.
      {"exit", {}},
  };
  for (Builtin& builtin : b) {
    auto it = applies.find(builtin.name);
    if (it != applies.end()) {
      builtin.ops = it->second;
    } else if (OpRegistry::Global().Find(builtin.name) != nullptr) {
      builtin.ops = {builtin.name};
    }
  }
  return b;
}

}  // namespace

const std::string* Interpreter::FindArg(const std::string& name) const {
  const std::string* found = nullptr;
  for (const auto& [k, v] : options().args) {
    if (k == name) found = &v;  // the last one given wins
  }
  return found;
}

const std::vector<Builtin>& Builtins() {
  static const auto* table = new std::vector<Builtin>(MakeBuiltins());
  return *table;
}

}  // namespace runnel::interp
