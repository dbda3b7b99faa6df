#include "io/idx_reader.h"

#include <gtest/gtest.h>
#include <zlib.h>

#include <cstdio>

#include "base/read_file.h"
#include "tests/util/test_util.h"

namespace runnel {
namespace {

using ::runnel::testing::TempPath;
using ::runnel::testing::WriteFile;

void WriteGz(const std::string& path, const std::string& bytes) {
  gzFile f = gzopen(path.c_str(), "wb");
  gzwrite(f, bytes.data(), bytes.size());
  gzclose(f);
}

// u8 [2,3] = 1..6
const std::string kU8 = std::string("\0\0\x08\x02\0\0\0\x02\0\0\0\x03", 12) +
                        std::string("\x01\x02\x03\x04\x05\x06", 6);

TEST(IdxReaderTest, ReadsPlainAndGzip) {
  WriteFile(TempPath("a.idx"), kU8);
  WriteGz(TempPath("a.idx.gz"), kU8);
  for (const char* name : {"a.idx", "a.idx.gz"}) {
    auto t = ReadIdx(TempPath(name));
    ASSERT_TRUE(t.ok()) << t.status();
    testing::ExpectTensor(*t, DType::kU8, {2, 3}, {1, 2, 3, 4, 5, 6}, 0);
  }
}

TEST(IdxReaderTest, ReadsBigEndianInt32AndFloat) {
  std::string i32 = std::string("\0\0\x0c\x01\0\0\0\x02", 8) +
                    std::string("\0\0\x01\x00\xff\xff\xff\xfe", 8);
  WriteFile(TempPath("b.idx"), i32);
  auto t = ReadIdx(TempPath("b.idx"));
  ASSERT_TRUE(t.ok()) << t.status();
  testing::ExpectTensor(*t, DType::kI32, {2}, {256, -2}, 0);
  std::string f32 =
      std::string("\0\0\x0d\x00", 4) + std::string("\x3f\xc0\0\0", 4);
  WriteFile(TempPath("c.idx"), f32);
  t = ReadIdx(TempPath("c.idx"));
  ASSERT_TRUE(t.ok()) << t.status();
  testing::ExpectTensor(*t, DType::kF32, {}, {1.5}, 0);
}

TEST(IdxReaderTest, GunzipsConcatenatedMembersAndPassesPlainFilesThrough) {
  WriteGz(TempPath("first.gz"), kU8.substr(0, 5));
  WriteGz(TempPath("second.gz"), kU8.substr(5));
  WriteFile(TempPath("both.idx.gz"),
            *ReadFileToString(TempPath("first.gz")) +
                *ReadFileToString(TempPath("second.gz")));
  absl::StatusOr<std::string> both = ReadMaybeGzipped(TempPath("both.idx.gz"));
  ASSERT_TRUE(both.ok()) << both.status();
  EXPECT_EQ(*both, kU8);
  WriteFile(TempPath("plain.bin"), "\x1f plain");
  EXPECT_EQ(*ReadMaybeGzipped(TempPath("plain.bin")), "\x1f plain");
}

TEST(IdxReaderTest, ErrorsNameTheFile) {
  auto missing = ReadIdx(TempPath("nope.idx"));
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(std::string(ToStd(missing.status().message()))
                .find("nope.idx: cannot open"),
            std::string::npos);
  WriteFile(TempPath("short.idx"), kU8.substr(0, kU8.size() - 2));
  auto s = ReadIdx(TempPath("short.idx"));
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(std::string(ToStd(s.status().message())),
            TempPath("short.idx") +
                ": not a valid IDX file: expected 6 bytes of data, found 4");
  WriteFile(TempPath("magic.idx"), "hello world!");
  EXPECT_FALSE(ReadIdx(TempPath("magic.idx")).ok());
  // A gzip stream cut in the middle.
  WriteGz(TempPath("cut.gz"), std::string(10000, 'x'));
  const std::string gz = *ReadFileToString(TempPath("cut.gz"));
  WriteFile(TempPath("cut.gz"), gz.substr(0, gz.size() / 2));
  EXPECT_EQ(
      std::string(ReadIdx(TempPath("cut.gz")).status().message()),
      TempPath("cut.gz") + ": corrupt or truncated: unexpected end of file");
}

TEST(IdxRecordReaderTest, ReadsRecordsInBatchesAndRewinds) {
  // i32 [3, 2] = 1..6, big-endian.
  std::string i32 = std::string("\0\0\x0c\x02\0\0\0\x03\0\0\0\x02", 12);
  for (char v = 1; v <= 6; ++v) i32 += std::string("\0\0\0", 3) + v;
  WriteGz(TempPath("r.idx.gz"), i32);
  WriteFile(TempPath("r.idx"), i32);
  for (const char* name : {"r.idx", "r.idx.gz"}) {
    auto r = IdxRecordReader::Open(TempPath(name));
    ASSERT_TRUE(r.ok()) << r.status();
    EXPECT_EQ((*r)->dtype(), DType::kI32);
    EXPECT_EQ((*r)->record_shape(), Shape{2});
    EXPECT_EQ((*r)->records(), 3);
    auto a = (*r)->Read(2);
    ASSERT_TRUE(a.ok()) << a.status();
    testing::ExpectTensor(*a, DType::kI32, {2, 2}, {1, 2, 3, 4}, 0);
    auto b = (*r)->Read(2);  // only one left
    ASSERT_TRUE(b.ok()) << b.status();
    testing::ExpectTensor(*b, DType::kI32, {1, 2}, {5, 6}, 0);
    EXPECT_EQ((*r)->remaining(), 0);
    ASSERT_TRUE((*r)->Rewind().ok());
    testing::ExpectTensor(*(*r)->Read(1), DType::kI32, {1, 2}, {1, 2}, 0);
  }
}

TEST(IdxRecordReaderTest, ErrorsNameTheFile) {
  auto missing = IdxRecordReader::Open(TempPath("nope.idx"));
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.status().message(), TempPath("nope.idx") + ": cannot open");
  WriteFile(TempPath("short.idx"), kU8.substr(0, kU8.size() - 2));
  auto r = IdxRecordReader::Open(TempPath("short.idx"));
  ASSERT_TRUE(r.ok()) << r.status();
  auto rows = (*r)->Read(2);
  ASSERT_FALSE(rows.ok());
  EXPECT_EQ(rows.status().message(),
            TempPath("short.idx") + ": not a valid IDX file: truncated data");
}

}  // namespace
}  // namespace runnel
