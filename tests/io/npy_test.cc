// .npy files: every dtype round-trips; NumPy's other element types and byte
// orders read; malformed files are errors naming the file.
#include "io/npy.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "base/float16.h"
#include "tests/util/test_util.h"

namespace runnel {
namespace {

using ::runnel::testing::TempPath;
using ::runnel::testing::WriteFile;

// A version 1.0 .npy file with header dictionary `dict` and `body`.
std::string Npy(const std::string& dict, const std::string& body) {
  std::string header = dict;
  header.append((64 - (10 + header.size() + 1) % 64) % 64, ' ');
  header += '\n';
  std::string out = "\x93NUMPY";
  out += '\x01';
  out += '\x00';
  out += static_cast<char>(header.size() & 0xff);
  out += static_cast<char>(header.size() >> 8);
  return out + header + body;
}

using ::runnel::testing::Message;

TEST(NpyTest, RoundTripsEveryDType) {
  const std::string path = TempPath("npy_a.npy");
  std::vector<Tensor> cases = {
      Tensor::FromVector<float>({1.5, -2, 3, 4, 5, 6}, Shape{2, 3}),
      Tensor::FromVector<double>({1, 2}, Shape{2}),
      Tensor::FromVector<int32_t>({7}, Shape{}),
      Tensor::FromVector<int64_t>({1, 2, 3}, Shape{3, 1}),
      Tensor::FromVector<uint8_t>({255, 0}, Shape{2}),
      Tensor::FromVector<int8_t>({-128, 127}, Shape{2}),
      Tensor::FromVector<bool>({true, false, true}, Shape{3}),
      Tensor::FromVector<Half>({FloatToHalf(0.5f), FloatToHalf(-3)}, Shape{2}),
      Tensor::FromVector<float>({}, Shape{0, 4}),
  };
  for (const Tensor& t : cases) {
    ASSERT_TRUE(WriteNpy(path, t).ok());
    absl::StatusOr<Tensor> back = ReadNpy(path);
    ASSERT_TRUE(back.ok()) << back.status();
    EXPECT_EQ(back->dtype(), t.dtype());
    EXPECT_EQ(back->shape(), t.shape());
    EXPECT_EQ(back->ToDoubles(), t.ToDoubles());
  }
}

TEST(NpyTest, Bf16HasNoNumPyDType) {
  Tensor t = Tensor::ScalarOf(DType::kBF16, 1);
  EXPECT_EQ(Message(WriteNpy(TempPath("npy_b.npy"), t)),
            TempPath("npy_b.npy") +
                ": bf16 has no NumPy dtype; cast it to f32 before saving");
}

TEST(NpyTest, ReadsBigEndianAndWidensSmallIntegers) {
  WriteFile(TempPath("npy_be.npy"),
            Npy("{'descr': '>i4', 'fortran_order': False, 'shape': (2,), }",
                std::string("\0\0\x01\x00\xff\xff\xff\xfe", 8)));
  absl::StatusOr<Tensor> t = ReadNpy(TempPath("npy_be.npy"));
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_EQ(t->dtype(), DType::kI32);
  EXPECT_EQ(t->ToDoubles(), (std::vector<double>{256, -2}));
  // u2 reads as i32, u4 as i64.
  WriteFile(TempPath("npy_u2.npy"),
            Npy("{'descr': '<u2', 'fortran_order': False, 'shape': (1, 2), }",
                std::string("\xff\xff\x02\x00", 4)));
  t = ReadNpy(TempPath("npy_u2.npy"));
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_EQ(t->dtype(), DType::kI32);
  EXPECT_EQ(t->shape(), (Shape{1, 2}));
  EXPECT_EQ(t->ToDoubles(), (std::vector<double>{65535, 2}));
  WriteFile(TempPath("npy_u4.npy"),
            Npy("{'descr': '<u4', 'fortran_order': False, 'shape': (), }",
                std::string("\xff\xff\xff\xff", 4)));
  t = ReadNpy(TempPath("npy_u4.npy"));
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_EQ(t->dtype(), DType::kI64);
  EXPECT_EQ(t->ToDoubles(), (std::vector<double>{4294967295.0}));
}

TEST(NpyTest, ErrorsNameTheFile) {
  absl::StatusOr<Tensor> t = ReadNpy("/no/such/file.npy");
  ASSERT_FALSE(t.ok());
  EXPECT_EQ(t.status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(Message(t.status()),
            "/no/such/file.npy: cannot open: No such file or directory");
  const std::string path = TempPath("npy_bad.npy");
  WriteFile(path, "not numpy");
  EXPECT_EQ(Message(ReadNpy(path).status()),
            path + ": not a .npy file (bad magic)");
  WriteFile(path,
            Npy("{'descr': '<f4', 'fortran_order': True, 'shape': (2,), }",
                std::string(8, '\0')));
  EXPECT_EQ(Message(ReadNpy(path).status()),
            path + ": Fortran-order arrays are not supported");
  WriteFile(path,
            Npy("{'descr': '<c8', 'fortran_order': False, 'shape': (1,), }",
                std::string(8, '\0')));
  EXPECT_EQ(Message(ReadNpy(path).status()),
            path + ": unsupported element type '<c8'");
  WriteFile(path,
            Npy("{'descr': '<f4', 'fortran_order': False, 'shape': (3,), }",
                std::string(8, '\0')));
  EXPECT_EQ(Message(ReadNpy(path).status()),
            path + ": truncated data: expected 12 bytes, found 8");
}

}  // namespace
}  // namespace runnel
