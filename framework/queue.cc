#include "framework/queue.h"

#include <cstring>
#include <utility>

#include "base/strings.h"

namespace runnel {
namespace {

// Row `i` of `batch` (first dimension), as a tensor of its own.
Tensor Row(const Tensor& batch, int64_t i) {
  std::vector<int64_t> dims(batch.shape().dims().begin() + 1,
                            batch.shape().dims().end());
  Tensor row(batch.dtype(), Shape(std::move(dims)));
  const size_t bytes = row.bytes();
  if (bytes > 0) {
    std::memcpy(row.raw_data(),
                static_cast<const char*>(batch.raw_data()) + i * bytes, bytes);
  }
  return row;
}

}  // namespace

Queue::Queue(std::string name, Options options)
    : name_(std::move(name)),
      options_(std::move(options)),
      rng_(options_.seed) {}

absl::Status Queue::Check(const Tuple& tuple, bool many) const {
  if (tuple.size() != options_.dtypes.size()) {
    return absl::InvalidArgumentError(
        StrCat("queue '", name_, "' holds ", options_.dtypes.size(),
               " component(s), got ", tuple.size()));
  }
  for (size_t c = 0; c < tuple.size(); ++c) {
    const Tensor& t = tuple[c];
    Shape element = t.shape();
    if (many) {
      if (t.rank() == 0 || t.dim(0) != tuple[0].dim(0)) {
        return absl::InvalidArgumentError(StrCat(
            "enqueue_many needs components with one first dimension (the "
            "batch), got ",
            t.shape().ToString(), " for component ", c));
      }
      element = Shape(std::vector<int64_t>(t.shape().dims().begin() + 1,
                                           t.shape().dims().end()));
    }
    if (t.dtype() != options_.dtypes[c] || element != options_.shapes[c]) {
      return absl::InvalidArgumentError(
          StrCat("component ", c, " of queue '", name_, "' is ",
                 DTypeName(options_.dtypes[c]), options_.shapes[c].ToString(),
                 ", got ", DTypeName(t.dtype()), element.ToString(),
                 many ? " (after the batch dimension)" : ""));
    }
  }
  return absl::OkStatus();
}

absl::Status Queue::ClosedError() const {
  return absl::CancelledError(StrCat("queue '", name_, "' is closed"));
}

bool Queue::Watch(CancellationManager* cm, int64_t id,
                  CancellationManager::Token* token) {
  *token = CancellationManager::kCancelled;
  if (cm == nullptr) return true;
  std::weak_ptr<Queue> self = weak_from_this();
  *token = cm->Register([self, id] {
    if (std::shared_ptr<Queue> q = self.lock()) q->Cancel(id);
  });
  return *token != CancellationManager::kCancelled;
}

void Queue::Enqueue(Tuple tuple, bool many, CancellationManager* cm,
                    Done done) {
  absl::Status s = Check(tuple, many);
  if (!s.ok()) return done(s);
  EnqueueAttempt attempt{.done = std::move(done), .cm = cm};
  if (many) {
    const int64_t rows = tuple.empty() ? 0 : tuple[0].dim(0);
    for (int64_t i = 0; i < rows; ++i) {
      Tuple element;
      for (const Tensor& t : tuple) element.push_back(Row(t, i));
      attempt.elements.push_back(std::move(element));
    }
  } else {
    attempt.elements.push_back(std::move(tuple));
  }
  Callbacks ready;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (closed_) {
      ready.push_back(
          [d = std::move(attempt.done), e = ClosedError()] { d(e); });
    } else {
      attempt.id = next_id_++;
      if (!Watch(cm, attempt.id, &attempt.token)) {
        ready.push_back([d = std::move(attempt.done)] {
          d(absl::CancelledError("cancelled"));
        });
      } else {
        enqueues_.push_back(std::move(attempt));
        Flush(&ready);
      }
    }
  }
  for (auto& r : ready) r();
}

void Queue::Dequeue(int64_t n, bool many, CancellationManager* cm,
                    DequeueDone done) {
  if (n < 0 || (!many && n != 1)) {
    return done(
        absl::InvalidArgumentError(StrCat("cannot dequeue ", n, " elements")),
        {});
  }
  Callbacks ready;
  {
    std::lock_guard<std::mutex> lock(mu_);
    DequeueAttempt attempt{.id = next_id_++,
                           .n = n,
                           .many = many,
                           .done = std::move(done),
                           .cm = cm};
    if (!Watch(cm, attempt.id, &attempt.token)) {
      ready.push_back([d = std::move(attempt.done)] {
        d(absl::CancelledError("cancelled"), {});
      });
    } else {
      dequeues_.push_back(std::move(attempt));
      Flush(&ready);
    }
  }
  for (auto& r : ready) r();
}

void Queue::Close(bool cancel_pending_enqueues) {
  Callbacks ready;
  {
    std::lock_guard<std::mutex> lock(mu_);
    closed_ = true;
    if (cancel_pending_enqueues) {
      for (EnqueueAttempt& e : enqueues_) {
        if (e.cm != nullptr) e.cm->Deregister(e.token);
        ready.push_back([d = std::move(e.done), s = ClosedError()] { d(s); });
      }
      enqueues_.clear();
    }
    Flush(&ready);
  }
  for (auto& r : ready) r();
}

bool Queue::closed() const {
  std::lock_guard<std::mutex> lock(mu_);
  return closed_;
}

int64_t Queue::size() const {
  std::lock_guard<std::mutex> lock(mu_);
  return static_cast<int64_t>(elements_.size());
}

void Queue::Cancel(int64_t id) {
  Callbacks ready;
  {
    std::lock_guard<std::mutex> lock(mu_);
    const absl::Status cancelled = absl::CancelledError("cancelled");
    for (auto it = enqueues_.begin(); it != enqueues_.end(); ++it) {
      if (it->id != id) continue;
      ready.push_back([d = std::move(it->done), cancelled] { d(cancelled); });
      enqueues_.erase(it);
      break;
    }
    for (auto it = dequeues_.begin(); it != dequeues_.end(); ++it) {
      if (it->id != id) continue;
      PutBack(std::move(it->taken));
      ready.push_back(
          [d = std::move(it->done), cancelled] { d(cancelled, {}); });
      dequeues_.erase(it);
      break;
    }
    // Room or elements may have appeared for the others.
    Flush(&ready);
  }
  for (auto& r : ready) r();
}

Queue::Tuple Queue::TakeOne() {
  if (options_.shuffle && elements_.size() > 1) {
    std::uniform_int_distribution<size_t> pick(0, elements_.size() - 1);
    std::swap(elements_[pick(rng_)], elements_.back());
    Tuple t = std::move(elements_.back());
    elements_.pop_back();
    return t;
  }
  Tuple t = std::move(elements_.front());
  elements_.pop_front();
  return t;
}

void Queue::PutBack(std::vector<Tuple> taken) {
  for (auto it = taken.rbegin(); it != taken.rend(); ++it) {
    elements_.push_front(std::move(*it));
  }
}

Queue::Tuple Queue::Stack(const std::vector<Tuple>& elements, bool many) const {
  if (!many) return elements.front();
  Tuple out;
  const int64_t n = static_cast<int64_t>(elements.size());
  for (size_t c = 0; c < options_.dtypes.size(); ++c) {
    std::vector<int64_t> dims = {n};
    const Shape& element = options_.shapes[c];
    dims.insert(dims.end(), element.dims().begin(), element.dims().end());
    Tensor batch(options_.dtypes[c], Shape(std::move(dims)));
    const size_t bytes = n > 0 ? batch.bytes() / n : 0;
    for (int64_t i = 0; i < n && bytes > 0; ++i) {
      std::memcpy(static_cast<char*>(batch.raw_data()) + i * bytes,
                  elements[i][c].raw_data(), bytes);
    }
    out.push_back(std::move(batch));
  }
  return out;
}

void Queue::Flush(Callbacks* ready) {
  const size_t capacity = static_cast<size_t>(options_.capacity);
  bool progress = true;
  while (progress) {
    progress = false;
    while (!enqueues_.empty()) {
      EnqueueAttempt& e = enqueues_.front();
      while (!e.elements.empty() && elements_.size() < capacity) {
        elements_.push_back(std::move(e.elements.front()));
        e.elements.pop_front();
        progress = true;
      }
      if (!e.elements.empty()) break;
      if (e.cm != nullptr) e.cm->Deregister(e.token);
      ready->push_back([d = std::move(e.done)] { d(absl::OkStatus()); });
      enqueues_.pop_front();
      progress = true;
    }
    while (!dequeues_.empty()) {
      DequeueAttempt& d = dequeues_.front();
      // A shuffling queue keeps enough to mix until it is closed.
      const size_t keep = closed_ || !options_.shuffle
                              ? 0
                              : static_cast<size_t>(options_.min_after_dequeue);
      while (static_cast<int64_t>(d.taken.size()) < d.n &&
             elements_.size() > keep) {
        d.taken.push_back(TakeOne());
        progress = true;
      }
      if (static_cast<int64_t>(d.taken.size()) == d.n) {
        Tuple value = Stack(d.taken, d.many);
        if (d.cm != nullptr) d.cm->Deregister(d.token);
        ready->push_back([done = std::move(d.done), v = std::move(value)] {
          done(absl::OkStatus(), v);
        });
        dequeues_.pop_front();
        progress = true;
        continue;
      }
      if (!closed_ || !enqueues_.empty()) break;
      // Closed, and nothing more will come.
      absl::Status s = absl::OutOfRangeError(
          d.many
              ? StrCat("out of range: queue '", name_, "' is closed and has ",
                       d.taken.size(), " of the ", d.n, " elements asked")
              : StrCat("out of range: queue '", name_,
                       "' is closed and empty"));
      PutBack(std::move(d.taken));
      if (d.cm != nullptr) d.cm->Deregister(d.token);
      ready->push_back([done = std::move(d.done), s] { done(s, {}); });
      dequeues_.pop_front();
      progress = true;
    }
  }
}

void SetQueueComponents(const QueueComponents& components, AttrMap* attrs) {
  (*attrs)["components"] = static_cast<int64_t>(components.dtypes.size());
  for (size_t i = 0; i < components.dtypes.size(); ++i) {
    (*attrs)[StrCat("dtype_", i)] = components.dtypes[i];
    (*attrs)[StrCat("shape_", i)] = components.shapes[i];
  }
}

absl::StatusOr<QueueComponents> GetQueueComponents(const AttrMap& attrs) {
  absl::StatusOr<int64_t> n = GetAttr<int64_t>(attrs, "components");
  if (!n.ok()) return n.status();
  QueueComponents out;
  for (int64_t i = 0; i < *n; ++i) {
    absl::StatusOr<DType> d = GetAttr<DType>(attrs, StrCat("dtype_", i));
    absl::StatusOr<Shape> s = GetAttr<Shape>(attrs, StrCat("shape_", i));
    if (!d.ok()) return d.status();
    if (!s.ok()) return s.status();
    out.dtypes.push_back(*d);
    out.shapes.push_back(*s);
  }
  return out;
}

}  // namespace runnel
