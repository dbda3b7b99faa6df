// CSV files of numbers: columns by header or position, blank lines and
// quotes, and errors naming the file and line.
#include "io/csv_reader.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "tests/util/test_util.h"

namespace runnel {
namespace {

std::string WriteTemp(const std::string& name, const std::string& text) {
  const std::string path = testing::TempPath("csv_reader_test_" + name);
  testing::WriteFile(path, text);
  return path;
}

using ::runnel::testing::Message;

TEST(CsvReaderTest, ColumnsByHeader) {
  auto cols =
      ReadCsv(WriteTemp("a.csv", "a, \"b\"\r\n1, 2.5\r\n\n3,4\n"), true);
  ASSERT_TRUE(cols.ok()) << cols.status();
  ASSERT_EQ(cols->size(), 2u);
  EXPECT_EQ((*cols)[0].first, "a");
  EXPECT_EQ((*cols)[1].first, "b");
  EXPECT_EQ((*cols)[0].second.dtype(), DType::kF32);
  EXPECT_EQ((*cols)[0].second.ToDoubles(), (std::vector<double>{1, 3}));
  EXPECT_EQ((*cols)[1].second.ToDoubles(), (std::vector<double>{2.5, 4}));
}

TEST(CsvReaderTest, ColumnsByPositionWithoutAHeader) {
  auto cols = ReadCsv(WriteTemp("b.csv", "1,2,3\n-4,5e1,6\n"), false);
  ASSERT_TRUE(cols.ok()) << cols.status();
  ASSERT_EQ(cols->size(), 3u);
  EXPECT_EQ((*cols)[2].first, "c2");
  EXPECT_EQ((*cols)[1].second.ToDoubles(), (std::vector<double>{2, 50}));
}

TEST(CsvReaderTest, ErrorsNameTheFileAndLine) {
  const std::string bad = WriteTemp("c.csv", "x,y\n1,2\n1,oops\n");
  EXPECT_EQ(Message(ReadCsv(bad, true).status()),
            bad + ": line 3, column 'y': 'oops' is not a number");
  const std::string ragged = WriteTemp("d.csv", "1,2\n3\n");
  EXPECT_EQ(Message(ReadCsv(ragged, false).status()),
            ragged + ": line 2 has 1 fields, expected 2");
  const std::string empty = WriteTemp("e.csv", "\n\n");
  EXPECT_EQ(Message(ReadCsv(empty, true).status()),
            empty + ": the file is empty");
  EXPECT_EQ(Message(ReadCsv("/no/such.csv", true).status()),
            "/no/such.csv: cannot open: No such file or directory");
}

}  // namespace
}  // namespace runnel
