#include "framework/shape.h"

#include "base/strings.h"

namespace runnel {

Shape Shape::UnknownRank() {
  Shape s;
  s.unknown_rank_ = true;
  return s;
}

bool Shape::IsFullyDefined() const {
  if (unknown_rank_) return false;
  for (int64_t d : dims_) {
    if (d < 0) return false;
  }
  return true;
}

int64_t Shape::num_elements() const {
  if (!IsFullyDefined()) return -1;
  int64_t n = 1;
  bool overflow = false;
  for (int64_t d : dims_) {
    if (d == 0) return 0;
    overflow = overflow || __builtin_mul_overflow(n, d, &n);
  }
  return overflow ? kMaxElements : n;
}

bool Shape::IsCompatibleWith(const Shape& other) const {
  if (unknown_rank_ || other.unknown_rank_) return true;
  if (rank() != other.rank()) return false;
  for (int i = 0; i < rank(); ++i) {
    if (dims_[i] >= 0 && other.dims_[i] >= 0 && dims_[i] != other.dims_[i]) {
      return false;
    }
  }
  return true;
}

std::string Shape::ToString() const {
  if (unknown_rank_) return "[*]";
  std::string s = "[";
  for (int i = 0; i < rank(); ++i) {
    if (i) s += ",";
    if (dims_[i] < 0) {
      s += "?";
    } else {
      s += std::to_string(dims_[i]);
    }
  }
  return s + "]";
}

}  // namespace runnel
