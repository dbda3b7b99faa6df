// Iteration over host values (`for`): ranges, tuples and lists, tensors by
// rows, datasets by records, records by (name, value) pairs, iterables.
#include "interpreter/iteration.h"

#include <algorithm>

#include "base/status_macros.h"
#include "base/strings.h"
#include "interpreter/data.h"
#include "interpreter/diag.h"

namespace runnel::interp {
namespace {

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
  explicit RowIterator(Tensor t) : t_(std::move(t)) {}
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

absl::StatusOr<std::unique_ptr<Iterator>> Iterate(const Value& v,
                                                  const SourceSpan& span) {
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
      return std::unique_ptr<Iterator>(new RowIterator(v.tensor()));
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

int64_t IterationCount(const Value& v) {
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

}  // namespace runnel::interp
