#include "io/idx_reader.h"

#include <zlib.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <memory>

#include "base/read_file.h"
#include "base/status_macros.h"
#include "base/strings.h"

namespace runnel {

absl::StatusOr<std::string> ReadMaybeGzipped(const std::string& path) {
  absl::StatusOr<std::string> file = ReadFileToString(path);
  if (!file.ok()) return file.status();
  if (file->size() < 2 || static_cast<uint8_t>((*file)[0]) != 0x1f ||
      static_cast<uint8_t>((*file)[1]) != 0x8b) {
    return file;
  }
  // Gunzip, member after member (gzip files may be concatenated).
  std::string data;
  z_stream z{};
  if (inflateInit2(&z, 16 + MAX_WBITS) != Z_OK) {
    return absl::ResourceExhaustedError(
        StrCat(path, ": cannot start decompressing"));
  }
  z.next_in = reinterpret_cast<Bytef*>(file->data());
  z.avail_in = static_cast<uInt>(file->size());
  char buf[1 << 16];
  int rc = Z_OK;
  // Another member follows when the input goes on with the gzip magic;
  // anything else after a member is ignored, as gzread does.
  auto another_member = [&] {
    return z.avail_in >= 2 && z.next_in[0] == 0x1f && z.next_in[1] == 0x8b;
  };
  while (rc == Z_OK || (rc == Z_STREAM_END && another_member())) {
    if (rc == Z_STREAM_END) inflateReset(&z);
    z.next_out = reinterpret_cast<Bytef*>(buf);
    z.avail_out = sizeof buf;
    rc = inflate(&z, Z_NO_FLUSH);  // Z_BUF_ERROR: the input ended early
    data.append(buf, sizeof buf - z.avail_out);
  }
  const std::string why = rc == Z_STREAM_END ? ""
                          : z.msg != nullptr ? std::string(z.msg)
                                             : "unexpected end of file";
  inflateEnd(&z);
  if (rc != Z_STREAM_END) {
    return absl::DataLossError(StrCat(path, ": corrupt or truncated: ", why));
  }
  return data;
}

namespace {

uint32_t BigEndian32(const unsigned char* p) {
  return (uint32_t(p[0]) << 24) | (uint32_t(p[1]) << 16) |
         (uint32_t(p[2]) << 8) | uint32_t(p[3]);
}

absl::Status NotIdx(const std::string& path, const std::string& why) {
  return absl::DataLossError(StrCat(path, ": not a valid IDX file: ", why));
}

// What the 4-byte magic says: the element type (its code, dtype and size
// in the file) and the rank.
struct IdxType {
  int code = 0;
  DType dtype = DType::kU8;
  size_t elem = 1;
  int rank = 0;
};

absl::StatusOr<IdxType> ParseMagic(const std::string& path,
                                   const unsigned char* p) {
  if (p[0] != 0 || p[1] != 0) return NotIdx(path, "bad magic number");
  IdxType t{.code = p[2], .rank = p[3]};
  switch (t.code) {
    case 0x08:
      t.dtype = DType::kU8;
      t.elem = 1;
      break;
    case 0x09:
      t.dtype = DType::kI8;
      t.elem = 1;
      break;
    case 0x0B:
      t.dtype = DType::kI32;
      t.elem = 2;
      break;
    case 0x0C:
      t.dtype = DType::kI32;
      t.elem = 4;
      break;
    case 0x0D:
      t.dtype = DType::kF32;
      t.elem = 4;
      break;
    case 0x0E:
      t.dtype = DType::kF64;
      t.elem = 8;
      break;
    default:
      return NotIdx(
          path, StrCat("unknown type code 0x", fmt::format("{:02x}", t.code)));
  }
  return t;
}

// `count` elements of the file at `d` into `out` (of t.dtype), big-endian
// to host order.
void DecodeElements(const IdxType& t, const unsigned char* d, size_t count,
                    Tensor* out) {
  auto* o = static_cast<unsigned char*>(out->raw_data());
  if (t.elem == 1) {
    std::memcpy(o, d, count);
  } else if (t.code == 0x0B) {
    for (size_t i = 0; i < count; ++i) {
      out->data<int32_t>()[i] = int16_t((d[2 * i] << 8) | d[2 * i + 1]);
    }
  } else {
    for (size_t i = 0; i < count; ++i) {
      for (size_t b = 0; b < t.elem; ++b)
        o[i * t.elem + b] = d[i * t.elem + t.elem - 1 - b];
    }
  }
}

}  // namespace

absl::StatusOr<Tensor> ReadIdx(const std::string& path) {
  absl::StatusOr<std::string> raw = ReadMaybeGzipped(path);
  if (!raw.ok()) return raw.status();
  const auto* p = reinterpret_cast<const unsigned char*>(raw->data());
  const size_t size = raw->size();
  if (size < 4) return NotIdx(path, "bad magic number");
  absl::StatusOr<IdxType> type = ParseMagic(path, p);
  if (!type.ok()) return type.status();
  const int rank = type->rank;
  if (size < 4 + 4 * size_t(rank)) return NotIdx(path, "truncated header");
  std::vector<int64_t> dims;
  size_t count = 1;
  for (int i = 0; i < rank; ++i) {
    dims.push_back(BigEndian32(p + 4 + 4 * i));
    count *= dims.back();
  }
  const size_t offset = 4 + 4 * size_t(rank);
  if (size - offset != count * type->elem) {
    return NotIdx(path, StrCat("expected ", count * type->elem,
                               " bytes of data, found ", size - offset));
  }
  Tensor t(type->dtype, Shape(std::move(dims)));
  DecodeElements(*type, p + offset, count, &t);
  return t;
}

// ---- IdxRecordReader
// ---------------------------------------------------------

struct IdxRecordReader::File {
  gzFile gz = nullptr;
  IdxType type;
  ~File() {
    if (gz != nullptr) gzclose(gz);
  }
};

IdxRecordReader::IdxRecordReader(std::string path) : path_(std::move(path)) {}
IdxRecordReader::~IdxRecordReader() = default;

absl::StatusOr<std::unique_ptr<IdxRecordReader>> IdxRecordReader::Open(
    const std::string& path) {
  std::unique_ptr<IdxRecordReader> r(new IdxRecordReader(path));
  r->file_ = std::make_unique<File>();
  // gzread reads plain files as they are.
  r->file_->gz = gzopen(path.c_str(), "rb");
  if (r->file_->gz == nullptr) {
    return absl::NotFoundError(StrCat(path, ": cannot open"));
  }
  unsigned char magic[4];
  RN_RETURN_IF_ERROR(r->ReadBytes(magic, 4, "bad magic number"));
  RN_ASSIGN_OR_RETURN(r->file_->type, ParseMagic(path, magic));
  const IdxType& type = r->file_->type;
  if (type.rank == 0) return NotIdx(path, "a scalar has no records");
  std::vector<int64_t> dims;
  for (int i = 0; i < type.rank; ++i) {
    unsigned char d[4];
    RN_RETURN_IF_ERROR(r->ReadBytes(d, 4, "truncated header"));
    dims.push_back(BigEndian32(d));
  }
  r->records_ = dims[0];
  r->record_shape_ = Shape(std::vector<int64_t>(dims.begin() + 1, dims.end()));
  r->record_bytes_ = type.elem;
  for (size_t i = 1; i < dims.size(); ++i) r->record_bytes_ *= dims[i];
  r->data_offset_ = 4 + 4 * type.rank;
  return r;
}

DType IdxRecordReader::dtype() const { return file_->type.dtype; }

absl::Status IdxRecordReader::ReadBytes(void* out, size_t n,
                                        const std::string& what) {
  size_t done = 0;
  while (done < n) {
    const unsigned chunk =
        static_cast<unsigned>(std::min<size_t>(n - done, 1u << 30));
    const int got = gzread(file_->gz, static_cast<char*>(out) + done, chunk);
    if (got <= 0) {
      int err = Z_OK;
      const char* msg = gzerror(file_->gz, &err);
      return got < 0 || err != Z_OK
                 ? absl::DataLossError(StrCat(path_, ": corrupt: ", msg))
                 : NotIdx(path_, what);
    }
    done += static_cast<size_t>(got);
  }
  return absl::OkStatus();
}

absl::StatusOr<Tensor> IdxRecordReader::Read(int64_t n) {
  n = std::max<int64_t>(0, std::min(n, records_ - next_));
  std::vector<int64_t> dims = {n};
  dims.insert(dims.end(), record_shape_.dims().begin(),
              record_shape_.dims().end());
  Tensor out(dtype(), Shape(std::move(dims)));
  const size_t bytes = static_cast<size_t>(n) * record_bytes_;
  if (file_->type.elem == 1) {
    RN_RETURN_IF_ERROR(ReadBytes(out.raw_data(), bytes, "truncated data"));
  } else {
    std::string raw(bytes, '\0');
    RN_RETURN_IF_ERROR(ReadBytes(raw.data(), bytes, "truncated data"));
    DecodeElements(file_->type,
                   reinterpret_cast<const unsigned char*>(raw.data()),
                   bytes / file_->type.elem, &out);
  }
  next_ += n;
  return out;
}

absl::Status IdxRecordReader::Rewind() {
  if (gzseek(file_->gz, static_cast<z_off_t>(data_offset_), SEEK_SET) < 0) {
    return absl::DataLossError(StrCat(path_, ": cannot rewind"));
  }
  next_ = 0;
  return absl::OkStatus();
}

}  // namespace runnel
