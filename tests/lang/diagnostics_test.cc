// How diagnostics echo a source line: escapes, tabs, long lines, and the
// marks under them.
#include "lang/diagnostics.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>

namespace runnel::lang {
namespace {

using ::testing::HasSubstr;

// The display column (from 0) of the first `c` in `s`.
size_t ColumnOf(const std::string& s, char c) { return s.find(c); }

TEST(ExcerptTest, PlainLineIsEchoedWhole) {
  SourceExcerpt e = Excerpt("let y = h @ w2", 9, 14, 11);
  EXPECT_EQ(e.text, "let y = h @ w2");
  EXPECT_EQ(e.marks, "        ~~^~~~");
}

TEST(ExcerptTest, CaretPastTheEnd) {
  SourceExcerpt e = Excerpt("let y = (x +", 13, 13, 0);
  EXPECT_EQ(e.text, "let y = (x +");
  EXPECT_EQ(e.marks, "            ^");
}

TEST(ExcerptTest, ControlCharactersAreEscapedAndMarkedWhole) {
  using std::string_literals::operator""s;
  SourceExcerpt e = Excerpt("a \0 b"s, 3, 3, 0);
  EXPECT_EQ(e.text, "a <U+0000> b");
  EXPECT_EQ(e.marks, "  ^~~~~~~~");
  e = Excerpt("x\x1b[2J + \x7f y", 9, 9, 0);
  EXPECT_EQ(e.text, "x<U+001B>[2J + <U+007F> y");
  EXPECT_EQ(e.marks, "               ^~~~~~~~");
  // A bidirectional override would reorder the rest of the line.
  e = Excerpt("\"\xe2\x80\xae abc\" + $", 13, 13, 0);
  EXPECT_EQ(e.text, "\"<U+202E> abc\" + $");
  EXPECT_EQ(ColumnOf(e.marks, '^'), ColumnOf(e.text, '$'));
}

TEST(ExcerptTest, BytesThatAreNotUtf8AreEscaped) {
  SourceExcerpt e = Excerpt("\"caf\xe9\" $", 8, 8, 0);
  EXPECT_EQ(e.text, "\"caf<E9>\" $");
  EXPECT_EQ(ColumnOf(e.marks, '^'), ColumnOf(e.text, '$'));
  // A lead byte whose continuation is missing.
  e = Excerpt("\xc3 $", 3, 3, 0);
  EXPECT_EQ(e.text, "<C3> $");
  EXPECT_EQ(e.marks, "     ^");
}

TEST(ExcerptTest, Utf8CharactersTakeOneColumn) {
  // "é" is two bytes, one column: the caret goes under the '$' after it.
  SourceExcerpt e = Excerpt("let \xc3\xa9 = 1 $", 12, 12, 0);
  EXPECT_EQ(e.text, "let \xc3\xa9 = 1 $");
  EXPECT_EQ(e.marks, "          ^");
  // A span that covers it underlines it once.
  e = Excerpt("x + \xc3\xa9\xc3\xa9 + y", 5, 8, 0);
  EXPECT_EQ(e.marks, "    ^~");
}

TEST(ExcerptTest, TabsBecomeSpacesUpToTheNextTabStop) {
  SourceExcerpt e = Excerpt("\tx +\t$", 6, 6, 0);
  EXPECT_EQ(e.text, "        x +     $");
  EXPECT_EQ(e.marks, "                ^");
  // A tab inside the span is underlined across its width.
  e = Excerpt("ab\tcd", 1, 5, 0);
  EXPECT_EQ(e.text, "ab      cd");
  EXPECT_EQ(e.marks, "^~~~~~~~~~");
}

TEST(ExcerptTest, LongLineIsAWindowAroundTheCaret) {
  std::string line = std::string(50000, 'a') + " $ " + std::string(50000, 'b');
  SourceExcerpt e = Excerpt(line, 50002, 50002, 0);
  EXPECT_LE(e.text.size(), size_t{kMaxExcerptWidth});
  EXPECT_EQ(e.text.substr(0, 3), "...");
  EXPECT_EQ(e.text.substr(e.text.size() - 3), "...");
  EXPECT_THAT(e.text, HasSubstr("aaa $ bbb"));
  EXPECT_EQ(ColumnOf(e.marks, '^'), ColumnOf(e.text, '$'));
  EXPECT_EQ(e.marks.find_first_not_of(' '), ColumnOf(e.marks, '^'));
}

TEST(ExcerptTest, LongLineNearItsEnds) {
  std::string line = "$ " + std::string(1000, 'x') + " #";
  SourceExcerpt e = Excerpt(line, 1, 1, 0);
  EXPECT_EQ(e.text.substr(0, 3), "$ x");
  EXPECT_EQ(e.text.substr(e.text.size() - 3), "...");
  EXPECT_EQ(e.marks, "^");
  e = Excerpt(line, 1004, 1004, 0);
  EXPECT_EQ(e.text.substr(0, 3), "...");
  EXPECT_EQ(e.text.substr(e.text.size() - 3), "x #");
  EXPECT_EQ(ColumnOf(e.marks, '^'), ColumnOf(e.text, '#'));
  EXPECT_LE(e.text.size(), size_t{kMaxExcerptWidth});
  // One past the end, where something is missing.
  e = Excerpt(line, 1005, 1005, 0);
  EXPECT_EQ(e.marks.size(), e.text.size() + 1);
  EXPECT_EQ(e.marks.back(), '^');
}

TEST(ExcerptTest, LongSpanIsCutWithTheLine) {
  std::string line = "let a = " + std::string(1000, 'x') + " @ y";
  SourceExcerpt e = Excerpt(line, 9, static_cast<int>(line.size()), 1010);
  EXPECT_LE(e.text.size(), size_t{kMaxExcerptWidth});
  EXPECT_EQ(ColumnOf(e.marks, '^'), ColumnOf(e.text, '@'));
  EXPECT_EQ(e.marks.find_first_not_of(' '), 3u);  // after the "..."
  EXPECT_EQ(e.marks.size(), e.text.size());
}

TEST(ExcerptTest, ColumnsOutOfRangeAreClamped) {
  SourceExcerpt e = Excerpt("abc", 2, 1000000, 1000000000);
  EXPECT_EQ(e.text, "abc");
  EXPECT_EQ(e.marks, " ~~^");
  e = Excerpt("abc", -5, -7, -1);
  EXPECT_EQ(e.marks, "^");
}

TEST(EscapeControlsTest, KeepsNewlinesAndTabsEscapesTheRest) {
  using std::string_literals::operator""s;
  EXPECT_EQ(EscapeControls("a\nb\tc"), "a\nb\tc");
  EXPECT_EQ(EscapeControls("x\0y\x1b\x7f"s), "x<U+0000>y<U+001B><U+007F>");
  EXPECT_EQ(EscapeControls("caf\xc3\xa9 caf\xe9"), "caf\xc3\xa9 caf<E9>");
}

TEST(DiagnosticSinkTest, ReportWritesPastANulByte) {
  using std::string_literals::operator""s;
  auto file = std::make_shared<SourceFile>("nul.rnl", "let a = \0 + 1\n"s);
  char* buffer = nullptr;
  size_t size = 0;
  std::FILE* out = open_memstream(&buffer, &size);
  DiagnosticSink sink(out);
  sink.AddSource(file);
  Diagnostic d;
  d.message = "unexpected character \0"s;
  d.span.file = "nul.rnl";
  d.span.line = d.span.end_line = 1;
  d.span.col = d.span.end_col = 9;
  sink.Report(d);
  std::fclose(out);
  EXPECT_EQ(std::string(buffer, size),
            "nul.rnl:1:9: error: unexpected character <U+0000>\n"
            "    1 | let a = <U+0000> + 1\n"
            "      |         ^~~~~~~~\n");
  std::free(buffer);
}

}  // namespace
}  // namespace runnel::lang
