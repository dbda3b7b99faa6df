#include "lang/fast_parser.h"

#include <utility>

namespace runnel::lang {
namespace {

using antlr4::ParserRuleContext;
using antlr4::dfa::DFAState;

// In a parser, every node with children is a ParserRuleContext.
ParserRuleContext* ParentOf(ParserRuleContext* ctx) {
  return static_cast<ParserRuleContext*>(ctx->parent);
}

// ANTLR's prediction, with the DFA's edges from a DfaEdgeCache and without
// a std::function per prediction. Predictions that need the ATN go to ANTLR
// as before.
class FastParserSimulator : public antlr4::atn::ParserATNSimulator {
 public:
  FastParserSimulator(antlr4::Parser* parser, SharedDfa* shared)
      : ParserATNSimulator(parser, parser->getATN(), shared->dfa,
                           shared->cache),
        max_token_(parser->getATN().maxTokenType),
        edges_(shared->dfa.size(), DfaEdgeCache(max_token_ + 1)) {}

  size_t adaptivePredict(antlr4::TokenStream* input, size_t decision,
                         ParserRuleContext* outer) override {
    antlr4::dfa::DFA& dfa = decisionToDFA[decision];
    DFAState* s0 = dfa.isPrecedenceDfa()
                       ? dfa.getPrecedenceStartState(parser->getPrecedence())
                       : dfa.s0;
    // Without a start state, ANTLR builds one from the ATN.
    if (s0 == nullptr) {
      return ParserATNSimulator::adaptivePredict(input, decision, outer);
    }
    _input = input;
    _startIndex = input->index();
    _outerContext = outer;
    _dfa = &dfa;
    // However the prediction ends (it may throw), the input goes back to
    // where it started, as ANTLR's does.
    struct Restore {
      FastParserSimulator* self;
      antlr4::TokenStream* input;
      size_t index;
      ssize_t mark;
      ~Restore() {
        self->mergeCache.clear();
        self->_dfa = nullptr;
        input->seek(index);
        input->release(mark);
      }
    } restore{this, input, _startIndex, input->mark()};
    return execATN(dfa, s0, input, _startIndex,
                   outer != nullptr ? outer : &ParserRuleContext::EMPTY);
  }

 protected:
  DFAState* getExistingTargetState(DFAState* previous, size_t t) override {
    auto ask_antlr = [&] {
      return ParserATNSimulator::getExistingTargetState(previous, t);
    };
    // Token types count from 1; EOF (-1 as size_t) goes to ANTLR.
    if (_dfa == nullptr || t > max_token_ || previous->stateNumber < 0) {
      return ask_antlr();
    }
    return edges_[_dfa->decision].Get(previous, t, ask_antlr);
  }

 private:
  const size_t max_token_;
  std::vector<DfaEdgeCache> edges_;  // by decision
};

}  // namespace

SharedDfa::SharedDfa(const antlr4::atn::ATN& atn) {
  for (size_t i = 0; i < atn.getNumberOfDecisions(); ++i) {
    dfa.emplace_back(atn.getDecisionState(i), i);
  }
}

size_t FastTokenStream::fetch(size_t n) {
  if (_fetchedEOF) return 0;
  for (size_t i = 0; i < n; ++i) {
    std::unique_ptr<antlr4::Token> t = _tokenSource->nextToken();
    static_cast<antlr4::CommonToken*>(t.get())->setTokenIndex(_tokens.size());
    const bool eof = t->getType() == antlr4::Token::EOF;
    _tokens.push_back(std::move(t));
    if (eof) {
      _fetchedEOF = true;
      return i + 1;
    }
  }
  return n;
}

FastParser::FastParser(antlr4::TokenStream* input)
    : grammar::RunnelParser(input) {
  static SharedDfa* const shared = new SharedDfa(getATN());
  delete _interpreter;
  _interpreter = new FastParserSimulator(this, shared);
}

void FastParser::enterRule(ParserRuleContext* ctx, size_t state,
                           size_t /*rule*/) {
  setState(state);
  _ctx = ctx;
  _ctx->start = _input->LT(1);
  if (_buildParseTrees && _ctx->parent != nullptr) {
    ParentOf(_ctx)->addChild(_ctx);
  }
  if (!_parseListeners.empty()) triggerEnterRuleEvent();
  if (hook_ && ctx->getRuleIndex() == RuleStatement && ctx->parent != nullptr &&
      ParentOf(ctx)->getRuleIndex() == RuleProgram) {
    FinishStatements();  // the one before is complete
    pending_ = ctx;
  }
}

void FastParser::FinishStatements() {
  if (pending_ == nullptr) return;
  hook_(static_cast<StatementContext*>(pending_));
  pending_ = nullptr;
}

void FastParser::enterOuterAlt(ParserRuleContext* ctx, size_t alt) {
  ctx->setAltNumber(alt);
  // A labeled alternative's context takes the place of the rule's.
  if (_buildParseTrees && _ctx != ctx && _ctx->parent != nullptr) {
    ParserRuleContext* parent = ParentOf(_ctx);
    parent->removeLastChild();
    parent->addChild(ctx);
  }
  if (_ctx == pending_) pending_ = ctx;
  _ctx = ctx;
}

}  // namespace runnel::lang
