// TensorBoard's event files: the CRC and the record framing against known
// values, records read back, corrupt and cut-short files, and the events
// (scalars, histograms, the graph) parsed back from what the writer wrote.
// tests/scripts/tensorboard_test.py reads them with a real TensorBoard.
#include "io/event_file.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <string>
#include <vector>

#include "base/read_file.h"
#include "tests/util/test_ops.h"
#include "tests/util/test_util.h"

namespace runnel {
namespace {

using ::runnel::testing::Message;
using ::runnel::testing::Placeholder;
using ::runnel::testing::TempPath;
using ::runnel::testing::WriteFile;

TEST(EventFileTest, Crc32cOfKnownInputs) {
  // The check value of CRC-32C, and RFC 3720's (iSCSI) test vectors.
  EXPECT_EQ(Crc32c("123456789"), 0xe3069283u);
  EXPECT_EQ(Crc32c(std::string(32, '\0')), 0x8a9136aau);
  EXPECT_EQ(Crc32c(std::string(32, '\xff')), 0x62a8ab43u);
  EXPECT_EQ(Crc32c(""), 0u);
  // Continuing from a prefix's CRC is the CRC of the whole.
  EXPECT_EQ(Crc32c("6789", Crc32c("12345")), 0xe3069283u);
}

TEST(EventFileTest, FramesARecordAsTheFormatSays) {
  const std::string r = FrameRecord("abc");
  ASSERT_EQ(r.size(), 8u + 4 + 3 + 4);
  EXPECT_EQ(r.substr(0, 8), std::string("\x03\0\0\0\0\0\0\0", 8));
  const uint32_t crc = Crc32c("abc");
  const uint32_t masked = ((crc >> 15) | (crc << 17)) + 0xa282ead8u;
  EXPECT_EQ(MaskedCrc32c("abc"), masked);
  std::string tail;
  for (int i = 0; i < 4; ++i)
    tail.push_back(static_cast<char>(masked >> (8 * i)));
  EXPECT_EQ(r.substr(12, 3), "abc");
  EXPECT_EQ(r.substr(15), tail);
}

TEST(EventFileTest, ReadsRecordsBackAndStopsBeforeAnUnfinishedOne) {
  const std::string path = TempPath("records");
  const std::string whole = FrameRecord("first") + FrameRecord("") +
                            FrameRecord(std::string(1000, 'x'));
  WriteFile(path, whole + FrameRecord("cut").substr(0, 14));
  absl::StatusOr<std::vector<std::string>> records = ReadRecords(path);
  ASSERT_TRUE(records.ok()) << records.status();
  ASSERT_EQ(records->size(), 3u);
  EXPECT_EQ((*records)[0], "first");
  EXPECT_EQ((*records)[1], "");
  EXPECT_EQ((*records)[2], std::string(1000, 'x'));
}

TEST(EventFileTest, ACorruptRecordIsAnErrorNamingFileAndOffset) {
  const std::string path = TempPath("corrupt");
  std::string bytes = FrameRecord("first") + FrameRecord("second");
  const size_t second = FrameRecord("first").size();
  bytes[second + 12] ^= 1;  // a byte of "second"
  WriteFile(path, bytes);
  absl::StatusOr<std::vector<std::string>> records = ReadRecords(path);
  ASSERT_FALSE(records.ok());
  EXPECT_EQ(Message(records.status()),
            path + ": the record at byte 21 is corrupt");
  bytes = FrameRecord("first");
  bytes[2] ^= 1;  // the length
  WriteFile(path, bytes);
  EXPECT_EQ(Message(ReadRecords(path).status()),
            path + ": the record at byte 0 has a corrupt length");
}

// The events of the only event file in `dir`.
std::vector<tensorboard::Event> EventsIn(const std::string& dir) {
  std::vector<tensorboard::Event> events;
  int files = 0;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    ++files;
    EXPECT_NE(entry.path().filename().string().find("tfevents"),
              std::string::npos);
    absl::StatusOr<std::vector<std::string>> records =
        ReadRecords(entry.path().string());
    EXPECT_TRUE(records.ok()) << records.status();
    if (!records.ok()) continue;
    for (const std::string& r : *records) {
      EXPECT_TRUE(events.emplace_back().ParseFromString(r));
    }
  }
  EXPECT_EQ(files, 1);
  return events;
}

TEST(EventFileTest, WritesScalarsHistogramsAndTheGraph) {
  const std::string dir = TempPath("logdir_events");
  std::filesystem::remove_all(dir);
  {
    absl::StatusOr<std::unique_ptr<EventWriter>> w = EventWriter::Open(dir);
    ASSERT_TRUE(w.ok()) << w.status();
    ASSERT_TRUE((*w)->AddScalar("loss", 7, 0.25).ok());
    ASSERT_TRUE((*w)->AddHistogram("w", 7, {1, 2, 2, 4, NAN}).ok());
    ASSERT_TRUE((*w)->AddHistogram("empty", 7, {NAN}).ok());  // nothing
    Graph g;
    Node* x = Placeholder(g, "enc/x", Shape({-1, 4}));
    ASSERT_NE(x, nullptr);
    ASSERT_TRUE(
        g.AddNode({.name = "enc/halves",
                   .op = "split",
                   .inputs = {{x, 0}},
                   .attrs = {{"num", int64_t{2}}, {"axis", int64_t{1}}}})
            .ok());
    Node* halves = g.FindNode("enc/halves");
    ASSERT_TRUE(g.AddNode({.name = "idx",
                           .op = "identity",
                           .inputs = {{halves, 1}},
                           .control_inputs = {x}})
                    .ok());
    ASSERT_TRUE((*w)->AddGraph(g, 7).ok());
  }
  const std::vector<tensorboard::Event> events = EventsIn(dir);
  ASSERT_EQ(events.size(), 4u);
  EXPECT_EQ(events[0].file_version(), "brain.Event:2");
  EXPECT_GT(events[0].wall_time(), 1.7e9);

  ASSERT_EQ(events[1].summary().value_size(), 1);
  EXPECT_EQ(events[1].step(), 7);
  EXPECT_EQ(events[1].summary().value(0).tag(), "loss");
  EXPECT_EQ(events[1].summary().value(0).simple_value(), 0.25f);

  const tensorboard::HistogramProto& h = events[2].summary().value(0).histo();
  EXPECT_EQ(events[2].summary().value(0).tag(), "w");
  EXPECT_EQ(h.num(), 4);  // the NaN left out
  EXPECT_EQ(h.min(), 1);
  EXPECT_EQ(h.max(), 4);
  EXPECT_EQ(h.sum(), 9);
  EXPECT_EQ(h.sum_squares(), 25);
  ASSERT_EQ(h.bucket_size(), 30);
  ASSERT_EQ(h.bucket_limit_size(), 30);
  // Width 0.1: 1 in the first bucket, the 2s in the tenth, 4 in the last.
  EXPECT_EQ(h.bucket(0), 1);
  EXPECT_EQ(h.bucket(9), 2);
  EXPECT_EQ(h.bucket(29), 1);
  EXPECT_DOUBLE_EQ(h.bucket_limit(0), 1.1);
  EXPECT_EQ(h.bucket_limit(29), 4);

  tensorboard::GraphDef graph;
  ASSERT_TRUE(graph.ParseFromString(events[3].graph_def()));
  ASSERT_EQ(graph.node_size(), 3);
  const tensorboard::NodeDef& halves = graph.node(1);
  EXPECT_EQ(halves.name(), "enc/halves");
  EXPECT_EQ(halves.op(), "split");
  ASSERT_EQ(halves.input_size(), 1);
  EXPECT_EQ(halves.input(0), "enc/x");
  EXPECT_EQ(halves.attr().at("num").i(), 2);
  // Two outputs, both [?, 2].
  const auto& shapes = halves.attr().at("_output_shapes").list().shape();
  ASSERT_EQ(shapes.size(), 2);
  ASSERT_EQ(shapes[0].dim_size(), 2);
  EXPECT_EQ(shapes[0].dim(0).size(), -1);
  EXPECT_EQ(shapes[0].dim(1).size(), 2);
  const tensorboard::NodeDef& idx = graph.node(2);
  ASSERT_EQ(idx.input_size(), 2);
  EXPECT_EQ(idx.input(0), "enc/halves:1");
  EXPECT_EQ(idx.input(1), "^enc/x");
  EXPECT_EQ(graph.node(0).attr().at("dtype").type(), tensorboard::DT_FLOAT);
}

TEST(EventFileTest, HistogramOfOneRepeatedValueHasOneBucket) {
  const tensorboard::HistogramProto h = MakeHistogram({3, 3, 3});
  EXPECT_EQ(h.num(), 3);
  ASSERT_EQ(h.bucket_size(), 1);
  EXPECT_EQ(h.bucket(0), 3);
  EXPECT_EQ(h.bucket_limit(0), 3);
}

TEST(EventFileTest, AnUnwritableDirectoryIsAnErrorNamingIt) {
  const std::string file = TempPath("logdir_is_a_file");
  WriteFile(file, "x");
  absl::StatusOr<std::unique_ptr<EventWriter>> w =
      EventWriter::Open(file + "/sub");
  ASSERT_FALSE(w.ok());
  EXPECT_NE(Message(w.status()).find("--logdir: cannot make " + file + "/sub"),
            std::string::npos)
      << w.status();
}

}  // namespace
}  // namespace runnel
