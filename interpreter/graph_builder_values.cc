// GraphBuilder (graph_builder.h): variables and their slots, the global
// step, assignments, stacking a list of values into one tensor, and
// results exactly representable as literals.
#include <algorithm>
#include <cmath>
#include <cstring>

#include "absl/strings/match.h"
#include "base/errors.h"
#include "base/status_macros.h"
#include "base/strings.h"
#include "framework/op_registry.h"
#include "interpreter/data.h"
#include "interpreter/diag.h"
#include "interpreter/graph_builder.h"
#include "interpreter/restore.h"

namespace runnel::interp {

absl::StatusOr<Value> GraphBuilder::MakeVariable(const std::string& name,
                                                 const Value& init,
                                                 bool trainable,
                                                 const SourceSpan& span) {
  // Variables live at the top level even when declared in a loop body or
  // branch: their initializer runs once, not per iteration.
  std::optional<BuildScope> top;
  if (context_.cf != nullptr) {
    if (init.is_symbolic() && ContextOf(init.out().node) != nullptr) {
      return ErrorAt(span, StrCat("'", name,
                                  "' is declared inside an in-graph loop or "
                                  "'if' with an initializer computed there; "
                                  "its initializer must not depend on the "
                                  "loop or branch"));
    }
    top.emplace(InControlFlow(nullptr));
  }
  const Shape shape = init.tensor_shape();
  if (!shape.IsFullyDefined()) {
    return ErrorAt(span, StrCat("'", name,
                                "' needs an initializer of fully known shape, "
                                "got ",
                                DescribeValue(init)));
  }
  const std::string node_name = NewNodeName(name);
  std::string initializer;
  if (init.is_concrete()) {
    NodeSpec c;
    c.name = node_name + "/initial_value";
    taken_.insert(c.name);
    c.op = "const";
    c.attrs = {{"value", init.tensor()}};
    c.span = span;
    c.device = context_.device.ToString();
    absl::StatusOr<Node*> n = graph_->AddNode(std::move(c));
    if (!n.ok()) return ErrorAt(span, std::string(ToStd(n.status().message())));
    initializer = (*n)->name() + ":0";
  } else {
    initializer = StrCat(init.out().node->name(), ":", init.out().index);
  }
  NodeSpec spec;
  spec.name = node_name;
  spec.op = "variable";
  spec.attrs = {{"dtype", init.tensor_dtype()},
                {"shape", shape},
                {"trainable", trainable},
                {"initializer", initializer}};
  RN_ASSIGN_OR_RETURN(Node * node, AddNode(std::move(spec), OpSite{span}, {}));
  variables_.push_back(node);
  return Value::Symbolic({node, 0});
}

absl::StatusOr<Value> GraphBuilder::MakeSlot(const Value& var,
                                             const std::string& slot,
                                             const Value& initial,
                                             const SourceSpan& span) {
  if (!var.is_symbolic() || !IsVariableNode(var.out().node)) {
    return ErrorAt(
        span, StrCat("slot: needs a var or state, got ", DescribeValue(var)));
  }
  const bool ok =
      !slot.empty() && std::all_of(slot.begin(), slot.end(), [](char c) {
        return std::isalnum(static_cast<unsigned char>(c)) || c == '_';
      });
  if (!ok) {
    return ErrorAt(span, StrCat("slot: invalid slot name \"", slot,
                                "\": use letters, digits and '_'"));
  }
  if (!initial.is_none() && !initial.is_concrete()) {
    return ErrorAt(span, StrCat("slot: the initial value must be known "
                                "before any run, got ",
                                DescribeValue(initial)));
  }
  const Node* v = var.out().node;
  BuildContext top;
  if (!v->requested_device().empty()) {
    absl::StatusOr<DeviceSpec> device =
        DeviceSpec::Parse(v->requested_device());
    if (device.ok()) top.device = *device;
  }
  BuildScope scope = Replace(std::move(top));
  return MakeVariable(StrCat(v->name(), "/", slot),
                      initial.is_none()
                          ? Value::Concrete(Tensor::Zeros(v->output_dtype(0),
                                                          v->output_shape(0)))
                          : initial,
                      false, span);
}

absl::StatusOr<Value> GraphBuilder::GlobalStep(const SourceSpan& span) {
  if (!global_step_.is_none()) return global_step_;
  BuildContext context;
  context.device = global_step_device_;
  BuildScope top = Replace(std::move(context));
  absl::StatusOr<Value> v = MakeVariable(
      "global_step", Value::Concrete(Tensor::Scalar<int64_t>(0)), false, span);
  if (v.ok()) global_step_ = *v;
  return v;
}

absl::StatusOr<Value> GraphBuilder::Assign(const std::string& op,
                                           const Value& target,
                                           const Value& value,
                                           const OpSite& site) {
  if (!target.is_symbolic() || !IsVariableNode(target.out().node)) {
    return ErrorAt(site.span,
                   StrCat(op, " needs a var or state to update, got ",
                          DescribeValue(target)));
  }
  // `w -= 1` and `w := 0.0` broadcast the value to the variable's shape, as
  // NumPy's in-place operators do.
  Value v = value;
  if (v.is_sequence()) {
    RN_ASSIGN_OR_RETURN(v, ToTensor(v, site.span, StrCat(op, ": the value")));
  }
  if (v.is_concrete() && v.literal() &&
      v.tensor().dtype() != target.tensor_dtype()) {
    std::vector<Value> pair = {target, v};
    if (const OpDef* def = OpRegistry::Global().Find(op)) {
      RN_RETURN_IF_ERROR(Promote(*def, &pair, site));
    }
    v = pair[1];
  }
  const Shape var_shape = target.tensor_shape();
  if (v.is_tensor() && !v.tensor_shape().unknown_rank() &&
      v.tensor_shape().IsFullyDefined() && v.tensor_shape() != var_shape) {
    RN_ASSIGN_OR_RETURN(
        v, ApplyOp("broadcast_to",
                   {v, Value::Concrete(Tensor::OfDims(var_shape.dims()))}, {},
                   OpSite(site.span, site.caret)));
  }
  return ApplyOp(op, {target, v}, {}, site);
}

// ---- values

absl::StatusOr<std::optional<Value>> GraphBuilder::TryStack(
    const std::vector<Value>& items, const SourceSpan& span) {
  if (items.empty()) return std::optional<Value>();
  std::vector<Value> conv;
  for (const Value& v : items) {
    if (v.is_sequence()) {
      RN_ASSIGN_OR_RETURN(std::optional<Value> inner,
                          TryStack(v.items(), span));
      if (!inner) return std::optional<Value>();
      conv.push_back(std::move(*inner));
    } else if (v.is_concrete()) {
      conv.push_back(v);
    } else {
      return std::optional<Value>();
    }
  }
  // One dtype: that of the non-literal elements, else the widest literal.
  std::optional<DType> dtype;
  bool all_literal = true;
  for (const Value& v : conv) {
    if (v.literal()) continue;
    all_literal = false;
    if (dtype && *dtype != v.tensor().dtype()) {
      return ErrorAt(span, StrCat("a tensor literal mixes ", DTypeName(*dtype),
                                  " and ", DTypeName(v.tensor().dtype()),
                                  " elements; convert with cast()"));
    }
    dtype = v.tensor().dtype();
  }
  if (!dtype) {
    for (const Value& v : conv) {
      DType d = v.tensor().dtype();
      if (!dtype || (IsFloating(d) && !IsFloating(*dtype)) ||
          (d == DType::kI64 && *dtype == DType::kI32)) {
        dtype = d;
      }
    }
  }
  const Shape& shape = conv[0].tensor().shape();
  for (size_t i = 1; i < conv.size(); ++i) {
    if (conv[i].tensor().shape() != shape) {
      return ErrorAt(span,
                     StrCat("ragged tensor literal: element ", i, " has shape ",
                            conv[i].tensor().shape().ToString(),
                            " but element 0 has ", shape.ToString()));
    }
  }
  std::vector<int64_t> dims = {static_cast<int64_t>(conv.size())};
  dims.insert(dims.end(), shape.dims().begin(), shape.dims().end());
  Tensor out(*dtype, Shape(dims));
  char* dst = static_cast<char*>(out.raw_data());
  for (Value& v : conv) {
    Tensor t = v.tensor();
    if (t.dtype() != *dtype) {
      if (!IsFloating(*dtype) && IsFloating(t.dtype())) {
        return ErrorAt(span,
                       StrCat("a tensor literal mixes ", DTypeName(*dtype),
                              " elements and float literals"));
      }
      if (*dtype == DType::kBool || t.dtype() == DType::kBool) {
        return ErrorAt(span, "a tensor literal mixes bool and numbers");
      }
      RN_ASSIGN_OR_RETURN(t, Cast(t, *dtype));
    }
    if (t.bytes() > 0) std::memcpy(dst, t.raw_data(), t.bytes());
    dst += t.bytes();
  }
  if (all_literal && IsFloating(*dtype) &&
      std::any_of(conv.begin(), conv.end(),
                  [](const Value& v) { return v.exact_f64() != nullptr; })) {
    // The same literal in f64, from each element's exact value.
    std::vector<Value> wide;
    for (const Value& v : conv) {
      RN_ASSIGN_OR_RETURN(Tensor w, LiteralAs(v, DType::kF64));
      wide.push_back(Value::Concrete(std::move(w), true));
    }
    RN_ASSIGN_OR_RETURN(std::optional<Value> exact, TryStack(wide, span));
    return std::optional<Value>(
        Value::FloatLiteral(std::move(out), exact->tensor()));
  }
  return std::optional<Value>(Value::Concrete(std::move(out), all_literal));
}

absl::StatusOr<std::optional<Tensor>> GraphBuilder::ExactLiteralResult(
    const std::string& op, const std::vector<Value>& inputs,
    const AttrMap& attrs) {
  // Worth redoing only where a float literal is involved (`1.0 / 10.0`
  // rounds to f32 even though both operands are exact in it).
  bool any = false;
  for (const Value& v : inputs) {
    any = any || (v.literal() && IsFloating(v.tensor().dtype()));
  }
  if (!any) return std::optional<Tensor>();
  std::vector<Tensor> wide;
  for (const Value& v : inputs) {
    RN_ASSIGN_OR_RETURN(Tensor w, LiteralAs(v, DType::kF64));
    wide.push_back(std::move(w));
  }
  absl::StatusOr<std::vector<Tensor>> out =
      eager_->Execute(op, std::move(wide), attrs, op, SourceSpan{});
  // Where f64 cannot run it (or fails), the f32 result stands alone.
  if (!out.ok() || out->size() != 1 || (*out)[0].dtype() != DType::kF64) {
    return std::optional<Tensor>();
  }
  return std::optional<Tensor>(std::move((*out)[0]));
}

absl::Status UsedNoneOfIf(const Value& v, const SourceSpan& use) {
  const SourceSpan* if_span = v.if_without_else();
  if (if_span == nullptr) return absl::OkStatus();
  lang::Diagnostic d;
  d.message =
      "this 'if' has no 'else', so its value is none when the condition is "
      "false; add an 'else' branch";
  d.span = *if_span;
  d.notes.push_back(Note(use, "the value is used here"));
  return DiagStatus(std::move(d));
}

}  // namespace runnel::interp
