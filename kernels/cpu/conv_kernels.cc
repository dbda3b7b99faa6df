// Kernels of conv2d, max_pool and avg_pool (runtime/ops/nn_ops.cc), NHWC.
//
// conv2d in f32 is one GEMM: rows are output pixels (n, oh, ow), the depth
// is (kh, kw, c) and columns are output channels, so the HWIO filters are
// the right operand as stored and the product lands in NHWC order. The left
// operand (im2col) is never materialised: GemmF32 asks for 6-row panels of
// it and PackPatches copies them straight from the image, zeros for padding.
// The 16-bit floats are converted to f32 around the same GEMM; f64 uses a
// direct loop.
#include <algorithm>
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
  RN_ASSIGN_OR_RETURN(std::string p, node.attr<std::string>("padding"));
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

// Packs rows [row, row + 6) of the virtual im2col matrix, depth range
// [col, col + depth), as out[p * 6 + r].
void PackPatches(const ConvGeometry& g, const float* x, int64_t row,
                 int64_t col, int64_t depth, float* out) {
  constexpr int kRows = kGemmLhsPanelRows;
  const int64_t m = g.batch * g.rows.out * g.cols.out;
  // (kh, kw, c) of depth index `col`; the walk below keeps them current.
  const int64_t c0 = col % g.in_c;
  const int64_t kw0 = (col / g.in_c) % g.k_w;
  const int64_t kh0 = col / (g.in_c * g.k_w);
  const int64_t ow0 = row % g.cols.out;
  if (row + kRows <= m && ow0 + kRows <= g.cols.out) {
    // The usual case: six neighbouring pixels of one output row. For each
    // tap, pixel r reads the image stride_w * in_c floats after pixel r - 1,
    // so the six values of one depth index are one strided load each and
    // land contiguously in `out`.
    const int64_t oh = (row / g.cols.out) % g.rows.out;
    const int64_t n = row / (g.cols.out * g.rows.out);
    const float* image = x + n * g.in_h * g.in_w * g.in_c;
    const int64_t ih0 = oh * g.stride_h - g.rows.pad_begin;
    const int64_t iw0 = ow0 * g.stride_w - g.cols.pad_begin;
    const int64_t step = g.stride_w * g.in_c;
    int64_t c = c0, kw = kw0, kh = kh0;
    for (int64_t p = 0; p < depth;) {
      const int64_t run = std::min(g.in_c - c, depth - p);
      const int64_t ih = ih0 + kh * g.dil_h;
      const int64_t iw = iw0 + kw * g.dil_w;  // pixel 0's column
      float* o = out + p * kRows;
      if (ih < 0 || ih >= g.in_h) {
        std::fill_n(o, run * kRows, 0.0f);
      } else if (iw >= 0 && iw + (kRows - 1) * g.stride_w < g.in_w) {
        const float* src = image + (ih * g.in_w + iw) * g.in_c + c;
        for (int64_t t = 0; t < run; ++t, o += kRows) {
          for (int r = 0; r < kRows; ++r) o[r] = src[t + r * step];
        }
      } else {
        for (int64_t t = 0; t < run; ++t, o += kRows) {
          for (int r = 0; r < kRows; ++r) {
            const int64_t w = iw + r * g.stride_w;
            o[r] = w >= 0 && w < g.in_w
                       ? image[(ih * g.in_w + w) * g.in_c + c + t]
                       : 0.0f;
          }
        }
      }
      p += run;
      c = 0;
      if (++kw == g.k_w) {
        kw = 0;
        ++kh;
      }
    }
    return;
  }
  // Rows spanning output rows or images, or past the end: one at a time.
  for (int r = 0; r < kRows; ++r) {
    const int64_t pixel = row + r;
    if (pixel >= m) {
      for (int64_t p = 0; p < depth; ++p) out[p * kRows + r] = 0;
      continue;
    }
    const int64_t ow = pixel % g.cols.out;
    const int64_t oh = (pixel / g.cols.out) % g.rows.out;
    const int64_t n = pixel / (g.cols.out * g.rows.out);
    const int64_t ih0 = oh * g.stride_h - g.rows.pad_begin;
    const int64_t iw0 = ow * g.stride_w - g.cols.pad_begin;
    const float* image = x + n * g.in_h * g.in_w * g.in_c;
    int64_t c = c0, kw = kw0, kh = kh0;
    float* o = out + r;
    for (int64_t p = 0; p < depth;) {
      const int64_t run = std::min(g.in_c - c, depth - p);
      const int64_t ih = ih0 + kh * g.dil_h, iw = iw0 + kw * g.dil_w;
      if (ih >= 0 && ih < g.in_h && iw >= 0 && iw < g.in_w) {
        const float* src = image + (ih * g.in_w + iw) * g.in_c + c;
        for (int64_t t = 0; t < run; ++t) o[t * kRows] = src[t];
      } else {
        for (int64_t t = 0; t < run; ++t) o[t * kRows] = 0;
      }
      o += run * kRows;
      p += run;
      c = 0;
      if (++kw == g.k_w) {
        kw = 0;
        ++kh;
      }
    }
  }
}

void ConvF32(ThreadPool* pool, const ConvGeometry& g, const float* x,
             const float* filters, float* y) {
  const int64_t m = g.batch * g.rows.out * g.cols.out;
  const int64_t k = g.k_h * g.k_w * g.in_c;
  const ConstMatrixF32 b{filters, g.out_c, 1};
  const bool pointwise = g.k_h == 1 && g.k_w == 1 && g.stride_h == 1 &&
                         g.stride_w == 1 && g.rows.pad_begin == 0 &&
                         g.cols.pad_begin == 0;
  if (pointwise) {
    // A 1x1 convolution is a product with the image as stored.
    GemmF32(pool, m, g.out_c, k, ConstMatrixF32{x, g.in_c, 1}, b, y, g.out_c);
    return;
  }
  GemmF32(
      pool, m, g.out_c, k,
      [&g, x](int64_t row, int64_t col, int64_t depth, float* out) {
        PackPatches(g, x, row, col, depth, out);
      },
      b, y, g.out_c);
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

// Converts a tensor of 16-bit floats to f32 (or back) on the Eigen device.
template <typename From, typename To>
void Convert(const Eigen::ThreadPoolDevice& device, const From* from, To* to,
             int64_t n) {
  Eigen::TensorMap<Eigen::Tensor<const From, 1>> in(from, n);
  Eigen::TensorMap<Eigen::Tensor<To, 1>> out(to, n);
  out.device(device) = in.template cast<To>();
}

template <typename T>
class Conv2DKernel : public OpKernel {
 public:
  absl::Status Init(const Node& node) override {
    RN_ASSIGN_OR_RETURN(strides_, HWAttr(node, "strides", 1));
    RN_ASSIGN_OR_RETURN(dilations_, HWAttr(node, "dilations", 1));
    RN_ASSIGN_OR_RETURN(same_, SamePadding(node));
    return absl::OkStatus();
  }

  absl::Status Compute(OpKernelContext* ctx) override {
    const Tensor& x = ctx->input(0);
    const Tensor& f = ctx->input(1);
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
    std::tie(g.stride_h, g.stride_w) = strides_;
    std::tie(g.dil_h, g.dil_w) = dilations_;
    RN_ASSIGN_OR_RETURN(
        g.rows, PlaceWindows(g.in_h, g.k_h, g.stride_h, g.dil_h, same_));
    RN_ASSIGN_OR_RETURN(
        g.cols, PlaceWindows(g.in_w, g.k_w, g.stride_w, g.dil_w, same_));
    RN_ASSIGN_OR_RETURN(
        Tensor * y, ctx->allocate_output(
                        0, Shape{g.batch, g.rows.out, g.cols.out, g.out_c}));
    if (y->num_elements() == 0) return absl::OkStatus();
    ThreadPool* pool = ctx->intra_op_pool();
    if constexpr (std::is_same_v<T, float>) {
      ConvF32(pool, g, x.data<float>(), f.data<float>(), y->data<float>());
    } else if constexpr (std::is_same_v<AccumType<T>, float>) {
      const Eigen::ThreadPoolDevice device = EigenDevice(ctx);
      Tensor xf(DType::kF32, x.shape()), ff(DType::kF32, f.shape());
      Tensor yf(DType::kF32, y->shape());
      Convert(device, EigenData<T>(x), xf.data<float>(), x.num_elements());
      Convert(device, EigenData<T>(f), ff.data<float>(), f.num_elements());
      ConvF32(pool, g, xf.data<float>(), ff.data<float>(), yf.data<float>());
      Convert(device, static_cast<const float*>(yf.data<float>()),
              EigenMutableData<T>(y), y->num_elements());
    } else {
      ConvDirect(pool, g, x.data<T>(), f.data<T>(), y->data<T>());
    }
    return absl::OkStatus();
  }

 private:
  std::pair<int64_t, int64_t> strides_{1, 1}, dilations_{1, 1};
  bool same_ = true;
};

// max_pool and avg_pool. With "same" padding a window may hang over the
// edge; only its elements inside the input count (TensorFlow's rule).
template <typename T, bool kMax>
class PoolKernel : public OpKernel {
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

  absl::Status Compute(OpKernelContext* ctx) override {
    const Tensor& x = ctx->input(0);
    if (x.rank() != 4) {
      return absl::InvalidArgumentError(
          StrCat("pooling needs an NHWC input of rank 4, got ",
                 DTypeName(x.dtype()), x.shape().ToString()));
    }
    const int64_t batch = x.dim(0), in_h = x.dim(1), in_w = x.dim(2),
                  chans = x.dim(3);
    RN_ASSIGN_OR_RETURN(Windows rows, PlaceWindows(in_h, size_.first,
                                                   strides_.first, 1, same_));
    RN_ASSIGN_OR_RETURN(Windows cols, PlaceWindows(in_w, size_.second,
                                                   strides_.second, 1, same_));
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
            const int64_t h0 = oh * strides_.first - rows.pad_begin;
            const int64_t h_lo = std::max<int64_t>(h0, 0);
            const int64_t h_hi = std::min(h0 + size_.first, in_h);
            for (int64_t ow = 0; ow < cols.out; ++ow) {
              const int64_t w0 = ow * strides_.second - cols.pad_begin;
              const int64_t w_lo = std::max<int64_t>(w0, 0);
              const int64_t w_hi = std::min(w0 + size_.second, in_w);
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

 private:
  std::pair<int64_t, int64_t> size_{1, 1}, strides_{1, 1};
  bool same_ = false;
};

template <typename T>
using MaxPool = PoolKernel<T, true>;
template <typename T>
using AvgPool = PoolKernel<T, false>;

RUNNEL_STATIC_INIT(ConvKernels) {
  RegisterKernelForTypes<Conv2DKernel, Half, BFloat16, float, double>("conv2d");
  RegisterKernelForTypes<MaxPool, Half, BFloat16, float, double, int32_t,
                         int64_t>("max_pool");
  RegisterKernelForTypes<AvgPool, Half, BFloat16, float, double>("avg_pool");
}

}  // namespace
}  // namespace runnel
