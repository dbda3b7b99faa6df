#include "interpreter/diag.h"

#include <algorithm>
#include <cstdlib>

#include "absl/strings/cord.h"
#include "base/errors.h"
#include "base/strings.h"

namespace runnel::interp {
namespace {

constexpr char kDiagPayload[] = "runnel/interp/diagnostic";
constexpr char kExitPayload[] = "runnel/interp/exit";

// Length-prefixed fields: "<len>:<bytes>" each.
void PutField(std::string* out, std::string_view s) {
  *out += StrCat(s.size(), ":");
  out->append(s.data(), s.size());
}
void PutInt(std::string* out, int64_t v) { PutField(out, StrCat(v)); }

bool GetField(std::string_view* in, std::string* s) {
  size_t colon = in->find(':');
  if (colon == std::string_view::npos) return false;
  size_t len =
      std::strtoull(std::string(in->substr(0, colon)).c_str(), nullptr, 10);
  if (colon + 1 + len > in->size()) return false;
  *s = std::string(in->substr(colon + 1, len));
  in->remove_prefix(colon + 1 + len);
  return true;
}
bool GetInt(std::string_view* in, int* v) {
  std::string s;
  if (!GetField(in, &s)) return false;
  *v = std::atoi(s.c_str());
  return true;
}

void Encode(const lang::Diagnostic& d, std::string* out) {
  PutInt(out, static_cast<int>(d.severity));
  PutField(out, d.message);
  PutField(out, d.span.file.str());
  PutInt(out, d.span.line);
  PutInt(out, d.span.col);
  PutInt(out, d.span.end_line);
  PutInt(out, d.span.end_col);
  PutInt(out, d.caret_col);
  PutInt(out, static_cast<int64_t>(d.notes.size()));
  for (const lang::Diagnostic& n : d.notes) Encode(n, out);
}

bool Decode(std::string_view* in, lang::Diagnostic* d) {
  int severity = 0, notes = 0;
  std::string file;
  if (!GetInt(in, &severity) || !GetField(in, &d->message) ||
      !GetField(in, &file) || !GetInt(in, &d->span.line) ||
      !GetInt(in, &d->span.col) || !GetInt(in, &d->span.end_line) ||
      !GetInt(in, &d->span.end_col) || !GetInt(in, &d->caret_col) ||
      !GetInt(in, &notes)) {
    return false;
  }
  d->span.file = file;
  d->severity = static_cast<lang::Severity>(severity);
  for (int i = 0; i < notes; ++i) {
    lang::Diagnostic n;
    if (!Decode(in, &n)) return false;
    d->notes.push_back(std::move(n));
  }
  return true;
}

}  // namespace

absl::Status DiagStatus(lang::Diagnostic d) {
  absl::Status s = absl::InvalidArgumentError(d.message);
  std::string encoded;
  Encode(d, &encoded);
  s.SetPayload(kDiagPayload, absl::Cord(encoded));
  return s;
}

absl::Status ErrorAt(const SourceSpan& span, std::string message, int caret) {
  lang::Diagnostic d;
  d.message = std::move(message);
  d.span = span;
  d.caret_col = caret;
  return DiagStatus(std::move(d));
}

std::optional<lang::Diagnostic> DiagOf(const absl::Status& status) {
  auto p = status.GetPayload(kDiagPayload);
  if (!p) return std::nullopt;
  std::string s(*p);
  std::string_view in(s);
  lang::Diagnostic d;
  if (!Decode(&in, &d)) return std::nullopt;
  return d;
}

lang::Diagnostic Note(const SourceSpan& span, std::string message) {
  lang::Diagnostic n;
  n.severity = lang::Severity::kNote;
  n.span = span;
  n.message = std::move(message);
  return n;
}

absl::Status AddNote(absl::Status status, const SourceSpan& span,
                     std::string message) {
  if (ExitCodeOf(status)) return status;
  lang::Diagnostic d = ToDiagnostic(status, SourceSpan{});
  d.notes.push_back(Note(span, std::move(message)));
  return DiagStatus(std::move(d));
}

absl::Status EndOfData(const absl::Status& diag) {
  absl::Status s(absl::StatusCode::kOutOfRange, diag.message());
  diag.ForEachPayload([&](absl::string_view url, const absl::Cord& payload) {
    s.SetPayload(url, payload);
  });
  return s;
}

bool IsEndOfData(const absl::Status& status) {
  return status.code() == absl::StatusCode::kOutOfRange;
}

absl::Status ExitRequest(int code) {
  absl::Status s = absl::CancelledError(StrCat("exit(", code, ")"));
  s.SetPayload(kExitPayload, absl::Cord(StrCat(code)));
  return s;
}

std::optional<int> ExitCodeOf(const absl::Status& status) {
  auto p = status.GetPayload(kExitPayload);
  if (!p) return std::nullopt;
  return std::atoi(std::string(*p).c_str());
}

lang::Diagnostic ToDiagnostic(const absl::Status& status,
                              const SourceSpan& fallback) {
  if (std::optional<lang::Diagnostic> d = DiagOf(status)) return *d;
  lang::Diagnostic d;
  d.message = std::string(ToStd(status.message()));
  if (d.message.empty()) d.message = status.ToString();
  std::optional<SourceSpan> span = SpanOf(status);
  d.span = span ? *span : fallback;
  return d;
}

int EditDistance(std::string_view a, std::string_view b) {
  // Optimal string alignment: a swap of two neighbours counts as one edit.
  const size_t n = b.size();
  std::vector<int> prev2(n + 1), prev(n + 1), cur(n + 1);
  for (size_t j = 0; j <= n; ++j) prev[j] = static_cast<int>(j);
  for (size_t i = 1; i <= a.size(); ++i) {
    cur[0] = static_cast<int>(i);
    for (size_t j = 1; j <= n; ++j) {
      int sub = prev[j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1);
      cur[j] = std::min({prev[j] + 1, cur[j - 1] + 1, sub});
      if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1]) {
        cur[j] = std::min(cur[j], prev2[j - 2] + 1);
      }
    }
    prev2 = prev;
    prev = cur;
  }
  return prev[n];
}

std::string ClosestName(std::string_view name,
                        const std::vector<std::string>& candidates) {
  const int limit = std::max<int>(1, static_cast<int>(name.size()) / 3);
  std::string best;
  int best_d = limit + 1;
  for (const std::string& c : candidates) {
    if (c == name || c.empty()) continue;
    int d = EditDistance(name, c);
    if (d < best_d || (d == best_d && c < best)) {
      best = c;
      best_d = d;
    }
  }
  return best_d <= limit ? best : std::string();
}

}  // namespace runnel::interp
