#include "io/checkpoint.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <bit>
#include <cerrno>
#include <cstring>
#include <optional>
#include <string_view>

#include "base/atomic_file.h"
#include "base/status_macros.h"
#include "base/strings.h"
#include "io/little_endian.h"

namespace runnel {
namespace {

// ---- the format (docs/checkpoints.md) ---------------------------------------

constexpr char kMagic[8] = {'\x89', 'R', 'N', 'L', 'C', 'K', 'P', 'T'};
constexpr size_t kHeaderSize = 40;
constexpr uint64_t kDataAlignment = 64;
constexpr uint32_t kMaxRank = 64;

// Dtype codes of the file: the table's (framework/dtype_table.h), fixed
// whatever the order of the DType enum.
uint32_t DTypeCode(DType dtype) { return InfoOf(dtype).checkpoint_code; }

std::optional<DType> DTypeOfCode(uint32_t code) {
  for (DType d : kAllDTypes) {
    if (DTypeCode(d) == code) return d;
  }
  return std::nullopt;
}

uint64_t AlignUp(uint64_t n) {
  return (n + kDataAlignment - 1) / kDataAlignment * kDataAlignment;
}

uint32_t Crc32(const void* data, size_t n, uint32_t crc = 0) {
  const auto* p = static_cast<const Bytef*>(data);
  // zlib's length is a uInt: feed large buffers in pieces.
  while (n > 0) {
    const size_t chunk = std::min<size_t>(n, size_t{1} << 30);
    crc = static_cast<uint32_t>(crc32(crc, p, static_cast<uInt>(chunk)));
    p += chunk;
    n -= chunk;
  }
  return crc;
}

constexpr bool kHostIsLittleEndian = std::endian::native == std::endian::little;

// Reverses the bytes of each `size`-byte element in place.
void SwapElementBytes(char* p, int64_t n, size_t size) {
  if (size == 1) return;
  for (int64_t i = 0; i < n; ++i, p += size) std::reverse(p, p + size);
}

// One index entry.
struct Entry {
  std::string name;
  DType dtype = DType::kF32;
  Shape shape;
  uint64_t offset = 0;
  uint64_t size = 0;
  uint32_t crc = 0;
};

// "'a', 'b' and 3 more" for messages about many tensors.
std::string NameList(const std::vector<std::string>& names, size_t max = 8) {
  std::string out;
  for (size_t i = 0; i < names.size() && i < max; ++i) {
    if (i > 0) out += ", ";
    out += Quoted(names[i]);
  }
  if (names.size() > max) out += StrCat(" and ", names.size() - max, " more");
  return out;
}

std::string TypeString(DType dtype, const Shape& shape) {
  return StrCat(DTypeName(dtype), shape.ToString());
}

// ---- writing ----------------------------------------------------------------

// The bytes of `t` as the file stores them (little-endian elements):
// the tensor's own buffer on a little-endian host, else a swapped copy.
std::string_view FileBytes(const Tensor& t, std::string* scratch) {
  const char* p = static_cast<const char*>(t.raw_data());
  if (kHostIsLittleEndian || DTypeSize(t.dtype()) == 1) {
    return std::string_view(p, t.bytes());
  }
  scratch->assign(p, t.bytes());
  SwapElementBytes(scratch->data(), t.num_elements(), DTypeSize(t.dtype()));
  return *scratch;
}

// ---- reading ----------------------------------------------------------------

class FileReader {
 public:
  explicit FileReader(const std::string& path) : path_(path) {}
  ~FileReader() {
    if (fd_ >= 0) close(fd_);
  }
  FileReader(const FileReader&) = delete;
  FileReader& operator=(const FileReader&) = delete;

  absl::Status Open() {
    fd_ = open(path_.c_str(), O_RDONLY);
    if (fd_ < 0) {
      const std::string why = std::strerror(errno);
      const std::string msg =
          StrCat("cannot open checkpoint ", Quoted(path_), ": ", why);
      return errno == ENOENT ? absl::NotFoundError(msg)
                             : absl::PermissionDeniedError(msg);
    }
    struct stat st;
    if (fstat(fd_, &st) != 0) return ReadError();
    if (!S_ISREG(st.st_mode)) {
      return absl::InvalidArgumentError(
          StrCat("cannot read checkpoint ", Quoted(path_),
                 S_ISDIR(st.st_mode) ? ": it is a directory"
                                     : ": it is not a regular file"));
    }
    size_ = static_cast<uint64_t>(st.st_size);
    return absl::OkStatus();
  }
  uint64_t size() const { return size_; }

  // Reads `n` bytes at `offset` (which the caller has checked lie in the
  // file).
  absl::Status Read(uint64_t offset, void* out, size_t n) {
    char* p = static_cast<char*>(out);
    while (n > 0) {
      ssize_t r = pread(fd_, p, n, static_cast<off_t>(offset));
      if (r < 0 && errno == EINTR) continue;
      if (r < 0) return ReadError();
      if (r == 0) {
        return absl::DataLossError(StrCat("checkpoint ", Quoted(path_),
                                          " became shorter while reading"));
      }
      p += r;
      offset += static_cast<uint64_t>(r);
      n -= static_cast<size_t>(r);
    }
    return absl::OkStatus();
  }

 private:
  absl::Status ReadError() const {
    return absl::DataLossError(StrCat("cannot read checkpoint ", Quoted(path_),
                                      ": ", std::strerror(errno)));
  }
  std::string path_;
  int fd_ = -1;
  uint64_t size_ = 0;
};

// Parses the verified index bytes into entries, checking every entry
// against the file's layout.
absl::StatusOr<std::vector<Entry>> ParseIndex(const std::string& path,
                                              std::string_view index,
                                              uint32_t count,
                                              uint64_t data_start,
                                              uint64_t file_size) {
  auto corrupt = [&](size_t i, const std::string& name,
                     const std::string& why) {
    return absl::DataLossError(
        StrCat("checkpoint ", Quoted(path), " is corrupt: index entry ", i,
               name.empty() ? "" : StrCat(" (", Quoted(name), ")"), " ", why));
  };
  FieldReader r(index);
  std::vector<Entry> entries;
  uint64_t previous_end = data_start;
  for (uint32_t i = 0; i < count; ++i) {
    Entry e;
    uint32_t name_len = 0, code = 0, rank = 0;
    if (!r.GetU32(&name_len) || !r.GetBytes(name_len, &e.name)) {
      return corrupt(i, "", "runs past the end of the index");
    }
    if (e.name.empty()) return corrupt(i, "", "has an empty name");
    if (!r.GetU32(&code) || !r.GetU32(&rank)) {
      return corrupt(i, e.name, "runs past the end of the index");
    }
    std::optional<DType> dtype = DTypeOfCode(code);
    if (!dtype) return corrupt(i, e.name, StrCat("has dtype code ", code));
    e.dtype = *dtype;
    if (rank > kMaxRank) return corrupt(i, e.name, StrCat("has rank ", rank));
    std::vector<int64_t> dims(rank);
    for (uint32_t d = 0; d < rank; ++d) {
      uint64_t dim = 0;
      if (!r.GetU64(&dim)) {
        return corrupt(i, e.name, "runs past the end of the index");
      }
      if (dim > (uint64_t{1} << 62)) {
        return corrupt(i, e.name, StrCat("has dimension ", dim));
      }
      dims[d] = static_cast<int64_t>(dim);
    }
    // The element count, or "too many" once it exceeds the file's bytes
    // (so the product cannot overflow).
    uint64_t elements = 1;
    bool too_many = false;
    if (std::find(dims.begin(), dims.end(), 0) != dims.end()) {
      elements = 0;
    } else {
      for (int64_t dim : dims) {
        if (elements > file_size / static_cast<uint64_t>(dim)) {
          too_many = true;
          break;
        }
        elements *= static_cast<uint64_t>(dim);
      }
    }
    e.shape = Shape(std::move(dims));
    if (!r.GetU64(&e.offset) || !r.GetU64(&e.size) || !r.GetU32(&e.crc)) {
      return corrupt(i, e.name, "runs past the end of the index");
    }
    if (too_many || e.size != elements * DTypeSize(e.dtype)) {
      return corrupt(
          i, e.name,
          StrCat("says ", e.size, " bytes for ", TypeString(e.dtype, e.shape)));
    }
    if (e.offset % kDataAlignment != 0 || e.offset < previous_end ||
        e.offset > file_size || e.size > file_size - e.offset) {
      return corrupt(
          i, e.name,
          StrCat("has its data at bytes ", e.offset, "..", e.offset + e.size,
                 ", outside the data area ", previous_end, "..", file_size));
    }
    previous_end = e.offset + e.size;
    if (!entries.empty() && entries.back().name >= e.name) {
      return corrupt(i, e.name, "is out of name order or a duplicate");
    }
    entries.push_back(std::move(e));
  }
  if (r.remaining() != 0) {
    return absl::DataLossError(StrCat("checkpoint ", Quoted(path),
                                      " is corrupt: ", r.remaining(),
                                      " bytes after the last index entry"));
  }
  return entries;
}

}  // namespace

absl::Status WriteCheckpoint(const std::string& path,
                             const TensorMap& tensors) {
  if (tensors.size() > UINT32_MAX) {
    return absl::InvalidArgumentError(
        StrCat("cannot write checkpoint ", Quoted(path), ": too many tensors"));
  }
  // The index first: it holds every tensor's offset and checksum.
  std::string index;
  std::vector<uint64_t> offsets;
  std::string scratch;
  uint64_t index_size = 0;
  for (const auto& [name, t] : tensors) {
    index_size += 4 + name.size() + 4 + 4 + 8 * t.rank() + 8 + 8 + 4;
  }
  uint64_t cursor = kHeaderSize + index_size;
  for (const auto& [name, t] : tensors) {
    if (name.empty() || name.size() > UINT32_MAX) {
      return absl::InvalidArgumentError(StrCat(
          "cannot write checkpoint ", Quoted(path), ": a tensor has no name"));
    }
    if (t.empty()) {  // a default Tensor: no buffer, not even an empty one
      return absl::InvalidArgumentError(StrCat("cannot write checkpoint ",
                                               Quoted(path), ": tensor ",
                                               Quoted(name), " has no value"));
    }
    PutU32(&index, static_cast<uint32_t>(name.size()));
    index += name;
    PutU32(&index, DTypeCode(t.dtype()));
    PutU32(&index, static_cast<uint32_t>(t.rank()));
    for (int64_t d : t.shape().dims()) PutU64(&index, static_cast<uint64_t>(d));
    const uint64_t offset = AlignUp(cursor);
    offsets.push_back(offset);
    PutU64(&index, offset);
    PutU64(&index, t.bytes());
    std::string_view bytes = FileBytes(t, &scratch);
    PutU32(&index, Crc32(bytes.data(), bytes.size()));
    cursor = offset + t.bytes();
  }
  const uint64_t file_size = cursor;

  std::string header(kMagic, sizeof(kMagic));
  PutU32(&header, kCheckpointVersion);
  PutU32(&header, static_cast<uint32_t>(tensors.size()));
  PutU64(&header, index.size());
  PutU64(&header, file_size);
  PutU32(&header, Crc32(index.data(), index.size()));
  PutU32(&header, Crc32(header.data(), header.size()));

  AtomicFile file(path, "checkpoint");
  RN_RETURN_IF_ERROR(file.Create());
  RN_RETURN_IF_ERROR(file.Write(header.data(), header.size()));
  RN_RETURN_IF_ERROR(file.Write(index.data(), index.size()));
  uint64_t written = kHeaderSize + index.size();
  static constexpr char kZeros[kDataAlignment] = {};
  size_t i = 0;
  for (const auto& [name, t] : tensors) {
    RN_RETURN_IF_ERROR(file.Write(kZeros, offsets[i] - written));
    std::string_view bytes = FileBytes(t, &scratch);
    RN_RETURN_IF_ERROR(file.Write(bytes.data(), bytes.size()));
    written = offsets[i] + bytes.size();
    ++i;
  }
  return file.Commit();
}

absl::StatusOr<TensorMap> ReadCheckpoint(const std::string& path) {
  FileReader file(path);
  RN_RETURN_IF_ERROR(file.Open());
  const std::string where = StrCat("checkpoint ", Quoted(path));
  auto corrupt = [&](const std::string& why) {
    return absl::DataLossError(StrCat(where, " is corrupt: ", why));
  };

  char header[kHeaderSize];
  const size_t got = std::min<uint64_t>(file.size(), kHeaderSize);
  RN_RETURN_IF_ERROR(file.Read(0, header, got));
  if (std::memcmp(header, kMagic, std::min(got, sizeof(kMagic))) != 0) {
    return absl::DataLossError(
        StrCat(Quoted(path),
               " is not a Runnel checkpoint (it does not start with the "
               "checkpoint magic)"));
  }
  if (got < kHeaderSize) {
    return absl::DataLossError(StrCat(where, " is truncated: ", file.size(),
                                      " bytes, shorter than its ", kHeaderSize,
                                      "-byte header"));
  }
  FieldReader r(
      std::string_view(header + sizeof(kMagic), kHeaderSize - sizeof(kMagic)));
  uint32_t version = 0, count = 0, index_crc = 0, header_crc = 0;
  uint64_t index_size = 0, file_size = 0;
  r.GetU32(&version);
  r.GetU32(&count);
  r.GetU64(&index_size);
  r.GetU64(&file_size);
  r.GetU32(&index_crc);
  r.GetU32(&header_crc);
  if (Crc32(header, kHeaderSize - 4) != header_crc) {
    return corrupt("its header fails its checksum");
  }
  if (version != kCheckpointVersion) {
    return absl::UnimplementedError(
        StrCat(where, " has format version ", version,
               "; this build of runnel reads version ", kCheckpointVersion));
  }
  if (file.size() < file_size) {
    return absl::DataLossError(StrCat(where, " is truncated: ", file.size(),
                                      " of ", file_size, " bytes"));
  }
  if (file.size() > file_size) {
    return corrupt(
        StrCat(file.size(), " bytes, but its header says ", file_size));
  }
  if (index_size > file_size - kHeaderSize) {
    return corrupt(StrCat("its index (", index_size,
                          " bytes) runs past the end of the file"));
  }
  std::string index(index_size, '\0');
  RN_RETURN_IF_ERROR(file.Read(kHeaderSize, index.data(), index.size()));
  if (Crc32(index.data(), index.size()) != index_crc) {
    return corrupt("its index fails its checksum");
  }
  RN_ASSIGN_OR_RETURN(
      std::vector<Entry> entries,
      ParseIndex(path, index, count, kHeaderSize + index_size, file_size));

  // Every tensor is read and checked before anything is returned.
  TensorMap out;
  std::vector<std::string> bad;
  for (const Entry& e : entries) {
    Tensor t(e.dtype, e.shape);
    RN_RETURN_IF_ERROR(file.Read(e.offset, t.raw_data(), e.size));
    if (Crc32(t.raw_data(), e.size) != e.crc) {
      bad.push_back(e.name);
      continue;
    }
    if (e.dtype == DType::kBool) {
      const auto* b = static_cast<const unsigned char*>(t.raw_data());
      if (std::any_of(b, b + e.size, [](unsigned char c) { return c > 1; })) {
        return corrupt(StrCat("tensor ", Quoted(e.name),
                              " has a bool byte that is neither 0 nor 1"));
      }
    }
    if (!kHostIsLittleEndian) {
      SwapElementBytes(static_cast<char*>(t.raw_data()), t.num_elements(),
                       DTypeSize(e.dtype));
    }
    out.emplace(e.name, std::move(t));
  }
  if (bad.size() == 1) {
    return corrupt(StrCat("tensor ", Quoted(bad[0]), " fails its checksum"));
  }
  if (!bad.empty()) {
    return corrupt(StrCat("tensors ", NameList(bad), " fail their checksums"));
  }
  return out;
}

}  // namespace runnel
