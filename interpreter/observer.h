// What a tool watching a script's evaluation is told: every expression's
// value and every name bound, with the spans they come from. The language
// server (cli/lsp) learns types and shapes this way from the same checker
// `runnel check` runs; nothing else installs one, and without one the
// interpreter pays a null test per expression.
#ifndef RUNNEL_INTERPRETER_OBSERVER_H_
#define RUNNEL_INTERPRETER_OBSERVER_H_

#include <string>

#include "interpreter/value.h"
#include "lang/ast.h"

namespace runnel::interp {

class Observer {
 public:
  virtual ~Observer() = default;
  // `e` evaluated to `v` (each time it is evaluated).
  virtual void Evaluated(const lang::Expr& e, const Value& v) = 0;
  // `name` was bound, as `b` says (its kind, value and declaration span).
  virtual void Bound(const std::string& name, const Binding& b) = 0;
};

}  // namespace runnel::interp

#endif  // RUNNEL_INTERPRETER_OBSERVER_H_
