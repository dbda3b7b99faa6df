// Indexing and slicing of values: `xs[i]`, `x[1:, ::2, t]` (docs/language.md
// §3). Concrete subscripts on concrete values run now; a symbolic tensor or
// a symbolic index or bound makes graph nodes through the GraphBuilder.
#ifndef RUNNEL_INTERPRETER_INDEXING_H_
#define RUNNEL_INTERPRETER_INDEXING_H_

#include <vector>

#include "absl/status/statusor.h"
#include "interpreter/graph_builder.h"
#include "interpreter/value.h"

namespace runnel::interp {

// One subscript: an index, or a slice `lo:hi:step` (none = absent).
struct Subscript {
  bool is_slice = false;
  Value index = {}, lo = {}, hi = {}, step = {};
  SourceSpan span = {};
};

// target[subs...]; errors point at the subscript they are about, or `site`.
absl::StatusOr<Value> Index(GraphBuilder& b, const Value& target,
                            const std::vector<Subscript>& subs,
                            const OpSite& site);

}  // namespace runnel::interp

#endif  // RUNNEL_INTERPRETER_INDEXING_H_
