// Tensor: a dtype, a fully defined shape and a reference-counted buffer.
//
// Copying a Tensor shares its buffer (like a shared_ptr); `Reshaped` also
// shares it. Writers must own a buffer nobody else reads: kernels write only
// into outputs they allocated. A default-constructed Tensor is "empty" (no
// buffer) and is used for absent values.
//
//   Tensor t(DType::kF32, Shape{2, 3});
//   float* p = t.data<float>();
//   Tensor v = Tensor::FromVector<float>({1, 2, 3, 4, 5, 6}, Shape{2, 3});
#ifndef RUNNEL_FRAMEWORK_TENSOR_H_
#define RUNNEL_FRAMEWORK_TENSOR_H_

#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "framework/allocator.h"
#include "framework/dtype.h"
#include "framework/shape.h"

namespace runnel {

// An aligned block of device memory, freed through its allocator. Host
// blocks of up to kInlineBytes (scalars, a loop's counters) live inside
// the buffer object itself: no allocation of their own.
class TensorBuffer {
 public:
  static constexpr size_t kInlineBytes = 32;
  TensorBuffer(Allocator* allocator, size_t bytes);
  ~TensorBuffer();
  TensorBuffer(const TensorBuffer&) = delete;
  TensorBuffer& operator=(const TensorBuffer&) = delete;

  void* data() const { return data_; }
  size_t size() const { return size_; }
  Allocator* allocator() const { return allocator_; }

 private:
  Allocator* allocator_;
  void* data_;
  size_t size_;
  bool inline_ = false;
  // kInlineBytes at kTensorAlignment somewhere in here.
  unsigned char storage_[kInlineBytes + kTensorAlignment];
};

class Tensor {
 public:
  Tensor() = default;
  // Allocates an uninitialised buffer for `shape` (which must be fully
  // defined) from `allocator` (the CPU allocator by default).
  Tensor(DType dtype, Shape shape, Allocator* allocator = nullptr);

  template <typename T>
  static Tensor FromVector(const std::vector<T>& values, Shape shape);
  template <typename T>
  static Tensor FromVector(const std::vector<T>& values) {
    return FromVector(values, Shape{static_cast<int64_t>(values.size())});
  }
  template <typename T>
  static Tensor Scalar(T value) {
    return FromVector(std::vector<T>{value}, Shape{});
  }
  // A scalar of `dtype` holding `value`, converted as a C++ cast would
  // (16-bit floats round to nearest even through float; bool is value != 0).
  static Tensor ScalarOf(DType dtype, double value);
  // A tensor of `shape` (fully defined) with every element zero (all-zero
  // bytes are 0 in every dtype, false for bool).
  static Tensor Zeros(DType dtype, Shape shape);

  // A shape or index vector: i32 when every value fits, else i64 (sizes are
  // int64 end to end; they are never cut to 32 bits).
  static Tensor OfDims(const std::vector<int64_t>& dims);

  bool empty() const { return buffer_ == nullptr; }
  DType dtype() const { return dtype_; }
  const Shape& shape() const { return shape_; }
  int rank() const { return shape_.rank(); }
  int64_t dim(int i) const { return shape_.dim(i); }
  int64_t num_elements() const { return num_elements_; }
  size_t bytes() const { return num_elements_ * DTypeSize(dtype_); }

  void* raw_data() const { return buffer_ ? buffer_->data() : nullptr; }
  template <typename T>
  T* data() const {
    return static_cast<T*>(raw_data());
  }
  // Element `i` of the flattened tensor, for tests and host code.
  template <typename T>
  T at(int64_t i) const {
    return data<T>()[i];
  }
  // Values converted to double, for host code and tests (any dtype).
  std::vector<double> ToDoubles() const;
  // Values as int64 (any dtype): integers exactly, floats truncated toward
  // zero. For index and shape tensors.
  std::vector<int64_t> ToInt64s() const;
  // A scalar or one-element tensor as int64 / double (any numeric dtype).
  absl::StatusOr<int64_t> ScalarAsInt() const;
  absl::StatusOr<double> ScalarAsDouble() const;

  // A view with another shape of the same element count; shares the buffer.
  absl::StatusOr<Tensor> Reshaped(Shape shape) const;
  bool SharesBufferWith(const Tensor& o) const {
    return buffer_ && buffer_ == o.buffer_;
  }
  // Whether this tensor is the only holder of its buffer, so that a kernel
  // owning it may write into it (OpKernelContext::forward_input_or_allocate).
  bool RefCountIsOne() const {
    return buffer_ != nullptr && buffer_.use_count() == 1;
  }
  // A deep copy with its own buffer.
  Tensor Clone() const;

  // "f32[2,3] [[1, 2, 3], [4, 5, 6]]", eliding past `max_elements`.
  std::string DebugString(int max_elements = 20) const;
  // The values alone, formatted as nested lists.
  std::string ValuesString(int max_elements = 20) const;

 private:
  DType dtype_ = DType::kF32;
  Shape shape_;
  int64_t num_elements_ = 0;
  std::shared_ptr<TensorBuffer> buffer_;
};

template <typename T>
Tensor Tensor::FromVector(const std::vector<T>& values, Shape shape) {
  Tensor t(DTypeOf<T>::value, std::move(shape));
  if constexpr (std::is_same_v<T, bool>) {
    for (size_t i = 0; i < values.size() && i < (size_t)t.num_elements(); ++i)
      t.data<bool>()[i] = values[i];
  } else if (!values.empty()) {
    std::memcpy(t.raw_data(), values.data(),
                std::min(values.size(), (size_t)t.num_elements()) * sizeof(T));
  }
  return t;
}

}  // namespace runnel

#endif  // RUNNEL_FRAMEWORK_TENSOR_H_
