// The array kernels of the CPU: the bodies shared with the GPU
// (kernels/common/array_kernels.h) over the CPU's primitives (strided
// copies and fills split over the intra-op pool, array_util.h), and the
// shape queries (shape_of, size, rank). The ops that look at elements
// (gather, one_hot, the sums of rows) have kernels of their own:
// slice_kernels.cc, creation_kernels.cc, grad_kernels.cc.
#include "kernels/common/array_kernels.h"

#include <cstring>

#include "framework/kernel.h"
#include "kernels/common/array_util.h"
#include "kernels/cpu/array_primitives.h"

namespace runnel {
namespace {

namespace ak = array_kernels;

// Joins (concat, stack) or splits (split, unstack) along an axis. The big
// tensor is viewed as [outer, row]; part i owns `chunk[i]` bytes of each
// row, at `offset[i]`.
struct AxisLayout {
  int64_t outer = 1;
  int64_t row = 0;
  std::vector<int64_t> chunk, offset;

  // The big tensor has `outer_rows` rows; part i has part_elements[i]
  // elements, an equal share of them in each row.
  AxisLayout(int64_t outer_rows, const std::vector<int64_t>& part_elements,
             size_t elem_size)
      : outer(outer_rows) {
    for (int64_t n : part_elements) {
      int64_t bytes = outer_rows == 0
                          ? 0
                          : n / outer_rows * static_cast<int64_t>(elem_size);
      offset.push_back(row);
      chunk.push_back(bytes);
      row += bytes;
    }
  }
};

// Copies between the big tensor `big` and its parts, in the direction
// `join` (parts -> big) or not (big -> parts).
void CopyAlongAxis(ThreadPool* pool, const AxisLayout& l, char* big,
                   const std::vector<char*>& parts, bool join) {
  const int n = static_cast<int>(parts.size());
  if (l.outer >= 4 * pool->num_threads()) {
    // Many rows: one parallel pass over rows, each copying every part.
    pool->ParallelFor(l.outer, l.row / 4 + 10, [&](int64_t begin, int64_t end) {
      for (int64_t r = begin; r < end; ++r) {
        char* b = big + r * l.row;
        for (int i = 0; i < n; ++i) {
          char* p = parts[i] + r * l.chunk[i];
          if (join) {
            std::memcpy(b + l.offset[i], p, l.chunk[i]);
          } else {
            std::memcpy(p, b + l.offset[i], l.chunk[i]);
          }
        }
      }
    });
    return;
  }
  // Few, long rows: each part is one strided copy, split over the pool.
  for (int i = 0; i < n; ++i) {
    const int64_t shape[] = {l.outer, l.chunk[i]};
    const int64_t part_strides[] = {l.chunk[i], 1};
    const int64_t big_strides[] = {l.row, 1};
    if (join) {
      StridedCopy(pool, 1, shape, parts[i], part_strides, big + l.offset[i],
                  big_strides);
    } else {
      StridedCopy(pool, 1, shape, big + l.offset[i], big_strides, parts[i],
                  part_strides);
    }
  }
}

}  // namespace

absl::StatusOr<std::vector<Shape>> CpuArrays::OutputShapes(OpKernelContext* ctx,
                                                           const OpKernel&) {
  return ConcreteOutputShapes(*ctx);
}

absl::Status CpuArrays::Copy(OpKernelContext* ctx, size_t esz, const Dims& dims,
                             const void* src, const Dims& src_strides,
                             void* dst, const Dims& dst_strides) {
  for (int64_t d : dims) {
    if (d == 0) return absl::OkStatus();
  }
  StridedCopy(ctx->intra_op_pool(), esz, dims, src, src_strides, dst,
              dst_strides);
  return absl::OkStatus();
}

absl::Status CpuArrays::CopyAlongAxis(OpKernelContext* ctx, size_t esz,
                                      int64_t outer, void* big,
                                      const std::vector<void*>& parts,
                                      const Dims& part_elements, bool join) {
  if (outer == 0) return absl::OkStatus();
  AxisLayout layout(outer, part_elements, esz);
  std::vector<char*> bytes;
  for (void* p : parts) bytes.push_back(static_cast<char*>(p));
  runnel::CopyAlongAxis(ctx->intra_op_pool(), layout, static_cast<char*>(big),
                        bytes, join);
  return absl::OkStatus();
}

absl::Status CpuArrays::Fill(OpKernelContext* ctx, void* dst, int64_t n,
                             const void* value, size_t esz) {
  FillElements(ctx->intra_op_pool(), dst, n, value, esz);
  return absl::OkStatus();
}

absl::Status CpuArrays::Zero(OpKernelContext* ctx, void* dst, size_t bytes) {
  const char zero = 0;
  FillElements(ctx->intra_op_pool(), dst, static_cast<int64_t>(bytes), &zero,
               1);
  return absl::OkStatus();
}

namespace {

// shape_of, size, rank: integers describing the input's shape.
enum class ShapeQuery { kShape, kSize, kRank };

template <ShapeQuery kQuery>
class ShapeQueryKernel : public OpKernel {
 public:
  absl::Status Compute(OpKernelContext* ctx) override {
    const Tensor& x = ctx->input(0);
    std::vector<int64_t> values;
    if constexpr (kQuery == ShapeQuery::kShape) values = x.shape().dims();
    if constexpr (kQuery == ShapeQuery::kSize) values = {x.num_elements()};
    if constexpr (kQuery == ShapeQuery::kRank) values = {x.rank()};
    Shape shape = kQuery == ShapeQuery::kShape
                      ? Shape{static_cast<int64_t>(values.size())}
                      : Shape{};
    RN_ASSIGN_OR_RETURN(Tensor * y, ctx->allocate_output(0, shape));
    for (size_t i = 0; i < values.size(); ++i) {
      if (y->dtype() == DType::kI64) {
        y->data<int64_t>()[i] = values[i];
      } else {
        y->data<int32_t>()[i] = static_cast<int32_t>(values[i]);
      }
    }
    return absl::OkStatus();
  }
  bool IsExpensive() const override { return false; }
};

template <template <typename> class K>
void Register(const std::string& op) {
  RegisterKernelForAllTypes<K<CpuArrays>>(op);
}

RUNNEL_STATIC_INIT(ArrayKernels) {
  Register<ak::ViewKernel>("reshape");
  Register<ak::ViewKernel>("expand_dims");
  Register<ak::ViewKernel>("squeeze");
  Register<ak::TransposeKernel>("transpose");
  Register<ak::JoinKernel>("concat");
  Register<ak::JoinKernel>("stack");
  Register<ak::SplitKernel>("split");
  Register<ak::SplitKernel>("unstack");
  Register<ak::TileKernel>("tile");
  Register<ak::BroadcastKernel>("broadcast_to");
  Register<ak::BroadcastKernel>("broadcast_like");
  Register<ak::SliceKernel>("slice");
  Register<ak::SliceGradKernel>("slice_grad");
  Register<ak::StridedSliceKernel>("strided_slice");
  Register<ak::StridedSliceGradKernel>("strided_slice_grad");
  Register<ak::PadKernel>("pad");
  Register<ak::PadGradKernel>("pad_grad");
  Register<ak::DynamicIndexKernel>("dynamic_index");
  Register<ak::DynamicIndexGradKernel>("dynamic_index_grad");
  Register<ak::DynamicUpdateIndexKernel>("dynamic_update_index");
  Register<ak::DynamicUpdateIndexGradKernel>("dynamic_update_index_grad");
  Register<ak::FillKernel>("fill");
  RegisterKernelForAllTypes<ak::ConstantLikeKernel<CpuArrays, 0>>("zeros_like");
  RegisterKernelForAllTypes<ak::ConstantLikeKernel<CpuArrays, 1>>("ones_like");
  RegisterKernelForAllTypes<ShapeQueryKernel<ShapeQuery::kShape>>("shape_of");
  RegisterKernelForAllTypes<ShapeQueryKernel<ShapeQuery::kSize>>("size");
  RegisterKernelForAllTypes<ShapeQueryKernel<ShapeQuery::kRank>>("rank");
}

}  // namespace
}  // namespace runnel
