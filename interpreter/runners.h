// Runners: host threads that run an op over and over until its queue
// closes (`runner(q, op, threads = 2)`, docs/queues.md), as TensorFlow's
// QueueRunner does.
//
//   Runners runners(&session);
//   runners.Start({.targets = {enqueue_node}, .close = close_node,
//                  .cancel = close_and_cancel_node, .threads = 2,
//                  .span = call_span});
//   ... the script's runs dequeue what they enqueue ...
//   absl::Status first_error = runners.StopAll();
//
// A runner's run that fails with OutOfRange (its reader or an upstream
// queue is exhausted) ends that thread; the last thread of the runner to
// end closes the queue, so its consumers get what is left and then end
// too. A run that is Cancelled (the queue was closed, or StopAll) ends the
// thread quietly. Any other error is kept (first one wins, with the op's
// place and a note at the `runner` call) and closes the queue cancelling
// the pending enqueues, so no consumer waits for input that cannot come.
//
// Thread-safety: Start, error and StopAll are called by the interpreter's
// thread; the runner threads only use the session (thread-safe) and the
// error, under a lock. StopAll cancels every run in flight (a blocked
// enqueue too) and joins every thread.
#ifndef RUNNEL_INTERPRETER_RUNNERS_H_
#define RUNNEL_INTERPRETER_RUNNERS_H_

#include <atomic>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "absl/status/status.h"
#include "base/source_span.h"
#include "common_runtime/session.h"

namespace runnel::interp {

class Runners {
 public:
  struct Spec {
    std::vector<Node*> targets;  // run on every step
    Node* close = nullptr;       // closes the queue
    Node* cancel = nullptr;      // closes it, cancelling pending enqueues
    int threads = 1;
    SourceSpan span;  // the `runner` call
  };

  explicit Runners(Session* session) : session_(session) {}
  ~Runners();
  Runners(const Runners&) = delete;
  Runners& operator=(const Runners&) = delete;

  void Start(Spec spec);
  // The first runner error so far (a diagnostic status), or OK.
  absl::Status error() const;
  // Stops every runner and joins its threads; returns error().
  absl::Status StopAll();
  bool empty() const { return groups_.empty(); }

 private:
  struct Group {
    Spec spec;
    std::atomic<int> running{0};
    std::vector<std::thread> threads;
  };
  void Loop(Group* group, int thread);
  void Fail(const Group& group, const absl::Status& s);

  Session* session_;
  std::atomic<bool> stop_{false};
  std::vector<std::unique_ptr<Group>> groups_;
  mutable std::mutex mu_;
  absl::Status error_;
};

}  // namespace runnel::interp

#endif  // RUNNEL_INTERPRETER_RUNNERS_H_
