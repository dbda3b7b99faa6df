// What the strided_slice op takes from its input, shared by its shape
// function (framework/ops/array_ops.cc) and its kernel, so both read the
// attributes in one way.
//
// The attributes are TensorFlow's: lists `begin`, `end`, `strides` (absent
// = all 1) with one entry per slice spec, and bit masks over those entries:
// `begin_mask`/`end_mask` (bit k set: ignore begin[k]/end[k] and take from
// the start/to the end), `shrink_axis_mask` (entry k is an index; its axis
// is dropped) and `new_axis_mask` (entry k inserts an axis of size 1).
// Input axes beyond the specs are taken whole. Indices are clamped like
// Python's; a shrunk index out of range is an error.
#ifndef RUNNEL_FRAMEWORK_OPS_ARRAY_OPS_H_
#define RUNNEL_FRAMEWORK_OPS_ARRAY_OPS_H_

#include <cstdint>
#include <vector>

#include "absl/status/statusor.h"
#include "framework/attr_value.h"
#include "framework/shape.h"

namespace runnel {

struct StridedSlicePlan {
  // Per input axis: the first index, the step (nonzero) and the number of
  // elements taken (-1 where the input dimension is unknown). A shrunk axis
  // takes one element.
  std::vector<int64_t> begin, stride, size;
  // The output: new axes inserted, shrunk axes removed.
  Shape output;
};

// Plans the slice of an input of shape `input` (which may be partially
// known; unknown rank gives an unknown-rank output and empty vectors).
absl::StatusOr<StridedSlicePlan> PlanStridedSlice(const Shape& input,
                                                  const AttrMap& attrs);

}  // namespace runnel

#endif  // RUNNEL_FRAMEWORK_OPS_ARRAY_OPS_H_
