// TensorBoard's event files, which `runnel run --logdir DIR` writes
// (docs/training.md): a sequence of records, each an Event message
// (io/tensorboard.proto) framed as
//
//   u64 length | u32 masked CRC-32C of the length | data | u32 masked CRC-32C
//   of the data
//
// all little-endian, where masked(c) = ((c >> 15) | (c << 17)) + 0xa282ead8.
// The first event names the format version; then scalars, histograms and
// graphs, each with its step and wall time. A file is only ever appended
// to, each record flushed whole, so a reader (TensorBoard, while the run
// goes on) sees every finished record; one cut short by a crash is the
// last, and readers stop before it.
#ifndef RUNNEL_IO_EVENT_FILE_H_
#define RUNNEL_IO_EVENT_FILE_H_

#include <cstdint>
#include <cstdio>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "framework/graph.h"
#include "io/tensorboard.pb.h"

namespace runnel {

// CRC-32C (Castagnoli), continuing from `crc` (0 to start).
uint32_t Crc32c(std::string_view data, uint32_t crc = 0);
// The masked CRC the records store.
uint32_t MaskedCrc32c(std::string_view data);

// `data` framed as one record.
std::string FrameRecord(std::string_view data);
// The records of an event file, their checksums verified. A corrupt record
// is an error naming the file and the record's offset; an incomplete last
// record (a writer still at work, or killed) ends the list.
absl::StatusOr<std::vector<std::string>> ReadRecords(const std::string& path);

// TensorBoard's form of `graph`: one NodeDef per node, with its op, inputs,
// device, attributes and `_output_shapes`.
tensorboard::GraphDef ToTensorBoardGraph(const Graph& graph);

// Equal-width buckets (30, or one when every value is the same) over the
// finite values; the non-finite ones are left out (num == 0 when none is
// finite).
tensorboard::HistogramProto MakeHistogram(const std::vector<double>& values);

class EventWriter {
 public:
  // Makes `dir` (and its parents) and a new event file in it,
  // events.out.tfevents.SECONDS.HOST.PID.runnel, whose first record names
  // the format. Errors name the directory.
  static absl::StatusOr<std::unique_ptr<EventWriter>> Open(
      const std::string& dir);
  ~EventWriter();
  EventWriter(const EventWriter&) = delete;
  EventWriter& operator=(const EventWriter&) = delete;

  absl::Status AddScalar(const std::string& tag, int64_t step, double value);
  // Nothing is written when no value is finite.
  absl::Status AddHistogram(const std::string& tag, int64_t step,
                            const std::vector<double>& values);
  absl::Status AddGraph(const Graph& graph, int64_t step);

  const std::string& path() const { return path_; }

 private:
  EventWriter(std::FILE* file, std::string path)
      : file_(file), path_(std::move(path)) {}
  // Stamps the wall time, frames `event` and appends it, flushed.
  absl::Status Write(tensorboard::Event& event);

  std::FILE* file_;
  std::string path_;
};

}  // namespace runnel

#endif  // RUNNEL_IO_EVENT_FILE_H_
