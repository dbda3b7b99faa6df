// DTypes: names, sizes, classes, parsing, and dispatch on a runtime dtype.
#include "framework/dtype.h"

#include <gtest/gtest.h>

#include <iterator>
#include <optional>
#include <string>
#include <type_traits>

namespace runnel {
namespace {

TEST(DTypeTest, NamesAndSizes) {
  const struct {
    DType dtype;
    const char* name;
    size_t size;
  } kCases[] = {{DType::kF16, "f16", 2},  {DType::kBF16, "bf16", 2},
                {DType::kF32, "f32", 4},  {DType::kF64, "f64", 8},
                {DType::kI8, "i8", 1},    {DType::kU8, "u8", 1},
                {DType::kI32, "i32", 4},  {DType::kI64, "i64", 8},
                {DType::kBool, "bool", 1}};
  ASSERT_EQ(std::size(kCases), std::size(kAllDTypes));
  for (const auto& c : kCases) {
    EXPECT_EQ(DTypeName(c.dtype), c.name);
    EXPECT_EQ(DTypeSize(c.dtype), c.size) << c.name;
    std::optional<DType> parsed = DTypeFromName(c.name);
    ASSERT_TRUE(parsed.has_value()) << c.name;
    EXPECT_EQ(*parsed, c.dtype);
  }
  EXPECT_FALSE(DTypeFromName("f128").has_value());
  EXPECT_FALSE(DTypeFromName("").has_value());
}

TEST(DTypeTest, Classes) {
  EXPECT_TRUE(IsFloating(DType::kF16));
  EXPECT_TRUE(IsFloating(DType::kBF16));
  EXPECT_TRUE(IsFloating(DType::kF64));
  EXPECT_FALSE(IsFloating(DType::kI32));
  EXPECT_FALSE(IsFloating(DType::kBool));
  EXPECT_TRUE(IsInteger(DType::kU8));
  EXPECT_TRUE(IsInteger(DType::kI64));
  EXPECT_FALSE(IsInteger(DType::kF32));
  EXPECT_FALSE(IsInteger(DType::kBool));
  EXPECT_TRUE(IsSigned(DType::kI8));
  EXPECT_TRUE(IsSigned(DType::kBF16));
  EXPECT_FALSE(IsSigned(DType::kU8));
  EXPECT_FALSE(IsSigned(DType::kBool));
  EXPECT_TRUE(IsNumeric(DType::kU8));
  EXPECT_FALSE(IsNumeric(DType::kBool));
}

TEST(DTypeTest, VisitDTypeDispatchesOnTheStorageType) {
  for (DType d : kAllDTypes) {
    const size_t size =
        VisitDType(d, [](auto zero) { return sizeof(decltype(zero)); });
    EXPECT_EQ(size, DTypeSize(d)) << DTypeName(d);
  }
  EXPECT_TRUE(VisitDType(DType::kBF16, [](auto zero) {
    return std::is_same_v<decltype(zero), BFloat16>;
  }));
  EXPECT_EQ(DTypeOf<int64_t>::value, DType::kI64);
  EXPECT_EQ(DTypeOf<Half>::value, DType::kF16);
}

}  // namespace
}  // namespace runnel
