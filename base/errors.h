// Errors that point at a graph node and the script location that made it.
//
// The runtime reports every failure as absl::Status. A failure tied to a node
// carries the node's name and source span as payloads, so the interpreter can
// print `file:line:col` and the source line without parsing messages.
#ifndef RUNNEL_BASE_ERRORS_H_
#define RUNNEL_BASE_ERRORS_H_

#include <optional>
#include <string>

#include "absl/status/status.h"
#include "base/source_span.h"

namespace runnel {

// Returns `status` with the node's name and span attached (the first
// attachment wins: an error keeps pointing at the node that raised it).
absl::Status AttachNode(absl::Status status, std::string_view node_name,
                        const SourceSpan& span);
std::optional<std::string> NodeNameOf(const absl::Status& status);
std::optional<SourceSpan> SpanOf(const absl::Status& status);

}  // namespace runnel

#endif  // RUNNEL_BASE_ERRORS_H_
