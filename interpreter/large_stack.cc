#include "interpreter/large_stack.h"

#include <utility>

namespace runnel::interp {

LargeStackThread::LargeStackThread(std::function<void()> fn)
    : fn_(std::move(fn)) {
  pthread_attr_t attr;
  pthread_attr_init(&attr);
  pthread_attr_setstacksize(&attr, kStackBytes);
  auto body = [](void* self) -> void* {
    static_cast<LargeStackThread*>(self)->fn_();
    return nullptr;
  };
  running_ = pthread_create(&thread_, &attr, body, this) == 0;
  pthread_attr_destroy(&attr);
  if (!running_) fn_();
}

void LargeStackThread::Join() {
  if (!running_) return;
  pthread_join(thread_, nullptr);
  running_ = false;
}

bool StackLow() {
  static thread_local bool looked = false;
  static thread_local const char* low = nullptr;
  if (!looked) {
    looked = true;
    pthread_attr_t attr;
    void* addr = nullptr;
    size_t size = 0;
    if (pthread_getattr_np(pthread_self(), &attr) == 0) {
      pthread_attr_getstack(&attr, &addr, &size);
      pthread_attr_destroy(&attr);
    }
    low = static_cast<const char*>(addr);
  }
  if (low == nullptr) return false;
  char here;
  return &here - low < 256 * 1024;
}

}  // namespace runnel::interp
