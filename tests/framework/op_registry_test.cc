// The op registry: registration, lookup, shape inference with default
// attributes and input counts, and the dtype that picks a kernel.
#include "framework/op_registry.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "framework/shape_fns.h"
#include "tests/util/test_util.h"

namespace runnel {
namespace {

using ::runnel::testing::Message;

// The OpDef a builder chain describes.
OpDef Def(OpDefBuilder& builder) { return std::move(builder).Build(); }

// A private registry, so these tests register nothing globally.
TEST(OpRegistryTest, RegisterAndFind) {
  OpRegistry registry;
  ASSERT_TRUE(registry
                  .Register(Def(
                      OpDefBuilder("b_op").Inputs({"x"}).Shape(UnchangedShape)))
                  .ok());
  ASSERT_TRUE(registry.Register(OpDefBuilder("a_op").Build()).ok());
  absl::Status twice = registry.Register(OpDefBuilder("a_op").Build());
  EXPECT_EQ(twice.code(), absl::StatusCode::kAlreadyExists);
  EXPECT_EQ(Message(twice), "op 'a_op' registered twice");
  ASSERT_NE(registry.Find("b_op"), nullptr);
  EXPECT_EQ(registry.Find("b_op")->inputs, (std::vector<std::string>{"x"}));
  EXPECT_EQ(registry.Find("c_op"), nullptr);
  EXPECT_EQ(registry.ListOps(), (std::vector<std::string>{"a_op", "b_op"}));
}

TEST(OpRegistryTest, TheGlobalRegistryHoldsTheBuiltInOps) {
  const OpRegistry& global = OpRegistry::Global();
  for (const char* op : {"add", "matmul", "conv2d", "placeholder", "variable",
                         "broadcast_to", "broadcast_like"}) {
    EXPECT_NE(global.Find(op), nullptr) << op;
  }
  std::vector<std::string> ops = global.ListOps();
  EXPECT_TRUE(std::is_sorted(ops.begin(), ops.end()));
  const OpDef* assign = global.Find("assign");
  ASSERT_NE(assign, nullptr);
  EXPECT_TRUE(assign->stateful);
  EXPECT_FALSE(global.Find("add")->stateful);
}

TEST(OpRegistryTest, InferOutputsFillsDefaultsAndChecksInputCounts) {
  const OpDef def = Def(OpDefBuilder("scaled")
                            .Inputs({"x"})
                            .Attr("scale", 2.0)
                            .Shape(UnchangedShape));
  AttrMap attrs;
  absl::StatusOr<std::vector<TensorSpec>> out =
      InferOutputs(def, attrs, {{DType::kF64, Shape{3, -1}}}, {nullptr});
  ASSERT_TRUE(out.ok()) << out.status();
  ASSERT_EQ(out->size(), 1u);
  EXPECT_EQ((*out)[0].ToString(), "f64[3,?]");
  EXPECT_EQ(std::get<double>(attrs.at("scale")), 2.0);
  // A given attribute is kept.
  AttrMap given = {{"scale", 5.0}};
  ASSERT_TRUE(
      InferOutputs(def, given, {{DType::kF32, Shape{}}}, {nullptr}).ok());
  EXPECT_EQ(std::get<double>(given.at("scale")), 5.0);
  EXPECT_EQ(Message(InferOutputs(def, attrs, {}, {}).status()),
            "scaled: expected 1 input(s), got 0");
  const OpDef variadic =
      Def(OpDefBuilder("join").Inputs({"a", "rest"}).Variadic());
  EXPECT_EQ(Message(InferOutputs(variadic, attrs, {}, {}).status()),
            "join: expected at least 1 input(s), got 0");
}

TEST(OpRegistryTest, UndeclaredAttributesAreRejected) {
  const OpDef def = Def(OpDefBuilder("update")
                            .Inputs({"ref", "ref_m", "x"})
                            .Attr("scale", 2.0)
                            .IndexedAttr("dtype")
                            .Shape(UnchangedShape));
  auto infer = [&](AttrMap attrs) {
    return InferOutputs(def, attrs,
                        {{DType::kF32, Shape{2}},
                         {DType::kF32, Shape{2}},
                         {DType::kF32, Shape{2}}},
                        {nullptr, nullptr, nullptr})
        .status();
  };
  // A misspelt attribute fails, naming what the op has.
  EXPECT_EQ(Message(infer({{"sacle", 3.0}})),
            "update: no attribute 'sacle' (it has scale, dtype_<i>)");
  // Declared, indexed, the variables behind ref inputs, the runtime's own.
  EXPECT_TRUE(infer({{"scale", 3.0}}).ok());
  EXPECT_TRUE(
      infer({{"dtype_0", DType::kF32}, {"dtype_12", DType::kI32}}).ok());
  EXPECT_TRUE(
      infer({{"var", std::string("w")}, {"var_m", std::string("m")}}).ok());
  EXPECT_TRUE(infer({{"_loop_counter", int64_t{1}}}).ok());
  // Not an index, no such ref input, the bare prefix.
  EXPECT_FALSE(infer({{"dtype_x", DType::kF32}}).ok());
  EXPECT_FALSE(infer({{"dtype", DType::kF32}}).ok());
  EXPECT_EQ(Message(infer({{"var_v", std::string("v")}})),
            "update: no attribute 'var_v' (it has scale, dtype_<i>)");
  // Every registered op declares what its nodes set: max_pool its window.
  const OpDef* pool = OpRegistry::Global().Find("max_pool");
  ASSERT_NE(pool, nullptr);
  EXPECT_TRUE(pool->DeclaresAttr("size"));
  EXPECT_TRUE(pool->DeclaresAttr("strides"));
  EXPECT_TRUE(pool->DeclaresAttr("padding"));
  EXPECT_FALSE(pool->DeclaresAttr("ksize"));
}

TEST(OpRegistryTest, ShapeFunctionErrorsNameTheOp) {
  const OpDef def = Def(OpDefBuilder("picky").Shape(
      [](const ShapeContext&) -> absl::StatusOr<std::vector<TensorSpec>> {
        return absl::InvalidArgumentError("no thanks");
      }));
  AttrMap attrs;
  absl::StatusOr<std::vector<TensorSpec>> out =
      InferOutputs(def, attrs, {}, {});
  EXPECT_EQ(out.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(Message(out.status()), "picky: no thanks");
  EXPECT_EQ(
      Message(CheckOutputSizes(
          "big", {{DType::kF32, Shape{int64_t{1} << 40, int64_t{1} << 40}}})),
      "big: shape [1099511627776,1099511627776] has too many elements "
      "(more than 9223372036854775807)");
}

TEST(OpRegistryTest, KernelDTypeFromAnInputOrAnAttribute) {
  const OpDef by_input =
      Def(OpDefBuilder("i").Inputs({"a", "b"}).KernelDTypeFromInput(1));
  EXPECT_EQ(*KernelDType(by_input, {}, {DType::kI32, DType::kF16}),
            DType::kF16);
  const OpDef by_attr = Def(OpDefBuilder("f").KernelDTypeFromAttr("dtype"));
  EXPECT_EQ(*KernelDType(by_attr, {{"dtype", DType::kI64}}, {}), DType::kI64);
  // Without the attribute: the first input, else f32.
  EXPECT_EQ(*KernelDType(by_attr, {}, {DType::kU8}), DType::kU8);
  EXPECT_EQ(*KernelDType(by_attr, {}, {}), DType::kF32);
}

TEST(OpRegistryTest, TensorSpecToString) {
  EXPECT_EQ((TensorSpec{DType::kF32, Shape{-1, 784}}).ToString(), "f32[?,784]");
  EXPECT_EQ((TensorSpec{DType::kBool, Shape()}).ToString(), "bool[]");
}

}  // namespace
}  // namespace runnel
