// Attribute values: typed lookup with its int-as-double and int-as-list
// readings, fallbacks, errors naming the attribute, and printing.
#include "framework/attr_value.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "tests/util/test_util.h"

namespace runnel {
namespace {

using ::runnel::testing::Message;

TEST(AttrValueTest, TypedLookup) {
  const AttrMap attrs = {{"n", int64_t{3}},
                         {"rate", 0.5},
                         {"keep", true},
                         {"padding", std::string("same")},
                         {"dtype", DType::kBF16},
                         {"shape", Shape{-1, 4}},
                         {"axes", std::vector<int64_t>{0, 2}}};
  EXPECT_EQ(*GetAttr<int64_t>(attrs, "n"), 3);
  EXPECT_EQ(*GetAttr<double>(attrs, "rate"), 0.5);
  EXPECT_TRUE(*GetAttr<bool>(attrs, "keep"));
  EXPECT_EQ(*GetAttr<std::string>(attrs, "padding"), "same");
  EXPECT_EQ(*GetAttr<DType>(attrs, "dtype"), DType::kBF16);
  EXPECT_EQ(*GetAttr<Shape>(attrs, "shape"), (Shape{-1, 4}));
  EXPECT_EQ(*GetAttr<std::vector<int64_t>>(attrs, "axes"),
            (std::vector<int64_t>{0, 2}));
  // An int also reads as a double and as a one-element list.
  EXPECT_EQ(*GetAttr<double>(attrs, "n"), 3.0);
  EXPECT_EQ(*GetAttr<std::vector<int64_t>>(attrs, "n"),
            (std::vector<int64_t>{3}));
}

TEST(AttrValueTest, MissingAndMistypedAttributesAreNamed) {
  const AttrMap attrs = {{"rate", 0.5}};
  EXPECT_EQ(Message(GetAttr<int64_t>(attrs, "n").status()),
            "missing attribute 'n'");
  EXPECT_EQ(Message(GetAttr<int64_t>(attrs, "rate").status()),
            "attribute 'rate' has the wrong type");
  EXPECT_EQ(*GetAttrOr<int64_t>(attrs, "n", 7), 7);
  EXPECT_EQ(*GetAttrOr<double>(attrs, "rate", 1.0), 0.5);
  EXPECT_FALSE(GetAttrOr<bool>(attrs, "rate", false).ok());
}

TEST(AttrValueTest, ToString) {
  EXPECT_EQ(AttrValueToString(int64_t{-2}), "-2");
  EXPECT_EQ(AttrValueToString(0.25), "0.25");
  EXPECT_EQ(AttrValueToString(false), "false");
  EXPECT_EQ(AttrValueToString(std::string("valid")), "\"valid\"");
  EXPECT_EQ(AttrValueToString(DType::kI64), "i64");
  EXPECT_EQ(AttrValueToString(Shape{2, -1}), "[2,?]");
  EXPECT_EQ(AttrValueToString(std::vector<int64_t>{1, 2, 2, 1}),
            "(1, 2, 2, 1)");
  EXPECT_EQ(AttrValueToString(Tensor::FromVector<int32_t>({1, 2})),
            Tensor::FromVector<int32_t>({1, 2}).DebugString(6));
}

}  // namespace
}  // namespace runnel
