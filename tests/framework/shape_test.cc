// Shapes: partially known dimensions, unknown rank, element counts that
// saturate, compatibility and printing.
#include "framework/shape.h"

#include <gtest/gtest.h>

#include <vector>

namespace runnel {
namespace {

TEST(ShapeTest, Basics) {
  EXPECT_EQ((Shape{2, -1, 3}).ToString(), "[2,?,3]");
  EXPECT_FALSE((Shape{2, -1}).IsFullyDefined());
  EXPECT_TRUE((Shape{-1, 784}).IsCompatibleWith(Shape{32, 784}));
  EXPECT_FALSE((Shape{-1, 784}).IsCompatibleWith(Shape{32, 700}));
  EXPECT_EQ(Shape().num_elements(), 1);
}

TEST(ShapeTest, ScalarsAndUnknownRank) {
  EXPECT_EQ(Shape().ToString(), "[]");
  EXPECT_EQ(Shape().rank(), 0);
  EXPECT_TRUE(Shape().IsFullyDefined());
  const Shape any = Shape::UnknownRank();
  EXPECT_TRUE(any.unknown_rank());
  EXPECT_EQ(any.ToString(), "[*]");
  EXPECT_FALSE(any.IsFullyDefined());
  EXPECT_EQ(any.num_elements(), -1);
  EXPECT_TRUE(any.IsCompatibleWith(Shape{2, 3}));
  EXPECT_TRUE(any.IsCompatibleWith(Shape()));
  EXPECT_NE(any, Shape());
}

TEST(ShapeTest, ElementCounts) {
  EXPECT_EQ((Shape{2, 3, 4}).num_elements(), 24);
  EXPECT_EQ((Shape{5, 0, 7}).num_elements(), 0);
  EXPECT_EQ((Shape{-1, 3}).num_elements(), -1);
  // Past int64 the count saturates rather than wrapping.
  EXPECT_EQ((Shape{int64_t{1} << 40, int64_t{1} << 40}).num_elements(),
            Shape::kMaxElements);
}

TEST(ShapeTest, CompatibilityNeedsTheSameRank) {
  EXPECT_FALSE((Shape{-1}).IsCompatibleWith(Shape{2, 3}));
  EXPECT_TRUE((Shape{-1, -1}).IsCompatibleWith(Shape{2, 3}));
  EXPECT_TRUE((Shape{2, 3}).IsCompatibleWith(Shape{2, 3}));
  EXPECT_FALSE(Shape().IsCompatibleWith(Shape{1}));
}

TEST(ShapeTest, DimsAreEditable) {
  Shape s = Shape(std::vector<int64_t>{4, 5});
  s.mutable_dims()[1] = -1;
  EXPECT_EQ(s, (Shape{4, -1}));
  EXPECT_EQ(s.dim(0), 4);
  EXPECT_EQ(s.dims(), (std::vector<int64_t>{4, -1}));
}

}  // namespace
}  // namespace runnel
