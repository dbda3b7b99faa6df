// The counter-based generator of the random ops (base/random.h) as
// inline functions that the CPU and, compiled by nvcc, the GPU share
// (kernels/cpu/random_kernels.cc, kernels/cuda/random.cu): element `i` of a
// stream is a pure function of its key and counter `first + i`, so each
// GPU thread computes its own elements and gets the CPU's numbers. Plain
// C++ without the standard library's containers, so that device code can
// use it.
//
// The CPU's and the GPU's samples agree bit for bit where only integer
// operations, IEEE arithmetic and fma are involved (uniform floats and
// integers, dropout's masks); normals also go through log, sqrt, cos and
// sin, where CUDA's double functions are within an ulp or two of glibc's,
// so an f64 normal may differ in its last bits and an f32 one (rounded from
// the double) very rarely by one ulp.
#ifndef RUNNEL_BASE_PHILOX_H_
#define RUNNEL_BASE_PHILOX_H_

#include <cmath>
#include <cstdint>

#if defined(__CUDACC__)
#define RN_PHILOX_FN __host__ __device__ inline
#else
#define RN_PHILOX_FN inline
#endif

namespace runnel::philox {

// 128 random bits.
struct Bits {
  uint32_t w[4];
};

// Philox-4x32-10 (Salmon et al., SC'11): the bits of `counter` under key
// (k0, k1). Matches the Random123 reference implementation.
RN_PHILOX_FN Bits Philox4x32(Bits c, uint32_t k0, uint32_t k1) {
  for (int round = 0; round < 10; ++round) {
    const uint64_t p0 = uint64_t{0xD2511F53} * c.w[0];
    const uint64_t p1 = uint64_t{0xCD9E8D57} * c.w[2];
    c = Bits{{static_cast<uint32_t>(p1 >> 32) ^ c.w[1] ^ k0,
              static_cast<uint32_t>(p1),
              static_cast<uint32_t>(p0 >> 32) ^ c.w[3] ^ k1,
              static_cast<uint32_t>(p0)}};
    k0 += 0x9E3779B9;
    k1 += 0xBB67AE85;
  }
  return c;
}

// The math library's double functions, the host's or the GPU's.
#ifdef __CUDA_ARCH__
#define RN_PHILOX_MATH(fn) ::fn
#else
#define RN_PHILOX_MATH(fn) std::fn
#endif
RN_PHILOX_FN double Fma(double a, double b, double c) {
  return RN_PHILOX_MATH(fma)(a, b, c);
}
RN_PHILOX_FN double Log(double x) { return RN_PHILOX_MATH(log)(x); }
RN_PHILOX_FN double Sqrt(double x) { return RN_PHILOX_MATH(sqrt)(x); }
RN_PHILOX_FN double Cos(double x) { return RN_PHILOX_MATH(cos)(x); }
RN_PHILOX_FN double Sin(double x) { return RN_PHILOX_MATH(sin)(x); }
RN_PHILOX_FN double Abs(double x) { return RN_PHILOX_MATH(fabs)(x); }
#undef RN_PHILOX_MATH

// 53 random bits from two words, as a double in [0, 1).
RN_PHILOX_FN double ToUnit(uint32_t hi, uint32_t lo) {
  const uint64_t bits = (static_cast<uint64_t>(hi) << 32 | lo) >> 11;
  return static_cast<double>(bits) * 0x1.0p-53;
}

// x scaled to [min, max) or to mean + stddev * x, with one rounding (fma),
// whatever the compiler would contract.
RN_PHILOX_FN double Affine(double x, double scale, double offset) {
  return Fma(x, scale, offset);
}

// One stream: element `i` comes from counter `first + i` under `key`.
struct Stream {
  uint32_t k0 = 0, k1 = 0;
  uint64_t first = 0;

  RN_PHILOX_FN static Stream Of(uint64_t seed, uint64_t first_counter) {
    Stream s;
    s.k0 = static_cast<uint32_t>(seed);
    s.k1 = static_cast<uint32_t>(seed >> 32);
    s.first = first_counter;
    return s;
  }

  // The 128 bits of element `i`; `round` > 0 gives further independent
  // bits of the same element (for rejection sampling).
  RN_PHILOX_FN Bits At(uint64_t i, uint32_t round = 0) const {
    const uint64_t counter = first + i;
    return Philox4x32(Bits{{static_cast<uint32_t>(counter),
                            static_cast<uint32_t>(counter >> 32), round, 0}},
                      k0, k1);
  }
  // Uniform in [0, 1), with 53 random bits.
  RN_PHILOX_FN double Uniform(uint64_t i) const {
    const Bits b = At(i);
    return ToUnit(b.w[0], b.w[1]);
  }
  // Uniform in [0, range) (range 0: all 64 bits). The bias of the modulo
  // is below range / 2^64.
  RN_PHILOX_FN uint64_t UniformInt(uint64_t i, uint64_t range) const {
    const Bits b = At(i);
    const uint64_t bits = static_cast<uint64_t>(b.w[0]) << 32 | b.w[1];
    return range == 0 ? bits : bits % range;
  }
  // Box-Muller in polar form on the bits of one round: a normal is radius
  // * cos(theta), and radius * sin(theta) another, independent of it.
  RN_PHILOX_FN void Polar(uint64_t i, uint32_t round, double* radius,
                          double* theta) const {
    const Bits b = At(i, round);
    // 1 - u lies in (0, 1], so the logarithm is finite.
    *radius = Sqrt(-2.0 * Log(1.0 - ToUnit(b.w[0], b.w[1])));
    *theta = 2.0 * 3.141592653589793 * ToUnit(b.w[2], b.w[3]);
  }
  // Standard normal.
  RN_PHILOX_FN double Normal(uint64_t i) const {
    double r, t;
    Polar(i, 0, &r, &t);
    return r * Cos(t);
  }
  // Standard normal conditioned on |x| <= 2: further rounds of element `i`
  // until one falls within two standard deviations (both of a round fall
  // outside with probability about 0.2%).
  RN_PHILOX_FN double TruncatedNormal(uint64_t i) const {
    for (uint32_t round = 0;; ++round) {
      double r, t;
      Polar(i, round, &r, &t);
      const double c = r * Cos(t);
      if (Abs(c) <= 2.0) return c;
      const double s = r * Sin(t);
      if (Abs(s) <= 2.0) return s;
    }
  }
};

}  // namespace runnel::philox

#undef RN_PHILOX_FN

#endif  // RUNNEL_BASE_PHILOX_H_
