#include "lang/lexer.h"

#include <algorithm>
#include <string_view>
#include <unordered_map>
#include <utility>

#include "base/strings.h"
#include "lang/fast_parser.h"

namespace runnel::lang {

using antlr4::Token;

bool IsValidUtf8(std::string_view text, size_t* bad_offset) {
  const auto* s = reinterpret_cast<const unsigned char*>(text.data());
  const size_t n = text.size();
  size_t i = 0;
  while (i < n) {
    const unsigned char c = s[i];
    int len;
    uint32_t cp;
    if (c < 0x80) {
      ++i;
      continue;
    } else if ((c & 0xE0) == 0xC0) {
      len = 2;
      cp = c & 0x1F;
    } else if ((c & 0xF0) == 0xE0) {
      len = 3;
      cp = c & 0x0F;
    } else if ((c & 0xF8) == 0xF0) {
      len = 4;
      cp = c & 0x07;
    } else {
      *bad_offset = i;
      return false;
    }
    if (i + len > n) {
      *bad_offset = i;
      return false;
    }
    for (int k = 1; k < len; ++k) {
      if ((s[i + k] & 0xC0) != 0x80) {
        *bad_offset = i;
        return false;
      }
      cp = (cp << 6) | (s[i + k] & 0x3F);
    }
    const bool overlong = (len == 2 && cp < 0x80) || (len == 3 && cp < 0x800) ||
                          (len == 4 && cp < 0x10000);
    if (overlong || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) {
      *bad_offset = i;
      return false;
    }
    i += len;
  }
  return true;
}

// ---------------------------------------------------------------------------
// SourcePositions

SourcePositions::SourcePositions(std::string path, std::string_view text)
    : path_(std::move(path)), file_(path_), text_(text) {
  byte_of_char_.reserve(text.size() + 1);
  line_starts_.push_back(0);
  for (size_t i = 0; i < text.size(); ++i) {
    const auto c = static_cast<unsigned char>(text[i]);
    if ((c & 0xC0) != 0x80) byte_of_char_.push_back(static_cast<uint32_t>(i));
    if (c == '\n') line_starts_.push_back(i + 1);
  }
  byte_of_char_.push_back(static_cast<uint32_t>(text.size()));
}

size_t SourcePositions::ByteOf(size_t char_index) const {
  if (char_index >= byte_of_char_.size()) return text_.size();
  return byte_of_char_[char_index];
}

void SourcePositions::LineCol(size_t byte, int* line, int* col) const {
  // Spans are asked for mostly in source order: try the last line first.
  auto on_line = [&](size_t i) {
    return i < line_starts_.size() && line_starts_[i] <= byte &&
           (i + 1 == line_starts_.size() || byte < line_starts_[i + 1]);
  };
  size_t index = last_line_;
  if (!on_line(index)) {
    auto it = std::upper_bound(line_starts_.begin(), line_starts_.end(), byte);
    index = static_cast<size_t>(it - line_starts_.begin()) - 1;
    last_line_ = index;
  }
  *line = static_cast<int>(index) + 1;
  *col = static_cast<int>(byte - line_starts_[index]) + 1;
}

size_t SourcePositions::StartByte(const Token* t) const {
  const size_t start = t->getStartIndex();
  if (start != INVALID_INDEX) return ByteOf(start);
  // A token conjured by error recovery: only its line and column are known.
  const size_t line = t->getLine();
  if (line == 0 || line > line_starts_.size()) return text_.size();
  size_t byte = line_starts_[line - 1];
  for (size_t k = 0; k < t->getCharPositionInLine() && byte < text_.size() &&
                     text_[byte] != '\n';
       ++k) {
    ++byte;
    while (byte < text_.size() &&
           (static_cast<unsigned char>(text_[byte]) & 0xC0) == 0x80) {
      ++byte;
    }
  }
  return byte;
}

size_t SourcePositions::EndByte(const Token* t) const {
  const size_t start = t->getStartIndex();
  const size_t stop = t->getStopIndex();
  if (start == INVALID_INDEX || stop == INVALID_INDEX || stop < start) {
    return StartByte(t);
  }
  return ByteOf(stop + 1) - 1;
}

SourceSpan SourcePositions::ByteSpan(size_t first, size_t last) const {
  SourceSpan span;
  span.file = file_;
  if (last < first) last = first;
  LineCol(first, &span.line, &span.col);
  LineCol(last, &span.end_line, &span.end_col);
  return span;
}

SourceSpan SourcePositions::Span(const Token* first, const Token* last) const {
  const size_t begin = StartByte(first);
  size_t end = begin;
  if (last != nullptr && last->getTokenIndex() != INVALID_INDEX &&
      first->getTokenIndex() != INVALID_INDEX &&
      last->getTokenIndex() >= first->getTokenIndex()) {
    end = std::max(begin, EndByte(last));
  } else if (last == first) {
    end = std::max(begin, EndByte(first));
  }
  return ByteSpan(begin, end);
}

SourceSpan SourcePositions::After(const Token* t) const {
  const size_t end = t->getType() == Token::EOF ? StartByte(t) : EndByte(t) + 1;
  return ByteSpan(end, end);
}

SourceSpan SourcePositions::CharSpan(size_t first, size_t last) const {
  const size_t begin = ByteOf(first);
  return ByteSpan(begin, std::max(begin, ByteOf(last + 1) - 1));
}

std::string_view SourcePositions::CharText(size_t first, size_t last) const {
  const size_t begin = ByteOf(first);
  const size_t end = ByteOf(last + 1);
  return text_.substr(begin, end > begin ? end - begin : 0);
}

// ---------------------------------------------------------------------------
// Lexer

namespace {

bool IsLineEnd(size_t c) { return c == '\n' || c == '\r' || c == Token::EOF; }

// How a bad character reads in a message: '$', or U+0007 for one that does
// not print.
std::string ShowChars(std::string_view text) {
  if (text.size() == 1) {
    const auto c = static_cast<unsigned char>(text[0]);
    if (c < 0x20 || c == 0x7F) return fmt::format("U+{:04X}", c);
  }
  return StrCat("'", text, "'");
}

// ANTLR 4.9's lexer simulator, with the work it did per character and per
// token cut down. The lexing itself, the DFA and the actions are ANTLR's:
// - The DFA's ASCII edges come from a DfaEdgeCache (lang/fast_parser.h).
// - accept() runs the token's actions as ANTLR's does, without a
//   std::function, a copied vector of shared_ptrs and a dynamic_cast per
//   token.
class FastLexerSimulator final : public antlr4::atn::LexerATNSimulator {
 public:
  FastLexerSimulator(antlr4::Lexer* lexer, SourceStream* source,
                     const antlr4::atn::ATN& atn,
                     std::vector<antlr4::dfa::DFA>& dfa,
                     antlr4::atn::PredictionContextCache& cache)
      : LexerATNSimulator(lexer, atn, dfa, cache), source_(source) {}

 protected:
  // ANTLR's loop over the DFA, with the characters read in place and the
  // edges from edges_: the runtime made several virtual calls per
  // character.
  size_t execATN(antlr4::CharStream* input,
                 antlr4::dfa::DFAState* s0) override {
    if (input != source_) return LexerATNSimulator::execATN(input, s0);
    const char32_t* chars = source_->chars();
    const size_t n = source_->length();
    size_t& p = source_->position();
    auto next = [&] { return p < n ? size_t{chars[p]} : antlr4::Token::EOF; };
    if (s0->isAcceptState) captureSimState(input, s0);
    antlr4::dfa::DFAState* s = s0;
    size_t t = next();
    for (;;) {
      antlr4::dfa::DFAState* target = getExistingTargetState(s, t);
      if (target == nullptr) target = computeTargetState(input, s, t);
      if (target == ERROR.get()) break;
      // Consume before capturing an accept state, so that the position,
      // line and column captured are the token's end (as ANTLR does).
      if (t != antlr4::Token::EOF) {
        if (t == '\n') {
          ++_line;
          _charPositionInLine = 0;
        } else {
          ++_charPositionInLine;
        }
        ++p;
      }
      if (target->isAcceptState) {
        captureSimState(input, target);
        if (t == antlr4::Token::EOF) break;
      }
      t = next();
      s = target;
    }
    return failOrAccept(input, s->configs.get(), t);
  }

  antlr4::dfa::DFAState* getExistingTargetState(antlr4::dfa::DFAState* s,
                                                size_t t) override {
    auto ask_antlr = [&] {
      return LexerATNSimulator::getExistingTargetState(s, t);
    };
    if (t > MAX_DFA_EDGE || s->stateNumber < 0) return ask_antlr();
    return edges_.Get(s, t, ask_antlr);
  }

  // Runs the token's actions as LexerActionExecutor::execute does: an
  // action that names an offset in the token runs with the input there, a
  // position-dependent one with the input at the token's end.
  void accept(antlr4::CharStream* input,
              const Ref<antlr4::atn::LexerActionExecutor>& executor,
              size_t /*start*/, size_t index, size_t line,
              size_t char_pos) override {
    input->seek(index);
    _line = line;
    _charPositionInLine = char_pos;
    if (executor == nullptr || _recog == nullptr) return;
    const size_t stop = input->index();
    for (const Step& step : StepsOf(executor)) {
      if (step.offset >= 0) {
        input->seek(_startIndex + static_cast<size_t>(step.offset));
      } else if (step.position_dependent) {
        input->seek(stop);
      }
      step.action->execute(_recog);
    }
    input->seek(stop);
  }

 private:
  struct Step {
    antlr4::atn::LexerAction* action;
    int offset;  // in the token, or -1
    bool position_dependent;
  };
  struct Steps {
    // Kept alive so that no other executor takes its address.
    Ref<antlr4::atn::LexerActionExecutor> executor;
    std::vector<Ref<antlr4::atn::LexerAction>> keep;
    std::vector<Step> steps;
  };

  const std::vector<Step>& StepsOf(
      const Ref<antlr4::atn::LexerActionExecutor>& executor) {
    auto [it, added] = steps_.try_emplace(executor.get());
    Steps& s = it->second;
    if (added) {
      s.executor = executor;
      s.keep = executor->getLexerActions();
      const size_t n = s.keep.size();
      for (size_t i = 0; i < n; ++i) {
        antlr4::atn::LexerAction* action = s.keep[i].get();
        if (auto* indexed =
                dynamic_cast<antlr4::atn::LexerIndexedCustomAction*>(action)) {
          s.keep.push_back(indexed->getAction());
          s.steps.push_back({s.keep.back().get(), indexed->getOffset(),
                             /*position_dependent=*/true});
        } else {
          s.steps.push_back({action, -1, action->isPositionDependent()});
        }
      }
    }
    return s.steps;
  }

  SourceStream* const source_;
  DfaEdgeCache edges_{MAX_DFA_EDGE + 1};
  // Executors met so far. Most live in ANTLR's DFA, which outlives the
  // lexer; the ATN simulation also makes short-lived ones.
  std::unordered_map<const antlr4::atn::LexerActionExecutor*, Steps> steps_;
};

}  // namespace

Lexer::Lexer(SourceStream* input, const SourcePositions* positions,
             std::vector<Diagnostic>* errors)
    : grammar::RunnelLexer(input), positions_(positions), errors_(errors) {
  static SharedDfa* const shared = new SharedDfa(getATN());
  delete _interpreter;
  simulator_ =
      new FastLexerSimulator(this, input, getATN(), shared->dfa, shared->cache);
  _interpreter = simulator_;
}

void Lexer::AddError(SourceSpan span, std::string message) {
  Diagnostic d;
  d.message = std::move(message);
  d.span = std::move(span);
  errors_->push_back(std::move(d));
}

std::unique_ptr<Token> Lexer::nextToken() {
  std::unique_ptr<Token> t = NextToken();
  switch (t->getType()) {
    case LPAREN:
    case LBRACK:
    case LBRACE:
      open_.push_back(t->getType());
      break;
    case RPAREN:
    case RBRACK:
    case RBRACE:
      if (!open_.empty()) open_.pop_back();  // as closeBracket() does
      break;
    case NEWLINE:
      if (t->getChannel() != Token::DEFAULT_CHANNEL && !open_.empty() &&
          open_.back() != LBRACE && last_type_ != DOT && bracketDepth <= 62 &&
          NextLineStartsStatement()) {
        while (!open_.empty() && open_.back() != LBRACE) {
          open_.pop_back();
          closeBracket();
        }
        static_cast<antlr4::CommonToken*>(t.get())->setChannel(
            Token::DEFAULT_CHANNEL);
      }
      break;
    default:
      break;
  }
  if (t->getChannel() == Token::DEFAULT_CHANNEL) last_type_ = t->getType();
  return t;
}

std::unique_ptr<Token> Lexer::NextToken() {
  // What antlr4::Lexer::nextToken does, without its three dynamic_casts
  // (getInterpreter) and a std::function per token: they were a fifth of
  // the lexer's time. (It also marks and releases the input, which
  // ANTLRInputStream ignores.) White space and comments make no token:
  // nothing reads them, and they were 40% of all tokens.
  bool at_token = true;  // not just after a character skipped as bad
  for (;;) {
    if (hitEOF) {
      emitEOF();
      return std::move(token);
    }
    if (at_token && _input->LA(1) == '"') {
      if (auto t = MalformedString()) return t;
    }
    token.reset();
    channel = Token::DEFAULT_CHANNEL;
    tokenStartCharIndex = _input->index();
    tokenStartCharPositionInLine = simulator_->getCharPositionInLine();
    tokenStartLine = simulator_->getLine();
    _text.clear();
    do {
      type = Token::INVALID_TYPE;
      size_t matched;
      try {
        matched = simulator_->match(_input, mode);
      } catch (antlr4::LexerNoViableAltException& e) {
        notifyListeners(e);
        recover(e);
        matched = SKIP;
      }
      if (_input->LA(1) == Token::EOF) hitEOF = true;
      if (type == Token::INVALID_TYPE) type = matched;
    } while (type == MORE);
    at_token = type != SKIP;
    if (type == SKIP || type == WS || type == COMMENT) continue;
    if (token == nullptr) {
      // As Lexer::emit() with the default token factory.
      auto t = std::make_unique<antlr4::CommonToken>(
          std::pair<antlr4::TokenSource*, antlr4::CharStream*>(this, _input),
          type, channel, tokenStartCharIndex, _input->index() - 1);
      t->setLine(tokenStartLine);
      t->setCharPositionInLine(tokenStartCharPositionInLine);
      if (!_text.empty()) t->setText(_text);
      token = std::move(t);
    }
    return std::move(token);
  }
}

size_t Lexer::getLine() const { return simulator_->getLine(); }

size_t Lexer::getCharPositionInLine() {
  return simulator_->getCharPositionInLine();
}

bool Lexer::NextLineStartsStatement() {
  ssize_t k = 1;
  auto at = [&](ssize_t i) { return _input->LA(i); };
  while (at(k) == ' ' || at(k) == '\t' || at(k) == '\f' || at(k) == '\r') ++k;
  std::string word;
  for (size_t c = at(k); (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
                         (c >= '0' && c <= '9') || c == '_';
       c = at(++k)) {
    word += static_cast<char>(c);
    if (word.size() > 8) return false;  // longer than any of the keywords
  }
  static constexpr std::string_view kStatementKeywords[] = {
      "let",    "var",   "state", "input",    "def",    "import",
      "return", "break", "scope", "continue", "device", "after"};
  bool keyword = false;
  for (std::string_view w : kStatementKeywords) keyword = keyword || w == word;
  if (!keyword) return false;
  while (at(k) == ' ' || at(k) == '\t') ++k;
  return at(k) != '=';  // `f(\n  scope = "enc")` names an argument
}

std::unique_ptr<Token> Lexer::MalformedString() {
  const size_t start = _input->index();
  // Offsets relative to the opening quote (LA(1) is the quote itself).
  size_t k = 2;
  bool terminated = false;
  size_t bad_escape = 0;  // offset of the first unknown escape's backslash
  for (;;) {
    const size_t c = _input->LA(static_cast<ssize_t>(k));
    if (IsLineEnd(c)) break;
    if (c == '"') {
      terminated = true;
      ++k;
      break;
    }
    if (c == '\\') {
      const size_t e = _input->LA(static_cast<ssize_t>(k + 1));
      if (e == 'n' || e == 't' || e == '\\' || e == '"') {
        k += 2;
        continue;
      }
      if (bad_escape == 0) bad_escape = k;
      k += IsLineEnd(e) ? 1 : 2;
      continue;
    }
    ++k;
  }
  if (terminated && bad_escape == 0) return nullptr;  // a good string

  const size_t length = k - 1;  // characters in the token
  // A backslash at the end of the line is part of the unterminated string.
  if (bad_escape != 0 &&
      !IsLineEnd(_input->LA(static_cast<ssize_t>(bad_escape + 1)))) {
    const size_t at = start + bad_escape - 1;
    AddError(
        positions_->CharSpan(at, at + 1),
        StrCat("unknown escape sequence '", positions_->CharText(at, at + 1),
               "' in string; the escapes are \\n \\t \\\\ \\\""));
  }
  if (!terminated) {
    SourceSpan span = positions_->CharSpan(start, start + length - 1);
    AddError(std::move(span),
             "unterminated string: a string must end with '\"' on the line "
             "where it starts");
  }

  // Emit the characters read as one STRING token.
  tokenStartCharIndex = start;
  tokenStartLine = getLine();
  tokenStartCharPositionInLine = getCharPositionInLine();
  auto* simulator = getInterpreter<antlr4::atn::LexerATNSimulator>();
  for (size_t i = 0; i < length; ++i) simulator->consume(_input);
  setType(STRING);
  setChannel(Token::DEFAULT_CHANNEL);
  setText("");
  emit();
  return std::move(token);
}

void Lexer::notifyListeners(const antlr4::LexerNoViableAltException& e) {
  const size_t at =
      const_cast<antlr4::LexerNoViableAltException&>(e).getStartIndex();
  const std::string_view ch = positions_->CharText(at, at);
  if (bad_run_index_ >= 0 && at == bad_run_last_ + 1 && ch != "!" &&
      static_cast<size_t>(bad_run_index_) == errors_->size() - 1) {
    // One error for a run of bad characters.
    bad_run_last_ = at;
    Diagnostic& d = (*errors_)[bad_run_index_];
    d.span = positions_->CharSpan(bad_run_first_, bad_run_last_);
    d.message = StrCat("unexpected characters ",
                       ShowChars(positions_->CharText(bad_run_first_, at)));
    return;
  }
  std::string message = StrCat("unexpected character ", ShowChars(ch));
  if (ch == "!") {
    message += "; write 'not' for negation and '!=' for 'not equal'";
  } else if (ch == "'") {
    message += "; strings are written in double quotes";
  } else if (static_cast<unsigned char>(ch[0]) >= 0x80) {
    // Name the code point too: it may look like an ASCII character.
    const auto* u = reinterpret_cast<const unsigned char*>(ch.data());
    uint32_t cp =
        ch.size() == 2 ? ((u[0] & 0x1F) << 6) | (u[1] & 0x3F)
        : ch.size() == 3
            ? ((u[0] & 0x0F) << 12) | ((u[1] & 0x3F) << 6) | (u[2] & 0x3F)
            : ((u[0] & 0x07) << 18) | ((u[1] & 0x3F) << 12) |
                  ((u[2] & 0x3F) << 6) | (u[3] & 0x3F);
    message += fmt::format(" (U+{:04X})", cp);
  }
  AddError(positions_->CharSpan(at, at), std::move(message));
  bad_run_first_ = bad_run_last_ = at;
  bad_run_index_ = ch == "!" ? -1 : static_cast<int>(errors_->size()) - 1;
}

void Lexer::recover(const antlr4::LexerNoViableAltException& e) {
  // Skip exactly the one bad character: ANTLR's default also drops the
  // characters it looked at past it (`!x` would lose the `x`).
  const size_t at =
      const_cast<antlr4::LexerNoViableAltException&>(e).getStartIndex();
  _input->seek(at);
  setLine(tokenStartLine);
  setCharPositionInLine(tokenStartCharPositionInLine);
  if (_input->LA(1) != Token::EOF) {
    getInterpreter<antlr4::atn::LexerATNSimulator>()->consume(_input);
  }
}

}  // namespace runnel::lang
