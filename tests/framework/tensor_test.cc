#include "framework/tensor.h"

#include <gtest/gtest.h>

#include "base/float16.h"

namespace runnel {
namespace {

TEST(TensorTest, BuffersAre64ByteAligned) {
  for (int n : {1, 3, 17, 1000}) {
    Tensor t(DType::kF32, Shape{n});
    EXPECT_EQ(reinterpret_cast<uintptr_t>(t.raw_data()) % 64, 0u);
  }
}

TEST(TensorTest, ReshapeSharesTheBuffer) {
  Tensor t = Tensor::FromVector<float>({1, 2, 3, 4, 5, 6}, Shape{2, 3});
  absl::StatusOr<Tensor> r = t.Reshaped(Shape{3, 2});
  ASSERT_TRUE(r.ok());
  EXPECT_TRUE(r->SharesBufferWith(t));
  EXPECT_EQ(r->shape(), (Shape{3, 2}));
  EXPECT_EQ(r->at<float>(5), 6.0f);
  EXPECT_FALSE(t.Reshaped(Shape{4}).ok());
}

TEST(TensorTest, CloneCopies) {
  Tensor t = Tensor::FromVector<int32_t>({1, 2, 3});
  Tensor c = t.Clone();
  EXPECT_FALSE(c.SharesBufferWith(t));
  c.data<int32_t>()[0] = 9;
  EXPECT_EQ(t.at<int32_t>(0), 1);
}

TEST(TensorTest, BuffersAreReleased) {
  size_t before = CpuAllocator::Get()->bytes_in_use();
  {
    Tensor t(DType::kF64, Shape{1000});
    Tensor shared = t;
    EXPECT_EQ(CpuAllocator::Get()->bytes_in_use(), before + 8000);
  }
  EXPECT_EQ(CpuAllocator::Get()->bytes_in_use(), before);
}

// Host buffers of up to 32 bytes live in the buffer object (no allocation
// of their own, so the allocator does not count them), aligned as any;
// larger ones come from the allocator.
TEST(TensorTest, SmallHostBuffersAreInline) {
  const size_t before = CpuAllocator::Get()->bytes_in_use();
  {
    Tensor small(DType::kF64, Shape{4});  // 32 bytes
    Tensor scalar(DType::kI32, Shape{});
    EXPECT_EQ(CpuAllocator::Get()->bytes_in_use(), before);
    for (const Tensor* t : {&small, &scalar}) {
      EXPECT_EQ(reinterpret_cast<uintptr_t>(t->raw_data()) % kTensorAlignment,
                0u);
    }
    for (int i = 0; i < 4; ++i) small.data<double>()[i] = i + 0.5;
    Tensor shared = small;  // the same buffer
    EXPECT_TRUE(shared.SharesBufferWith(small));
    Tensor copy = small.Clone();
    small = Tensor();
    EXPECT_EQ(shared.data<double>()[3], 3.5);
    EXPECT_EQ(copy.data<double>()[2], 2.5);
    Tensor larger(DType::kF64, Shape{5});  // 40 bytes
    EXPECT_EQ(CpuAllocator::Get()->bytes_in_use(), before + 40);
  }
  EXPECT_EQ(CpuAllocator::Get()->bytes_in_use(), before);
}

TEST(TensorTest, EmptyScalarAndRank5) {
  Tensor e(DType::kF32, Shape{0, 3});
  EXPECT_EQ(e.num_elements(), 0);
  EXPECT_FALSE(e.empty());
  Tensor s = Tensor::Scalar<double>(2.5);
  EXPECT_EQ(s.rank(), 0);
  EXPECT_EQ(*s.ScalarAsDouble(), 2.5);
  Tensor r5(DType::kI8, Shape{1, 2, 1, 2, 1});
  EXPECT_EQ(r5.num_elements(), 4);
}

TEST(TensorTest, DebugString) {
  Tensor t = Tensor::FromVector<float>({1, 2.5, 3, 4}, Shape{2, 2});
  EXPECT_EQ(t.DebugString(), "f32[2,2] [[1.0, 2.5], [3.0, 4.0]]");
  EXPECT_EQ(Tensor::Scalar<bool>(true).ValuesString(), "true");
}

TEST(TensorTest, ZerosOfEveryDType) {
  for (DType d : kAllDTypes) {
    const Tensor t = Tensor::Zeros(d, Shape{2, 3});
    EXPECT_EQ(t.dtype(), d);
    EXPECT_EQ(t.shape(), (Shape{2, 3}));
    EXPECT_EQ(t.ToDoubles(), std::vector<double>(6, 0.0)) << DTypeName(d);
  }
  EXPECT_EQ(Tensor::Zeros(DType::kF32, Shape{0}).num_elements(), 0);
}

TEST(TensorTest, ScalarOfEveryDType) {
  auto scalar = [](DType d, double v) {
    Tensor t = Tensor::ScalarOf(d, v);
    EXPECT_EQ(t.dtype(), d);
    EXPECT_EQ(t.rank(), 0);
    EXPECT_EQ(t.num_elements(), 1);
    return t;
  };
  EXPECT_EQ(scalar(DType::kF32, 2.5).at<float>(0), 2.5f);
  EXPECT_EQ(scalar(DType::kF64, 0.1).at<double>(0), 0.1);
  // 16-bit floats round to nearest: 0.1 is 0.0999755859375 in f16 and
  // 0.10009765625 in bf16.
  EXPECT_EQ(HalfToFloat(scalar(DType::kF16, 0.1).at<Half>(0)),
            0.0999755859375f);
  EXPECT_EQ(BFloat16ToFloat(scalar(DType::kBF16, 0.1).at<BFloat16>(0)),
            0.10009765625f);
  EXPECT_EQ(HalfToFloat(scalar(DType::kF16, -3).at<Half>(0)), -3.0f);
  // Integers truncate toward zero, as a cast does.
  EXPECT_EQ(scalar(DType::kI32, -7.9).at<int32_t>(0), -7);
  EXPECT_EQ(scalar(DType::kI64, 1e15).at<int64_t>(0), 1000000000000000);
  EXPECT_EQ(scalar(DType::kI8, -128).at<int8_t>(0), -128);
  EXPECT_EQ(scalar(DType::kU8, 255).at<uint8_t>(0), 255);
  EXPECT_TRUE(scalar(DType::kBool, 0.5).at<bool>(0));
  EXPECT_FALSE(scalar(DType::kBool, 0).at<bool>(0));
  EXPECT_EQ(*scalar(DType::kF16, 1.5).ScalarAsDouble(), 1.5);
}

TEST(Float16Test, RoundTrips) {
  EXPECT_EQ(HalfToFloat(FloatToHalf(1.5f)), 1.5f);
  EXPECT_EQ(BFloat16ToFloat(FloatToBFloat16(-2.0f)), -2.0f);
  EXPECT_EQ(FloatToHalf(1.0f).bits, 0x3c00);
}

}  // namespace
}  // namespace runnel
