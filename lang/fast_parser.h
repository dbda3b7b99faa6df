// The generated RunnelParser, with the ANTLR 4.9 runtime's hot paths done
// for less, and a hook for each top-level statement as soon as it is
// parsed.
//
// The runtime spent a third of parsing on overhead of its own: a
// dynamic_cast in each rule entry and alternative (where the parse tree
// holds only ParserRuleContexts), and in each prediction a
// std::function and a lock plus unordered_map lookup per token of
// lookahead. The overrides here do what the runtime's do, minus that. The
// grammar, the generated code, the DFA and the parse trees are ANTLR's, and
// parsing behaves the same, errors and recovery included.
//
// Internal to lang/ (it includes ANTLR headers).
#ifndef RUNNEL_LANG_FAST_PARSER_H_
#define RUNNEL_LANG_FAST_PARSER_H_

#include <cstddef>
#include <functional>
#include <vector>

#include "grammar/RunnelParser.h"

namespace runnel::lang {

// The DFA cache one kind of recognizer shares, built as the generated one
// builds its own (which is private to it).
struct SharedDfa {
  explicit SharedDfa(const antlr4::atn::ATN& atn);
  std::vector<antlr4::dfa::DFA> dfa;
  antlr4::atn::PredictionContextCache cache;
};

// The edges of one DFA that a simulator has looked up, by state number and
// symbol. ANTLR keeps them in an unordered_map per DFA state, behind a lock
// it takes for each lookup, once per character or token of lookahead. Only
// edges ANTLR has built are cached; it builds the others as before.
class DfaEdgeCache {
 public:
  explicit DfaEdgeCache(size_t symbols) : symbols_(symbols) {}

  // The edge from `s` (numbered) on symbol `t` (below `symbols`): cached, or
  // else what `lookup()` finds, cached when found.
  template <typename Lookup>
  antlr4::dfa::DFAState* Get(antlr4::dfa::DFAState* s, size_t t,
                             Lookup&& lookup) {
    const auto state = static_cast<size_t>(s->stateNumber);
    if (state >= rows_.size()) rows_.resize(state + 1);
    std::vector<antlr4::dfa::DFAState*>& row = rows_[state];
    if (row.empty()) row.resize(symbols_);
    antlr4::dfa::DFAState*& edge = row[t];
    if (edge == nullptr) edge = lookup();
    return edge;
  }

 private:
  size_t symbols_;
  std::vector<std::vector<antlr4::dfa::DFAState*>> rows_;
};

// CommonTokenStream, numbering the tokens it buffers without a dynamic_cast
// per token: every token here is a CommonToken.
class FastTokenStream : public antlr4::CommonTokenStream {
 public:
  using CommonTokenStream::CommonTokenStream;

 protected:
  size_t fetch(size_t n) override;
};

class FastParser : public grammar::RunnelParser {
 public:
  using StatementHook = std::function<void(StatementContext*)>;

  explicit FastParser(antlr4::TokenStream* input);

  // Called with each top-level statement once parsed: during
  // parse.program() as the next one starts (the runtime's exitRule() cannot
  // be overridden), and for the last one in FinishStatements().
  void OnTopLevelStatement(StatementHook hook) { hook_ = std::move(hook); }
  // After program(): hands out the last statement.
  void FinishStatements();

  void enterRule(antlr4::ParserRuleContext* ctx, size_t state,
                 size_t rule) override;
  void enterOuterAlt(antlr4::ParserRuleContext* ctx, size_t alt) override;

 private:
  StatementHook hook_;
  antlr4::ParserRuleContext* pending_ = nullptr;  // the statement under way
};

}  // namespace runnel::lang

#endif  // RUNNEL_LANG_FAST_PARSER_H_
