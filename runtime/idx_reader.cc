#include "runtime/idx_reader.h"

#include <zlib.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

#include "runtime/strings.h"

namespace runnel {

absl::StatusOr<std::string> ReadMaybeGzipped(const std::string& path) {
  gzFile f = gzopen(path.c_str(), "rb");  // reads plain files too
  if (f == nullptr) {
    return absl::NotFoundError(
        StrCat(path, ": cannot open: ", std::strerror(errno)));
  }
  std::string data;
  char buf[1 << 16];
  int n;
  while ((n = gzread(f, buf, sizeof buf)) > 0) data.append(buf, n);
  int err = 0;
  const char* msg = gzerror(f, &err);
  bool failed = n < 0 || (err != Z_OK && err != Z_STREAM_END);
  std::string why = failed ? std::string(msg) : "";
  gzclose(f);
  if (failed) {
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
