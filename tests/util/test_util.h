// Helpers shared by the runtime and kernel tests.
#ifndef RUNNEL_TESTS_UTIL_TEST_UTIL_H_
#define RUNNEL_TESTS_UTIL_TEST_UTIL_H_

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "common_runtime/eager.h"
#include "framework/tensor.h"

namespace runnel::testing {

// A process-wide eager context with 2 threads and seed 0.
EagerContext& Eager();

// Runs `op` eagerly and returns its only output; fails the test on error.
Tensor Run1(const std::string& op, std::vector<Tensor> inputs,
            AttrMap attrs = {});
// Runs `op` eagerly and returns the error it must give.
absl::Status RunError(const std::string& op, std::vector<Tensor> inputs,
                      AttrMap attrs = {});

// Builders: F32({1, 2, 3}, {3}), I32({...}, {...}), ...
Tensor F32(const std::vector<float>& v, Shape s);
Tensor F64(const std::vector<double>& v, Shape s);
Tensor I32(const std::vector<int32_t>& v, Shape s);
Tensor I64(const std::vector<int64_t>& v, Shape s);
Tensor Bool(const std::vector<bool>& v, Shape s);

// Deterministic values in [-1, 1) from a linear congruential generator
// started at `salt * (seed + 1)`; `salt` lets a file keep its own stream.
std::vector<float> PatternValues(int64_t n, int seed, uint32_t salt);

// The message of `s`, as a std::string (for EXPECT_EQ and HasSubstr).
std::string Message(const absl::Status& s);

// The two CPUs of the local task, as the placer names them.
inline constexpr char kCpu0[] = "/job:localhost/task:0/device:cpu:0";
inline constexpr char kCpu1[] = "/job:localhost/task:0/device:cpu:1";

// `name` in the test's temporary directory.
std::string TempPath(const std::string& name);
// Writes `bytes` to the file `path`, replacing it.
void WriteFile(const std::string& path, const std::string& bytes);

// Expects dtype, shape and values (compared as doubles, within `tol`
// relative-or-absolute; exact when tol == 0).
void ExpectTensor(const Tensor& t, DType dtype, const Shape& shape,
                  const std::vector<double>& values, double tol = 1e-6);

}  // namespace runnel::testing

#endif  // RUNNEL_TESTS_UTIL_TEST_UTIL_H_
