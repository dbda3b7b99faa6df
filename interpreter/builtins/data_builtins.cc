// The data builtins: reading IDX, CSV, .npy and text files, datasets and
// their batches.
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
#include "io/csv_reader.h"
#include "io/idx_reader.h"
#include "io/npy.h"

namespace runnel::interp {
namespace {

class BatchIterator : public Iterator {
 public:
  BatchIterator(std::shared_ptr<const Dataset> d, std::vector<int64_t> order,
                int64_t size, bool drop_last)
      : d_(std::move(d)),
        order_(std::move(order)),
        size_(size),
        drop_last_(drop_last) {}
  absl::StatusOr<std::optional<Value>> Next() override {
    const int64_t n = static_cast<int64_t>(order_.size());
    if (pos_ >= n || (drop_last_ && pos_ + size_ > n)) {
      return std::optional<Value>();
    }
    const int64_t end = std::min(n, pos_ + size_);
    std::vector<int64_t> rows(order_.begin() + pos_, order_.begin() + end);
    pos_ = end;
    std::vector<Field> fields;
    for (const auto& [name, t] : d_->columns) {
      fields.emplace_back(name, Value::Concrete(GatherRows(t, rows)));
    }
    return std::optional<Value>(Value::Record(std::move(fields)));
  }

 private:
  std::shared_ptr<const Dataset> d_;
  std::vector<int64_t> order_;
  int64_t size_;
  bool drop_last_;
  int64_t pos_ = 0;
};

class BatchesIterable : public Iterable {
 public:
  BatchesIterable(std::shared_ptr<const Dataset> d, int64_t size, bool shuffle,
                  uint64_t seed, bool drop_last)
      : d_(std::move(d)),
        size_(size),
        shuffle_(shuffle),
        seed_(seed),
        drop_last_(drop_last) {}
  absl::StatusOr<std::unique_ptr<Iterator>> Begin() override {
    return std::unique_ptr<Iterator>(new BatchIterator(
        d_, RowOrder(d_->rows, shuffle_, seed_), size_, drop_last_));
  }
  int64_t Size() const override {
    return drop_last_ ? d_->rows / size_ : (d_->rows + size_ - 1) / size_;
  }
  std::string Describe() const override {
    return StrCat("batches of ", size_, " from ", d_->rows, " rows");
  }

 private:
  std::shared_ptr<const Dataset> d_;
  int64_t size_;
  bool shuffle_;
  uint64_t seed_;
  bool drop_last_;
};

Result LoadIdx(Interpreter& in, Args& a) {
  RN_ASSIGN_OR_RETURN(std::string path, StringArg(a, 0));
  absl::StatusOr<Tensor> t = ReadIdx(path);
  RN_RETURN_IF_ERROR(CheckFile(a, t.status()));
  return Value::Concrete(*t);
}

Result LoadNpy(Interpreter& in, Args& a) {
  RN_ASSIGN_OR_RETURN(std::string path, StringArg(a, 0));
  absl::StatusOr<Tensor> t = ReadNpy(path);
  RN_RETURN_IF_ERROR(CheckFile(a, t.status()));
  return Value::Concrete(*t);
}

// The bytes of a file as a u8 vector (text for character models).
Result LoadText(Interpreter& in, Args& a) {
  RN_ASSIGN_OR_RETURN(std::string path, StringArg(a, 0));
  absl::StatusOr<std::string> text = ReadFileToString(path);
  RN_RETURN_IF_ERROR(CheckFile(a, text.status()));
  Tensor t(DType::kU8, Shape{static_cast<int64_t>(text->size())});
  if (!text->empty()) std::memcpy(t.raw_data(), text->data(), text->size());
  return Value::Concrete(t);
}

Result SaveNpy(Interpreter& in, Args& a) {
  RN_ASSIGN_OR_RETURN(std::string path, StringArg(a, 0));
  RN_ASSIGN_OR_RETURN(
      Value v, in.builder().ToTensor(a[1], a.span_of(1), "save_npy: 'x'"));
  if (v.is_symbolic()) {
    return ErrorAt(a.span_of(1),
                   "save_npy needs a concrete tensor; this one is symbolic "
                   "(compute it with run first)");
  }
  if (in.check_mode()) return Value();
  RN_RETURN_IF_ERROR(CheckFile(a, WriteNpy(path, v.tensor())));
  return Value();
}

absl::StatusOr<std::shared_ptr<Dataset>> MakeDataset(
    Interpreter& in, const std::vector<Field>& columns,
    const std::vector<SourceSpan>& spans, const SourceSpan& span) {
  if (columns.empty()) {
    return ErrorAt(span,
                   "a dataset needs at least one column: dataset(x = "
                   "..., y = ...)");
  }
  auto d = std::make_shared<Dataset>();
  for (size_t i = 0; i < columns.size(); ++i) {
    const auto& [name, v] = columns[i];
    const SourceSpan& s = i < spans.size() ? spans[i] : span;
    RN_ASSIGN_OR_RETURN(
        Value t, in.builder().ToTensor(v, s, StrCat("column '", name, "'")));
    if (t.is_symbolic()) {
      return ErrorAt(s,
                     StrCat("column '", name, "' must be concrete data, got ",
                            DescribeValue(t)));
    }
    if (t.tensor().rank() == 0) {
      return ErrorAt(s, StrCat("column '", name,
                               "' must have a first dimension (rows), got a "
                               "scalar"));
    }
    const int64_t rows = t.tensor().dim(0);
    if (i > 0 && rows != d->rows) {
      return ErrorAt(s, StrCat("dataset columns must have the same number of "
                               "rows: '",
                               d->columns[0].first, "' has ", d->rows, ", '",
                               name, "' has ", rows));
    }
    d->rows = rows;
    d->columns.emplace_back(name, t.tensor());
  }
  return d;
}

Result DatasetFn(Interpreter& in, Args& a) {
  if (!a.rest.empty()) {
    return ErrorAt(a.rest_spans[0],
                   "dataset takes named columns: dataset(x = ..., y = ...)");
  }
  RN_ASSIGN_OR_RETURN(std::shared_ptr<Dataset> d,
                      MakeDataset(in, a.named, a.named_spans, a.span));
  return Value::OfDataset(std::move(d));
}

Result LoadCsv(Interpreter& in, Args& a) {
  RN_ASSIGN_OR_RETURN(std::string path, StringArg(a, 0));
  RN_ASSIGN_OR_RETURN(bool header, BoolArg(a, 1));
  absl::StatusOr<std::vector<std::pair<std::string, Tensor>>> cols =
      ReadCsv(path, header);
  RN_RETURN_IF_ERROR(CheckFile(a, cols.status()));
  auto d = std::make_shared<Dataset>();
  for (auto& [name, t] : *cols) {
    d->rows = t.dim(0);
    d->columns.emplace_back(name, std::move(t));
  }
  return Value::OfDataset(std::move(d));
}

Result Batches(Interpreter& in, Args& a) {
  const Value& ds = a[0];
  std::shared_ptr<const Dataset> d;
  if (ds.kind() == ValueKind::kDataset) {
    d = ds.dataset();
  } else if (ds.kind() == ValueKind::kRecord) {
    std::vector<SourceSpan> spans;
    RN_ASSIGN_OR_RETURN(std::shared_ptr<Dataset> made,
                        MakeDataset(in, ds.fields(), spans, a.span_of(0)));
    d = std::move(made);
  } else {
    return ErrorAt(a.span_of(0), StrCat("batches() needs a dataset, got ",
                                        DescribeValue(ds)));
  }
  RN_ASSIGN_OR_RETURN(int64_t size, IntArg(a, 1));
  if (size < 1) {
    return ErrorAt(a.span_of(1), StrCat("the batch size must be positive, "
                                        "got ",
                                        size));
  }
  RN_ASSIGN_OR_RETURN(bool shuffle, BoolArg(a, 2));
  RN_ASSIGN_OR_RETURN(int64_t seed, IntArg(a, 3));
  RN_ASSIGN_OR_RETURN(bool drop_last, BoolArg(a, 4));
  return Value::OfIterable(std::make_shared<BatchesIterable>(
      std::move(d), size, shuffle, static_cast<uint64_t>(seed), drop_last));
}

}  // namespace

// Data.
void AddData(std::vector<Builtin>& b) {
  b.push_back({"load_idx", {P("path")}, LoadIdx});
  b.push_back(
      {"load_csv", {P("path"), P("header", Value::Bool(true))}, LoadCsv});
  b.push_back({"load_npy", {P("path")}, LoadNpy});
  b.push_back({"load_text", {P("path")}, LoadText});
  b.push_back({"save_npy", {P("path"), P("x")}, SaveNpy});
  b.push_back({"dataset", {}, DatasetFn, true, true});
  b.push_back({"batches",
               {P("ds"), P("size"), P("shuffle", Value::Bool(false)),
                P("seed", Value::Int(0)), P("drop_last", Value::Bool(false))},
               Batches});
}

}  // namespace runnel::interp
