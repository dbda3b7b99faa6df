#include "kernels/common/array_util.h"

#include <algorithm>
#include <cstring>

#include "base/status_macros.h"
#include "base/strings.h"
#include "framework/op_registry.h"

namespace runnel {
namespace {

// Contiguous blocks larger than this are split so that even a single big
// copy spreads over the pool.
constexpr int64_t kPieceBytes = int64_t{1} << 16;
// Strided runs longer than this are split likewise.
constexpr int64_t kPieceElements = 8192;
// Blocks at least this big are copied with memcpy rather than per element.
constexpr int64_t kMinBlockBytes = 32;
// Side of the square tiles of a transposing copy.
constexpr int64_t kTile = 32;

// One axis of a copy; strides in bytes.
struct Dim {
  int64_t n, src, dst;
};

// Walks the index space of `dims` in row-major order from a linear start,
// tracking the byte offsets of the current index.
class Odometer {
 public:
  Odometer(const std::vector<Dim>& dims, int64_t start)
      : dims_(dims), index_(dims.size(), 0) {
    for (int i = static_cast<int>(dims_.size()) - 1; i >= 0; --i) {
      index_[i] = start % dims_[i].n;
      start /= dims_[i].n;
      src_ += index_[i] * dims_[i].src;
      dst_ += index_[i] * dims_[i].dst;
    }
  }
  void Next() {
    for (int i = static_cast<int>(dims_.size()) - 1; i >= 0; --i) {
      const Dim& d = dims_[i];
      if (++index_[i] < d.n) {
        src_ += d.src;
        dst_ += d.dst;
        return;
      }
      index_[i] = 0;
      src_ -= (d.n - 1) * d.src;
      dst_ -= (d.n - 1) * d.dst;
    }
  }
  int64_t src() const { return src_; }
  int64_t dst() const { return dst_; }
  int64_t index(int i) const { return index_[i]; }

 private:
  const std::vector<Dim>& dims_;
  std::vector<int64_t> index_;
  int64_t src_ = 0, dst_ = 0;
};

int64_t Product(const std::vector<Dim>& dims) {
  int64_t n = 1;
  for (const Dim& d : dims) n *= d.n;
  return n;
}

template <size_t B>
void CopyRunFixed(char* dst, int64_t dst_stride, const char* src,
                  int64_t src_stride, int64_t n) {
  for (int64_t k = 0; k < n; ++k) {
    std::memcpy(dst + k * dst_stride, src + k * src_stride, B);
  }
}

// Copies `n` elements of `b` bytes with the given byte strides.
void CopyRun(size_t b, char* dst, int64_t dst_stride, const char* src,
             int64_t src_stride, int64_t n) {
  switch (b) {
    case 1:
      return CopyRunFixed<1>(dst, dst_stride, src, src_stride, n);
    case 2:
      return CopyRunFixed<2>(dst, dst_stride, src, src_stride, n);
    case 4:
      return CopyRunFixed<4>(dst, dst_stride, src, src_stride, n);
    case 8:
      return CopyRunFixed<8>(dst, dst_stride, src, src_stride, n);
    case 16:
      return CopyRunFixed<16>(dst, dst_stride, src, src_stride, n);
    default:
      for (int64_t k = 0; k < n; ++k) {
        std::memcpy(dst + k * dst_stride, src + k * src_stride, b);
      }
  }
}

// Each index of `outer` copies one contiguous block of `block` bytes.
void BlockCopy(ThreadPool* pool, const std::vector<Dim>& outer, int64_t block,
               const char* src, char* dst) {
  const int64_t pieces = (block + kPieceBytes - 1) / kPieceBytes;
  const int64_t piece = std::min(block, kPieceBytes);
  pool->ParallelFor(Product(outer) * pieces, piece / 4 + 10,
                    [&](int64_t begin, int64_t end) {
                      Odometer it(outer, begin / pieces);
                      int64_t p = begin % pieces;
                      for (int64_t w = begin; w < end; ++w) {
                        int64_t off = p * kPieceBytes;
                        std::memcpy(dst + it.dst() + off, src + it.src() + off,
                                    std::min(kPieceBytes, block - off));
                        if (++p == pieces) {
                          p = 0;
                          it.Next();
                        }
                      }
                    });
}

// Each index of `outer` copies a strided run along `inner`.
void RowCopy(ThreadPool* pool, const std::vector<Dim>& outer, const Dim& inner,
             size_t elem, const char* src, char* dst) {
  const int64_t pieces = (inner.n + kPieceElements - 1) / kPieceElements;
  const int64_t piece = std::min(inner.n, kPieceElements);
  pool->ParallelFor(
      Product(outer) * pieces, piece * 2 + 10, [&](int64_t begin, int64_t end) {
        Odometer it(outer, begin / pieces);
        int64_t p = begin % pieces;
        for (int64_t w = begin; w < end; ++w) {
          int64_t first = p * kPieceElements;
          CopyRun(elem, dst + it.dst() + first * inner.dst, inner.dst,
                  src + it.src() + first * inner.src, inner.src,
                  std::min(kPieceElements, inner.n - first));
          if (++p == pieces) {
            p = 0;
            it.Next();
          }
        }
      });
}

// A transposing copy: `rows` is contiguous in the source and `cols` in the
// destination. Each square tile goes through a small buffer: read along
// source lines, written along destination lines, so every cache line of
// either side is touched once (a direct copy of power-of-two shapes would
// evict its own lines, which share cache sets).
void TiledCopy(ThreadPool* pool, std::vector<Dim> outer, const Dim& rows,
               const Dim& cols, size_t elem, const char* src, char* dst) {
  const int64_t row_tiles = (rows.n + kTile - 1) / kTile;
  // The last odometer axis walks tiles of rows.
  outer.push_back({row_tiles, rows.src * kTile, rows.dst * kTile});
  const int last = static_cast<int>(outer.size()) - 1;
  const int64_t esz = static_cast<int64_t>(elem);
  pool->ParallelFor(
      Product(outer), kTile * cols.n * 2 + 10, [&](int64_t begin, int64_t end) {
        std::vector<char> buffer(kTile * kTile * esz);
        char* buf = buffer.data();
        Odometer it(outer, begin);
        for (int64_t w = begin; w < end; ++w, it.Next()) {
          const int64_t nrows =
              std::min(kTile, rows.n - it.index(last) * kTile);
          for (int64_t c0 = 0; c0 < cols.n; c0 += kTile) {
            const int64_t ncols = std::min(kTile, cols.n - c0);
            // buf[c][r] = source line c, contiguous over r.
            for (int64_t c = 0; c < ncols; ++c) {
              std::memcpy(buf + c * nrows * esz,
                          src + it.src() + (c0 + c) * cols.src, nrows * esz);
            }
            // Destination line r, contiguous over c, gathers buf[:][r].
            for (int64_t r = 0; r < nrows; ++r) {
              CopyRun(elem, dst + it.dst() + r * rows.dst + c0 * cols.dst, esz,
                      buf + r * esz, nrows * esz, ncols);
            }
          }
        }
      });
}

}  // namespace

namespace {

absl::StatusOr<std::vector<Shape>> OutputShapes(const OpKernelContext& ctx,
                                                const OpKernel* kernel) {
  const Node& node = ctx.node();
  std::vector<TensorSpec> specs;
  std::vector<const Tensor*> values;
  for (int i = 0; i < ctx.num_inputs(); ++i) {
    specs.push_back({ctx.input(i).dtype(), ctx.input(i).shape()});
    const bool readable = kernel == nullptr || kernel->input_in_host_memory(i);
    values.push_back(readable ? &ctx.input(i) : nullptr);
  }
  ShapeContext sc(node.attrs(), std::move(specs), std::move(values));
  absl::StatusOr<std::vector<TensorSpec>> out = node.op_def().shape_fn(sc);
  if (!out.ok()) {
    return absl::Status(out.status().code(),
                        StrCat(node.op(), ": ", out.status().message()));
  }
  RN_RETURN_IF_ERROR(CheckOutputSizes(node.op(), *out));
  if (static_cast<int>(out->size()) != ctx.num_outputs()) {
    return absl::InternalError(StrCat(node.op(), ": ", out->size(),
                                      " outputs at run time, ",
                                      ctx.num_outputs(), " in the graph"));
  }
  std::vector<Shape> shapes;
  for (TensorSpec& s : *out) {
    if (!s.shape.IsFullyDefined()) {
      return absl::InternalError(StrCat(node.op(), ": output shape ",
                                        s.shape.ToString(),
                                        " is not defined at run time"));
    }
    shapes.push_back(std::move(s.shape));
  }
  return shapes;
}

}  // namespace

absl::StatusOr<std::vector<Shape>> ConcreteOutputShapes(
    const OpKernelContext& ctx) {
  return OutputShapes(ctx, nullptr);
}

absl::StatusOr<std::vector<Shape>> ConcreteOutputShapes(
    const OpKernelContext& ctx, const OpKernel& kernel) {
  return OutputShapes(ctx, &kernel);
}

absl::StatusOr<Shape> ConcreteOutputShape(const OpKernelContext& ctx) {
  RN_ASSIGN_OR_RETURN(std::vector<Shape> shapes, ConcreteOutputShapes(ctx));
  return std::move(shapes[0]);
}

absl::StatusOr<Shape> ConcreteOutputShape(const OpKernelContext& ctx,
                                          const OpKernel& kernel) {
  RN_ASSIGN_OR_RETURN(std::vector<Shape> shapes,
                      ConcreteOutputShapes(ctx, kernel));
  return std::move(shapes[0]);
}

std::vector<int64_t> RowMajorStrides(absl::Span<const int64_t> dims) {
  std::vector<int64_t> strides(dims.size(), 1);
  for (int i = static_cast<int>(dims.size()) - 2; i >= 0; --i) {
    strides[i] = strides[i + 1] * dims[i + 1];
  }
  return strides;
}

std::vector<int64_t> RowMajorStrides(const Shape& shape) {
  return RowMajorStrides(shape.dims());
}

void StridedCopy(ThreadPool* pool, size_t elem_size,
                 absl::Span<const int64_t> shape, const void* src_v,
                 absl::Span<const int64_t> src_strides, void* dst_v,
                 absl::Span<const int64_t> dst_strides) {
  const char* src = static_cast<const char*>(src_v);
  char* dst = static_cast<char*>(dst_v);
  const int64_t esz = static_cast<int64_t>(elem_size);
  // Drop size-1 axes and merge axes that are contiguous with the next one
  // on both sides.
  std::vector<Dim> dims;
  for (size_t i = 0; i < shape.size(); ++i) {
    if (shape[i] == 0) return;
    if (shape[i] == 1) continue;
    Dim d{shape[i], src_strides[i] * esz, dst_strides[i] * esz};
    if (!dims.empty() && dims.back().src == d.src * d.n &&
        dims.back().dst == d.dst * d.n) {
      dims.back() = {dims.back().n * d.n, d.src, d.dst};
    } else {
      dims.push_back(d);
    }
  }
  // Innermost axes contiguous on both sides become one block.
  int64_t block = esz;
  while (!dims.empty() && dims.back().src == block &&
         dims.back().dst == block) {
    block *= dims.back().n;
    dims.pop_back();
  }
  if (dims.empty() || block >= kMinBlockBytes) {
    BlockCopy(pool, dims, block, src, dst);
    return;
  }
  const Dim cols = dims.back();
  dims.pop_back();
  if (cols.dst == block && cols.n >= 8) {
    for (size_t j = 0; j < dims.size(); ++j) {
      if (dims[j].src == block && dims[j].n >= 8) {
        Dim rows = dims[j];
        dims.erase(dims.begin() + j);
        TiledCopy(pool, std::move(dims), rows, cols, block, src, dst);
        return;
      }
    }
  }
  RowCopy(pool, dims, cols, block, src, dst);
}

void ParallelMemcpy(ThreadPool* pool, void* dst, const void* src,
                    size_t bytes) {
  if (bytes == 0) return;
  BlockCopy(pool, {}, static_cast<int64_t>(bytes),
            static_cast<const char*>(src), static_cast<char*>(dst));
}

void FillElements(ThreadPool* pool, void* dst_v, int64_t n, const void* value,
                  size_t elem_size) {
  if (n <= 0) return;
  char* dst = static_cast<char*>(dst_v);
  const char* v = static_cast<const char*>(value);
  const bool uniform_bytes =
      std::all_of(v, v + elem_size, [&](char c) { return c == v[0]; });
  if (uniform_bytes) {
    // memset writes 8 or more bytes a cycle (5.7 us for 896 KiB here, 24
    // into fresh pages): split in blocks of 4 KiB at 512 cycles each, so
    // that only fills of some megabytes wake another thread (a wake-up
    // costs tens of microseconds; the row-LSTM's 896 KiB stacks took
    // 50-170 us filled in two pieces).
    constexpr int64_t kBlock = 4096;
    const int64_t bytes = n * static_cast<int64_t>(elem_size);
    pool->ParallelFor((bytes + kBlock - 1) / kBlock, kBlock / 8,
                      [&](int64_t begin, int64_t end) {
                        const int64_t from = begin * kBlock;
                        std::memset(dst + from, v[0],
                                    std::min(end * kBlock, bytes) - from);
                      });
    return;
  }
  pool->ParallelFor(n, elem_size, [&](int64_t begin, int64_t end) {
    // A stride-0 source repeats the value.
    CopyRun(elem_size, dst + begin * elem_size, elem_size, v, 0, end - begin);
  });
}

absl::StatusOr<int64_t> AxisPosition(const Tensor& index, int64_t n,
                                     std::string_view prefix) {
  absl::StatusOr<int64_t> value = index.ScalarAsInt();
  if (!value.ok()) return value.status();
  const int64_t i = *value < 0 ? *value + n : *value;
  if (i < 0 || i >= n) {
    return absl::InvalidArgumentError(StrCat(
        prefix, "index ", *value, " is out of range for axis 0 of size ", n));
  }
  return i;
}

absl::StatusOr<std::optional<std::vector<int64_t>>> TransposeReadStrides(
    const Node& node, const Shape& x) {
  std::vector<int64_t> perm;
  if (node.attrs().contains("perm")) {
    RN_ASSIGN_OR_RETURN(perm, node.attr<std::vector<int64_t>>("perm"));
  } else {
    for (int i = x.rank() - 1; i >= 0; --i) perm.push_back(i);
  }
  bool identity = true;
  for (int i = 0; i < x.rank(); ++i) identity = identity && perm[i] == i;
  if (identity) return std::nullopt;
  const std::vector<int64_t> in = RowMajorStrides(x);
  std::vector<int64_t> src(x.rank());
  for (int i = 0; i < x.rank(); ++i) src[i] = in[perm[i]];
  return src;
}

absl::StatusOr<OneHotAttrs> OneHotAttrs::Of(const Node& node) {
  OneHotAttrs a;
  RN_ASSIGN_OR_RETURN(double on, node.attr<double>("on_value"));
  RN_ASSIGN_OR_RETURN(double off, node.attr<double>("off_value"));
  RN_ASSIGN_OR_RETURN(a.depth, node.attr<int64_t>("depth"));
  RN_ASSIGN_OR_RETURN(a.axis, node.attr<int64_t>("axis"));
  a.on = Tensor::ScalarOf(node.output_dtype(0), on);
  a.off = Tensor::ScalarOf(node.output_dtype(0), off);
  return a;
}

std::pair<int64_t, int64_t> OneHotAttrs::OuterInner(
    const Tensor& indices) const {
  const int at = axis < 0 ? indices.rank() : static_cast<int>(axis);
  int64_t inner = 1;
  for (int k = at; k < indices.rank(); ++k) inner *= indices.dim(k);
  int64_t outer = 1;
  for (int k = 0; k < at; ++k) outer *= indices.dim(k);
  return {outer, inner};
}

absl::StatusOr<int64_t> RowPosition(const Tensor& x, const Tensor& index) {
  if (x.rank() == 0) return absl::InvalidArgumentError("cannot index a scalar");
  return AxisPosition(index, x.dim(0));
}

absl::StatusOr<int64_t> RowUpdatePosition(const Tensor& x, const Tensor& index,
                                          const Tensor& value) {
  if (x.rank() == 0 || value.num_elements() * x.dim(0) != x.num_elements()) {
    return absl::InvalidArgumentError(
        StrCat("the value ", value.shape().ToString(),
               " does not fit a row of ", x.shape().ToString()));
  }
  return AxisPosition(index, x.dim(0));
}

absl::StatusOr<std::vector<int64_t>> RowDims(const Tensor& x,
                                             const Tensor& prefix,
                                             std::string_view what) {
  bool fits = prefix.rank() <= x.rank();
  for (int k = 0; fits && k < prefix.rank(); ++k) {
    fits = prefix.dim(k) == x.dim(k);
  }
  if (!fits) {
    return absl::InvalidArgumentError(
        StrCat(what, " ", prefix.shape().ToString(),
               " is not a prefix of the shape ", x.shape().ToString()));
  }
  return std::vector<int64_t>(x.shape().dims().begin() + prefix.rank(),
                              x.shape().dims().end());
}

int64_t SegmentSumPlan::row_size() const {
  int64_t n = 1;
  for (int64_t d : row_dims) n *= d;
  return n;
}

Shape SegmentSumPlan::output_shape() const {
  std::vector<int64_t> dims{num};
  dims.insert(dims.end(), row_dims.begin(), row_dims.end());
  return Shape(std::move(dims));
}

absl::StatusOr<SegmentSumPlan> PlanSegmentSum(const Tensor& data,
                                              const Tensor& segment_ids,
                                              const Tensor& num_segments) {
  SegmentSumPlan p;
  p.num = num_segments.ToInt64s()[0];
  if (p.num < 0) {
    return absl::InvalidArgumentError(
        StrCat("num_segments is negative: ", p.num));
  }
  RN_ASSIGN_OR_RETURN(p.row_dims, RowDims(data, segment_ids, "segment_ids"));
  p.ids = segment_ids.ToInt64s();
  for (size_t j = 0; j < p.ids.size(); ++j) {
    if (p.ids[j] < 0 || p.ids[j] >= p.num) {
      return absl::InvalidArgumentError(
          StrCat("segment id ", p.ids[j], " (segment_ids[", j,
                 "]) is out of range [0, ", p.num, ")"));
    }
  }
  return p;
}

absl::Status CheckGatherIndices(const std::vector<int64_t>& indices, int64_t n,
                                int axis, const Shape& params,
                                std::string_view prefix) {
  for (size_t j = 0; j < indices.size(); ++j) {
    if (indices[j] < 0 || indices[j] >= n) {
      return absl::InvalidArgumentError(
          StrCat(prefix, "index ", indices[j], " (indices[", j,
                 "]) is out of range [0, ", n, ") for axis ", axis, " of ",
                 params.ToString()));
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<CumsumAttrs> CumsumAttrs::Of(const Node& node) {
  CumsumAttrs a;
  RN_ASSIGN_OR_RETURN(a.axis, node.attr<int64_t>("axis"));
  RN_ASSIGN_OR_RETURN(a.exclusive, node.attr<bool>("exclusive"));
  RN_ASSIGN_OR_RETURN(a.reverse, node.attr<bool>("reverse"));
  return a;
}

}  // namespace runnel
