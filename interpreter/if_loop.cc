// `if` and `loop` expressions: on the host when the condition (or the
// bounds) are concrete, else in the graph (control_flow.h).
#include <algorithm>
#include <cmath>
#include <functional>

#include "base/errors.h"
#include "base/status_macros.h"
#include "base/strings.h"
#include "interpreter/control_flow.h"
#include "interpreter/diag.h"
#include "interpreter/indexing.h"
#include "interpreter/interpreter.h"
#include "interpreter/restore.h"

namespace runnel::interp {
namespace {

using lang::BinaryOp;
using lang::ExprKind;
using lang::StmtKind;

}  // namespace

absl::StatusOr<Value> Interpreter::EvalIf(const lang::IfExpr& e,
                                          bool statement) {
  RN_ASSIGN_OR_RETURN(Value cond, Eval(*e.cond));
  if (cond.is_symbolic()) {
    // With an `else`, a symbolic `if` is in-graph even where it stands as
    // a statement (the last one of a block gives the block's value).
    if (statement && !e.else_block && !e.else_if) {
      return ErrorAt(e.cond->span,
                     "the condition of an 'if' statement must be concrete; "
                     "this one is symbolic (an in-graph conditional needs "
                     "an 'else': `let y = if c { a } else { b }`)");
    }
    return EvalGraphIf(e, cond);
  }
  bool taken = false;
  RN_RETURN_IF_ERROR(Truthy(cond, e.cond->span, "the condition", &taken));
  Value v;
  if (taken) {
    RN_RETURN_IF_ERROR(ExecBlock(e.then_block, &v));
  } else if (e.else_if) {
    RN_ASSIGN_OR_RETURN(
        v, EvalIf(static_cast<const lang::IfExpr&>(*e.else_if), statement));
  } else if (e.else_block) {
    RN_RETURN_IF_ERROR(ExecBlock(*e.else_block, &v));
  } else if (!statement) {
    v = Value::NoneOfIf(e.span);
  }
  return v;
}

absl::StatusOr<Value> Interpreter::EvalGraphIf(const lang::IfExpr& e,
                                               const Value& cond) {
  if (!e.else_block && !e.else_if) {
    return ErrorAt(e.span,
                   "an in-graph 'if' (its condition is symbolic) needs an "
                   "'else': both branches give the value");
  }
  auto block = [this](const lang::Block& b) -> absl::StatusOr<Value> {
    Restore<std::shared_ptr<Env>> env(&env_,
                                      std::make_shared<Env>(env_, false));
    Value v;
    RN_RETURN_IF_ERROR(ExecBlock(b, &v));
    if (signal_ != Signal::kNone) {
      signal_ = Signal::kNone;
      return ErrorAt(b.span,
                     "return, break and continue cannot leave an in-graph "
                     "'if'");
    }
    // A branch that ends in a `device`, `scope` or `after` block gives no
    // value (the block only annotates the nodes made inside).
    if (v.is_none() && !b.stmts.empty()) {
      const lang::Stmt& last = *b.stmts.back();
      if (last.kind == StmtKind::kDevice || last.kind == StmtKind::kScope ||
          last.kind == StmtKind::kAfter) {
        const char* kind = last.kind == StmtKind::kDevice  ? "device"
                           : last.kind == StmtKind::kScope ? "scope"
                                                           : "after";
        return ErrorAt(
            last.span,
            StrCat("this branch of an in-graph 'if' ends in a '", kind,
                   "' block, which gives no value; bind the value inside it "
                   "(let z = ...) and end the branch with z after the block"));
      }
    }
    return v;
  };
  BranchFn then_fn = [&] { return block(e.then_block); };
  BranchFn else_fn = [&]() -> absl::StatusOr<Value> {
    if (e.else_if)
      return EvalIf(static_cast<const lang::IfExpr&>(*e.else_if), false);
    return block(*e.else_block);
  };
  return GraphCond(builder_, cond, then_fn, else_fn, OpSite{e.span});
}

// The bounds of `for v in a..b` without making a Range (either may be
// symbolic), or nullopt when the iterable is not a range expression.
absl::StatusOr<std::optional<std::pair<Value, Value>>> Interpreter::EvalBounds(
    const lang::Expr& iterable) {
  if (iterable.kind != ExprKind::kBinary ||
      static_cast<const lang::BinaryExpr&>(iterable).op != BinaryOp::kRange) {
    return std::nullopt;
  }
  const auto& r = static_cast<const lang::BinaryExpr&>(iterable);
  RN_ASSIGN_OR_RETURN(Value lo, Eval(*r.lhs));
  RN_ASSIGN_OR_RETURN(Value hi, Eval(*r.rhs));
  for (const Value* v : {&lo, &hi}) {
    if (!v->is_tensor() || !IsInteger(v->tensor_dtype()) ||
        (!v->tensor_shape().unknown_rank() && v->tensor_shape().rank() != 0)) {
      return ErrorAt(iterable.span,
                     StrCat("a range needs integer scalar bounds, "
                            "got ",
                            DescribeValue(lo), " and ", DescribeValue(hi)));
    }
  }
  return std::make_pair(lo, hi);
}

absl::StatusOr<Value> Interpreter::EvalLoop(const lang::LoopExpr& e) {
  RN_ASSIGN_OR_RETURN(Value state, Eval(*e.init));
  if (e.is_for) {
    RN_ASSIGN_OR_RETURN(auto bounds, EvalBounds(*e.iterable));
    if (bounds) {
      if (state.contains_symbolic() || bounds->first.is_symbolic() ||
          bounds->second.is_symbolic()) {
        return EvalGraphLoop(e, state, &*bounds, nullptr);
      }
    }
  } else if (state.contains_symbolic()) {
    return EvalGraphLoop(e, state, nullptr, nullptr);
  }
  auto step = [&](const std::optional<Value>& item) -> absl::Status {
    Restore<std::shared_ptr<Env>> env(&env_,
                                      std::make_shared<Env>(env_, false));
    RN_RETURN_IF_ERROR(BindPattern(e.state, state, BindingKind::kLet));
    if (item) {
      RN_RETURN_IF_ERROR(BindPattern(e.var, *item, BindingKind::kLet));
    }
    Value v;
    RN_RETURN_IF_ERROR(ExecBlock(e.body, &v));
    if (signal_ != Signal::kNone) {
      if (signal_ == Signal::kReturn) return absl::OkStatus();
      signal_ = Signal::kNone;
    }
    state = std::move(v);
    return absl::OkStatus();
  };
  // `with checkpoint = k` is about the stacks of an in-graph loop's
  // gradient; a host loop has none.
  auto host_only = [&]() -> absl::Status {
    if (e.option.empty()) return absl::OkStatus();
    return ErrorAt(e.option_span,
                   StrCat("'with ", e.option,
                          "' applies to a loop in the graph, and this one "
                          "runs on the host (its state, bounds and "
                          "condition are concrete, or it runs over a "
                          "concrete list): its gradient, if any, is through "
                          "the unrolled steps"));
  };
  if (e.is_for) {
    RN_ASSIGN_OR_RETURN(Value iterable, Eval(*e.iterable));
    if (iterable.is_symbolic()) {
      return EvalGraphLoop(e, state, nullptr, &iterable);
    }
    RN_RETURN_IF_ERROR(host_only());
    RN_ASSIGN_OR_RETURN(std::unique_ptr<Iterator> it,
                        Iterate(iterable, e.iterable->span));
    while (true) {
      RN_RETURN_IF_ERROR(CheckInterrupt(e.span));
      RN_ASSIGN_OR_RETURN(std::optional<Value> item, it->Next());
      if (!item) break;
      const int64_t runs_before = host_->runs();
      absl::Status body = step(item);
      if (IsEndOfData(body)) break;  // a queue closed: like the data's end
      RN_RETURN_IF_ERROR(body);
      if (signal_ == Signal::kReturn) return Value();
      if (check_mode() && host_->runs() != runs_before) break;
    }
    return state;
  }
  while (true) {
    RN_RETURN_IF_ERROR(CheckInterrupt(e.span));
    Value cond;
    {
      Restore<std::shared_ptr<Env>> env(&env_,
                                        std::make_shared<Env>(env_, false));
      RN_RETURN_IF_ERROR(BindPattern(e.state, state, BindingKind::kLet));
      RN_ASSIGN_OR_RETURN(cond, Eval(*e.cond));
    }
    if (cond.is_symbolic()) return EvalGraphLoop(e, state, nullptr, nullptr);
    RN_RETURN_IF_ERROR(host_only());
    bool go = false;
    RN_RETURN_IF_ERROR(Truthy(cond, e.cond->span, "the loop condition", &go));
    if (!go) break;
    const int64_t runs_before = host_->runs();
    absl::Status body = step(std::nullopt);
    if (IsEndOfData(body)) break;
    RN_RETURN_IF_ERROR(body);
    if (signal_ == Signal::kReturn) return Value();
    if (check_mode() && host_->runs() != runs_before) break;
  }
  return state;
}

// An in-graph loop (docs/language.md §5): `bounds` for `for v in a..b`,
// `over` for `for v in xs` over a symbolic tensor, neither for `while`.
absl::StatusOr<Value> Interpreter::EvalGraphLoop(
    const lang::LoopExpr& e, const Value& init,
    const std::pair<Value, Value>* bounds, const Value* over) {
  OpSite site{e.span};
  Value lo = Value::Int(0), count;
  if (bounds != nullptr) {
    lo = bounds->first;
    RN_ASSIGN_OR_RETURN(
        count, BinaryOnValues(BinaryOp::kSub, bounds->second, lo, site));
  } else if (over != nullptr) {
    RN_ASSIGN_OR_RETURN(Value shape,
                        builder_.ApplyOp("shape_of", {*over}, {}, site));
    RN_ASSIGN_OR_RETURN(
        count,
        Index(builder_, shape,
              {Subscript{.index = Value::Int(0), .span = e.span}}, site));
  }
  auto bind = [&](const Value& state, const Value& index) -> absl::Status {
    RN_RETURN_IF_ERROR(BindPattern(e.state, state, BindingKind::kLet));
    if (!e.is_for) return absl::OkStatus();
    Value item;
    if (over != nullptr) {
      RN_ASSIGN_OR_RETURN(
          item, Index(builder_, *over,
                      {Subscript{.index = index, .span = e.iterable->span}},
                      OpSite{e.iterable->span}));
    } else {
      RN_ASSIGN_OR_RETURN(
          Value i, builder_.ApplyOp("cast", {index},
                                    {{"dtype", lo.tensor_dtype()}}, site));
      RN_ASSIGN_OR_RETURN(item, BinaryOnValues(BinaryOp::kAdd, i, lo, site));
    }
    return BindPattern(e.var, item, BindingKind::kLet);
  };
  LoopFns fns;
  if (e.option == "swap_memory") {
    RN_ASSIGN_OR_RETURN(Value swap, Eval(*e.option_value));
    if (!swap.is_tensor() || swap.is_symbolic() ||
        swap.tensor_dtype() != DType::kBool ||
        swap.tensor_shape().rank() != 0) {
      return ErrorAt(e.option_value->span,
                     StrCat("swap_memory must be true or false, got ",
                            DescribeValue(swap)));
    }
    fns.swap_memory = swap.AsDouble().value_or(0) != 0;
    if (fns.swap_memory) WarnNoSwap(e.option_span);
  } else if (!e.option.empty()) {
    if (e.option != "checkpoint") {
      return ErrorAt(e.option_span,
                     StrCat("a loop takes 'with checkpoint = k' or 'with "
                            "swap_memory = true' (docs/training.md), not '",
                            e.option, "'"));
    }
    RN_ASSIGN_OR_RETURN(Value k, Eval(*e.option_value));
    std::optional<int64_t> n = k.is_tensor() && !k.is_symbolic() &&
                                       IsInteger(k.tensor_dtype()) &&
                                       k.tensor_shape().rank() == 0
                                   ? k.AsInt()
                                   : std::nullopt;
    if (!n || *n < 0) {
      return ErrorAt(e.option_value->span,
                     StrCat("checkpoint must be a concrete integer: 0 (as "
                            "--memory-budget decides) or a number of "
                            "iterations, got ",
                            n ? std::to_string(*n) : DescribeValue(k)));
    }
    fns.checkpoint = *n;
  }
  // A `for`'s trip count, for its condition and a memory budget's plan.
  Value trips;
  if (e.is_for) {
    RN_ASSIGN_OR_RETURN(
        trips,
        builder_.ApplyOp("cast", {count}, {{"dtype", DType::kI32}}, site));
    if (options_.memory_budget > 0) fns.trip_count = trips;
  }
  if (count.is_tensor() && !count.is_symbolic()) {
    if (std::optional<int64_t> n = count.AsInt())
      fns.trips = std::max<int64_t>(*n, 0);
  } else if (over != nullptr && !over->tensor_shape().unknown_rank() &&
             over->tensor_shape().rank() > 0) {
    fns.trips = over->tensor_shape().dim(0);
  }
  fns.body_span =
      e.body.stmts.empty() ? e.body.span : e.body.stmts.back()->span;
  fns.cond = [&](const Value& state,
                 const Value& index) -> absl::StatusOr<Value> {
    Restore<std::shared_ptr<Env>> env(&env_,
                                      std::make_shared<Env>(env_, false));
    RN_RETURN_IF_ERROR(BindPattern(e.state, state, BindingKind::kLet));
    if (e.is_for) return builder_.ApplyOp("less", {index, trips}, {}, site);
    return Eval(*e.cond);
  };
  fns.body = [&](const Value& state,
                 const Value& index) -> absl::StatusOr<Value> {
    Restore<std::shared_ptr<Env>> env(&env_,
                                      std::make_shared<Env>(env_, false));
    RN_RETURN_IF_ERROR(bind(state, index));
    Value v;
    RN_RETURN_IF_ERROR(ExecBlock(e.body, &v));
    if (signal_ != Signal::kNone) {
      signal_ = Signal::kNone;
      return ErrorAt(e.body.span,
                     "return, break and continue cannot leave an in-graph "
                     "loop");
    }
    return v;
  };
  return GraphLoop(builder_, init, fns, site);
}

}  // namespace runnel::interp
