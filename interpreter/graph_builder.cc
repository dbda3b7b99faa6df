// The concrete/symbolic rule (docs/language.md §1) and everything that makes
// graph nodes: ApplyOp, node names and scopes, declarations, indexing,
// `run`, and iteration over values.
#include <algorithm>
#include <cmath>
#include <cstring>

#include "absl/strings/match.h"
#include "interpreter/data.h"
#include "interpreter/diag.h"
#include "interpreter/interpreter.h"
#include "runtime/errors.h"
#include "runtime/op_registry.h"
#include "runtime/status_macros.h"
#include "runtime/strings.h"

namespace runnel::interp {
namespace {

bool IsVariableNode(const Node* n) { return n->op() == "variable"; }

// Inputs of one op that must share a dtype, so bare literals among them
// take the dtype of the others: the op's dtype group (OpDef::dtype_groups;
// ops declare at most one). {-1} means all inputs.
const std::vector<int>* PromotionGroup(const std::string& op) {
  static const auto* groups = [] {
    auto* m = new std::map<std::string, std::vector<int>>;
    const OpRegistry& registry = OpRegistry::Global();
    for (const std::string& name : registry.ListOps()) {
      const OpDef& def = *registry.Find(name);
      if (def.dtype_groups.empty()) continue;
      const DTypeGroup& g = def.dtype_groups[0];
      (*m)[name] = g.all ? std::vector<int>{-1} : g.inputs;
    }
    return m;
  }();
  auto it = groups->find(op);
  return it == groups->end() ? nullptr : &it->second;
}

// Whether `op` on bare literals gives a bare literal (`x * (1.0 / 3.0)`):
// arithmetic does, and negation; a stateful op (dropout) never does, as its
// result is a new value each time, not a constant.
bool GivesLiteral(const std::string& op) {
  const OpDef* def = OpRegistry::Global().Find(op);
  if (def == nullptr || def->stateful) return false;
  return PromotionGroup(op) != nullptr || op == "neg";
}

// Zeros standing in for a fetched value in check mode.
Tensor Placeholder(DType dtype, const Shape& shape) {
  std::vector<int64_t> dims;
  if (!shape.unknown_rank()) {
    for (int64_t d : shape.dims()) dims.push_back(d < 0 ? 1 : d);
  }
  Tensor t(dtype, Shape(dims));
  if (t.bytes() > 0) std::memset(t.raw_data(), 0, t.bytes());
  return t;
}

// Iterators over host values.
class VectorIterator : public Iterator {
 public:
  explicit VectorIterator(std::vector<Value> items)
      : items_(std::move(items)) {}
  absl::StatusOr<std::optional<Value>> Next() override {
    if (i_ >= items_.size()) return std::optional<Value>();
    return std::optional<Value>(items_[i_++]);
  }

 private:
  std::vector<Value> items_;
  size_t i_ = 0;
};

class RangeIterator : public Iterator {
 public:
  RangeIterator(int64_t start, int64_t stop) : i_(start), stop_(stop) {}
  absl::StatusOr<std::optional<Value>> Next() override {
    if (i_ >= stop_) return std::optional<Value>();
    return std::optional<Value>(Value::Int(i_++));
  }

 private:
  int64_t i_, stop_;
};

class RowIterator : public Iterator {
 public:
  RowIterator(Tensor t, Interpreter* in) : t_(std::move(t)), in_(in) {}
  absl::StatusOr<std::optional<Value>> Next() override {
    if (i_ >= t_.dim(0)) return std::optional<Value>();
    Tensor row = GatherRows(t_, {i_++});
    std::vector<int64_t> dims(t_.shape().dims().begin() + 1,
                              t_.shape().dims().end());
    RN_ASSIGN_OR_RETURN(Tensor r, row.Reshaped(Shape(dims)));
    return std::optional<Value>(Value::Concrete(r));
  }

 private:
  Tensor t_;
  Interpreter* in_;
  int64_t i_ = 0;
};

class DatasetIterator : public Iterator {
 public:
  explicit DatasetIterator(std::shared_ptr<const Dataset> d)
      : d_(std::move(d)) {}
  absl::StatusOr<std::optional<Value>> Next() override {
    if (i_ >= d_->rows) return std::optional<Value>();
    std::vector<Field> fields;
    for (const auto& [name, t] : d_->columns) {
      Tensor row = GatherRows(t, {i_});
      std::vector<int64_t> dims(t.shape().dims().begin() + 1,
                                t.shape().dims().end());
      RN_ASSIGN_OR_RETURN(Tensor r, row.Reshaped(Shape(dims)));
      fields.emplace_back(name, Value::Concrete(r));
    }
    ++i_;
    return std::optional<Value>(Value::Record(std::move(fields)));
  }

 private:
  std::shared_ptr<const Dataset> d_;
  int64_t i_ = 0;
};

}  // namespace

// ---- names and scopes -------------------------------------------------------

std::string Interpreter::ScopePath(bool reserve) {
  // Frames resolve in order, so the resolved ones are a prefix: start after
  // the last of them.
  size_t first = scopes_.size();
  while (first > 0 && !scopes_[first - 1].resolved) --first;
  std::string path = first > 0 ? scopes_[first - 1].path : std::string();
  for (size_t k = first; k < scopes_.size(); ++k) {
    ScopeFrame& f = scopes_[k];
    std::string candidate = path.empty() ? f.base : path + "/" + f.base;
    if (!reserve) {
      path = candidate;
      continue;
    }
    if (f.unique) {
      const std::string base = candidate;
      if (taken_.count(candidate) || graph_->FindNode(candidate) != nullptr) {
        int& i = last_suffix_[base];
        do {
          candidate = StrCat(base, "_", ++i);
        } while (taken_.count(candidate) ||
                 graph_->FindNode(candidate) != nullptr);
      }
    }
    taken_.insert(candidate);
    f.resolved = true;
    f.path = candidate;
    path = candidate;
  }
  return path;
}

std::string Interpreter::NewNodeName(const std::string& base) {
  const std::string path = ScopePath(true);
  return UniqueName(path.empty() ? base : path + "/" + base);
}

std::string Interpreter::UniqueName(const std::string& first) {
  std::string name = first;
  if (taken_.count(name) || graph_->FindNode(name) != nullptr) {
    int& i = last_suffix_[first];
    do {
      name = StrCat(first, "_", ++i);
    } while (taken_.count(name) || graph_->FindNode(name) != nullptr);
  }
  taken_.insert(name);
  return name;
}

absl::StatusOr<Node*> Interpreter::AddNode(NodeSpec spec, const OpSite& site,
                                           const std::vector<Value>& inputs) {
  spec.span = site.span;
  if (spec.device.empty()) spec.device = device_.ToString();
  for (Node* c : control_) {
    if (std::find(spec.control_inputs.begin(), spec.control_inputs.end(), c) ==
        spec.control_inputs.end()) {
      spec.control_inputs.push_back(c);
    }
  }
  absl::StatusOr<Node*> node = graph_->AddNode(std::move(spec));
  if (node.ok()) return node;
  lang::Diagnostic d;
  d.message = std::string(ToStd(node.status().message()));
  d.span = site.span;
  d.caret_col = site.caret;
  // Point at the declarations of the inputs the message is about.
  for (const Value& v : inputs) {
    if (!v.is_symbolic()) continue;
    const Node* n = v.out().node;
    if (n->op() == "placeholder" || n->op() == "placeholder_with_default" ||
        IsVariableNode(n)) {
      d.notes.push_back(Note(n->span(), StrCat(n->name(), " declared here")));
    }
  }
  return DiagStatus(std::move(d));
}

absl::StatusOr<NodeOut> Interpreter::ReadVariable(Node* var,
                                                  const SourceSpan& span) {
  // Reads outside `after` blocks are interchangeable: one per variable and
  // device serves them all.
  const bool shared = control_.empty();
  auto key = std::make_pair(var, device_.ToString());
  if (shared) {
    auto it = read_cache_.find(key);
    if (it != read_cache_.end()) return NodeOut{it->second, 0};
  }
  NodeSpec spec;
  spec.name = UniqueName(var->name() + "/read");
  spec.op = "read_variable";
  spec.inputs = {NodeOut{var, 0}};
  RN_ASSIGN_OR_RETURN(Node * node, AddNode(std::move(spec), OpSite{span}, {}));
  if (shared) read_cache_[key] = node;
  return NodeOut{node, 0};
}

absl::StatusOr<Node*> Interpreter::ConstNode(const Tensor& t,
                                             const SourceSpan& span) {
  auto key = std::make_tuple(t.raw_data(), static_cast<int>(t.dtype()),
                             t.shape().ToString());
  if (t.raw_data() != nullptr) {
    auto it = const_cache_.find(key);
    if (it != const_cache_.end()) return it->second;
  }
  NodeSpec spec;
  spec.name = NewNodeName("const");
  spec.op = "const";
  spec.attrs = {{"value", t}};
  spec.span = span;
  absl::StatusOr<Node*> node = graph_->AddNode(std::move(spec));
  if (!node.ok())
    return ErrorAt(span, std::string(ToStd(node.status().message())));
  if (t.raw_data() != nullptr) const_cache_[key] = *node;
  return *node;
}

// ---- conversions
// ---------------------------------------------------------------

absl::StatusOr<Tensor> Interpreter::Cast(const Tensor& t, DType dtype) {
  if (t.dtype() == dtype) return t;
  return eager_->Execute1("cast", {t}, {{"dtype", dtype}});
}

absl::StatusOr<Value> Interpreter::ToTensor(const Value& v,
                                            const SourceSpan& span,
                                            std::string_view what) {
  if (v.is_tensor()) return v;
  if (v.is_sequence()) {
    if (v.items().empty()) {
      return Value::Concrete(Tensor(DType::kF32, Shape{0}), true);
    }
    RN_ASSIGN_OR_RETURN(std::optional<Value> t, TryStack(v.items(), span));
    if (t) return *t;
    return ErrorAt(span, StrCat(what, " must be a tensor; this ",
                                v.kind() == ValueKind::kList ? "list" : "tuple",
                                " holds values that are not concrete numbers "
                                "(use stack() for symbolic tensors)"));
  }
  RN_RETURN_IF_ERROR(UsedNoneOfIf(v, span));
  return ErrorAt(span,
                 StrCat(what, " must be a tensor, got ", DescribeValue(v)));
}

absl::StatusOr<Tensor> Interpreter::ToConcrete(const Value& v, DType dtype,
                                               const SourceSpan& span,
                                               std::string_view what) {
  RN_ASSIGN_OR_RETURN(Value t, ToTensor(v, span, what));
  if (t.is_symbolic()) {
    return ErrorAt(span,
                   StrCat(what, " must be concrete, got ", DescribeValue(t)));
  }
  absl::StatusOr<Tensor> c = Cast(t.tensor(), dtype);
  if (!c.ok()) {
    return ErrorAt(span, StrCat(what, ": ", ToStd(c.status().message())));
  }
  return c;
}

absl::StatusOr<NodeOut> Interpreter::ToGraph(const Value& v,
                                             const SourceSpan& span) {
  if (v.is_symbolic()) return v.out();
  RN_ASSIGN_OR_RETURN(Value t, ToTensor(v, span, "the value"));
  if (t.is_symbolic()) return t.out();
  RN_ASSIGN_OR_RETURN(Node * n, ConstNode(t.tensor(), span));
  return NodeOut{n, 0};
}

absl::Status Interpreter::CollectNodes(const Value& v, const SourceSpan& span,
                                       std::vector<Node*>* out) {
  switch (v.kind()) {
    case ValueKind::kNone:
      return absl::OkStatus();
    case ValueKind::kOp:
    case ValueKind::kSymbolic:
      if (std::find(out->begin(), out->end(), v.node()) == out->end()) {
        out->push_back(v.node());
      }
      return absl::OkStatus();
    case ValueKind::kTuple:
    case ValueKind::kList:
      for (const Value& i : v.items()) {
        RN_RETURN_IF_ERROR(CollectNodes(i, span, out));
      }
      return absl::OkStatus();
    case ValueKind::kRecord:
      for (const Field& f : v.fields()) {
        RN_RETURN_IF_ERROR(CollectNodes(f.second, span, out));
      }
      return absl::OkStatus();
    default:
      return ErrorAt(span,
                     StrCat("expected graph ops or symbolic tensors, got ",
                            DescribeValue(v)));
  }
}

// ---- ApplyOp
// ------------------------------------------------------------------

absl::Status Interpreter::Promote(const std::string& op,
                                  std::vector<Value>* inputs,
                                  const OpSite& site) {
  const std::vector<int>* group = PromotionGroup(op);
  if (group == nullptr) return absl::OkStatus();
  std::vector<int> idx;
  if (!group->empty() && (*group)[0] == -1) {
    for (size_t i = 0; i < inputs->size(); ++i) idx.push_back(i);
  } else {
    for (int i : *group) {
      if (i < static_cast<int>(inputs->size())) idx.push_back(i);
    }
  }
  std::optional<DType> target;
  for (int i : idx) {
    const Value& v = (*inputs)[i];
    if (v.is_tensor() && !(v.is_concrete() && v.literal())) {
      target = v.tensor_dtype();
      break;
    }
  }
  if (!target) {
    // Only literals: ints meet floats as floats (`1 + 2.5`).
    for (int i : idx) {
      DType d = (*inputs)[i].tensor_dtype();
      if (!target || (IsFloating(d) && !IsFloating(*target)) ||
          (d == DType::kI64 && *target == DType::kI32) ||
          (d == DType::kF64 && *target == DType::kF32)) {
        target = d;
      }
    }
  }
  if (!target) return absl::OkStatus();
  for (int i : idx) {
    Value& v = (*inputs)[i];
    if (!v.is_concrete() || !v.literal() || v.tensor().dtype() == *target) {
      continue;
    }
    const DType from = v.tensor().dtype();
    if (*target == DType::kBool || (IsFloating(from) && !IsFloating(*target))) {
      return ErrorAt(
          site.span,
          StrCat(op, ": dtypes differ: ", DTypeName(*target), " and ",
                 DTypeName(from), " (a ", IsFloating(from) ? "float" : "number",
                 " literal); convert with cast(x, ", DTypeName(from), ")"),
          site.caret);
    }
    RN_ASSIGN_OR_RETURN(Tensor t, Cast(v.tensor(), *target));
    v = Value::Concrete(std::move(t), true);
  }
  return absl::OkStatus();
}

absl::StatusOr<Value> Interpreter::ApplyOp(const std::string& op,
                                           std::vector<Value> inputs,
                                           AttrMap attrs, const OpSite& site) {
  RN_ASSIGN_OR_RETURN(std::vector<Value> out,
                      ApplyOpN(op, std::move(inputs), std::move(attrs), site));
  if (out.size() == 1) return out[0];
  if (out.empty()) return Value();
  return Value::Tuple(std::move(out));
}

absl::StatusOr<std::vector<Value>> Interpreter::ApplyOpN(
    const std::string& op, std::vector<Value> inputs, AttrMap attrs,
    const OpSite& site, std::vector<Node*> control) {
  const OpDef* def = OpRegistry::Global().Find(op);
  if (def == nullptr) {
    return ErrorAt(site.span, StrCat(op, " is not implemented yet"),
                   site.caret);
  }
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (inputs[i].is_tensor()) continue;
    const std::string what = i < def->inputs.size()
                                 ? StrCat(op, ": input '", def->inputs[i], "'")
                                 : StrCat(op, ": input ", i);
    RN_ASSIGN_OR_RETURN(inputs[i], ToTensor(inputs[i], site.span, what));
  }
  RN_RETURN_IF_ERROR(Promote(op, &inputs, site));
  bool all_concrete = true, all_literal = !inputs.empty();
  for (const Value& v : inputs) {
    if (!v.is_concrete()) all_concrete = false;
    if (!(v.is_concrete() && v.literal())) all_literal = false;
  }
  // Ops without outputs only make sense in the graph (noop, group).
  const bool graph_only = op == "noop" || !control.empty();
  if (all_concrete && !graph_only) {
    std::vector<Tensor> tensors;
    for (const Value& v : inputs) tensors.push_back(v.tensor());
    const std::string path = ScopePath(false);
    const std::string base = site.name_hint.empty() ? op : site.name_hint;
    absl::StatusOr<std::vector<Tensor>> out =
        eager_->Execute(op, std::move(tensors), std::move(attrs),
                        path.empty() ? base : path + "/" + base, site.span);
    if (!out.ok()) {
      lang::Diagnostic d;
      d.message = std::string(ToStd(out.status().message()));
      d.span = site.span;
      d.caret_col = site.caret;
      return DiagStatus(std::move(d));
    }
    std::vector<Value> values;
    // Arithmetic on bare literals gives a bare literal (`x * (1.0 / 3.0)`).
    const bool literal = all_literal && GivesLiteral(op);
    for (Tensor& t : *out)
      values.push_back(Value::Concrete(std::move(t), literal));
    return values;
  }
  NodeSpec spec;
  spec.op = op;
  spec.attrs = std::move(attrs);
  spec.control_inputs = std::move(control);
  for (size_t i = 0; i < inputs.size(); ++i) {
    const Value& v = inputs[i];
    // A var or state used as a tensor is read here, where the script reads
    // it; only an op's `ref` input takes the variable itself.
    const bool ref = i < def->inputs.size() && def->inputs[i] == "ref";
    if (v.is_symbolic() && IsVariableNode(v.out().node) && !ref) {
      RN_ASSIGN_OR_RETURN(NodeOut r, ReadVariable(v.out().node, site.span));
      spec.inputs.push_back(r);
      continue;
    }
    RN_ASSIGN_OR_RETURN(NodeOut o, ToGraph(v, site.span));
    spec.inputs.push_back(o);
  }
  spec.name = NewNodeName(site.name_hint.empty() ? op : site.name_hint);
  RN_ASSIGN_OR_RETURN(Node * node, AddNode(std::move(spec), site, inputs));
  std::vector<Value> values;
  if (node->num_outputs() == 0) {
    values.push_back(Value::Op(node));
  } else {
    for (int i = 0; i < node->num_outputs(); ++i) {
      values.push_back(Value::Symbolic({node, i}));
    }
  }
  return values;
}

// ---- declarations
// ----------------------------------------------------------------

absl::StatusOr<Shape> Interpreter::EvalTypeShape(const lang::TypeAnnotation& t,
                                                 DType* dtype) {
  std::optional<DType> d = DTypeFromName(t.dtype);
  if (!d) {
    std::vector<std::string> names;
    for (DType x : kAllDTypes) names.emplace_back(DTypeName(x));
    lang::Diagnostic diag;
    diag.message = StrCat("unknown dtype '", t.dtype, "'");
    diag.span = t.span;
    std::string best = ClosestName(t.dtype, names);
    diag.notes.push_back(Note(
        SourceSpan{}, best.empty()
                          ? "dtypes are f16 bf16 f32 f64 i8 u8 i32 i64 bool"
                          : StrCat("did you mean '", best, "'?")));
    return DiagStatus(std::move(diag));
  }
  *dtype = *d;
  if (!t.has_dims) return Shape::UnknownRank();
  std::vector<int64_t> dims;
  for (const lang::ExprPtr& e : t.dims) {
    if (e == nullptr) {
      dims.push_back(kUnknownDim);
      continue;
    }
    RN_ASSIGN_OR_RETURN(Value v, Eval(*e));
    std::optional<int64_t> n = v.AsInt();
    if (!n || v.tensor().rank() != 0 || *n < 0) {
      return ErrorAt(e->span,
                     StrCat("a dimension must be a concrete integer >= 0 or "
                            "'?', got ",
                            v.is_concrete() ? v.tensor().ValuesString()
                                            : DescribeValue(v)));
    }
    dims.push_back(*n);
  }
  return Shape(dims);
}

absl::Status Interpreter::DeclareInput(const lang::InputStmt& s) {
  DType dtype;
  RN_ASSIGN_OR_RETURN(Shape shape, EvalTypeShape(s.type, &dtype));
  const SourceSpan& decl = s.span;
  OpSite site{decl, 0, ""};
  NodeSpec spec;
  spec.attrs = {{"dtype", dtype}, {"shape", shape}};
  std::vector<Value> inputs;
  if (s.default_value) {
    RN_ASSIGN_OR_RETURN(Value v, Eval(*s.default_value));
    RN_ASSIGN_OR_RETURN(v, ToTensor(v, s.default_value->span, "the default"));
    if (v.tensor_dtype() != dtype) {
      if (v.is_symbolic() || !v.literal()) {
        return ErrorAt(
            s.default_value->span,
            StrCat("the default is ", DescribeValue(v), " but input '", s.name,
                   "' is ", DTypeName(dtype)));
      }
      RN_ASSIGN_OR_RETURN(Tensor t, Cast(v.tensor(), dtype));
      v = Value::Concrete(t);
    }
    RN_ASSIGN_OR_RETURN(NodeOut o, ToGraph(v, s.default_value->span));
    spec.op = "placeholder_with_default";
    spec.inputs = {o};
    inputs.push_back(v);
  } else {
    spec.op = "placeholder";
  }
  spec.name = NewNodeName(s.name);
  RN_ASSIGN_OR_RETURN(Node * node, AddNode(std::move(spec), site, inputs));
  env_->Define(s.name,
               Binding{Value::Symbolic({node, 0}), BindingKind::kInput, decl});
  return absl::OkStatus();
}

absl::Status Interpreter::DeclareVar(const lang::VarStmt& s) {
  const char* what = s.is_state ? "state" : "var";
  RN_ASSIGN_OR_RETURN(Value init, Eval(*s.init));
  RN_ASSIGN_OR_RETURN(
      init, ToTensor(init, s.init->span,
                     StrCat("the initializer of ", what, " '", s.name, "'")));
  if (s.type) {
    DType dtype;
    RN_ASSIGN_OR_RETURN(Shape shape, EvalTypeShape(*s.type, &dtype));
    if (init.tensor_dtype() != dtype) {
      if (init.is_concrete()) {
        RN_ASSIGN_OR_RETURN(Tensor t, Cast(init.tensor(), dtype));
        init = Value::Concrete(t);
      } else {
        return ErrorAt(
            s.init->span,
            StrCat(what, " '", s.name, "' is declared ", DTypeName(dtype),
                   " but its initializer is ", DescribeValue(init)));
      }
    }
    // `var b: f32[10] = 0.0` broadcasts the initializer to the declared
    // shape.
    if (!shape.unknown_rank() && shape.IsFullyDefined() &&
        !init.tensor_shape().unknown_rank() && init.tensor_shape() != shape) {
      RN_ASSIGN_OR_RETURN(
          init, ApplyOp("broadcast_to",
                        {init, Value::Concrete(Tensor::OfDims(shape.dims()))},
                        {}, OpSite(s.init->span)));
    }
    if (!shape.IsCompatibleWith(init.tensor_shape()) &&
        !(init.tensor_shape().unknown_rank())) {
      return ErrorAt(s.init->span,
                     StrCat(what, " '", s.name, "' is declared ",
                            DTypeName(dtype), shape.ToString(),
                            " but its initializer is ", DescribeValue(init)));
    }
  }
  const bool trainable = !s.is_state && IsFloating(init.tensor_dtype());
  RN_ASSIGN_OR_RETURN(Value v, MakeVariable(s.name, init, trainable, s.span));
  env_->Define(
      s.name,
      Binding{v, s.is_state ? BindingKind::kState : BindingKind::kVar, s.span});
  return absl::OkStatus();
}

absl::StatusOr<Value> Interpreter::MakeVariable(const std::string& name,
                                                const Value& init,
                                                bool trainable,
                                                const SourceSpan& span) {
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
    c.device = device_.ToString();
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

absl::StatusOr<Value> Interpreter::GlobalStep(const SourceSpan& span) {
  if (!global_step_.is_none()) return global_step_;
  std::vector<ScopeFrame> scopes;
  std::swap(scopes, scopes_);
  DeviceSpec device;
  std::swap(device, device_);
  std::vector<Node*> control;
  std::swap(control, control_);
  absl::StatusOr<Value> v = MakeVariable(
      "global_step", Value::Concrete(Tensor::Scalar<int64_t>(0)), false, span);
  std::swap(scopes, scopes_);
  std::swap(device, device_);
  std::swap(control, control_);
  if (v.ok()) global_step_ = *v;
  return v;
}

absl::StatusOr<Value> Interpreter::Assign(const std::string& op,
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
    RN_RETURN_IF_ERROR(Promote(op, &pair, site));
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

// ---- indexing
// -------------------------------------------------------------------

absl::StatusOr<Value> Interpreter::Index(const Value& target,
                                         const std::vector<Sub>& subs,
                                         const OpSite& site) {
  // A concrete integer index or slice bound; `absent` when none.
  auto int_of = [&](const Value& v, const SourceSpan& span,
                    std::optional<int64_t>* out) -> absl::Status {
    if (v.is_none()) return absl::OkStatus();
    std::optional<int64_t> i = v.AsInt();
    if (!i || v.tensor().rank() != 0) {
      return ErrorAt(span, StrCat("an index must be a concrete integer, got ",
                                  DescribeValue(v)));
    }
    *out = *i;
    return absl::OkStatus();
  };
  const bool host = target.is_sequence() ||
                    target.kind() == ValueKind::kString ||
                    target.kind() == ValueKind::kDataset ||
                    target.kind() == ValueKind::kRecord;
  if (host) {
    if (subs.size() != 1) {
      return ErrorAt(site.span,
                     StrCat(DescribeValue(target), " takes a single index"));
    }
    const Sub& s = subs[0];
    if (target.kind() == ValueKind::kRecord) {
      if (s.is_slice || s.index.kind() != ValueKind::kString) {
        return ErrorAt(s.span, "a record is indexed by a field name string");
      }
      if (const Value* v = target.FindField(s.index.str())) return *v;
      return ErrorAt(s.span,
                     StrCat("the record has no field '", s.index.str(), "'"));
    }
    int64_t n = target.kind() == ValueKind::kString ? target.str().size()
                : target.kind() == ValueKind::kDataset
                    ? target.dataset()->rows
                    : static_cast<int64_t>(target.items().size());
    std::vector<int64_t> picked;
    bool single = false;
    if (!s.is_slice) {
      std::optional<int64_t> i;
      RN_RETURN_IF_ERROR(int_of(s.index, s.span, &i));
      if (!i) return ErrorAt(s.span, "an index is needed");
      int64_t k = *i < 0 ? *i + n : *i;
      if (k < 0 || k >= n) {
        return ErrorAt(s.span, StrCat("index ", *i, " is out of range for ",
                                      DescribeValue(target), " of length ", n));
      }
      picked.push_back(k);
      single = true;
    } else {
      std::optional<int64_t> lo, hi, step;
      RN_RETURN_IF_ERROR(int_of(s.lo, s.span, &lo));
      RN_RETURN_IF_ERROR(int_of(s.hi, s.span, &hi));
      RN_RETURN_IF_ERROR(int_of(s.step, s.span, &step));
      int64_t st = step.value_or(1);
      if (st == 0) return ErrorAt(s.span, "a slice step cannot be zero");
      auto norm = [n](int64_t i) { return i < 0 ? i + n : i; };
      if (st > 0) {
        int64_t b = lo ? std::clamp<int64_t>(norm(*lo), 0, n) : 0;
        int64_t e = hi ? std::clamp<int64_t>(norm(*hi), 0, n) : n;
        for (int64_t i = b; i < e; i += st) picked.push_back(i);
      } else {
        int64_t b = lo ? std::clamp<int64_t>(norm(*lo), -1, n - 1) : n - 1;
        int64_t e = hi ? std::clamp<int64_t>(norm(*hi), -1, n - 1) : -1;
        for (int64_t i = b; i > e; i += st) picked.push_back(i);
      }
    }
    if (target.kind() == ValueKind::kString) {
      std::string out;
      for (int64_t i : picked) out += target.str()[i];
      return Value::String(out);
    }
    if (target.kind() == ValueKind::kDataset) {
      auto d = std::make_shared<Dataset>();
      d->rows = static_cast<int64_t>(picked.size());
      for (const auto& [name, t] : target.dataset()->columns) {
        d->columns.emplace_back(name, GatherRows(t, picked));
      }
      if (single) {
        Value rec = d->AsRecord();
        std::vector<Field> fields;
        for (const Field& f : rec.fields()) {
          const Tensor& t = f.second.tensor();
          std::vector<int64_t> dims(t.shape().dims().begin() + 1,
                                    t.shape().dims().end());
          RN_ASSIGN_OR_RETURN(Tensor r, t.Reshaped(Shape(dims)));
          fields.emplace_back(f.first, Value::Concrete(r));
        }
        return Value::Record(std::move(fields));
      }
      return Value::OfDataset(std::move(d));
    }
    if (single) return target.items()[picked[0]];
    std::vector<Value> items;
    for (int64_t i : picked) items.push_back(target.items()[i]);
    return target.kind() == ValueKind::kTuple ? Value::Tuple(std::move(items))
                                              : Value::List(std::move(items));
  }
  if (!target.is_tensor()) {
    return ErrorAt(site.span, StrCat("cannot index ", DescribeValue(target)));
  }
  // One element of a concrete tensor (`x.shape[1]`), picked here rather
  // than by a strided_slice kernel; anything else, and an index out of
  // range, takes the general path below.
  if (target.is_concrete() &&
      static_cast<int>(subs.size()) == target.tensor().rank()) {
    const Tensor& t = target.tensor();
    int64_t offset = 0;
    bool element = true;
    for (size_t k = 0; k < subs.size() && element; ++k) {
      const Sub& s = subs[k];
      std::optional<int64_t> i;
      if (!s.is_slice && s.index.is_concrete() &&
          s.index.tensor().rank() == 0) {
        i = s.index.AsInt();
      }
      const int64_t n = t.shape().dim(static_cast<int>(k));
      element = i && *i >= -n && *i < n;
      if (element) offset = offset * n + (*i < 0 ? *i + n : *i);
    }
    if (element) {
      Tensor out(t.dtype(), Shape{});
      const size_t size = DTypeSize(t.dtype());
      std::memcpy(out.raw_data(),
                  static_cast<const char*>(t.raw_data()) + offset * size, size);
      return Value::Concrete(std::move(out));
    }
  }
  // A symbolic scalar index: dynamic_index.
  if (subs.size() == 1 && !subs[0].is_slice && subs[0].index.is_symbolic()) {
    return ApplyOp("dynamic_index", {target, subs[0].index}, {}, site);
  }
  // Symbolic subscripts anywhere (`t[k:k+2]`, `t[:, k]`, `t[k, 1]`): the
  // concrete ones first, with the symbolic axes kept whole; then each
  // symbolic one by a gather on its axis, the last first, so the axes
  // before it keep their positions.
  auto symbolic = [](const Sub& s) {
    return s.index.is_symbolic() || s.lo.is_symbolic() || s.hi.is_symbolic() ||
           s.step.is_symbolic();
  };
  if (std::any_of(subs.begin(), subs.end(), symbolic)) {
    std::vector<Sub> rest = subs;
    std::vector<size_t> dynamic;
    bool all_whole = true;
    for (size_t k = 0; k < subs.size(); ++k) {
      if (symbolic(subs[k])) {
        rest[k] = Sub{.is_slice = true, .span = subs[k].span};
        dynamic.push_back(k);
      } else {
        all_whole = all_whole && subs[k].is_slice && subs[k].lo.is_none() &&
                    subs[k].hi.is_none() && subs[k].step.is_none();
      }
    }
    Value x = target;
    if (!all_whole) {
      RN_ASSIGN_OR_RETURN(x, Index(target, rest, OpSite(site.span)));
    }
    for (auto it = dynamic.rbegin(); it != dynamic.rend(); ++it) {
      int64_t axis = 0;  // the axis's position once scalar indices are gone
      for (size_t j = 0; j < *it; ++j) axis += rest[j].is_slice ? 1 : 0;
      RN_ASSIGN_OR_RETURN(x, DynamicSubscript(x, subs[*it], axis, site));
    }
    return x;
  }
  std::vector<int64_t> begin, end, strides;
  int64_t begin_mask = 0, end_mask = 0, shrink = 0;
  for (size_t k = 0; k < subs.size(); ++k) {
    const Sub& s = subs[k];
    if (!s.is_slice) {
      if (s.index.is_concrete() && s.index.tensor().rank() > 0) {
        return ErrorAt(s.span,
                       "indexing with a tensor of indices is not supported; "
                       "use gather(x, indices)");
      }
      std::optional<int64_t> i;
      RN_RETURN_IF_ERROR(int_of(s.index, s.span, &i));
      if (!i) return ErrorAt(s.span, "an index is needed");
      begin.push_back(*i);
      end.push_back(*i + 1);
      strides.push_back(1);
      shrink |= int64_t{1} << k;
      continue;
    }
    std::optional<int64_t> lo, hi, step;
    RN_RETURN_IF_ERROR(int_of(s.lo, s.span, &lo));
    RN_RETURN_IF_ERROR(int_of(s.hi, s.span, &hi));
    RN_RETURN_IF_ERROR(int_of(s.step, s.span, &step));
    if (step && *step == 0) {
      return ErrorAt(s.span, "a slice step cannot be zero");
    }
    begin.push_back(lo.value_or(0));
    end.push_back(hi.value_or(0));
    strides.push_back(step.value_or(1));
    if (!lo) begin_mask |= int64_t{1} << k;
    if (!hi) end_mask |= int64_t{1} << k;
  }
  AttrMap attrs = {{"begin", begin},       {"end", end},
                   {"strides", strides},   {"begin_mask", begin_mask},
                   {"end_mask", end_mask}, {"shrink_axis_mask", shrink}};
  return ApplyOp("strided_slice", {target}, std::move(attrs), site);
}

absl::StatusOr<Value> Interpreter::DynamicSubscript(const Value& x,
                                                    const Sub& s, int64_t axis,
                                                    const OpSite& site) {
  const OpSite at(s.span);
  std::optional<int64_t> step;
  if (s.step.is_symbolic()) {
    return ErrorAt(s.span, "a slice step must be a concrete integer");
  }
  if (!s.step.is_none()) {
    step = s.step.AsInt();
    if (!step || s.step.tensor().rank() != 0) {
      return ErrorAt(s.span, StrCat("a slice step must be an integer, got ",
                                    DescribeValue(s.step)));
    }
    if (*step == 0) return ErrorAt(s.span, "a slice step cannot be zero");
  }
  // Indices compute in i64 when any bound is i64, else in i32.
  DType dtype = DType::kI32;
  for (const Value* v : {&s.index, &s.lo, &s.hi}) {
    if (v->is_none()) continue;
    if (!v->is_tensor() || v->tensor_shape().rank() != 0 ||
        !IsInteger(v->tensor_dtype())) {
      return ErrorAt(s.span, StrCat("an index must be an integer scalar, got ",
                                    DescribeValue(*v)));
    }
    if (v->tensor_dtype() == DType::kI64) dtype = DType::kI64;
  }
  auto cast = [&](const Value& v) -> absl::StatusOr<Value> {
    if (v.tensor_dtype() == dtype) return v;
    return ApplyOp("cast", {v}, {{"dtype", dtype}}, at);
  };
  // The axis's length: static when known, else from shape_of at run time.
  const Shape shape = x.tensor_shape();
  if (shape.unknown_rank() || axis >= shape.rank()) {
    return ErrorAt(s.span, StrCat("too many indices for ", DescribeValue(x)));
  }
  Value dim;
  if (shape.dim(axis) >= 0) {
    dim = Value::Concrete(dtype == DType::kI64
                              ? Tensor::Scalar<int64_t>(shape.dim(axis))
                              : Tensor::Scalar<int32_t>(shape.dim(axis)));
  } else {
    RN_ASSIGN_OR_RETURN(Value shape_of,
                        ApplyOp("shape_of", {x}, {{"out_type", dtype}}, at));
    RN_ASSIGN_OR_RETURN(
        dim, Index(shape_of, {Sub{.index = Value::Int(axis, false)}}, at));
  }
  // Python's rule: a negative index counts from the end.
  auto from_end = [&](const Value& v) -> absl::StatusOr<Value> {
    RN_ASSIGN_OR_RETURN(Value i, cast(v));
    RN_ASSIGN_OR_RETURN(Value neg, ApplyOp("less", {i, Value::Int(0)}, {}, at));
    RN_ASSIGN_OR_RETURN(Value shifted, ApplyOp("add", {i, dim}, {}, at));
    return ApplyOp("where", {neg, shifted, i}, {}, at);
  };
  AttrMap axis_attr = {{"axis", axis}};
  if (!s.is_slice) {
    RN_ASSIGN_OR_RETURN(Value i, from_end(s.index));
    return ApplyOp("gather", {x, i}, std::move(axis_attr), site);
  }
  // A slice gathers range(lo, hi, step), its bounds clamped as in Python:
  // to [0, dim] going forward, to [-1, dim - 1] going backward.
  const int64_t st = step.value_or(1);
  RN_ASSIGN_OR_RETURN(Value last, ApplyOp("sub", {dim, Value::Int(1)}, {}, at));
  const Value low = st > 0 ? Value::Int(0) : Value::Int(-1);
  const Value high = st > 0 ? dim : last;
  auto bound = [&](const Value& v,
                   const Value& absent) -> absl::StatusOr<Value> {
    if (v.is_none()) return absent;
    RN_ASSIGN_OR_RETURN(Value i, from_end(v));
    RN_ASSIGN_OR_RETURN(i, ApplyOp("maximum", {i, low}, {}, at));
    return ApplyOp("minimum", {i, high}, {}, at);
  };
  RN_ASSIGN_OR_RETURN(Value lo, bound(s.lo, st > 0 ? Value::Int(0) : last));
  RN_ASSIGN_OR_RETURN(Value hi, bound(s.hi, st > 0 ? dim : Value::Int(-1)));
  RN_ASSIGN_OR_RETURN(Value delta, cast(Value::Int(st)));
  RN_ASSIGN_OR_RETURN(lo, cast(lo));
  RN_ASSIGN_OR_RETURN(hi, cast(hi));
  RN_ASSIGN_OR_RETURN(Value ids, ApplyOp("range", {lo, hi, delta}, {}, at));
  return ApplyOp("gather", {x, ids}, std::move(axis_attr), site);
}

// ---- iteration
// ------------------------------------------------------------------

absl::StatusOr<std::unique_ptr<Iterator>> Interpreter::Iterate(
    const Value& v, const SourceSpan& span) {
  switch (v.kind()) {
    case ValueKind::kRange:
      return std::unique_ptr<Iterator>(
          new RangeIterator(v.range_start(), v.range_stop()));
    case ValueKind::kTuple:
    case ValueKind::kList:
      return std::unique_ptr<Iterator>(new VectorIterator(v.items()));
    case ValueKind::kTensor:
      if (v.tensor().rank() == 0) {
        return ErrorAt(span, "cannot iterate over a scalar");
      }
      return std::unique_ptr<Iterator>(new RowIterator(v.tensor(), this));
    case ValueKind::kDataset:
      return std::unique_ptr<Iterator>(new DatasetIterator(v.dataset()));
    case ValueKind::kIterable:
      return v.iterable()->Begin();
    case ValueKind::kRecord: {
      std::vector<Value> items;
      for (const Field& f : v.fields()) {
        items.push_back(Value::Tuple({Value::String(f.first), f.second}));
      }
      return std::unique_ptr<Iterator>(new VectorIterator(std::move(items)));
    }
    default:
      return ErrorAt(span, StrCat("cannot iterate over ", DescribeValue(v)));
  }
}

int64_t Interpreter::IterationCount(const Value& v) {
  switch (v.kind()) {
    case ValueKind::kRange:
      return std::max<int64_t>(0, v.range_stop() - v.range_start());
    case ValueKind::kTuple:
    case ValueKind::kList:
      return static_cast<int64_t>(v.items().size());
    case ValueKind::kTensor:
      return v.tensor().rank() == 0 ? -1 : v.tensor().dim(0);
    case ValueKind::kDataset:
      return v.dataset()->rows;
    case ValueKind::kIterable:
      return v.iterable()->Size();
    case ValueKind::kRecord:
      return static_cast<int64_t>(v.fields().size());
    default:
      return -1;
  }
}

// ---- run
// ----------------------------------------------------------------------

Session& Interpreter::session() {
  if (!session_) {
    session_ = std::make_unique<Session>(
        graph_,
        SessionOptions{.num_threads = options_.threads, .seed = options_.seed});
  }
  return *session_;
}

absl::StatusOr<Value> Interpreter::RunFetches(const Value& fetches,
                                              const Value* feeds,
                                              const lang::RunExpr& e) {
  ++runs_;
  std::vector<NodeOut> outs;
  std::vector<Node*> targets;
  // Collect what to fetch, depth first; Rebuild walks the same way.
  std::function<absl::Status(const Value&)> collect =
      [&](const Value& v) -> absl::Status {
    switch (v.kind()) {
      case ValueKind::kSymbolic:
        outs.push_back(v.out());
        return absl::OkStatus();
      case ValueKind::kOp:
        targets.push_back(v.node());
        return absl::OkStatus();
      case ValueKind::kTuple:
      case ValueKind::kList:
        for (const Value& i : v.items()) RN_RETURN_IF_ERROR(collect(i));
        return absl::OkStatus();
      case ValueKind::kRecord:
        for (const Field& f : v.fields()) RN_RETURN_IF_ERROR(collect(f.second));
        return absl::OkStatus();
      case ValueKind::kTensor:
      case ValueKind::kNone:
        return absl::OkStatus();
      default:
        return ErrorAt(e.fetches->span,
                       StrCat("run fetches tensors, ops, and tuples, lists "
                              "or records of them; got ",
                              DescribeValue(v)));
    }
  };
  RN_RETURN_IF_ERROR(collect(fetches));

  Session::Feeds feed_list;
  if (feeds != nullptr) {
    Value record = *feeds;
    if (record.kind() == ValueKind::kDataset) {
      record = record.dataset()->AsRecord();
    }
    if (record.kind() != ValueKind::kRecord) {
      return ErrorAt(e.feeds->span,
                     StrCat("the feeds of run must be a record such as {x: "
                            "value}, a dataset or a batch; got ",
                            DescribeValue(record)));
    }
    const lang::RecordExpr* literal =
        e.feeds->kind == lang::ExprKind::kRecord
            ? static_cast<const lang::RecordExpr*>(e.feeds.get())
            : nullptr;
    for (size_t i = 0; i < record.fields().size(); ++i) {
      const auto& [name, value] = record.fields()[i];
      const SourceSpan span = literal && i < literal->fields.size()
                                  ? literal->fields[i].span
                                  : e.feeds->span;
      Binding* b = env_->Find(name);
      if (b == nullptr) {
        absl::Status st = UnknownName(name, span);
        lang::Diagnostic d = ToDiagnostic(st, span);
        d.message = StrCat("cannot feed '", name,
                           "': there is no input of "
                           "that name here");
        return DiagStatus(std::move(d));
      }
      if (!b->value.is_symbolic()) {
        lang::Diagnostic d;
        d.message =
            StrCat("cannot feed '", name, "': it is ", DescribeValue(b->value),
                   ", not a symbolic tensor such as an input");
        d.span = span;
        if (b->span.known()) {
          d.notes.push_back(Note(b->span, StrCat(name, " declared here")));
        }
        return DiagStatus(std::move(d));
      }
      const NodeOut target = b->value.out();
      const DType dtype = b->value.tensor_dtype();
      const Shape shape = b->value.tensor_shape();
      absl::StatusOr<Value> tv =
          ToTensor(value, span, StrCat("the feed for '", name, "'"));
      if (!tv.ok()) return tv.status();
      if (tv->is_symbolic()) {
        return ErrorAt(
            span, StrCat("the feed for '", name, "' must be concrete, got ",
                         DescribeValue(*tv)));
      }
      Tensor t = tv->tensor();
      if (t.dtype() != dtype) {
        if ((t.dtype() == DType::kBool) != (dtype == DType::kBool)) {
          return ErrorAt(
              span, StrCat("the feed for '", name, "' is ", DescribeValue(*tv),
                           " but '", name, "' is ", DTypeName(dtype),
                           shape.ToString()));
        }
        RN_ASSIGN_OR_RETURN(t, Cast(t, dtype));
      }
      if (!shape.IsCompatibleWith(t.shape())) {
        return ErrorAt(span,
                       StrCat("the feed for '", name, "' has shape ",
                              t.shape().ToString(), " but '", name, "' is ",
                              DTypeName(dtype), shape.ToString()));
      }
      feed_list.emplace_back(target, std::move(t));
    }
  }

  std::vector<Tensor> results;
  if (check_mode()) {
    // Find a placeholder the fetches need that is not fed.
    std::set<const Node*> fed;
    for (const auto& [o, t] : feed_list) fed.insert(o.node);
    std::set<const Node*> seen;
    std::vector<const Node*> stack;
    for (const NodeOut& o : outs) stack.push_back(o.node);
    for (Node* t : targets) stack.push_back(t);
    const Node* missing = nullptr;
    while (!stack.empty()) {
      const Node* n = stack.back();
      stack.pop_back();
      if (fed.count(n) || !seen.insert(n).second) continue;
      if (n->op() == "placeholder" &&
          (missing == nullptr || n->id() < missing->id())) {
        missing = n;
      }
      for (const NodeOut& in : n->inputs()) stack.push_back(in.node);
      for (const Node* c : n->control_inputs()) stack.push_back(c);
    }
    if (missing != nullptr) {
      lang::Diagnostic d;
      d.message = StrCat("missing feed for input '", missing->name(), "'");
      d.span = e.span;
      d.notes.push_back(
          Note(missing->span(), StrCat(missing->name(), " declared here")));
      return DiagStatus(std::move(d));
    }
    for (const NodeOut& o : outs) {
      results.push_back(Placeholder(o.node->output_dtype(o.index),
                                    o.node->output_shape(o.index)));
    }
  } else {
    absl::StatusOr<std::vector<Tensor>> r =
        session().Run(feed_list, outs, targets, &interrupted_);
    if (!r.ok() && r.status().code() == absl::StatusCode::kCancelled) {
      interrupted_ = false;  // this interruption is consumed here
      return ErrorAt(e.span, "interrupted");
    }
    if (!r.ok()) {
      const std::string msg(ToStd(r.status().message()));
      std::optional<std::string> node = NodeNameOf(r.status());
      if (absl::StartsWith(msg, "missing feed for input '") && node) {
        lang::Diagnostic d;
        d.message = msg;
        d.span = e.span;
        if (const Node* n = graph_->FindNode(*node)) {
          d.notes.push_back(
              Note(n->span(), StrCat(n->name(), " declared here")));
        }
        return DiagStatus(std::move(d));
      }
      lang::Diagnostic d = ToDiagnostic(r.status(), e.span);
      if (d.span.line != e.span.line || d.span.col != e.span.col ||
          d.span.file != e.span.file) {
        d.notes.push_back(Note(e.span, "while running this"));
      }
      return DiagStatus(std::move(d));
    }
    results = std::move(*r);
  }

  size_t next = 0;
  std::function<Value(const Value&)> rebuild = [&](const Value& v) -> Value {
    switch (v.kind()) {
      case ValueKind::kSymbolic:
        return Value::Concrete(results[next++]);
      case ValueKind::kOp:
        return Value();
      case ValueKind::kTuple:
      case ValueKind::kList: {
        std::vector<Value> items;
        for (const Value& i : v.items()) items.push_back(rebuild(i));
        return v.kind() == ValueKind::kTuple ? Value::Tuple(std::move(items))
                                             : Value::List(std::move(items));
      }
      case ValueKind::kRecord: {
        std::vector<Field> fields;
        for (const Field& f : v.fields()) {
          fields.emplace_back(f.first, rebuild(f.second));
        }
        return Value::Record(std::move(fields));
      }
      default:
        return v;
    }
  };
  return rebuild(fetches);
}

}  // namespace runnel::interp
