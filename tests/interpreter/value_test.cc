// Values as `print` shows them, the helpers behind "did you mean", and the
// dataset helpers.
#include "interpreter/value.h"

#include <gtest/gtest.h>

#include "interpreter/data.h"
#include "interpreter/diag.h"

namespace runnel::interp {
namespace {

TEST(FormatValue, Scalars) {
  EXPECT_EQ(FormatValue(Value::Int(3)), "3");
  EXPECT_EQ(FormatValue(Value::Float(2.5)), "2.5");
  EXPECT_EQ(FormatValue(Value::Float(2)), "2.0");
  EXPECT_EQ(FormatValue(Value::Bool(true)), "true");
  EXPECT_EQ(FormatValue(Value()), "none");
  EXPECT_EQ(FormatValue(Value::OfDType(DType::kBF16)), "bf16");
}

TEST(FormatValue, Tensors) {
  Tensor t = Tensor::FromVector<float>({1, 2, 3, 4}, Shape{2, 2});
  EXPECT_EQ(FormatValue(Value::Concrete(t)), "[[1.0, 2.0], [3.0, 4.0]]");
  Tensor i = Tensor::FromVector<int32_t>({7, -1});
  EXPECT_EQ(FormatValue(Value::Concrete(i)), "[7, -1]");
}

TEST(FormatValue, StringsAreRawAtTopAndQuotedInside) {
  EXPECT_EQ(FormatValue(Value::String("a \"b\"")), "a \"b\"");
  Value list = Value::List({Value::String("x"), Value::Int(1)});
  EXPECT_EQ(FormatValue(list), "[\"x\", 1]");
  Value tuple = Value::Tuple({Value::Int(1)});
  EXPECT_EQ(FormatValue(tuple), "(1,)");
  Value rec = Value::Record(
      {{"loss", Value::Float(0.5)}, {"name", Value::String("n")}});
  EXPECT_EQ(FormatValue(rec), "{loss: 0.5, name: \"n\"}");
  EXPECT_EQ(FormatValue(Value::Range(0, 10)), "0..10");
}

TEST(FormatValue, Symbolic) {
  Graph g;
  NodeSpec spec;
  spec.name = "x";
  spec.op = "placeholder";
  spec.attrs = {{"dtype", DType::kF32}, {"shape", Shape{kUnknownDim, 10}}};
  Node* n = *g.AddNode(std::move(spec));
  EXPECT_EQ(FormatValue(Value::Symbolic({n, 0})), "<symbolic f32[?,10] x>");
  EXPECT_EQ(DescribeValue(Value::Symbolic({n, 0})),
            "a symbolic f32[?,10] tensor");
}

TEST(ContainsSymbolic, KnownAtAnyDepth) {
  Graph g;
  NodeSpec spec;
  spec.name = "x";
  spec.op = "placeholder";
  spec.attrs = {{"dtype", DType::kF32}, {"shape", Shape{2}}};
  Value x = Value::Symbolic({*g.AddNode(std::move(spec)), 0});
  EXPECT_TRUE(x.contains_symbolic());
  EXPECT_FALSE(Value::Int(1).contains_symbolic());
  EXPECT_FALSE(Value().contains_symbolic());
  Value plain = Value::Tuple({Value::Int(1), Value::List({Value::Int(2)})});
  EXPECT_FALSE(plain.contains_symbolic());
  Value deep = Value::Record({{"a", plain}, {"b", Value::List({x})}});
  for (int i = 0; i < 1000; ++i) deep = Value::Tuple({Value::Int(i), deep});
  EXPECT_TRUE(deep.contains_symbolic());
  EXPECT_TRUE(Value::List({plain, deep}).contains_symbolic());
  EXPECT_FALSE(Value::Record({{"p", plain}}).contains_symbolic());
}

TEST(Literals, IntAndFloatLiteralsAreMarked) {
  Value i = Value::Int(2);
  EXPECT_TRUE(i.literal());
  EXPECT_EQ(i.tensor().dtype(), DType::kI32);
  Value f = Value::Float(2);
  EXPECT_TRUE(f.literal());
  EXPECT_EQ(f.tensor().dtype(), DType::kF32);
  EXPECT_FALSE(Value::Bool(true).literal());
}

TEST(Suggestions, EditDistance) {
  EXPECT_EQ(EditDistance("relu", "relu"), 0);
  EXPECT_EQ(EditDistance("relux", "relu"), 1);
  EXPECT_EQ(EditDistance("rleu", "relu"), 1);  // a swap is one edit
  EXPECT_EQ(EditDistance("", "abc"), 3);
  EXPECT_EQ(ClosestName("relux", {"relu", "elu", "exp"}), "relu");
  EXPECT_EQ(ClosestName("softmaxx", {"softmax", "log_softmax"}), "softmax");
  EXPECT_EQ(ClosestName("zzz", {"relu", "exp"}), "");
}

TEST(Diagnostics, TravelInStatuses) {
  lang::Diagnostic d;
  d.message = "bad: thing";
  d.span = SourceSpan{"a.rnl", 3, 5, 3, 9};
  d.caret_col = 7;
  d.notes.push_back(Note(SourceSpan{"a.rnl", 1, 1, 1, 4}, "x declared here"));
  absl::Status s = DiagStatus(d);
  std::optional<lang::Diagnostic> back = DiagOf(s);
  ASSERT_TRUE(back.has_value());
  EXPECT_EQ(back->message, "bad: thing");
  EXPECT_EQ(back->span.end_col, 9);
  EXPECT_EQ(back->caret_col, 7);
  ASSERT_EQ(back->notes.size(), 1u);
  EXPECT_EQ(back->notes[0].message, "x declared here");
  EXPECT_EQ(back->notes[0].severity, lang::Severity::kNote);
  EXPECT_EQ(*ExitCodeOf(ExitRequest(3)), 3);
}

TEST(Batches, ShuffleIsDeterministicPermutation) {
  std::vector<int64_t> a = RowOrder(100, true, 7), b = RowOrder(100, true, 7);
  EXPECT_EQ(a, b);
  EXPECT_NE(a, RowOrder(100, true, 8));
  std::vector<int64_t> sorted = a;
  std::sort(sorted.begin(), sorted.end());
  EXPECT_EQ(sorted, RowOrder(100, false, 0));
  Tensor t = Tensor::FromVector<int32_t>({0, 1, 2, 3, 4, 5}, Shape{3, 2});
  Tensor rows = GatherRows(t, {2, 0});
  EXPECT_EQ(rows.ToDoubles(), (std::vector<double>{4, 5, 0, 1}));
}

}  // namespace
}  // namespace runnel::interp

namespace runnel::interp {
namespace {

// A Value is one kind tag and one payload (a variant), not a field per kind:
// copies stay cheap (the 15-field struct was 272 bytes).
TEST(ValueVariantTest, IsSmallAndKeepsOnlyItsOwnPayload) {
  EXPECT_LE(sizeof(Value), 96u);
  const Value s = Value::String("abc");
  EXPECT_EQ(s.str(), "abc");
  EXPECT_EQ(s.items().size(), 0u);
  EXPECT_EQ(s.tensor().num_elements(), 0);
  EXPECT_EQ(s.function(), nullptr);
  const Value r = Value::Range(2, 5);
  EXPECT_EQ(r.range_start(), 2);
  EXPECT_EQ(r.range_stop(), 5);
  EXPECT_EQ(s.range_stop(), 0);
  const Value t = Value::Tuple({Value::Int(1), Value::String("x")});
  ASSERT_EQ(t.items().size(), 2u);
  EXPECT_EQ(t.items()[1].str(), "x");
  EXPECT_TRUE(Value::Int(3).literal());
  EXPECT_FALSE(Value::Int(3, false).literal());
  EXPECT_FALSE(s.literal());
  EXPECT_EQ(Value::NoneOfIf(SourceSpan{}).kind(), ValueKind::kNone);
  EXPECT_NE(Value::NoneOfIf(SourceSpan{}).if_without_else(), nullptr);
  EXPECT_EQ(Value().if_without_else(), nullptr);
}

}  // namespace
}  // namespace runnel::interp
