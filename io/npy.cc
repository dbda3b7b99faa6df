#include "io/npy.h"

#include <cstdlib>
#include <cstring>
#include <sstream>

#include "base/atomic_file.h"
#include "base/read_file.h"
#include "base/status_macros.h"
#include "base/strings.h"

namespace runnel {
namespace {

absl::Status FileError(const std::string& path, std::string why) {
  return absl::InvalidArgumentError(StrCat(path, ": ", why));
}

// The value of `'key': ...` in a .npy header dictionary.
bool HeaderValue(const std::string& header, const std::string& key,
                 std::string* value) {
  size_t k = header.find("'" + key + "'");
  if (k == std::string::npos) return false;
  size_t colon = header.find(':', k);
  if (colon == std::string::npos) return false;
  size_t start = header.find_first_not_of(' ', colon + 1);
  if (start == std::string::npos) return false;
  size_t end;
  if (header[start] == '\'') {
    end = header.find('\'', start + 1);
    if (end == std::string::npos) return false;
    *value = header.substr(start + 1, end - start - 1);
  } else if (header[start] == '(') {
    end = header.find(')', start);
    if (end == std::string::npos) return false;
    *value = header.substr(start + 1, end - start - 1);
  } else {
    end = header.find_first_of(",}", start);
    *value = header.substr(start, end - start);
  }
  return true;
}

bool HostIsLittleEndian() {
  const uint16_t one = 1;
  uint8_t b;
  std::memcpy(&b, &one, 1);
  return b == 1;
}

void SwapBytes(char* data, size_t count, size_t width) {
  for (size_t i = 0; i < count; ++i) {
    char* p = data + i * width;
    for (size_t j = 0; j < width / 2; ++j) std::swap(p[j], p[width - 1 - j]);
  }
}

template <typename From, typename To>
void Widen(const char* src, Tensor* dst, int64_t n) {
  for (int64_t i = 0; i < n; ++i) {
    From v;
    std::memcpy(&v, src + i * sizeof(From), sizeof(From));
    dst->data<To>()[i] = static_cast<To>(v);
  }
}

}  // namespace

absl::StatusOr<Tensor> ReadNpy(const std::string& path) {
  absl::StatusOr<std::string> file = ReadFileToString(path);
  if (!file.ok()) return file.status();
  const std::string& data = *file;
  if (data.size() < 10 || data.compare(0, 6, "\x93NUMPY") != 0) {
    return FileError(path, "not a .npy file (bad magic)");
  }
  const int major = static_cast<uint8_t>(data[6]);
  size_t header_len, offset;
  if (major == 1) {
    header_len = static_cast<uint8_t>(data[8]) |
                 (static_cast<size_t>(static_cast<uint8_t>(data[9])) << 8);
    offset = 10;
  } else if (major == 2 || major == 3) {
    if (data.size() < 12) return FileError(path, "truncated header");
    header_len = 0;
    for (int i = 0; i < 4; ++i) {
      header_len |= static_cast<size_t>(static_cast<uint8_t>(data[8 + i]))
                    << (8 * i);
    }
    offset = 12;
  } else {
    return FileError(path, StrCat("unsupported .npy version ", major));
  }
  if (offset + header_len > data.size()) {
    return FileError(path, "truncated header");
  }
  const std::string header = data.substr(offset, header_len);
  std::string descr, fortran, shape_text;
  if (!HeaderValue(header, "descr", &descr) ||
      !HeaderValue(header, "fortran_order", &fortran) ||
      !HeaderValue(header, "shape", &shape_text)) {
    return FileError(path, "malformed header");
  }
  if (fortran.find("True") != std::string::npos) {
    return FileError(path, "Fortran-order arrays are not supported");
  }
  std::vector<int64_t> dims;
  {
    std::stringstream ss(shape_text);
    std::string item;
    while (std::getline(ss, item, ',')) {
      size_t a = item.find_first_not_of(" ");
      if (a == std::string::npos) continue;
      char* end = nullptr;
      long long d = std::strtoll(item.c_str() + a, &end, 10);
      if (end == item.c_str() + a || d < 0) {
        return FileError(path, StrCat("malformed shape (", shape_text, ")"));
      }
      dims.push_back(d);
    }
  }
  if (descr.size() < 3) return FileError(path, "malformed dtype " + descr);
  const char order = descr[0];
  const std::string kind = descr.substr(1);
  const bool swap = (order == '>' && HostIsLittleEndian()) ||
                    (order == '<' && !HostIsLittleEndian());
  struct Type {
    const char* code;
    size_t width;
    DType dtype;
  };
  static const Type kTypes[] = {
      {"f2", 2, DType::kF16}, {"f4", 4, DType::kF32}, {"f8", 8, DType::kF64},
      {"i1", 1, DType::kI8},  {"u1", 1, DType::kU8},  {"i2", 2, DType::kI32},
      {"u2", 2, DType::kI32}, {"i4", 4, DType::kI32}, {"u4", 4, DType::kI64},
      {"i8", 8, DType::kI64}, {"b1", 1, DType::kBool}};
  const Type* type = nullptr;
  for (const Type& t : kTypes) {
    if (kind == t.code) type = &t;
  }
  if (type == nullptr) {
    return FileError(path, StrCat("unsupported element type '", descr, "'"));
  }
  Shape shape(dims);
  const int64_t n = shape.num_elements();
  const size_t body = offset + header_len;
  if (data.size() - body < static_cast<size_t>(n) * type->width) {
    return FileError(path, StrCat("truncated data: expected ", n * type->width,
                                  " bytes, found ", data.size() - body));
  }
  std::string raw = data.substr(body, n * type->width);
  if (swap && type->width > 1) SwapBytes(raw.data(), n, type->width);
  Tensor t(type->dtype, shape);
  if (kind == "i2") {
    Widen<int16_t, int32_t>(raw.data(), &t, n);
  } else if (kind == "u2") {
    Widen<uint16_t, int32_t>(raw.data(), &t, n);
  } else if (kind == "u4") {
    Widen<uint32_t, int64_t>(raw.data(), &t, n);
  } else if (kind == "b1") {
    for (int64_t i = 0; i < n; ++i) t.data<bool>()[i] = raw[i] != 0;
  } else if (n > 0) {
    std::memcpy(t.raw_data(), raw.data(), raw.size());
  }
  return t;
}

absl::Status WriteNpy(const std::string& path, const Tensor& t) {
  const char* descr = InfoOf(t.dtype()).numpy_descr;
  if (descr == nullptr) {
    return FileError(path, StrCat(DTypeName(t.dtype()),
                                  " has no NumPy dtype; cast it to f32 before "
                                  "saving"));
  }
  std::string shape = "(";
  for (int i = 0; i < t.rank(); ++i) {
    shape +=
        StrCat(t.dim(i), t.rank() == 1 ? "," : (i + 1 < t.rank() ? ", " : ""));
  }
  shape += ")";
  std::string header =
      StrCat("{'descr': '", descr,
             "', 'fortran_order': False, 'shape': ", shape, ", }");
  // Pad so the data starts on a 64-byte boundary; the header ends in '\n'.
  size_t total = 10 + header.size() + 1;
  header.append((64 - total % 64) % 64, ' ');
  header += '\n';
  std::string out = "\x93NUMPY";
  out += '\x01';
  out += '\x00';
  out += static_cast<char>(header.size() & 0xff);
  out += static_cast<char>((header.size() >> 8) & 0xff);
  out += header;
  std::string body(static_cast<const char*>(t.raw_data()), t.bytes());
  if (t.dtype() == DType::kBool) {
    for (int64_t i = 0; i < t.num_elements(); ++i) {
      body[i] = t.data<bool>()[i] ? 1 : 0;
    }
  }
  if (!HostIsLittleEndian() && DTypeSize(t.dtype()) > 1) {
    SwapBytes(body.data(), t.num_elements(), DTypeSize(t.dtype()));
  }
  out += body;

  AtomicFile file(path, "file");
  RN_RETURN_IF_ERROR(file.Create());
  RN_RETURN_IF_ERROR(file.Write(out.data(), out.size()));
  return file.Commit();
}

}  // namespace runnel
