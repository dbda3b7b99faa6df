// AtomicFile: a reader sees the old file or the whole new one; an abandoned
// or failed write leaves the old file and no temporary behind.
#include "base/atomic_file.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "base/read_file.h"

namespace runnel {
namespace {

namespace fs = std::filesystem;

// A fresh, empty directory for one test.
std::string FreshDir(const std::string& name) {
  const fs::path dir = fs::path(::testing::TempDir()) / ("atomic_" + name);
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir.string();
}

int FilesIn(const std::string& dir) {
  int n = 0;
  for (const auto& e : fs::directory_iterator(dir)) {
    (void)e;
    ++n;
  }
  return n;
}

TEST(AtomicFileTest, CommitReplacesTheFileWhole) {
  const std::string dir = FreshDir("commit");
  const std::string path = dir + "/data.bin";
  std::ofstream(path) << "old";
  AtomicFile f(path, "data");
  ASSERT_TRUE(f.Create().ok());
  const std::string big(300000, 'b');  // past the write buffer
  ASSERT_TRUE(f.Write("small,", 6).ok());
  ASSERT_TRUE(f.Write(big.data(), big.size()).ok());
  // Until the commit, readers see the old file (and the temporary beside it).
  EXPECT_EQ(*ReadFileToString(path), "old");
  EXPECT_EQ(FilesIn(dir), 2);
  ASSERT_TRUE(f.Commit().ok());
  EXPECT_EQ(*ReadFileToString(path), "small," + big);
  EXPECT_EQ(FilesIn(dir), 1);
  EXPECT_EQ(fs::status(path).permissions() & fs::perms::all,
            fs::perms::owner_read | fs::perms::owner_write |
                fs::perms::group_read | fs::perms::others_read);
}

TEST(AtomicFileTest, AbandonedWritesLeaveTheOldFile) {
  const std::string dir = FreshDir("abandon");
  const std::string path = dir + "/data.bin";
  std::ofstream(path) << "old";
  {
    AtomicFile f(path, "data");
    ASSERT_TRUE(f.Create().ok());
    ASSERT_TRUE(f.Write("new", 3).ok());
  }
  EXPECT_EQ(*ReadFileToString(path), "old");
  EXPECT_EQ(FilesIn(dir), 1);
}

TEST(AtomicFileTest, ErrorsNameWhatAndWhere) {
  AtomicFile f("/no/such/dir/model.ckpt", "checkpoint");
  absl::Status s = f.Create();
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(std::string(s.message()),
            "cannot write checkpoint '/no/such/dir/model.ckpt': cannot create "
            "a temporary file in '/no/such/dir': No such file or directory");
}

TEST(AtomicFileTest, Dirname) {
  EXPECT_EQ(Dirname("a/b/c.txt"), "a/b");
  EXPECT_EQ(Dirname("c.txt"), ".");
  EXPECT_EQ(Dirname("/c.txt"), "/");
}

}  // namespace
}  // namespace runnel
