#include "base/random.h"

namespace runnel {

std::array<uint32_t, 4> Philox4x32(std::array<uint32_t, 4> counter,
                                   std::array<uint32_t, 2> key) {
  const philox::Bits b = philox::Philox4x32(
      {{counter[0], counter[1], counter[2], counter[3]}}, key[0], key[1]);
  return {b.w[0], b.w[1], b.w[2], b.w[3]};
}

uint64_t Mix64(uint64_t x) {
  x += 0x9E3779B97F4A7C15ULL;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ULL;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBULL;
  return x ^ (x >> 31);
}

uint64_t MixSeeds(uint64_t a, uint64_t b) {
  return Mix64(Mix64(a) ^ (b + 0x632BE59BD9B4E019ULL));
}

uint64_t HashName(std::string_view name) {
  uint64_t h = 0xCBF29CE484222325ULL;
  for (unsigned char ch : name) {
    h ^= ch;
    h *= 0x100000001B3ULL;
  }
  return h;
}

uint64_t EffectiveSeed(uint64_t global_seed, int64_t op_seed,
                       std::string_view node_name) {
  // Different tags keep `seed = k` apart from a name whose hash is k.
  if (op_seed >= 0) {
    return MixSeeds(MixSeeds(global_seed, 1), static_cast<uint64_t>(op_seed));
  }
  return MixSeeds(MixSeeds(global_seed, 2), HashName(node_name));
}

}  // namespace runnel
