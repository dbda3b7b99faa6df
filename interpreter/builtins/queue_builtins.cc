// Queues and input pipelines (docs/queues.md, docs/language.md §11): the
// builtins `queue`, `enqueue`, `enqueue_many`, `dequeue`, `dequeue_many`,
// `close`, `runner` and `read_idx`, and `size` of a queue.
//
// A queue value is the symbolic handle of its `queue` node; every op on
// it takes that handle and copies the queue's name and components
// (framework/queue.h), so shapes are checked where the script wrote them.
#include <optional>

#include "base/status_macros.h"
#include "base/strings.h"
#include "framework/queue.h"
#include "interpreter/builtins.h"
#include "interpreter/diag.h"
#include "interpreter/interpreter.h"
#include "interpreter/iteration.h"
#include "interpreter/runners.h"
#include "io/idx_reader.h"

namespace runnel::interp {
namespace {

using Args = CallArgs;
using Param = BuiltinParam;
using Result = absl::StatusOr<Value>;

bool IsQueue(const Value& v) {
  return v.is_symbolic() && v.out().node->op() == "queue";
}

absl::StatusOr<const Node*> QueueArg(const Args& a, int i) {
  if (!IsQueue(a[i])) {
    return ErrorAt(
        a.span_of(i),
        StrCat(ParamName(a, i), " must be a queue, got ", DescribeValue(a[i])));
  }
  return a[i].out().node;
}

// The attributes of every op on queue `q`: its name and components.
absl::StatusOr<AttrMap> QueueAttrs(const Node* q) {
  RN_ASSIGN_OR_RETURN(QueueComponents c, GetQueueComponents(q->attrs()));
  AttrMap attrs;
  SetQueueComponents(c, &attrs);
  RN_ASSIGN_OR_RETURN(attrs["queue"], q->attr<std::string>("queue"));
  return attrs;
}

// One value, or a tuple of several (an op's outputs).
Value OneOrTuple(std::vector<Value> values) {
  if (values.size() == 1) return values[0];
  return Value::Tuple(std::move(values));
}

// A tuple or list stands for its items, anything else for itself.
std::vector<Value> Items(const Value& v) {
  if (v.is_sequence()) return v.items();
  return {v};
}

// A shape written as a list of ints (`[784]`, `[28, 28]`, `[]`).
absl::StatusOr<Shape> ShapeValue(const Value& v, const SourceSpan& span,
                                 const std::string& what) {
  if (v.is_sequence() && v.items().empty()) return Shape{};
  // `[]` inside a bracketed list is an empty tensor (of any dtype).
  if (v.is_concrete() && v.tensor().rank() == 1 &&
      v.tensor().num_elements() == 0) {
    return Shape{};
  }
  const bool ints = v.is_concrete() && IsInteger(v.tensor().dtype()) &&
                    v.tensor().rank() <= 1;
  if (!ints) {
    return ErrorAt(span, StrCat(what,
                                " must be a list of dimensions such as "
                                "[784] or [], got ",
                                DescribeValue(v)));
  }
  return Shape(v.tensor().ToInt64s());
}

// `dtypes` and `shapes` of `queue`: one dtype and one shape, or lists of
// them of one length.
absl::StatusOr<QueueComponents> ComponentsArg(Interpreter& in, const Args& a,
                                              int dtypes, int shapes) {
  QueueComponents c;
  const Value& d = a[dtypes];
  const bool single = d.kind() == ValueKind::kDType;
  for (const Value& item : Items(d)) {
    if (item.kind() != ValueKind::kDType) {
      return ErrorAt(a.span_of(dtypes),
                     StrCat(ParamName(a, dtypes),
                            " must be a dtype or a list of dtypes such as "
                            "[f32, i32], got ",
                            DescribeValue(d)));
    }
    c.dtypes.push_back(item.dtype_value());
  }
  const std::string what = ParamName(a, shapes);
  if (single) {
    RN_ASSIGN_OR_RETURN(Shape s,
                        ShapeValue(a[shapes], a.span_of(shapes), what));
    c.shapes.push_back(std::move(s));
    return c;
  }
  // A list of shapes, or (when they have one length) their rows.
  RN_ASSIGN_OR_RETURN(std::unique_ptr<Iterator> it,
                      Iterate(a[shapes], a.span_of(shapes)));
  while (true) {
    RN_ASSIGN_OR_RETURN(std::optional<Value> item, it->Next());
    if (!item) break;
    RN_ASSIGN_OR_RETURN(Shape s, ShapeValue(*item, a.span_of(shapes), what));
    c.shapes.push_back(std::move(s));
  }
  if (c.shapes.size() != c.dtypes.size()) {
    return ErrorAt(a.span_of(shapes),
                   StrCat(what, " gives ", c.shapes.size(), " shape(s) for ",
                          c.dtypes.size(), " dtype(s)"));
  }
  return c;
}

Result QueueFn(Interpreter& in, Args& a) {
  RN_ASSIGN_OR_RETURN(int64_t capacity, IntArg(a, 0));
  RN_ASSIGN_OR_RETURN(QueueComponents components, ComponentsArg(in, a, 1, 2));
  RN_ASSIGN_OR_RETURN(bool shuffle, BoolArg(a, 3));
  RN_ASSIGN_OR_RETURN(int64_t min_after, IntArg(a, 4));
  int64_t seed = -1;
  if (!a[5].is_none()) {
    RN_ASSIGN_OR_RETURN(seed, IntArg(a, 5));
  }
  GraphBuilder& b = in.builder();
  // Like a variable, a queue lives at the top level of the graph.
  std::optional<BuildScope> top;
  if (b.context().cf != nullptr) top.emplace(b.InControlFlow(nullptr));
  NodeSpec spec;
  spec.op = "queue";
  spec.name = b.NewNodeName(a.hint.empty() ? "queue" : a.hint);
  std::string name = spec.name;
  if (!a[6].is_none()) {
    RN_ASSIGN_OR_RETURN(name, StringArg(a, 6));
  }
  spec.attrs = {{"capacity", capacity},
                {"shuffle", shuffle},
                {"min_after_dequeue", min_after},
                {"seed", seed},
                {"queue", name}};
  SetQueueComponents(components, &spec.attrs);
  RN_ASSIGN_OR_RETURN(Node * node, b.AddNode(std::move(spec), Site(a), {}));
  return Value::Symbolic({node, 0});
}

// enqueue(q, x) and enqueue_many(q, xs): x a tensor, or a tuple or list of
// one per component. Bare literals take the component's dtype.
Result EnqueueFn(const std::string& op, Interpreter& in, Args& a) {
  RN_ASSIGN_OR_RETURN(const Node* q, QueueArg(a, 0));
  RN_ASSIGN_OR_RETURN(AttrMap attrs, QueueAttrs(q));
  RN_ASSIGN_OR_RETURN(QueueComponents c, GetQueueComponents(attrs));
  std::vector<Value> inputs = {a[0]};
  for (const Value& v : Items(a[1])) {
    const size_t i = inputs.size() - 1;
    if (v.literal() && i < c.dtypes.size() &&
        v.tensor().dtype() != c.dtypes[i]) {
      RN_ASSIGN_OR_RETURN(Tensor t, in.builder().LiteralAs(v, c.dtypes[i]));
      inputs.push_back(Value::Concrete(std::move(t)));
    } else {
      inputs.push_back(v);
    }
  }
  return in.builder().ApplyOp(op, std::move(inputs), std::move(attrs), Site(a));
}

// dequeue(q) and dequeue_many(q, n): a tensor, or a tuple of one per
// component.
Result DequeueFn(const std::string& op, Interpreter& in, Args& a) {
  RN_ASSIGN_OR_RETURN(const Node* q, QueueArg(a, 0));
  RN_ASSIGN_OR_RETURN(AttrMap attrs, QueueAttrs(q));
  std::vector<Value> inputs(a.values.begin(), a.values.end());
  RN_ASSIGN_OR_RETURN(
      std::vector<Value> out,
      in.builder().ApplyOpN(op, std::move(inputs), std::move(attrs), Site(a)));
  return OneOrTuple(std::move(out));
}

absl::StatusOr<Value> Close(Interpreter& in, const Value& q, bool cancel,
                            const OpSite& site) {
  RN_ASSIGN_OR_RETURN(AttrMap attrs, QueueAttrs(q.out().node));
  attrs["cancel_pending_enqueues"] = cancel;
  return in.builder().ApplyOp("queue_close", {q}, std::move(attrs), site);
}

Result CloseFn(Interpreter& in, Args& a) {
  RN_RETURN_IF_ERROR(QueueArg(a, 0).status());
  RN_ASSIGN_OR_RETURN(bool cancel, BoolArg(a, 1));
  return Close(in, a[0], cancel, Site(a));
}

// runner(q, op, threads): `op` (an op, a tensor, or a list of them) runs
// on `threads` host threads until q closes (interpreter/runners.h).
Result RunnerFn(Interpreter& in, Args& a) {
  RN_RETURN_IF_ERROR(QueueArg(a, 0).status());
  Runners::Spec spec;
  RN_RETURN_IF_ERROR(
      in.builder().CollectNodes(a[1], a.span_of(1), &spec.targets));
  if (spec.targets.empty()) {
    return ErrorAt(a.span_of(1), StrCat(ParamName(a, 1),
                                        " must be an op or a tensor to run, "
                                        "got ",
                                        DescribeValue(a[1])));
  }
  RN_ASSIGN_OR_RETURN(int64_t threads, IntArg(a, 2));
  if (threads < 1 || threads > 64) {
    return ErrorAt(
        a.span_of(2),
        StrCat(ParamName(a, 2), " must be from 1 to 64, got ", threads));
  }
  spec.threads = static_cast<int>(threads);
  spec.span = a.span;
  // The closes run outside any `after` block or in-graph construct.
  BuildScope top = in.builder().Replace();
  RN_ASSIGN_OR_RETURN(Value close, Close(in, a[0], false, OpSite{a.span}));
  RN_ASSIGN_OR_RETURN(Value cancel, Close(in, a[0], true, OpSite{a.span}));
  spec.close = close.node();
  spec.cancel = cancel.node();
  if (in.check_mode()) return Value();
  in.host().runners().Start(std::move(spec));
  return Value();
}

// read_idx(paths, batch, epochs = none): the headers are read now, so the
// outputs' dtypes and record shapes are known while the graph is built.
Result ReadIdxFn(Interpreter& in, Args& a) {
  std::vector<std::string> paths;
  for (const Value& v : Items(a[0])) {
    if (v.kind() != ValueKind::kString) {
      return ErrorAt(a.span_of(0), StrCat(ParamName(a, 0),
                                          " must be a path or a list of "
                                          "paths, got ",
                                          DescribeValue(a[0])));
    }
    paths.push_back(v.str());
  }
  RN_ASSIGN_OR_RETURN(int64_t batch, IntArg(a, 1));
  int64_t epochs = 0;
  if (!a[2].is_none()) {
    RN_ASSIGN_OR_RETURN(epochs, IntArg(a, 2));
    if (epochs < 1) {
      return ErrorAt(
          a.span_of(2),
          StrCat(ParamName(a, 2), " must be at least 1 (none: no end), got ",
                 epochs));
    }
  }
  NodeSpec spec;
  spec.op = "read_idx";
  spec.attrs = {{"files", static_cast<int64_t>(paths.size())},
                {"batch", batch},
                {"epochs", epochs}};
  int64_t records = -1;
  for (size_t i = 0; i < paths.size(); ++i) {
    absl::StatusOr<std::unique_ptr<IdxRecordReader>> f =
        IdxRecordReader::Open(paths[i]);
    if (!f.ok()) {
      return ErrorAt(a.span_of(0),
                     StrCat("read_idx: ", ToStd(f.status().message())));
    }
    if (records >= 0 && (*f)->records() != records) {
      return ErrorAt(a.span_of(0),
                     StrCat("read_idx: ", paths[i], " has ", (*f)->records(),
                            " records, but ", paths[0], " has ", records));
    }
    records = (*f)->records();
    spec.attrs[StrCat("path_", i)] = paths[i];
    spec.attrs[StrCat("dtype_", i)] = (*f)->dtype();
    spec.attrs[StrCat("shape_", i)] = (*f)->record_shape();
  }
  GraphBuilder& b = in.builder();
  spec.name = b.NewNodeName(a.hint.empty() ? "read_idx" : a.hint);
  RN_ASSIGN_OR_RETURN(Node * node, b.AddNode(std::move(spec), Site(a), {}));
  std::vector<Value> out;
  for (int i = 0; i < node->num_outputs(); ++i) {
    out.push_back(Value::Symbolic({node, i}));
  }
  return OneOrTuple(std::move(out));
}

}  // namespace

void AddQueueBuiltins(std::vector<Builtin>& b) {
  b.push_back({"queue",
               {Param("capacity"), Param("dtypes"), Param("shapes"),
                Param("shuffle", Value::Bool(false)),
                Param("min_after_dequeue", Value::Int(0)),
                Param("seed", Value()), Param("name", Value())},
               QueueFn});
  for (const char* op : {"enqueue", "enqueue_many"}) {
    b.push_back(
        {op, {Param("queue"), Param("x")}, [op](Interpreter& in, Args& a) {
           return EnqueueFn(op, in, a);
         }});
  }
  b.push_back({"dequeue", {Param("queue")}, [](Interpreter& in, Args& a) {
                 return DequeueFn("dequeue", in, a);
               }});
  b.push_back({"dequeue_many",
               {Param("queue"), Param("n")},
               [](Interpreter& in, Args& a) {
                 return DequeueFn("dequeue_many", in, a);
               }});
  b.push_back(
      {"close",
       {Param("queue"), Param("cancel_pending_enqueues", Value::Bool(false))},
       CloseFn});
  b.push_back({"runner",
               {Param("queue"), Param("op"), Param("threads", Value::Int(1))},
               RunnerFn});
  b.push_back({"read_idx",
               {Param("paths"), Param("batch"), Param("epochs", Value())},
               ReadIdxFn});
  // size(q): the elements in a queue; size(x) of a tensor as before.
  for (Builtin& builtin : b) {
    if (builtin.name != "size") continue;
    builtin.fn = [tensor_size = builtin.fn](Interpreter& in,
                                            Args& a) -> Result {
      if (!IsQueue(a[0])) return tensor_size(in, a);
      RN_ASSIGN_OR_RETURN(AttrMap attrs, QueueAttrs(a[0].out().node));
      return in.builder().ApplyOp("queue_size", {a[0]}, std::move(attrs),
                                  Site(a));
    };
  }
}

}  // namespace runnel::interp
