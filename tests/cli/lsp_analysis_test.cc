// The language server's documents and analyses (cli/lsp): positions in
// UTF-16 and UTF-8, incremental edits and mapping offsets through them, and
// names resolved by the language's scoping, with the checker's types.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "cli/lsp/analysis.h"
#include "cli/lsp/document.h"

namespace runnel::lsp {
namespace {

TEST(LspDocumentTest, PositionsCountUtf16UnitsOrBytes) {
  // 'é' is 2 bytes and 1 UTF-16 unit; U+1D465 is 4 bytes and 2 units.
  const std::string text = "let \xC3\xA9 = 1\nlet \xF0\x9D\x91\xA5 = 2\n";
  Document utf16(text, /*utf8=*/false);
  EXPECT_EQ(utf16.num_lines(), 3);
  // '=' on line 2 is byte column 10 (1-based), UTF-16 character 7.
  Position p = utf16.At(2, 10);
  EXPECT_EQ(p.line, 1);
  EXPECT_EQ(p.character, 7);
  EXPECT_EQ(utf16.LineCol(p), std::make_pair(2, 10));
  EXPECT_EQ(utf16.Offset({.line = 0, .character = 6}), 7u);  // past 'é '
  Document utf8(text, /*utf8=*/true);
  EXPECT_EQ(utf8.At(2, 10).character, 9);
  EXPECT_EQ(utf8.LineCol({.line = 1, .character = 9}), std::make_pair(2, 10));
  // Past the end of a line: its end; past the last line: the text's end.
  EXPECT_EQ(utf16.Offset({.line = 0, .character = 99}), 10u);
  EXPECT_EQ(utf16.Offset({.line = 9, .character = 0}), text.size());
  EXPECT_EQ(utf16.LineColAt(11), std::make_pair(2, 1));
  EXPECT_EQ(utf16.OffsetOf(2, 1), 11u);
}

TEST(LspDocumentTest, EditsMapOffsetsBothWays) {
  Document doc("let a = 1\nlet b = a\n", /*utf8=*/false);
  // Insert a line at the top, then delete "= 1" (now on line 2).
  std::vector<Edit> edits;
  edits.push_back(doc.Replace({0, 0}, {0, 0}, "# top\n"));
  edits.push_back(doc.Replace({1, 6}, {1, 9}, ""));
  EXPECT_EQ(doc.text(), "# top\nlet a \nlet b = a\n");
  EXPECT_EQ(edits[0].start, 0u);
  EXPECT_EQ(edits[0].inserted, 6u);
  EXPECT_EQ(edits[1].start, 12u);
  EXPECT_EQ(edits[1].removed, 3u);
  // `b` was at offset 14, is at 17.
  EXPECT_EQ(MapForward(edits, 14), 17u);
  EXPECT_EQ(MapBack(edits, 17), 14u);
  // Text typed since has no place before; text removed none after.
  EXPECT_EQ(MapBack(edits, 2), std::nullopt);
  EXPECT_EQ(MapForward(edits, 7), std::nullopt);
  EXPECT_EQ(MapForward(edits, 4), 10u);  // 'a' of `let a`
}

// The symbol declared at `line`:`col` (1-based), and where it is used.
std::vector<std::pair<int, int>> UsesOf(const Analysis& a, int line, int col) {
  const int s = a.SymbolAt(line, col);
  std::vector<std::pair<int, int>> uses;
  for (const Reference& r : a.refs) {
    if (r.symbol == s) uses.emplace_back(r.span.line, r.span.col);
  }
  return uses;
}

TEST(LspAnalysisTest, NamesResolveAsTheLanguageScopesThem) {
  const std::string text =
      "input x: f32[?, 3]\n"     // 1
      "def f(x) = g(x) * 2.0\n"  // 2: x is f's; g is declared later
      "def g(y) = y + 1.0\n"     // 3
      "scope \"s\" {\n"          // 4
      "    let h = f(x)\n"       // 5: x is the input
      "}\n"                      // 6
      "let h2 = h\n"             // 7: h is visible after the scope
      "let h2 = h2 * 2.0\n";     // 8: shadows; its value reads line 7's
  std::unique_ptr<Analysis> a =
      Analyze("/tmp/lsp_scopes.rnl", text, AnalyzeOptions{});
  ASSERT_TRUE(a->syntax_ok);
  ASSERT_TRUE(a->checked);
  EXPECT_TRUE(a->diagnostics.empty()) << a->diagnostics[0].message;
  EXPECT_EQ(UsesOf(*a, 1, 7), (std::vector<std::pair<int, int>>{{5, 15}}));
  EXPECT_EQ(UsesOf(*a, 2, 7), (std::vector<std::pair<int, int>>{{2, 14}}));
  EXPECT_EQ(UsesOf(*a, 3, 5), (std::vector<std::pair<int, int>>{{2, 12}}));
  EXPECT_EQ(UsesOf(*a, 5, 9), (std::vector<std::pair<int, int>>{{7, 10}}));
  EXPECT_EQ(UsesOf(*a, 7, 5), (std::vector<std::pair<int, int>>{{8, 10}}));
  // The checker's types, on declarations and on expressions.
  const Symbol& h = a->symbols[a->SymbolAt(5, 9)];
  EXPECT_EQ(h.type, "f32[?, 3]");
  EXPECT_EQ(a->symbols[a->SymbolAt(1, 7)].type, "f32[?, 3]");
  const Typed* t = a->TypeAt(2, 12);  // `g(x)` inside f, as f was called
  ASSERT_NE(t, nullptr);
  EXPECT_EQ(t->type, "fn g(y)");
  // Names visible at the start of line 8: h2 (line 7), h, g, f, x, once each.
  std::vector<std::string> names;
  for (int s : a->VisibleAt(8, 1)) names.push_back(a->symbols[s].name);
  EXPECT_EQ(names, (std::vector<std::string>{"h2", "h", "g", "f", "x"}));
}

TEST(LspAnalysisTest, ASyntaxErrorKeepsTheOutlineAndNames) {
  const std::string text =
      "input x: f32[?, 3]\n"
      "let y = x +\n"
      "let z = x\n";
  std::unique_ptr<Analysis> a =
      Analyze("/tmp/lsp_broken.rnl", text, AnalyzeOptions{});
  EXPECT_FALSE(a->syntax_ok);
  EXPECT_FALSE(a->checked);
  ASSERT_FALSE(a->diagnostics.empty());
  EXPECT_EQ(a->diagnostics[0].span.line, 2);
  EXPECT_GE(a->SymbolAt(1, 7), 0);
  EXPECT_FALSE(UsesOf(*a, 1, 7).empty());
}

}  // namespace
}  // namespace runnel::lsp
