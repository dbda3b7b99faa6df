// The host builtins: print, fmt, assert, len, float, int, arg, exit, sleep,
// progress, report.
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
#include "common_runtime/trace.h"
#include "framework/op_registry.h"
#include "interpreter/builtins/internal.h"
#include "interpreter/control_flow.h"
#include "interpreter/data.h"
#include "interpreter/diag.h"
#include "interpreter/interpreter.h"
#include "interpreter/summaries.h"
#include "io/csv_reader.h"
#include "io/idx_reader.h"
#include "io/npy.h"

namespace runnel::interp {
namespace {

// Host values for fmt: numbers stay numbers so "{:.3f}" works; f32 values
// stay floats so "{}" prints 0.1, not 0.10000000149011612. With
// `ints_as_floats` integers become doubles too ("{:.2f}" of a step count).
absl::Status PushFormatArg(
    fmt::dynamic_format_arg_store<fmt::format_context>* store, const Value& v,
    const char* name, bool ints_as_floats) {
  auto push = [&](auto x) {
    if (name != nullptr) {
      store->push_back(fmt::arg(name, x));
    } else {
      store->push_back(x);
    }
  };
  if (v.is_concrete() && v.tensor().num_elements() == 1 &&
      v.tensor().rank() == 0) {
    const DType d = v.tensor().dtype();
    if (d == DType::kBool) {
      push(v.tensor().data<bool>()[0]);
    } else if (IsInteger(d) && !ints_as_floats) {
      push(*v.AsInt());
    } else if (d == DType::kF64 || IsInteger(d)) {
      push(*v.AsDouble());
    } else {
      push(static_cast<float>(*v.AsDouble()));
    }
  } else if (v.kind() == ValueKind::kString) {
    push(v.str());
  } else {
    push(FormatValue(v));
  }
  return absl::OkStatus();
}

class ProgressIterator : public Iterator {
 public:
  ProgressIterator(Reporter* r, std::unique_ptr<Iterator> inner,
                   std::string label, int64_t total)
      : r_(r), inner_(std::move(inner)) {
    r_->Begin(std::move(label), total);
  }
  ~ProgressIterator() override {
    if (!ended_) r_->End();
  }
  absl::StatusOr<std::optional<Value>> Next() override {
    if (started_) r_->Step();
    started_ = true;
    absl::StatusOr<std::optional<Value>> v = inner_->Next();
    if (!v.ok() || !v->has_value()) {
      if (!ended_) r_->End();
      ended_ = true;
    }
    return v;
  }

 private:
  Reporter* r_;
  std::unique_ptr<Iterator> inner_;
  bool started_ = false, ended_ = false;
};

class ProgressIterable : public Iterable {
 public:
  ProgressIterable(Interpreter* in, Value inner, std::string label,
                   SourceSpan span)
      : in_(in),
        inner_(std::move(inner)),
        label_(std::move(label)),
        span_(std::move(span)) {}
  absl::StatusOr<std::unique_ptr<Iterator>> Begin() override {
    RN_ASSIGN_OR_RETURN(std::unique_ptr<Iterator> it, Iterate(inner_, span_));
    return std::unique_ptr<Iterator>(
        new ProgressIterator(&in_->reporter(), std::move(it), label_, Size()));
  }
  int64_t Size() const override { return IterationCount(inner_); }
  std::string Describe() const override {
    return StrCat("progress \"", label_, "\"");
  }

 private:
  Interpreter* in_;
  Value inner_;
  std::string label_;
  SourceSpan span_;
};

Result Print(Interpreter& in, Args& a) {
  if (in.check_mode()) return Value();
  std::string line;
  for (size_t i = 0; i < a.rest.size(); ++i) {
    if (i) line += " ";
    line += FormatValue(a.rest[i]);
  }
  line += "\n";
  std::fputs(line.c_str(), in.options().out);
  std::fflush(in.options().out);
  return Value();
}

Result Fmt(Interpreter& in, Args& a) {
  RN_ASSIGN_OR_RETURN(std::string format, StringArg(a, 0));
  std::string first_error;
  // An integer under a float spec ("{:.3f}") is formatted as a float, as
  // Python does: retry with integers as doubles before reporting.
  for (bool ints_as_floats : {false, true}) {
    fmt::dynamic_format_arg_store<fmt::format_context> store;
    for (const Value& v : a.rest) {
      RN_RETURN_IF_ERROR(PushFormatArg(&store, v, nullptr, ints_as_floats));
    }
    for (const Field& f : a.named) {
      RN_RETURN_IF_ERROR(
          PushFormatArg(&store, f.second, f.first.c_str(), ints_as_floats));
    }
    try {
      return Value::String(fmt::vformat(format, store));
    } catch (const fmt::format_error& e) {
      if (first_error.empty()) first_error = e.what();
    }
  }
  return ErrorAt(a.span, StrCat("fmt: ", first_error, " in \"", format, "\""));
}

Result Assert(Interpreter& in, Args& a) {
  if (in.check_mode()) return Value();
  const Value& c = a[0];
  if (c.is_symbolic()) {
    return ErrorAt(a.span_of(0),
                   "assert needs a concrete condition; this one is symbolic "
                   "(compute it with run first)");
  }
  if (!c.is_concrete()) {
    return ErrorAt(a.span_of(0), StrCat("assert needs a bool tensor, got ",
                                        DescribeValue(c)));
  }
  bool ok = true;
  for (double d : c.tensor().ToDoubles()) {
    if (d == 0 || std::isnan(d)) ok = false;
  }
  if (ok) return Value();
  std::string msg = "assertion failed";
  if (a[1].kind() == ValueKind::kString && !a[1].str().empty()) {
    msg += ": " + a[1].str();
  } else if (!a[1].is_none() && a[1].kind() != ValueKind::kString) {
    msg += ": " + FormatValue(a[1]);
  }
  return ErrorAt(a.span, msg);
}

Result Allclose(Interpreter& in, Args& a) {
  RN_ASSIGN_OR_RETURN(double rtol, NumberArg(a, 2));
  RN_ASSIGN_OR_RETURN(double atol, NumberArg(a, 3));
  for (int i : {0, 1}) {
    RN_ASSIGN_OR_RETURN(
        Value v, in.builder().ToTensor(a[i], a.span_of(i), ParamName(a, i)));
    if (v.is_symbolic()) {
      return ErrorAt(a.span_of(i),
                     "allclose needs concrete values; this one is symbolic "
                     "(compute it with run first)");
    }
  }
  RN_ASSIGN_OR_RETURN(Tensor x,
                      in.builder().ToConcrete(a[0], DType::kF64, a.span_of(0),
                                              ParamName(a, 0)));
  RN_ASSIGN_OR_RETURN(Tensor y,
                      in.builder().ToConcrete(a[1], DType::kF64, a.span_of(1),
                                              ParamName(a, 1)));
  OpSite site{a.span};
  Value vx = Value::Concrete(x), vy = Value::Concrete(y);
  RN_ASSIGN_OR_RETURN(Value diff,
                      in.builder().ApplyOp("sub", {vx, vy}, {}, site));
  RN_ASSIGN_OR_RETURN(diff, in.builder().ApplyOp("abs", {diff}, {}, site));
  RN_ASSIGN_OR_RETURN(Value tol, in.builder().ApplyOp("abs", {vy}, {}, site));
  RN_ASSIGN_OR_RETURN(
      tol, in.builder().ApplyOp(
               "mul", {tol, Value::Concrete(Tensor::Scalar<double>(rtol))}, {},
               site));
  RN_ASSIGN_OR_RETURN(
      tol, in.builder().ApplyOp(
               "add", {tol, Value::Concrete(Tensor::Scalar<double>(atol))}, {},
               site));
  RN_ASSIGN_OR_RETURN(
      Value ok, in.builder().ApplyOp("less_equal", {diff, tol}, {}, site));
  RN_ASSIGN_OR_RETURN(ok, in.builder().ApplyOp("all", {ok}, {}, site));
  return ok;
}

Result Len(Interpreter& in, Args& a) {
  const Value& v = a[0];
  int64_t n = -1;
  switch (v.kind()) {
    case ValueKind::kString:
      n = static_cast<int64_t>(v.str().size());
      break;
    case ValueKind::kSymbolic:
    case ValueKind::kTensor: {
      Shape s = v.tensor_shape();
      if (!s.unknown_rank() && s.rank() > 0) n = s.dim(0);
      if (s.rank() == 0 && !s.unknown_rank()) {
        return ErrorAt(a.span_of(0), "len() of a scalar");
      }
      break;
    }
    default:
      n = IterationCount(v);
  }
  if (n < 0) {
    return ErrorAt(a.span_of(0),
                   StrCat("len() is not known for ", DescribeValue(v)));
  }
  return Value::Int(n);
}

Result ToFloat(Interpreter& in, Args& a) {
  const Value& v = a[0];
  if (v.kind() == ValueKind::kString) {
    char* end = nullptr;
    double d = std::strtod(v.str().c_str(), &end);
    if (v.str().empty() || *end != '\0') {
      return ErrorAt(a.span_of(0),
                     StrCat("float(): \"", v.str(), "\" is not a number"));
    }
    return Value::Float(d);
  }
  std::optional<double> d = v.AsDouble();
  if (!d) {
    return ErrorAt(a.span_of(0), StrCat("float() needs a concrete scalar, got ",
                                        DescribeValue(v)));
  }
  return Value::Float(*d);
}

Result ToInt(Interpreter& in, Args& a) {
  const Value& v = a[0];
  double d;
  if (v.kind() == ValueKind::kString) {
    char* end = nullptr;
    long long i = std::strtoll(v.str().c_str(), &end, 10);
    if (v.str().empty() || *end != '\0') {
      return ErrorAt(a.span_of(0),
                     StrCat("int(): \"", v.str(), "\" is not an integer"));
    }
    d = static_cast<double>(i);
    if (i > INT32_MAX || i < INT32_MIN) {
      return Value::Concrete(Tensor::Scalar<int64_t>(i), true);
    }
    return Value::Int(i);
  }
  std::optional<double> x = v.AsDouble();
  if (!x || !std::isfinite(*x)) {
    return ErrorAt(a.span_of(0), StrCat("int() needs a finite concrete "
                                        "scalar, got ",
                                        DescribeValue(v)));
  }
  d = std::trunc(*x);
  if (d > INT32_MAX || d < INT32_MIN) {
    return Value::Concrete(Tensor::Scalar<int64_t>(static_cast<int64_t>(d)),
                           true);
  }
  return Value::Int(static_cast<int64_t>(d));
}

// sleep(seconds): waits on the host (benchmarks make stragglers with it);
// `runnel check` does not wait.
Result Sleep(Interpreter& in, Args& a) {
  RN_ASSIGN_OR_RETURN(double seconds, NumberArg(a, 0));
  if (!(seconds >= 0) || seconds > 86400) {
    return ErrorAt(a.span_of(0),
                   StrCat("sleep needs 0 to 86400 seconds, got ", seconds));
  }
  if (!in.check_mode()) {
    std::this_thread::sleep_for(std::chrono::duration<double>(seconds));
  }
  return None();
}

Result Exit(Interpreter& in, Args& a) {
  RN_ASSIGN_OR_RETURN(int64_t code, IntArg(a, 0));
  if (code < 0 || code > 255) {
    return ErrorAt(a.span_of(0),
                   StrCat("exit code must be in 0..255, got ", code));
  }
  return ExitRequest(in.check_mode() ? 0 : static_cast<int>(code));
}

// task(): this process's place in its cluster (docs/cluster.md).
Result Task(Interpreter& in, Args& a) {
  const Options& o = in.options();
  return Value::Record({{"job", Value::String(o.task_job)},
                        {"index", Value::Int(o.task_index)},
                        {"workers", Value::Int(o.task_workers)},
                        {"ps", Value::Int(o.task_ps)},
                        {"chief", Value::Bool(o.task_chief)}});
}

// An i64: budgets reach past 2 GiB, past an int literal's i32.
Result MemoryBudget(Interpreter& in, Args&) {
  return Value::Concrete(Tensor::Scalar<int64_t>(in.options().memory_budget));
}

Result Arg(Interpreter& in, Args& a) {
  RN_ASSIGN_OR_RETURN(std::string name, StringArg(a, 0));
  const std::string* text = in.FindArg(name);
  const Value& def = a[1];
  if (text == nullptr) return def;
  auto bad = [&](const char* what) {
    return ErrorAt(a.span, StrCat("--arg ", name, "=", *text, ": expected ",
                                  what, " (like the default)"));
  };
  if (def.kind() == ValueKind::kString || def.is_none()) {
    return Value::String(*text);
  }
  if (def.is_concrete() && def.tensor().rank() == 0) {
    const DType d = def.tensor().dtype();
    char* end = nullptr;
    if (d == DType::kBool) {
      if (*text == "true" || *text == "1") return Value::Bool(true);
      if (*text == "false" || *text == "0") return Value::Bool(false);
      return bad("true or false");
    }
    if (IsInteger(d)) {
      long long v = std::strtoll(text->c_str(), &end, 10);
      if (text->empty() || *end != '\0') return bad("an integer");
      if (d == DType::kI32 && (v > INT32_MAX || v < INT32_MIN)) {
        return bad("an i32 integer");
      }
      RN_ASSIGN_OR_RETURN(Tensor t,
                          in.builder().Cast(Tensor::Scalar<int64_t>(v), d));
      return Value::Concrete(t, def.literal());
    }
    double v = std::strtod(text->c_str(), &end);
    if (text->empty() || *end != '\0') return bad("a number");
    RN_ASSIGN_OR_RETURN(Tensor t,
                        in.builder().Cast(Tensor::Scalar<double>(v), d));
    return Value::Concrete(t, def.literal());
  }
  return ErrorAt(a.span_of(1),
                 StrCat("arg(): the default must be a number, bool or string, "
                        "got ",
                        DescribeValue(def)));
}

Result Progress(Interpreter& in, Args& a) {
  std::string label;
  if (!a[1].is_none()) {
    RN_ASSIGN_OR_RETURN(label, StringArg(a, 1));
  }
  const Value& v = a[0];
  switch (v.kind()) {
    case ValueKind::kRange:
    case ValueKind::kTuple:
    case ValueKind::kList:
    case ValueKind::kTensor:
    case ValueKind::kDataset:
    case ValueKind::kIterable:
      break;
    default:
      return ErrorAt(a.span_of(0), StrCat("progress() needs something to "
                                          "iterate over, got ",
                                          DescribeValue(v)));
  }
  return Value::OfIterable(
      std::make_shared<ProgressIterable>(&in, v, label, a.span_of(0)));
}

Result Report(Interpreter& in, Args& a) {
  std::vector<std::pair<std::string, std::string>> json, shown;
  std::vector<std::pair<std::string, double>> numbers;  // for --logdir
  for (size_t i = 0; i < a.named.size(); ++i) {
    const auto& [name, v] = a.named[i];
    if (v.is_symbolic()) {
      return ErrorAt(
          a.named_spans[i],
          StrCat("report: '", name, "' is symbolic; fetch its value with run"));
    }
    if (v.is_concrete() && v.tensor().num_elements() == 1) {
      double d = *v.AsDouble();
      numbers.emplace_back(name, d);
      if (v.tensor().dtype() == DType::kBool) {
        json.emplace_back(name, d != 0 ? "true" : "false");
        shown.emplace_back(name, d != 0 ? "true" : "false");
      } else {
        const bool narrow =
            IsFloating(v.tensor().dtype()) && v.tensor().dtype() != DType::kF64;
        json.emplace_back(name, !std::isfinite(d) ? std::string("null")
                                : narrow
                                    ? fmt::format("{}", static_cast<float>(d))
                                    : fmt::format("{}", d));
        shown.emplace_back(name, IsInteger(v.tensor().dtype())
                                     ? fmt::format("{}", *v.AsInt())
                                     : fmt::format("{:.4g}", d));
      }
    } else {
      std::string s = FormatValue(v);
      json.emplace_back(name, JsonString(s));
      shown.emplace_back(name, s);
    }
  }
  if (!a.rest.empty()) {
    return ErrorAt(a.rest_spans[0],
                   "report takes named values: report(loss = l)");
  }
  if (!in.check_mode()) {
    // Each GPU's memory (common_runtime/trace.h); nothing without a GPU.
    MemoryReport memory =
        ReportMemory(DeviceMemoryOf(in.host().session().devices()));
    json.insert(json.end(), memory.json.begin(), memory.json.end());
    shown.insert(shown.end(), memory.shown.begin(), memory.shown.end());
  }
  RN_RETURN_IF_ERROR(in.reporter().Report(json, shown));
  if (Summaries* summaries = in.summaries(); summaries != nullptr) {
    absl::Status s = summaries->Report(in.host(), numbers);
    if (!s.ok()) return ErrorAt(a.span, StrCat("--logdir: ", s.message()));
  }
  return Value();
}

}  // namespace

// Host.
void AddHost(std::vector<Builtin>& b) {
  b.push_back({"print", {}, Print, /*variadic=*/true});
  b.push_back({"fmt", {P("format")}, Fmt, true, true});
  b.push_back({"assert", {P("cond"), P("message", None())}, Assert});
  b.push_back({"allclose",
               {P("a"), P("b"), P("rtol", Value::Float(1e-5)),
                P("atol", Value::Float(1e-8))},
               Allclose});
  b.push_back({"len", {P("x")}, Len});
  b.push_back({"float", {P("x")}, ToFloat});
  b.push_back({"int", {P("x")}, ToInt});
  b.push_back({"exit", {P("code", Value::Int(0))}, Exit});
  b.push_back({"arg", {P("name"), P("default", None())}, Arg});
  b.push_back({"task", {}, Task});
  b.push_back({"memory_budget", {}, MemoryBudget});
  b.push_back({"sleep", {P("seconds")}, Sleep});
  b.push_back({"progress", {P("iterable"), P("label", None())}, Progress});
  b.push_back({"report", {}, Report, true, true});
}

}  // namespace runnel::interp
