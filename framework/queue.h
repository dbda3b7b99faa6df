// A bounded queue of elements, each a tuple of tensors of fixed dtypes
// and shapes: the state behind the language's `queue` (docs/queues.md).
// It decouples the runs that produce input (runners, on host threads)
// from the runs that train on it.
//
//   auto q = std::make_shared<Queue>("q", Queue::Options{
//       .capacity = 256, .dtypes = {DType::kF32, DType::kI32},
//       .shapes = {Shape{784}, Shape{}}});
//   q->Enqueue({images, labels}, /*many=*/true, nullptr, [](Status s) {});
//   q->Dequeue(128, /*many=*/true, nullptr,
//              [](Status s, Queue::Tuple batch) { ... });
//
// Enqueue and Dequeue never block: each is an attempt served, in the order
// made, by callbacks as room or elements appear (so the kernels that call
// them, AsyncOpKernels, hold no executor thread while they wait). An
// attempt registered with a CancellationManager ends with Cancelled when
// that cancels (the run was interrupted or another partition failed).
//
// A FIFO queue gives elements in the order they came. A shuffling queue
// gives a uniformly random one of those it holds (seeded, so a program
// is repeatable), and only while it holds more than `min_after_dequeue`,
// so the elements stay well mixed; once closed it gives the rest.
//
// Close: no new enqueue is accepted (Cancelled); pending ones still
// complete unless `cancel_pending_enqueues`. A dequeue that cannot get its
// elements from a closed queue with nothing left to come ends with
// OutOfRange, and the elements it had taken go back.
//
// Thread-safety: every method may be called from any thread. Callbacks
// run without the queue's lock held, on the thread whose call let them
// finish.
#ifndef RUNNEL_FRAMEWORK_QUEUE_H_
#define RUNNEL_FRAMEWORK_QUEUE_H_

#include <cstdint>
#include <deque>
#include <functional>
#include <list>
#include <memory>
#include <mutex>
#include <random>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "base/cancellation.h"
#include "framework/attr_value.h"
#include "framework/resource_mgr.h"
#include "framework/tensor.h"

namespace runnel {

class Queue : public Resource, public std::enable_shared_from_this<Queue> {
 public:
  struct Options {
    int64_t capacity = 1;
    std::vector<DType> dtypes = {};
    std::vector<Shape> shapes = {};  // of one element, fully defined
    bool shuffle = false;
    int64_t min_after_dequeue = 0;
    uint64_t seed = 0;
  };
  // One tensor per component: an element, or (many) a batch of them.
  using Tuple = std::vector<Tensor>;
  using Done = std::function<void(const absl::Status&)>;
  using DequeueDone = std::function<void(const absl::Status&, Tuple)>;

  // `name` appears in errors.
  Queue(std::string name, Options options);
  Queue(const Queue&) = delete;
  Queue& operator=(const Queue&) = delete;

  const std::string& name() const { return name_; }
  const Options& options() const { return options_; }

  // InvalidArgument unless `tuple` has the queue's dtypes and element
  // shapes (with `many`, after one common first dimension).
  absl::Status Check(const Tuple& tuple, bool many) const;
  // Adds the tuple (`many`: each row of its components) at the back; `done`
  // runs when all of it is in.
  void Enqueue(Tuple tuple, bool many, CancellationManager* cm, Done done);
  // Takes `n` elements: with `many` stacked into components of first
  // dimension n, else (n = 1) the element itself.
  void Dequeue(int64_t n, bool many, CancellationManager* cm, DequeueDone done);
  void Close(bool cancel_pending_enqueues);
  bool closed() const;
  int64_t size() const;

 private:
  struct EnqueueAttempt {
    int64_t id = 0;
    std::deque<Tuple> elements = {};
    Done done = {};
    CancellationManager* cm = nullptr;
    CancellationManager::Token token = CancellationManager::kCancelled;
  };
  struct DequeueAttempt {
    int64_t id = 0;
    int64_t n = 0;
    bool many = false;
    std::vector<Tuple> taken = {};
    DequeueDone done = {};
    CancellationManager* cm = nullptr;
    CancellationManager::Token token = CancellationManager::kCancelled;
  };
  using Callbacks = std::vector<std::function<void()>>;

  // Serves the attempts that can go on; what finished goes to `ready`, to
  // run once the lock is released.
  void Flush(Callbacks* ready);
  Tuple TakeOne();
  // Gives `taken` back, so a later dequeue gets them (at the front of a
  // FIFO queue, in their order).
  void PutBack(std::vector<Tuple> taken);
  Tuple Stack(const std::vector<Tuple>& elements, bool many) const;
  // Registers the cancellation of attempt `id`; false when cm has already
  // cancelled.
  bool Watch(CancellationManager* cm, int64_t id,
             CancellationManager::Token* token);
  void Cancel(int64_t id);
  absl::Status ClosedError() const;

  const std::string name_;
  const Options options_;
  mutable std::mutex mu_;
  bool closed_ = false;
  int64_t next_id_ = 0;
  std::deque<Tuple> elements_;
  std::list<EnqueueAttempt> enqueues_;
  std::list<DequeueAttempt> dequeues_;
  std::mt19937_64 rng_;
};

// The components of a queue as node attributes: "components" (their
// count), "dtype_0", "shape_0", "dtype_1", ... The queue node and every op
// on it carry them, so shape functions check enqueues and type dequeues.
struct QueueComponents {
  std::vector<DType> dtypes;
  std::vector<Shape> shapes;
};
void SetQueueComponents(const QueueComponents& components, AttrMap* attrs);
absl::StatusOr<QueueComponents> GetQueueComponents(const AttrMap& attrs);

}  // namespace runnel

#endif  // RUNNEL_FRAMEWORK_QUEUE_H_
