// The executor's loop shortcuts (common_runtime/loop_shortcuts.h): a
// constant the body makes again in every iteration is delivered as each
// iteration starts where its consumers die with the body anyway, a body
// identity no control edge hangs on is bypassed, neither runs (a traced
// run shows what ran), and the values are those of the loop as built.
#include "common_runtime/loop_shortcuts.h"

#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "base/strings.h"
#include "common_runtime/session.h"
#include "common_runtime/trace.h"
#include "tests/util/loops.h"
#include "tests/util/test_ops.h"
#include "tests/util/test_util.h"

namespace runnel {
namespace {

using ::runnel::testing::Add;
using ::runnel::testing::BuildLoop;
using ::runnel::testing::Const;
using ::runnel::testing::ExpectTensor;
using ::runnel::testing::I32;

// A constant made in the body, as GraphBuilder::Import makes one: it waits
// for the loop's pivot.
NodeOut Inside(Graph& g, WhileBuilder& wb, const std::string& name, int value) {
  NodeSpec spec;
  spec.name = name;
  spec.op = "const";
  spec.attrs = {{"value", I32({value}, {})}};
  spec.control_inputs = {wb.pivot()};
  absl::StatusOr<Node*> n = g.AddNode(std::move(spec));
  EXPECT_TRUE(n.ok()) << n.status();
  return {*n, 0};
}

// The shortcuts of g's nodes, every constant's value at hand.
LoopShortcuts Find(const Graph& g) {
  return FindLoopShortcuts(g.nodes(), [](const Node*) { return true; });
}

bool Holds(const absl::flat_hash_set<const Node*>& set, const Graph& g,
           const std::string& name) {
  return set.contains(g.FindNode(name));
}

// The body identities that `s` bypasses.
int Bypassed(const LoopShortcuts& s) {
  return static_cast<int>(s.bypassed.size());
}

// Whether a traced run of `fetches` ran `name` (the trace has each node that
// ran).
bool Ran(Session& s, const std::vector<NodeOut>& fetches,
         const std::string& name) {
  Tracer tracer;
  s.set_tracer(&tracer);
  auto out = s.Run(Session::Feeds{}, fetches, {});
  s.set_tracer(nullptr);
  EXPECT_TRUE(out.ok()) << out.status();
  return tracer.ToJson().find(StrCat("\"", name, "\"")) != std::string::npos;
}

// The body identities of g (what a loop's switch gives its body).
int BodyIdentities(const Graph& g) {
  int count = 0;
  for (const Node* n : g.nodes()) {
    if (n->op() == "identity" && n->num_inputs() == 1 &&
        n->input(0).node->op() == "switch" && n->input(0).index == 1) {
      ++count;
    }
  }
  return count;
}

TEST(LoopShortcutsTest, AConstantTheBodyMakesAgainIsDeliveredAndNeverRuns) {
  // loop v = 1 while i < n { v * 3 }
  for (int n : {0, 1, 6}) {
    auto g = std::make_shared<Graph>();
    auto exits = BuildLoop(
        *g, "loop", {Const(*g, I32({1}, {}))}, Const(*g, I32({n}, {})),
        [&](WhileBuilder& wb, NodeOut, std::vector<NodeOut> v) {
          NodeOut three = Inside(*g, wb, "three", 3);
          return std::vector<NodeOut>{
              {Add(*g, "times", "mul", {v[0], three}), 0}};
        });
    const LoopShortcuts found = Find(*g);
    EXPECT_TRUE(Holds(found.constants, *g, "three"));
    EXPECT_EQ(Bypassed(found), BodyIdentities(*g)) << "the counter's and v's";
    EXPECT_EQ(Bypassed(found), 2);
    Session s(g, {.num_threads = 2});
    if (n > 0) {
      EXPECT_TRUE(Ran(s, {exits[1]}, "times"));
      EXPECT_FALSE(Ran(s, {exits[1]}, "three"));
    }
    for (int run = 0; run < 2; ++run) {  // the executor is reused
      auto out = s.Run(Session::Feeds{}, {exits[0], exits[1]}, {});
      ASSERT_TRUE(out.ok()) << out.status();
      ExpectTensor((*out)[0], DType::kI32, {}, {double(n)});
      ExpectTensor((*out)[1], DType::kI32, {}, {std::pow(3.0, n)});
    }
  }
}

TEST(LoopShortcutsTest, AConstantStaysWhereItsConsumerWouldOutliveTheBody) {
  // loop (v, w) = (0, 0) while i < n { (2 + 3, 7) }: the sum reads only
  // constants and 7 goes straight to the next iteration. Delivered, they
  // would be live in the iteration that leaves the loop, and start
  // another.
  for (int n : {0, 1, 4}) {
    auto g = std::make_shared<Graph>();
    auto exits = BuildLoop(
        *g, "loop", {Const(*g, I32({0}, {})), Const(*g, I32({0}, {}))},
        Const(*g, I32({n}, {})),
        [&](WhileBuilder& wb, NodeOut, std::vector<NodeOut>) {
          NodeOut two = Inside(*g, wb, "two", 2);
          NodeOut three = Inside(*g, wb, "three", 3);
          return std::vector<NodeOut>{{Add(*g, "sum", "add", {two, three}), 0},
                                      Inside(*g, wb, "seven", 7)};
        });
    const LoopShortcuts found = Find(*g);
    EXPECT_TRUE(found.constants.empty());
    EXPECT_EQ(Bypassed(found), BodyIdentities(*g) - 1)
        << "all but the pivot the constants wait for";
    Session s(g, {.num_threads = 2});
    if (n > 0) {
      EXPECT_TRUE(Ran(s, {exits[1]}, "three"));
    }
    auto out = s.Run(Session::Feeds{}, {exits[0], exits[1], exits[2]}, {});
    ASSERT_TRUE(out.ok()) << out.status();
    ExpectTensor((*out)[0], DType::kI32, {}, {double(n)});
    ExpectTensor((*out)[1], DType::kI32, {}, {n > 0 ? 5.0 : 0.0});
    ExpectTensor((*out)[2], DType::kI32, {}, {n > 0 ? 7.0 : 0.0});
  }
}

TEST(LoopShortcutsTest, AConstantWithOneConsumerThatWouldOutliveItStays) {
  // loop (v, w) = (1, 0) while i < n { (v * 2, 2 + 0) }: one consumer of the
  // 2 dies with the body, the other would not.
  auto g = std::make_shared<Graph>();
  auto exits = BuildLoop(
      *g, "loop", {Const(*g, I32({1}, {})), Const(*g, I32({0}, {}))},
      Const(*g, I32({5}, {})),
      [&](WhileBuilder& wb, NodeOut, std::vector<NodeOut> v) {
        NodeOut two = Inside(*g, wb, "two", 2);
        NodeOut zero = Inside(*g, wb, "zero", 0);
        return std::vector<NodeOut>{{Add(*g, "twice", "mul", {v[0], two}), 0},
                                    {Add(*g, "plus", "add", {two, zero}), 0}};
      });
  const LoopShortcuts found = Find(*g);
  EXPECT_FALSE(Holds(found.constants, *g, "two"));
  EXPECT_FALSE(Holds(found.constants, *g, "zero"));
  Session s(g, {.num_threads = 2});
  auto out = s.Run(Session::Feeds{}, {exits[1], exits[2]}, {});
  ASSERT_TRUE(out.ok()) << out.status();
  ExpectTensor((*out)[0], DType::kI32, {}, {32});
  ExpectTensor((*out)[1], DType::kI32, {}, {2});
}

TEST(LoopShortcutsTest, ConstantsOfNestedLoopsAreDeliveredInTheirFrames) {
  // sum over i < 3 of (prod over j < i + 1 of 2) = 2 + 4 + 8: each loop's
  // constant is delivered to its own frame's iterations (the inner one's to
  // every iteration of every instance).
  auto g = std::make_shared<Graph>();
  NodeOut one = Const(*g, I32({1}, {}));
  auto exits = BuildLoop(
      *g, "outer", {Const(*g, I32({0}, {}))}, Const(*g, I32({3}, {})),
      [&](WhileBuilder& outer, NodeOut i, std::vector<NodeOut> v) {
        NodeOut bound = {
            Add(*g, "bound", "add", {i, *outer.EnterInvariant(one)}), 0};
        NodeOut start = {
            Add(*g, "start", "add", {i, Inside(*g, outer, "k", 1)}), 0};
        NodeOut first = {Add(*g, "first", "sub", {start, i}), 0};
        auto inner = BuildLoop(
            *g, "inner", {first}, bound,
            [&](WhileBuilder& wb, NodeOut, std::vector<NodeOut> t) {
              return std::vector<NodeOut>{
                  {Add(*g, "inner_twice", "mul",
                       {t[0], Inside(*g, wb, "inner_two", 2)}),
                   0}};
            },
            &outer);
        return std::vector<NodeOut>{
            {Add(*g, "outer_add", "add", {v[0], inner[1]}), 0}};
      });
  const LoopShortcuts found = Find(*g);
  EXPECT_TRUE(Holds(found.constants, *g, "k"));
  EXPECT_TRUE(Holds(found.constants, *g, "inner_two"));
  Session s(g, {.num_threads = 2});
  EXPECT_TRUE(Ran(s, {exits[1]}, "inner_twice"));
  EXPECT_FALSE(Ran(s, {exits[1]}, "inner_two"));
  auto out = s.Run(Session::Feeds{}, {exits[1]}, {});
  ASSERT_TRUE(out.ok()) << out.status();
  ExpectTensor((*out)[0], DType::kI32, {}, {14});
}

}  // namespace
}  // namespace runnel
