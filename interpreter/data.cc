#include "interpreter/data.h"

#include <cstring>
#include <random>

namespace runnel::interp {

Tensor GatherRows(const Tensor& t, const std::vector<int64_t>& rows) {
  std::vector<int64_t> dims = t.shape().dims();
  const int64_t n = dims.empty() ? 1 : dims[0];
  const size_t row_bytes = n == 0 ? 0 : t.bytes() / n;
  dims[0] = static_cast<int64_t>(rows.size());
  Tensor out(t.dtype(), Shape(dims));
  const char* src = static_cast<const char*>(t.raw_data());
  char* dst = static_cast<char*>(out.raw_data());
  for (size_t i = 0; i < rows.size(); ++i) {
    std::memcpy(dst + i * row_bytes, src + rows[i] * row_bytes, row_bytes);
  }
  return out;
}

std::vector<int64_t> RowOrder(int64_t n, bool shuffle, uint64_t seed) {
  std::vector<int64_t> order(n);
  for (int64_t i = 0; i < n; ++i) order[i] = i;
  if (shuffle) {
    // Fisher-Yates with a fixed generator and our own bounded draw, so the
    // order is the same with every standard library.
    std::mt19937_64 gen(seed * 0x9E3779B97F4A7C15ull + 1);
    for (int64_t i = n - 1; i > 0; --i) {
      uint64_t bound = static_cast<uint64_t>(i) + 1;
      uint64_t limit = UINT64_MAX - UINT64_MAX % bound;
      uint64_t r;
      do {
        r = gen();
      } while (r >= limit);
      std::swap(order[i], order[r % bound]);
    }
  }
  return order;
}

}  // namespace runnel::interp
