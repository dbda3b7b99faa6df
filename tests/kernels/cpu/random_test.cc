// Random ops and the counter-based sampler behind them (base/random.h).
#include "base/random.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <set>

#include "base/strings.h"
#include "common_runtime/eager.h"
#include "tests/util/test_util.h"

namespace runnel {
namespace {

using ::runnel::testing::Bool;
using ::runnel::testing::ExpectTensor;
using ::runnel::testing::F32;
using ::runnel::testing::I32;
using ::testing::HasSubstr;

constexpr int kSamples = 100000;

// Runs `op` on `ctx` under node name `name`; returns output 0 (dropout's
// y; its second output is the scale).
Tensor Draw(EagerContext& ctx, const std::string& op,
            std::vector<Tensor> inputs, AttrMap attrs,
            const std::string& name) {
  absl::StatusOr<std::vector<Tensor>> out =
      ctx.Execute(op, std::move(inputs), std::move(attrs), name);
  EXPECT_TRUE(out.ok()) << out.status();
  return out.ok() ? (*out)[0] : Tensor();
}

Tensor Normal(EagerContext& ctx, int64_t n, AttrMap attrs = {},
              const std::string& name = "w") {
  return Draw(ctx, "random_normal", {I32({static_cast<int32_t>(n)}, {1})},
              std::move(attrs), name);
}

struct Moments {
  double mean, stddev;
};
Moments MomentsOf(const Tensor& t) {
  std::vector<double> v = t.ToDoubles();
  double sum = 0, sq = 0;
  for (double x : v) sum += x;
  const double mean = sum / v.size();
  for (double x : v) sq += (x - mean) * (x - mean);
  return {mean, std::sqrt(sq / v.size())};
}

TEST(RandomTest, PhiloxMatchesRandom123KnownAnswers) {
  EXPECT_EQ(Philox4x32({0, 0, 0, 0}, {0, 0}),
            (std::array<uint32_t, 4>{0x6627e8d5, 0xe169c58d, 0xbc57ac4c,
                                     0x9b00dbd8}));
  EXPECT_EQ(Philox4x32({0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff},
                       {0xffffffff, 0xffffffff}),
            (std::array<uint32_t, 4>{0x408f276d, 0x41c83b0e, 0xa20bc7c6,
                                     0x6d5451fd}));
  EXPECT_EQ(Philox4x32({0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344},
                       {0xa4093822, 0x299f31d0}),
            (std::array<uint32_t, 4>{0xd16cfe09, 0x94fdcceb, 0x5001e420,
                                     0x24126ea1}));
}

TEST(RandomTest, EffectiveSeedUsesTheSeedAttributeOrTheName) {
  EXPECT_EQ(EffectiveSeed(0, 5, "a"), EffectiveSeed(0, 5, "b"));
  EXPECT_NE(EffectiveSeed(0, 5, "a"), EffectiveSeed(0, 6, "a"));
  EXPECT_NE(EffectiveSeed(0, -1, "a"), EffectiveSeed(0, -1, "b"));
  EXPECT_NE(EffectiveSeed(0, -1, "a"), EffectiveSeed(1, -1, "a"));
  EXPECT_EQ(EffectiveSeed(3, -1, "layer/w"), EffectiveSeed(3, -1, "layer/w"));
}

TEST(RandomTest, SameSeedAndNameRepeatAcrossFreshContexts) {
  for (int64_t seed : {int64_t{-1}, int64_t{42}}) {
    EagerContext a({.num_threads = 1, .seed = 7});
    EagerContext b({.num_threads = 4, .seed = 7});
    // Large enough to be generated in parallel in `b`.
    Tensor xa = Normal(a, kSamples, {{"seed", seed}});
    Tensor xb = Normal(b, kSamples, {{"seed", seed}});
    EXPECT_EQ(xa.ToDoubles(), xb.ToDoubles()) << "seed " << seed;
    // And the second draw repeats too.
    EXPECT_EQ(Normal(a, 10, {{"seed", seed}}).ToDoubles(),
              Normal(b, 10, {{"seed", seed}}).ToDoubles());
  }
}

TEST(RandomTest, SuccessiveCallsDiffer) {
  EagerContext ctx({.num_threads = 2, .seed = 0});
  Tensor first = Normal(ctx, 8, {{"seed", int64_t{1}}});
  Tensor second = Normal(ctx, 8, {{"seed", int64_t{1}}});
  EXPECT_NE(first.ToDoubles(), second.ToDoubles());
}

TEST(RandomTest, SeedsAndNamesSelectStreams) {
  EagerContext ctx({.num_threads = 2, .seed = 0});
  EXPECT_NE(Normal(ctx, 8, {{"seed", int64_t{1}}}, "p").ToDoubles(),
            Normal(ctx, 8, {{"seed", int64_t{2}}}, "q").ToDoubles());
  // Without a seed, the name picks the stream.
  EXPECT_NE(Normal(ctx, 8, {}, "r").ToDoubles(),
            Normal(ctx, 8, {}, "s").ToDoubles());
  // Another global seed gives other numbers.
  EagerContext other({.num_threads = 2, .seed = 1});
  EagerContext same({.num_threads = 2, .seed = 0});
  EXPECT_NE(Normal(other, 8, {}, "t").ToDoubles(),
            Normal(same, 8, {}, "t").ToDoubles());
}

TEST(RandomTest, NormalMoments) {
  EagerContext ctx({.num_threads = 2, .seed = 0});
  Tensor x = Normal(ctx, kSamples, {{"mean", 3.0}, {"stddev", 2.0}});
  ASSERT_EQ(x.shape(), Shape{kSamples});
  Moments m = MomentsOf(x);
  EXPECT_NEAR(m.mean, 3.0, 0.03);
  EXPECT_NEAR(m.stddev, 2.0, 0.03);
  // About 68.3% within one standard deviation.
  int within = 0;
  for (double v : x.ToDoubles()) within += std::abs(v - 3.0) < 2.0;
  EXPECT_NEAR(within / double(kSamples), 0.6827, 0.01);
}

TEST(RandomTest, NormalInEveryFloatDType) {
  EagerContext ctx({.num_threads = 2, .seed = 0});
  for (DType d : {DType::kF16, DType::kBF16, DType::kF32, DType::kF64}) {
    Tensor x =
        Draw(ctx, "random_normal", {I32({100, 100}, {2})}, {{"dtype", d}}, "n");
    ASSERT_EQ(x.dtype(), d);
    ASSERT_EQ(x.shape(), (Shape{100, 100}));
    Moments m = MomentsOf(x);
    EXPECT_NEAR(m.mean, 0.0, 0.05) << DTypeName(d);
    EXPECT_NEAR(m.stddev, 1.0, 0.05) << DTypeName(d);
  }
  absl::StatusOr<Tensor> bad =
      ctx.Execute1("random_normal", {I32({2}, {1})}, {{"dtype", DType::kI32}});
  ASSERT_FALSE(bad.ok());
  EXPECT_THAT(bad.status().message(), HasSubstr("dtype must be floating"));
}

TEST(RandomTest, TruncatedNormalStaysWithinTwoStddev) {
  EagerContext ctx({.num_threads = 2, .seed = 0});
  Tensor x = Draw(ctx, "truncated_normal", {I32({kSamples}, {1})},
                  {{"mean", -1.0}, {"stddev", 0.5}}, "t");
  std::vector<double> v = x.ToDoubles();
  for (double e : v) {
    ASSERT_LE(std::abs(e + 1.0), 1.0 + 1e-6) << e;
  }
  // The standard normal truncated to [-2, 2] has stddev 0.8796.
  Moments m = MomentsOf(x);
  EXPECT_NEAR(m.mean, -1.0, 0.01);
  EXPECT_NEAR(m.stddev, 0.5 * 0.8796, 0.01);
}

TEST(RandomTest, UniformFloats) {
  EagerContext ctx({.num_threads = 2, .seed = 0});
  Tensor x = Draw(ctx, "random_uniform", {I32({kSamples}, {1})},
                  {{"minval", -2.0}, {"maxval", 4.0}}, "u");
  std::vector<double> v = x.ToDoubles();
  for (double e : v) {
    ASSERT_GE(e, -2.0);
    ASSERT_LT(e, 4.0);
  }
  Moments m = MomentsOf(x);
  EXPECT_NEAR(m.mean, 1.0, 0.03);
  EXPECT_NEAR(m.stddev, 6.0 / std::sqrt(12.0), 0.03);
  // bf16 has 8 bits of mantissa: values near maxval must not round to it.
  Tensor b =
      Draw(ctx, "random_uniform", {I32({kSamples}, {1})},
           {{"minval", 0.0}, {"maxval", 1.0}, {"dtype", DType::kBF16}}, "ub");
  for (double e : b.ToDoubles()) {
    ASSERT_GE(e, 0.0);
    ASSERT_LT(e, 1.0);
  }
}

TEST(RandomTest, UniformIntegersStayInRange) {
  EagerContext ctx({.num_threads = 2, .seed = 0});
  Tensor x = Draw(
      ctx, "random_uniform", {I32({10000}, {1})},
      {{"minval", int64_t{-3}}, {"maxval", int64_t{7}}, {"dtype", DType::kI32}},
      "ui");
  ASSERT_EQ(x.dtype(), DType::kI32);
  std::set<double> seen;
  for (double e : x.ToDoubles()) {
    ASSERT_GE(e, -3);
    ASSERT_LT(e, 7);
    seen.insert(e);
  }
  EXPECT_EQ(seen.size(), 10u);
  Tensor big = Draw(ctx, "random_uniform", {I32({1000}, {1})},
                    {{"minval", int64_t{0}},
                     {"maxval", int64_t{1} << 40},
                     {"dtype", DType::kI64}},
                    "ui64");
  for (double e : big.ToDoubles()) {
    ASSERT_GE(e, 0);
    ASSERT_LT(e, std::ldexp(1.0, 40));
  }
  absl::StatusOr<Tensor> bad = ctx.Execute1(
      "random_uniform", {I32({2}, {1})},
      {{"minval", int64_t{3}}, {"maxval", int64_t{3}}, {"dtype", DType::kI32}});
  ASSERT_FALSE(bad.ok());
  EXPECT_THAT(bad.status().message(), HasSubstr("minval < maxval"));
}

TEST(RandomTest, ShapesIncludingScalarsAndEmpty) {
  EagerContext ctx({.num_threads = 2, .seed = 0});
  EXPECT_EQ(Draw(ctx, "random_normal", {I32({}, {0})}, {}, "s").shape(),
            Shape{});
  EXPECT_EQ(Draw(ctx, "random_uniform", {I32({0, 3}, {2})}, {}, "e").shape(),
            (Shape{0, 3}));
  EXPECT_EQ(Draw(ctx, "truncated_normal", {I32({2, 1, 3, 1, 2}, {5})}, {}, "r5")
                .shape(),
            (Shape{2, 1, 3, 1, 2}));
  absl::StatusOr<Tensor> bad =
      ctx.Execute1("random_normal", {I32({-1, 2}, {2})});
  ASSERT_FALSE(bad.ok());
  EXPECT_THAT(bad.status().message(), HasSubstr("negative"));
}

TEST(RandomTest, DropoutKeepsTheExpectedFractionAndScales) {
  EagerContext ctx({.num_threads = 2, .seed = 0});
  std::vector<float> ones(kSamples, 1.0f);
  Tensor x = F32(ones, Shape{kSamples});
  Tensor y =
      Draw(ctx, "dropout", {x, F32({0.3f}, {}), Bool({true}, {})}, {}, "drop");
  int kept = 0;
  for (double e : y.ToDoubles()) {
    if (e != 0) {
      ++kept;
      ASSERT_NEAR(e, 1.0 / 0.7, 1e-6);
    }
  }
  EXPECT_NEAR(kept / double(kSamples), 0.7, 0.01);
  // Each run drops other elements.
  Tensor again =
      Draw(ctx, "dropout", {x, F32({0.3f}, {}), Bool({true}, {})}, {}, "drop");
  EXPECT_NE(y.ToDoubles(), again.ToDoubles());
}

TEST(RandomTest, DropoutIsIdentityWhenNotTraining) {
  EagerContext ctx({.num_threads = 2, .seed = 0});
  Tensor x = F32({1, 2, 3}, {3});
  Tensor y =
      Draw(ctx, "dropout", {x, F32({0.5f}, {}), Bool({false}, {})}, {}, "drop");
  ExpectTensor(y, DType::kF32, Shape{3}, {1, 2, 3}, 0);
  EXPECT_TRUE(y.SharesBufferWith(x));
}

TEST(RandomTest, DropoutErrors) {
  EagerContext ctx({.num_threads = 2, .seed = 0});
  Tensor x = F32({1, 2, 3}, {3});
  absl::StatusOr<Tensor> bad =
      ctx.Execute1("dropout", {x, F32({1.0f}, {}), Bool({true}, {})});
  ASSERT_FALSE(bad.ok());
  EXPECT_THAT(bad.status().message(), HasSubstr("rate must be in [0, 1)"));
  bad = ctx.Execute1("dropout", {x, testing::F64({0.5}, {}), Bool({true}, {})});
  ASSERT_FALSE(bad.ok());
  EXPECT_THAT(bad.status().message(), HasSubstr("x's dtype"));
  bad =
      ctx.Execute1("dropout", {I32({1}, {1}), I32({0}, {}), Bool({true}, {})});
  ASSERT_FALSE(bad.ok());
  EXPECT_THAT(bad.status().message(), HasSubstr("floating-point"));
}

// A draw in a loop's body is random_reserve and the op's replay (NAME_at):
// the replay at the reserved index gives the op's own numbers, under
// whatever node name, and each reservation advances the op's counter as a
// run of the op would (none for dropout when not drawing).
TEST(RandomTest, AReplayAtTheReservedIndexDrawsTheOpsNumbers) {
  EagerContext ops({.num_threads = 2, .seed = 0});
  EagerContext replays({.num_threads = 2, .seed = 0});
  const Tensor shape = I32({3, 5}, {2});
  const Tensor x = F32(std::vector<float>(15, 2.0f), {3, 5});
  const Tensor rate = F32({0.4f}, {}), yes = Bool({true}, {});
  auto reserve = [&](const Tensor& on) {
    absl::StatusOr<Tensor> first = replays.Execute1(
        "random_reserve", {shape, on}, {{"seed", int64_t{7}}, {"stream", "r"}});
    EXPECT_TRUE(first.ok()) << first.status();
    return first.ok() ? first->data<int64_t>()[0] : -1;
  };
  for (int run = 0; run < 2; ++run) {
    const int64_t first = reserve(yes);
    EXPECT_EQ(first, 15 * run);
    const Tensor at = testing::I64({first}, {});
    for (const char* op :
         {"random_normal", "random_uniform", "truncated_normal"}) {
      SCOPED_TRACE(op);
      const AttrMap attrs = {{"seed", int64_t{7}}};
      // Each op's own stream, at the same index in this test.
      const Tensor drawn = Draw(ops, op, {shape}, attrs, StrCat("r_", op));
      AttrMap replay = attrs;
      replay["stream"] = StrCat("r_", op);
      EXPECT_EQ(Draw(replays, StrCat(op, "_at"), {shape, at}, replay,
                     StrCat("other_", op))
                    .ToDoubles(),
                drawn.ToDoubles());
    }
    const Tensor dropped = Draw(ops, "dropout", {x, rate, yes},
                                {{"seed", int64_t{7}}}, "r_dropout");
    EXPECT_EQ(Draw(replays, "dropout_at", {x, rate, yes, at},
                   {{"seed", int64_t{7}}, {"stream", "r_dropout"}}, "d")
                  .ToDoubles(),
              dropped.ToDoubles());
  }
  EXPECT_EQ(reserve(Bool({false}, {})), 30) << "nothing reserved";
  EXPECT_EQ(reserve(yes), 30);
  absl::StatusOr<Tensor> bad = replays.Execute1(
      "random_normal_at", {shape, I32({0}, {})}, {{"stream", "r"}});
  ASSERT_FALSE(bad.ok());
  EXPECT_THAT(bad.status().message(), HasSubstr("first must be an i64"));
}

}  // namespace
}  // namespace runnel
