// The lexer: tokens and their spans, lexical errors in plain words with
// recovery, line continuation inside brackets, and UTF-8 checking.
#include "lang/lexer.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace runnel::lang {
namespace {

using grammar::RunnelLexer;

struct Lexed {
  std::vector<std::string> tokens;  // "TYPE:text" of default-channel tokens
  std::vector<std::string> spans;   // their spans, "line:col-end_col"
  std::vector<std::string> errors;  // "line:col: message"
};

std::string TypeName(const antlr4::Lexer& lexer, size_t type) {
  return lexer.getVocabulary().getSymbolicName(type);
}

Lexed Lex(const std::string& text) {
  SourcePositions positions("t.rnl", text);
  std::vector<Diagnostic> errors;
  SourceStream input(text);
  Lexer lexer(&input, &positions, &errors);
  lexer.removeErrorListeners();
  Lexed out;
  for (;;) {
    std::unique_ptr<antlr4::Token> t = lexer.nextToken();
    if (t->getType() == antlr4::Token::EOF) break;
    if (t->getChannel() != antlr4::Token::DEFAULT_CHANNEL) continue;
    const std::string shown =
        t->getType() == RunnelLexer::NEWLINE ? "\\n" : t->getText();
    out.tokens.push_back(TypeName(lexer, t->getType()) + ":" + shown);
    const SourceSpan s = positions.Span(t.get());
    out.spans.push_back(std::to_string(s.line) + ":" + std::to_string(s.col) +
                        "-" + std::to_string(s.end_col));
  }
  for (const Diagnostic& d : errors) {
    out.errors.push_back(std::to_string(d.span.line) + ":" +
                         std::to_string(d.span.col) + ": " + d.message);
  }
  return out;
}

using Strings = std::vector<std::string>;

TEST(LexerTest, KeywordsNamesNumbersAndOperators) {
  Lexed l = Lex("let x2 = 1_000 + 2.5e-3 ** y // 4\n");
  EXPECT_EQ(l.tokens, (Strings{"LET:let", "ID:x2", "ASSIGN:=", "INT:1_000",
                               "PLUS:+", "FLOAT:2.5e-3", "POW:**", "ID:y",
                               "DSLASH://", "INT:4", "NEWLINE:\\n"}));
  EXPECT_TRUE(l.errors.empty());
  EXPECT_EQ(l.spans[0], "1:1-3");
  EXPECT_EQ(l.spans[3], "1:10-14");
}

TEST(LexerTest, CommentsAndSpacesAreHidden) {
  Lexed l = Lex("a   # a comment\n\tb\n");
  EXPECT_EQ(l.tokens, (Strings{"ID:a", "NEWLINE:\\n", "ID:b", "NEWLINE:\\n"}));
  EXPECT_EQ(l.spans[2], "2:2-2");
}

TEST(LexerTest, StringsKeepTheirEscapes) {
  Lexed l = Lex(R"(print("a\tb\"c"))");
  EXPECT_EQ(l.tokens, (Strings{"ID:print", "LPAREN:(", R"(STRING:"a\tb\"c")",
                               "RPAREN:)"}));
  EXPECT_TRUE(l.errors.empty());
}

TEST(LexerTest, ALineBreakInsideBracketsContinuesTheLine) {
  Lexed l = Lex("f(1,\n  2)\n");
  EXPECT_EQ(l.tokens, (Strings{"ID:f", "LPAREN:(", "INT:1", "COMMA:,", "INT:2",
                               "RPAREN:)", "NEWLINE:\\n"}));
}

TEST(LexerTest, AnUnclosedBracketStopsAtTheNextStatement) {
  // The newline before `let` comes back on the default channel: the
  // parser reports the unclosed bracket there, and `let y = 2` parses.
  Lexed l = Lex("let x = f(1\nlet y = 2\n");
  EXPECT_EQ(l.tokens, (Strings{"LET:let", "ID:x", "ASSIGN:=", "ID:f",
                               "LPAREN:(", "INT:1", "NEWLINE:\\n", "LET:let",
                               "ID:y", "ASSIGN:=", "INT:2", "NEWLINE:\\n"}));
}

TEST(LexerTest, LexicalErrorsInPlainWordsAndRecovery) {
  Lexed l = Lex("let a = 1 $ 2\nlet s = \"open\n");
  ASSERT_EQ(l.errors.size(), 2u) << ::testing::PrintToString(l.errors);
  EXPECT_EQ(l.errors[0], "1:11: unexpected character '$'");
  EXPECT_EQ(l.errors[1],
            "2:9: unterminated string: a string must end with '\"' on the "
            "line where it starts");
  // The bad character is skipped; the malformed string is still a STRING.
  EXPECT_EQ(l.tokens[4], "INT:2");
  EXPECT_EQ(l.tokens[9], "STRING:\"open");
}

TEST(LexerTest, Utf8IsChecked) {
  size_t bad = 99;
  EXPECT_TRUE(IsValidUtf8("caf\xc3\xa9 \xe2\x86\x92", &bad));
  EXPECT_FALSE(IsValidUtf8("ab\xff", &bad));
  EXPECT_EQ(bad, 2u);
  EXPECT_FALSE(IsValidUtf8("x\xc3", &bad));  // cut in the middle
  EXPECT_EQ(bad, 1u);
}

TEST(LexerTest, SpansCountBytesNotCodePoints) {
  // "é" is two bytes: the name after it starts at byte column 8.
  Lexed l = Lex("s = \"\xc3\xa9\" + t\n");
  ASSERT_EQ(l.tokens.size(), 6u);
  EXPECT_EQ(l.spans[2], "1:5-8");
  EXPECT_EQ(l.spans[4], "1:12-12");
}

}  // namespace
}  // namespace runnel::lang
