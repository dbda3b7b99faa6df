// Iteration over host values, for `for` loops and the builtins that walk
// values (docs/language.md §5).
#ifndef RUNNEL_INTERPRETER_ITERATION_H_
#define RUNNEL_INTERPRETER_ITERATION_H_

#include <memory>

#include "absl/status/statusor.h"
#include "interpreter/value.h"

namespace runnel::interp {

// An iterator over a value: ranges, lists, tuples, concrete tensors (axis
// 0), datasets (rows as records), records ((name, value) pairs), iterables.
absl::StatusOr<std::unique_ptr<Iterator>> Iterate(const Value& v,
                                                  const SourceSpan& span);
// Element count of what Iterate would give, -1 when unknown.
int64_t IterationCount(const Value& v);

}  // namespace runnel::interp

#endif  // RUNNEL_INTERPRETER_ITERATION_H_
