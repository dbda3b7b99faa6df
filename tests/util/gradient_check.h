// The gradient-check harness: compares the symbolic gradient AddGradients
// builds for an op against central finite differences, in f64.
//
//   CheckGradient("mul", {Diff({2, 3}), Diff({3})});
//
// Each differentiable input is a placeholder filled with deterministic
// values in [lo, hi] (away from zero when asked, for log or div); fixed
// inputs (indices, labels, conditions) are constants. The checked function
// is L = sum_k sum(out_k * w_k) over the op's floating outputs, with fixed
// random weights w_k, so every output element's gradient matters.
#ifndef RUNNEL_TESTS_UTIL_GRADIENT_CHECK_H_
#define RUNNEL_TESTS_UTIL_GRADIENT_CHECK_H_

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "framework/attr_value.h"
#include "framework/graph.h"
#include "framework/shape.h"
#include "framework/tensor.h"

namespace runnel::testing {

struct GradInput {
  Shape shape;
  std::optional<Tensor> fixed = {};  // a constant input, not differentiated
  double lo = -1, hi = 1;
  bool away_from_zero = false;  // values in [lo, hi] with |v| >= 0.2
};

// A differentiable f64 input of `shape` with values in [lo, hi].
GradInput Diff(Shape shape, double lo = -1, double hi = 1);
// Positive values in [0.2, 2].
GradInput Positive(Shape shape);
// Values in [-2, -0.2] and [0.2, 2].
GradInput NonZero(Shape shape);
// A constant input.
GradInput Fixed(Tensor t);

struct GradCheckOptions {
  double step = 1e-6;
  double tolerance = 1e-6;  // absolute plus relative
  uint32_t salt = 17;
  // Placeholders of the inputs' ranks with every dimension unknown (`?`),
  // so gradient functions must take sizes from shapes at run time.
  bool unknown_dims = false;
};

// Builds `op` over the inputs, differentiates, and EXPECTs every element of
// every differentiable input's gradient to match finite differences.
void CheckGradient(const std::string& op, const std::vector<GradInput>& inputs,
                   AttrMap attrs = {}, GradCheckOptions options = {});

// The same for a graph built by `build` from the differentiable inputs'
// placeholders (for compositions and gradients of gradients). `build`
// returns the outputs to check.
using GraphBuilderFn =
    std::function<std::vector<NodeOut>(Graph&, const std::vector<NodeOut>&)>;
void CheckGradientOf(const GraphBuilderFn& build,
                     const std::vector<GradInput>& inputs,
                     GradCheckOptions options = {});

}  // namespace runnel::testing

#endif  // RUNNEL_TESTS_UTIL_GRADIENT_CHECK_H_
