// The builtin functions of docs/language.md §6: one table that maps each name,
// with the language's parameter names and defaults, to its implementation
// — mostly a registered op applied through Interpreter::ApplyOp, else host
// code (print, fmt, data files, datasets, progress bars).
//
// The table is the one list of builtin names: `runnel ops --json`
// (op_catalog.h) prints it with the op registry, and docs/ops.md and the
// editors' vocabulary are generated from that.
#ifndef RUNNEL_INTERPRETER_BUILTINS_H_
#define RUNNEL_INTERPRETER_BUILTINS_H_

#include <functional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "interpreter/graph_builder.h"
#include "interpreter/value.h"

namespace runnel::interp {

class Interpreter;

struct BuiltinParam {
  explicit BuiltinParam(std::string n) : name(std::move(n)) {}
  BuiltinParam(std::string n, Value def)
      : name(std::move(n)), required(false), default_value(std::move(def)) {}
  std::string name;
  bool required = true;
  Value default_value;  // when !required (none = "absent")
};

// The arguments of one builtin call, bound to its parameters.
struct CallArgs {
  const Builtin* builtin = nullptr;
  std::vector<Value> values;  // one per parameter
  std::vector<bool> given;    // whether the caller passed it
  std::vector<SourceSpan> spans;
  std::vector<Value> rest;  // extra positional arguments (variadic)
  std::vector<SourceSpan> rest_spans;
  std::vector<Field> named;  // extra named arguments (kwargs)
  std::vector<SourceSpan> named_spans;
  SourceSpan span;   // the whole call
  std::string hint;  // `let NAME = f(...)`: the name of the node made

  const Value& operator[](int i) const { return values[i]; }
  const SourceSpan& span_of(int i) const { return spans[i]; }
};

using BuiltinFn = std::function<absl::StatusOr<Value>(Interpreter&, CallArgs&)>;

struct Builtin {
  std::string name;
  std::vector<BuiltinParam> params;
  BuiltinFn fn;
  bool variadic = false;  // extra positional arguments go to `rest`
  bool kwargs = false;    // extra named arguments go to `named`
  // The registered ops the builtin applies (docs/ops.md, `:help`); empty
  // for host builtins.
  std::vector<std::string> ops = {};
};

// Every builtin, in a stable order. Built on first use.
const std::vector<Builtin>& Builtins();

// Argument helpers for builtins in other files: the call's OpSite (the
// `let` name it binds, when `named`), "NAME: 'param'" for messages, and
// argument `i` as a concrete scalar of a kind (an error at the argument
// otherwise).
OpSite Site(const CallArgs& a, bool named = true);
std::string ParamName(const CallArgs& a, int i);
absl::StatusOr<int64_t> IntArg(const CallArgs& a, int i);
absl::StatusOr<double> NumberArg(const CallArgs& a, int i);
absl::StatusOr<bool> BoolArg(const CallArgs& a, int i);
absl::StatusOr<std::string> StringArg(const CallArgs& a, int i);
absl::StatusOr<DType> DTypeArg(const CallArgs& a, int i);
// A failed file operation as an error at the call ("load_text: ...").
absl::Status CheckFile(const CallArgs& a, const absl::Status& s);

// `save(path)` and `restore(path)`: every var and state to and from a
// checkpoint file (interpreter/builtins/checkpoint_builtins.cc).
absl::StatusOr<Value> SaveBuiltin(Interpreter& in, CallArgs& a);
absl::StatusOr<Value> RestoreBuiltin(Interpreter& in, CallArgs& a);

// Queues, runners and readers (interpreter/builtins/queue_builtins.cc): adds
// `queue`, `enqueue`, ..., `runner`, `read_idx`, and makes `size` take a
// queue too.
void AddQueueBuiltins(std::vector<Builtin>& b);

// `load_records`, `words`, `vocabulary` and `encode`
// (interpreter/builtins/text_builtins.cc).
void AddTextBuiltins(std::vector<Builtin>& b);

}  // namespace runnel::interp

#endif  // RUNNEL_INTERPRETER_BUILTINS_H_
