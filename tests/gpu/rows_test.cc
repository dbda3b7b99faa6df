// The GPU's kernels behind loops over rows and sparse gradients
// (kernels/cuda/*_kernels.cc): dynamic_update_index, dynamic_index_add and the
// gradients of the row ops, one_hot, unsorted_segment_sum, unique (which
// a GPU runs in host memory) and tile_grad, against the CPU's on the same
// inputs. ctest label `gpu`; skipped without a GPU (docs/gpu.md).
#include <gtest/gtest.h>

#include <cstring>
#include <iterator>
#include <memory>
#include <string>
#include <tuple>
#include <vector>

#include "base/strings.h"
#include "common_runtime/session.h"
#include "tests/gpu/gpu_compare.h"

namespace runnel {
namespace {

Tensor I64s(const std::vector<int64_t>& v, Shape s) {
  return Tensor::FromVector(v, std::move(s));
}
Tensor I32s(const std::vector<int32_t>& v, Shape s) {
  return Tensor::FromVector(v, std::move(s));
}

bool IsFloat(DType d) {
  return d == DType::kF32 || d == DType::kF64 || d == DType::kF16 ||
         d == DType::kBF16;
}

const std::vector<DType> kEveryDType(std::begin(kAllDTypes),
                                     std::end(kAllDTypes));

// A loop's row write and read, and their gradients (the gradient of
// dynamic_update_index is dynamic_update_index_grad: dy with the row
// zeroed, and the row; dynamic_index's is dynamic_index_grad).
TEST(GpuRowsTest, RowWritesAndReadsWithTheirGradients) {
  SKIP_WITHOUT_GPU();
  for (DType d : kEveryDType) {
    const bool g = d == DType::kF32 || d == DType::kF64;
    for (int64_t i : {0, 3, -1}) {
      const Tensor index = I64s({i}, Shape{});
      Compare("dynamic_update_index",
              {Random(d, Shape{4, 3, 5}, 1), index, Random(d, Shape{3, 5}, 2)},
              {}, g, false,
              g ? std::vector<std::string>{"dynamic_update_index_grad"}
                : std::vector<std::string>{});
      Compare("dynamic_update_index_grad",
              {Random(d, Shape{4, 3, 5}, 3), index});
      Compare("dynamic_index_grad",
              {Random(d, Shape{4, 3, 5}, 4), index, Random(d, Shape{3, 5}, 5)});
      Compare("dynamic_index", {Random(d, Shape{4, 7}, 6), index}, {}, g, false,
              g ? std::vector<std::string>{"dynamic_index_grad"}
                : std::vector<std::string>{});
    }
  }
  // A row of a vector is a scalar; an index of i32.
  Compare("dynamic_update_index",
          {Random(DType::kF32, Shape{6}, 7), I32s({5}, Shape{}),
           Random(DType::kF32, Shape{}, 8)},
          {}, true);
}

// x[index] += value, for the dtypes the CPU's kernel has.
TEST(GpuRowsTest, RowAdd) {
  SKIP_WITHOUT_GPU();
  for (DType d : {DType::kF32, DType::kF64, DType::kI32, DType::kI64}) {
    for (int64_t i : {0, 2, -3}) {
      Compare("dynamic_index_add",
              {Random(d, Shape{5, 2, 3}, 11), I64s({i}, Shape{}),
               Random(d, Shape{2, 3}, 12)},
              {}, d == DType::kF32 || d == DType::kF64);
    }
  }
}

// The error of `op` on `inputs` (constants) asking for `device`.
std::string ErrorOf(const std::string& op, const std::vector<Tensor>& inputs,
                    const std::string& device) {
  auto g = std::make_shared<Graph>();
  std::vector<NodeOut> ins;
  for (size_t i = 0; i < inputs.size(); ++i) {
    absl::StatusOr<Node*> c = g->AddConst(inputs[i], StrCat("c", i));
    EXPECT_TRUE(c.ok()) << c.status();
    if (!c.ok()) return "";
    ins.push_back({*c, 0});
  }
  absl::StatusOr<Node*> y =
      g->AddNode({.name = "y", .op = op, .inputs = ins, .device = device});
  // Shapes that cannot fit fail when the node is made, for either device.
  if (!y.ok()) return std::string(y.status().message());
  Session s(g, {.num_threads = 2, .gpu_devices = device.empty() ? 0 : 1});
  absl::StatusOr<std::vector<Tensor>> out =
      s.Run(Session::Feeds{}, {NodeOut{*y, 0}}, {});
  EXPECT_FALSE(out.ok()) << op << " on '" << device << "' did not fail";
  return out.ok() ? "" : std::string(out.status().message());
}

// The row ops' errors are the CPU's: checked on the host before anything
// runs (a value of the wrong size already when the node is made).
TEST(GpuRowsTest, BadRowsFailAsOnTheCpu) {
  SKIP_WITHOUT_GPU();
  for (const char* op : {"dynamic_update_index", "dynamic_index_add"}) {
    for (const auto& [x, i, v, expected] :
         std::vector<std::tuple<Shape, int64_t, Shape, std::string>>{
             {Shape{4, 3}, 4, Shape{3}, "index 4 is out of range"},
             {Shape{4, 3}, 1, Shape{4}, "does not fit a row of"}}) {
      const std::vector<Tensor> in = {Random(DType::kF32, x, 13),
                                      I64s({i}, Shape{}),
                                      Random(DType::kF32, v, 14)};
      const std::string cpu = ErrorOf(op, in, "");
      const std::string gpu = ErrorOf(op, in, "/gpu:0");
      EXPECT_EQ(gpu, cpu) << op;
      EXPECT_NE(cpu.find(expected), std::string::npos) << cpu;
    }
  }
}

TEST(GpuRowsTest, OneHot) {
  SKIP_WITHOUT_GPU();
  const std::vector<int64_t> v = {0, 3, -1, 2, 7, 1};  // -1 and 7: off rows
  for (DType index : {DType::kI8, DType::kU8, DType::kI32, DType::kI64}) {
    Tensor indices(index, Shape{2, 3});
    for (int64_t k = 0; k < 6; ++k) {
      const int64_t x = index == DType::kU8 && v[k] < 0 ? 200 : v[k];
      Tensor s = Tensor::ScalarOf(index, static_cast<double>(x));
      std::memcpy(static_cast<char*>(indices.raw_data()) + k * DTypeSize(index),
                  s.raw_data(), DTypeSize(index));
    }
    for (DType d : kEveryDType) {
      for (int64_t axis : {-1, 0, 1, 2}) {
        Compare("one_hot", {indices},
                {{"depth", int64_t{4}},
                 {"axis", axis},
                 {"dtype", d},
                 {"on_value", 5.0},
                 {"off_value", -1.0}});
      }
    }
  }
  Compare("one_hot", {I32s({}, Shape{0})},
          {{"depth", int64_t{3}}, {"dtype", DType::kF32}});
  Compare("one_hot", {I32s({1, 2}, Shape{2})},
          {{"depth", int64_t{0}}, {"dtype", DType::kF32}});
}

// Rows summed by segment, in the CPU's order (deterministic, no atomics):
// equal bit for bit but in the 16-bit floats, which add up in f32 on both
// and round once.
TEST(GpuRowsTest, UnsortedSegmentSum) {
  SKIP_WITHOUT_GPU();
  for (DType d : {DType::kF32, DType::kF64, DType::kI32, DType::kI64,
                  DType::kF16, DType::kBF16}) {
    Tensor ids = Random(DType::kI32, Shape{500}, 21);
    for (int64_t j = 0; j < ids.num_elements(); ++j) {
      ids.data<int32_t>()[j] = ((ids.data<int32_t>()[j] % 7) + 7) % 7;
    }
    // Segment 7 of 9 gets no rows (zeros); 8 neither.
    Compare("unsorted_segment_sum",
            {Random(d, Shape{500, 3, 4}, 22), ids, I32s({9}, Shape{})}, {},
            IsFloat(d) && d != DType::kF16 && d != DType::kBF16);
    Compare("unsorted_segment_sum",
            {Random(d, Shape{2, 3, 4}, 23),
             I64s({1, 0, 1, 1, 0, 2}, Shape{2, 3}), I32s({3}, Shape{})});
    Compare("unsorted_segment_sum", {Random(d, Shape{0, 4}, 24),
                                     I32s({}, Shape{0}), I32s({2}, Shape{})});
  }
}

// unique runs in host memory on a GPU (its outputs are indices, which the
// GPU's kernels read on the host): the same values, in order of first
// appearance, and positions.
TEST(GpuRowsTest, UniqueInHostMemory) {
  SKIP_WITHOUT_GPU();
  Compare("unique", {I32s({5, 1, 5, 5, 9, 1, -2}, Shape{7})});
  Compare("unique", {I64s({3, 3, 3}, Shape{3})});
  Compare("unique", {I64s({}, Shape{0})});
}

// The gradient of tile: each element adds its tiles.
TEST(GpuRowsTest, TileGradient) {
  SKIP_WITHOUT_GPU();
  for (DType d : {DType::kF32, DType::kF64, DType::kF16, DType::kBF16,
                  DType::kI32, DType::kI64}) {
    const Tensor x = Random(d, Shape{2, 3, 4}, 31);
    const Tensor dy = Random(d, Shape{6, 3, 8}, 32);
    Compare("tile_grad", {dy, x});
    Compare("tile_grad", {Random(d, Shape{2, 3, 4}, 33), x});  // multiples 1
  }
  Compare("tile",
          {Random(DType::kF32, Shape{3, 5}, 34), I32s({4, 2}, Shape{2})}, {},
          true, false, {"tile_grad"});
}

}  // namespace
}  // namespace runnel
