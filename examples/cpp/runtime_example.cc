// The runtime's usage example: build a graph with the C++ API alone, run it
// in a session with a feed, update a variable, and evaluate an op eagerly.
// Exits 0 when every printed value is the expected one (ctest runs it).
#include <cstdio>

#include "common_runtime/eager.h"
#include "common_runtime/session.h"

using runnel::AttrMap;
using runnel::DType;
using runnel::Graph;
using runnel::Node;
using runnel::NodeOut;
using runnel::NodeSpec;
using runnel::Session;
using runnel::Shape;
using runnel::Tensor;

namespace {

int failures = 0;

void Check(const char* what, const Tensor& t, std::vector<double> expected) {
  bool ok = t.ToDoubles() == expected;
  std::printf("%-28s %s %s\n", what, t.DebugString().c_str(),
              ok ? "" : "  <-- WRONG");
  failures += !ok;
}

Node* Add(Graph& g, NodeSpec spec) {
  absl::StatusOr<Node*> n = g.AddNode(std::move(spec));
  if (!n.ok()) {
    std::fprintf(stderr, "%s\n", n.status().ToString().c_str());
    std::exit(1);
  }
  return *n;
}

}  // namespace

int main() {
  auto g = std::make_shared<Graph>();
  // y = relu(x @ w + b), with w a variable initialised from a constant.
  Node* x =
      Add(*g, {.name = "x",
               .op = "placeholder",
               .attrs = {{"dtype", DType::kF32}, {"shape", Shape{-1, 2}}}});
  Node* w0 = *g->AddConst(
      Tensor::FromVector<float>({1, -1, 2, 0.5}, Shape{2, 2}), "w0");
  Node* w = Add(*g, {.name = "w",
                     .op = "variable",
                     .attrs = {{"dtype", DType::kF32},
                               {"shape", Shape{2, 2}},
                               {"initializer", std::string("w0:0")}}});
  Node* b = *g->AddConst(Tensor::FromVector<float>({0.5, -4}), "b");
  Node* xw =
      Add(*g, {.name = "xw", .op = "matmul", .inputs = {{x, 0}, {w, 0}}});
  Node* sum =
      Add(*g, {.name = "sum", .op = "add", .inputs = {{xw, 0}, {b, 0}}});
  Node* y = Add(*g, {.name = "y", .op = "relu", .inputs = {{sum, 0}}});
  // w += w0 (an assignment op; it runs only when asked for).
  Node* grow = Add(
      *g, {.name = "grow", .op = "assign_add", .inputs = {{w, 0}, {w0, 0}}});

  Session session(g, {.num_threads = 2, .seed = 0});
  Tensor batch = Tensor::FromVector<float>({1, 2, 3, 4}, Shape{2, 2});
  auto out = session.Run({{NodeOut{x, 0}, batch}}, {NodeOut{y, 0}}, {});
  if (!out.ok()) {
    std::fprintf(stderr, "%s\n", out.status().ToString().c_str());
    return 1;
  }
  // [[1,2],[3,4]] @ [[1,-1],[2,0.5]] = [[5,0],[11,-1]]; + b; relu.
  Check("relu(x @ w + b)", (*out)[0], {5.5, 0, 11.5, 0});

  if (!session.Run(Session::Feeds{}, {}, {grow}).ok()) return 1;
  out = session.Run({{NodeOut{x, 0}, batch}}, {NodeOut{y, 0}}, {});
  Check("after w += w0", (*out)[0], {10.5, 0, 22.5, 0});

  // The same kernels, eagerly.
  runnel::EagerContext eager({.num_threads = 2});
  auto e =
      eager.Execute1("matmul", {batch, batch}, AttrMap{{"transpose_b", true}});
  if (!e.ok()) return 1;
  Check("eager x @ x^T", *e, {5, 11, 11, 25});

  // A user mistake is a Status, not a crash.
  auto bad =
      g->AddNode({.name = "bad", .op = "matmul", .inputs = {{x, 0}, {b, 0}}});
  std::printf("%-28s %s\n", "shape error", bad.status().ToString().c_str());
  failures += bad.ok();
  return failures == 0 ? 0 : 1;
}
