// Variable::MutateTogether (runtime/resource_mgr.h): several variables
// changed as one step, as a fused optimizer update changes a variable and
// its slots.
#include <gtest/gtest.h>

#include <thread>
#include <vector>

#include "runtime/resource_mgr.h"
#include "tests/util/test_util.h"

namespace runnel {
namespace {

Tensor CloneOnHost(const Tensor& t) { return t.Clone(); }

void Init(Variable& v, float value) {
  EXPECT_TRUE(v.Assign(testing::F32({value, value}, Shape{2})).ok());
}

TEST(VariableUpdateTest, ChangesEachInPlaceAndKeepsReadersValues) {
  Variable a(DType::kF32, Shape{2}), b(DType::kF32, Shape{2});
  Init(a, 1);
  Init(b, 10);
  absl::StatusOr<Tensor> held = a.Read();  // a reader keeps a's value
  ASSERT_TRUE(held.ok());
  absl::Status s = Variable::MutateTogether({&a, &b}, CloneOnHost,
                                            [](const std::vector<Tensor*>& v) {
                                              for (Tensor* t : v) {
                                                for (int i = 0; i < 2; ++i)
                                                  t->data<float>()[i] += 1;
                                              }
                                              return absl::OkStatus();
                                            });
  ASSERT_TRUE(s.ok()) << s;
  EXPECT_EQ(a.Read()->ToDoubles(), (std::vector<double>{2, 2}));
  EXPECT_EQ(b.Read()->ToDoubles(), (std::vector<double>{11, 11}));
  EXPECT_EQ(held->ToDoubles(), (std::vector<double>{1, 1}));
}

TEST(VariableUpdateTest, AVariableListedTwiceIsLockedOnce) {
  Variable a(DType::kF32, Shape{2});
  Init(a, 3);
  absl::Status s = Variable::MutateTogether({&a, &a}, CloneOnHost,
                                            [](const std::vector<Tensor*>& v) {
                                              EXPECT_EQ(v[0], v[1]);
                                              v[0]->data<float>()[0] = 7;
                                              return absl::OkStatus();
                                            });
  ASSERT_TRUE(s.ok()) << s;
  EXPECT_EQ(a.Read()->ToDoubles(), (std::vector<double>{7, 3}));
}

TEST(VariableUpdateTest, UninitializedFails) {
  Variable a(DType::kF32, Shape{2});
  Init(a, 1);
  Variable fresh(DType::kF32, Shape{2});
  bool ran = false;
  absl::Status s = Variable::MutateTogether({&a, &fresh}, CloneOnHost,
                                            [&](const std::vector<Tensor*>&) {
                                              ran = true;
                                              return absl::OkStatus();
                                            });
  EXPECT_EQ(s.code(), absl::StatusCode::kFailedPrecondition) << s;
  EXPECT_FALSE(ran);
}

// Two writers add 1 to both of a and b, listing them in opposite orders
// (which would deadlock without a common lock order), while a reader
// checks that it never sees one changed without the other.
TEST(VariableUpdateTest, ConcurrentUpdatesAreAtomicAndDoNotDeadlock) {
  Variable a(DType::kF32, Shape{2}), b(DType::kF32, Shape{2});
  Init(a, 0);
  Init(b, 0);
  constexpr int kSteps = 20000;
  auto add = [](const std::vector<Tensor*>& v) {
    for (Tensor* t : v) t->data<float>()[0] += 1;
    return absl::OkStatus();
  };
  std::thread w1([&] {
    for (int i = 0; i < kSteps; ++i) {
      ASSERT_TRUE(Variable::MutateTogether({&a, &b}, CloneOnHost, add).ok());
    }
  });
  std::thread w2([&] {
    for (int i = 0; i < kSteps; ++i) {
      ASSERT_TRUE(Variable::MutateTogether({&b, &a}, CloneOnHost, add).ok());
    }
  });
  int mismatches = 0;
  for (int i = 0; i < kSteps; ++i) {
    ASSERT_TRUE(Variable::MutateTogether({&a, &b}, CloneOnHost,
                                         [&](const std::vector<Tensor*>& v) {
                                           if (v[0]->data<float>()[0] !=
                                               v[1]->data<float>()[0]) {
                                             ++mismatches;
                                           }
                                           return absl::OkStatus();
                                         })
                    .ok());
  }
  w1.join();
  w2.join();
  EXPECT_EQ(mismatches, 0);
  EXPECT_EQ(a.Read()->data<float>()[0], 2 * kSteps);
  EXPECT_EQ(b.Read()->data<float>()[0], 2 * kSteps);
}

}  // namespace
}  // namespace runnel
