// How a reduction walks its input, for every device's kernels (the CPU's
// kernels/cpu/reduction_kernels.cc, the GPU's kernels/cuda/reduce*): dims of
// size 1 are dropped, and neighbouring dims that are all reduced or all
// kept merge, so any reduction whose reduced dims form one run is
// [outer, reduced, inner] as the input lies. When the reduced dims are
// several runs, the input is first copied with its kept dims first and its
// reduced dims last.
//
//   ReduceLayout l = PlanReduceLayout(x.shape().dims(), axes);
//   if (!l.permute_dims.empty()) { copy x permuted; reduce the copy }
//   reduce [l.outer, l.reduced, l.inner]
//
// Plain C++, so that it can be tested alone
// (tests/framework/gpu_reduce_shape_test.cc).
#ifndef RUNNEL_FRAMEWORK_REDUCE_LAYOUT_H_
#define RUNNEL_FRAMEWORK_REDUCE_LAYOUT_H_

#include <cstdint>
#include <vector>

namespace runnel {

struct ReduceLayout {
  // Output element o * inner + j reduces input elements
  // (o * reduced + r) * inner + j over r (of the permuted copy when there
  // is one).
  int64_t outer = 1, reduced = 1, inner = 1;
  // Empty when the input is reduced as it lies. Otherwise the copy to make
  // first: its dims (row-major, kept ones first, then reduced ones, so
  // inner is 1) and, for each, the input's stride along it.
  std::vector<int64_t> permute_dims, permute_strides;
};

// `axes` sorted and distinct, each in [0, dims.size()). Reducing no axes
// gives reduced = 1 (each output is its one input element); a rank-0 input
// gives 1, 1, 1.
ReduceLayout PlanReduceLayout(const std::vector<int64_t>& dims,
                              const std::vector<int>& axes);

}  // namespace runnel

#endif  // RUNNEL_FRAMEWORK_REDUCE_LAYOUT_H_
