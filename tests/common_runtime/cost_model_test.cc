// The placer's cost model: kernel classes, the calibration's rates, and
// their cache file (common_runtime/cost_model.h).
#include "common_runtime/cost_model.h"

#include <gtest/gtest.h>
#include <stdlib.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <string>

#include "base/read_file.h"
#include "tests/util/test_util.h"

namespace runnel {
namespace {

namespace fs = std::filesystem;

// No test of this binary writes the user's cache (sessions over several
// devices measure through CostModel::Global()).
const bool kNoDiskCache = setenv("RUNNEL_COST_CACHE", "off", 1) == 0;

// Rates no calibration would give, so a value read back is the one written.
CostRates Odd(double scale) {
  CostRates r;
  r.matmul_flops_per_s = 1.25e11 * scale;
  r.elementwise_bytes_per_s = 3.0e10 / 7 * scale;
  r.transcendental_bytes_per_s = 7.5e9 * scale;
  r.reduction_bytes_per_s = 1.0e10 / 3 * scale;
  r.node_overhead_s = 2.5e-7 * scale;
  r.transfer_latency_s = 1.0e-6 / 3 * scale;
  r.transfer_bytes_per_s = 2.0e10 * scale;
  return r;
}

void ExpectSame(const CostRates& a, const CostRates& b) {
  EXPECT_EQ(a.matmul_flops_per_s, b.matmul_flops_per_s);
  EXPECT_EQ(a.elementwise_bytes_per_s, b.elementwise_bytes_per_s);
  EXPECT_EQ(a.transcendental_bytes_per_s, b.transcendental_bytes_per_s);
  EXPECT_EQ(a.reduction_bytes_per_s, b.reduction_bytes_per_s);
  EXPECT_EQ(a.node_overhead_s, b.node_overhead_s);
  EXPECT_EQ(a.transfer_latency_s, b.transfer_latency_s);
  EXPECT_EQ(a.transfer_bytes_per_s, b.transfer_bytes_per_s);
}

// A fresh cache directory, and a measurement that counts its calls.
class CostCacheTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(kNoDiskCache);
    dir_ =
        fs::path(::testing::TempDir()) /
        ("cost_" +
         std::string(
             ::testing::UnitTest::GetInstance()->current_test_info()->name()));
    fs::remove_all(dir_);
  }
  CostModel::Measure Counting(double scale) {
    return [this, scale](const std::string& type, int threads) {
      ++measured_;
      EXPECT_EQ(type, "cpu");
      return Odd(scale * threads);
    };
  }
  std::string Read(const std::string& path) {
    std::string text;
    ReadFileFailure failure;
    EXPECT_TRUE(ReadFileToString(path, &text, &failure)) << failure.reason;
    return text;
  }

  // With `text` in the cache file, a model measures (once more) and
  // rewrites the file with what it measured.
  void ExpectMeasuredOver(const std::string& text) {
    const std::string path = (dir_ / "cost-model-cpu-t1.txt").string();
    fs::create_directories(dir_);
    ::runnel::testing::WriteFile(path, text);
    const int before = measured_;
    CostModel model(dir_.string(), Counting(3));
    ExpectSame(model.RatesFor("cpu", 1), Odd(3));
    EXPECT_EQ(measured_, before + 1) << text;
    CostRates back;
    EXPECT_TRUE(CostModel::Parse(Read(path), "cpu", 1, &back)) << text;
    ExpectSame(back, Odd(3));
  }

  fs::path dir_;
  int measured_ = 0;
};

TEST(CostModelTest, KernelClasses) {
  EXPECT_EQ(ClassOfOp("matmul"), KernelClass::kMatmul);
  EXPECT_EQ(ClassOfOp("conv2d"), KernelClass::kMatmul);
  EXPECT_EQ(ClassOfOp("add"), KernelClass::kElementwise);
  EXPECT_EQ(ClassOfOp("relu_grad"), KernelClass::kElementwise);
  EXPECT_EQ(ClassOfOp("tanh"), KernelClass::kTranscendental);
  EXPECT_EQ(ClassOfOp("sum"), KernelClass::kReduction);
  EXPECT_EQ(ClassOfOp("reshape"), KernelClass::kFree);
  EXPECT_EQ(ClassOfOp("merge"), KernelClass::kFree);
}

// The classes the cost model kept in a table of its own before they became
// OpDef fields: every op keeps its class, and each is a registered op.
TEST(CostModelTest, OpDefsDeclareTheirClasses) {
  const std::vector<std::pair<KernelClass, std::vector<std::string>>> kWas = {
      {KernelClass::kMatmul,
       {"matmul", "matmul_add", "conv2d", "conv2d_backprop_filter",
        "conv2d_backprop_input", "conv3d", "conv3d_backprop_filter",
        "conv3d_backprop_input", "scaled_dot_product_attention",
        "scaled_dot_product_attention_grad", "lstm_sequence",
        "lstm_sequence_grad", "apply_sgd_matmul", "apply_momentum_matmul",
        "apply_adam_matmul"}},
      {KernelClass::kTranscendental,
       {"exp",
        "log",
        "log1p",
        "tanh",
        "sigmoid",
        "softplus",
        "erf",
        "gelu",
        "gelu_grad",
        "asin",
        "acos",
        "atan",
        "asinh",
        "acosh",
        "atanh",
        "elu",
        "sin",
        "cos",
        "pow",
        "sqrt",
        "rsqrt",
        "softmax",
        "log_softmax",
        "logsumexp",
        "softmax_cross_entropy",
        "sparse_softmax_cross_entropy",
        "sigmoid_cross_entropy",
        "random_normal",
        "random_uniform",
        "truncated_normal",
        "random_normal_at",
        "random_uniform_at",
        "truncated_normal_at",
        "lstm_cell",
        "lstm_cell_grad",
        "gru_cell",
        "gru_cell_grad"}},
      {KernelClass::kReduction,
       {"sum", "mean", "max", "min", "prod", "all", "any", "argmax", "argmin",
        "l2_loss", "sum_to_like", "cumsum", "top_k", "unique_all", "layer_norm",
        "layer_norm_grad", "batch_norm", "batch_norm_grad"}},
      {KernelClass::kFree,
       {"_feed",
        "_fetch",
        "_send",
        "_recv",
        "const",
        "placeholder",
        "placeholder_with_default",
        "variable",
        "read_variable",
        "identity",
        "reshape",
        "expand_dims",
        "squeeze",
        "stop_gradient",
        "shape_of",
        "rank",
        "size",
        "noop",
        "control_trigger",
        "enter",
        "exit",
        "merge",
        "switch",
        "next_iteration",
        "loop_cond",
        "stack_new",
        "recompute_plan",
        "random_reserve",
        "queue"}}};
  int classified = 0;
  for (const auto& [cls, ops] : kWas) {
    for (const std::string& op : ops) {
      SCOPED_TRACE(op);
      ASSERT_NE(OpRegistry::Global().Find(op), nullptr);
      EXPECT_EQ(ClassOfOp(op), cls);
      ++classified;
    }
  }
  // Every other op is element-wise, as the table's default was.
  int elementwise = 0;
  for (const std::string& op : OpRegistry::Global().ListOps()) {
    if (ClassOfOp(op) == KernelClass::kElementwise) ++elementwise;
  }
  EXPECT_EQ(elementwise + classified,
            static_cast<int>(OpRegistry::Global().ListOps().size()));
  EXPECT_EQ(ClassOfOp("no_such_op"), KernelClass::kElementwise);
}

// The real calibration gives finite, positive rates for the CPU (how fast
// is the machine's business), and refuses a type it cannot run.
TEST(CostModelTest, CalibrationMeasuresEveryRate) {
  absl::StatusOr<CostRates> r = MeasureCostRates("cpu", 1);
  ASSERT_TRUE(r.ok()) << r.status();
  for (double v :
       {r->matmul_flops_per_s, r->elementwise_bytes_per_s,
        r->transcendental_bytes_per_s, r->reduction_bytes_per_s,
        r->node_overhead_s, r->transfer_latency_s, r->transfer_bytes_per_s}) {
    EXPECT_TRUE(std::isfinite(v) && v > 0) << v;
  }
  EXPECT_EQ(MeasureCostRates("gpu", 1).status().code(),
            absl::StatusCode::kUnimplemented);
}

TEST_F(CostCacheTest, MeasuredOnceThenReadBack) {
  CostModel first(dir_.string(), Counting(1));
  ExpectSame(first.RatesFor("cpu", 1), Odd(1));
  ExpectSame(first.RatesFor("cpu", 1), Odd(1));
  ExpectSame(first.RatesFor("cpu", 2), Odd(2));  // its own entry and file
  EXPECT_EQ(measured_, 2);
  const std::string path = first.CacheFile("cpu", 1);
  EXPECT_EQ(path, (dir_ / "cost-model-cpu-t1.txt").string());
  EXPECT_NE(first.SourceOf("cpu", 1).find("saved in " + path),
            std::string::npos)
      << first.SourceOf("cpu", 1);
  EXPECT_EQ(Read(path).rfind("runnel-cost-model 1\ncpu_model " +
                                 CpuModelName() + "\ndevice cpu\nthreads 1\n",
                             0),
            0u)
      << Read(path);

  // Another process (model) reads the file and measures nothing.
  CostModel second(dir_.string(), Counting(5));
  ExpectSame(second.RatesFor("cpu", 1), Odd(1));
  ExpectSame(second.RatesFor("cpu", 2), Odd(2));
  EXPECT_EQ(measured_, 2);
  EXPECT_EQ(second.SourceOf("cpu", 1).rfind("read from " + path, 0), 0u);
}

// Whatever is in the file, a bad one is measured over and rewritten.
TEST_F(CostCacheTest, CorruptFileIsMeasuredOver) {
  const std::string good = CostModel::Serialize("cpu", 1, Odd(1));
  // `good` with one field's value replaced.
  auto with = [&](const std::string& field, const std::string& value) {
    std::string text = good;
    const size_t at = text.find(field + " ") + field.size() + 1;
    return text.replace(at, text.find('\n', at) - at, value);
  };
  std::string dropped_line = good;
  dropped_line.erase(dropped_line.find("node_overhead_s"));
  const std::string bad[] = {"",
                             std::string("\0\xff garbage", 10),
                             good.substr(0, good.size() / 2),
                             dropped_line,
                             with("node_overhead_s", "-2.5e-07"),
                             with("matmul_flops_per_s", "0"),
                             with("transfer_latency_s", "nan"),
                             with("transfer_bytes_per_s", "inf"),
                             with("reduction_bytes_per_s", "1e9 GB/s"),
                             good + "threads 1\n",
                             good + "extra 1\n",
                             "runnel-cost-model 1"};
  for (const std::string& text : bad) ExpectMeasuredOver(text);
}

// A file made on another CPU, for another thread count or type, or by
// another format version is not this one's.
TEST_F(CostCacheTest, KeyMismatchIsMeasuredOver) {
  const std::string good = CostModel::Serialize("cpu", 1, Odd(1));
  CostRates parsed;
  ASSERT_TRUE(CostModel::Parse(good, "cpu", 1, &parsed));
  ExpectSame(parsed, Odd(1));
  EXPECT_FALSE(CostModel::Parse(good, "cpu", 2, &parsed));
  EXPECT_FALSE(CostModel::Parse(good, "gpu", 1, &parsed));
  auto with = [&](const std::string& from, const std::string& to) {
    std::string text = good;
    text.replace(text.find(from), from.size(), to);
    return text;
  };
  const std::string mismatched[] = {
      with("cpu_model " + CpuModelName(), "cpu_model Another CPU"),
      with("runnel-cost-model 1", "runnel-cost-model 0"),
      with("device cpu", "device gpu"), with("threads 1", "threads 2")};
  for (const std::string& text : mismatched) {
    EXPECT_FALSE(CostModel::Parse(text, "cpu", 1, &parsed)) << text;
    ExpectMeasuredOver(text);
  }
}

// A cache that cannot be written, or no cache at all, only costs a
// calibration; a calibration that fails leaves the defaults.
TEST_F(CostCacheTest, UnwritableOrNoCacheAndFailedMeasurement) {
  fs::create_directories(dir_);
  ::runnel::testing::WriteFile((dir_ / "file").string(), "not a directory");
  CostModel blocked((dir_ / "file" / "runnel").string(), Counting(1));
  ExpectSame(blocked.RatesFor("cpu", 1), Odd(1));
  EXPECT_NE(blocked.SourceOf("cpu", 1).find("not saved"), std::string::npos)
      << blocked.SourceOf("cpu", 1);

  CostModel none("", Counting(1));
  EXPECT_EQ(none.CacheFile("cpu", 1), "");
  ExpectSame(none.RatesFor("cpu", 1), Odd(1));
  EXPECT_EQ(none.SourceOf("cpu", 1).rfind("measured in ", 0), 0u);
  EXPECT_EQ(measured_, 2);

  CostModel failing(dir_.string(), [](const std::string&, int) {
    return absl::StatusOr<CostRates>(absl::UnimplementedError("no way"));
  });
  ExpectSame(failing.RatesFor("tpu", 1), CostRates{});
  EXPECT_EQ(failing.SourceOf("tpu", 1), "defaults (no way)");
  EXPECT_FALSE(fs::exists(failing.CacheFile("tpu", 1)));
}

TEST(CostModelTest, CacheDirectoryFromTheEnvironment) {
  // Put back as found for the other tests.
  struct Restore {
    std::string name;
    const char* was;
    std::string value = was != nullptr ? was : "";
    ~Restore() {
      if (was != nullptr) {
        setenv(name.c_str(), value.c_str(), 1);
      } else {
        unsetenv(name.c_str());
      }
    }
  } home{"HOME", std::getenv("HOME")},
      xdg{"XDG_CACHE_HOME", std::getenv("XDG_CACHE_HOME")};
  setenv("HOME", "/home/someone", 1);
  EXPECT_EQ(CostModel::DefaultCacheDir(), "");  // RUNNEL_COST_CACHE=off
  unsetenv("RUNNEL_COST_CACHE");
  setenv("XDG_CACHE_HOME", "/var/cache/me", 1);
  EXPECT_EQ(CostModel::DefaultCacheDir(), "/var/cache/me/runnel");
  setenv("XDG_CACHE_HOME", "relative", 1);  // not absolute: ignored
  EXPECT_EQ(CostModel::DefaultCacheDir(), "/home/someone/.cache/runnel");
  unsetenv("XDG_CACHE_HOME");
  EXPECT_EQ(CostModel::DefaultCacheDir(), "/home/someone/.cache/runnel");
  unsetenv("HOME");
  EXPECT_EQ(CostModel::DefaultCacheDir(), "");
  setenv("RUNNEL_COST_CACHE", "off", 1);
}

TEST(CostModelTest, RatesPrintWithUnits) {
  CostRates r;
  r.matmul_flops_per_s = 2.13e11;
  r.node_overhead_s = 1.5e-7;
  EXPECT_EQ(r.ToString().rfind("matmul 213 Gflop/s, element-wise 5 GB/s", 0),
            0u)
      << r.ToString();
  EXPECT_NE(r.ToString().find("per node 0.15 us"), std::string::npos)
      << r.ToString();
}

}  // namespace
}  // namespace runnel
