#include "base/errors.h"

#include "absl/strings/str_split.h"
#include "base/strings.h"

namespace runnel {
namespace {
constexpr char kNodePayload[] = "runnel/node";
constexpr char kSpanPayload[] = "runnel/span";
}  // namespace

absl::Status AttachNode(absl::Status status, std::string_view node_name,
                        const SourceSpan& span) {
  if (status.ok() || status.GetPayload(kNodePayload).has_value()) return status;
  status.SetPayload(kNodePayload, absl::Cord(std::string(node_name)));
  if (span.known()) {
    status.SetPayload(
        kSpanPayload,
        absl::Cord(StrCat(span.line, ":", span.col, ":", span.end_line, ":",
                          span.end_col, ":", span.file)));
  }
  return status;
}

std::optional<std::string> NodeNameOf(const absl::Status& status) {
  auto p = status.GetPayload(kNodePayload);
  if (!p) return std::nullopt;
  return std::string(*p);
}

std::optional<SourceSpan> SpanOf(const absl::Status& status) {
  auto p = status.GetPayload(kSpanPayload);
  if (!p) return std::nullopt;
  std::vector<std::string> parts =
      absl::StrSplit(std::string(*p), absl::MaxSplits(':', 4));
  if (parts.size() != 5) return std::nullopt;
  SourceSpan s;
  s.line = std::atoi(parts[0].c_str());
  s.col = std::atoi(parts[1].c_str());
  s.end_line = std::atoi(parts[2].c_str());
  s.end_col = std::atoi(parts[3].c_str());
  s.file = parts[4];
  return s;
}

}  // namespace runnel
