// Shared by the GPU tests (tests/gpu/*_test.cc): run an op on the CPU and
// on the GPU with the same inputs and compare, within tolerances per dtype,
// its output and (optionally) its gradients. Without a GPU a test skips
// itself with SKIP_WITHOUT_GPU(), saying why.
#ifndef RUNNEL_TESTS_GPU_GPU_COMPARE_H_
#define RUNNEL_TESTS_GPU_GPU_COMPARE_H_

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "framework/attr_value.h"
#include "framework/device_set.h"
#include "framework/tensor.h"

namespace runnel {

#define SKIP_WITHOUT_GPU()                                         \
  do {                                                             \
    std::string why;                                               \
    if (VisibleGpus(&why) == 0) GTEST_SKIP() << "no GPU: " << why; \
  } while (0)

struct Tolerance {
  double rtol, atol;
};
// `matmul`: the looser f32 tolerance of a long sum (matmul, reductions).
Tolerance ToleranceOf(DType d, bool matmul);

// Random values of `dtype` and `shape`: in [lo, hi) for floats, small
// integers for integers, alternating for bool.
Tensor Random(DType dtype, const Shape& shape, int seed, double lo = -2,
              double hi = 2);

struct Result {
  std::vector<Tensor> values;           // the op's outputs, then each gradient
  std::vector<std::string> on_gpu;      // the nodes placed on a GPU
  std::vector<std::string> ops_on_gpu;  // and their ops
  int num_outputs = 0;                  // the op's, first in `values`
};

// `op` of `inputs` (fed through placeholders), and with `grad` the
// gradients of sum(op(...)) with respect to the float inputs, run with the
// op asking for `device` ("" = CPU only).
Result RunOp(const std::string& op, const std::vector<Tensor>& inputs,
             const AttrMap& attrs, const std::string& device, bool grad);

void ExpectClose(const Tensor& gpu, const Tensor& cpu, Tolerance tol,
                 const std::string& what);

// Runs the op on both devices and compares; the op itself must have run on
// the GPU, and so must a node of each op in `also_on_gpu` (its gradient's
// ops). `long_sum` picks ToleranceOf(..., true).
void Compare(const std::string& op, const std::vector<Tensor>& inputs,
             const AttrMap& attrs = {}, bool grad = false,
             bool long_sum = false,
             const std::vector<std::string>& also_on_gpu = {});

}  // namespace runnel

#endif  // RUNNEL_TESTS_GPU_GPU_COMPARE_H_
