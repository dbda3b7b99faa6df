// `run FETCHES with FEEDS` (docs/language.md §5): collect the fetched
// tensors and ops, convert the feeds, run them in the session (or, in check
// mode, check them without running), and rebuild the fetched structure with
// concrete values.
#include <cmath>
#include <cstdlib>
#include <optional>
#include <set>

#include "absl/strings/match.h"
#include "absl/strings/str_format.h"
#include "base/errors.h"
#include "base/status_macros.h"
#include "base/strings.h"
#include "common_runtime/prune.h"
#include "framework/attr_value.h"
#include "interpreter/diag.h"
#include "interpreter/interpreter.h"
#include "interpreter/runners.h"

namespace runnel::interp {
namespace {

// Zeros standing in for a fetched value in check mode.
Tensor Placeholder(DType dtype, const Shape& shape) {
  std::vector<int64_t> dims;
  if (!shape.unknown_rank()) {
    for (int64_t d : shape.dims()) dims.push_back(d < 0 ? 1 : d);
  }
  return Tensor::Zeros(dtype, Shape(dims));
}

// `fetches` with each symbolic tensor replaced by the next of `results`
// (in CollectFetches' order) and each op by none.
Value RebuildResults(const Value& v, const std::vector<Tensor>& results,
                     size_t* next) {
  switch (v.kind()) {
    case ValueKind::kSymbolic:
      return Value::Concrete(results[(*next)++]);
    case ValueKind::kOp:
      return Value();
    case ValueKind::kTuple:
    case ValueKind::kList: {
      std::vector<Value> items;
      for (const Value& i : v.items()) {
        items.push_back(RebuildResults(i, results, next));
      }
      return v.kind() == ValueKind::kTuple ? Value::Tuple(std::move(items))
                                           : Value::List(std::move(items));
    }
    case ValueKind::kRecord: {
      std::vector<Field> fields;
      for (const Field& f : v.fields()) {
        fields.emplace_back(f.first, RebuildResults(f.second, results, next));
      }
      return Value::Record(std::move(fields));
    }
    default:
      return v;
  }
}

// The diagnostic for a missing feed: at the run, with a note at the input.
absl::Status MissingFeed(const std::string& message, const Node* input,
                         const SourceSpan& run) {
  lang::Diagnostic d;
  d.message = message;
  d.span = run;
  if (input != nullptr) {
    d.notes.push_back(
        Note(input->span(), StrCat(input->name(), " declared here")));
  }
  return DiagStatus(std::move(d));
}

// Element i with every digit its dtype holds ("16777216", not 1.67772e+07).
std::string ExactElement(const Tensor& t, int64_t i) {
  if (t.dtype() == DType::kBool) return t.ToInt64s()[i] != 0 ? "true" : "false";
  if (!IsFloating(t.dtype())) return StrCat(t.ToInt64s()[i]);
  const double v = t.ToDoubles()[i];
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  // The shortest form that reads back as the same value of its dtype.
  const bool f64 = t.dtype() == DType::kF64;
  for (int digits = 6;; ++digits) {
    std::string text = absl::StrFormat("%.*g", digits, v);
    const double back = std::strtod(text.c_str(), nullptr);
    if (digits >= (f64 ? 17 : 9) ||
        (f64 ? back == v : static_cast<float>(back) == static_cast<float>(v))) {
      return text;
    }
  }
}

// The first element where `a` and `b` (same dtype and size) differ, NaN
// equal to NaN; none when they are equal.
std::optional<int64_t> FirstChangedElement(const Tensor& a, const Tensor& b) {
  if (IsInteger(a.dtype()) || a.dtype() == DType::kBool) {
    const std::vector<int64_t> x = a.ToInt64s(), y = b.ToInt64s();
    for (size_t i = 0; i < x.size(); ++i) {
      if (x[i] != y[i]) return static_cast<int64_t>(i);
    }
    return std::nullopt;
  }
  const std::vector<double> x = a.ToDoubles(), y = b.ToDoubles();
  for (size_t i = 0; i < x.size(); ++i) {
    if (x[i] != y[i] && !(std::isnan(x[i]) && std::isnan(y[i]))) {
      return static_cast<int64_t>(i);
    }
  }
  return std::nullopt;
}

}  // namespace

absl::StatusOr<Value> Interpreter::RunFetches(const Value& fetches,
                                              const Value* feeds,
                                              const lang::RunExpr& e) {
  host_->CountRun();
  std::vector<NodeOut> outs;
  std::vector<Node*> targets;
  RN_RETURN_IF_ERROR(CollectFetches(fetches, e.fetches->span, &outs, &targets));
  Session::Feeds feed_list;
  if (feeds != nullptr) {
    RN_ASSIGN_OR_RETURN(feed_list, ConvertFeeds(*feeds, e));
  }
  RN_RETURN_IF_ERROR(CheckEnqueuesCanFinish(outs, targets, feed_list, e));
  if (absl::Status c = host_->CheckpointIfDue(); !c.ok()) {
    return ErrorAt(e.span, std::string(ToStd(c.message())));
  }
  absl::StatusOr<std::vector<Tensor>> ran =
      check_mode() ? CheckRun(outs, targets, feed_list, e)
                   : host_->Traced(e.span.ToString(), [&] {
                       return SessionRun(outs, targets, feed_list, e);
                     });
  RN_ASSIGN_OR_RETURN(std::vector<Tensor> results, std::move(ran));
  size_t next = 0;
  return RebuildResults(fetches, results, &next);
}

absl::Status Interpreter::CollectFetches(const Value& v, const SourceSpan& span,
                                         std::vector<NodeOut>* outs,
                                         std::vector<Node*>* targets) {
  switch (v.kind()) {
    case ValueKind::kSymbolic:
      outs->push_back(v.out());
      return absl::OkStatus();
    case ValueKind::kOp:
      targets->push_back(v.node());
      return absl::OkStatus();
    case ValueKind::kTuple:
    case ValueKind::kList:
      for (const Value& i : v.items()) {
        RN_RETURN_IF_ERROR(CollectFetches(i, span, outs, targets));
      }
      return absl::OkStatus();
    case ValueKind::kRecord:
      for (const Field& f : v.fields()) {
        RN_RETURN_IF_ERROR(CollectFetches(f.second, span, outs, targets));
      }
      return absl::OkStatus();
    case ValueKind::kTensor:
    case ValueKind::kNone:
      return absl::OkStatus();
    default:
      return ErrorAt(span, StrCat("run fetches tensors, ops, and tuples, lists "
                                  "or records of them; got ",
                                  DescribeValue(v)));
  }
}

absl::StatusOr<Session::Feeds> Interpreter::ConvertFeeds(
    const Value& feeds, const lang::RunExpr& e) {
  Value record = feeds;
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
  Session::Feeds feed_list;
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
    if (IsVariableNode(b->value.out().node)) {
      // Its reads, in loops, branches and on other devices and tasks, read
      // the session's value: a feed would reach only some of them.
      lang::Diagnostic d;
      d.message = StrCat(
          "cannot feed '", name, "': it is a ",
          b->kind == BindingKind::kState ? "state" : "var",
          ", whose value lives in the session between runs; set it with "
          "run (",
          name, " := value) before this run, or declare an input to feed");
      d.span = span;
      if (b->span.known()) {
        d.notes.push_back(Note(b->span, StrCat(name, " declared here")));
      }
      return DiagStatus(std::move(d));
    }
    const DType dtype = b->value.tensor_dtype();
    const Shape shape = b->value.tensor_shape();
    RN_ASSIGN_OR_RETURN(
        Value tv,
        builder_.ToTensor(value, span, StrCat("the feed for '", name, "'")));
    if (tv.is_symbolic()) {
      return ErrorAt(span,
                     StrCat("the feed for '", name, "' must be concrete, got ",
                            DescribeValue(tv)));
    }
    Tensor t = tv.tensor();
    if (t.dtype() != dtype) {
      if ((t.dtype() == DType::kBool) != (dtype == DType::kBool)) {
        return ErrorAt(span, StrCat("the feed for '", name, "' is ",
                                    DescribeValue(tv), " but '", name, "' is ",
                                    DTypeName(dtype), shape.ToString()));
      }
      RN_ASSIGN_OR_RETURN(Tensor cast, builder_.LiteralAs(tv, dtype));
      if (IsInteger(t.dtype()) || IsInteger(dtype)) {
        // Where an integer is involved a changed value is a wrong number
        // (2.7 fed to an i32 would run as 2): convert only exactly. A float
        // narrowed to a smaller float rounds, as TensorFlow's feeds do.
        RN_ASSIGN_OR_RETURN(Tensor back, builder_.Cast(cast, t.dtype()));
        if (std::optional<int64_t> i = FirstChangedElement(t, back)) {
          return ErrorAt(
              span,
              StrCat("the feed for '", name, "' is ", DTypeName(t.dtype()),
                     " but '", name, "' is ", DTypeName(dtype),
                     ", and element ", *i, " (", ExactElement(t, *i),
                     ") would change to ", ExactElement(cast, *i), "; feed ",
                     DTypeName(dtype), " values, or declare '", name, "' as ",
                     DTypeName(t.dtype())));
        }
      }
      t = std::move(cast);
    }
    if (!shape.IsCompatibleWith(t.shape())) {
      return ErrorAt(span, StrCat("the feed for '", name, "' has shape ",
                                  t.shape().ToString(), " but '", name, "' is ",
                                  DTypeName(dtype), shape.ToString()));
    }
    feed_list.emplace_back(b->value.out(), std::move(t));
  }
  return feed_list;
}

absl::Status Interpreter::CheckEnqueuesCanFinish(
    const std::vector<NodeOut>& outs, const std::vector<Node*>& targets,
    const Session::Feeds& feeds, const lang::RunExpr& e) {
  // A runner, or another task of a cluster, may dequeue while this run
  // waits; otherwise only the run itself can: the script waits for it.
  if (host_->runners_running() || options_.cluster) {
    return absl::OkStatus();
  }
  bool any = false;
  for (const Node* n : targets) any |= n->op() == "enqueue_many";
  if (!any) return absl::OkStatus();
  // The queues this run dequeues from: the nodes it runs are those
  // Session::Run prunes to.
  std::vector<NodeOut> fed;
  for (const auto& [out, t] : feeds) fed.push_back(out);
  absl::StatusOr<PrunedGraph> needed = PruneGraph(graph(), outs, targets, fed);
  if (!needed.ok()) return absl::OkStatus();  // the run reports it
  std::set<const Node*> dequeued;
  for (const Node* n : needed->nodes) {
    if ((n->op() == "dequeue" || n->op() == "dequeue_many") &&
        n->num_inputs() > 0) {
      dequeued.insert(n->input(0).node);
    }
  }
  for (const Node* n : targets) {
    if (n->op() != "enqueue_many" || n->num_inputs() < 2) continue;
    const Node* queue = n->input(0).node;
    if (dequeued.contains(queue)) continue;
    absl::StatusOr<int64_t> capacity =
        GetAttrOr<int64_t>(queue->attrs(), "capacity", int64_t{1});
    if (!capacity.ok() || queue->op() != "queue") continue;
    // The elements enqueued: the first component's first dimension, as fed
    // or as its shape says.
    const NodeOut first = n->input(1);
    int64_t rows = -1;
    for (const auto& [out, t] : feeds) {
      if (out == first && t.rank() > 0) rows = t.shape().dim(0);
    }
    const Shape& shape = first.node->output_shape(first.index);
    if (rows < 0 && !shape.unknown_rank() && shape.rank() > 0) {
      rows = shape.dim(0);
    }
    if (rows <= *capacity) continue;
    return ErrorAt(
        e.span,
        StrCat("this run enqueues ", rows, " elements into queue '",
               queue->name(), "' of capacity ", *capacity,
               " (enqueue_many), and nothing can dequeue them while it waits "
               "(no runner is running): it could never finish; enqueue at "
               "most ",
               *capacity,
               " elements per run, raise the capacity, or feed the queue "
               "from a runner (docs/queues.md)"));
  }
  return absl::OkStatus();
}

absl::StatusOr<std::vector<Tensor>> Interpreter::CheckRun(
    const std::vector<NodeOut>& outs, const std::vector<Node*>& targets,
    const Session::Feeds& feeds, const lang::RunExpr& e) {
  // The walk Session::Run prunes with: a needed placeholder that is not
  // fed is a missing feed, the first declared reported.
  std::vector<NodeOut> fed;
  for (const auto& [out, t] : feeds) fed.push_back(out);
  absl::StatusOr<PrunedGraph> needed = PruneGraph(graph(), outs, targets, fed);
  if (!needed.ok())
    return ErrorAt(e.span, std::string(needed.status().message()));
  if (!needed->missing_feeds.empty()) {
    const Node* missing = needed->missing_feeds.front();
    return MissingFeed(StrCat("missing feed for input '", missing->name(), "'"),
                       missing, e.span);
  }
  std::vector<Tensor> results;
  for (const NodeOut& o : outs) {
    results.push_back(Placeholder(o.node->output_dtype(o.index),
                                  o.node->output_shape(o.index)));
  }
  return results;
}

absl::StatusOr<std::vector<Tensor>> Interpreter::SessionRun(
    const std::vector<NodeOut>& outs, const std::vector<Node*>& targets,
    const Session::Feeds& feeds, const lang::RunExpr& e) {
  absl::StatusOr<std::vector<Tensor>> r =
      host_->session().Run(feeds, outs, targets, {.cancelled = &interrupted_});
  if (r.ok()) return r;
  // (Cancelled for another reason, such as an enqueue to a closed queue,
  // is reported as it is.)
  if (r.status().code() == absl::StatusCode::kCancelled &&
      interrupted_.exchange(false)) {  // this interruption is consumed here
    return ErrorAt(e.span, "interrupted");
  }
  // A runner that failed closed its queue: what this run met (the end of
  // the queue) follows from that error, which is the one to report.
  if (absl::Status runner = host_->runners_error(); !runner.ok()) {
    return AddNote(runner, e.span, "which stopped this run");
  }
  const std::string msg(ToStd(r.status().message()));
  std::optional<std::string> node = NodeNameOf(r.status());
  if (absl::StartsWith(msg, "missing feed for input '") && node) {
    return MissingFeed(msg, graph().FindNode(*node), e.span);
  }
  lang::Diagnostic d = ToDiagnostic(r.status(), e.span);
  if (d.span.line != e.span.line || d.span.col != e.span.col ||
      d.span.file != e.span.file) {
    d.notes.push_back(Note(e.span, "while running this"));
  }
  // A dequeue from a closed queue: the end of the input, which ends the
  // host loop around the run (or is an error elsewhere).
  if (r.status().code() == absl::StatusCode::kOutOfRange) {
    return EndOfData(DiagStatus(std::move(d)));
  }
  return DiagStatus(std::move(d));
}

}  // namespace runnel::interp
