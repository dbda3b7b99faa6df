// The whole-file reader: contents byte for byte, and errors naming the path.
#include "base/read_file.h"

#include <gtest/gtest.h>

#include <string>

#include "tests/util/test_util.h"

namespace runnel {
namespace {

TEST(ReadFileTest, ReadsEveryByte) {
  std::string bytes("a\0b\r\n\xff", 6);
  bytes += std::string(200000, 'x');  // past one read buffer
  const std::string path = testing::TempPath("read_file_test.bin");
  testing::WriteFile(path, bytes);
  absl::StatusOr<std::string> got = ReadFileToString(path);
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_EQ(*got, bytes);
  const std::string empty = testing::TempPath("read_file_test.empty");
  testing::WriteFile(empty, "");
  got = ReadFileToString(empty);
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_EQ(*got, "");
}

TEST(ReadFileTest, ErrorsNameThePath) {
  absl::StatusOr<std::string> got = ReadFileToString("/no/such/file.txt");
  ASSERT_FALSE(got.ok());
  EXPECT_EQ(got.status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(std::string(got.status().message()),
            "/no/such/file.txt: cannot open: No such file or directory");
  // A directory opens, but is not a file to read.
  const std::string dir = ::testing::TempDir();
  got = ReadFileToString(dir);
  ASSERT_FALSE(got.ok());
  EXPECT_EQ(std::string(got.status().message()),
            dir + ": cannot open: Is a directory");
  std::string contents = "old";
  ReadFileFailure failure;
  EXPECT_FALSE(ReadFileToString(dir, &contents, &failure));
  EXPECT_FALSE(failure.opened);
  EXPECT_EQ(failure.reason, "Is a directory");
  EXPECT_EQ(contents, "");
}

}  // namespace
}  // namespace runnel
