// interpreter/builtins.list is the single list of builtin names: the
// interpreter's table must have exactly those names.
#include <gtest/gtest.h>

#include <algorithm>
#include <set>

#include "interpreter/interpreter.h"
#include "runtime/op_registry.h"

namespace runnel::interp {
namespace {

TEST(BuiltinsList, EveryListedNameIsABuiltin) {
  const std::vector<std::string> table = Interpreter::BuiltinNames();
  const std::set<std::string> have(table.begin(), table.end());
  const std::vector<std::string> listed = Interpreter::BuiltinsListNames();
  ASSERT_GT(listed.size(), 100u);
  for (const std::string& name : listed) {
    EXPECT_TRUE(have.count(name)) << name << " is in builtins.list but not "
                                  << "a builtin of the interpreter";
  }
}

TEST(BuiltinsList, EveryBuiltinIsListed) {
  const std::vector<std::string> listed = Interpreter::BuiltinsListNames();
  const std::set<std::string> names(listed.begin(), listed.end());
  for (const std::string& name : Interpreter::BuiltinNames()) {
    EXPECT_TRUE(names.count(name)) << name << " is a builtin but is missing "
                                   << "from interpreter/builtins.list";
  }
}

TEST(BuiltinsList, NoDuplicates) {
  std::vector<std::string> table = Interpreter::BuiltinNames();
  std::sort(table.begin(), table.end());
  EXPECT_EQ(std::adjacent_find(table.begin(), table.end()), table.end());
  std::vector<std::string> listed = Interpreter::BuiltinsListNames();
  std::sort(listed.begin(), listed.end());
  EXPECT_EQ(std::adjacent_find(listed.begin(), listed.end()), listed.end());
}

}  // namespace
}  // namespace runnel::interp
