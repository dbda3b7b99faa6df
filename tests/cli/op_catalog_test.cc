// The op registry as the one source of facts about ops, and the catalogue
// built from it (`runnel ops --json`, `:help NAME`).
#include "cli/op_catalog.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <nlohmann/json.hpp>
#include <set>

#include "framework/op_registry.h"
#include "interpreter/builtins.h"

namespace runnel::cli {
namespace {

TEST(OpCatalog, EveryOpHasADoc) {
  for (const std::string& name : OpRegistry::Global().ListOps()) {
    EXPECT_FALSE(OpRegistry::Global().Find(name)->doc.empty())
        << "op '" << name << "' has no .Doc(...)";
  }
}

TEST(OpCatalog, DTypeGroupsNameInputs) {
  for (const std::string& name : OpRegistry::Global().ListOps()) {
    const OpDef& def = *OpRegistry::Global().Find(name);
    // The interpreter's literal promotion handles one group per op.
    EXPECT_LE(def.dtype_groups.size(), 1u) << name;
    for (const DTypeGroup& g : def.dtype_groups) {
      EXPECT_TRUE(g.all || g.inputs.size() >= 2) << name;
      for (int i : g.inputs) {
        EXPECT_GE(i, 0) << name;
        EXPECT_LT(i, static_cast<int>(def.inputs.size())) << name;
      }
    }
  }
  const OpDef& add = *OpRegistry::Global().Find("add");
  EXPECT_EQ(add.DTypeGroupsFor(2), (std::vector<std::vector<int>>{{0, 1}}));
  const OpDef& concat = *OpRegistry::Global().Find("concat");
  EXPECT_EQ(concat.DTypeGroupsFor(3),
            (std::vector<std::vector<int>>{{0, 1, 2}}));
  EXPECT_TRUE(OpRegistry::Global().Find("relu")->DTypeGroupsFor(1).empty());
}

// The interpreter merges const nodes (one per tensor) and variable reads
// (one per variable and device outside `after`): neither may be stateful.
// What has effects or draws new values is.
TEST(OpCatalog, StatefulOps) {
  const OpRegistry& r = OpRegistry::Global();
  for (const char* op : {"const", "read_variable", "add", "matmul"}) {
    EXPECT_FALSE(r.Find(op)->stateful) << op;
  }
  for (const char* op :
       {"random_normal", "random_uniform", "truncated_normal", "dropout",
        "variable", "assign", "assign_add", "assign_sub", "scatter_add",
        "scatter_sub", "scatter_update", "debug_print"}) {
    EXPECT_TRUE(r.Find(op)->stateful) << op;
  }
}

TEST(OpCatalog, BuiltinsApplyRegisteredOps) {
  std::set<std::string> names;
  for (const interp::Builtin& b : interp::Builtins()) {
    EXPECT_TRUE(names.insert(b.name).second) << b.name << " twice";
    for (const std::string& op : b.ops) {
      EXPECT_NE(OpRegistry::Global().Find(op), nullptr)
          << b.name << " applies unknown op " << op;
    }
  }
  ASSERT_GT(names.size(), 100u);
}

TEST(OpCatalog, JsonHasEveryOpAndBuiltin) {
  const nlohmann::json j = nlohmann::json::parse(OpsJson());
  ASSERT_EQ(j["ops"].size(), OpRegistry::Global().ListOps().size());
  ASSERT_EQ(j["builtins"].size(), interp::Builtins().size());
  const nlohmann::json* matmul = nullptr;
  for (const nlohmann::json& op : j["ops"]) {
    if (op["name"] == "matmul") matmul = &op;
  }
  ASSERT_NE(matmul, nullptr);
  EXPECT_EQ((*matmul)["inputs"], nlohmann::json({"a", "b"}));
  EXPECT_EQ((*matmul)["attrs"][0]["name"], "transpose_a");
  EXPECT_EQ((*matmul)["attrs"][0]["default"], "false");
  EXPECT_EQ((*matmul)["dtype_groups"], nlohmann::json::parse(R"([["a","b"]])"));
  EXPECT_EQ((*matmul)["gradient"], "yes");
  EXPECT_EQ((*matmul)["stateful"], false);
  // einsum builds matmuls too.
  EXPECT_EQ((*matmul)["builtins"], nlohmann::json({"einsum", "matmul"}));
  const auto& f32 = (*matmul)["cpu_kernel_dtypes"];
  EXPECT_NE(std::find(f32.begin(), f32.end(), "f32"), f32.end());
}

TEST(OpCatalog, HelpText) {
  std::optional<std::string> sum = HelpText("sum");
  ASSERT_TRUE(sum.has_value());
  EXPECT_NE(sum->find("sum(x, axis = none, keepdims = false)"),
            std::string::npos)
      << *sum;
  EXPECT_NE(sum->find("op sum(x; axis, keepdims = false)"), std::string::npos)
      << *sum;
  std::optional<std::string> zeros = HelpText("zeros");
  ASSERT_TRUE(zeros.has_value());
  EXPECT_NE(zeros->find("zeros(shape, dtype = f32)"), std::string::npos);
  EXPECT_NE(zeros->find("op fill("), std::string::npos) << *zeros;
  ASSERT_TRUE(HelpText("relu_grad").has_value());  // an op, no builtin
  EXPECT_FALSE(HelpText("no_such_name").has_value());
}

}  // namespace
}  // namespace runnel::cli
