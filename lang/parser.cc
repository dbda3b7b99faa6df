#include "lang/parser.h"

#include <algorithm>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <utility>

#include "antlr4-runtime.h"
#include "base/strings.h"
#include "grammar/RunnelParser.h"
#include "lang/ast_builder.h"
#include "lang/fast_parser.h"
#include "lang/lexer.h"
#include "lang/syntax_errors.h"

namespace runnel::lang {
namespace {

using antlr4::Token;
using L = grammar::RunnelLexer;

// Far more nesting than any script needs; deeper would risk the stack of the
// recursive-descent parser.
constexpr int kMaxNesting = 100;
constexpr int kMaxPrefixRun = 1000;

// A UTF-8 byte order mark becomes three spaces: same bytes, same spans.
std::string WithoutByteOrderMark(std::string text) {
  if (text.rfind("\xEF\xBB\xBF", 0) == 0) text.replace(0, 3, "   ");
  return text;
}

Diagnostic Error(SourceSpan span, std::string message) {
  Diagnostic d;
  d.span = std::move(span);
  d.message = std::move(message);
  return d;
}

// From this size on, the lexer runs on a thread of its own, ahead of the
// parser: ANTLR 4.9's generated lexer takes a lock for every character, and
// lexing a large file took as long as parsing it.
constexpr size_t kThreadedLexBytes = 32 * 1024;
constexpr size_t kBatchTokens = 1024;

// The token source the parser reads: the lexer's tokens, in batches handed
// over from the lexer's thread, or lexed on demand for a small text. It also
// refuses absurd nesting: each open bracket and each prefix operator costs
// the recursive-descent parser stack, so at the first token too deep the
// parser gets the end of the input instead, and TooDeep() the error.
class LexerThread : public antlr4::TokenSource {
 public:
  LexerThread(Lexer* lexer, const SourcePositions* positions, bool threaded)
      : lexer_(lexer), positions_(positions), threaded_(threaded) {
    if (threaded_) thread_ = std::thread([this] { Run(); });
  }
  ~LexerThread() override { Finish(); }

  // Stops the lexer's thread, if any, once the parser needs no more tokens.
  void Finish() {
    if (!thread_.joinable()) return;
    {
      std::lock_guard<std::mutex> lock(mu_);
      cancelled_ = true;
    }
    thread_.join();
  }
  std::optional<Diagnostic> TooDeep() const { return too_deep_; }
  bool too_deep() const { return too_deep_.has_value(); }

  std::unique_ptr<Token> nextToken() override {
    if (!threaded_) return Lex();
    if (next_ == batch_.size()) {
      std::unique_lock<std::mutex> lock(mu_);
      ready_.wait(lock, [this] { return !batches_.empty(); });
      batch_ = std::move(batches_.front());
      batches_.pop_front();
      next_ = 0;
    }
    return std::move(batch_[next_++]);
  }
  size_t getLine() const override { return 0; }
  size_t getCharPositionInLine() override { return 0; }
  antlr4::CharStream* getInputStream() override {
    return lexer_->getInputStream();
  }
  std::string getSourceName() override { return lexer_->getSourceName(); }
  antlr4::TokenFactory<antlr4::CommonToken>* getTokenFactory() override {
    return lexer_->getTokenFactory();
  }

 private:
  // The next token, or the end of the input where nesting got too deep.
  std::unique_ptr<Token> Lex() {
    if (end_ == nullptr) {
      std::unique_ptr<Token> t = lexer_->nextToken();
      if (t->getType() == Token::EOF || Check(*t)) return t;
      // An end of input where the offending token starts.
      end_ = lexer_->getTokenFactory()->create(
          {lexer_, lexer_->getInputStream()}, Token::EOF, "<EOF>",
          Token::DEFAULT_CHANNEL, t->getStartIndex(), t->getStartIndex() - 1,
          t->getLine(), t->getCharPositionInLine());
    }
    return std::make_unique<antlr4::CommonToken>(end_.get());
  }

  // Whether the parser may have `t`; when not, sets too_deep_.
  bool Check(const Token& t) {
    if (t.getChannel() != Token::DEFAULT_CHANNEL) return true;
    const size_t type = t.getType();
    prefix_run_ = type == L::MINUS || type == L::NOT ? prefix_run_ + 1 : 0;
    std::string message;
    if (type == L::LPAREN || type == L::LBRACK || type == L::LBRACE) {
      if (++depth_ > kMaxNesting) {
        message = StrCat("brackets nested more than ", kMaxNesting,
                         " deep; split the expression up");
      }
    } else if (type == L::RPAREN || type == L::RBRACK || type == L::RBRACE) {
      depth_ = std::max(0, depth_ - 1);
    } else if (prefix_run_ > kMaxPrefixRun) {
      message = StrCat("more than ", kMaxPrefixRun,
                       " '-' and 'not' operators in a row");
    }
    if (message.empty()) return true;
    too_deep_ = Error(positions_->Span(&t), std::move(message));
    return false;
  }

  // The lexer's thread: lexes to the end (or until cancelled), handing
  // tokens over a batch at a time.
  void Run() {
    bool done = false;
    while (!done) {
      std::vector<std::unique_ptr<Token>> batch;
      batch.reserve(kBatchTokens);
      while (!done && batch.size() < kBatchTokens) {
        batch.push_back(Lex());
        done = batch.back()->getType() == Token::EOF;
      }
      std::lock_guard<std::mutex> lock(mu_);
      if (cancelled_) return;
      batches_.push_back(std::move(batch));
      ready_.notify_one();
    }
  }

  Lexer* lexer_;
  const SourcePositions* positions_;
  int depth_ = 0;
  int prefix_run_ = 0;
  std::optional<Diagnostic> too_deep_;
  std::unique_ptr<antlr4::CommonToken> end_;  // once too deep

  const bool threaded_;
  std::thread thread_;
  std::mutex mu_;
  std::condition_variable ready_;
  std::deque<std::vector<std::unique_ptr<Token>>> batches_;  // guarded by mu_
  bool cancelled_ = false;                                   // guarded by mu_
  // The parser's side: the batch it reads from.
  std::vector<std::unique_ptr<Token>> batch_;
  size_t next_ = 0;
};

// Builds each top-level statement as soon as the parser has it, and hands it
// out, while no error is known. Runs on the parser's thread, as does the
// lexer when statements are handed out.
class StatementStream {
 public:
  StatementStream(const SourcePositions* positions, const LexerThread* lexing,
                  const std::vector<Diagnostic>* lex_errors,
                  const std::vector<Diagnostic>* parse_errors,
                  const StatementCallback* callback, std::string file)
      : lexing_(lexing),
        lex_errors_(lex_errors),
        parse_errors_(parse_errors),
        callback_(callback),
        builder_(positions, &build_errors_),
        program_(std::make_unique<Program>()) {
    program_->file = std::move(file);
  }

  // Whether every statement of the script was handed out: no error (errors
  // are only ever added, so once one is known none is handed out after it).
  bool complete() const { return !Failed(); }
  std::unique_ptr<Program> TakeProgram() { return std::move(program_); }

  void Add(grammar::RunnelParser::StatementContext* ctx) {
    if (Failed()) return;
    const int imports = builder_.imports();
    StmtPtr stmt = builder_.BuildStatement(ctx);
    if (Failed() || stmt == nullptr) return;
    const Stmt& handed = *stmt;
    program_->stmts.push_back(std::move(stmt));
    (*callback_)(handed, builder_.imports() != imports);
  }

 private:
  bool Failed() const {
    return !lex_errors_->empty() || !parse_errors_->empty() ||
           !build_errors_.empty() || lexing_->too_deep();
  }

  const LexerThread* lexing_;
  const std::vector<Diagnostic>* lex_errors_;
  const std::vector<Diagnostic>* parse_errors_;
  const StatementCallback* callback_;
  // The builder's own errors: when there are any, or any other, the result
  // is rebuilt without streaming, which reports them again.
  std::vector<Diagnostic> build_errors_;
  AstBuilder builder_;
  std::unique_ptr<Program> program_;
};

ParseResult ParseImpl(const SourceFile& file,
                      const StatementCallback* on_statement);

}  // namespace

// What the AST was built from: the generated parser, its tree and tokens;
// and the statements handed out of a parse that failed.
struct ParseTree {
  explicit ParseTree(const std::string& text) : input(text) {}
  SourceStream input;
  std::unique_ptr<Lexer> lexer;
  std::unique_ptr<LexerThread> lexing;
  std::unique_ptr<FastTokenStream> tokens;
  std::unique_ptr<FastParser> parser;
  std::unique_ptr<StatementStream> stream;
  std::unique_ptr<Program> streamed;
};

ParseResult Parse(const SourceFile& file) { return ParseImpl(file, nullptr); }

ParseResult Parse(const SourceFile& file,
                  const StatementCallback& on_statement) {
  return ParseImpl(file, &on_statement);
}

namespace {

// The result of a parse that stopped at `error`: an empty program.
ParseResult Failure(const SourceFile& file, Diagnostic error) {
  ParseResult result;
  result.program = std::make_unique<Program>();
  result.program->file = file.path();
  result.errors.push_back(std::move(error));
  return result;
}

ParseResult ParseImpl(const SourceFile& file,
                      const StatementCallback* on_statement) {
  ParseResult result;
  const std::string text = WithoutByteOrderMark(file.text());
  SourcePositions positions(file.path(), text);
  size_t bad = 0;
  if (!IsValidUtf8(text, &bad)) {
    return Failure(
        file, Error(positions.ByteSpan(bad, bad),
                    fmt::format("invalid UTF-8 (byte 0x{:02X}): scripts must "
                                "be UTF-8 text",
                                static_cast<unsigned char>(text[bad]))));
  }

  // The lexer may run on a thread of its own, with its own positions (they
  // cache the line found last) and its own error list. A caller that takes
  // statements as they come keeps the other core busy: then it does not.
  const bool threaded =
      on_statement == nullptr && text.size() >= kThreadedLexBytes;
  std::optional<SourcePositions> own_positions;
  if (threaded) own_positions.emplace(file.path(), text);
  const SourcePositions* lexer_positions =
      threaded ? &*own_positions : &positions;
  std::vector<Diagnostic> lex_errors;
  std::vector<Diagnostic> parse_errors;
  auto tree = std::make_shared<ParseTree>(text);
  tree->lexer =
      std::make_unique<Lexer>(&tree->input, lexer_positions, &lex_errors);
  tree->lexer->removeErrorListeners();
  tree->lexing = std::make_unique<LexerThread>(tree->lexer.get(),
                                               lexer_positions, threaded);
  tree->tokens = std::make_unique<FastTokenStream>(tree->lexing.get());
  tree->parser = std::make_unique<FastParser>(tree->tokens.get());
  FastParser& parser = *tree->parser;
  parser.removeErrorListeners();
  parser.setErrorHandler(
      std::make_shared<SyntaxErrorStrategy>(&positions, &parse_errors));
  if (on_statement != nullptr) {
    tree->stream = std::make_unique<StatementStream>(
        &positions, tree->lexing.get(), &lex_errors, &parse_errors,
        on_statement, file.path());
    parser.OnTopLevelStatement(
        [stream = tree->stream.get()](
            grammar::RunnelParser::StatementContext* s) { stream->Add(s); });
  }
  grammar::RunnelParser::ProgramContext* program = parser.program();
  if (tree->stream != nullptr) parser.FinishStatements();
  // The parser has read to the end, or stopped early after an error: either
  // way the lexer is done with the text, the positions and the error list.
  tree->lexing->Finish();
  if (std::optional<Diagnostic> too_deep = tree->lexing->TooDeep()) {
    result = Failure(file, *std::move(too_deep));
    result.parse_tree = std::move(tree);
    return result;
  }
  if (tree->stream != nullptr && tree->stream->complete()) {
    result.program = tree->stream->TakeProgram();
  } else {
    if (tree->stream != nullptr) tree->streamed = tree->stream->TakeProgram();
    AstBuilder builder(&positions, &parse_errors);
    result.program = builder.Build(program);
  }
  result.parse_tree = std::move(tree);

  // A lexical error usually garbles the rest of its line for the parser:
  // report the lexical error alone there.
  std::set<int> lex_error_lines;
  for (Diagnostic& d : lex_errors) {
    lex_error_lines.insert(d.span.line);
    result.errors.push_back(std::move(d));
  }
  for (Diagnostic& d : parse_errors) {
    if (!lex_error_lines.contains(d.span.line)) {
      result.errors.push_back(std::move(d));
    }
  }
  std::stable_sort(result.errors.begin(), result.errors.end(),
                   [](const Diagnostic& a, const Diagnostic& b) {
                     return std::pair(a.span.line, a.span.col) <
                            std::pair(b.span.line, b.span.col);
                   });
  return result;
}

}  // namespace

bool IsIncomplete(std::string_view text_in) {
  const std::string text = WithoutByteOrderMark(std::string(text_in));
  size_t bad = 0;
  if (!IsValidUtf8(text, &bad)) return false;
  SourcePositions positions("", text);
  std::vector<Diagnostic> errors;
  SourceStream input(text);
  Lexer lexer(&input, &positions, &errors);
  lexer.removeErrorListeners();
  bool any = false;
  size_t last_end = 0;  // character index just past the last visible token
  for (;;) {
    std::unique_ptr<Token> t = lexer.nextToken();
    if (t->getType() == Token::EOF) break;
    if (t->getChannel() == Token::DEFAULT_CHANNEL) {
      any = true;
      last_end = t->getStopIndex() + 1;
    }
  }
  if (!errors.empty()) return false;
  if (lexer.bracketDepth > 0) return true;
  return any && lexer.continuationEnd == static_cast<long>(last_end);
}

}  // namespace runnel::lang
