// Creation ops: fill, zeros_like, ones_like, range, eye, one_hot.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "base/float16.h"
#include "framework/op_registry.h"
#include "tests/util/test_util.h"

namespace runnel {
namespace {

using ::runnel::testing::Bool;
using ::runnel::testing::ExpectTensor;
using ::runnel::testing::F32;
using ::runnel::testing::F64;
using ::runnel::testing::I32;
using ::runnel::testing::I64;
using ::runnel::testing::Run1;
using ::runnel::testing::RunError;
using ::testing::HasSubstr;

TEST(CreationTest, Fill) {
  ExpectTensor(Run1("fill", {I32({2, 3}, {2}), F32({1.5}, {})}), DType::kF32,
               Shape{2, 3}, {1.5, 1.5, 1.5, 1.5, 1.5, 1.5}, 0);
  ExpectTensor(Run1("fill", {I64({3}, {1}), I64({-7}, {})}), DType::kI64,
               Shape{3}, {-7, -7, -7}, 0);
  ExpectTensor(Run1("fill", {I32({2}, {1}), Bool({true}, {})}), DType::kBool,
               Shape{2}, {1, 1}, 0);
  ExpectTensor(Run1("fill", {I32({}, {0}), F64({2}, {})}), DType::kF64, Shape{},
               {2}, 0);
  ExpectTensor(Run1("fill", {I32({0, 4}, {2}), F32({1}, {})}), DType::kF32,
               Shape{0, 4}, {}, 0);
  Tensor half =
      Run1("fill", {I32({2}, {1}), Tensor::Scalar(FloatToHalf(0.5f))});
  ExpectTensor(half, DType::kF16, Shape{2}, {0.5, 0.5}, 0);
  EXPECT_THAT(RunError("fill", {I32({-2}, {1}), F32({1}, {})}).message(),
              HasSubstr("negative dimension"));
  EXPECT_THAT(RunError("fill", {I32({2}, {1}), F32({1, 2}, {2})}).message(),
              HasSubstr("must be a scalar"));
}

TEST(CreationTest, FillInfersTheLengthOfAnUnknownShape) {
  const OpDef* def = OpRegistry::Global().Find("fill");
  ASSERT_NE(def, nullptr);
  AttrMap attrs;
  auto out = InferOutputs(*def, attrs,
                          {{DType::kI32, Shape{3}}, {DType::kF32, Shape{}}},
                          {nullptr, nullptr});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ((*out)[0].shape, (Shape{-1, -1, -1}));
}

TEST(CreationTest, ZerosLikeAndOnesLike) {
  ExpectTensor(Run1("zeros_like", {F32({1, 2, 3}, {3})}), DType::kF32, Shape{3},
               {0, 0, 0}, 0);
  ExpectTensor(Run1("ones_like", {I32({5, 6}, {2, 1})}), DType::kI32,
               Shape{2, 1}, {1, 1}, 0);
  ExpectTensor(Run1("zeros_like", {Bool({true, true}, {2})}), DType::kBool,
               Shape{2}, {0, 0}, 0);
  for (DType d : {DType::kF16, DType::kBF16, DType::kF64, DType::kI8,
                  DType::kU8, DType::kI64}) {
    Tensor x(d, Shape{2, 2});
    ExpectTensor(Run1("ones_like", {x}), d, Shape{2, 2}, {1, 1, 1, 1}, 0);
    ExpectTensor(Run1("zeros_like", {x}), d, Shape{2, 2}, {0, 0, 0, 0}, 0);
  }
  ExpectTensor(Run1("ones_like", {F32({}, {0})}), DType::kF32, Shape{0}, {}, 0);
}

TEST(CreationTest, RangeIntegers) {
  ExpectTensor(Run1("range", {I32({0}, {}), I32({5}, {}), I32({1}, {})}),
               DType::kI32, Shape{5}, {0, 1, 2, 3, 4}, 0);
  ExpectTensor(Run1("range", {I32({1}, {}), I32({8}, {}), I32({3}, {})}),
               DType::kI32, Shape{3}, {1, 4, 7}, 0);
  ExpectTensor(Run1("range", {I64({5}, {}), I64({0}, {}), I64({-2}, {})}),
               DType::kI64, Shape{3}, {5, 3, 1}, 0);
  ExpectTensor(Run1("range", {I32({3}, {}), I32({3}, {}), I32({1}, {})}),
               DType::kI32, Shape{0}, {}, 0);
  ExpectTensor(Run1("range", {I32({5}, {}), I32({0}, {}), I32({1}, {})}),
               DType::kI32, Shape{0}, {}, 0);
}

TEST(CreationTest, RangeFloats) {
  ExpectTensor(Run1("range", {F32({0}, {}), F32({1}, {}), F32({0.25}, {})}),
               DType::kF32, Shape{4}, {0, 0.25, 0.5, 0.75}, 0);
  // ceil((1 - 0) / 0.3) = 4.
  ExpectTensor(Run1("range", {F64({0}, {}), F64({1}, {}), F64({0.3}, {})}),
               DType::kF64, Shape{4}, {0, 0.3, 0.6, 0.9}, 1e-12);
  ExpectTensor(Run1("range", {F32({1}, {}), F32({-1}, {}), F32({-0.5}, {})}),
               DType::kF32, Shape{4}, {1, 0.5, 0, -0.5}, 0);
}

TEST(CreationTest, RangeErrors) {
  EXPECT_THAT(
      RunError("range", {I32({0}, {}), I32({5}, {}), I32({0}, {})}).message(),
      HasSubstr("delta must not be zero"));
  EXPECT_THAT(
      RunError("range", {F32({0}, {}), F32({5}, {}), F32({0}, {})}).message(),
      HasSubstr("delta must not be zero"));
  EXPECT_THAT(
      RunError("range", {I32({0}, {}), F32({5}, {}), I32({1}, {})}).message(),
      HasSubstr("dtypes differ"));
}

TEST(CreationTest, Eye) {
  ExpectTensor(Run1("eye", {}, {{"n", int64_t{3}}}), DType::kF32, Shape{3, 3},
               {1, 0, 0, 0, 1, 0, 0, 0, 1}, 0);
  ExpectTensor(
      Run1("eye", {},
           {{"n", int64_t{2}}, {"m", int64_t{3}}, {"dtype", DType::kI32}}),
      DType::kI32, Shape{2, 3}, {1, 0, 0, 0, 1, 0}, 0);
  ExpectTensor(
      Run1("eye", {},
           {{"n", int64_t{3}}, {"m", int64_t{1}}, {"dtype", DType::kBF16}}),
      DType::kBF16, Shape{3, 1}, {1, 0, 0}, 0);
  ExpectTensor(Run1("eye", {}, {{"n", int64_t{0}}}), DType::kF32, Shape{0, 0},
               {}, 0);
  EXPECT_THAT(RunError("eye", {}, {{"n", int64_t{-1}}}).message(),
              HasSubstr("non-negative"));
}

TEST(CreationTest, OneHot) {
  ExpectTensor(Run1("one_hot", {I32({0, 2, 1}, {3})}, {{"depth", int64_t{3}}}),
               DType::kF32, Shape{3, 3}, {1, 0, 0, 0, 0, 1, 0, 1, 0}, 0);
  // Out-of-range indices give rows of off_value, as in TensorFlow.
  ExpectTensor(Run1("one_hot", {I64({3, -1, 1}, {3})},
                    {{"depth", int64_t{2}},
                     {"on_value", 5.0},
                     {"off_value", -1.0},
                     {"dtype", DType::kI32}}),
               DType::kI32, Shape{3, 2}, {-1, -1, -1, -1, -1, 5}, 0);
  ExpectTensor(
      Run1("one_hot", {I32({1, 0, 0, 1}, {2, 2})}, {{"depth", int64_t{2}}}),
      DType::kF32, Shape{2, 2, 2}, {0, 1, 1, 0, 1, 0, 0, 1}, 0);
  // axis 0 puts the depth axis first.
  ExpectTensor(Run1("one_hot", {I32({0, 2}, {2})},
                    {{"depth", int64_t{3}}, {"axis", int64_t{0}}}),
               DType::kF32, Shape{3, 2}, {1, 0, 0, 0, 0, 1}, 0);
  ExpectTensor(Run1("one_hot", {I32({1}, {})}, {{"depth", int64_t{3}}}),
               DType::kF32, Shape{3}, {0, 1, 0}, 0);
  EXPECT_THAT(
      RunError("one_hot", {F32({1}, {1})}, {{"depth", int64_t{3}}}).message(),
      HasSubstr("indices must be integers"));
}

}  // namespace
}  // namespace runnel
