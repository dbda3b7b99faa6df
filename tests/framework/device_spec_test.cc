// Device specs: parsing the full and short forms, malformed specs, and how
// nested `device` blocks refine an outer spec.
#include "framework/device_spec.h"

#include <gtest/gtest.h>

#include <string>

namespace runnel {
namespace {

TEST(DeviceSpecTest, FullAndShortForms) {
  EXPECT_EQ(DeviceSpec::Parse("/job:ps/task:0/device:cpu:0")->ToString(),
            "/job:ps/task:0/device:cpu:0");
  EXPECT_EQ(DeviceSpec::Parse("/cpu:0")->ToString(), "/device:cpu:0");
  EXPECT_EQ(DeviceSpec::Parse("/gpu:1")->ToString(), "/device:gpu:1");
  EXPECT_EQ(DeviceSpec::Parse("/job:ps")->ToString(), "/job:ps");
  EXPECT_EQ(DeviceSpec::Parse("/job:worker/task:*")->ToString(),
            "/job:worker/task:*");
  EXPECT_EQ(DeviceSpec::Parse("")->ToString(), "");
}

TEST(DeviceSpecTest, Malformed) {
  for (const char* bad :
       {"gpu:0", "/tpu:0", "/job:", "/task:x", "/gpu:one", "/job:a/job:b",
        "/gpu:0/job:ps", "//cpu:0", "/device:gpu"}) {
    EXPECT_FALSE(DeviceSpec::Parse(bad).ok()) << bad;
  }
}

TEST(DeviceSpecTest, InnerRefinesOuter) {
  DeviceSpec outer = *DeviceSpec::Parse("/job:ps/task:1");
  DeviceSpec inner = *DeviceSpec::Parse("/gpu:0");
  EXPECT_EQ(outer.Refine(inner).ToString(), "/job:ps/task:1/device:gpu:0");
  EXPECT_EQ(outer.Refine(*DeviceSpec::Parse("/task:2")).ToString(),
            "/job:ps/task:2");
}

TEST(DeviceSpecTest, ParseErrorsSayWhatIsWrong) {
  absl::StatusOr<DeviceSpec> s = DeviceSpec::Parse("/tpu:0");
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(std::string(s.status().message()),
            "malformed device spec \"/tpu:0\": unknown device type 'tpu' "
            "(expected cpu or gpu) (expected /job:NAME/task:N/device:cpu:N, "
            "or a short form such as /cpu:0, /gpu:1 or /job:ps)");
}

TEST(DeviceSpecTest, FieldsOfAFullSpec) {
  DeviceSpec s =
      *DeviceSpec::Parse("/job:worker/replica:0/task:3/device:gpu:1");
  EXPECT_EQ(s.job, "worker");
  EXPECT_EQ(s.replica, "0");
  EXPECT_EQ(s.task, "3");
  EXPECT_EQ(s.type, "gpu");
  EXPECT_EQ(s.index, "1");
  EXPECT_EQ(s.ToString(), "/job:worker/replica:0/task:3/device:gpu:1");
}

TEST(DeviceSpecTest, MatchesTheFieldsItSets) {
  DeviceSpec cpu1 = *DeviceSpec::Parse("/job:localhost/task:0/device:cpu:1");
  EXPECT_TRUE(DeviceSpec().Matches(cpu1));
  EXPECT_TRUE(DeviceSpec::Parse("/cpu:1")->Matches(cpu1));
  EXPECT_FALSE(DeviceSpec::Parse("/cpu:0")->Matches(cpu1));
  EXPECT_FALSE(DeviceSpec::Parse("/gpu:1")->Matches(cpu1));
  EXPECT_TRUE(DeviceSpec::Parse("/job:localhost/cpu:*")->Matches(cpu1));
  EXPECT_FALSE(DeviceSpec::Parse("/job:ps")->Matches(cpu1));
  EXPECT_TRUE(DeviceSpec::Parse("/task:*")->Matches(cpu1));
}

TEST(DeviceSpecTest, MergeKeepsBothOrNamesTheConflict) {
  absl::StatusOr<DeviceSpec> m = DeviceSpec::Merge(
      *DeviceSpec::Parse("/job:ps"), *DeviceSpec::Parse("/cpu:1"));
  ASSERT_TRUE(m.ok()) << m.status();
  EXPECT_EQ(m->ToString(), "/job:ps/device:cpu:1");
  m = DeviceSpec::Merge(*DeviceSpec::Parse("/task:*"),
                        *DeviceSpec::Parse("/task:2"));
  ASSERT_TRUE(m.ok()) << m.status();
  EXPECT_EQ(m->task, "2");
  m = DeviceSpec::Merge(*DeviceSpec::Parse("/cpu:0"),
                        *DeviceSpec::Parse("/cpu:1"));
  ASSERT_FALSE(m.ok());
  EXPECT_EQ(std::string(m.status().message()),
            "the device index differs (0 and 1)");
}

}  // namespace
}  // namespace runnel
