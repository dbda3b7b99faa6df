// Shape-manipulation ops: reshape, transpose, expand_dims, squeeze, concat,
// stack, unstack, split, slice, strided_slice, dynamic_index, gather, tile,
// pad, broadcast_to, shape_of, size, rank.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <numeric>
#include <optional>

#include "base/float16.h"
#include "common_runtime/session.h"
#include "framework/graph.h"
#include "framework/kernel.h"
#include "framework/op_registry.h"
#include "tests/util/test_util.h"

namespace runnel {
namespace {

using ::runnel::testing::Bool;
using ::runnel::testing::Eager;
using ::runnel::testing::ExpectTensor;
using ::runnel::testing::F32;
using ::runnel::testing::I32;
using ::runnel::testing::I64;
using ::runnel::testing::Run1;
using ::runnel::testing::RunError;
using ::testing::HasSubstr;
using Ints = std::vector<int64_t>;

// 0, 1, 2, ... as f32 of `shape`.
Tensor Iota(Shape shape) {
  std::vector<float> v(shape.num_elements());
  std::iota(v.begin(), v.end(), 0.0f);
  return F32(v, shape);
}

// Output specs of `op` inferred without input values.
absl::StatusOr<std::vector<TensorSpec>> Infer(const std::string& op,
                                              std::vector<TensorSpec> inputs,
                                              AttrMap attrs = {}) {
  const OpDef* def = OpRegistry::Global().Find(op);
  EXPECT_NE(def, nullptr) << op;
  std::vector<const Tensor*> values(inputs.size(), nullptr);
  return InferOutputs(*def, attrs, std::move(inputs), std::move(values));
}

std::vector<Tensor> RunAll(const std::string& op, std::vector<Tensor> inputs,
                           AttrMap attrs = {}) {
  absl::StatusOr<std::vector<Tensor>> out =
      Eager().Execute(op, std::move(inputs), std::move(attrs));
  EXPECT_TRUE(out.ok()) << out.status();
  return out.ok() ? *out : std::vector<Tensor>{};
}

// ---- reshape ---------------------------------------------------------------

TEST(ArrayTest, ReshapeInfersMinusOneAndSharesTheBuffer) {
  Tensor x = Iota(Shape{2, 3});
  Tensor y = Run1("reshape", {x, I32({3, -1}, {2})});
  ExpectTensor(y, DType::kF32, Shape{3, 2}, {0, 1, 2, 3, 4, 5}, 0);
  EXPECT_TRUE(y.SharesBufferWith(x));
  ExpectTensor(Run1("reshape", {x, I64({-1}, {1})}), DType::kF32, Shape{6},
               {0, 1, 2, 3, 4, 5}, 0);
}

TEST(ArrayTest, ReshapeScalarsAndEmptyTensors) {
  Tensor one = F32({7}, Shape{1, 1});
  ExpectTensor(Run1("reshape", {one, I32({}, {0})}), DType::kF32, Shape{}, {7},
               0);
  Tensor empty = F32({}, Shape{0, 3});
  ExpectTensor(Run1("reshape", {empty, I32({3, 0}, {2})}), DType::kF32,
               Shape{3, 0}, {}, 0);
  ExpectTensor(Run1("reshape", {empty, I32({-1, 3}, {2})}), DType::kF32,
               Shape{0, 3}, {}, 0);
}

TEST(ArrayTest, ReshapeErrorsNameShapesAndElementCounts) {
  Tensor x = Iota(Shape{2, 3});
  absl::Status s = RunError("reshape", {x, I32({4, 2}, {2})});
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(s.message(), HasSubstr("[2,3] (6 elements)"));
  EXPECT_THAT(s.message(), HasSubstr("[4,2] (8 elements)"));
  EXPECT_THAT(RunError("reshape", {x, I32({4, -1}, {2})}).message(),
              HasSubstr("a multiple of 4 elements"));
  EXPECT_THAT(RunError("reshape", {x, I32({-1, -1}, {2})}).message(),
              HasSubstr("more than one -1"));
  EXPECT_THAT(RunError("reshape", {x, F32({6}, {1})}).message(),
              HasSubstr("i32"));
}

TEST(ArrayTest, ReshapeInferenceWithoutTheShapeValue) {
  auto out =
      Infer("reshape", {{DType::kF32, Shape{2, 3}}, {DType::kI32, Shape{3}}});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ((*out)[0].shape, (Shape{-1, -1, -1}));
}

// ---- transpose, expand_dims, squeeze ---------------------------------------

// out[i] = x[perm-permuted index], by brute force.
std::vector<double> TransposeReference(const Tensor& x, const Ints& perm) {
  const int r = x.rank();
  std::vector<double> in = x.ToDoubles();
  Ints out_dims(r), in_strides(r, 1);
  for (int i = r - 2; i >= 0; --i)
    in_strides[i] = in_strides[i + 1] * x.dim(i + 1);
  for (int i = 0; i < r; ++i) out_dims[i] = x.dim(perm[i]);
  std::vector<double> out(in.size());
  Ints idx(r, 0);
  for (size_t o = 0; o < out.size(); ++o) {
    int64_t src = 0;
    for (int i = 0; i < r; ++i) src += idx[i] * in_strides[perm[i]];
    out[o] = in[src];
    for (int i = r - 1; i >= 0; --i) {
      if (++idx[i] < out_dims[i]) break;
      idx[i] = 0;
    }
  }
  return out;
}

TEST(ArrayTest, TransposeMatrixAndDefaultPerm) {
  Tensor x = Iota(Shape{2, 3});
  ExpectTensor(Run1("transpose", {x}), DType::kF32, Shape{3, 2},
               {0, 3, 1, 4, 2, 5}, 0);
  ExpectTensor(Run1("transpose", {x}, {{"perm", Ints{1, 0}}}), DType::kF32,
               Shape{3, 2}, {0, 3, 1, 4, 2, 5}, 0);
  Tensor same = Run1("transpose", {x}, {{"perm", Ints{0, 1}}});
  ExpectTensor(same, DType::kF32, Shape{2, 3}, x.ToDoubles(), 0);
}

TEST(ArrayTest, TransposeRank3AndRank5) {
  Tensor x = Iota(Shape{2, 3, 4});
  for (Ints perm : {Ints{1, 0, 2}, Ints{2, 0, 1}, Ints{0, 2, 1}}) {
    Tensor y = Run1("transpose", {x}, {{"perm", perm}});
    ExpectTensor(y, DType::kF32,
                 Shape{x.dim(perm[0]), x.dim(perm[1]), x.dim(perm[2])},
                 TransposeReference(x, perm), 0);
  }
  Tensor x5 = Iota(Shape{2, 3, 1, 4, 5});
  Ints perm{4, 2, 0, 3, 1};
  Tensor y = Run1("transpose", {x5}, {{"perm", perm}});
  ExpectTensor(y, DType::kF32, Shape{5, 1, 2, 4, 3},
               TransposeReference(x5, perm), 0);
}

TEST(ArrayTest, TransposeLargeTensorsOfEveryElementSize) {
  // Big enough for the tiled and parallel paths.
  for (DType d : {DType::kU8, DType::kF16, DType::kF32, DType::kF64}) {
    Tensor x(d, Shape{37, 300, 129});
    for (int64_t i = 0; i < x.num_elements(); ++i) {
      switch (DTypeSize(d)) {
        case 1:
          x.data<uint8_t>()[i] = static_cast<uint8_t>(i * 7);
          break;
        case 2:
          x.data<uint16_t>()[i] = static_cast<uint16_t>(i % 2048);
          break;
        case 4:
          x.data<float>()[i] = static_cast<float>(i);
          break;
        default:
          x.data<double>()[i] = static_cast<double>(i);
      }
    }
    for (Ints perm : {Ints{0, 2, 1}, Ints{2, 1, 0}, Ints{1, 0, 2}}) {
      Tensor y = Run1("transpose", {x}, {{"perm", perm}});
      ASSERT_FALSE(y.empty());
      EXPECT_EQ(y.ToDoubles(), TransposeReference(x, perm))
          << DTypeName(d) << " perm " << perm[0] << perm[1] << perm[2];
    }
  }
}

TEST(ArrayTest, TransposeBadPerm) {
  Tensor x = Iota(Shape{2, 3});
  EXPECT_THAT(RunError("transpose", {x}, {{"perm", Ints{0, 0}}}).message(),
              HasSubstr("not a permutation"));
  EXPECT_THAT(RunError("transpose", {x}, {{"perm", Ints{0, 1, 2}}}).message(),
              HasSubstr("3 entries for a tensor of rank 2"));
}

TEST(ArrayTest, ExpandDimsAndSqueeze) {
  Tensor x = Iota(Shape{2, 3});
  Tensor e = Run1("expand_dims", {x}, {{"axis", int64_t{1}}});
  ExpectTensor(e, DType::kF32, Shape{2, 1, 3}, x.ToDoubles(), 0);
  EXPECT_TRUE(e.SharesBufferWith(x));
  ExpectTensor(Run1("expand_dims", {x}, {{"axis", int64_t{-1}}}), DType::kF32,
               Shape{2, 3, 1}, x.ToDoubles(), 0);
  ExpectTensor(Run1("expand_dims", {F32({5}, {})}, {{"axis", int64_t{0}}}),
               DType::kF32, Shape{1}, {5}, 0);

  Tensor s = Iota(Shape{1, 2, 1, 3, 1});
  ExpectTensor(Run1("squeeze", {s}), DType::kF32, Shape{2, 3}, s.ToDoubles(),
               0);
  ExpectTensor(Run1("squeeze", {s}, {{"axis", Ints{0, -1}}}), DType::kF32,
               Shape{2, 1, 3}, s.ToDoubles(), 0);
  ExpectTensor(Run1("squeeze", {s}, {{"axis", int64_t{2}}}), DType::kF32,
               Shape{1, 2, 3, 1}, s.ToDoubles(), 0);
  EXPECT_THAT(RunError("squeeze", {s}, {{"axis", int64_t{1}}}).message(),
              HasSubstr("size is 2, not 1"));
  EXPECT_THAT(RunError("expand_dims", {x}, {{"axis", int64_t{3}}}).message(),
              HasSubstr("out of range"));
}

// ---- concat, stack, unstack, split -----------------------------------------

TEST(ArrayTest, ConcatAlongEachAxis) {
  Tensor a = Iota(Shape{2, 2});
  Tensor b = F32({10, 11, 12, 13, 14, 15}, Shape{2, 3});
  ExpectTensor(Run1("concat", {a, b}, {{"axis", int64_t{1}}}), DType::kF32,
               Shape{2, 5}, {0, 1, 10, 11, 12, 2, 3, 13, 14, 15}, 0);
  ExpectTensor(Run1("concat", {a, b}, {{"axis", int64_t{-1}}}), DType::kF32,
               Shape{2, 5}, {0, 1, 10, 11, 12, 2, 3, 13, 14, 15}, 0);
  Tensor c = F32({7, 8}, Shape{1, 2});
  ExpectTensor(Run1("concat", {a, c, a}), DType::kF32, Shape{5, 2},
               {0, 1, 2, 3, 7, 8, 0, 1, 2, 3}, 0);
  // Empty parts and a single part.
  ExpectTensor(Run1("concat", {F32({}, {0, 2}), c}), DType::kF32, Shape{1, 2},
               {7, 8}, 0);
  ExpectTensor(Run1("concat", {c}), DType::kF32, Shape{1, 2}, {7, 8}, 0);
}

TEST(ArrayTest, ConcatLargeMatchesReference) {
  // Many short rows (one parallel pass) and few long rows (per-part copies).
  for (Shape shape : {Shape{5000, 3}, Shape{2, 100000}}) {
    Tensor a = Iota(shape);
    Tensor b = Iota(Shape{shape.dim(0), shape.dim(1) * 2});
    Tensor y = Run1("concat", {a, b}, {{"axis", int64_t{1}}});
    ASSERT_FALSE(y.empty());
    const int64_t w = shape.dim(1) * 3;
    ASSERT_EQ(y.shape(), (Shape{shape.dim(0), w}));
    bool ok = true;
    for (int64_t r = 0; r < shape.dim(0) && ok; ++r) {
      for (int64_t col = 0; col < w && ok; ++col) {
        float want =
            col < shape.dim(1)
                ? a.at<float>(r * shape.dim(1) + col)
                : b.at<float>(r * shape.dim(1) * 2 + col - shape.dim(1));
        ok = y.at<float>(r * w + col) == want;
      }
    }
    EXPECT_TRUE(ok) << shape.ToString();
  }
}

TEST(ArrayTest, ConcatErrors) {
  Tensor a = Iota(Shape{2, 2});
  EXPECT_THAT(RunError("concat", {a, testing::F64({1, 2}, {1, 2})}).message(),
              HasSubstr("dtypes differ: f32[2,2] and f64[1,2]"));
  EXPECT_THAT(RunError("concat", {a, Iota(Shape{2, 3})}).message(),
              HasSubstr("differ outside axis 0"));
  EXPECT_THAT(RunError("concat", {a, Iota(Shape{4})}).message(),
              HasSubstr("ranks differ"));
  EXPECT_THAT(RunError("concat", {F32({1}, {}), F32({2}, {})}).message(),
              HasSubstr("scalars"));
  EXPECT_THAT(RunError("concat", {}).message(), HasSubstr("at least one"));
}

TEST(ArrayTest, ConcatInferencePartialShapes) {
  auto out = Infer("concat",
                   {{DType::kF32, Shape{-1, 3}}, {DType::kF32, Shape{2, -1}}},
                   {{"axis", int64_t{0}}});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ((*out)[0].shape, (Shape{-1, 3}));
  out =
      Infer("concat", {{DType::kF32, Shape{4, 3}}, {DType::kF32, Shape{2, 3}}},
            {{"axis", int64_t{0}}});
  ASSERT_TRUE(out.ok());
  EXPECT_EQ((*out)[0].shape, (Shape{6, 3}));
}

TEST(ArrayTest, StackAndUnstack) {
  Tensor a = F32({1, 2, 3}, {3});
  Tensor b = F32({4, 5, 6}, {3});
  ExpectTensor(Run1("stack", {a, b}), DType::kF32, Shape{2, 3},
               {1, 2, 3, 4, 5, 6}, 0);
  ExpectTensor(Run1("stack", {a, b}, {{"axis", int64_t{1}}}), DType::kF32,
               Shape{3, 2}, {1, 4, 2, 5, 3, 6}, 0);
  ExpectTensor(Run1("stack", {a}, {{"axis", int64_t{-1}}}), DType::kF32,
               Shape{3, 1}, {1, 2, 3}, 0);
  ExpectTensor(Run1("stack", {F32({1}, {}), F32({2}, {})}), DType::kF32,
               Shape{2}, {1, 2}, 0);
  EXPECT_THAT(RunError("stack", {a, F32({1, 2}, {2})}).message(),
              HasSubstr("differ"));

  std::vector<Tensor> rows = RunAll("unstack", {Iota(Shape{2, 3})});
  ASSERT_EQ(rows.size(), 2u);
  ExpectTensor(rows[0], DType::kF32, Shape{3}, {0, 1, 2}, 0);
  ExpectTensor(rows[1], DType::kF32, Shape{3}, {3, 4, 5}, 0);
  std::vector<Tensor> cols =
      RunAll("unstack", {Iota(Shape{2, 3})}, {{"axis", int64_t{1}}});
  ASSERT_EQ(cols.size(), 3u);
  ExpectTensor(cols[2], DType::kF32, Shape{2}, {2, 5}, 0);
  EXPECT_THAT(
      Infer("unstack", {{DType::kF32, Shape{-1, 3}}}).status().message(),
      HasSubstr("must be known"));
}

TEST(ArrayTest, Split) {
  Tensor x = Iota(Shape{2, 6});
  std::vector<Tensor> parts =
      RunAll("split", {x}, {{"num", int64_t{3}}, {"axis", int64_t{1}}});
  ASSERT_EQ(parts.size(), 3u);
  ExpectTensor(parts[0], DType::kF32, Shape{2, 2}, {0, 1, 6, 7}, 0);
  ExpectTensor(parts[1], DType::kF32, Shape{2, 2}, {2, 3, 8, 9}, 0);
  ExpectTensor(parts[2], DType::kF32, Shape{2, 2}, {4, 5, 10, 11}, 0);
  parts = RunAll("split", {x}, {{"num", int64_t{2}}});
  ASSERT_EQ(parts.size(), 2u);
  ExpectTensor(parts[1], DType::kF32, Shape{1, 6}, {6, 7, 8, 9, 10, 11}, 0);
  EXPECT_THAT(
      RunError("split", {x}, {{"num", int64_t{4}}, {"axis", int64_t{1}}})
          .message(),
      HasSubstr("(size 6) is not divisible by 4"));
}

// ---- slice, strided_slice, dynamic_index -----------------------------------

TEST(ArrayTest, Slice) {
  Tensor x = Iota(Shape{3, 4});
  ExpectTensor(Run1("slice", {x, I32({1, 1}, {2}), I32({2, 2}, {2})}),
               DType::kF32, Shape{2, 2}, {5, 6, 9, 10}, 0);
  ExpectTensor(Run1("slice", {x, I64({0, 2}, {2}), I64({-1, -1}, {2})}),
               DType::kF32, Shape{3, 2}, {2, 3, 6, 7, 10, 11}, 0);
  ExpectTensor(Run1("slice", {x, I32({3, 0}, {2}), I32({0, 4}, {2})}),
               DType::kF32, Shape{0, 4}, {}, 0);
  EXPECT_THAT(
      RunError("slice", {x, I32({2, 0}, {2}), I32({2, 1}, {2})}).message(),
      HasSubstr("slice [2, 4) is out of range for dimension 0"));
  EXPECT_THAT(RunError("slice", {x, I32({0}, {1}), I32({1}, {1})}).message(),
              HasSubstr("1 entries for a tensor of rank 2"));
}

TEST(ArrayTest, SliceRank5) {
  Tensor x = Iota(Shape{2, 2, 2, 2, 3});
  Tensor y =
      Run1("slice", {x, I32({1, 0, 1, 0, 1}, {5}), I32({1, -1, 1, 1, 2}, {5})});
  // Offsets: 24 + 6 + 0 + {0, 12} ... computed by hand.
  ExpectTensor(y, DType::kF32, Shape{1, 2, 1, 1, 2}, {31, 32, 43, 44}, 0);
}

AttrMap SliceAttrs(Ints begin, Ints end, Ints strides, int64_t begin_mask = 0,
                   int64_t end_mask = 0, int64_t shrink = 0,
                   int64_t new_axis = 0) {
  return {{"begin", begin},           {"end", end},
          {"strides", strides},       {"begin_mask", begin_mask},
          {"end_mask", end_mask},     {"shrink_axis_mask", shrink},
          {"new_axis_mask", new_axis}};
}

TEST(ArrayTest, StridedSlicePythonForms) {
  Tensor v = Iota(Shape{6});
  // v[1:]
  ExpectTensor(Run1("strided_slice", {v}, SliceAttrs({1}, {0}, {1}, 0, 1)),
               DType::kF32, Shape{5}, {1, 2, 3, 4, 5}, 0);
  // v[::2]
  ExpectTensor(Run1("strided_slice", {v}, SliceAttrs({0}, {0}, {2}, 1, 1)),
               DType::kF32, Shape{3}, {0, 2, 4}, 0);
  // v[::-1]
  ExpectTensor(Run1("strided_slice", {v}, SliceAttrs({0}, {0}, {-1}, 1, 1)),
               DType::kF32, Shape{6}, {5, 4, 3, 2, 1, 0}, 0);
  // v[-2:]
  ExpectTensor(Run1("strided_slice", {v}, SliceAttrs({-2}, {0}, {1}, 0, 1)),
               DType::kF32, Shape{2}, {4, 5}, 0);
  // v[4:1:-2]
  ExpectTensor(Run1("strided_slice", {v}, SliceAttrs({4}, {1}, {-2})),
               DType::kF32, Shape{2}, {4, 2}, 0);
  // v[1:100] clamps; v[5:2] is empty.
  ExpectTensor(Run1("strided_slice", {v}, SliceAttrs({1}, {100}, {1})),
               DType::kF32, Shape{5}, {1, 2, 3, 4, 5}, 0);
  ExpectTensor(Run1("strided_slice", {v}, SliceAttrs({5}, {2}, {1})),
               DType::kF32, Shape{0}, {}, 0);
  // v[-1] is a scalar.
  ExpectTensor(Run1("strided_slice", {v}, SliceAttrs({-1}, {0}, {1}, 0, 0, 1)),
               DType::kF32, Shape{}, {5}, 0);

  Tensor m = Iota(Shape{3, 4});
  // m[:, 1:]
  ExpectTensor(
      Run1("strided_slice", {m}, SliceAttrs({0, 1}, {0, 0}, {1, 1}, 1, 3)),
      DType::kF32, Shape{3, 3}, {1, 2, 3, 5, 6, 7, 9, 10, 11}, 0);
  // m[1] takes row 1 whole (axes beyond the spec are full).
  ExpectTensor(Run1("strided_slice", {m}, SliceAttrs({1}, {2}, {1}, 0, 0, 1)),
               DType::kF32, Shape{4}, {4, 5, 6, 7}, 0);
  // m[:, -1]
  ExpectTensor(
      Run1("strided_slice", {m}, SliceAttrs({0, -1}, {0, 0}, {1, 1}, 1, 1, 2)),
      DType::kF32, Shape{3}, {3, 7, 11}, 0);
  // m[None, ::2, 3]
  ExpectTensor(Run1("strided_slice", {m},
                    SliceAttrs({0, 0, 3}, {0, 0, 0}, {1, 2, 1}, 2, 2, 4, 1)),
               DType::kF32, Shape{1, 2}, {3, 11}, 0);
  // m[:] shares the buffer.
  Tensor all = Run1("strided_slice", {m}, SliceAttrs({0}, {0}, {1}, 1, 1));
  EXPECT_TRUE(all.SharesBufferWith(m));
}

// CPython's slice.indices(), written independently of PlanStridedSlice.
std::vector<double> PythonSlice(int64_t n, std::optional<int64_t> start,
                                std::optional<int64_t> stop, int64_t step) {
  auto adjust = [&](std::optional<int64_t> v, int64_t if_none) {
    if (!v) return if_none;
    int64_t i = *v;
    if (i < 0) {
      i += n;
      if (i < 0) i = step < 0 ? -1 : 0;
    } else if (i >= n) {
      i = step < 0 ? n - 1 : n;
    }
    return i;
  };
  int64_t b = adjust(start, step < 0 ? n - 1 : 0);
  int64_t e = adjust(stop, step < 0 ? -1 : n);
  std::vector<double> out;
  for (int64_t i = b; step > 0 ? i < e : i > e; i += step) out.push_back(i);
  return out;
}

TEST(ArrayTest, StridedSliceMatchesPythonExhaustively) {
  std::vector<std::optional<int64_t>> bounds = {std::nullopt};
  for (int64_t i = -8; i <= 8; ++i) bounds.push_back(i);
  int checked = 0;
  for (int64_t n = 0; n <= 6; ++n) {
    Tensor v = Iota(Shape{n});
    for (auto start : bounds) {
      for (auto stop : bounds) {
        for (int64_t step : {-3, -2, -1, 1, 2, 3}) {
          std::vector<double> want = PythonSlice(n, start, stop, step);
          Tensor y = Run1("strided_slice", {v},
                          SliceAttrs({start.value_or(0)}, {stop.value_or(0)},
                                     {step}, start ? 0 : 1, stop ? 0 : 1));
          ASSERT_FALSE(y.empty());
          ASSERT_EQ(y.ToDoubles(), want)
              << "n=" << n << " [" << (start ? *start : 99) << ":"
              << (stop ? *stop : 99) << ":" << step << "]";
          ++checked;
        }
      }
    }
  }
  EXPECT_EQ(checked, 7 * 18 * 18 * 6);
}

TEST(ArrayTest, StridedSliceOfMatricesMatchesPython) {
  // x[b0:e0:s0, b1:e1:s1] on a 7x9 matrix, against row and column indices
  // taken separately.
  Tensor m = Iota(Shape{7, 9});
  const int64_t cases[][6] = {{1, 6, 2, -1, -10, -1},
                              {6, 0, -3, 0, 9, 4},
                              {-1, -8, -1, 8, 0, -2},
                              {0, 7, 1, 2, 3, 1}};
  for (const auto& c : cases) {
    std::vector<double> rows = PythonSlice(7, c[0], c[1], c[2]);
    std::vector<double> cols = PythonSlice(9, c[3], c[4], c[5]);
    std::vector<double> want;
    for (double r : rows) {
      for (double col : cols) want.push_back(r * 9 + col);
    }
    Tensor y = Run1("strided_slice", {m},
                    SliceAttrs({c[0], c[3]}, {c[1], c[4]}, {c[2], c[5]}));
    ExpectTensor(y, DType::kF32,
                 Shape{static_cast<int64_t>(rows.size()),
                       static_cast<int64_t>(cols.size())},
                 want, 0);
  }
}

TEST(ArrayTest, StridedSliceErrorsAndInference) {
  Tensor m = Iota(Shape{3, 4});
  EXPECT_THAT(RunError("strided_slice", {m}, SliceAttrs({3}, {0}, {1}, 0, 0, 1))
                  .message(),
              HasSubstr("index 3 is out of range for axis 0 of size 3"));
  EXPECT_THAT(
      RunError("strided_slice", {m}, SliceAttrs({0}, {1}, {0})).message(),
      HasSubstr("step cannot be zero"));
  EXPECT_THAT(RunError("strided_slice", {m},
                       SliceAttrs({0, 0, 0}, {1, 1, 1}, {1, 1, 1}))
                  .message(),
              HasSubstr("too many indices"));
  auto out = Infer("strided_slice", {{DType::kF32, Shape{-1, 4}}},
                   SliceAttrs({0, 1}, {0, 3}, {1, 1}, 1, 0));
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ((*out)[0].shape, (Shape{-1, 2}));
}

TEST(ArrayTest, DynamicIndex) {
  Tensor m = Iota(Shape{3, 2});
  ExpectTensor(Run1("dynamic_index", {m, I32({1}, {})}), DType::kF32, Shape{2},
               {2, 3}, 0);
  ExpectTensor(Run1("dynamic_index", {m, I64({-1}, {})}), DType::kF32, Shape{2},
               {4, 5}, 0);
  ExpectTensor(Run1("dynamic_index", {F32({4, 5}, {2}), I32({0}, {})}),
               DType::kF32, Shape{}, {4}, 0);
  absl::Status s = RunError("dynamic_index", {m, I32({3}, {})});
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(s.message(), HasSubstr("index 3 is out of range"));
  EXPECT_THAT(s.message(), HasSubstr("size 3"));
  EXPECT_THAT(RunError("dynamic_index", {m, I32({-4}, {})}).message(),
              HasSubstr("index -4"));
}

TEST(ArrayTest, DynamicUpdateIndex) {
  Tensor m = Iota(Shape{3, 2});
  ExpectTensor(
      Run1("dynamic_update_index", {m, I32({1}, {}), F32({9, 8}, {2})}),
      DType::kF32, Shape{3, 2}, {0, 1, 9, 8, 4, 5}, 0);
  ExpectTensor(
      Run1("dynamic_update_index", {m, I64({-1}, {}), F32({7, 7}, {2})}),
      DType::kF32, Shape{3, 2}, {0, 1, 2, 3, 7, 7}, 0);
  ExpectTensor(m, DType::kF32, Shape{3, 2}, {0, 1, 2, 3, 4, 5}, 0);  // intact
  EXPECT_THAT(
      RunError("dynamic_update_index", {m, I32({3}, {}), F32({1, 1}, {2})})
          .message(),
      HasSubstr("index 3 is out of range"));
  EXPECT_THAT(
      RunError("dynamic_update_index", {m, I32({0}, {}), F32({1, 1, 1}, {3})})
          .message(),
      HasSubstr("does not fit a row of f32[3,2]"));
  // The gradient op: dy with the row zeroed, and the row.
  std::vector<Tensor> d = *Eager().Execute("dynamic_update_index_grad",
                                           {Iota(Shape{3, 2}), I32({2}, {})});
  ExpectTensor(d[0], DType::kF32, Shape{3, 2}, {0, 1, 2, 3, 0, 0}, 0);
  ExpectTensor(d[1], DType::kF32, Shape{2}, {4, 5}, 0);
}

TEST(ArrayTest, DynamicIndexAdd) {
  Tensor m = Iota(Shape{3, 2});
  ExpectTensor(Run1("dynamic_index_add", {m, I32({1}, {}), F32({10, 20}, {2})}),
               DType::kF32, Shape{3, 2}, {0, 1, 12, 23, 4, 5}, 0);
  ExpectTensor(Run1("dynamic_index_add", {m, I64({-3}, {}), F32({1, 1}, {2})}),
               DType::kF32, Shape{3, 2}, {1, 2, 2, 3, 4, 5}, 0);
  ExpectTensor(m, DType::kF32, Shape{3, 2}, {0, 1, 2, 3, 4, 5}, 0);  // intact
  EXPECT_THAT(RunError("dynamic_index_add", {m, I32({5}, {}), F32({1, 1}, {2})})
                  .message(),
              HasSubstr("index 5 is out of range"));
}

// A kernel writes into an input's buffer only where its caller allows it
// and nothing else holds that buffer.
TEST(ArrayTest, DynamicUpdateIndexWritesInPlaceOnlyWhenAlone) {
  Device* device = Eager().device();
  auto run = [&](Tensor* x, bool allow) {
    std::vector<TensorSpec> specs = {{x->dtype(), x->shape()},
                                     {DType::kI32, Shape{}},
                                     {DType::kF32, Shape{2}}};
    Tensor index = I32({0}, {});
    Tensor value = F32({5, 6}, {2});
    std::unique_ptr<Node> node =
        *Node::Detached({.name = "u", .op = "dynamic_update_index"},
                        std::move(specs), {nullptr, &index, &value});
    std::unique_ptr<OpKernel> k =
        *KernelRegistry::Global().Create(*node, device->type());
    OpKernelContext ctx(*node, device, {x, &index, &value}, 0, nullptr);
    if (allow) ctx.allow_input_forwarding();
    EXPECT_TRUE(k->Compute(&ctx).ok());
    return ctx.output(0);
  };
  Tensor alone = Iota(Shape{2, 2});
  Tensor y = run(&alone, true);
  EXPECT_TRUE(y.SharesBufferWith(alone));
  ExpectTensor(y, DType::kF32, Shape{2, 2}, {5, 6, 2, 3}, 0);

  Tensor shared = Iota(Shape{2, 2});
  Tensor other = shared;  // a second holder: the kernel must copy
  y = run(&shared, true);
  EXPECT_FALSE(y.SharesBufferWith(shared));
  ExpectTensor(other, DType::kF32, Shape{2, 2}, {0, 1, 2, 3}, 0);

  Tensor not_allowed = Iota(Shape{2, 2});
  y = run(&not_allowed, false);
  EXPECT_FALSE(y.SharesBufferWith(not_allowed));
  ExpectTensor(not_allowed, DType::kF32, Shape{2, 2}, {0, 1, 2, 3}, 0);
}

// ---- gather ----------------------------------------------------------------

TEST(ArrayTest, Gather) {
  Tensor p = Iota(Shape{4, 2});
  ExpectTensor(Run1("gather", {p, I32({3, 0, 3}, {3})}), DType::kF32,
               Shape{3, 2}, {6, 7, 0, 1, 6, 7}, 0);
  ExpectTensor(Run1("gather", {p, I64({1, 2, 0, 0}, {2, 2})}), DType::kF32,
               Shape{2, 2, 2}, {2, 3, 4, 5, 0, 1, 0, 1}, 0);
  ExpectTensor(Run1("gather", {p, I32({1}, {})}), DType::kF32, Shape{2}, {2, 3},
               0);
  ExpectTensor(Run1("gather", {p, I32({1, 1, 0}, {3})}, {{"axis", int64_t{1}}}),
               DType::kF32, Shape{4, 3}, {1, 1, 0, 3, 3, 2, 5, 5, 4, 7, 7, 6},
               0);
  ExpectTensor(Run1("gather", {p, I32({}, {0})}), DType::kF32, Shape{0, 2}, {},
               0);
}

TEST(ArrayTest, GatherLargeMatchesReference) {
  for (int64_t inner : {1, 3, 64}) {
    Tensor p = Iota(Shape{50, 1000, inner});
    std::vector<int32_t> idx(777);
    for (size_t i = 0; i < idx.size(); ++i) idx[i] = (i * 37) % 1000;
    Tensor y = Run1("gather", {p, I32(idx, {777})}, {{"axis", int64_t{1}}});
    ASSERT_EQ(y.shape(), (Shape{50, 777, inner}));
    bool ok = true;
    for (int64_t o = 0; o < 50 && ok; ++o) {
      for (int64_t j = 0; j < 777 && ok; ++j) {
        for (int64_t k = 0; k < inner && ok; ++k) {
          ok = y.at<float>((o * 777 + j) * inner + k) ==
               p.at<float>((o * 1000 + idx[j]) * inner + k);
        }
      }
    }
    EXPECT_TRUE(ok) << "inner " << inner;
  }
}

TEST(ArrayTest, GatherIndexOutOfRangeIsARunTimeError) {
  Tensor p = Iota(Shape{4, 2});
  absl::Status s = RunError("gather", {p, I32({0, 7}, {2})});
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(s.message(), HasSubstr("index 7"));
  EXPECT_THAT(s.message(), HasSubstr("[0, 4)"));
  EXPECT_THAT(RunError("gather", {p, I32({-1}, {1})}).message(),
              HasSubstr("index -1"));
  // Shape inference accepts the node: the indices are data.
  auto out =
      Infer("gather", {{DType::kF32, Shape{4, 2}}, {DType::kI32, Shape{2}}});
  ASSERT_TRUE(out.ok());
  EXPECT_EQ((*out)[0].shape, (Shape{2, 2}));
  EXPECT_THAT(RunError("gather", {p, F32({0}, {1})}).message(),
              HasSubstr("indices must be i32 or i64"));
}

// ---- tile, pad, broadcast_to -----------------------------------------------

TEST(ArrayTest, Tile) {
  Tensor x = Iota(Shape{2, 2});
  ExpectTensor(
      Run1("tile", {x, I32({2, 3}, {2})}), DType::kF32, Shape{4, 6},
      {0, 1, 0, 1, 0, 1, 2, 3, 2, 3, 2, 3, 0, 1, 0, 1, 0, 1, 2, 3, 2, 3, 2, 3},
      0);
  ExpectTensor(Run1("tile", {x, I32({1, 1}, {2})}), DType::kF32, Shape{2, 2},
               {0, 1, 2, 3}, 0);
  ExpectTensor(Run1("tile", {x, I32({0, 2}, {2})}), DType::kF32, Shape{0, 4},
               {}, 0);
  EXPECT_THAT(RunError("tile", {x, I32({2}, {1})}).message(),
              HasSubstr("1 entries for a tensor of rank 2"));
}

TEST(ArrayTest, Pad) {
  Tensor x = F32({1, 2, 3, 4}, {2, 2});
  ExpectTensor(Run1("pad", {x, I32({1, 0, 0, 2}, {2, 2}), F32({0}, {})}),
               DType::kF32, Shape{3, 4}, {0, 0, 0, 0, 1, 2, 0, 0, 3, 4, 0, 0},
               0);
  ExpectTensor(Run1("pad", {x, I64({0, 0, 1, 1}, {2, 2}), F32({-1}, {})}),
               DType::kF32, Shape{2, 4}, {-1, 1, 2, -1, -1, 3, 4, -1}, 0);
  ExpectTensor(Run1("pad", {I32({5}, {}), I32({}, {0, 2}), I32({0}, {})}),
               DType::kI32, Shape{}, {5}, 0);
  EXPECT_THAT(
      RunError("pad", {x, I32({1, 0, 0, 2}, {2, 2}), testing::F64({0}, {})})
          .message(),
      HasSubstr("must have the dtype"));
  EXPECT_THAT(
      RunError("pad", {x, I32({-1, 0, 0, 0}, {2, 2}), F32({0}, {})}).message(),
      HasSubstr("negative"));
}

TEST(ArrayTest, BroadcastTo) {
  ExpectTensor(Run1("broadcast_to", {F32({1, 2, 3}, {3}), I32({2, 3}, {2})}),
               DType::kF32, Shape{2, 3}, {1, 2, 3, 1, 2, 3}, 0);
  ExpectTensor(Run1("broadcast_to", {F32({1, 2}, {2, 1}), I32({2, 3}, {2})}),
               DType::kF32, Shape{2, 3}, {1, 1, 1, 2, 2, 2}, 0);
  ExpectTensor(Run1("broadcast_to", {F32({7}, {}), I32({2, 1, 2}, {3})}),
               DType::kF32, Shape{2, 1, 2}, {7, 7, 7, 7}, 0);
  absl::Status s =
      RunError("broadcast_to", {F32({1, 2, 3}, {3}), I32({2, 4}, {2})});
  EXPECT_THAT(s.message(), HasSubstr("cannot broadcast [3] to [2,4]"));
}

// ---- shape_of, size, rank --------------------------------------------------

TEST(ArrayTest, ShapeSizeRank) {
  Tensor x = Iota(Shape{2, 3, 4});
  ExpectTensor(Run1("shape_of", {x}), DType::kI32, Shape{3}, {2, 3, 4}, 0);
  ExpectTensor(Run1("shape_of", {x}, {{"out_type", DType::kI64}}), DType::kI64,
               Shape{3}, {2, 3, 4}, 0);
  ExpectTensor(Run1("size", {x}), DType::kI32, Shape{}, {24}, 0);
  ExpectTensor(Run1("rank", {x}), DType::kI32, Shape{}, {3}, 0);
  ExpectTensor(Run1("shape_of", {F32({1}, {})}), DType::kI32, Shape{0}, {}, 0);
  ExpectTensor(Run1("size", {F32({}, {0, 5})}), DType::kI32, Shape{}, {0}, 0);
  auto out = Infer("shape_of", {{DType::kF32, Shape::UnknownRank()}});
  ASSERT_TRUE(out.ok());
  EXPECT_EQ((*out)[0].shape, (Shape{-1}));
}

// ---- every dtype -----------------------------------------------------------

TEST(ArrayTest, ByteKernelsServeEveryDType) {
  for (DType d : kAllDTypes) {
    SCOPED_TRACE(DTypeName(d));
    // 0, 1, 0, 1, ... is representable in every dtype.
    Tensor x(d, Shape{2, 3});
    for (int64_t i = 0; i < 6; ++i) {
      VisitDType(d, [&](auto zero) {
        using T = decltype(zero);
        if constexpr (std::is_same_v<T, Half>) {
          x.data<Half>()[i] = FloatToHalf(i % 2);
        } else if constexpr (std::is_same_v<T, BFloat16>) {
          x.data<BFloat16>()[i] = FloatToBFloat16(i % 2);
        } else {
          x.data<T>()[i] = static_cast<T>(i % 2);
        }
      });
    }
    ExpectTensor(Run1("transpose", {x}), d, Shape{3, 2}, {0, 1, 1, 0, 0, 1}, 0);
    ExpectTensor(Run1("concat", {x, x}, {{"axis", int64_t{1}}}), d, Shape{2, 6},
                 {0, 1, 0, 0, 1, 0, 1, 0, 1, 1, 0, 1}, 0);
    ExpectTensor(Run1("gather", {x, I32({1}, {1})}), d, Shape{1, 3}, {1, 0, 1},
                 0);
    ExpectTensor(Run1("reshape", {x, I32({6}, {1})}), d, Shape{6},
                 {0, 1, 0, 1, 0, 1}, 0);
    ExpectTensor(Run1("slice", {x, I32({0, 1}, {2}), I32({2, 1}, {2})}), d,
                 Shape{2, 1}, {1, 0}, 0);
    ExpectTensor(Run1("tile", {x, I32({1, 2}, {2})}), d, Shape{2, 6},
                 {0, 1, 0, 0, 1, 0, 1, 0, 1, 1, 0, 1}, 0);
  }
  ExpectTensor(Run1("stack", {Bool({true}, {1}), Bool({false}, {1})}),
               DType::kBool, Shape{2, 1}, {1, 0}, 0);
}

}  // namespace
}  // namespace runnel

namespace runnel {
namespace {

// In a graph, a shape input that is not a constant is read at run time.
TEST(ArrayTest, GraphShapesKnownOnlyAtRunTime) {
  auto g = std::make_shared<Graph>();
  auto placeholder = [&](const std::string& name, DType d, Shape s) {
    return *g->AddNode({.name = name,
                        .op = "placeholder",
                        .attrs = {{"dtype", d}, {"shape", s}}});
  };
  Node* x = placeholder("x", DType::kF32, Shape{-1, 3});
  Node* shape = placeholder("shape", DType::kI32, Shape{2});
  absl::StatusOr<Node*> r = g->AddNode(
      {.name = "r", .op = "reshape", .inputs = {{x, 0}, {shape, 0}}});
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ((*r)->output_shape(0), (Shape{-1, -1}));
  absl::StatusOr<Node*> parts = g->AddNode({.name = "parts",
                                            .op = "split",
                                            .inputs = {{x, 0}},
                                            .attrs = {{"num", int64_t{2}}}});
  ASSERT_TRUE(parts.ok()) << parts.status();
  EXPECT_EQ((*parts)->output_shape(1), (Shape{-1, 3}));

  Session session(g, {.num_threads = 2});
  Tensor xv = Iota(Shape{4, 3});
  auto out = session.Run({{{x, 0}, xv}, {{shape, 0}, I32({2, -1}, {2})}},
                         {{*r, 0}, {*parts, 1}}, {});
  ASSERT_TRUE(out.ok()) << out.status();
  ExpectTensor((*out)[0], DType::kF32, Shape{2, 6}, xv.ToDoubles(), 0);
  ExpectTensor((*out)[1], DType::kF32, Shape{2, 3}, {6, 7, 8, 9, 10, 11}, 0);
  // The checks of shape inference apply at run time.
  out = session.Run({{{x, 0}, Iota(Shape{3, 3})}}, {{*parts, 0}}, {});
  ASSERT_FALSE(out.ok());
  EXPECT_THAT(out.status().message(), HasSubstr("not divisible by 2"));
}

}  // namespace
}  // namespace runnel
