// Counter-based random numbers for the random ops (docs/architecture.md).
//
// Philox-4x32-10 (Salmon et al., "Parallel random numbers: as easy as 1, 2,
// 3", SC'11) maps a (key, counter) pair to 128 random bits. Draw `i` of a
// stream is therefore computed on its own, in any order and on any thread: a
// kernel's output depends on the seed and the counter, never on how many
// threads generated it.
//
// A random op reserves one counter per element from its RandomCounter
// resource (framework/resource_mgr.h), so each run draws new numbers, and
// samples element i from counter `first + i`:
//
//   RandomSampler s(EffectiveSeed(ctx->global_seed(), op_seed, node.name()),
//                   counter->Reserve(n));
//   for (int64_t i = 0; i < n; ++i) out[i] = s.Normal(i);
//
// Everything here is a pure function of its arguments, and thread-safe.
#ifndef RUNNEL_BASE_RANDOM_H_
#define RUNNEL_BASE_RANDOM_H_

#include <array>
#include <cstdint>
#include <string_view>

#include "base/philox.h"

namespace runnel {

// Philox-4x32-10: 128 random bits for `counter` under `key`. Matches the
// Random123 reference implementation's known-answer vectors.
std::array<uint32_t, 4> Philox4x32(std::array<uint32_t, 4> counter,
                                   std::array<uint32_t, 2> key);

// The splitmix64 finaliser: a bijective 64-bit mix.
uint64_t Mix64(uint64_t x);
// Combines two seeds into one; order matters.
uint64_t MixSeeds(uint64_t a, uint64_t b);
// FNV-1a of `name`: stable across platforms and runs, unlike std::hash.
uint64_t HashName(std::string_view name);
// The seed of a random op: mixed from the global seed and the op's `seed`
// attribute when that is >= 0, else from the global seed and its node name.
uint64_t EffectiveSeed(uint64_t global_seed, int64_t op_seed,
                       std::string_view node_name);

// Samples of one stream: element `i` comes from counter `first + i`. The
// math is base/philox.h's, which GPU kernels share.
class RandomSampler {
 public:
  RandomSampler(uint64_t seed, uint64_t first_counter)
      : stream_(philox::Stream::Of(seed, first_counter)) {}

  // The stream, for a GPU kernel to sample from.
  const philox::Stream& stream() const { return stream_; }
  // The 128 bits of element `i`; `round` > 0 gives further independent
  // bits of the same element (for rejection sampling).
  std::array<uint32_t, 4> Bits(uint64_t i, uint32_t round = 0) const {
    const philox::Bits b = stream_.At(i, round);
    return {b.w[0], b.w[1], b.w[2], b.w[3]};
  }
  // Uniform in [0, 1), with 53 random bits.
  double Uniform(uint64_t i) const { return stream_.Uniform(i); }
  // Uniform in [0, range); `range` >= 1. The bias of the modulo is below
  // range / 2^64.
  uint64_t UniformInt(uint64_t i, uint64_t range) const {
    return stream_.UniformInt(i, range);
  }
  // Standard normal, by Box-Muller from two uniforms of element `i`.
  double Normal(uint64_t i) const { return stream_.Normal(i); }
  // Standard normal conditioned on |x| <= 2: resamples (further rounds of
  // element `i`) until within two standard deviations.
  double TruncatedNormal(uint64_t i) const {
    return stream_.TruncatedNormal(i);
  }

 private:
  philox::Stream stream_;
};

}  // namespace runnel

#endif  // RUNNEL_BASE_RANDOM_H_
