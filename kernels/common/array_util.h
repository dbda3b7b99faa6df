// Helpers shared by the shape, slicing, creation and random kernels: the
// output shapes of a node at run time, strided byte copies and fills (so one
// kernel serves every dtype), and scalar conversions.
//
// Everything here is thread-safe; the copies and fills split large work
// over the intra-op pool and return when it is done.
#ifndef RUNNEL_KERNELS_COMMON_ARRAY_UTIL_H_
#define RUNNEL_KERNELS_COMMON_ARRAY_UTIL_H_

#include <cstdint>
#include <optional>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "base/float16.h"
#include "framework/kernel.h"

namespace runnel {

// Runs the node's shape function on the actual inputs and their values, so
// a kernel's output shapes (and the checks behind them) are exactly those
// of shape inference. Errors read "op: message".
absl::StatusOr<std::vector<Shape>> ConcreteOutputShapes(
    const OpKernelContext& ctx);
// Output 0's shape.
absl::StatusOr<Shape> ConcreteOutputShape(const OpKernelContext& ctx);
// The same for a kernel of a device whose memory is not the host's (a
// GPU): the shape function sees the values of only the inputs `kernel`
// takes in host memory (HostMemory, framework/kernel.h).
absl::StatusOr<std::vector<Shape>> ConcreteOutputShapes(
    const OpKernelContext& ctx, const OpKernel& kernel);
absl::StatusOr<Shape> ConcreteOutputShape(const OpKernelContext& ctx,
                                          const OpKernel& kernel);

// The lines along one axis of a row-major tensor (softmax, cumsum):
// outer * inner lines of `len` elements.
struct AxisLines {
  AxisLines(const Shape& shape, int axis) {
    for (int i = 0; i < axis; ++i) outer *= shape.dim(i);
    len = shape.dim(axis);
    for (int i = axis + 1; i < shape.rank(); ++i) inner *= shape.dim(i);
  }
  int64_t count() const { return outer * inner; }
  // Offset of the first element of line l; its elements are `inner` apart.
  int64_t start(int64_t l) const {
    return (l / inner) * len * inner + l % inner;
  }
  int64_t outer = 1, len = 1, inner = 1;
};

// cumsum's attributes (framework/ops/math_ops.cc), as both devices read
// them.
struct CumsumAttrs {
  int64_t axis = 0;
  bool exclusive = false, reverse = false;
  static absl::StatusOr<CumsumAttrs> Of(const Node& node);
};

// Row-major strides, in elements, of a tensor of `shape`.
std::vector<int64_t> RowMajorStrides(const Shape& shape);
std::vector<int64_t> RowMajorStrides(absl::Span<const int64_t> dims);

// Copies a block of `shape` elements of `elem_size` bytes: element (i0, i1,
// ...) goes from src + sum(ik * src_strides[k]) elements to dst + sum(ik *
// dst_strides[k]) elements. Source strides may be 0 (broadcast) or negative
// (reversed). Contiguous runs are copied with memcpy, transposed ones in
// cache-sized tiles; large copies run on `pool`.
void StridedCopy(ThreadPool* pool, size_t elem_size,
                 absl::Span<const int64_t> shape, const void* src,
                 absl::Span<const int64_t> src_strides, void* dst,
                 absl::Span<const int64_t> dst_strides);

// Copies `bytes` contiguous bytes, on `pool` when large.
void ParallelMemcpy(ThreadPool* pool, void* dst, const void* src, size_t bytes);

// Sets `n` elements of `elem_size` bytes at `dst` to the element at `value`.
void FillElements(ThreadPool* pool, void* dst, int64_t n, const void* value,
                  size_t elem_size);

// The run-time scalar `index` into an axis of size `n` as a position in
// [0, n), negative values counting from the end; out of range is an error
// "{prefix}index I is out of range for axis 0 of size N".
absl::StatusOr<int64_t> AxisPosition(const Tensor& index, int64_t n,
                                     std::string_view prefix = "");

// transpose(x)'s plan: the strides (in elements) at which x is read in
// the output's order, for the node's `perm` (default: the dims reversed);
// nullopt when perm is the identity (the output is x).
absl::StatusOr<std::optional<std::vector<int64_t>>> TransposeReadStrides(
    const Node& node, const Shape& x);

// The run-time scalar `index` as a row of x (AxisPosition along axis 0);
// "cannot index a scalar" when x has no rows.
absl::StatusOr<int64_t> RowPosition(const Tensor& x, const Tensor& index);

// The row of x that dynamic_update_index / dynamic_index_add(x, index,
// value) write: `value` must fit one row of x (else "the value S does not
// fit a row of X"), and `index` is checked by AxisPosition.
absl::StatusOr<int64_t> RowUpdatePosition(const Tensor& x, const Tensor& index,
                                          const Tensor& value);

// one_hot's attributes, read once by its kernels (the CPU's and a GPU's):
// on and off as scalars of the output dtype (in host memory); and where
// the new axis goes in `indices`, as the elements before and after it.
struct OneHotAttrs {
  int64_t depth = 0, axis = -1;
  Tensor on, off;
  static absl::StatusOr<OneHotAttrs> Of(const Node& node);
  // indices viewed as [outer, inner] around the new axis.
  std::pair<int64_t, int64_t> OuterInner(const Tensor& indices) const;
};

// unsorted_segment_sum(data, segment_ids, num_segments): the output has
// `num` rows of `row_dims`; `ids` are segment_ids' values, each in
// [0, num). The errors name the bad id and its place.
struct SegmentSumPlan {
  int64_t num = 0;
  std::vector<int64_t> row_dims;
  std::vector<int64_t> ids;
  int64_t row_size() const;  // elements in a row
  Shape output_shape() const;
};
absl::StatusOr<SegmentSumPlan> PlanSegmentSum(const Tensor& data,
                                              const Tensor& segment_ids,
                                              const Tensor& num_segments);

// The dims of `x` after those of `prefix`, which must lead x's shape (else
// "{what} P is not a prefix of the shape X").
absl::StatusOr<std::vector<int64_t>> RowDims(const Tensor& x,
                                             const Tensor& prefix,
                                             std::string_view what);

// gather's (and gather_grad's) indices into axis `axis` (of size n) of
// `params`: each in [0, n), else "{prefix}index I (indices[J]) is out of
// range [0, N) for axis A of SHAPE".
absl::Status CheckGatherIndices(const std::vector<int64_t>& indices, int64_t n,
                                int axis, const Shape& params,
                                std::string_view prefix = "");

}  // namespace runnel

#endif  // RUNNEL_KERNELS_COMMON_ARRAY_UTIL_H_
