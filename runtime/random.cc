#include "runtime/random.h"

#include <cmath>
#include <numbers>

namespace runnel {
namespace {

constexpr uint32_t kPhiloxM0 = 0xD2511F53;
constexpr uint32_t kPhiloxM1 = 0xCD9E8D57;
constexpr uint32_t kPhiloxW0 = 0x9E3779B9;
constexpr uint32_t kPhiloxW1 = 0xBB67AE85;

// 53 random bits from two words, as a double in [0, 1).
double ToUnit(uint32_t hi, uint32_t lo) {
  uint64_t bits = (static_cast<uint64_t>(hi) << 32 | lo) >> 11;
  return static_cast<double>(bits) * 0x1.0p-53;
}

// Box-Muller in polar form: a normal is radius * cos(theta), and radius *
// sin(theta) is another, independent of it.
struct Polar {
  double radius, theta;
};
Polar BoxMuller(const std::array<uint32_t, 4>& b) {
  // 1 - u lies in (0, 1], so the logarithm is finite.
  return {std::sqrt(-2.0 * std::log(1.0 - ToUnit(b[0], b[1]))),
          2.0 * std::numbers::pi * ToUnit(b[2], b[3])};
}

}  // namespace

std::array<uint32_t, 4> Philox4x32(std::array<uint32_t, 4> c,
                                   std::array<uint32_t, 2> key) {
  for (int round = 0; round < 10; ++round) {
    uint64_t p0 = static_cast<uint64_t>(kPhiloxM0) * c[0];
    uint64_t p1 = static_cast<uint64_t>(kPhiloxM1) * c[2];
    c = {static_cast<uint32_t>(p1 >> 32) ^ c[1] ^ key[0],
         static_cast<uint32_t>(p1),
         static_cast<uint32_t>(p0 >> 32) ^ c[3] ^ key[1],
         static_cast<uint32_t>(p0)};
    key[0] += kPhiloxW0;
    key[1] += kPhiloxW1;
  }
  return c;
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

std::array<uint32_t, 4> RandomSampler::Bits(uint64_t i, uint32_t round) const {
  uint64_t counter = first_ + i;
  return Philox4x32({static_cast<uint32_t>(counter),
                     static_cast<uint32_t>(counter >> 32), round, 0},
                    key_);
}

double RandomSampler::Uniform(uint64_t i) const {
  std::array<uint32_t, 4> b = Bits(i);
  return ToUnit(b[0], b[1]);
}

uint64_t RandomSampler::UniformInt(uint64_t i, uint64_t range) const {
  std::array<uint32_t, 4> b = Bits(i);
  uint64_t bits = static_cast<uint64_t>(b[0]) << 32 | b[1];
  return range == 0 ? bits : bits % range;
}

double RandomSampler::Normal(uint64_t i) const {
  Polar p = BoxMuller(Bits(i));
  return p.radius * std::cos(p.theta);
}

double RandomSampler::TruncatedNormal(uint64_t i) const {
  // Each round gives two normals; both fall outside with probability
  // about 0.2%, so the loop almost always ends in the first round.
  for (uint32_t round = 0;; ++round) {
    Polar p = BoxMuller(Bits(i, round));
    if (double z = p.radius * std::cos(p.theta); std::abs(z) <= 2.0) return z;
    if (double z = p.radius * std::sin(p.theta); std::abs(z) <= 2.0) return z;
  }
}

}  // namespace runnel
