// Where a step's sends and receives meet (common_runtime/rendezvous.h):
// either may come first, dead values cross too, a key is sent and received
// once, and an abort reaches every waiting and later receiver.
#include "common_runtime/rendezvous.h"

#include <gtest/gtest.h>

#include <string>

#include "tests/util/test_util.h"

namespace runnel {
namespace {

using ::runnel::testing::ExpectTensor;
using ::runnel::testing::F32;

using ::runnel::testing::kCpu0;
using ::runnel::testing::kCpu1;

TEST(RendezvousTest, ValueBeforeOrAfterTheReceiver) {
  Rendezvous r;
  ASSERT_TRUE(r.Send("a", F32({1, 2}, {2}), false).ok());
  absl::Status s;
  Tensor v;
  bool dead = true;
  EXPECT_TRUE(r.Recv("a", nullptr, &s, &v, &dead));
  EXPECT_TRUE(s.ok());
  EXPECT_FALSE(dead);
  ExpectTensor(v, DType::kF32, Shape{2}, {1, 2}, 0);

  bool called = false;
  EXPECT_FALSE(r.Recv(
      "b",
      [&](const absl::Status& st, const Tensor& t, bool d) {
        called = true;
        EXPECT_TRUE(st.ok());
        EXPECT_TRUE(d);  // a dead value crosses as dead
      },
      &s, &v, &dead));
  EXPECT_FALSE(called);
  ASSERT_TRUE(r.Send("b", Tensor(), true).ok());
  EXPECT_TRUE(called);
  EXPECT_EQ(r.Send("a", Tensor(), false).code(), absl::StatusCode::kOk);
  EXPECT_EQ(r.Send("a", Tensor(), false).code(), absl::StatusCode::kInternal);
}

TEST(RendezvousTest, AbortFailsWaitingAndLaterReceivers) {
  Rendezvous r;
  absl::Status waited;
  absl::Status s;
  Tensor v;
  bool dead = false;
  EXPECT_FALSE(r.Recv(
      "k", [&](const absl::Status& st, const Tensor&, bool) { waited = st; },
      &s, &v, &dead));
  EXPECT_TRUE(r.Abort(absl::InvalidArgumentError("boom")));
  EXPECT_FALSE(r.Abort(absl::InternalError("second")));  // the first wins
  EXPECT_EQ(waited.message(), "boom");
  EXPECT_TRUE(r.Recv("later", nullptr, &s, &v, &dead));
  EXPECT_EQ(s.message(), "boom");
  EXPECT_EQ(r.Send("x", Tensor(), false).message(), "boom");
}

TEST(RendezvousTest, KeysNameDevicesEdgeFrameAndStep) {
  EXPECT_EQ(RendezvousKey(kCpu0, kCpu1, "h:0", 7, 3, 12),
            std::string(kCpu0) + ";" + kCpu1 + ";h:0;frame 7:3;step 12");
}

TEST(RendezvousTest, AWaitingReceiverIsVisibleAndAKeyIsReceivedOnce) {
  Rendezvous r;
  absl::Status s;
  Tensor v;
  bool dead = false;
  bool called = false;
  EXPECT_FALSE(r.HasWaiter("k"));
  EXPECT_FALSE(r.Recv(
      "k", [&](const absl::Status&, const Tensor&, bool) { called = true; }, &s,
      &v, &dead));
  EXPECT_TRUE(r.HasWaiter("k"));
  // A second receiver of the same key is an error, at once.
  EXPECT_TRUE(r.Recv("k", nullptr, &s, &v, &dead));
  EXPECT_EQ(s.code(), absl::StatusCode::kInternal);
  EXPECT_EQ(s.message(), "'k' was received twice");
  ASSERT_TRUE(r.Send("k", F32({3}, {}), false).ok());
  EXPECT_TRUE(called);
  EXPECT_FALSE(r.HasWaiter("k"));
}

}  // namespace
}  // namespace runnel
