// The graph builtins: group, trainable_vars, summary, leaves, pack_as,
// with_values, grad, scan and map, loops, checkpoints.
#include <fmt/args.h>
#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <map>
#include <optional>
#include <thread>

#include "base/read_file.h"
#include "base/status_macros.h"
#include "base/strings.h"
#include "common_runtime/gradients.h"
#include "common_runtime/placer.h"
#include "common_runtime/trace.h"
#include "framework/op_registry.h"
#include "interpreter/builtins/internal.h"
#include "interpreter/control_flow.h"
#include "interpreter/data.h"
#include "interpreter/diag.h"
#include "interpreter/interpreter.h"
#include "io/csv_reader.h"
#include "io/idx_reader.h"
#include "io/npy.h"

namespace runnel::interp {
namespace {

Result Group(Interpreter& in, Args& a) {
  std::vector<Node*> nodes;
  for (size_t i = 0; i < a.rest.size(); ++i) {
    RN_RETURN_IF_ERROR(
        in.builder().CollectNodes(a.rest[i], a.rest_spans[i], &nodes));
  }
  RN_ASSIGN_OR_RETURN(
      std::vector<Value> out,
      in.builder().ApplyOpN("noop", {}, {}, Site(a), std::move(nodes)));
  return out.empty() ? Value() : out[0];
}

Result TrainableVars(Interpreter& in, Args& a) {
  RN_ASSIGN_OR_RETURN(std::string scope, StringArg(a, 0));
  std::vector<Value> out;
  for (Node* n : in.builder().variables()) {
    absl::StatusOr<bool> trainable = n->attr<bool>("trainable");
    if (!trainable.ok() || !*trainable) continue;
    const std::string& name = n->name();
    const bool match = scope.empty() || name == scope ||
                       (name.size() > scope.size() &&
                        name.compare(0, scope.size(), scope) == 0 &&
                        (scope.back() == '/' || name[scope.size()] == '/'));
    if (match) out.push_back(Value::Symbolic({n, 0}));
  }
  return Value::List(std::move(out));
}

// summary(scope = ""): prints a table of the trainable vars whose names are
// in `scope` (as trainable_vars), each one's name, shape, dtype, element
// count and bytes, with the totals (Keras' model.summary()); returns the
// total element count.
Result Summary(Interpreter& in, Args& a) {
  RN_ASSIGN_OR_RETURN(Value vars, TrainableVars(in, a));
  std::vector<std::array<std::string, 5>> rows;
  rows.push_back({"name", "shape", "dtype", "params", "bytes"});
  int64_t params = 0;
  size_t bytes = 0;
  for (const Value& v : vars.items()) {
    const TensorSpec& spec = v.out().node->output(0);
    // A shape known only at run time counts nothing and says so.
    const int64_t n =
        spec.shape.IsFullyDefined() ? spec.shape.num_elements() : -1;
    const size_t b =
        static_cast<size_t>(std::max<int64_t>(spec.StaticBytes(), 0));
    params += std::max<int64_t>(n, 0);
    bytes += b;
    rows.push_back({v.out().node->name(), spec.shape.ToString(),
                    std::string(DTypeName(spec.dtype)), n < 0 ? "?" : StrCat(n),
                    n < 0 ? "?" : StrCat(b)});
  }
  std::array<size_t, 5> width{};
  for (const auto& row : rows) {
    for (size_t i = 0; i < row.size(); ++i) {
      width[i] = std::max(width[i], row[i].size());
    }
  }
  std::string table;
  for (const auto& row : rows) {
    // Names and dtypes to the left, numbers to the right.
    table += fmt::format("{:<{}}  {:<{}}  {:<{}}  {:>{}}  {:>{}}\n", row[0],
                         width[0], row[1], width[1], row[2], width[2], row[3],
                         width[3], row[4], width[4]);
  }
  table += StrCat("total: ", vars.items().size(), " trainable vars, ", params,
                  " params, ", bytes, " bytes\n");
  if (!in.check_mode()) {
    std::fputs(table.c_str(), in.options().out);
    std::fflush(in.options().out);
  }
  return Value::Int(params);
}

// leaves(x): the tensors of a tuple, list or record, nested or not, in order,
// as one list (tf.nest.flatten); a tensor is its own only leaf.
Result Leaves(Interpreter&, Args& a) {
  std::vector<Value> out;
  RN_RETURN_IF_ERROR(FlattenTensors(a[0], a.span_of(0), "leaves' items", &out));
  return Value::List(std::move(out));
}

// pack_as(like, leaves): `like`'s structure with `leaves` (a list or tuple) in
// place of its tensors, in the order leaves(like) gives them
// (tf.nest.pack_sequence_as).
Result PackAs(Interpreter&, Args& a) {
  std::vector<Value> old;
  RN_RETURN_IF_ERROR(
      FlattenTensors(a[0], a.span_of(0), "pack_as' structure", &old));
  if (!a[1].is_sequence()) {
    return ErrorAt(a.span_of(1),
                   StrCat("pack_as needs a list or tuple of leaves, got ",
                          DescribeValue(a[1])));
  }
  const std::vector<Value>& leaves = a[1].items();
  if (leaves.size() != old.size()) {
    return ErrorAt(a.span_of(1), StrCat("pack_as: the structure holds ",
                                        old.size(), " tensors but ",
                                        leaves.size(), " leaves were given"));
  }
  return Unflatten(a[0], leaves);
}

// with_values(g, values): a sparse gradient with g's rows and these values
// in place of g.values (one row per index), so that it stays sparse; how a
// script scales one (optim.clip_by_global_norm).
Result WithValues(Interpreter& in, Args& a) {
  std::optional<SparseGradient> sparse =
      a[0].is_symbolic() ? AsSparseGradient(a[0].out()) : std::nullopt;
  if (!sparse) {
    return ErrorAt(a.span_of(0),
                   StrCat("with_values needs a sparse gradient (the gradient "
                          "of a gather), got ",
                          DescribeValue(a[0])));
  }
  RN_ASSIGN_OR_RETURN(
      Value shape,
      in.builder().ApplyOp("shape_of", {Value::Symbolic(sparse->values)}, {},
                           Site(a)));
  RN_ASSIGN_OR_RETURN(Value values, in.builder().ApplyOp(
                                        "reshape", {a[1], shape}, {}, Site(a)));
  return in.builder().ApplyOp("gather_grad",
                              {Value::Symbolic(sparse->params),
                               Value::Symbolic(sparse->indices), values},
                              {{"axis", int64_t{0}}}, Site(a));
}

// grad(y, x) or grad(y, [x1, x2, ...]): the gradient of y (summed over its
// elements when it is not a scalar) as graph nodes, one per x, in the shape
// of the second argument. Both must be symbolic: a concrete y depends on no
// var or input.
Result Grad(Interpreter& in, Args& a) {
  const Value& y = a[0];
  if (in.builder().context().cf != nullptr) {
    return ErrorAt(a.span,
                   "grad inside an in-graph loop or 'if' is not supported; "
                   "take the gradient of the loop's or the if's result");
  }
  if (!y.is_symbolic()) {
    return ErrorAt(a.span_of(0),
                   StrCat("grad needs a symbolic y (computed from a var or "
                          "input), got ",
                          DescribeValue(y)));
  }
  const Value& xs = a[1];
  const bool many = xs.is_sequence();
  std::vector<Value> items = many ? xs.items() : std::vector<Value>{xs};
  std::vector<NodeOut> outs;
  for (const Value& x : items) {
    if (!x.is_symbolic()) {
      return ErrorAt(a.span_of(1),
                     StrCat("grad differentiates with respect to symbolic "
                            "tensors (a var, an input or a value computed "
                            "from them), got ",
                            DescribeValue(x)));
    }
    outs.push_back(x.out());
  }
  GradientOptions options;
  options.memory_budget = in.options().memory_budget;
  // Only a budget's plan weighs swapping (and asking makes the session).
  if (options.memory_budget > 0 && in.CanSwap()) {
    options.swap_rates = NominalGpuRates();
  }
  absl::StatusOr<std::vector<NodeOut>> grads =
      AddGradients(&in.graph(), y.out(), outs, options);
  if (!grads.ok()) {
    lang::Diagnostic d = ToDiagnostic(grads.status(), a.span);
    if (d.span.line != a.span.line || d.span.file != a.span.file ||
        d.span.col != a.span.col) {
      d.notes.push_back(Note(a.span, "while differentiating for this grad"));
    }
    return DiagStatus(std::move(d));
  }
  std::vector<Value> values;
  for (const NodeOut& g : *grads) values.push_back(Value::Symbolic(g));
  if (!many) return values[0];
  return xs.kind() == ValueKind::kTuple ? Value::Tuple(std::move(values))
                                        : Value::List(std::move(values));
}

// scan(f, xs, init) and map(f, xs): on the host when xs and init are
// concrete (the results stacked), else an in-graph loop.
Result ScanFn(Interpreter& in, Args& a) {
  const bool is_scan = a.builtin->name == "scan";
  const Value& f = a[0];
  Value xs = a[1];
  if (!xs.is_tensor()) {
    RN_ASSIGN_OR_RETURN(xs, in.builder().ToTensor(xs, a.span_of(1), "xs"));
  }
  if (xs.tensor_shape().rank() == 0) {
    return ErrorAt(a.span_of(1), StrCat(a.builtin->name,
                                        " loops over the first axis of xs, "
                                        "which is a scalar"));
  }
  StepFn call = [&](std::vector<Value> args) {
    std::vector<SourceSpan> spans(args.size(), a.span);
    return in.Call(f, std::move(args), std::move(spans), {}, {}, a.span);
  };
  const Value* init = is_scan ? &a[2] : nullptr;
  const int at = is_scan ? 3 : 2;
  RN_ASSIGN_OR_RETURN(int64_t checkpoint, IntArg(a, at));
  if (checkpoint < 0) {
    return ErrorAt(a.span_of(at),
                   StrCat(ParamName(a, at),
                          " must be 0 (as --memory-budget decides) or a "
                          "number of iterations, got ",
                          checkpoint));
  }
  RN_ASSIGN_OR_RETURN(bool swap_memory, BoolArg(a, at + 1));
  if (swap_memory && checkpoint > 0) {
    return ErrorAt(a.span_of(at + 1),
                   "swap_memory and checkpoint are two ways to bound the "
                   "saved values' memory: give one");
  }
  if (xs.is_symbolic() || (init != nullptr && init->contains_symbolic())) {
    if (swap_memory) in.WarnNoSwap(a.span_of(at + 1));
    return GraphScan(in.builder(), call, xs, init, Site(a), checkpoint,
                     in.options().memory_budget > 0, swap_memory);
  }
  if (swap_memory) {
    return ErrorAt(a.span_of(at + 1),
                   StrCat("swap_memory applies to a ", a.builtin->name,
                          " in the graph, and this one runs on the host (its "
                          "inputs are concrete): it keeps no values for a "
                          "gradient"));
  }
  RN_ASSIGN_OR_RETURN(std::unique_ptr<Iterator> it, Iterate(xs, a.span_of(1)));
  Value state = init != nullptr ? *init : Value();
  Value like;
  std::vector<std::vector<Value>> columns;
  while (true) {
    RN_ASSIGN_OR_RETURN(std::optional<Value> x, it->Next());
    if (!x) break;
    RN_ASSIGN_OR_RETURN(Value y,
                        init != nullptr ? call({state, *x}) : call({*x}));
    std::vector<Value> leaves;
    RN_RETURN_IF_ERROR(FlattenTensors(y, a.span, "the results of f", &leaves));
    if (columns.empty()) {
      columns.resize(leaves.size());
      like = y;
    }
    if (leaves.size() != columns.size()) {
      return ErrorAt(a.span, "f must give the same structure at every step");
    }
    for (size_t k = 0; k < leaves.size(); ++k) columns[k].push_back(leaves[k]);
    state = y;
  }
  if (columns.empty()) {
    return ErrorAt(a.span_of(1), StrCat(a.builtin->name,
                                        " over an empty xs has no results "
                                        "to stack"));
  }
  std::vector<Value> stacked;
  for (const std::vector<Value>& col : columns) {
    RN_ASSIGN_OR_RETURN(Value s,
                        in.builder().ApplyOp("stack", col, {}, Site(a)));
    stacked.push_back(s);
  }
  return Unflatten(like, stacked);
}

}  // namespace

// Autodiff.
void AddAutodiff(std::vector<Builtin>& b) {
  b.push_back({"grad", {P("y"), P("xs")}, Grad});
  b.push_back({"with_values", {P("g"), P("values")}, WithValues});
  b.push_back({"leaves", {P("x")}, Leaves});
  b.push_back({"pack_as", {P("like"), P("leaves")}, PackAs});
  b.push_back(FromOp("stop_gradient"));
  b.push_back(
      {"trainable_vars", {P("scope", Value::String(""))}, TrainableVars});
  b.push_back({"summary", {P("scope", Value::String(""))}, Summary});
  b.push_back({"slot",
               {P("var"), P("name"), P("value", None())},
               [](Interpreter& in, Args& a) -> Result {
                 RN_ASSIGN_OR_RETURN(std::string name, StringArg(a, 1));
                 return in.builder().MakeSlot(a[0], name, a[2], a.span);
               }});
  b.push_back({"global_step", {}, [](Interpreter& in, Args& a) -> Result {
                 return in.builder().GlobalStep(a.span);
               }});
}

// Graph control.
void AddGraphControl(std::vector<Builtin>& b) {
  b.push_back({"group", {}, Group, /*variadic=*/true});
  b.push_back({"noop", {}, [](Interpreter& in, Args& a) -> Result {
                 return in.builder().ApplyOp("noop", {}, {}, Site(a));
               }});
  for (const char* op : {"identity", "check_numerics", "debug_print"}) {
    b.push_back(FromOp(op));
  }
}

// Loops over the first axis.
void AddLoops(std::vector<Builtin>& b) {
  b.push_back({"scan",
               {P("f"), P("xs"), P("init"), P("checkpoint", Value::Int(0)),
                P("swap_memory", Value::Bool(false))},
               ScanFn});
  b.push_back({"map",
               {P("f"), P("xs"), P("checkpoint", Value::Int(0)),
                P("swap_memory", Value::Bool(false))},
               ScanFn});
}

// Checkpoints (checkpoint_builtins.cc).
void AddCheckpoints(std::vector<Builtin>& b) {
  b.push_back({"save", {P("path")}, SaveBuiltin});
  b.push_back({"restore", {P("path")}, RestoreBuiltin});
}

}  // namespace runnel::interp
