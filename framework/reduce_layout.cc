#include "framework/reduce_layout.h"

#include <algorithm>

namespace runnel {

ReduceLayout PlanReduceLayout(const std::vector<int64_t>& dims,
                              const std::vector<int>& axes) {
  // Runs of reduced / kept dims, outermost first.
  std::vector<int64_t> size;
  std::vector<bool> is_reduced;
  for (size_t i = 0; i < dims.size(); ++i) {
    if (dims[i] == 1) continue;
    const bool r =
        std::binary_search(axes.begin(), axes.end(), static_cast<int>(i));
    if (!size.empty() && is_reduced.back() == r) {
      size.back() *= dims[i];
    } else {
      size.push_back(dims[i]);
      is_reduced.push_back(r);
    }
  }
  const int groups = static_cast<int>(size.size());
  const int runs =
      static_cast<int>(std::count(is_reduced.begin(), is_reduced.end(), true));
  ReduceLayout l;
  if (runs <= 1) {
    const int first =
        static_cast<int>(std::find(is_reduced.begin(), is_reduced.end(), true) -
                         is_reduced.begin());
    for (int g = 0; g < groups; ++g) {
      if (g < first) l.outer *= size[g];
      if (g == first) l.reduced = size[g];
      if (g > first) l.inner *= size[g];
    }
    return l;
  }
  std::vector<int64_t> stride(groups);
  int64_t s = 1;
  for (int g = groups - 1; g >= 0; --g) {
    stride[g] = s;
    s *= size[g];
  }
  l.reduced = 1;
  for (bool want_reduced : {false, true}) {
    for (int g = 0; g < groups; ++g) {
      if (is_reduced[g] != want_reduced) continue;
      l.permute_dims.push_back(size[g]);
      l.permute_strides.push_back(stride[g]);
      (want_reduced ? l.reduced : l.outer) *= size[g];
    }
  }
  return l;
}

}  // namespace runnel
