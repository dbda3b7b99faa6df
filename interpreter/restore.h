// Restore<T>: sets a variable for a guard's lifetime, then puts the old
// value back (loop depths, the current environment).
#ifndef RUNNEL_INTERPRETER_RESTORE_H_
#define RUNNEL_INTERPRETER_RESTORE_H_

#include <utility>

namespace runnel::interp {

template <typename T>
class [[nodiscard]] Restore {
 public:
  Restore(T* slot, T value) : slot_(slot), saved_(std::move(*slot)) {
    *slot_ = std::move(value);
  }
  ~Restore() { *slot_ = std::move(saved_); }
  Restore(const Restore&) = delete;
  Restore& operator=(const Restore&) = delete;

 private:
  T* slot_;
  T saved_;
};

}  // namespace runnel::interp

#endif  // RUNNEL_INTERPRETER_RESTORE_H_
