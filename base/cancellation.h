// Cancellation of the kernels of one run that wait without holding a
// thread (AsyncOpKernel: a queue's blocked enqueue or dequeue).
//
//   CancellationManager* cm = ctx->cancellation();  // nullptr when eager
//   const CancellationManager::Token t =
//       cm->Register([queue, id] { queue->Cancel(id); });
//   if (t == CancellationManager::kCancelled) { ...fail now... }
//   ...when the wait ends by itself: cm->Deregister(t);
//
// The executor owns one per run and calls StartCancel when the run aborts
// (an error in any partition of the step, Ctrl-C), so a blocked kernel
// ends with Cancelled instead of hanging the run.
//
// Thread-safety: every method may be called from any thread. A callback
// runs at most once, on the thread that calls StartCancel, after its lock
// is released: it may deregister itself or others, but it may also run
// just after a Deregister that raced with it, so it must cope with a wait
// that already ended (look the waiter up by id, as framework/queue.h does).
#ifndef RUNNEL_BASE_CANCELLATION_H_
#define RUNNEL_BASE_CANCELLATION_H_

#include <cstdint>
#include <functional>
#include <mutex>

#include "absl/container/flat_hash_map.h"

namespace runnel {

class CancellationManager {
 public:
  using Token = int64_t;
  // What Register returns when cancellation has already started.
  static constexpr Token kCancelled = -1;

  CancellationManager() = default;
  CancellationManager(const CancellationManager&) = delete;
  CancellationManager& operator=(const CancellationManager&) = delete;

  // Keeps `callback` to run on StartCancel; kCancelled (and nothing kept)
  // when that has already happened.
  Token Register(std::function<void()> callback);
  void Deregister(Token token);
  // Runs every registered callback once; later Registers get kCancelled.
  void StartCancel();
  bool IsCancelled() const;

 private:
  mutable std::mutex mu_;
  bool cancelled_ = false;
  Token next_ = 0;
  absl::flat_hash_map<Token, std::function<void()>> callbacks_;
};

}  // namespace runnel

#endif  // RUNNEL_BASE_CANCELLATION_H_
