#include "runtime/idx_reader.h"

#include <zlib.h>

#include <cstdint>
#include <cstring>

#include "runtime/read_file.h"
#include "runtime/strings.h"

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
}  // namespace

absl::StatusOr<Tensor> ReadIdx(const std::string& path) {
  absl::StatusOr<std::string> raw = ReadMaybeGzipped(path);
  if (!raw.ok()) return raw.status();
  const auto* p = reinterpret_cast<const unsigned char*>(raw->data());
  const size_t size = raw->size();
  auto bad = [&](const std::string& why) {
    return absl::DataLossError(StrCat(path, ": not a valid IDX file: ", why));
  };
  if (size < 4 || p[0] != 0 || p[1] != 0) return bad("bad magic number");
  const int type = p[2], rank = p[3];
  DType dtype;
  size_t elem = 0;
  switch (type) {
    case 0x08:
      dtype = DType::kU8;
      elem = 1;
      break;
    case 0x09:
      dtype = DType::kI8;
      elem = 1;
      break;
    case 0x0B:
      dtype = DType::kI32;
      elem = 2;
      break;
    case 0x0C:
      dtype = DType::kI32;
      elem = 4;
      break;
    case 0x0D:
      dtype = DType::kF32;
      elem = 4;
      break;
    case 0x0E:
      dtype = DType::kF64;
      elem = 8;
      break;
    default:
      return bad(StrCat("unknown type code 0x", fmt::format("{:02x}", type)));
  }
  if (size < 4 + 4 * size_t(rank)) return bad("truncated header");
  std::vector<int64_t> dims;
  size_t count = 1;
  for (int i = 0; i < rank; ++i) {
    dims.push_back(BigEndian32(p + 4 + 4 * i));
    count *= dims.back();
  }
  const size_t offset = 4 + 4 * size_t(rank);
  if (size - offset != count * elem) {
    return bad(StrCat("expected ", count * elem, " bytes of data, found ",
                      size - offset));
  }
  Tensor t(dtype, Shape(std::move(dims)));
  const unsigned char* d = p + offset;
  auto* out = static_cast<unsigned char*>(t.raw_data());
  if (elem == 1) {
    std::memcpy(out, d, count);
  } else if (type == 0x0B) {
    for (size_t i = 0; i < count; ++i) {
      t.data<int32_t>()[i] = int16_t((d[2 * i] << 8) | d[2 * i + 1]);
    }
  } else {
    for (size_t i = 0; i < count; ++i) {  // big-endian to host order
      for (size_t b = 0; b < elem; ++b)
        out[i * elem + b] = d[i * elem + elem - 1 - b];
    }
  }
  return t;
}

}  // namespace runnel
