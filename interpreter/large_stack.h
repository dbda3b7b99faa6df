// A thread with a large stack. The interpreter recurses as deep as the
// scripts it runs (a recursive Runnel function is C++ recursion), and the
// parser as deep as the expressions it parses: both run on one of these.
#ifndef RUNNEL_INTERPRETER_LARGE_STACK_H_
#define RUNNEL_INTERPRETER_LARGE_STACK_H_

#include <pthread.h>

#include <cstddef>
#include <functional>

namespace runnel::interp {

class LargeStackThread {
 public:
  // Address space only: the pages the thread never touches cost nothing.
  static constexpr size_t kStackBytes = size_t{1} << 30;

  // Starts `fn` on a new thread. Where no such thread can be made, runs
  // `fn` to its end on the calling thread instead.
  explicit LargeStackThread(std::function<void()> fn);
  ~LargeStackThread() { Join(); }
  LargeStackThread(const LargeStackThread&) = delete;
  LargeStackThread& operator=(const LargeStackThread&) = delete;

  // Waits for `fn` to return.
  void Join();

 private:
  std::function<void()> fn_;
  pthread_t thread_{};
  bool running_ = false;
};

// Whether this thread's stack is nearly used up (under 256 KiB left): deep
// recursion in a script becomes a diagnostic, whatever the stack size of
// the calling thread.
bool StackLow();

}  // namespace runnel::interp

#endif  // RUNNEL_INTERPRETER_LARGE_STACK_H_
