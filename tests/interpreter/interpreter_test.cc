// The evaluator on small scripts: literal promotion, node names and scopes,
// devices and control dependencies, print output and exit statuses.
#include "interpreter/interpreter.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "framework/op_registry.h"

namespace runnel::interp {
namespace {

// Runs `source` in a fresh interpreter, capturing printed output and
// diagnostics.
class ScriptTest : public ::testing::Test {
 protected:
  int Run(const std::string& source, bool check_mode = false) {
    out_ = std::tmpfile();
    err_ = std::tmpfile();
    sink_ = std::make_unique<lang::DiagnosticSink>(err_);
    Options options;
    options.threads = 2;
    options.out = out_;
    options.err = err_;
    options.check_mode = check_mode;
    interp_ = std::make_unique<Interpreter>(options, sink_.get());
    return interp_->RunSource("test.rnl", source);
  }
  static std::string Read(std::FILE* f) {
    std::fflush(f);
    std::rewind(f);
    std::string s;
    char buf[4096];
    size_t n;
    while ((n = std::fread(buf, 1, sizeof buf, f)) > 0) s.append(buf, n);
    return s;
  }
  std::string out() { return Read(out_); }
  std::string err() { return Read(err_); }
  const Node* node(const std::string& name) {
    return interp_->graph().FindNode(name);
  }
  void TearDown() override {
    interp_.reset();
    if (out_) std::fclose(out_);
    if (err_) std::fclose(err_);
  }

  std::FILE* out_ = nullptr;
  std::FILE* err_ = nullptr;
  std::unique_ptr<lang::DiagnosticSink> sink_;
  std::unique_ptr<Interpreter> interp_;
};

TEST_F(ScriptTest, PrintsValues) {
  ASSERT_EQ(Run(R"(
print(1, 2.5, "s", true, none, f32)
print([[1, 2], [3, 4]])
print((1, "a"), {x: 1})
input x: f32[?, 10]
print(x)
)"),
            0)
      << err();
  EXPECT_EQ(out(),
            "1 2.5 s true none f32\n"
            "[[1, 2], [3, 4]]\n"
            "(1, \"a\") {x: 1}\n"
            "<symbolic f32[?,10] x>\n");
}

TEST_F(ScriptTest, LiteralsTakeTheOtherOperandsDType) {
  ASSERT_EQ(Run(R"(
input x: f64[2]
let y = x * 2
let z = 2.5 + x
let c = cast([1, 2], f64) * 3
print(c.dtype, (1 + 2.5).dtype, (7 // 2).dtype, (1 / 2).dtype)
input i: i32[]
let j = i + 1
)"),
            0)
      << err();
  EXPECT_EQ(node("y")->output_dtype(0), DType::kF64);
  EXPECT_EQ(node("z")->output_dtype(0), DType::kF64);
  EXPECT_EQ(node("j")->output_dtype(0), DType::kI32);
  EXPECT_EQ(out(), "f64 f32 i32 f32\n");
}

TEST_F(ScriptTest, FloatLiteralWithIntegerTensorIsAnError) {
  EXPECT_EQ(Run("input i: i32[]\nlet j = i * 0.5\n"), 1);
  EXPECT_NE(err().find("dtypes differ: i32 and f32 (a float literal)"),
            std::string::npos)
      << err();
}

TEST_F(ScriptTest, NodeNamesFollowLetAndOps) {
  ASSERT_EQ(Run(R"(
input x: f32[?, 3]
var w = zeros([3, 2])
let h = relu(x @ w)
let g = relu(x @ w)
)"),
            0)
      << err();
  ASSERT_NE(node("h"), nullptr);
  EXPECT_EQ(node("h")->op(), "relu");
  EXPECT_EQ(node("matmul")->op(), "matmul");
  EXPECT_EQ(node("matmul_1")->op(), "matmul");
  EXPECT_EQ(node("g")->op(), "relu");
  EXPECT_EQ(node("w")->op(), "variable");
  EXPECT_EQ(node("w/initial_value")->op(), "const");
  EXPECT_EQ(*node("w")->attr<std::string>("initializer"), "w/initial_value:0");
  EXPECT_TRUE(*node("w")->attr<bool>("trainable"));
}

TEST_F(ScriptTest, EachDefCallOpensAUniqueScopeLazily) {
  ASSERT_EQ(Run(R"(
def double(a) = a * 2
def dense(x, units) {
    var w = zeros([x.shape[1], units])
    x @ w
}
let k = double(3)      # concrete: makes no node, reserves no scope
input x: f32[?, 4]
let h1 = dense(x, 8)
let h2 = dense(h1, 2)
scope "enc" {
    let z = dense(x, 3)
    let q = x + 1
}
print(z.name, q.name)
)"),
            0)
      << err();
  EXPECT_NE(node("dense/w"), nullptr);
  EXPECT_NE(node("dense/matmul"), nullptr);
  EXPECT_NE(node("dense_1/w"), nullptr);
  EXPECT_EQ(node("double"), nullptr);
  EXPECT_NE(node("enc/dense/w"), nullptr);
  EXPECT_EQ(out(), "enc/dense/matmul enc/q\n");
}

TEST_F(ScriptTest, DevicesAndControlDependencies) {
  ASSERT_EQ(Run(R"(
input x: f32[2]
device "/job:localhost/task:0" {
    var v = zeros([2])
    device "/cpu:0" { let y = x + 1 }
}
let a = x * 2
after (a,) { let b = x - 1 }
let c = x / 2
)"),
            0)
      << err();
  EXPECT_EQ(node("v")->requested_device(), "/job:localhost/task:0");
  EXPECT_EQ(node("y")->requested_device(),
            "/job:localhost/task:0/device:cpu:0");
  EXPECT_EQ(node("a")->requested_device(), "");
  ASSERT_EQ(node("b")->control_inputs().size(), 1u);
  EXPECT_EQ(node("b")->control_inputs()[0], node("a"));
  EXPECT_TRUE(node("c")->control_inputs().empty());
}

TEST_F(ScriptTest, RunFeedsAndFetchesStructures) {
  ASSERT_EQ(Run(R"(
input x: f32[?, 2]
var w = [[1.0], [2.0]]
let y = x @ w
let (a, r) = run (y, {s: sum(y)}) with {x: [[1, 1], [2, 0]]}
print(a, r.s)
state n = 0
let bump = (n += 1)
run bump
print(run n)
)"),
            0)
      << err();
  EXPECT_EQ(out(), "[[3.0], [2.0]] 5.0\n1\n");
}

TEST_F(ScriptTest, CheckModeBuildsTheGraphButRunsNothing) {
  ASSERT_EQ(Run(R"(
input x: f32[?, 2]
let y = sum(x)
for i in 0..1000 {
    let v = run y with {x: [[1.0, 2.0]]}
    print("never printed", v)
}
def layer(h) = h * 2
let h = x
for i in 0..3 { h = layer(h) }
)",
                /*check_mode=*/true),
            0)
      << err();
  EXPECT_EQ(out(), "");
  // The loop without `run` ran all three iterations.
  EXPECT_NE(node("layer_2/mul"), nullptr);
}

TEST_F(ScriptTest, CheckModeFindsMissingFeeds) {
  EXPECT_EQ(Run("input x: f32[2]\nlet y = x * 2\nlet v = run y\n",
                /*check_mode=*/true),
            1);
  EXPECT_NE(err().find("missing feed for input 'x'"), std::string::npos)
      << err();
}

TEST_F(ScriptTest, ExitStatuses) {
  EXPECT_EQ(Run("exit(3)\n"), 3);
  EXPECT_EQ(Run("let x = (\n"), 2);
  EXPECT_EQ(Run("assert(1 == 2, \"no\")\n"), 1);
  EXPECT_NE(err().find("assertion failed: no"), std::string::npos);
}

TEST_F(ScriptTest, DeepRecursionIsADiagnostic) {
  EXPECT_EQ(Run("def f(n) = f(n + 1)\nf(0)\n"), 1);
  EXPECT_NE(err().find("too many nested calls"), std::string::npos) << err();
}

}  // namespace
}  // namespace runnel::interp

namespace runnel::interp {
namespace {

// The state and graph-control builtins compute what they say; scan and map
// are not there yet and say so.
TEST_F(ScriptTest, StateAndControlBuiltinsGiveTheirValues) {
  EXPECT_EQ(Run(R"RNL(
var v = [1.0, 2.0, 3.0]
assert(allclose(run scatter_add(v, [0, 2], [10.0, 20.0]), [11.0, 2.0, 23.0]), "scatter_add")
assert(allclose(run scatter_sub(v, [2], [3.0]), [11.0, 2.0, 20.0]), "scatter_sub")
assert(allclose(run scatter_update(v, [1], [5.0]), [11.0, 5.0, 20.0]), "scatter_update")
assert(allclose(run check_numerics(v, "m"), [11.0, 5.0, 20.0]), "check_numerics")
assert(allclose(run grad(sum(v * stop_gradient(v)), v), [11.0, 5.0, 20.0]), "stop_gradient")
assert(allclose(run grad(sum(v), v), [1.0, 1.0, 1.0]), "d/dv sum(v)")
)RNL"),
            0)
      << err();
  // scan and map over a var run in the graph.
  EXPECT_EQ(Run(R"RNL(
var v = [1.0, -2.0]
assert(allclose(run map(relu, v), [1.0, 0.0]), "map")
assert(allclose(run scan(fn(s, x) => s + x, v, 0.0), [1.0, -1.0]), "scan")
)RNL"),
            0)
      << err();
}

// No builtin crashes on wrong arguments: each call either works or is a
// diagnostic (exit status 1), in run and in check mode.
TEST_F(ScriptTest, EveryBuiltinSurvivesBadArguments) {
  const std::vector<std::string> arg_lists = {
      "",     "1, 2, 3", "\"s\"", "[1.0, 2.0]", "none",        "x",
      "x, x", "[x, x]",  "f32",   "x = 1",      "(1, 2), [3]",
  };
  for (const std::string& name : Interpreter::BuiltinNames()) {
    if (name == "exit") continue;  // exits with its argument by design
    for (const std::string& args : arg_lists) {
      const std::string script =
          "input x: f32[?, 2]\nlet r = " + name + "(" + args + ")\n";
      for (bool check : {false, true}) {
        const int status = Run(script, check);
        EXPECT_TRUE(status == 0 || status == 1)
            << script << " gave exit status " << status << "\n"
            << err();
        if (status == 1) {
          EXPECT_NE(err().find("error: "), std::string::npos) << script;
        }
      }
    }
  }
}

// A function bound in the scope it closes over is a cycle of shared_ptrs:
// the interpreter must break it when it goes, or every script that defines
// a function leaks its scopes (and the builtins they reach).
TEST_F(ScriptTest, FreesFunctionsAndTheirScopes) {
  ASSERT_EQ(Run(R"(
def f(x) = x + 1
let g = fn(y) => y * 2
def outer() {
    def inner() = 1
    let also = fn() => inner()
    also
}
let h = outer()
let (a, b) = loop (a, b) = (0, none) for i in 0..3 { (a + 1, fn() => i) }
)"),
            0)
      << err();
  std::vector<std::weak_ptr<const Function>> functions;
  for (const char* name : {"f", "g", "h", "b", "print"}) {
    Binding* binding = interp_->globals().Find(name);
    ASSERT_NE(binding, nullptr) << name;
    functions.push_back(binding->value.function());
  }
  interp_.reset();
  for (const std::weak_ptr<const Function>& f : functions) {
    EXPECT_TRUE(f.expired());
  }
}

// Checkpoint keys users rely on (docs/checkpoints.md): an optimizer's slots
// are `<var>/<slot>`, whatever scopes the stdlib opens inside.
TEST_F(ScriptTest, OptimizerSlotsAreNamedAfterTheirVariable) {
  ASSERT_EQ(Run(R"(
import nn
import optim
input x: f32[?, 3]
let y = nn.dense(x, 2)
let loss = mean(square(y))
scope "train" {
    let a = optim.adam(loss)
    let m = optim.momentum(loss)
    let g = optim.adagrad(loss)
    let r = optim.rmsprop(loss)
    let second = optim.adam(loss)
}
var w = ones([2])
device "/cpu:0" { var d = ones([2]) }
let s = slot(d, "extra")
assert(s.name == "d/extra", "a slot is named <var>/<slot>")
)"),
            0)
      << err();
  std::vector<std::string> names;
  for (const Node* v : interp_->builder().variables())
    names.push_back(v->name());
  for (const char* want :
       {"dense/w/adam_m", "dense/w/adam_v", "dense/b/adam_m", "dense/b/adam_v",
        "dense/w/momentum", "dense/w/adagrad_accumulator",
        "dense/w/rmsprop_square_avg", "dense/w/adam_m_1", "dense/w/adam_v_1"}) {
    EXPECT_NE(std::find(names.begin(), names.end(), want), names.end()) << want;
  }
  EXPECT_EQ(node("d/extra")->requested_device(), "/device:cpu:0");
  EXPECT_EQ(node("dense/w/adam_m")->output_shape(0).ToString(), "[3,2]");
}

}  // namespace
}  // namespace runnel::interp
