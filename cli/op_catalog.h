// The catalogue of ops and builtins, from their one source each: the op
// registry (framework/op_registry.h, common_runtime/gradients.h,
// framework/kernel.h) and the builtin table (builtins.h).
//
// `runnel ops --json` prints it; scripts/gen_ops_doc.py turns that into
// docs/ops.md and the editors' vocabulary, and tests check those committed
// files are current. The REPL's `:help NAME` reads it too.
#ifndef RUNNEL_CLI_OP_CATALOG_H_
#define RUNNEL_CLI_OP_CATALOG_H_

#include <optional>
#include <string>
#include <string_view>

namespace runnel::cli {

// Every registered op (name, inputs, variadic, outputs, attributes with
// defaults, dtype groups, stateful, gradient, CPU kernel dtypes, doc and
// the builtins that apply it) and every builtin (name, parameters with
// defaults, ops), as one JSON object; ops and builtins sorted by name.
std::string OpsJson();

// The help for builtin or op `name`: its signature and the doc of the ops
// it applies; nullopt when `name` is neither.
std::optional<std::string> HelpText(std::string_view name);

}  // namespace runnel::cli

#endif  // RUNNEL_CLI_OP_CATALOG_H_
