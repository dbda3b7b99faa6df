// Reads IDX files (the MNIST format), plain or gzip-compressed.
//
// An IDX file is a 4-byte magic (0, 0, type code, rank), `rank` big-endian
// u32 dimensions, then the elements big-endian in row-major order. Type
// codes: 0x08 u8, 0x09 i8, 0x0B i16 (read as i32), 0x0C i32, 0x0D f32,
// 0x0E f64. Any malformed or truncated file is an error naming the path.
#ifndef RUNNEL_IO_IDX_READER_H_
#define RUNNEL_IO_IDX_READER_H_

#include <cstdint>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "framework/tensor.h"

namespace runnel {

absl::StatusOr<Tensor> ReadIdx(const std::string& path);

// Reads a whole file, gunzipping it when it starts with the gzip magic.
absl::StatusOr<std::string> ReadMaybeGzipped(const std::string& path);

// Reads an IDX file (plain or gzipped) a few records at a time, a record
// being one row of its first axis (an image, a label), without holding the
// whole file: the reader behind `read_idx` (docs/queues.md). Not
// thread-safe; its owner locks.
class IdxRecordReader {
 public:
  // Opens the file and reads its header.
  static absl::StatusOr<std::unique_ptr<IdxRecordReader>> Open(
      const std::string& path);
  ~IdxRecordReader();
  IdxRecordReader(const IdxRecordReader&) = delete;
  IdxRecordReader& operator=(const IdxRecordReader&) = delete;

  DType dtype() const;
  const Shape& record_shape() const { return record_shape_; }
  int64_t records() const { return records_; }
  // Records from the next to the end.
  int64_t remaining() const { return records_ - next_; }
  // The next min(n, records left) records, as [k, record_shape...].
  absl::StatusOr<Tensor> Read(int64_t n);
  // Back to the first record.
  absl::Status Rewind();

 private:
  struct File;
  explicit IdxRecordReader(std::string path);
  absl::Status ReadBytes(void* out, size_t n, const std::string& what);

  const std::string path_;
  std::unique_ptr<File> file_;
  Shape record_shape_;
  int64_t records_ = 0;
  size_t record_bytes_ = 0;
  int64_t data_offset_ = 0;
  int64_t next_ = 0;
};

}  // namespace runnel

#endif  // RUNNEL_IO_IDX_READER_H_
