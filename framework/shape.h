// Tensor shapes, possibly partially known.
//
// A Shape is a list of dimensions; a dimension of -1 (kUnknownDim) is not
// known until run time, and a Shape may also have unknown rank. Tensors always
// carry fully defined shapes; graph nodes carry what inference could prove.
#ifndef RUNNEL_FRAMEWORK_SHAPE_H_
#define RUNNEL_FRAMEWORK_SHAPE_H_

#include <cstdint>
#include <initializer_list>
#include <string>
#include <vector>

namespace runnel {

inline constexpr int64_t kUnknownDim = -1;

class Shape {
 public:
  Shape() = default;  // scalar
  Shape(std::initializer_list<int64_t> dims) : dims_(dims) {}
  explicit Shape(std::vector<int64_t> dims) : dims_(std::move(dims)) {}
  static Shape UnknownRank();

  bool unknown_rank() const { return unknown_rank_; }
  int rank() const { return static_cast<int>(dims_.size()); }
  int64_t dim(int i) const { return dims_[i]; }
  const std::vector<int64_t>& dims() const { return dims_; }
  std::vector<int64_t>& mutable_dims() { return dims_; }

  bool IsFullyDefined() const;
  // Product of dimensions; -1 when any is unknown. A product past int64
  // saturates at kMaxElements, which no allocation can satisfy.
  int64_t num_elements() const;
  static constexpr int64_t kMaxElements = INT64_MAX;
  // True when a tensor of shape `concrete` may flow where this shape is
  // expected (unknown dims and unknown rank match anything).
  bool IsCompatibleWith(const Shape& concrete) const;
  // "[2,?,3]"; "[]" for a scalar; "[*]" for unknown rank.
  std::string ToString() const;

  bool operator==(const Shape& o) const {
    return unknown_rank_ == o.unknown_rank_ && dims_ == o.dims_;
  }
  bool operator!=(const Shape& o) const { return !(*this == o); }

 private:
  std::vector<int64_t> dims_;
  bool unknown_rank_ = false;
};

}  // namespace runnel

#endif  // RUNNEL_FRAMEWORK_SHAPE_H_
