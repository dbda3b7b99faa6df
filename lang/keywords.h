// The keywords of the language (grammar/Runnel.g4; docs/language.md §2),
// for completion in the REPL and the language server.
#ifndef RUNNEL_LANG_KEYWORDS_H_
#define RUNNEL_LANG_KEYWORDS_H_

#include <array>
#include <string_view>

namespace runnel::lang {

inline constexpr std::array<std::string_view, 28> kKeywords = {
    "let",      "var",   "state",  "input", "def",   "fn",   "return",
    "import",   "as",    "device", "scope", "after", "if",   "else",
    "loop",     "while", "for",    "in",    "run",   "with", "break",
    "continue", "true",  "false",  "none",  "and",   "or",   "not"};

}  // namespace runnel::lang

#endif  // RUNNEL_LANG_KEYWORDS_H_
