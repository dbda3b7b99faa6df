// `:help` for functions written in Runnel (`:help nn.dense`): the header of
// a `def` and the comment block right above it, its doc comment.
#ifndef RUNNEL_CLI_DEF_HELP_H_
#define RUNNEL_CLI_DEF_HELP_H_

#include <optional>
#include <string>
#include <string_view>

namespace runnel::cli {

// The help of the top-level `def NAME(...)` in `source` (the text of
// `file`): "def NAME(params)", where it is, then its doc comment; nullopt
// when `source` defines no such function.
std::optional<std::string> DefHelp(std::string_view source,
                                   std::string_view name,
                                   std::string_view file);

}  // namespace runnel::cli

#endif  // RUNNEL_CLI_DEF_HELP_H_
