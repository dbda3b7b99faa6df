// How evaluation errors travel: an absl::Status that carries a ready
// lang::Diagnostic (message, span, caret, notes) as a payload, so every
// function of the interpreter can return Status/StatusOr and the place that
// reports it prints exactly what the failing code described. `exit(code)`
// travels the same way, as a status carrying the exit code.
#ifndef RUNNEL_INTERPRETER_DIAG_H_
#define RUNNEL_INTERPRETER_DIAG_H_

#include <new>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "base/strings.h"
#include "framework/allocator.h"
#include "lang/diagnostics.h"

namespace runnel::interp {

// A status carrying `d` (its message is d.message).
absl::Status DiagStatus(lang::Diagnostic d);
// An error at `span`; `caret` is a column on the span's first line (0 = the
// span's start).
absl::Status ErrorAt(const SourceSpan& span, std::string message,
                     int caret = 0);
std::optional<lang::Diagnostic> DiagOf(const absl::Status& status);
// Adds a note to the diagnostic `status` carries (or makes one from a plain
// status at `fallback`).
absl::Status AddNote(absl::Status status, const SourceSpan& span,
                     std::string message);
lang::Diagnostic Note(const SourceSpan& span, std::string message);

// The end of the input (a dequeue from a closed queue, a reader past its
// last epoch): `diag` with code OutOfRange. It ends the host `for` or
// `loop` whose body ran into it, like the end of the data; elsewhere it is
// an error as any other.
absl::Status EndOfData(const absl::Status& diag);
bool IsEndOfData(const absl::Status& status);

// `exit(code)`: stops evaluation with this process exit code.
absl::Status ExitRequest(int code);
std::optional<int> ExitCodeOf(const absl::Status& status);

// The diagnostic to print for any status: its own, or one built from the
// runtime's node span (base/errors.h), or one at `fallback`.
lang::Diagnostic ToDiagnostic(const absl::Status& status,
                              const SourceSpan& fallback);

// Runs `fn` (returning a Status or StatusOr) and turns an allocation
// failure inside it into "<what>: out of memory (N bytes requested)" at
// `span`, so that no exception reaches std::terminate.
template <typename Fn>
auto OutOfMemoryAsError(Fn&& fn, const SourceSpan& span, std::string_view what)
    -> decltype(fn()) {
  std::string message;
  try {
    return fn();
  } catch (const AllocationFailed& e) {
    message = OutOfMemoryMessage(e.bytes());
  } catch (const std::bad_alloc&) {
    message = "out of memory";
  } catch (const std::length_error&) {
    message = "out of memory (a size past what the system allows)";
  }
  if (!what.empty()) message = StrCat(what, ": ", message);
  return ErrorAt(span, std::move(message));
}

// Edit distance, and the closest of `candidates` to `name` when close
// enough to be a likely typo ("relux" -> "relu"); empty when none is.
int EditDistance(std::string_view a, std::string_view b);
std::string ClosestName(std::string_view name,
                        const std::vector<std::string>& candidates);

}  // namespace runnel::interp

#endif  // RUNNEL_INTERPRETER_DIAG_H_
