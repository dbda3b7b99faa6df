#include "framework/tensor.h"

#include <cmath>
#include <cstring>
#include <limits>
#include <memory>
#include <type_traits>

#include "absl/strings/str_format.h"
#include "base/float16.h"
#include "base/strings.h"

namespace runnel {

TensorBuffer::TensorBuffer(Allocator* allocator, size_t bytes)
    : allocator_(allocator), data_(nullptr), size_(bytes) {
  if (bytes <= kInlineBytes && allocator == CpuAllocator::Get()) {
    void* p = storage_;
    size_t space = sizeof(storage_);
    data_ = std::align(kTensorAlignment, kInlineBytes, p, space);
    inline_ = true;
    return;
  }
  data_ = allocator->Allocate(bytes, kTensorAlignment);
  if (data_ == nullptr) {
    throw AllocationFailed(bytes, allocator->OutOfMemoryDetail());
  }
}

TensorBuffer::~TensorBuffer() {
  if (!inline_) allocator_->Deallocate(data_, size_);
}

Tensor::Tensor(DType dtype, Shape shape, Allocator* allocator)
    : dtype_(dtype), shape_(std::move(shape)) {
  num_elements_ = shape_.num_elements();
  if (num_elements_ < 0) num_elements_ = 0;
  if (allocator == nullptr) allocator = CpuAllocator::Get();
  size_t bytes = 0;
  if (__builtin_mul_overflow(static_cast<uint64_t>(num_elements_),
                             DTypeSize(dtype_), &bytes)) {
    throw AllocationFailed(SIZE_MAX);
  }
  buffer_ = std::make_shared<TensorBuffer>(allocator, bytes);
}

Tensor Tensor::Zeros(DType dtype, Shape shape) {
  Tensor t(dtype, std::move(shape));
  if (t.bytes() > 0) std::memset(t.raw_data(), 0, t.bytes());
  return t;
}

Tensor Tensor::ScalarOf(DType dtype, double value) {
  Tensor t(dtype, Shape{});
  VisitDType(dtype, [&](auto zero) {
    using T = decltype(zero);
    t.data<T>()[0] = FromDouble<T>(value);
  });
  return t;
}

Tensor Tensor::OfDims(const std::vector<int64_t>& dims) {
  for (int64_t d : dims) {
    if (d < INT32_MIN || d > INT32_MAX) return FromVector<int64_t>(dims);
  }
  return FromVector<int32_t>(std::vector<int32_t>(dims.begin(), dims.end()));
}

namespace {

double ElementAsDouble(const Tensor& t, int64_t i) {
  return VisitDType(t.dtype(), [&](auto zero) -> double {
    return ToDouble(t.data<decltype(zero)>()[i]);
  });
}

// Whether a double truncates to an i64 (NaN does not): -2^63 is exact in
// double, and 2^63 is the first value past the range.
bool FitsI64(double v) {
  return v >= -9223372036854775808.0 && v < 9223372036854775808.0;
}

// Element i as an integer: exact for the integer dtypes and bool (no trip
// through double, which holds only 53 bits); floats truncate toward zero,
// and must be finite and within i64's range.
absl::StatusOr<int64_t> ElementAsInt(const Tensor& t, int64_t i) {
  return VisitDType(t.dtype(), [&](auto zero) -> absl::StatusOr<int64_t> {
    using T = decltype(zero);
    if constexpr (std::is_integral_v<T>) {
      return static_cast<int64_t>(t.data<T>()[i]);
    } else {
      const double v = ToDouble(t.data<T>()[i]);
      if (!FitsI64(v)) {
        return absl::InvalidArgumentError(
            StrCat(v, " is not an integer in i64's range"));
      }
      return static_cast<int64_t>(v);
    }
  });
}

std::string FormatElement(const Tensor& t, int64_t i) {
  if (IsInteger(t.dtype())) return StrCat(*ElementAsInt(t, i));
  double v = ElementAsDouble(t, i);
  if (t.dtype() == DType::kBool) return v != 0 ? "true" : "false";
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  std::string s = absl::StrFormat("%.6g", v);
  if (s.find_first_of(".en") == std::string::npos) s += ".0";
  return s;
}

}  // namespace

std::vector<double> Tensor::ToDoubles() const {
  std::vector<double> out(num_elements_);
  for (int64_t i = 0; i < num_elements_; ++i)
    out[i] = ElementAsDouble(*this, i);
  return out;
}

std::vector<int64_t> Tensor::ToInt64s() const {
  std::vector<int64_t> out(num_elements_);
  VisitDType(dtype_, [&](auto zero) {
    using T = decltype(zero);
    const T* p = data<T>();
    for (int64_t i = 0; i < num_elements_; ++i) {
      if constexpr (std::is_integral_v<T>) {
        out[i] = p[i];
      } else {
        // Floats out of i64's range saturate (a cast would be undefined).
        const double d = ToDouble(p[i]);
        out[i] = FitsI64(d)      ? static_cast<int64_t>(d)
                 : std::isnan(d) ? 0
                 : d < 0         ? std::numeric_limits<int64_t>::min()
                                 : std::numeric_limits<int64_t>::max();
      }
    }
  });
  return out;
}

absl::StatusOr<int64_t> Tensor::ScalarAsInt() const {
  if (num_elements_ != 1) {
    return absl::InvalidArgumentError(
        StrCat("expected a scalar, got shape ", shape_.ToString()));
  }
  return ElementAsInt(*this, 0);
}

absl::StatusOr<double> Tensor::ScalarAsDouble() const {
  if (num_elements_ != 1) {
    return absl::InvalidArgumentError(
        StrCat("expected a scalar, got shape ", shape_.ToString()));
  }
  return ElementAsDouble(*this, 0);
}

absl::StatusOr<Tensor> Tensor::Reshaped(Shape shape) const {
  if (!shape.IsFullyDefined() || shape.num_elements() != num_elements_) {
    return absl::InvalidArgumentError(
        StrCat("cannot reshape ", shape_.ToString(), " (", num_elements_,
               " elements) to ", shape.ToString()));
  }
  Tensor t = *this;
  t.shape_ = std::move(shape);
  return t;
}

Tensor Tensor::Clone() const {
  if (empty()) return Tensor();
  Tensor t(dtype_, shape_, buffer_->allocator());
  std::memcpy(t.raw_data(), raw_data(), bytes());
  return t;
}

std::string Tensor::ValuesString(int max_elements) const {
  if (empty()) return "<empty>";
  if (rank() == 0) return FormatElement(*this, 0);
  std::string s;
  int64_t printed = 0;
  // Recursive nested-list printer over the flattened index.
  std::vector<int64_t> strides(rank(), 1);
  for (int i = rank() - 2; i >= 0; --i)
    strides[i] = strides[i + 1] * dim(i + 1);
  auto rec = [&](auto&& self, int axis, int64_t offset) -> void {
    s += "[";
    for (int64_t j = 0; j < dim(axis); ++j) {
      if (j) s += ", ";
      if (printed >= max_elements) {
        s += "...";
        break;
      }
      if (axis == rank() - 1) {
        s += FormatElement(*this, offset + j);
        ++printed;
      } else {
        self(self, axis + 1, offset + j * strides[axis]);
      }
    }
    s += "]";
  };
  rec(rec, 0, 0);
  return s;
}

std::string Tensor::DebugString(int max_elements) const {
  return StrCat(DTypeName(dtype_), shape_.ToString(), " ",
                ValuesString(max_elements));
}

}  // namespace runnel
