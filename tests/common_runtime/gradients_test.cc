// Every gradient function against central finite differences (f64), and
// the transformation itself: summing where paths meet, stop_gradient,
// unconnected inputs, integer edges, gradients of gradients, errors.
#include "common_runtime/gradients.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "base/errors.h"
#include "base/strings.h"
#include "common_runtime/session.h"
#include "framework/op_registry.h"
#include "tests/util/gradient_check.h"
#include "tests/util/test_util.h"

namespace runnel {
namespace {

using testing::CheckGradient;
using testing::CheckGradientOf;
using testing::Diff;
using testing::Fixed;
using testing::GradCheckOptions;
using testing::GradInput;
using testing::NonZero;
using testing::Positive;

// ---- element-wise -----------------------------------------------------------

TEST(GradientCheck, Unary) {
  for (const char* op : {"neg", "square", "exp", "sin", "cos", "tanh",
                         "sigmoid", "elu", "softplus", "erf", "gelu"}) {
    SCOPED_TRACE(op);
    CheckGradient(op, {Diff({2, 3})});
  }
  for (const char* op : {"abs", "relu"}) {
    SCOPED_TRACE(op);
    CheckGradient(op, {NonZero({2, 3})});
  }
  for (const char* op : {"sqrt", "rsqrt", "log", "log1p"}) {
    SCOPED_TRACE(op);
    CheckGradient(op, {Positive({5})});
  }
}

// Inside each function's domain, away from where the derivative blows up.
TEST(GradientCheck, InverseTrigonometric) {
  for (const char* op : {"asin", "acos", "atanh"}) {
    SCOPED_TRACE(op);
    CheckGradient(op, {Diff({2, 3}, -0.8, 0.8)});
  }
  for (const char* op : {"atan", "asinh"}) {
    SCOPED_TRACE(op);
    CheckGradient(op, {Diff({2, 3}, -3, 3)});
  }
  CheckGradient("acosh", {Diff({5}, 1.2, 3)});
}

TEST(GradientCheck, Cumsum) {
  for (bool exclusive : {false, true}) {
    for (bool reverse : {false, true}) {
      for (int64_t axis : {0, 1, -1}) {
        SCOPED_TRACE(::testing::Message() << axis << exclusive << reverse);
        CheckGradient(
            "cumsum", {Diff({3, 4})},
            {{"axis", axis}, {"exclusive", exclusive}, {"reverse", reverse}});
      }
    }
  }
}

TEST(GradientCheck, BinarySameShape) {
  for (const char* op : {"add", "sub", "mul"}) {
    SCOPED_TRACE(op);
    CheckGradient(op, {Diff({2, 3}), Diff({2, 3})});
  }
  CheckGradient("div", {Diff({2, 3}), NonZero({2, 3})});
  CheckGradient("pow", {Positive({2, 3}), Diff({2, 3})});
  // Distinct values, so no ties at the kink.
  CheckGradient("maximum", {Diff({4}, -1, 1), Diff({4}, -0.95, 0.9)});
  CheckGradient("minimum", {Diff({4}, -1, 1), Diff({4}, -0.95, 0.9)});
  CheckGradient("mod", {Positive({4}), Positive({4})}, {}, {.tolerance = 1e-5});
}

TEST(GradientCheck, BinaryBroadcasting) {
  const std::vector<std::pair<Shape, Shape>> shapes = {
      {{2, 3}, {3}}, {{2, 3}, {}}, {{2, 1}, {1, 3}}, {{4, 2, 3}, {2, 1}}};
  for (const auto& [a, b] : shapes) {
    SCOPED_TRACE(a.ToString() + " " + b.ToString());
    for (const char* op : {"add", "sub", "mul"}) {
      SCOPED_TRACE(op);
      CheckGradient(op, {Diff(a), Diff(b)});
      CheckGradient(op, {Diff(b), Diff(a)});
    }
    CheckGradient("div", {Diff(a), NonZero(b)});
  }
}

TEST(GradientCheck, ClipWhereCast) {
  CheckGradient("clip",
                {Diff({6}, -2, 2), Diff({}, -1, -0.9), Diff({}, 0.9, 1)});
  CheckGradient(
      "clip", {Diff({2, 3}, -2, 2), Diff({3}, -1, -0.5), Diff({2, 1}, 0.5, 1)});
  Tensor cond = testing::Bool({true, false, false, true, true, false}, {2, 3});
  CheckGradient("where", {Fixed(cond), Diff({2, 3}), Diff({2, 3})});
  CheckGradient("where", {Fixed(cond), Diff({3}), Diff({})});
  // cast f64 -> f32 -> f64 round trip keeps the gradient.
  CheckGradientOf(
      [](Graph& g, const std::vector<NodeOut>& in) -> std::vector<NodeOut> {
        Node* a = *g.AddNode({.name = "a",
                              .op = "cast",
                              .inputs = {in[0]},
                              .attrs = {{"dtype", DType::kF32}}});
        Node* sq =
            *g.AddNode({.name = "sq", .op = "square", .inputs = {{a, 0}}});
        Node* b = *g.AddNode({.name = "b",
                              .op = "cast",
                              .inputs = {{sq, 0}},
                              .attrs = {{"dtype", DType::kF64}}});
        return {{b, 0}};
      },
      {Diff({3})}, {.step = 1e-3, .tolerance = 1e-4});
}

// ---- reductions -------------------------------------------------------------

TEST(GradientCheck, Reductions) {
  const std::vector<AttrMap> axes = {
      {},
      {{"axis", int64_t{0}}},
      {{"axis", int64_t{-1}}},
      {{"axis", std::vector<int64_t>{0, 2}}, {"keepdims", true}},
      {{"axis", std::vector<int64_t>{1}}, {"keepdims", false}},
  };
  for (const AttrMap& attrs : axes) {
    for (const char* op : {"sum", "mean", "max", "min", "logsumexp"}) {
      SCOPED_TRACE(std::string(op) + " " +
                   (attrs.contains("axis") ? AttrValueToString(attrs.at("axis"))
                                           : "all"));
      CheckGradient(op, {Diff({2, 3, 4})}, attrs);
    }
    CheckGradient("prod", {NonZero({2, 3, 2})}, attrs);
  }
}

// ---- linear algebra and NN --------------------------------------------------

TEST(GradientCheck, MatMul) {
  for (bool ta : {false, true}) {
    for (bool tb : {false, true}) {
      SCOPED_TRACE(::testing::Message() << "ta=" << ta << " tb=" << tb);
      Shape a = ta ? Shape{3, 2} : Shape{2, 3};
      Shape b = tb ? Shape{4, 3} : Shape{3, 4};
      AttrMap attrs{{"transpose_a", ta}, {"transpose_b", tb}};
      CheckGradient("matmul", {Diff(a), Diff(b)}, attrs);
      // Batched, with b broadcast over the batch (one product of all the
      // batch's rows when a is not transposed), over one or two batch dims.
      CheckGradient("matmul", {Diff({2, a.dim(0), a.dim(1)}), Diff(b)}, attrs);
      CheckGradient("matmul", {Diff({3, 2, a.dim(0), a.dim(1)}), Diff(b)},
                    attrs);
    }
  }
}

// matmul_add is f32 only: its gradient is checked through casts from and
// to f64, with a step and tolerance for f32 arithmetic.
TEST(GradientCheck, MatMulAdd) {
  for (bool ta : {false, true}) {
    for (bool tb : {false, true}) {
      SCOPED_TRACE(::testing::Message() << "ta=" << ta << " tb=" << tb);
      Shape a = ta ? Shape{3, 2} : Shape{2, 3};
      Shape b = tb ? Shape{4, 3} : Shape{3, 4};
      CheckGradientOf(
          [&](Graph& g, const std::vector<NodeOut>& in) {
            std::vector<NodeOut> f32;
            for (NodeOut x : in) {
              f32.push_back({*g.AddNode({.name = g.UniqueName("to_f32"),
                                         .op = "cast",
                                         .inputs = {x},
                                         .attrs = {{"dtype", DType::kF32}}}),
                             0});
            }
            Node* sum = *g.AddNode(
                {.name = "sum",
                 .op = "matmul_add",
                 .inputs = f32,
                 .attrs = {{"transpose_a", ta}, {"transpose_b", tb}}});
            return std::vector<NodeOut>{
                {*g.AddNode({.name = "to_f64",
                             .op = "cast",
                             .inputs = {{sum, 0}},
                             .attrs = {{"dtype", DType::kF64}}}),
                 0}};
          },
          {Diff({2, 4}), Diff(a), Diff(b)}, {.step = 1e-3, .tolerance = 2e-3});
    }
  }
}

TEST(GradientCheck, SoftmaxAndLosses) {
  CheckGradient("softmax", {Diff({2, 5})});
  CheckGradient("softmax", {Diff({3, 2})}, {{"axis", int64_t{0}}});
  CheckGradient("log_softmax", {Diff({2, 5})});
  // A row that keeps nothing gets no gradient.
  CheckGradient(
      "masked_softmax",
      {Diff({2, 2, 3}),
       Fixed(testing::Bool({true, false, true, false, false, false}, {2, 3}))});
  // Attention: plain, and with k and v broadcast over a batch dim and a
  // mask that leaves a query no key.
  CheckGradient("scaled_dot_product_attention",
                {Diff({2, 3, 4}), Diff({2, 5, 4}), Diff({2, 5, 3}),
                 Fixed(testing::Bool({true}, {}))});
  CheckGradient("scaled_dot_product_attention",
                {Diff({2, 2, 3, 4}), Diff({2, 1, 4, 4}), Diff({1, 1, 4, 2}),
                 Fixed(testing::Bool({true, false, true, true, false, false,
                                      false, false, false, true, true, false},
                                     {3, 4}))},
                {{"scale", 0.8}});
  // The heads inside the time steps (layout bthd), k and v of one head
  // broadcast over q's 2, a causal mask.
  CheckGradient(
      "scaled_dot_product_attention",
      {Diff({2, 3, 2, 4}), Diff({2, 3, 1, 4}), Diff({2, 3, 1, 2}),
       Fixed(testing::Bool(
           {true, false, false, true, true, false, true, true, true}, {3, 3}))},
      {{"layout", std::string("bthd")}});
  // The fused gradients, as functions of their own inputs (their
  // gradients are the second derivatives of softmax and gelu).
  CheckGradient("softmax_grad", {Diff({2, 5}), Diff({2, 5}, 0, 1)});
  CheckGradient("gelu_grad", {Diff({2, 3}), Diff({2, 3}, -3, 3)});
  CheckGradient("softmax_cross_entropy", {Diff({3, 4}), Diff({3, 4}, 0, 1)});
  CheckGradient("sparse_softmax_cross_entropy",
                {Diff({3, 4}), Fixed(testing::I32({0, 3, 1}, {3}))});
  CheckGradient("sigmoid_cross_entropy", {Diff({2, 3}), Diff({2, 3}, 0, 1)});
  CheckGradient("l2_loss", {Diff({2, 3})});
  CheckGradient("bias_add", {Diff({2, 3, 4}), Diff({4})});
}

// layer_norm's y (its statistics are for the gradient only), over the last
// axis, with x, scale and offset all differentiated.
TEST(GradientCheck, LayerNorm) {
  for (const Shape& x : {Shape{3, 5}, Shape{2, 2, 4}}) {
    SCOPED_TRACE(x.ToString());
    const int64_t n = x.dim(x.rank() - 1);
    CheckGradientOf(
        [](Graph& g, const std::vector<NodeOut>& in) -> std::vector<NodeOut> {
          Node* ln = *g.AddNode({.name = "ln",
                                 .op = "layer_norm",
                                 .inputs = {in[0], in[1], in[2]},
                                 .attrs = {{"eps", 1e-3}}});
          return {{ln, 0}};
        },
        {Diff(x, -2, 2), Diff({n}, 0.5, 1.5), Diff({n})});
  }
}

// batch_norm's y, over every axis but the last, x, scale and offset all
// differentiated.
TEST(GradientCheck, BatchNorm) {
  for (const Shape& x : {Shape{5, 3}, Shape{2, 3, 2}}) {
    SCOPED_TRACE(x.ToString());
    const int64_t n = x.dim(x.rank() - 1);
    CheckGradientOf(
        [](Graph& g, const std::vector<NodeOut>& in) -> std::vector<NodeOut> {
          Node* bn = *g.AddNode({.name = "bn",
                                 .op = "batch_norm",
                                 .inputs = {in[0], in[1], in[2]},
                                 .attrs = {{"eps", 1e-3}}});
          return {{bn, 0}};
        },
        {Diff(x, -2, 2), Diff({n}, 0.5, 1.5), Diff({n})});
  }
}

TEST(GradientCheck, Conv2D) {
  for (const char* padding : {"same", "valid"}) {
    for (int64_t stride : {1, 2}) {
      SCOPED_TRACE(::testing::Message() << padding << " stride " << stride);
      CheckGradient("conv2d", {Diff({2, 5, 5, 2}), Diff({3, 3, 2, 3})},
                    {{"strides", stride}, {"padding", std::string(padding)}});
    }
  }
  CheckGradient("conv2d", {Diff({1, 6, 6, 1}), Diff({2, 2, 1, 2})},
                {{"dilations", int64_t{2}}, {"padding", std::string("same")}});
}

// Gradients of the conv backward ops, through a second derivative:
// d/dx of sum(grad(sum(conv(x, w)^2), w)) needs conv_backprop_filter's
// gradient, and the same for w needs conv_backprop_input's (`conv` is
// conv2d or conv3d).
void CheckConvSecondOrder(const std::string& conv, const Shape& x,
                          const Shape& w) {
  for (int wrt : {0, 1}) {
    SCOPED_TRACE(StrCat(conv, " wrt ", wrt));
    CheckGradientOf(
        [&](Graph& g, const std::vector<NodeOut>& in) -> std::vector<NodeOut> {
          Node* c = *g.AddNode({.name = "c",
                                .op = conv,
                                .inputs = {in[0], in[1]},
                                .attrs = {{"strides", int64_t{2}}}});
          Node* sq =
              *g.AddNode({.name = "sq", .op = "square", .inputs = {{c, 0}}});
          Node* s = *g.AddNode({.name = "s", .op = "sum", .inputs = {{sq, 0}}});
          auto d = AddGradients(&g, {s, 0}, {in[wrt]});
          EXPECT_TRUE(d.ok()) << d.status();
          return {(*d)[0]};
        },
        {Diff(x), Diff(w)}, {.tolerance = 1e-5});
  }
}

TEST(GradientCheck, Conv2DSecondOrder) {
  CheckConvSecondOrder("conv2d", Shape{1, 4, 4, 2}, Shape{3, 3, 2, 2});
}

TEST(GradientCheck, Pooling) {
  for (const char* padding : {"same", "valid"}) {
    for (int64_t stride : {1, 2}) {
      SCOPED_TRACE(::testing::Message() << padding << " stride " << stride);
      AttrMap attrs{{"size", int64_t{2}},
                    {"strides", stride},
                    {"padding", std::string(padding)}};
      CheckGradient("max_pool", {Diff({2, 5, 5, 2})}, attrs);
      CheckGradient("avg_pool", {Diff({2, 5, 5, 2})}, attrs);
      // Dilated windows (issue 34): taps 2 apart, some over the edge.
      attrs["dilations"] = std::vector<int64_t>{2, 3};
      CheckGradient("max_pool", {Diff({2, 7, 8, 2})}, attrs);
      CheckGradient("avg_pool", {Diff({2, 7, 8, 2})}, attrs);
      CheckGradient("max_pool_with_argmax", {Diff({2, 7, 8, 2})}, attrs);
    }
  }
}

// The 3-D ops (issue 34): conv3d, strided and dilated, and the 3-D pools.
TEST(GradientCheck, Conv3DAndPool3D) {
  for (const char* padding : {"same", "valid"}) {
    SCOPED_TRACE(padding);
    CheckGradient("conv3d", {Diff({2, 4, 4, 3, 2}), Diff({2, 3, 2, 2, 3})},
                  {{"strides", std::vector<int64_t>{1, 2, 1}},
                   {"padding", std::string(padding)}});
    CheckGradient("conv3d", {Diff({1, 5, 4, 4, 1}), Diff({2, 2, 2, 1, 2})},
                  {{"dilations", std::vector<int64_t>{2, 1, 2}},
                   {"padding", std::string(padding)}});
    AttrMap attrs{{"size", std::vector<int64_t>{2, 2, 3}},
                  {"strides", std::vector<int64_t>{1, 2, 2}},
                  {"padding", std::string(padding)}};
    CheckGradient("max_pool3d", {Diff({2, 4, 5, 5, 2})}, attrs);
    CheckGradient("avg_pool3d", {Diff({2, 4, 5, 5, 2})}, attrs);
  }
}

TEST(GradientCheck, Conv3DSecondOrder) {
  CheckConvSecondOrder("conv3d", Shape{1, 3, 4, 4, 2}, Shape{2, 3, 3, 2, 2});
}

// resize, up and down, every method and coordinate rule (issue 34).
TEST(GradientCheck, Resize) {
  for (const char* method : {"linear", "nearest"}) {
    for (const char* coordinates :
         {"half_pixel", "align_corners", "asymmetric"}) {
      for (const std::vector<int64_t>& size :
           {std::vector<int64_t>{5, 7}, std::vector<int64_t>{2, 3}}) {
        SCOPED_TRACE(StrCat(method, " ", coordinates, " ", size[0]));
        CheckGradient("resize", {Diff({2, 3, 4, 2})},
                      {{"size", size},
                       {"method", std::string(method)},
                       {"coordinates", std::string(coordinates)}});
      }
    }
  }
}

// ---- shape ops --------------------------------------------------------------

Tensor I64s(std::vector<int64_t> v) {
  const int64_t n = static_cast<int64_t>(v.size());
  return Tensor::FromVector(v, Shape{n});
}

TEST(GradientCheck, ShapeOps) {
  CheckGradient("reshape", {Diff({2, 3}), Fixed(I64s({3, 2}))});
  CheckGradient("expand_dims", {Diff({2, 3})}, {{"axis", int64_t{1}}});
  CheckGradient("squeeze", {Diff({2, 1, 3})});
  CheckGradient("transpose", {Diff({2, 3, 4})},
                {{"perm", std::vector<int64_t>{2, 0, 1}}});
  CheckGradient("transpose", {Diff({2, 3})});
  CheckGradient("concat", {Diff({2, 3}), Diff({2, 1}), Diff({2, 2})},
                {{"axis", int64_t{1}}});
  CheckGradient("stack", {Diff({2, 3}), Diff({2, 3})}, {{"axis", int64_t{1}}});
  CheckGradient("unstack", {Diff({2, 3})}, {{"axis", int64_t{1}}});
  CheckGradient("split", {Diff({4, 3})},
                {{"num", int64_t{2}}, {"axis", int64_t{0}}});
  CheckGradient("broadcast_to", {Diff({3}), Fixed(I64s({2, 3}))});
  CheckGradient("identity", {Diff({2})});
  CheckGradient("check_numerics", {Diff({2})}, {{"message", std::string("m")}});
  CheckGradient("placeholder_with_default", {Diff({2, 2})},
                {{"shape", Shape{2, 2}}});
  CheckGradient("fill", {Fixed(I64s({2, 3})), Diff({})});
}

TEST(GradientCheck, IndexingOps) {
  CheckGradient("slice",
                {Diff({3, 4}), Fixed(I64s({1, 1})), Fixed(I64s({2, -1}))});
  CheckGradient("strided_slice", {Diff({5, 4})},
                {{"begin", std::vector<int64_t>{4, 1}},
                 {"end", std::vector<int64_t>{0, 2}},
                 {"strides", std::vector<int64_t>{-2, 1}},
                 {"shrink_axis_mask", int64_t{2}}});
  CheckGradient("dynamic_index",
                {Diff({3, 2}), Fixed(Tensor::Scalar<int64_t>(-1))});
  CheckGradient("dynamic_update_index",
                {Diff({3, 2}), Fixed(Tensor::Scalar<int64_t>(1)), Diff({2})});
  CheckGradient("dynamic_index_add",
                {Diff({3, 2}), Fixed(Tensor::Scalar<int64_t>(-1)), Diff({2})});
  CheckGradient("gather", {Diff({4, 3}), Fixed(testing::I32({2, 0, 2}, {3}))});
  CheckGradient("gather", {Diff({2, 4}), Fixed(testing::I32({3, 3, 1}, {3}))},
                {{"axis", int64_t{1}}});
  CheckGradient(
      "gather_grad_add",
      {Diff({4, 3}), Fixed(testing::I32({2, 0, 2}, {3})), Diff({3, 3})});
  CheckGradient(
      "gather_grad_add",
      {Diff({2, 4}), Fixed(testing::I32({3, 3, 1}, {3})), Diff({2, 3})},
      {{"axis", int64_t{1}}});
  CheckGradient("tile", {Diff({2, 3}), Fixed(I64s({2, 1}))});
  CheckGradient("pad",
                {Diff({2, 3}),
                 Fixed(Tensor::FromVector<int64_t>({1, 0, 0, 2}, Shape{2, 2})),
                 Diff({})});
}

// The index ops (issue 34): each gather's gradient is a scatter-add, each
// scatter's a gather; indices that read one element twice, batch
// dimensions, and top_k along either axis.
TEST(GradientCheck, IndexOps) {
  using testing::I32;
  // Element [0, 2] is read twice; [1, 1] not at all.
  const Tensor along = I32({2, 0, 2, 1, 0, 0}, {2, 3});
  CheckGradient("gather_elements", {Diff({2, 3}), Fixed(along)},
                {{"axis", int64_t{1}}});
  CheckGradient("gather_elements", {Diff({3, 4}), Fixed(I32({2, 1}, {1, 2}))});
  // Distinct targets for "none"; along axis 0, a column's rows.
  const Tensor rows = I32({2, 0, 1, 0, 1, 2}, {2, 3});
  for (const char* how : {"none", "add"}) {
    SCOPED_TRACE(how);
    CheckGradient("scatter_elements", {Diff({3, 3}), Fixed(rows), Diff({2, 3})},
                  {{"axis", int64_t{0}}, {"reduction", std::string(how)}});
    CheckGradient("scatter_nd",
                  {Diff({4, 3}), Fixed(I32({3, 0}, {2, 1})), Diff({2, 3})},
                  {{"reduction", std::string(how)}});
  }
  CheckGradient("scatter_elements", {Diff({3, 3}), Fixed(along), Diff({2, 3})},
                {{"axis", int64_t{1}}, {"reduction", std::string("add")}});
  CheckGradient("gather_nd",
                {Diff({3, 4}), Fixed(I32({2, 1, 0, 3, 2, 1}, {3, 2}))});
  CheckGradient("gather_nd", {Diff({3, 4, 2}), Fixed(I32({2, 2, 0}, {3, 1}))});
  CheckGradient("gather_nd",
                {Diff({2, 3, 2}), Fixed(I32({1, 2, 0, 0}, {2, 2, 1}))},
                {{"batch_dims", int64_t{1}}});
  CheckGradient(
      "scatter_nd", {Diff({2, 3, 2}), Fixed(I32({1, 2}, {2, 1})), Diff({2, 2})},
      {{"batch_dims", int64_t{1}}, {"reduction", std::string("add")}});
  // Distinct values, so the order is fixed near them.
  for (int64_t axis : {0, 1, -1}) {
    for (bool largest : {true, false}) {
      SCOPED_TRACE(StrCat(axis, largest));
      CheckGradient("top_k", {Diff({4, 5}), Fixed(Tensor::Scalar<int32_t>(2))},
                    {{"axis", axis}, {"largest", largest}});
    }
  }
}

// Every gradient with `?` dimensions: the inputs are placeholders of
// unknown size, so gradient functions that need a size take it from
// shape_of at run time.
TEST(GradientCheck, UnknownDimensions) {
  const GradCheckOptions unknown{.unknown_dims = true};
  auto check = [&](const std::string& op, const std::vector<GradInput>& in,
                   AttrMap attrs = {}) {
    SCOPED_TRACE(op);
    CheckGradient(op, in, std::move(attrs), unknown);
  };
  check("add", {Diff({2, 3}), Diff({3})});
  check("mul", {Diff({2, 3}), Diff({2, 1})});
  check("div", {Diff({2, 3}), NonZero({3})});
  check("sum", {Diff({2, 3})}, {{"axis", int64_t{1}}});
  check("mean", {Diff({2, 3})}, {{"axis", int64_t{0}}, {"keepdims", true}});
  check("max", {Diff({2, 3})}, {{"axis", int64_t{1}}});
  check("matmul", {Diff({2, 3}), Diff({3, 4})});
  check("softmax", {Diff({2, 5})});
  check("log_softmax", {Diff({2, 5})});
  check("softmax_cross_entropy", {Diff({3, 4}), Diff({3, 4}, 0, 1)});
  check("sparse_softmax_cross_entropy",
        {Diff({3, 4}), Fixed(testing::I32({0, 3, 1}, {3}))});
  check("bias_add", {Diff({2, 3, 4}), Diff({4})});
  check("l2_loss", {Diff({2, 3})});
  check("conv2d", {Diff({2, 5, 5, 2}), Diff({3, 3, 2, 3})},
        {{"strides", int64_t{2}}, {"padding", std::string("same")}});
  check("max_pool", {Diff({2, 4, 4, 2})},
        {{"size", int64_t{2}}, {"strides", int64_t{2}}});
  check("avg_pool", {Diff({2, 4, 4, 2})},
        {{"size", int64_t{2}}, {"strides", int64_t{2}}});
  check("reshape", {Diff({2, 3}), Fixed(I64s({3, 2}))});
  check("transpose", {Diff({2, 3, 4})},
        {{"perm", std::vector<int64_t>{2, 0, 1}}});
  check("concat", {Diff({2, 3}), Diff({2, 1}), Diff({2, 2})},
        {{"axis", int64_t{1}}});
  check("concat", {Diff({1, 3}), Diff({2, 3})}, {{"axis", int64_t{0}}});
  check("stack", {Diff({2, 3}), Diff({2, 3})}, {{"axis", int64_t{1}}});
  check("broadcast_to", {Diff({3}), Fixed(I64s({2, 3}))});
  check("slice", {Diff({3, 4}), Fixed(I64s({1, 1})), Fixed(I64s({2, -1}))});
  check("strided_slice", {Diff({5, 4})},
        {{"begin", std::vector<int64_t>{4, 1}},
         {"end", std::vector<int64_t>{0, 2}},
         {"strides", std::vector<int64_t>{-2, 1}},
         {"shrink_axis_mask", int64_t{2}}});
  check("dynamic_index", {Diff({3, 2}), Fixed(Tensor::Scalar<int64_t>(-1))});
  check("dynamic_update_index",
        {Diff({3, 2}), Fixed(Tensor::Scalar<int64_t>(-1)), Diff({2})});
  check("gather", {Diff({4, 3}), Fixed(testing::I32({2, 0, 2}, {3}))});
  check("tile", {Diff({2, 3}), Fixed(I64s({2, 1}))});
  check("pad", {Diff({2, 3}),
                Fixed(Tensor::FromVector<int64_t>({1, 0, 0, 2}, Shape{2, 2})),
                Diff({})});
  check("where",
        {Fixed(Tensor::FromVector<bool>({true, false, true}, Shape{3})),
         Diff({2, 3}), Diff({3})});
}

// The gradient of tile's adjoint (a second derivative) with unknown sizes.
TEST(GradientCheck, TileSecondOrderUnknownDimensions) {
  CheckGradientOf(
      [](Graph& g, const std::vector<NodeOut>& in) -> std::vector<NodeOut> {
        Node* reps = *g.AddConst(I64s({2, 3}), "reps");
        Node* t = *g.AddNode(
            {.name = "t", .op = "tile", .inputs = {in[0], {reps, 0}}});
        Node* sq =
            *g.AddNode({.name = "sq", .op = "mul", .inputs = {{t, 0}, {t, 0}}});
        Node* s = *g.AddNode({.name = "s", .op = "sum", .inputs = {{sq, 0}}});
        std::vector<NodeOut> d = *AddGradients(&g, {s, 0}, {in[0]});
        return {d[0]};
      },
      {Diff({2, 2})}, {.unknown_dims = true});
}

// Gradients of the indexing adjoints, through second derivatives of
// sum(f(x)^2) where f is the indexing op.
TEST(GradientCheck, IndexingSecondOrder) {
  struct Case {
    const char* op;
    std::vector<testing::GradInput> fixed;  // inputs after x
    AttrMap attrs;
  };
  const std::vector<Case> cases = {
      {"gather", {Fixed(testing::I32({2, 0, 2}, {3}))}, {}},
      {"slice", {Fixed(I64s({1, 1})), Fixed(I64s({2, 2}))}, {}},
      {"strided_slice",
       {},
       {{"begin", std::vector<int64_t>{3, 0}},
        {"end", std::vector<int64_t>{0, 3}},
        {"strides", std::vector<int64_t>{-2, 2}}}},
      {"dynamic_index", {Fixed(Tensor::Scalar<int64_t>(1))}, {}},
      {"dynamic_update_index",
       {Fixed(Tensor::Scalar<int64_t>(2)), testing::Diff({3})},
       {}},
      {"tile", {Fixed(I64s({2, 1}))}, {}},
      {"pad",
       {Fixed(Tensor::FromVector<int64_t>({1, 0, 0, 2}, Shape{2, 2})),
        Fixed(Tensor::Scalar<double>(0.5))},
       {}},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.op);
    std::vector<testing::GradInput> inputs = {Diff({4, 3})};
    inputs.insert(inputs.end(), c.fixed.begin(), c.fixed.end());
    CheckGradientOf(
        [&](Graph& g, const std::vector<NodeOut>& in) -> std::vector<NodeOut> {
          absl::StatusOr<Node*> f = g.AddNode(
              {.name = "f", .op = c.op, .inputs = in, .attrs = c.attrs});
          EXPECT_TRUE(f.ok()) << f.status();
          Node* sq =
              *g.AddNode({.name = "sq", .op = "square", .inputs = {{*f, 0}}});
          Node* s = *g.AddNode({.name = "s", .op = "sum", .inputs = {{sq, 0}}});
          auto d = AddGradients(&g, {s, 0}, {in[0]});
          EXPECT_TRUE(d.ok()) << d.status();
          return {(*d)[0]};
        },
        inputs, {.tolerance = 1e-5});
  }
}

// ---- the transformation -----------------------------------------------------

TEST(Gradients, PathsMeetAndAreSummed) {
  // f(x) = x * x + sin(x) * x, so x is used four times.
  CheckGradientOf(
      [](Graph& g, const std::vector<NodeOut>& in) -> std::vector<NodeOut> {
        NodeOut x = in[0];
        Node* xx = *g.AddNode({.name = "xx", .op = "mul", .inputs = {x, x}});
        Node* s = *g.AddNode({.name = "s", .op = "sin", .inputs = {x}});
        Node* sx =
            *g.AddNode({.name = "sx", .op = "mul", .inputs = {{s, 0}, x}});
        Node* f = *g.AddNode(
            {.name = "f", .op = "add", .inputs = {{xx, 0}, {sx, 0}}});
        return {{f, 0}};
      },
      {Diff({3})});
}

// A small MLP with a softmax loss, end to end.
TEST(Gradients, TwoLayerNetwork) {
  CheckGradientOf(
      [](Graph& g, const std::vector<NodeOut>& in) -> std::vector<NodeOut> {
        auto add = [&](const char* op, std::vector<NodeOut> inputs,
                       AttrMap attrs = {}) -> NodeOut {
          absl::StatusOr<Node*> n = g.AddNode({.name = g.UniqueName(op),
                                               .op = op,
                                               .inputs = std::move(inputs),
                                               .attrs = std::move(attrs)});
          EXPECT_TRUE(n.ok()) << n.status();
          return {*n, 0};
        };
        NodeOut h = add(
            "relu", {add("bias_add", {add("matmul", {in[0], in[1]}), in[2]})});
        NodeOut logits = add("matmul", {h, in[3]});
        NodeOut loss = add("sparse_softmax_cross_entropy", {logits, in[4]});
        return {add("mean", {loss})};
      },
      {Diff({4, 3}), Diff({3, 5}), Diff({5}), Diff({5, 2}),
       Fixed(testing::I32({0, 1, 1, 0}, {4}))});
}

// y = sum(x^3): dy/dx = 3x^2, and d/dx sum(3x^2 * w) = 6xw.
TEST(Gradients, GradientOfGradient) {
  for (const char* f : {"cube", "tanh", "sigmoid", "relu"}) {
    SCOPED_TRACE(f);
    const std::string op = f;
    CheckGradientOf(
        [&](Graph& g, const std::vector<NodeOut>& in) -> std::vector<NodeOut> {
          NodeOut x = in[0];
          NodeOut y;
          if (op == "cube") {
            Node* xx =
                *g.AddNode({.name = "xx", .op = "mul", .inputs = {x, x}});
            y = {*g.AddNode({.name = "y", .op = "mul", .inputs = {{xx, 0}, x}}),
                 0};
          } else {
            y = {*g.AddNode({.name = "y", .op = op, .inputs = {x}}), 0};
          }
          // Square the output so relu's second derivative is not zero.
          Node* yy = *g.AddNode({.name = "yy", .op = "mul", .inputs = {y, y}});
          Node* s = *g.AddNode({.name = "s", .op = "sum", .inputs = {{yy, 0}}});
          absl::StatusOr<std::vector<NodeOut>> dx =
              AddGradients(&g, {s, 0}, {x});
          EXPECT_TRUE(dx.ok()) << dx.status();
          return {(*dx)[0]};
        },
        {NonZero({4})}, {.tolerance = 1e-5});
  }
}

std::shared_ptr<Graph> NewGraph() { return std::make_shared<Graph>(); }

Node* Placeholder(Graph& g, const std::string& name, DType d, Shape s) {
  return *g.AddNode({.name = name,
                     .op = "placeholder",
                     .attrs = {{"dtype", d}, {"shape", std::move(s)}}});
}

TEST(Gradients, UnconnectedInputGetsZeros) {
  auto g = NewGraph();
  Node* x = Placeholder(*g, "x", DType::kF32, {2});
  Node* z = Placeholder(*g, "z", DType::kF32, {3});
  Node* y = *g->AddNode({.name = "y", .op = "sum", .inputs = {{x, 0}}});
  auto dz = AddGradients(g.get(), {y, 0}, {{z, 0}});
  ASSERT_TRUE(dz.ok()) << dz.status();
  Session s(g, {.num_threads = 1});
  auto out = s.Run({{{x, 0}, testing::F32({1, 2}, {2})},
                    {{z, 0}, testing::F32({1, 2, 3}, {3})}},
                   {(*dz)[0]}, {});
  ASSERT_TRUE(out.ok()) << out.status();
  testing::ExpectTensor((*out)[0], DType::kF32, Shape{3}, {0, 0, 0});
}

TEST(Gradients, StopGradientBlocks) {
  auto g = NewGraph();
  Node* x = Placeholder(*g, "x", DType::kF32, {2});
  // y = sum(x * stop_gradient(x)): dy/dx = stop_gradient(x) = x.
  Node* sg =
      *g->AddNode({.name = "sg", .op = "stop_gradient", .inputs = {{x, 0}}});
  Node* m =
      *g->AddNode({.name = "m", .op = "mul", .inputs = {{x, 0}, {sg, 0}}});
  Node* y = *g->AddNode({.name = "y", .op = "sum", .inputs = {{m, 0}}});
  auto dx = AddGradients(g.get(), {y, 0}, {{x, 0}});
  ASSERT_TRUE(dx.ok()) << dx.status();
  Session s(g, {.num_threads = 1});
  auto out = s.Run({{{x, 0}, testing::F32({3, -2}, {2})}}, {(*dx)[0]}, {});
  ASSERT_TRUE(out.ok()) << out.status();
  testing::ExpectTensor((*out)[0], DType::kF32, Shape{2}, {3, -2});
}

TEST(Gradients, IntegerEdgesCarryNothing) {
  auto g = NewGraph();
  Node* x = Placeholder(*g, "x", DType::kF32, {3});
  // y = sum(x * cast(argmax(x) == 1)) has gradient only through the mul.
  Node* am = *g->AddNode({.name = "am", .op = "argmax", .inputs = {{x, 0}}});
  Node* c = *g->AddNode({.name = "c",
                         .op = "cast",
                         .inputs = {{am, 0}},
                         .attrs = {{"dtype", DType::kF32}}});
  Node* m = *g->AddNode({.name = "m", .op = "mul", .inputs = {{x, 0}, {c, 0}}});
  Node* y = *g->AddNode({.name = "y", .op = "sum", .inputs = {{m, 0}}});
  auto dx = AddGradients(g.get(), {y, 0}, {{x, 0}});
  ASSERT_TRUE(dx.ok()) << dx.status();
  Session s(g, {.num_threads = 1});
  auto out = s.Run({{{x, 0}, testing::F32({1, 5, 2}, {3})}}, {(*dx)[0]}, {});
  ASSERT_TRUE(out.ok()) << out.status();
  testing::ExpectTensor((*out)[0], DType::kF32, Shape{3}, {1, 1, 1});
}

// layer_norm's statistics have no gradient, nor has its gradient op: each
// is an error that says so, never a silent zero.
TEST(Gradients, LayerNormRefusesWhatItCannotDifferentiate) {
  auto g = NewGraph();
  Node* x = Placeholder(*g, "x", DType::kF32, {2, 3});
  Node* s = Placeholder(*g, "s", DType::kF32, {3});
  Node* ln = *g->AddNode(
      {.name = "ln", .op = "layer_norm", .inputs = {{x, 0}, {s, 0}, {s, 0}}});
  Node* m = *g->AddNode({.name = "m", .op = "sum", .inputs = {{ln, 1}}});
  auto dm = AddGradients(g.get(), {m, 0}, {{x, 0}});
  ASSERT_FALSE(dm.ok());
  EXPECT_THAT(std::string(dm.status().message()),
              ::testing::HasSubstr("the gradient of layer_norm's mean and "
                                   "rstd outputs is not supported"));
  Node* y = *g->AddNode({.name = "y", .op = "sum", .inputs = {{ln, 0}}});
  auto dx = AddGradients(g.get(), {y, 0}, {{x, 0}});
  ASSERT_TRUE(dx.ok()) << dx.status();
  Node* d = *g->AddNode({.name = "d", .op = "sum", .inputs = {(*dx)[0]}});
  auto ddx = AddGradients(g.get(), {d, 0}, {{x, 0}});
  ASSERT_FALSE(ddx.ok());
  EXPECT_THAT(std::string(ddx.status().message()),
              ::testing::HasSubstr("the second derivative of layer_norm"));
}

// A scatter's "mul", "max" and "min" have no gradient: asking is an error
// that names the reduction.
TEST(Gradients, ScatterReductionsWithoutAGradientSaySo) {
  for (const char* how : {"mul", "max", "min"}) {
    auto g = NewGraph();
    Node* x = Placeholder(*g, "x", DType::kF32, {3});
    Node* u = Placeholder(*g, "u", DType::kF32, {1});
    Node* i = *g->AddConst(testing::I32({1}, {1, 1}), "i");
    Node* s = *g->AddNode({.name = "s",
                           .op = "scatter_nd",
                           .inputs = {{x, 0}, {i, 0}, {u, 0}},
                           .attrs = {{"reduction", std::string(how)}}});
    Node* y = *g->AddNode({.name = "y", .op = "sum", .inputs = {{s, 0}}});
    auto d = AddGradients(g.get(), {y, 0}, {{x, 0}});
    ASSERT_FALSE(d.ok());
    EXPECT_THAT(std::string(d.status().message()),
                ::testing::HasSubstr(StrCat("scatter_nd with reduction \"", how,
                                            "\" has no gradient")));
  }
}

TEST(Gradients, DropoutUsesItsMask) {
  auto g = NewGraph();
  Node* x = Placeholder(*g, "x", DType::kF32, {1000});
  Node* rate = *g->AddConst(Tensor::Scalar<float>(0.25f), "rate");
  Node* training = *g->AddConst(Tensor::Scalar<bool>(true), "training");
  Node* d = *g->AddNode({.name = "d",
                         .op = "dropout",
                         .inputs = {{x, 0}, {rate, 0}, {training, 0}}});
  Node* y = *g->AddNode({.name = "y", .op = "sum", .inputs = {{d, 0}}});
  auto dx = AddGradients(g.get(), {y, 0}, {{x, 0}});
  ASSERT_TRUE(dx.ok()) << dx.status();
  Session s(g, {.num_threads = 1});
  std::vector<float> ones(1000, 1.0f);
  auto out =
      s.Run({{{x, 0}, testing::F32(ones, {1000})}}, {{d, 0}, (*dx)[0]}, {});
  ASSERT_TRUE(out.ok()) << out.status();
  // With x = 1 the output is the mask itself, and so is the gradient.
  int kept = 0;
  for (int i = 0; i < 1000; ++i) {
    const float yi = (*out)[0].at<float>(i), gi = (*out)[1].at<float>(i);
    EXPECT_FLOAT_EQ(yi, gi);
    EXPECT_TRUE(gi == 0.0f || std::abs(gi - 1 / 0.75f) < 1e-6) << gi;
    kept += gi != 0;
  }
  EXPECT_GT(kept, 650);
  EXPECT_LT(kept, 850);
}

// An op registered here, with no gradient entry, to test the error.
RUNNEL_REGISTER_OP(OpDefBuilder("_test_no_gradient")
                       .Inputs({"x"})
                       .Outputs({"y"})
                       .Shape([](const ShapeContext& c) {
                         return std::vector<TensorSpec>{c.input(0)};
                       }));

TEST(Gradients, MissingGradientIsAnErrorAtTheNode) {
  auto g = NewGraph();
  Node* x = Placeholder(*g, "x", DType::kF32, {2});
  SourceSpan span;
  span.line = 7;
  span.col = 3;
  Node* n = *g->AddNode({.name = "n",
                         .op = "_test_no_gradient",
                         .inputs = {{x, 0}},
                         .span = span});
  Node* y = *g->AddNode({.name = "y", .op = "sum", .inputs = {{n, 0}}});
  auto dx = AddGradients(g.get(), {y, 0}, {{x, 0}});
  ASSERT_FALSE(dx.ok());
  EXPECT_EQ(dx.status().message(),
            "grad: op '_test_no_gradient' has no gradient (node 'n' lies "
            "between y and x)");
  EXPECT_EQ(NodeNameOf(dx.status()), "n");
  ASSERT_TRUE(SpanOf(dx.status()).has_value());
  EXPECT_EQ(SpanOf(dx.status())->line, 7);
}

// Every registered op has a gradient entry (a function, or "not
// differentiable"), so no op can silently lack one.
TEST(Gradients, EveryOpHasAGradientEntry) {
  std::vector<std::string> missing;
  for (const std::string& op : OpRegistry::Global().ListOps()) {
    if (op.rfind("_test", 0) == 0 || op.rfind("test_", 0) == 0) continue;
    // Deliberately without an entry, so a second derivative through it is
    // an error rather than a silent zero.
    if (op == "max_pool_grad" || op == "max_pool3d_grad" ||
        op == "scaled_dot_product_attention_grad") {
      continue;
    }
    if (GradientRegistry::Global().Find(op) == nullptr) missing.push_back(op);
  }
  EXPECT_TRUE(missing.empty())
      << "ops without a gradient entry: " << ::testing::PrintToString(missing);
}

TEST(Gradients, YMustBeFloating) {
  auto g = NewGraph();
  Node* x = Placeholder(*g, "x", DType::kI32, {2});
  Node* y = *g->AddNode({.name = "y", .op = "sum", .inputs = {{x, 0}}});
  auto dx = AddGradients(g.get(), {y, 0}, {{x, 0}});
  ASSERT_FALSE(dx.ok());
  EXPECT_NE(dx.status().message().find("floating-point"), std::string::npos)
      << dx.status();
}

}  // namespace
}  // namespace runnel
