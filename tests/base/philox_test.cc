// base/philox.h, the generator the random ops' CPU and GPU kernels
// share: element-addressed samples equal a sequential walk over the
// counters, and the CPU kernels sample through it (so a GPU kernel that
// computes each element's counter gives the same numbers).
#include "base/philox.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <memory>
#include <numbers>
#include <vector>

#include "base/float16.h"
#include "base/random.h"
#include "common_runtime/session.h"
#include "tests/util/test_util.h"

namespace runnel {
namespace {

using ::runnel::testing::I32;

// The reference: counters walked one after another as a 64-bit value split
// into two words (the carry into the high word included), through the
// Random123-checked Philox4x32 of base/random.h.
struct Sequential {
  uint64_t seed, counter;
  std::array<uint32_t, 4> Next() {
    const std::array<uint32_t, 4> b = Philox4x32(
        {static_cast<uint32_t>(counter), static_cast<uint32_t>(counter >> 32),
         0, 0},
        {static_cast<uint32_t>(seed), static_cast<uint32_t>(seed >> 32)});
    ++counter;
    return b;
  }
};

double Unit(uint32_t hi, uint32_t lo) {
  return static_cast<double>((static_cast<uint64_t>(hi) << 32 | lo) >> 11) /
         9007199254740992.0;  // 2^53
}

TEST(PhiloxTest, ElementsEqualTheSequentialWalk) {
  const uint64_t seed = 0x0123456789ABCDEFULL;
  const uint64_t first = (uint64_t{1} << 32) - 500;  // crosses the carry
  const philox::Stream s = philox::Stream::Of(seed, first);
  Sequential walk{seed, first};
  for (uint64_t i = 0; i < 1000; ++i) {
    const std::array<uint32_t, 4> b = walk.Next();
    const philox::Bits e = s.At(i);
    ASSERT_EQ((std::array<uint32_t, 4>{e.w[0], e.w[1], e.w[2], e.w[3]}), b)
        << i;
    EXPECT_EQ(s.Uniform(i), Unit(b[0], b[1])) << i;
    const double radius = std::sqrt(-2.0 * std::log(1.0 - Unit(b[0], b[1])));
    const double theta = 2.0 * std::numbers::pi * Unit(b[2], b[3]);
    EXPECT_EQ(s.Normal(i), radius * std::cos(theta)) << i;
    EXPECT_EQ(s.UniformInt(i, 10),
              (static_cast<uint64_t>(b[0]) << 32 | b[1]) % 10)
        << i;
  }
}

// Two reservations in turn sample what one spanning both would.
TEST(PhiloxTest, ReservationsSplitOneStream) {
  const philox::Stream whole = philox::Stream::Of(42, 0);
  const philox::Stream second = philox::Stream::Of(42, 300);
  for (uint64_t i = 0; i < 200; ++i) {
    EXPECT_EQ(second.Normal(i), whole.Normal(300 + i));
    EXPECT_EQ(second.TruncatedNormal(i), whole.TruncatedNormal(300 + i));
    const double z = whole.TruncatedNormal(i);
    EXPECT_LE(std::abs(z), 2.0);
  }
}

// random_normal's CPU kernel gives element i of a run from counter
// first + i through philox.h (mean + stddev * z with one rounding), and
// the next run continues the stream.
TEST(PhiloxTest, TheCpuKernelSamplesThroughIt) {
  auto g = std::make_shared<Graph>();
  Node* shape = *g->AddConst(I32({5}, {1}), "shape");
  absl::StatusOr<Node*> r = g->AddNode({.name = "r",
                                        .op = "random_normal",
                                        .inputs = {{shape, 0}},
                                        .attrs = {{"seed", int64_t{7}},
                                                  {"mean", 0.5},
                                                  {"stddev", 3.0},
                                                  {"dtype", DType::kF32}}});
  ASSERT_TRUE(r.ok()) << r.status();
  Session session(g, {.num_threads = 2, .seed = 11});
  const philox::Stream s =
      philox::Stream::Of(EffectiveSeed(11, 7, "r"), /*first_counter=*/0);
  for (int run = 0; run < 2; ++run) {
    absl::StatusOr<std::vector<Tensor>> out =
        session.Run(Session::Feeds{}, {NodeOut{*r, 0}}, {});
    ASSERT_TRUE(out.ok()) << out.status();
    for (int i = 0; i < 5; ++i) {
      const double z = s.Normal(run * 5 + i);
      EXPECT_EQ((*out)[0].at<float>(i),
                static_cast<float>(philox::Affine(z, 3.0, 0.5)))
          << run << " " << i;
    }
  }
}

}  // namespace
}  // namespace runnel
