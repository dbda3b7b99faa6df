#include "interpreter/control_flow.h"

#include <fmt/ranges.h>

#include <optional>

#include "base/status_macros.h"
#include "base/strings.h"
#include "interpreter/diag.h"

namespace runnel::interp {

absl::Status FlattenTensors(const Value& v, const SourceSpan& span,
                            std::string_view what, std::vector<Value>* out) {
  switch (v.kind()) {
    case ValueKind::kTensor:
    case ValueKind::kSymbolic:
      out->push_back(v);
      return absl::OkStatus();
    case ValueKind::kTuple:
    case ValueKind::kList:
      for (const Value& item : v.items()) {
        RN_RETURN_IF_ERROR(FlattenTensors(item, span, what, out));
      }
      return absl::OkStatus();
    case ValueKind::kRecord:
      for (const Field& f : v.fields()) {
        RN_RETURN_IF_ERROR(FlattenTensors(f.second, span, what, out));
      }
      return absl::OkStatus();
    default:
      return ErrorAt(span, StrCat(what,
                                  " must be tensors, or tuples, lists "
                                  "or records of them; got ",
                                  DescribeValue(v)));
  }
}

namespace {

Value UnflattenFrom(const Value& like, const std::vector<Value>& leaves,
                    size_t* pos) {
  switch (like.kind()) {
    case ValueKind::kTuple:
    case ValueKind::kList: {
      std::vector<Value> items;
      for (const Value& item : like.items())
        items.push_back(UnflattenFrom(item, leaves, pos));
      return like.kind() == ValueKind::kTuple ? Value::Tuple(std::move(items))
                                              : Value::List(std::move(items));
    }
    case ValueKind::kRecord: {
      std::vector<Field> fields;
      for (const Field& f : like.fields())
        fields.push_back({f.first, UnflattenFrom(f.second, leaves, pos)});
      return Value::Record(std::move(fields));
    }
    default:
      return leaves[(*pos)++];
  }
}

// "(f32, (i32, f32))": the structure and dtypes, for errors.
std::string Structure(const Value& v) {
  switch (v.kind()) {
    case ValueKind::kTuple:
    case ValueKind::kList: {
      std::vector<std::string> parts;
      for (const Value& item : v.items()) parts.push_back(Structure(item));
      const bool tuple = v.kind() == ValueKind::kTuple;
      return StrCat(tuple ? "(" : "[",
                    fmt::format("{}", fmt::join(parts, ", ")),
                    tuple ? ")" : "]");
    }
    case ValueKind::kRecord: {
      std::vector<std::string> parts;
      for (const Field& f : v.fields())
        parts.push_back(StrCat(f.first, ": ", Structure(f.second)));
      return StrCat("{", fmt::format("{}", fmt::join(parts, ", ")), "}");
    }
    case ValueKind::kTensor:
    case ValueKind::kSymbolic:
      return std::string(DTypeName(v.tensor_dtype()));
    default:
      return DescribeValue(v);
  }
}

// Whether two structures have the same shape of tuples, lists and records.
bool SameStructure(const Value& a, const Value& b) {
  if (a.is_tensor() && b.is_tensor()) return true;
  if (a.kind() != b.kind()) return false;
  if (a.is_sequence()) {
    if (a.items().size() != b.items().size()) return false;
    for (size_t i = 0; i < a.items().size(); ++i) {
      if (!SameStructure(a.items()[i], b.items()[i])) return false;
    }
    return true;
  }
  if (a.kind() == ValueKind::kRecord) {
    if (a.fields().size() != b.fields().size()) return false;
    for (size_t i = 0; i < a.fields().size(); ++i) {
      if (a.fields()[i].first != b.fields()[i].first ||
          !SameStructure(a.fields()[i].second, b.fields()[i].second))
        return false;
    }
    return true;
  }
  return false;
}

// The graph edges of `leaves`, imported into `cf`.
absl::StatusOr<std::vector<NodeOut>> EdgesIn(GraphBuilder& b,
                                             const std::vector<Value>& leaves,
                                             CfContext* cf,
                                             const SourceSpan& span) {
  std::vector<NodeOut> outs;
  for (const Value& v : leaves) {
    Value t = v;
    if (v.is_symbolic() && IsVariableNode(v.out().node)) {
      BuildScope s = b.InControlFlow(cf);
      RN_ASSIGN_OR_RETURN(NodeOut r, b.ReadVariable(v.out().node, span));
      t = Value::Symbolic(r);
    }
    RN_ASSIGN_OR_RETURN(NodeOut o, b.ToGraph(t, span));
    RN_ASSIGN_OR_RETURN(o, b.Import(o, cf, span));
    outs.push_back(o);
  }
  return outs;
}

std::vector<Value> Symbolic(const std::vector<NodeOut>& outs, size_t from = 0) {
  std::vector<Value> values;
  for (size_t i = from; i < outs.size(); ++i)
    values.push_back(Value::Symbolic(outs[i]));
  return values;
}

absl::StatusOr<NodeOut> PredicateIn(GraphBuilder& b, const Value& pred,
                                    CfContext* cf, const SourceSpan& span,
                                    std::string_view what) {
  if (!pred.is_tensor() || pred.tensor_dtype() != DType::kBool ||
      (!pred.tensor_shape().unknown_rank() &&
       pred.tensor_shape().rank() != 0)) {
    return ErrorAt(span, StrCat(what, " must be a bool scalar, got ",
                                DescribeValue(pred)));
  }
  RN_ASSIGN_OR_RETURN(std::vector<NodeOut> outs, EdgesIn(b, {pred}, cf, span));
  return outs[0];
}

}  // namespace

Value Unflatten(const Value& like, const std::vector<Value>& leaves) {
  size_t pos = 0;
  return UnflattenFrom(like, leaves, &pos);
}

// ---- if ---------------------------------------------------------------------

namespace {

struct Branch {
  Value value;
  std::vector<NodeOut> leaves;
};

absl::StatusOr<Branch> BuildBranch(GraphBuilder& b, CfContext* cf,
                                   const BranchFn& fn, const OpSite& site) {
  BuildScope s = b.InControlFlow(cf);
  Branch br;
  RN_ASSIGN_OR_RETURN(br.value, fn());
  std::vector<Value> leaves;
  RN_RETURN_IF_ERROR(FlattenTensors(
      br.value, site.span, "the branches of an in-graph 'if'", &leaves));
  RN_ASSIGN_OR_RETURN(br.leaves, EdgesIn(b, leaves, cf, site.span));
  if (!cf->effects.empty()) {
    // The branch's assignments run before its value leaves the branch.
    for (NodeOut& leaf : br.leaves) {
      NodeSpec spec;
      spec.name = StrCat(leaf.node->name(), "/after_effects");
      spec.op = "identity";
      spec.inputs = {leaf};
      spec.control_inputs = cf->effects;
      spec.span = site.span;
      RN_ASSIGN_OR_RETURN(Node * id, b.AddRaw(std::move(spec), cf));
      leaf = {id, 0};
    }
  }
  return br;
}

}  // namespace

absl::StatusOr<Value> GraphCond(GraphBuilder& b, const Value& pred,
                                const BranchFn& then_fn,
                                const BranchFn& else_fn, const OpSite& site) {
  CfContext* outer = b.context().cf;
  RN_ASSIGN_OR_RETURN(NodeOut p, PredicateIn(b, pred, outer, site.span,
                                             "the condition of an 'if'"));
  NodeSpec spec;
  spec.name = b.NewNodeName("cond/switch");
  spec.op = "switch";
  spec.inputs = {p, p};
  spec.control_inputs = b.context().control;
  spec.span = site.span;
  RN_ASSIGN_OR_RETURN(Node * sw, b.AddRaw(std::move(spec), outer));
  Branch branches[2];
  for (int side : {1, 0}) {
    CfContext* cf = b.NewCfContext(CfContext::Kind::kBranch, outer);
    cf->branch_switch = sw;
    cf->branch = side;
    NodeSpec pivot;
    pivot.name = StrCat(sw->name(), side ? "/then" : "/else");
    pivot.op = "identity";
    pivot.inputs = {{sw, side}};
    pivot.span = site.span;
    RN_ASSIGN_OR_RETURN(cf->pivot, b.AddRaw(std::move(pivot), cf));
    RN_ASSIGN_OR_RETURN(branches[side],
                        BuildBranch(b, cf, side ? then_fn : else_fn, site));
  }
  const Value& t = branches[1].value;
  const Value& f = branches[0].value;
  bool same = SameStructure(t, f);
  for (size_t k = 0; same && k < branches[0].leaves.size(); ++k) {
    same =
        branches[0].leaves[k].node->output_dtype(branches[0].leaves[k].index) ==
        branches[1].leaves[k].node->output_dtype(branches[1].leaves[k].index);
  }
  if (!same) {
    return ErrorAt(site.span,
                   StrCat("the branches of an in-graph 'if' must give the same "
                          "structure and dtypes; the first gives ",
                          Structure(t), ", the other ", Structure(f)),
                   site.caret);
  }
  std::vector<Value> merged;
  for (size_t k = 0; k < branches[0].leaves.size(); ++k) {
    NodeSpec m;
    m.name =
        b.NewNodeName(site.name_hint.empty() ? "cond/merge" : site.name_hint);
    m.op = "merge";
    m.inputs = {branches[0].leaves[k], branches[1].leaves[k]};
    m.span = site.span;
    RN_ASSIGN_OR_RETURN(Node * node, b.AddRaw(std::move(m), outer));
    merged.push_back(Value::Symbolic({node, 0}));
    if (outer != nullptr) outer->effects.push_back(node);
  }
  return Unflatten(t, merged);
}

// ---- loop -------------------------------------------------------------------

namespace {

// The loop's result, or the shapes to build it again with.
struct Attempt {
  std::optional<Value> result;
  std::vector<std::optional<Shape>> relaxed;
};

absl::Status CheckBody(const Value& init, const Value& next,
                       const std::vector<Value>& init_leaves,
                       const std::vector<NodeOut>& next_leaves,
                       const SourceSpan& span) {
  if (!SameStructure(init, next) || init_leaves.size() != next_leaves.size()) {
    return ErrorAt(span, StrCat("the loop body must give the state's "
                                "structure ",
                                Structure(init), ", got ", Structure(next)));
  }
  for (size_t k = 0; k < init_leaves.size(); ++k) {
    const TensorSpec& n = next_leaves[k].node->output(next_leaves[k].index);
    const DType d = init_leaves[k].tensor_dtype();
    const Shape s = init_leaves[k].tensor_shape();
    if (n.dtype != d) {
      return ErrorAt(
          span, StrCat("the loop body changes the dtype of state ", k, " from ",
                       DTypeName(d), " to ", DTypeName(n.dtype)));
    }
    if (!s.unknown_rank() && !n.shape.unknown_rank() &&
        s.rank() != n.shape.rank()) {
      return ErrorAt(
          span, StrCat("the loop body changes the rank of state ", k, " from ",
                       s.ToString(), " to ", n.shape.ToString(),
                       " (a dimension may change, the rank may "
                       "not)"));
    }
  }
  return absl::OkStatus();
}

// `have` with the dimensions that differ from `next` unknown.
Shape Relax(const Shape& have, const Shape& next) {
  if (have.unknown_rank() || next.unknown_rank()) return Shape::UnknownRank();
  std::vector<int64_t> dims;
  for (int i = 0; i < have.rank(); ++i) {
    dims.push_back(have.dim(i) == next.dim(i) ? have.dim(i) : -1);
  }
  return Shape(dims);
}

absl::StatusOr<Attempt> TryLoop(GraphBuilder& b, const Value& init,
                                const std::vector<Value>& init_leaves,
                                const std::vector<std::optional<Shape>>& shapes,
                                const LoopFns& fns, const OpSite& site) {
  CfContext* outer = b.context().cf;
  RN_ASSIGN_OR_RETURN(std::vector<NodeOut> start,
                      EdgesIn(b, init_leaves, outer, site.span));
  CfContext* cf = b.NewCfContext(CfContext::Kind::kLoop, outer);
  const std::string name = b.NewNodeName("loop");
  WhileBuilder wb(
      &b.graph(), b.MakerFor(cf),
      [&](NodeOut v) { return b.Import(v, outer, site.span); }, name, name,
      site.span);
  cf->loop = &wb;
  AttrMap counter;
  if (fns.checkpoint > 0) counter["_checkpoint"] = fns.checkpoint;
  if (fns.swap_memory) counter["_swap_memory"] = true;
  if (fns.trips >= 0) counter["_trips"] = fns.trips;
  wb.set_counter_attrs(std::move(counter));
  RN_ASSIGN_OR_RETURN(std::vector<NodeOut> top,
                      wb.Begin(start, shapes, b.context().control));
  if (fns.trip_count) {
    RN_ASSIGN_OR_RETURN(std::vector<NodeOut> n,
                        EdgesIn(b, {*fns.trip_count}, outer, site.span));
    RN_RETURN_IF_ERROR(wb.EnterTripCount(n[0]));
  }
  cf->pivot = top[0].node;
  Value pred;
  {
    BuildScope s = b.InControlFlow(cf);
    RN_ASSIGN_OR_RETURN(pred, fns.cond(Unflatten(init, Symbolic(top, 1)),
                                       Value::Symbolic(top[0])));
  }
  RN_ASSIGN_OR_RETURN(
      NodeOut p, PredicateIn(b, pred, cf, site.span, "the loop condition"));
  RN_ASSIGN_OR_RETURN(std::vector<NodeOut> body, wb.Condition(p));
  cf->pivot = wb.pivot();
  std::vector<NodeOut> next;
  {
    BuildScope s = b.InControlFlow(cf);
    RN_ASSIGN_OR_RETURN(Value v, fns.body(Unflatten(init, Symbolic(body, 1)),
                                          Value::Symbolic(body[0])));
    std::vector<Value> leaves;
    RN_RETURN_IF_ERROR(
        FlattenTensors(v, fns.body_span, "the loop state", &leaves));
    RN_ASSIGN_OR_RETURN(next, EdgesIn(b, leaves, cf, fns.body_span));
    RN_RETURN_IF_ERROR(CheckBody(init, v, init_leaves, next, fns.body_span));
  }
  Attempt attempt;
  bool again = false;
  for (size_t k = 0; k < next.size(); ++k) {
    const Shape have = top[k + 1].node->output_shape(top[k + 1].index);
    const Shape relaxed =
        Relax(have, next[k].node->output_shape(next[k].index));
    attempt.relaxed.push_back(relaxed);
    again = again || !(relaxed == have);
  }
  if (again) {
    cf->loop = nullptr;
    return attempt;
  }
  RN_ASSIGN_OR_RETURN(std::vector<NodeOut> exits, wb.Finish(next, cf->effects));
  cf->loop = nullptr;
  if (outer != nullptr && !cf->effects.empty())
    outer->effects.push_back(exits[0].node);
  attempt.result = Unflatten(init, Symbolic(exits, 1));
  return attempt;
}

}  // namespace

absl::StatusOr<Value> GraphLoop(GraphBuilder& b, const Value& init,
                                const LoopFns& fns, const OpSite& site) {
  std::vector<Value> leaves;
  RN_RETURN_IF_ERROR(
      FlattenTensors(init, site.span, "the loop state", &leaves));
  std::vector<std::optional<Shape>> shapes = fns.shapes;
  shapes.resize(leaves.size());
  // Each attempt relaxes at least one dimension; a rank is at most a few.
  for (int tries = 0; tries < 8; ++tries) {
    RN_ASSIGN_OR_RETURN(Attempt a, TryLoop(b, init, leaves, shapes, fns, site));
    if (a.result) return *a.result;
    for (size_t k = 0; k < shapes.size(); ++k) shapes[k] = a.relaxed[k];
  }
  return ErrorAt(site.span, "the loop state's shape does not settle");
}

// ---- scan and map
// -------------------------------------------------------------

namespace {

// [n, ...leaf's shape] zeros, and its static shape.
absl::StatusOr<std::pair<Value, Shape>> Accumulator(GraphBuilder& b,
                                                    const Value& n,
                                                    int64_t static_n,
                                                    const Value& leaf,
                                                    const OpSite& site) {
  RN_ASSIGN_OR_RETURN(
      Value n1, b.ApplyOp("reshape", {n, Value::Concrete(Tensor::OfDims({1}))},
                          {}, site));
  RN_ASSIGN_OR_RETURN(Value shape, b.ApplyOp("shape_of", {leaf}, {}, site));
  RN_ASSIGN_OR_RETURN(Value full, b.ApplyOp("concat", {n1, shape},
                                            {{"axis", int64_t{0}}}, site));
  RN_ASSIGN_OR_RETURN(Value zero,
                      b.ApplyOp("cast", {Value::Int(0)},
                                {{"dtype", leaf.tensor_dtype()}}, site));
  RN_ASSIGN_OR_RETURN(Value acc, b.ApplyOp("fill", {full, zero}, {}, site));
  const Shape s = leaf.tensor_shape();
  if (s.unknown_rank()) return std::make_pair(acc, Shape::UnknownRank());
  std::vector<int64_t> dims{static_n};
  for (int i = 0; i < s.rank(); ++i) dims.push_back(s.dim(i));
  return std::make_pair(acc, Shape(dims));
}

// acc with row `index` replaced by `row`, in acc's buffer when the
// executor hands it over (each step then costs one row, not the whole
// accumulator).
absl::StatusOr<Value> AddRow(GraphBuilder& b, const Value& acc,
                             const Value& index, const Value& row,
                             const OpSite& site) {
  return b.ApplyOp("dynamic_update_index", {acc, index, row}, {}, site);
}

}  // namespace

absl::StatusOr<Value> GraphScan(GraphBuilder& b, const StepFn& call,
                                const Value& xs, const Value* init,
                                const OpSite& site, int64_t checkpoint,
                                bool trip_count, bool swap_memory) {
  RN_ASSIGN_OR_RETURN(Value shape, b.ApplyOp("shape_of", {xs}, {}, site));
  RN_ASSIGN_OR_RETURN(
      Value n, b.ApplyOp("dynamic_index", {shape, Value::Int(0)}, {}, site));
  const Shape xs_shape = xs.tensor_shape();
  const int64_t static_n =
      xs_shape.unknown_rank() || xs_shape.rank() == 0 ? -1 : xs_shape.dim(0);
  // The result's structure: the state's (scan), or f's on the first row
  // (map, probed in a branch of the graph nobody runs).
  Value like;
  if (init != nullptr) {
    like = *init;
  } else {
    RN_ASSIGN_OR_RETURN(
        Value x0, b.ApplyOp("dynamic_index", {xs, Value::Int(0)}, {}, site));
    RN_ASSIGN_OR_RETURN(like, call({x0}));
  }
  std::vector<Value> leaves;
  RN_RETURN_IF_ERROR(
      FlattenTensors(like, site.span, "the results of f", &leaves));
  std::vector<Value> accs;
  LoopFns fns;
  fns.checkpoint = checkpoint;
  fns.swap_memory = swap_memory;
  fns.trips = static_n;
  if (trip_count) fns.trip_count = n;
  if (init != nullptr) fns.shapes.resize(leaves.size());
  for (const Value& leaf : leaves) {
    RN_ASSIGN_OR_RETURN(auto acc, Accumulator(b, n, static_n, leaf, site));
    accs.push_back(acc.first);
    fns.shapes.push_back(acc.second);
  }
  const Value state = Value::Tuple(
      {init != nullptr ? *init : Value::Tuple({}), Value::Tuple(accs)});
  fns.body_span = site.span;
  fns.cond = [&](const Value&, const Value& index) {
    return b.ApplyOp("less", {index, n}, {}, site);
  };
  fns.body = [&](const Value& st, const Value& index) -> absl::StatusOr<Value> {
    RN_ASSIGN_OR_RETURN(Value x,
                        b.ApplyOp("dynamic_index", {xs, index}, {}, site));
    Value next;
    if (init != nullptr) {
      RN_ASSIGN_OR_RETURN(next, call({st.items()[0], x}));
    } else {
      RN_ASSIGN_OR_RETURN(next, call({x}));
    }
    std::vector<Value> rows;
    RN_RETURN_IF_ERROR(
        FlattenTensors(next, site.span, "the results of f", &rows));
    if (rows.size() != leaves.size()) {
      return ErrorAt(site.span, StrCat("f must give ", Structure(like),
                                       ", got ", Structure(next)));
    }
    for (size_t k = 0; k < rows.size(); ++k) {
      // Literals adapt when they are added; anything else must match.
      if (!rows[k].literal() &&
          rows[k].tensor_dtype() != leaves[k].tensor_dtype()) {
        return ErrorAt(
            site.span,
            StrCat("the body of ", init != nullptr ? "scan" : "map", " gives ",
                   DTypeName(rows[k].tensor_dtype()),
                   rows.size() > 1 ? StrCat(" as result ", k) : "", " where ",
                   init != nullptr ? "the state" : "its first row", " is ",
                   DTypeName(leaves[k].tensor_dtype()), "; cast one of them"));
      }
    }
    std::vector<Value> new_accs;
    for (size_t k = 0; k < rows.size(); ++k) {
      RN_ASSIGN_OR_RETURN(
          Value a, AddRow(b, st.items()[1].items()[k], index, rows[k], site));
      new_accs.push_back(a);
    }
    return Value::Tuple(
        {init != nullptr ? next : Value::Tuple({}), Value::Tuple(new_accs)});
  };
  RN_ASSIGN_OR_RETURN(Value out, GraphLoop(b, state, fns, site));
  return Unflatten(like, out.items()[1].items());
}

}  // namespace runnel::interp
