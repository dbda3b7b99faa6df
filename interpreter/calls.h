// Binding a call's arguments to a callee's parameters, one way for user
// functions (`def`, `fn`) and builtins alike (docs/language.md §4): positional
// arguments first, then named ones; every message about a missing, duplicate,
// unknown or extra argument comes from here.
#ifndef RUNNEL_INTERPRETER_CALLS_H_
#define RUNNEL_INTERPRETER_CALLS_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "interpreter/value.h"

namespace runnel::interp {

// The arguments of a call as written: positional, then named.
struct Arguments {
  std::vector<Value> positional;
  std::vector<SourceSpan> positional_spans;
  std::vector<Field> named;
  std::vector<SourceSpan> named_spans;
};

// What the callee declares.
struct Signature {
  std::string shown;  // how messages name the callee: "dense()", "the function"
  std::vector<std::string> names;
  std::vector<bool> required;  // per parameter: no default
  bool variadic = false;       // extra positional arguments go to `rest`
  bool kwargs = false;         // unknown named arguments go to `extra_named`
};

struct BoundArguments {
  std::vector<Value> values;  // one per parameter; none where not given
  std::vector<bool> given;    // whether the caller passed it
  std::vector<SourceSpan> spans;
  std::vector<Value> rest;
  std::vector<SourceSpan> rest_spans;
  std::vector<Field> extra_named;
  std::vector<SourceSpan> extra_named_spans;
};

// Binds `args` to `sig`. Errors point at the argument they are about, or at
// `call` (too many, missing). Parameters that are neither given nor
// required are left for the caller to default.
absl::StatusOr<BoundArguments> BindArguments(const Signature& sig,
                                             Arguments args,
                                             const SourceSpan& call);

}  // namespace runnel::interp

#endif  // RUNNEL_INTERPRETER_CALLS_H_
