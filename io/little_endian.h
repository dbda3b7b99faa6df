// Little-endian fields of the binary formats in io/: the checkpoint format
// (checkpoint.cc) and TensorBoard's event records (event_file.cc).
#ifndef RUNNEL_IO_LITTLE_ENDIAN_H_
#define RUNNEL_IO_LITTLE_ENDIAN_H_

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace runnel {

inline void PutU32(std::string* out, uint32_t v) {
  for (int i = 0; i < 4; ++i) out->push_back(static_cast<char>(v >> (8 * i)));
}
inline void PutU64(std::string* out, uint64_t v) {
  for (int i = 0; i < 8; ++i) out->push_back(static_cast<char>(v >> (8 * i)));
}

// Little-endian fields from a byte range; every Get fails past the end.
class FieldReader {
 public:
  explicit FieldReader(std::string_view bytes) : bytes_(bytes) {}
  bool GetU32(uint32_t* v) { return Get(4, v); }
  bool GetU64(uint64_t* v) { return Get(8, v); }
  bool GetBytes(size_t n, std::string* s) {
    if (bytes_.size() - pos_ < n) return false;
    s->assign(bytes_.data() + pos_, n);
    pos_ += n;
    return true;
  }
  size_t remaining() const { return bytes_.size() - pos_; }
  // Bytes read so far.
  size_t position() const { return pos_; }

 private:
  template <typename T>
  bool Get(int n, T* v) {
    if (bytes_.size() - pos_ < static_cast<size_t>(n)) return false;
    T x = 0;
    for (int i = 0; i < n; ++i) {
      x |= static_cast<T>(static_cast<unsigned char>(bytes_[pos_ + i]))
           << (8 * i);
    }
    *v = x;
    pos_ += n;
    return true;
  }
  std::string_view bytes_;
  size_t pos_ = 0;
};

}  // namespace runnel

#endif  // RUNNEL_IO_LITTLE_ENDIAN_H_
