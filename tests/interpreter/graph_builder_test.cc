// GraphBuilder on its own: the concrete/symbolic rule, names and scopes,
// the build context restored by its guards, literal promotion by dtype
// groups, variables, reads and slots; and BindArguments (calls.h).
#include "interpreter/graph_builder.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "interpreter/calls.h"
#include "interpreter/diag.h"

namespace runnel::interp {
namespace {

class GraphBuilderTest : public ::testing::Test {
 protected:
  GraphBuilder b_{EagerOptions{.num_threads = 1, .seed = 0}};

  Value Input(const std::string& name, DType dtype, Shape shape) {
    NodeSpec spec;
    spec.name = b_.NewNodeName(name);
    spec.op = "placeholder";
    spec.attrs = {{"dtype", dtype}, {"shape", shape}};
    absl::StatusOr<Node*> n = b_.AddNode(std::move(spec), OpSite{}, {});
    EXPECT_TRUE(n.ok()) << n.status();
    return Value::Symbolic({*n, 0});
  }
};

TEST_F(GraphBuilderTest, ConcreteInputsRunNowSymbolicOnesMakeNodes) {
  absl::StatusOr<Value> three =
      b_.ApplyOp("add", {Value::Int(1), Value::Int(2)}, {}, OpSite{});
  ASSERT_TRUE(three.ok()) << three.status();
  ASSERT_TRUE(three->is_concrete());
  EXPECT_EQ(three->AsInt(), 3);
  EXPECT_TRUE(three->literal());  // literal arithmetic stays a literal
  EXPECT_EQ(b_.graph().num_nodes(), 0);

  const Value x = Input("x", DType::kF32, Shape{2});
  absl::StatusOr<Value> y =
      b_.ApplyOp("mul", {x, Value::Int(2)}, {}, OpSite({}, 0, "y"));
  ASSERT_TRUE(y.ok()) << y.status();
  ASSERT_TRUE(y->is_symbolic());
  EXPECT_EQ(y->node()->name(), "y");
  // The bare literal 2 took x's dtype (the op's dtype group {0, 1}).
  EXPECT_EQ(y->tensor_dtype(), DType::kF32);
  EXPECT_EQ(y->node()->inputs()[1].node->op(), "const");
  EXPECT_EQ(y->node()->inputs()[1].node->output_dtype(0), DType::kF32);
}

TEST_F(GraphBuilderTest, FloatLiteralMeetingAnIntegerTensorIsAnError) {
  const Value i = Input("i", DType::kI32, Shape{2});
  absl::StatusOr<Value> bad =
      b_.ApplyOp("add", {i, Value::Float(0.5)}, {}, OpSite{});
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(std::string(bad.status().message()).find("dtypes differ"),
            std::string::npos)
      << bad.status();
}

TEST_F(GraphBuilderTest, GuardsRestoreTheWholeContext) {
  const Value x = Input("x", DType::kF32, Shape{});
  absl::StatusOr<DeviceSpec> gpu = DeviceSpec::Parse("/gpu:1");
  ASSERT_TRUE(gpu.ok());
  Node* first = nullptr;
  {
    BuildScope scope = b_.OpenScope("enc", /*unique=*/false);
    BuildScope device = b_.OnDevice(*gpu);
    absl::StatusOr<Value> a = b_.ApplyOp("neg", {x}, {}, OpSite{});
    ASSERT_TRUE(a.ok()) << a.status();
    first = a->node();
    BuildScope after = b_.After({first});
    absl::StatusOr<Value> c = b_.ApplyOp("neg", {x}, {}, OpSite{});
    ASSERT_TRUE(c.ok());
    EXPECT_EQ(first->name(), "enc/neg");
    EXPECT_EQ(first->requested_device(), "/device:gpu:1");
    EXPECT_EQ(c->node()->name(), "enc/neg_1");
    ASSERT_EQ(c->node()->control_inputs().size(), 1u);
    EXPECT_EQ(c->node()->control_inputs()[0], first);
  }
  EXPECT_TRUE(b_.context().scopes.empty());
  EXPECT_TRUE(b_.context().device.ToString().empty());
  EXPECT_TRUE(b_.context().control.empty());
  absl::StatusOr<Value> d = b_.ApplyOp("neg", {x}, {}, OpSite{});
  ASSERT_TRUE(d.ok());
  EXPECT_EQ(d->node()->name(), "neg");
  EXPECT_EQ(d->node()->requested_device(), "");
  EXPECT_TRUE(d->node()->control_inputs().empty());
}

TEST_F(GraphBuilderTest, FunctionScopesAreReservedLazilyAndStayReserved) {
  const Value x = Input("x", DType::kF32, Shape{});
  for (int call = 0; call < 2; ++call) {
    BuildScope fn = b_.OpenScope("dense", /*unique=*/true);
    {
      // The first node inside an inner scope resolves the function's scope;
      // closing the inner scope must not forget that.
      BuildScope inner = b_.OpenScope("inner", /*unique=*/false);
      ASSERT_TRUE(b_.ApplyOp("neg", {x}, {}, OpSite{}).ok());
    }
    absl::StatusOr<Value> y = b_.ApplyOp("neg", {x}, {}, OpSite{});
    ASSERT_TRUE(y.ok());
    EXPECT_EQ(y->node()->name(), call == 0 ? "dense/neg" : "dense_1/neg");
  }
  EXPECT_NE(b_.graph().FindNode("dense/inner/neg"), nullptr);
  EXPECT_NE(b_.graph().FindNode("dense_1/inner/neg"), nullptr);
  // A scope that makes no node reserves no name.
  { BuildScope unused = b_.OpenScope("dense", /*unique=*/true); }
  BuildScope again = b_.OpenScope("dense", /*unique=*/true);
  EXPECT_EQ(b_.ScopePath(/*reserve=*/true), "dense_2");
}

TEST_F(GraphBuilderTest, VariablesReadsSlotsAndTheGlobalStep) {
  BuildScope scope = b_.OpenScope("layer", /*unique=*/false);
  absl::StatusOr<Value> w = b_.MakeVariable(
      "w", Value::Concrete(Tensor::OfDims({2, 3})), true, SourceSpan{});
  ASSERT_TRUE(w.ok()) << w.status();
  EXPECT_EQ(w->node()->name(), "layer/w");
  EXPECT_EQ(b_.variables().size(), 1u);
  // Reads outside `after` blocks are shared.
  absl::StatusOr<NodeOut> r1 = b_.ReadVariable(w->node(), SourceSpan{});
  absl::StatusOr<NodeOut> r2 = b_.ReadVariable(w->node(), SourceSpan{});
  ASSERT_TRUE(r1.ok() && r2.ok());
  EXPECT_EQ(r1->node, r2->node);
  EXPECT_EQ(r1->node->op(), "read_variable");
  // A slot is named after its variable, outside the open scopes.
  BuildScope other = b_.OpenScope("optimizer", /*unique=*/false);
  absl::StatusOr<Value> m = b_.MakeSlot(*w, "adam_m", Value(), SourceSpan{});
  ASSERT_TRUE(m.ok()) << m.status();
  EXPECT_EQ(m->node()->name(), "layer/w/adam_m");
  EXPECT_EQ(m->tensor_shape().ToString(), "[2]");
  absl::StatusOr<Value> m2 = b_.MakeSlot(*w, "adam_m", Value(), SourceSpan{});
  ASSERT_TRUE(m2.ok());
  EXPECT_EQ(m2->node()->name(), "layer/w/adam_m_1");
  EXPECT_FALSE(b_.MakeSlot(*w, "a/b", Value(), SourceSpan{}).ok());
  EXPECT_FALSE(b_.MakeSlot(Value::Int(1), "m", Value(), SourceSpan{}).ok());
  // A slot may start from a given value (a synchronous optimizer's count),
  // known before any run: not from a graph value.
  absl::StatusOr<Value> count = b_.MakeSlot(
      *w, "count", Value::Concrete(Tensor::Scalar<int64_t>(7)), SourceSpan{});
  ASSERT_TRUE(count.ok()) << count.status();
  EXPECT_EQ(count->node()->name(), "layer/w/count");
  EXPECT_EQ(count->tensor_dtype(), DType::kI64);
  EXPECT_EQ(count->tensor_shape().ToString(), "[]");
  EXPECT_FALSE(b_.MakeSlot(*w, "m", *w, SourceSpan{}).ok());
  // The global step is made once, at the top level.
  absl::StatusOr<Value> step = b_.GlobalStep(SourceSpan{});
  ASSERT_TRUE(step.ok());
  EXPECT_EQ(step->node()->name(), "global_step");
  EXPECT_EQ(b_.GlobalStep(SourceSpan{})->node(), step->node());
  EXPECT_EQ(b_.ScopePath(false), "layer/optimizer");
}

TEST_F(GraphBuilderTest, ListsOfNumbersStackIntoTensors) {
  absl::StatusOr<Value> t =
      b_.ToTensor(Value::List({Value::List({Value::Int(1), Value::Float(2.5)}),
                               Value::List({Value::Int(3), Value::Int(4)})}),
                  SourceSpan{}, "x");
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_EQ(t->tensor().shape().ToString(), "[2,2]");
  EXPECT_EQ(t->tensor().dtype(), DType::kF32);
  EXPECT_EQ(t->tensor().ToDoubles(), (std::vector<double>{1, 2.5, 3, 4}));
  absl::StatusOr<Value> ragged =
      b_.ToTensor(Value::List({Value::List({Value::Int(1)}),
                               Value::List({Value::Int(3), Value::Int(4)})}),
                  SourceSpan{}, "x");
  EXPECT_FALSE(ragged.ok());
}

// ---- BindArguments
// -----------------------------------------------------------

Signature Sig() {
  Signature s;
  s.shown = "dense()";
  s.names = {"x", "units", "act"};
  s.required = {true, true, false};
  return s;
}

std::string Message(const absl::Status& s) {
  std::optional<lang::Diagnostic> d = DiagOf(s);
  return d ? d->message : std::string(s.message());
}

TEST(BindArgumentsTest, PositionalThenNamed) {
  Arguments a;
  a.positional = {Value::Int(1)};
  a.named = {{"units", Value::Int(8)}};
  absl::StatusOr<BoundArguments> b = BindArguments(Sig(), a, SourceSpan{});
  ASSERT_TRUE(b.ok()) << b.status();
  EXPECT_EQ(b->given, (std::vector<bool>{true, true, false}));
  EXPECT_EQ(b->values[1].AsInt(), 8);
  EXPECT_TRUE(b->values[2].is_none());
}

TEST(BindArgumentsTest, MissingDuplicateUnknownAndExtraArguments) {
  Arguments missing;
  missing.positional = {Value::Int(1)};
  EXPECT_EQ(Message(BindArguments(Sig(), missing, SourceSpan{}).status()),
            "dense() is missing argument 'units' (it takes 2 to 3 arguments "
            "(x, units, act))");
  Arguments twice;
  twice.positional = {Value::Int(1), Value::Int(2)};
  twice.named = {{"units", Value::Int(3)}};
  EXPECT_EQ(Message(BindArguments(Sig(), twice, SourceSpan{}).status()),
            "dense() got two values for 'units'");
  Arguments unknown;
  unknown.positional = {Value::Int(1), Value::Int(2)};
  unknown.named = {{"unit", Value::Int(3)}};
  absl::Status u = BindArguments(Sig(), unknown, SourceSpan{}).status();
  EXPECT_EQ(Message(u), "dense() has no parameter named 'unit'");
  ASSERT_TRUE(DiagOf(u).has_value());
  EXPECT_EQ(DiagOf(u)->notes.at(0).message, "did you mean 'units'?");
  Arguments extra;
  extra.positional = {Value::Int(1), Value::Int(2), Value::Int(3),
                      Value::Int(4)};
  EXPECT_EQ(Message(BindArguments(Sig(), extra, SourceSpan{}).status()),
            "dense() takes 2 to 3 arguments (x, units, act), got 4");
  // Variadic and keyword-collecting callees keep what is left over.
  Signature open = Sig();
  open.variadic = open.kwargs = true;
  extra.named = {{"other", Value::Int(5)}};
  absl::StatusOr<BoundArguments> b = BindArguments(open, extra, SourceSpan{});
  ASSERT_TRUE(b.ok()) << b.status();
  EXPECT_EQ(b->rest.size(), 1u);
  ASSERT_EQ(b->extra_named.size(), 1u);
  EXPECT_EQ(b->extra_named[0].first, "other");
}

}  // namespace
}  // namespace runnel::interp
