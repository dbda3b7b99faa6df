// Shape functions shared by many ops, and helpers for writing new ones.
#ifndef RUNNEL_FRAMEWORK_SHAPE_FNS_H_
#define RUNNEL_FRAMEWORK_SHAPE_FNS_H_

#include <vector>

#include "absl/status/statusor.h"
#include "framework/op_registry.h"

namespace runnel {

using Specs = absl::StatusOr<std::vector<TensorSpec>>;

// One output with input 0's dtype and shape (neg, relu, identity, ...).
Specs UnchangedShape(const ShapeContext& c);
// Like UnchangedShape but requires a floating input (exp, sigmoid, ...).
Specs FloatUnchangedShape(const ShapeContext& c);
// NumPy broadcasting of two shapes; unknown dims broadcast to unknown.
// Error text: "shapes [2,3] and [4] cannot be broadcast".
absl::StatusOr<Shape> BroadcastShapes(const Shape& a, const Shape& b);
// For each matrix of `out` (rank >= 2; its leading dims are the batch), the
// element offset of the matrix of `in` (matrix_size elements each) that
// NumPy's broadcasting of the batch dims pairs with it.
std::vector<int64_t> BatchOffsets(const Shape& in, const Shape& out,
                                  int64_t matrix_size);
// One matmul's geometry from its operands' shapes, shared by the CPU and
// GPU kernels: the product's dims, the output's shape, and for each output
// matrix the element offsets of its operands (batch dims broadcast as in
// NumPy, right-aligned). A stack of untransposed matrices times one matrix
// is planned as one product of all the stack's rows (m is their count).
struct MatMulPlan {
  int64_t m = 0, n = 0, k = 0;
  int64_t a_rows = 0, a_cols = 0, b_rows = 0, b_cols = 0;  // as stored
  bool ta = false, tb = false;
  Shape out;
  std::vector<int64_t> a_offsets, b_offsets;
};
// InvalidArgument names both operands ("inner dimensions differ: f32[2,3]
// @ f32[4,5]") for a rank below 2 or inner dims that differ.
absl::StatusOr<MatMulPlan> PlanMatMul(const Shape& a, const Shape& b, bool ta,
                                      bool tb, DType dtype);
// Two inputs of one dtype, broadcast; output dtype = input dtype, or
// `out_dtype` when given (comparisons give bool).
Specs BinaryBroadcastShape(const ShapeContext& c,
                           std::optional<DType> out_dtype = std::nullopt);
// Checks every input has the same dtype; error names both dtypes:
// "dtypes differ: f32 and f64".
absl::Status SameDTypes(const ShapeContext& c, int first, int last);
// Normalises an axis in [-rank, rank) to [0, rank); error names the axis.
absl::StatusOr<int> NormalizeAxis(int64_t axis, int rank);
// Reads the "axis" attribute (int, int list, or absent = all axes) and
// returns sorted, unique, non-negative axes for an input of `rank`.
absl::StatusOr<std::vector<int>> ReductionAxes(const ShapeContext& c, int rank);
// The shape of a reduction of `in` over `axes`.
Shape ReducedShape(const Shape& in, const std::vector<int>& axes,
                   bool keepdims);
// Reads a shape from a known i32/i64 vector tensor (for reshape, fill, ...);
// returns UnknownRank when `value` is null but the vector length is known
// from `spec` (then all dims unknown).
absl::StatusOr<Shape> ShapeFromTensor(const Tensor* value,
                                      const TensorSpec& spec);
// A single output spec.
inline Specs One(DType dtype, Shape shape) {
  return std::vector<TensorSpec>{TensorSpec{dtype, std::move(shape)}};
}

}  // namespace runnel

#endif  // RUNNEL_FRAMEWORK_SHAPE_FNS_H_
