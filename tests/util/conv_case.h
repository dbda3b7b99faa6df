// A conv2d case of the kernel tests (nn_test, grad_ops_test): the input,
// the filters, strides, dilations and padding, and its attributes.
#ifndef RUNNEL_TESTS_UTIL_CONV_CASE_H_
#define RUNNEL_TESTS_UTIL_CONV_CASE_H_

#include <cstdint>
#include <string>
#include <vector>

#include "framework/attr_value.h"

namespace runnel::testing {

struct ConvCase {
  int64_t n, h, w, c;      // input
  int64_t kh, kw, o;       // filters
  int64_t sh, sw, dh, dw;  // strides, dilations
  bool same;
};

inline AttrMap ConvAttrs(const ConvCase& k) {
  return {{"strides", std::vector<int64_t>{k.sh, k.sw}},
          {"dilations", std::vector<int64_t>{k.dh, k.dw}},
          {"padding", std::string(k.same ? "same" : "valid")}};
}

}  // namespace runnel::testing

#endif  // RUNNEL_TESTS_UTIL_CONV_CASE_H_
