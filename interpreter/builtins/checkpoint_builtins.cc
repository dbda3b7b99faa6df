// `save` and `restore` (docs/language.md §6): every var and state of
// the interpreter's session, by node name, through common_runtime/saver.h.
// Errors point at the call and name the file and the tensors; a mismatch
// adds a note at each variable's declaration. In check mode both do nothing
// (like save_npy): `runnel check` runs nothing and touches no file.
#include <algorithm>

#include "base/errors.h"
#include "base/status_macros.h"
#include "base/strings.h"
#include "common_runtime/saver.h"
#include "interpreter/builtins.h"
#include "interpreter/diag.h"
#include "interpreter/interpreter.h"
#include "io/checkpoint.h"

namespace runnel::interp {
namespace {

// Notes past this many would bury the error.
constexpr size_t kMaxNotes = 8;

absl::StatusOr<std::string> PathArg(const CallArgs& a) {
  if (a[0].kind() != ValueKind::kString) {
    return ErrorAt(a.span_of(0),
                   StrCat(a.builtin->name, ": 'path' must be a string, got ",
                          DescribeValue(a[0])));
  }
  return a[0].str();
}

// "'a', 'b' and 2 more".
std::string Names(const std::vector<std::string>& names) {
  std::string out;
  for (size_t i = 0; i < names.size() && i < kMaxNotes; ++i) {
    out += StrCat(i > 0 ? ", " : "", "'", names[i], "'");
  }
  if (names.size() > kMaxNotes) {
    out += StrCat(" and ", names.size() - kMaxNotes, " more");
  }
  return out;
}

}  // namespace

absl::StatusOr<Value> SaveBuiltin(Interpreter& in, CallArgs& a) {
  RN_ASSIGN_OR_RETURN(std::string path, PathArg(a));
  if (in.check_mode()) return Value();
  absl::Status s = SaveVariables(in.host().session(), path);
  if (s.ok()) return Value();
  // Saving runs the initializers of variables never used yet; when one of
  // them fails, point at the node too.
  lang::Diagnostic d;
  d.message = StrCat("save: ", ToStd(s.message()));
  d.span = a.span;
  std::optional<std::string> node = NodeNameOf(s);
  std::optional<SourceSpan> span = SpanOf(s);
  if (node && span && span->known()) {
    const Node* n = in.graph().FindNode(*node);
    const bool declared =
        n != nullptr && (n->op() == "placeholder" || n->op() == "variable");
    d.notes.push_back(Note(
        *span, StrCat(*node, declared ? " declared here" : " was made here")));
  }
  return DiagStatus(std::move(d));
}

absl::StatusOr<Value> RestoreBuiltin(Interpreter& in, CallArgs& a) {
  RN_ASSIGN_OR_RETURN(std::string path, PathArg(a));
  if (in.check_mode()) return Value();
  std::vector<CheckpointMismatch> mismatches;
  std::vector<std::string> extra;
  absl::Status s =
      RestoreVariables(in.host().session(), path, &mismatches, &extra);
  if (s.ok()) return Value();
  lang::Diagnostic d;
  d.message = StrCat("restore: ", ToStd(s.message()));
  d.span = a.span;
  for (size_t i = 0; i < mismatches.size() && i < kMaxNotes; ++i) {
    const Node* v = mismatches[i].variable;
    if (v->span().known()) {
      d.notes.push_back(Note(v->span(), StrCat(v->name(), " declared here")));
    }
  }
  // A variable missing from the file is often one renamed: show what the
  // file has instead.
  const bool missing =
      std::any_of(mismatches.begin(), mismatches.end(),
                  [](const CheckpointMismatch& m) { return m.missing; });
  if (missing && !extra.empty()) {
    d.notes.push_back(
        Note(SourceSpan{}, StrCat("the checkpoint has ", Names(extra),
                                  ", which no variable here is named")));
  }
  return DiagStatus(std::move(d));
}

}  // namespace runnel::interp
