// Kernels of conv2d, max_pool and avg_pool and of their gradients
// (runtime/ops/nn_ops.cc), NHWC.
//
// conv2d in f32 is one GEMM: rows are output pixels (n, oh, ow), the depth
// is (kh, kw, c) and columns are output channels, so the HWIO filters are
// the right operand as stored and the product lands in NHWC order. The left
// operand (im2col) is never materialised: GemmF32 reads each pixel's patch
// in place, one run of in_c channels per filter tap, from the input or,
// when the windows overhang it, from a zero-padded copy.
// The 16-bit floats are converted to f32 around the same GEMM; f64 uses a
// direct loop.
#include <algorithm>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "kernels/cpu/eigen_support.h"
#include "runtime/strings.h"

namespace runnel {
namespace {

// {h, w} from an int, [h, w] or [1, h, w, 1] attribute (validated by the
// shape function), or `fallback` when absent.
absl::StatusOr<std::pair<int64_t, int64_t>> HWAttr(const Node& node,
                                                   std::string_view name,
                                                   int64_t fallback) {
  RN_ASSIGN_OR_RETURN(std::vector<int64_t> v,
                      GetAttrOr<std::vector<int64_t>>(
                          node.attrs(), name, std::vector<int64_t>{fallback}));
  if (v.size() == 1) return std::make_pair(v[0], v[0]);
  if (v.size() == 2) return std::make_pair(v[0], v[1]);
  if (v.size() == 4) return std::make_pair(v[1], v[2]);
  return absl::InvalidArgumentError(
      StrCat("attribute '", name, "' must be an int or [h, w]"));
}

absl::StatusOr<bool> SamePadding(const Node& node) {
  // (Not RN_ASSIGN_OR_RETURN: GCC 12 then warns the string may be used
  // uninitialised.)
  absl::StatusOr<std::string> padding = node.attr<std::string>("padding");
  if (!padding.ok()) return padding.status();
  const std::string& p = *padding;
  if (p == "same" || p == "SAME") return true;
  if (p == "valid" || p == "VALID") return false;
  return absl::InvalidArgumentError(
      StrCat("padding must be \"same\" or \"valid\", got \"", p, "\""));
}

// The placement of windows along one spatial dimension, as TensorFlow
// places them: "same" gives ceil(in / stride) outputs and pads the excess
// evenly, the odd element at the end.
struct Windows {
  int64_t out = 0;        // number of output positions
  int64_t pad_begin = 0;  // input index of window 0 is -pad_begin
};

absl::StatusOr<Windows> PlaceWindows(int64_t in, int64_t window, int64_t stride,
                                     int64_t dilation, bool same) {
  const int64_t effective = (window - 1) * dilation + 1;
  Windows w;
  if (same) {
    w.out = (in + stride - 1) / stride;
    const int64_t total =
        std::max<int64_t>(0, (w.out - 1) * stride + effective - in);
    w.pad_begin = total / 2;
  } else {
    if (in < effective) {
      return absl::InvalidArgumentError(
          StrCat("the window of effective size ", effective,
                 " is larger than the input (", in, ") with valid padding"));
    }
    w.out = (in - effective) / stride + 1;
  }
  return w;
}

// Everything a convolution needs to know about its operands.
struct ConvGeometry {
  int64_t batch, in_h, in_w, in_c;
  int64_t k_h, k_w, out_c;
  int64_t stride_h, stride_w, dil_h, dil_w;
  Windows rows, cols;  // output height and width placement
};

// The geometry of conv2d(x, f) (NHWC x, HWIO f).
absl::StatusOr<ConvGeometry> MakeGeometry(const Tensor& x, const Tensor& f,
                                          std::pair<int64_t, int64_t> strides,
                                          std::pair<int64_t, int64_t> dilations,
                                          bool same) {
  if (x.rank() != 4 || f.rank() != 4) {
    return absl::InvalidArgumentError(
        StrCat("conv2d needs NHWC input and HWIO filters of rank 4, got ",
               DTypeName(x.dtype()), x.shape().ToString(), " and ",
               DTypeName(f.dtype()), f.shape().ToString()));
  }
  if (x.dim(3) != f.dim(2)) {
    return absl::InvalidArgumentError(StrCat(
        "channels differ: the input ", DTypeName(x.dtype()),
        x.shape().ToString(), " has ", x.dim(3), " but the filters ",
        DTypeName(f.dtype()), f.shape().ToString(), " expect ", f.dim(2)));
  }
  ConvGeometry g;
  g.batch = x.dim(0);
  g.in_h = x.dim(1);
  g.in_w = x.dim(2);
  g.in_c = x.dim(3);
  g.k_h = f.dim(0);
  g.k_w = f.dim(1);
  g.out_c = f.dim(3);
  std::tie(g.stride_h, g.stride_w) = strides;
  std::tie(g.dil_h, g.dil_w) = dilations;
  RN_ASSIGN_OR_RETURN(g.rows,
                      PlaceWindows(g.in_h, g.k_h, g.stride_h, g.dil_h, same));
  RN_ASSIGN_OR_RETURN(g.cols,
                      PlaceWindows(g.in_w, g.k_w, g.stride_w, g.dil_w, same));
  return g;
}

// The input with enough zero padding that every tap of every output pixel
// falls inside it, so the GEMM can read patches without bounds checks.
struct PaddedImage {
  const float* data;
  int64_t h, w;    // padded height and width
  Tensor storage;  // owns `data` when a padded copy was needed
};

PaddedImage Pad(ThreadPool* pool, const ConvGeometry& g, const float* x) {
  // Rows (columns) the windows touch, counted from -pad_begin.
  const int64_t need_h =
      (g.rows.out - 1) * g.stride_h + (g.k_h - 1) * g.dil_h + 1;
  const int64_t need_w =
      (g.cols.out - 1) * g.stride_w + (g.k_w - 1) * g.dil_w + 1;
  if (g.rows.pad_begin == 0 && g.cols.pad_begin == 0 && need_h <= g.in_h &&
      need_w <= g.in_w) {
    return {x, g.in_h, g.in_w, Tensor()};
  }
  PaddedImage p{nullptr, need_h, need_w,
                Tensor(DType::kF32, Shape{g.batch, need_h, need_w, g.in_c})};
  float* out = p.storage.data<float>();
  const int64_t row_len = need_w * g.in_c;
  // Image columns that land inside the padded row.
  const int64_t w_end = std::min(g.in_w, need_w - g.cols.pad_begin);
  pool->ParallelFor(g.batch * need_h, row_len, [&](int64_t begin, int64_t end) {
    for (int64_t r = begin; r < end; ++r) {
      float* dst = out + r * row_len;
      const int64_t n = r / need_h;
      const int64_t ih = r % need_h - g.rows.pad_begin;
      std::fill_n(dst, row_len, 0.0f);
      if (ih < 0 || ih >= g.in_h || w_end <= 0) continue;
      std::memcpy(dst + g.cols.pad_begin * g.in_c,
                  x + (n * g.in_h + ih) * g.in_w * g.in_c,
                  w_end * g.in_c * sizeof(float));
    }
  });
  p.data = out;
  return p;
}

void ConvF32(ThreadPool* pool, const ConvGeometry& g, const float* x,
             const float* filters, float* y) {
  const PaddedImage image = Pad(pool, g, x);
  const int64_t pixels = g.batch * g.rows.out * g.cols.out;
  GemmRowsLhs patches;
  // Output pixel i reads the window whose top-left tap is its row start.
  patches.row = [&g, &image](int64_t i) {
    const int64_t ow = i % g.cols.out;
    const int64_t oh = (i / g.cols.out) % g.rows.out;
    const int64_t n = i / (g.cols.out * g.rows.out);
    return image.data +
           ((n * image.h + oh * g.stride_h) * image.w + ow * g.stride_w) *
               g.in_c;
  };
  for (int64_t kh = 0; kh < g.k_h; ++kh) {
    for (int64_t kw = 0; kw < g.k_w; ++kw) {
      patches.segments.push_back((kh * g.dil_h * image.w + kw * g.dil_w) *
                                 g.in_c);
    }
  }
  patches.segment_len = g.in_c;
  GemmF32(pool, pixels, g.out_c, patches, ConstMatrixF32{filters, g.out_c, 1},
          y, g.out_c);
}

// f64: out[pixel, :] = sum over taps and channels of x * filters[tap, c, :].
template <typename T>
void ConvDirect(ThreadPool* pool, const ConvGeometry& g, const T* x,
                const T* filters, T* y) {
  const int64_t pixels = g.batch * g.rows.out * g.cols.out;
  const int64_t cost = g.k_h * g.k_w * g.in_c * g.out_c;
  pool->ParallelFor(pixels, cost, [&](int64_t begin, int64_t end) {
    for (int64_t pixel = begin; pixel < end; ++pixel) {
      const int64_t ow = pixel % g.cols.out;
      const int64_t oh = (pixel / g.cols.out) % g.rows.out;
      const int64_t n = pixel / (g.cols.out * g.rows.out);
      T* out = y + pixel * g.out_c;
      std::fill_n(out, g.out_c, T(0));
      for (int64_t kh = 0; kh < g.k_h; ++kh) {
        const int64_t ih = oh * g.stride_h - g.rows.pad_begin + kh * g.dil_h;
        if (ih < 0 || ih >= g.in_h) continue;
        for (int64_t kw = 0; kw < g.k_w; ++kw) {
          const int64_t iw = ow * g.stride_w - g.cols.pad_begin + kw * g.dil_w;
          if (iw < 0 || iw >= g.in_w) continue;
          const T* in = x + ((n * g.in_h + ih) * g.in_w + iw) * g.in_c;
          const T* f = filters + (kh * g.k_w + kw) * g.in_c * g.out_c;
          for (int64_t c = 0; c < g.in_c; ++c) {
            const T v = in[c];
            const T* fc = f + c * g.out_c;
            for (int64_t o = 0; o < g.out_c; ++o) out[o] += v * fc[o];
          }
        }
      }
    }
  });
}

// conv2d and its gradients: the attributes they share.
class ConvKernelBase : public OpKernel {
 public:
  absl::Status Init(const Node& node) override {
    RN_ASSIGN_OR_RETURN(strides_, HWAttr(node, "strides", 1));
    RN_ASSIGN_OR_RETURN(dilations_, HWAttr(node, "dilations", 1));
    RN_ASSIGN_OR_RETURN(same_, SamePadding(node));
    return absl::OkStatus();
  }

 protected:
  absl::StatusOr<ConvGeometry> Geometry(const Tensor& x,
                                        const Tensor& f) const {
    return MakeGeometry(x, f, strides_, dilations_, same_);
  }

 private:
  std::pair<int64_t, int64_t> strides_{1, 1}, dilations_{1, 1};
  bool same_ = true;
};

template <typename T>
class Conv2DKernel : public ConvKernelBase {
 public:
  absl::Status Compute(OpKernelContext* ctx) override {
    const Tensor& x = ctx->input(0);
    const Tensor& f = ctx->input(1);
    RN_ASSIGN_OR_RETURN(ConvGeometry g, Geometry(x, f));
    RN_ASSIGN_OR_RETURN(
        Tensor * y, ctx->allocate_output(
                        0, Shape{g.batch, g.rows.out, g.cols.out, g.out_c}));
    if (y->num_elements() == 0) return absl::OkStatus();
    ThreadPool* pool = ctx->intra_op_pool();
    if constexpr (std::is_same_v<T, float>) {
      ConvF32(pool, g, x.data<float>(), f.data<float>(), y->data<float>());
    } else if constexpr (std::is_same_v<AccumType<T>, float>) {
      // f16/bf16: computed in f32, rounded once at the end.
      const Eigen::ThreadPoolDevice device = EigenDevice(ctx);
      const Tensor xf = ToF32<T>(device, x), ff = ToF32<T>(device, f);
      Tensor yf(DType::kF32, y->shape());
      ConvF32(pool, g, xf.data<float>(), ff.data<float>(), yf.data<float>());
      FromF32<T>(device, yf, y);
    } else {
      ConvDirect(pool, g, x.data<T>(), f.data<T>(), y->data<T>());
    }
    return absl::OkStatus();
  }
};

// ---- gradients of conv2d ----------------------------------------------------
//
// conv2d_backprop_input with stride 1 is itself a convolution: of dy with
// the filters flipped in space and their channel axes swapped, padded so
// that every input pixel sees each tap that touched it. It runs through
// ConvF32 as one implicit GEMM (rows: input pixels, depth: taps x out_c).
// Other strides, and inputs with too few channels to fill the GEMM's
// columns, take the patch gradients of one image at a time, dy[pixels,
// out_c] x filters^T[out_c, taps x in_c], and add each patch back into its
// window of a zero-padded image (col2im).
//
// conv2d_backprop_filter is dfilters^T[out_c, taps x in_c] = dy^T x patches
// summed over pixels. The pixels are cut into ranges, each summed on one
// thread with the patches (im2col) materialised a cache-sized chunk at a
// time, and the ranges' sums are added in order. The cuts depend on the
// shapes alone, so neither result depends on the number of threads.

// conv2d_backprop_filter: floats of im2col patches per chunk (half a
// typical L2 cache), and the most pixel ranges summed separately.
constexpr int64_t kPatchChunkFloats = int64_t{1} << 17;
constexpr int64_t kPatchGroups = 16;

// [KH, KW, C, O] -> [KH, KW, O, C], reversed along KH and KW.
void FlipFilters(const ConvGeometry& g, const float* f, float* out) {
  for (int64_t kh = 0; kh < g.k_h; ++kh) {
    for (int64_t kw = 0; kw < g.k_w; ++kw) {
      const float* src = f + (kh * g.k_w + kw) * g.in_c * g.out_c;
      float* dst = out + ((g.k_h - 1 - kh) * g.k_w + (g.k_w - 1 - kw)) *
                             g.out_c * g.in_c;
      for (int64_t c = 0; c < g.in_c; ++c) {
        for (int64_t o = 0; o < g.out_c; ++o) {
          dst[o * g.in_c + c] = src[c * g.out_c + o];
        }
      }
    }
  }
}

// dx = the stride-1 convolution of dy with the flipped filters.
void BackpropInputAsConv(ThreadPool* pool, const ConvGeometry& g,
                         const float* filters, const float* dy, float* dx) {
  ConvGeometry t;
  t.batch = g.batch;
  t.in_h = g.rows.out;
  t.in_w = g.cols.out;
  t.in_c = g.out_c;
  t.k_h = g.k_h;
  t.k_w = g.k_w;
  t.out_c = g.in_c;
  t.stride_h = t.stride_w = 1;
  t.dil_h = g.dil_h;
  t.dil_w = g.dil_w;
  // Input row i gets output row i + pad - tap * dilation for each tap.
  t.rows = {g.in_h, (g.k_h - 1) * g.dil_h - g.rows.pad_begin};
  t.cols = {g.in_w, (g.k_w - 1) * g.dil_w - g.cols.pad_begin};
  Tensor flipped(DType::kF32, Shape{g.k_h, g.k_w, g.out_c, g.in_c});
  FlipFilters(g, filters, flipped.data<float>());
  ConvF32(pool, t, dy, flipped.data<float>(), dx);
}

// dx by patch gradients and col2im, one image at a time.
void BackpropInputCol2Im(ThreadPool* pool, const ConvGeometry& g,
                         const float* filters, const float* dy, float* dx) {
  const int64_t depth = g.k_h * g.k_w * g.in_c;  // of a patch
  const int64_t pixels = g.rows.out * g.cols.out;
  // filters^T [out_c, depth], so the GEMM packs it with plain copies.
  Tensor ft(DType::kF32, Shape{g.out_c, depth});
  float* ftp = ft.data<float>();
  for (int64_t k = 0; k < depth; ++k) {
    for (int64_t o = 0; o < g.out_c; ++o) {
      ftp[o * depth + k] = filters[k * g.out_c + o];
    }
  }
  // The padded image holds every window and every input pixel.
  const int64_t pad_h =
      std::max((g.rows.out - 1) * g.stride_h + (g.k_h - 1) * g.dil_h + 1,
               g.rows.pad_begin + g.in_h);
  const int64_t pad_w =
      std::max((g.cols.out - 1) * g.stride_w + (g.k_w - 1) * g.dil_w + 1,
               g.cols.pad_begin + g.in_w);
  auto image = [&](int64_t n, ThreadPool* gemm_pool, float* dcol,
                   float* padded) {
    GemmF32(gemm_pool, pixels, depth, g.out_c,
            ConstMatrixF32{dy + n * pixels * g.out_c, g.out_c, 1},
            ConstMatrixF32{ftp, depth, 1}, dcol, depth);
    std::fill_n(padded, pad_h * pad_w * g.in_c, 0.0f);
    for (int64_t oh = 0; oh < g.rows.out; ++oh) {
      for (int64_t ow = 0; ow < g.cols.out; ++ow) {
        const float* patch = dcol + (oh * g.cols.out + ow) * depth;
        float* corner =
            padded + (oh * g.stride_h * pad_w + ow * g.stride_w) * g.in_c;
        for (int64_t kh = 0; kh < g.k_h; ++kh) {
          for (int64_t kw = 0; kw < g.k_w; ++kw) {
            float* d = corner + (kh * g.dil_h * pad_w + kw * g.dil_w) * g.in_c;
            const float* s = patch + (kh * g.k_w + kw) * g.in_c;
            for (int64_t c = 0; c < g.in_c; ++c) d[c] += s[c];
          }
        }
      }
    }
    for (int64_t ih = 0; ih < g.in_h; ++ih) {
      std::memcpy(
          dx + ((n * g.in_h + ih) * g.in_w) * g.in_c,
          padded +
              ((ih + g.rows.pad_begin) * pad_w + g.cols.pad_begin) * g.in_c,
          g.in_w * g.in_c * sizeof(float));
    }
  };
  // Scratch per thread: the patch gradients and the padded image.
  auto scratch = [&] {
    return Tensor(DType::kF32, Shape{pixels * depth + pad_h * pad_w * g.in_c});
  };
  if (g.batch >= pool->num_threads()) {
    pool->ParallelFor(g.batch, pixels * depth * (g.out_c + 1),
                      [&](int64_t begin, int64_t end) {
                        Tensor buffer = scratch();
                        float* dcol = buffer.data<float>();
                        for (int64_t n = begin; n < end; ++n) {
                          image(n, nullptr, dcol, dcol + pixels * depth);
                        }
                      });
  } else {
    Tensor buffer = scratch();
    float* dcol = buffer.data<float>();
    for (int64_t n = 0; n < g.batch; ++n) {
      image(n, pool, dcol, dcol + pixels * depth);
    }
  }
}

void BackpropInputF32(ThreadPool* pool, const ConvGeometry& g,
                      const float* filters, const float* dy, float* dx) {
  // A GEMM column panel is 16 wide; fewer input channels waste most of it.
  if (g.stride_h == 1 && g.stride_w == 1 && g.in_c >= 8) {
    BackpropInputAsConv(pool, g, filters, dy, dx);
  } else {
    BackpropInputCol2Im(pool, g, filters, dy, dx);
  }
}

void BackpropFilterF32(ThreadPool* pool, const ConvGeometry& g, const float* x,
                       const float* dy, float* df) {
  const PaddedImage image = Pad(pool, g, x);
  const int64_t depth = g.k_h * g.k_w * g.in_c;
  const int64_t pixels = g.batch * g.rows.out * g.cols.out;
  // A patch row is runs of the padded image: one per tap, merged where
  // taps are adjacent in memory (along a row without dilation).
  struct Run {
    int64_t from, to, len;  // image offset from the corner, patch offset
  };
  std::vector<Run> runs;
  for (int64_t kh = 0; kh < g.k_h; ++kh) {
    for (int64_t kw = 0; kw < g.k_w; ++kw) {
      const int64_t from = (kh * g.dil_h * image.w + kw * g.dil_w) * g.in_c;
      const int64_t to = (kh * g.k_w + kw) * g.in_c;
      if (!runs.empty() && runs.back().from + runs.back().len == from) {
        runs.back().len += g.in_c;
      } else {
        runs.push_back({from, to, g.in_c});
      }
    }
  }
  // Pixels are split into `groups` ranges, each summed by one thread over
  // chunks whose patches fit in cache; the groups' sums are added in order.
  const int64_t chunk =
      std::min(pixels, std::max<int64_t>(64, kPatchChunkFloats / depth));
  const int64_t groups = std::min(kPatchGroups, (pixels + chunk - 1) / chunk);
  const int64_t size = depth * g.out_c;
  // Each group's sum, transposed: [out_c, depth].
  Tensor sums(DType::kF32, Shape{groups, size});
  float* sums_data = sums.data<float>();
  pool->ParallelFor(
      groups, pixels / groups * size, [&](int64_t begin, int64_t end) {
        Tensor patch_buffer(DType::kF32, Shape{chunk, depth});
        Tensor part_buffer(DType::kF32, Shape{size});
        float* patches = patch_buffer.data<float>();
        float* part = part_buffer.data<float>();
        for (int64_t group = begin; group < end; ++group) {
          float* sum = sums_data + group * size;
          const int64_t first = pixels * group / groups;
          const int64_t last = pixels * (group + 1) / groups;
          for (int64_t p0 = first; p0 < last; p0 += chunk) {
            const int64_t rows = std::min(chunk, last - p0);
            for (int64_t i = 0; i < rows; ++i) {
              const int64_t p = p0 + i;
              const int64_t ow = p % g.cols.out;
              const int64_t oh = (p / g.cols.out) % g.rows.out;
              const int64_t n = p / (g.cols.out * g.rows.out);
              const float* corner =
                  image.data + ((n * image.h + oh * g.stride_h) * image.w +
                                ow * g.stride_w) *
                                   g.in_c;
              float* row = patches + i * depth;
              for (const Run& r : runs) {
                std::copy_n(corner + r.from, r.len, row + r.to);
              }
            }
            // dy^T x patches: the patches are the right operand, which
            // GemmF32 packs with plain copies of their rows.
            float* out = p0 == first ? sum : part;
            GemmF32(nullptr, g.out_c, depth, rows,
                    ConstMatrixF32{dy + p0 * g.out_c, 1, g.out_c},
                    ConstMatrixF32{patches, depth, 1}, out, depth);
            if (p0 != first) {
              for (int64_t i = 0; i < size; ++i) sum[i] += part[i];
            }
          }
        }
      });
  // df[k, o] = the groups' sums in order, transposed back.
  pool->ParallelFor(depth, g.out_c * groups, [&](int64_t begin, int64_t end) {
    for (int64_t k = begin; k < end; ++k) {
      float* out = df + k * g.out_c;
      for (int64_t o = 0; o < g.out_c; ++o) out[o] = sums_data[o * depth + k];
      for (int64_t group = 1; group < groups; ++group) {
        const float* from = sums_data + group * size + k;
        for (int64_t o = 0; o < g.out_c; ++o) out[o] += from[o * depth];
      }
    }
  });
}

// f64: dx[pixel] = sum over the windows covering it of dy x filters^T.
template <typename T>
void BackpropInputDirect(ThreadPool* pool, const ConvGeometry& g,
                         const T* filters, const T* dy, T* dx) {
  const int64_t image = g.in_h * g.in_w * g.in_c;
  const int64_t cost =
      g.rows.out * g.cols.out * g.k_h * g.k_w * g.in_c * g.out_c;
  pool->ParallelFor(g.batch, cost, [&](int64_t begin, int64_t end) {
    for (int64_t n = begin; n < end; ++n) {
      T* out = dx + n * image;
      std::fill_n(out, image, T(0));
      for (int64_t oh = 0; oh < g.rows.out; ++oh) {
        for (int64_t ow = 0; ow < g.cols.out; ++ow) {
          const T* d = dy + ((n * g.rows.out + oh) * g.cols.out + ow) * g.out_c;
          for (int64_t kh = 0; kh < g.k_h; ++kh) {
            const int64_t ih =
                oh * g.stride_h - g.rows.pad_begin + kh * g.dil_h;
            if (ih < 0 || ih >= g.in_h) continue;
            for (int64_t kw = 0; kw < g.k_w; ++kw) {
              const int64_t iw =
                  ow * g.stride_w - g.cols.pad_begin + kw * g.dil_w;
              if (iw < 0 || iw >= g.in_w) continue;
              T* o = out + (ih * g.in_w + iw) * g.in_c;
              const T* f = filters + (kh * g.k_w + kw) * g.in_c * g.out_c;
              for (int64_t c = 0; c < g.in_c; ++c) {
                T sum = 0;
                for (int64_t k = 0; k < g.out_c; ++k) {
                  sum += d[k] * f[c * g.out_c + k];
                }
                o[c] += sum;
              }
            }
          }
        }
      }
    }
  });
}

// f64: dfilters[tap] = sum over pixels of x under the tap x dy, one tap
// per shard unit.
template <typename T>
void BackpropFilterDirect(ThreadPool* pool, const ConvGeometry& g, const T* x,
                          const T* dy, T* df) {
  const int64_t cost = g.batch * g.rows.out * g.cols.out * g.in_c * g.out_c;
  pool->ParallelFor(g.k_h * g.k_w, cost, [&](int64_t begin, int64_t end) {
    for (int64_t tap = begin; tap < end; ++tap) {
      const int64_t kh = tap / g.k_w, kw = tap % g.k_w;
      T* out = df + tap * g.in_c * g.out_c;
      std::fill_n(out, g.in_c * g.out_c, T(0));
      for (int64_t n = 0; n < g.batch; ++n) {
        for (int64_t oh = 0; oh < g.rows.out; ++oh) {
          const int64_t ih = oh * g.stride_h - g.rows.pad_begin + kh * g.dil_h;
          if (ih < 0 || ih >= g.in_h) continue;
          for (int64_t ow = 0; ow < g.cols.out; ++ow) {
            const int64_t iw =
                ow * g.stride_w - g.cols.pad_begin + kw * g.dil_w;
            if (iw < 0 || iw >= g.in_w) continue;
            const T* in = x + ((n * g.in_h + ih) * g.in_w + iw) * g.in_c;
            const T* d =
                dy + ((n * g.rows.out + oh) * g.cols.out + ow) * g.out_c;
            for (int64_t c = 0; c < g.in_c; ++c) {
              const T v = in[c];
              T* o = out + c * g.out_c;
              for (int64_t k = 0; k < g.out_c; ++k) o[k] += v * d[k];
            }
          }
        }
      }
    }
  });
}

// conv2d_backprop_input (kFilter false) and conv2d_backprop_filter (true):
// inputs (x, filters, dy).
template <typename T, bool kFilter>
class Conv2DBackpropKernel : public ConvKernelBase {
 public:
  absl::Status Compute(OpKernelContext* ctx) override {
    const Tensor& x = ctx->input(0);
    const Tensor& f = ctx->input(1);
    const Tensor& dy = ctx->input(2);
    RN_ASSIGN_OR_RETURN(ConvGeometry g, Geometry(x, f));
    const Shape y_shape{g.batch, g.rows.out, g.cols.out, g.out_c};
    if (dy.shape() != y_shape) {
      return absl::InvalidArgumentError(
          StrCat(ctx->node().op(), ": dy ", DTypeName(dy.dtype()),
                 dy.shape().ToString(), " does not match the forward output ",
                 y_shape.ToString()));
    }
    const Tensor& like = kFilter ? f : x;
    RN_ASSIGN_OR_RETURN(Tensor * out, ctx->allocate_output(0, like.shape()));
    if (out->num_elements() == 0) return absl::OkStatus();
    if (dy.num_elements() == 0) {
      std::fill_n(EigenMutableData<T>(out), out->num_elements(),
                  EigenType<T>(0));
      return absl::OkStatus();
    }
    ThreadPool* pool = ctx->intra_op_pool();
    // The operand whose data the gradient needs: x for the filters'
    // gradient, the filters for x's.
    const Tensor& operand = kFilter ? x : f;
    auto run_f32 = [&](const float* a, const float* d, float* o) {
      if constexpr (kFilter) {
        BackpropFilterF32(pool, g, a, d, o);
      } else {
        BackpropInputF32(pool, g, a, d, o);
      }
    };
    if constexpr (std::is_same_v<T, float>) {
      run_f32(operand.data<float>(), dy.data<float>(), out->data<float>());
    } else if constexpr (std::is_same_v<AccumType<T>, float>) {
      // f16/bf16: computed in f32, rounded once at the end.
      const Eigen::ThreadPoolDevice device = EigenDevice(ctx);
      const Tensor af = ToF32<T>(device, operand), dyf = ToF32<T>(device, dy);
      Tensor outf(DType::kF32, out->shape());
      run_f32(af.data<float>(), dyf.data<float>(), outf.data<float>());
      FromF32<T>(device, outf, out);
    } else if constexpr (kFilter) {
      BackpropFilterDirect(pool, g, x.data<T>(), dy.data<T>(), out->data<T>());
    } else {
      BackpropInputDirect(pool, g, f.data<T>(), dy.data<T>(), out->data<T>());
    }
    return absl::OkStatus();
  }
};

template <typename T>
using Conv2DBackpropInput = Conv2DBackpropKernel<T, false>;
template <typename T>
using Conv2DBackpropFilter = Conv2DBackpropKernel<T, true>;

// max_pool and avg_pool. With "same" padding a window may hang over the
// edge; only its elements inside the input count (TensorFlow's rule).
// What max_pool, avg_pool and their gradients share: the `size`, `strides`
// and `padding` attributes, and where the windows fall on an input.
class PoolBase : public OpKernel {
 public:
  absl::Status Init(const Node& node) override {
    RN_ASSIGN_OR_RETURN(size_, HWAttr(node, "size", 1));
    strides_ = size_;
    if (node.attrs().contains("strides")) {
      RN_ASSIGN_OR_RETURN(strides_, HWAttr(node, "strides", 1));
    }
    RN_ASSIGN_OR_RETURN(same_, SamePadding(node));
    return absl::OkStatus();
  }

 protected:
  struct Geometry {
    int64_t batch, in_h, in_w, chans;
    Windows rows, cols;
  };
  // `x` must be NHWC; errors begin with `who`.
  absl::StatusOr<Geometry> Place(const Tensor& x, std::string_view who) const {
    if (x.rank() != 4) {
      return absl::InvalidArgumentError(
          StrCat(who, " needs an NHWC input of rank 4, got ",
                 DTypeName(x.dtype()), x.shape().ToString()));
    }
    Geometry g{x.dim(0), x.dim(1), x.dim(2), x.dim(3), {}, {}};
    RN_ASSIGN_OR_RETURN(
        g.rows, PlaceWindows(g.in_h, size_.first, strides_.first, 1, same_));
    RN_ASSIGN_OR_RETURN(
        g.cols, PlaceWindows(g.in_w, size_.second, strides_.second, 1, same_));
    return g;
  }
  // The input rows [first, second) of output row `oh`'s window (and the
  // same for columns), clipped to the input.
  std::pair<int64_t, int64_t> RowRange(const Geometry& g, int64_t oh) const {
    return Clip(oh * strides_.first - g.rows.pad_begin, size_.first, g.in_h);
  }
  std::pair<int64_t, int64_t> ColRange(const Geometry& g, int64_t ow) const {
    return Clip(ow * strides_.second - g.cols.pad_begin, size_.second, g.in_w);
  }

  std::pair<int64_t, int64_t> size_{1, 1}, strides_{1, 1};
  bool same_ = false;

 private:
  static std::pair<int64_t, int64_t> Clip(int64_t start, int64_t size,
                                          int64_t in) {
    return {std::max<int64_t>(start, 0), std::min(start + size, in)};
  }
};

template <typename T, bool kMax>
class PoolKernel : public PoolBase {
 public:
  absl::Status Compute(OpKernelContext* ctx) override {
    const Tensor& x = ctx->input(0);
    RN_ASSIGN_OR_RETURN(Geometry geo, Place(x, "pooling"));
    const auto [batch, in_h, in_w, chans, rows, cols] = geo;
    RN_ASSIGN_OR_RETURN(
        Tensor * y,
        ctx->allocate_output(0, Shape{batch, rows.out, cols.out, chans}));
    if (y->num_elements() == 0) return absl::OkStatus();
    using A = AccumType<T>;
    const EigenType<T>* in = EigenData<T>(x);
    EigenType<T>* out = EigenMutableData<T>(y);
    const int64_t cost = size_.first * size_.second * chans * 2;
    // One shard unit: a row of output pixels (n, oh).
    ctx->intra_op_pool()->ParallelFor(
        batch * rows.out, cost * cols.out, [&](int64_t begin, int64_t end) {
          std::vector<A> acc(chans);
          for (int64_t line = begin; line < end; ++line) {
            const int64_t n = line / rows.out, oh = line % rows.out;
            const auto [h_lo, h_hi] = RowRange(geo, oh);
            for (int64_t ow = 0; ow < cols.out; ++ow) {
              const auto [w_lo, w_hi] = ColRange(geo, ow);
              std::fill(acc.begin(), acc.end(),
                        kMax ? std::numeric_limits<A>::lowest() : A(0));
              for (int64_t ih = h_lo; ih < h_hi; ++ih) {
                for (int64_t iw = w_lo; iw < w_hi; ++iw) {
                  const EigenType<T>* px =
                      in + ((n * in_h + ih) * in_w + iw) * chans;
                  for (int64_t c = 0; c < chans; ++c) {
                    const A v = static_cast<A>(px[c]);
                    if constexpr (kMax) {
                      acc[c] = v > acc[c] ? v : acc[c];
                    } else {
                      acc[c] += v;
                    }
                  }
                }
              }
              EigenType<T>* o =
                  out + ((n * rows.out + oh) * cols.out + ow) * chans;
              const A count = static_cast<A>((h_hi - h_lo) * (w_hi - w_lo));
              for (int64_t c = 0; c < chans; ++c) {
                o[c] =
                    static_cast<EigenType<T>>(kMax ? acc[c] : acc[c] / count);
              }
            }
          }
        });
    return absl::OkStatus();
  }
};

// max_pool_grad (x, y, dy) and avg_pool_grad (x, dy), one image per shard
// unit: overlapping windows of an image add up in order, in AccumType<T>.
template <typename T, bool kMax>
class PoolGradKernel : public PoolBase {
 public:
  absl::Status Compute(OpKernelContext* ctx) override {
    const Tensor& x = ctx->input(0);
    const Tensor& dy = ctx->input(ctx->num_inputs() - 1);
    RN_ASSIGN_OR_RETURN(Geometry geo, Place(x, StrCat(ctx->node().op(), ":")));
    const auto [batch, in_h, in_w, chans, rows, cols] = geo;
    const Shape y_shape{batch, rows.out, cols.out, chans};
    if (dy.shape() != y_shape) {
      return absl::InvalidArgumentError(
          StrCat(ctx->node().op(), ": dy ", DTypeName(dy.dtype()),
                 dy.shape().ToString(), " does not match the forward output ",
                 y_shape.ToString()));
    }
    RN_ASSIGN_OR_RETURN(Tensor * dx, ctx->allocate_output(0, x.shape()));
    if (dx->num_elements() == 0) return absl::OkStatus();
    using A = AccumType<T>;
    const EigenType<T>* in = EigenData<T>(x);
    const EigenType<T>* grad = EigenData<T>(dy);
    EigenType<T>* out = EigenMutableData<T>(dx);
    const int64_t image = in_h * in_w * chans;
    const int64_t cost =
        rows.out * cols.out * size_.first * size_.second * chans * 2 + image;
    ctx->intra_op_pool()->ParallelFor(
        batch, cost, [&](int64_t begin, int64_t end) {
          // f32 and f64 accumulate in the output itself, the 16-bit floats
          // in f32.
          constexpr bool kInPlace = std::is_same_v<A, EigenType<T>>;
          std::vector<A> scratch(kInPlace ? 0 : image);
          std::vector<A> best(chans), done(chans);
          for (int64_t n = begin; n < end; ++n) {
            A* acc = scratch.data();
            if constexpr (kInPlace) acc = out + n * image;
            std::fill_n(acc, image, A(0));
            for (int64_t oh = 0; oh < rows.out; ++oh) {
              const auto [h_lo, h_hi] = RowRange(geo, oh);
              for (int64_t ow = 0; ow < cols.out; ++ow) {
                const auto [w_lo, w_hi] = ColRange(geo, ow);
                if (h_lo >= h_hi || w_lo >= w_hi) continue;
                const EigenType<T>* g =
                    grad + ((n * rows.out + oh) * cols.out + ow) * chans;
                if constexpr (kMax) {
                  // The maximum as max_pool computes it, then the first
                  // element equal to it takes dy: the first one greater
                  // than all before it. Both loops vectorise over channels.
                  A* __restrict b = best.data();
                  A* __restrict d = done.data();
                  std::fill_n(b, chans, std::numeric_limits<A>::lowest());
                  for (int64_t ih = h_lo; ih < h_hi; ++ih) {
                    for (int64_t iw = w_lo; iw < w_hi; ++iw) {
                      const EigenType<T>* __restrict px =
                          in + ((n * in_h + ih) * in_w + iw) * chans;
                      for (int64_t c = 0; c < chans; ++c) {
                        const A v = static_cast<A>(px[c]);
                        b[c] = v > b[c] ? v : b[c];
                      }
                    }
                  }
                  std::fill_n(d, chans, A(0));
                  for (int64_t ih = h_lo; ih < h_hi; ++ih) {
                    for (int64_t iw = w_lo; iw < w_hi; ++iw) {
                      const EigenType<T>* __restrict px =
                          in + ((n * in_h + ih) * in_w + iw) * chans;
                      A* __restrict a = acc + (ih * in_w + iw) * chans;
                      for (int64_t c = 0; c < chans; ++c) {
                        // Selects and arithmetic on 0 and 1 rather than
                        // `&&`, so that GCC vectorises this.
                        const A eq =
                            static_cast<A>(px[c]) == b[c] ? A(1) : A(0);
                        const A hit = eq * (A(1) - d[c]);
                        a[c] += hit > A(0.5) ? static_cast<A>(g[c]) : A(0);
                        d[c] += hit;
                      }
                    }
                  }
                  // A window of NaNs and -inf pools to the lowest value;
                  // its gradient goes to the window's first element.
                  A* first = acc + (h_lo * in_w + w_lo) * chans;
                  for (int64_t c = 0; c < chans; ++c) {
                    if (d[c] == A(0)) first[c] += static_cast<A>(g[c]);
                  }
                } else {
                  const A count = static_cast<A>((h_hi - h_lo) * (w_hi - w_lo));
                  for (int64_t c = 0; c < chans; ++c) {
                    best[c] = static_cast<A>(g[c]) / count;
                  }
                  for (int64_t ih = h_lo; ih < h_hi; ++ih) {
                    for (int64_t iw = w_lo; iw < w_hi; ++iw) {
                      A* a = acc + (ih * in_w + iw) * chans;
                      for (int64_t c = 0; c < chans; ++c) a[c] += best[c];
                    }
                  }
                }
              }
            }
            if constexpr (!kInPlace) {
              EigenType<T>* o = out + n * image;
              for (int64_t i = 0; i < image; ++i) {
                o[i] = static_cast<EigenType<T>>(acc[i]);
              }
            }
          }
        });
    return absl::OkStatus();
  }
};

template <typename T>
using MaxPoolGrad = PoolGradKernel<T, true>;
template <typename T>
using AvgPoolGrad = PoolGradKernel<T, false>;

template <typename T>
using MaxPool = PoolKernel<T, true>;
template <typename T>
using AvgPool = PoolKernel<T, false>;

RUNNEL_STATIC_INIT(ConvKernels) {
  RegisterKernelForTypes<Conv2DKernel, Half, BFloat16, float, double>("conv2d");
  RegisterKernelForTypes<MaxPool, Half, BFloat16, float, double, int32_t,
                         int64_t>("max_pool");
  RegisterKernelForTypes<AvgPool, Half, BFloat16, float, double>("avg_pool");
  RegisterKernelForTypes<Conv2DBackpropInput, Half, BFloat16, float, double>(
      "conv2d_backprop_input");
  RegisterKernelForTypes<Conv2DBackpropFilter, Half, BFloat16, float, double>(
      "conv2d_backprop_filter");
  RegisterKernelForTypes<MaxPoolGrad, Half, BFloat16, float, double>(
      "max_pool_grad");
  RegisterKernelForTypes<AvgPoolGrad, Half, BFloat16, float, double>(
      "avg_pool_grad");
}

}  // namespace
}  // namespace runnel
