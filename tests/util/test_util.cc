#include "tests/util/test_util.h"

#include <cmath>
#include <fstream>

namespace runnel::testing {

EagerContext& Eager() {
  static EagerContext* ctx = new EagerContext({.num_threads = 2, .seed = 0});
  return *ctx;
}

Tensor Run1(const std::string& op, std::vector<Tensor> inputs, AttrMap attrs) {
  absl::StatusOr<Tensor> out =
      Eager().Execute1(op, std::move(inputs), std::move(attrs));
  EXPECT_TRUE(out.ok()) << op << ": " << out.status();
  return out.ok() ? *out : Tensor();
}

absl::Status RunError(const std::string& op, std::vector<Tensor> inputs,
                      AttrMap attrs) {
  absl::StatusOr<std::vector<Tensor>> out =
      Eager().Execute(op, std::move(inputs), std::move(attrs));
  EXPECT_FALSE(out.ok()) << op << " was expected to fail";
  return out.ok() ? absl::OkStatus() : out.status();
}

Tensor F32(const std::vector<float>& v, Shape s) {
  return Tensor::FromVector(v, std::move(s));
}
Tensor F64(const std::vector<double>& v, Shape s) {
  return Tensor::FromVector(v, std::move(s));
}
Tensor I32(const std::vector<int32_t>& v, Shape s) {
  return Tensor::FromVector(v, std::move(s));
}
Tensor I64(const std::vector<int64_t>& v, Shape s) {
  return Tensor::FromVector(v, std::move(s));
}
Tensor Bool(const std::vector<bool>& v, Shape s) {
  Tensor t(DType::kBool, std::move(s));
  for (size_t i = 0; i < v.size(); ++i) t.data<bool>()[i] = v[i];
  return t;
}

std::vector<float> PatternValues(int64_t n, int seed, uint32_t salt) {
  std::vector<float> v(n);
  uint32_t s = salt * (seed + 1);
  for (int64_t i = 0; i < n; ++i) {
    s = s * 1664525u + 1013904223u;
    v[i] = static_cast<float>((s >> 8) & 0xffff) / 32768.0f - 1.0f;
  }
  return v;
}

std::string TempPath(const std::string& name) {
  return ::testing::TempDir() + "/" + name;
}

void WriteFile(const std::string& path, const std::string& bytes) {
  std::ofstream(path, std::ios::binary | std::ios::trunc) << bytes;
}

void ExpectTensor(const Tensor& t, DType dtype, const Shape& shape,
                  const std::vector<double>& values, double tol) {
  ASSERT_FALSE(t.empty());
  EXPECT_EQ(DTypeName(t.dtype()), DTypeName(dtype));
  EXPECT_EQ(t.shape().ToString(), shape.ToString());
  std::vector<double> got = t.ToDoubles();
  ASSERT_EQ(got.size(), values.size());
  for (size_t i = 0; i < got.size(); ++i) {
    if (std::isnan(values[i])) {
      EXPECT_TRUE(std::isnan(got[i])) << "element " << i;
    } else if (tol == 0) {
      EXPECT_EQ(got[i], values[i]) << "element " << i;
    } else {
      EXPECT_NEAR(got[i], values[i], tol * std::max(1.0, std::abs(values[i])))
          << "element " << i;
    }
  }
}

std::string Message(const absl::Status& s) { return std::string(s.message()); }

}  // namespace runnel::testing
