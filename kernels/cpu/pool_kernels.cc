// Kernels of max_pool and avg_pool and of their gradients
// (framework/ops/nn_ops.cc), NHWC, and of the 3-D pools, NDHWC (a 2-D pool
// is a 3-D one of depth 1): direct loops over the windows
// (framework/window.h places them), computed in f32 for the 16-bit floats.
#include <algorithm>
#include <limits>
#include <string>
#include <vector>

#include "base/strings.h"
#include "framework/window.h"
#include "kernels/cpu/eigen_support.h"

namespace runnel {
namespace {

// max_pool and avg_pool. With "same" padding a window may hang over the
// edge; only its elements inside the input count (TensorFlow's rule).
// What max_pool, avg_pool and their gradients share: the `size`, `strides`
// and `padding` attributes, and where the windows fall on an input.
class PoolBase : public OpKernel {
 public:
  absl::Status Init(const Node& node) override {
    RN_ASSIGN_OR_RETURN(attrs_,
                        ReadPoolAttrs(node.attrs(), WindowRank(node.op())));
    return absl::OkStatus();
  }

 protected:
  using Geometry = PoolWindows;
  // `x` must be NHWC; errors begin with `who`.
  absl::StatusOr<Geometry> Place(const Tensor& x, std::string_view who) const {
    return PlacePoolWindows(x.dtype(), x.shape(), attrs_, who);
  }
  // The input rows output row `oh`'s window reads (and the same for
  // depths and columns), those inside the input.
  Taps DepthTaps(const Geometry& g, int64_t od) const {
    return WindowTaps(od, attrs_.strides.d, g.depths.pad_begin, attrs_.size.d,
                      attrs_.dilations.d, g.in_d);
  }
  Taps RowTaps(const Geometry& g, int64_t oh) const {
    return WindowTaps(oh, attrs_.strides.h, g.rows.pad_begin, attrs_.size.h,
                      attrs_.dilations.h, g.in_h);
  }
  // Calls f(offset) for the offsets, in pixels of an image of `g`, of a
  // window's taps, (d, h, w) row-major.
  template <typename F>
  static void ForEachTap(const Geometry& g, const Taps& dt, const Taps& rt,
                         const Taps& ct, const F& f) {
    for (int64_t k = 0, id = dt.first; k < dt.count; ++k, id += dt.step) {
      for (int64_t i = 0, ih = rt.first; i < rt.count; ++i, ih += rt.step) {
        for (int64_t j = 0, iw = ct.first; j < ct.count; ++j, iw += ct.step) {
          f((id * g.in_h + ih) * g.in_w + iw);
        }
      }
    }
  }
  Taps ColTaps(const Geometry& g, int64_t ow) const {
    return WindowTaps(ow, attrs_.strides.w, g.cols.pad_begin, attrs_.size.w,
                      attrs_.dilations.w, g.in_w);
  }

  // Whether the windows tile each image, each element in exactly one.
  bool TilesImage(const Geometry& g) const {
    auto tiles = [](int64_t in, const Windows& w, int64_t size, int64_t stride,
                    int64_t dilation) {
      return stride == size && dilation == 1 && w.pad_begin == 0 &&
             in == w.out * size;
    };
    return tiles(g.in_d, g.depths, attrs_.size.d, attrs_.strides.d,
                 attrs_.dilations.d) &&
           tiles(g.in_h, g.rows, attrs_.size.h, attrs_.strides.h,
                 attrs_.dilations.h) &&
           tiles(g.in_w, g.cols, attrs_.size.w, attrs_.strides.w,
                 attrs_.dilations.w);
  }

  PoolAttrs attrs_;
};

// With kArgmax (max_pool_with_argmax), output 1 gets each maximum's
// position in its image, (h * in_w + w) * chans + c (TensorFlow's
// max_pool_with_argmax without the batch): the first tap equal to the
// maximum, the window's first tap when none is (NaN and -inf only), -1 for
// a window wholly outside the input.
template <typename T, bool kMax, bool kArgmax = false>
class PoolKernel : public PoolBase {
 public:
  absl::Status Compute(OpKernelContext* ctx) override {
    const Tensor& x = ctx->input(0);
    RN_ASSIGN_OR_RETURN(Geometry geo, Place(x, "pooling"));
    const int64_t in_w = geo.in_w, chans = geo.chans;
    const int64_t image_size = geo.in_d * geo.in_h * in_w * chans;
    const Windows depths = geo.depths, rows = geo.rows, cols = geo.cols;
    RN_ASSIGN_OR_RETURN(Tensor * y, ctx->allocate_output(0, geo.y()));
    int64_t* argmax = nullptr;
    if constexpr (kArgmax) {
      RN_ASSIGN_OR_RETURN(Tensor * a, ctx->allocate_output(1, y->shape()));
      argmax = a->data<int64_t>();
    }
    if (y->num_elements() == 0) return absl::OkStatus();
    using A = AccumType<T>;
    const EigenType<T>* in = EigenData<T>(x);
    EigenType<T>* out = EigenMutableData<T>(y);
    // Windows 2 x 2, 2 apart, tiling each image (the max pool after most
    // convolutions): the window's shape fixed when compiled; the general
    // loop's arithmetic, the taps in its order. A row of windows (of an
    // image's plane) reads input rows 2 line and 2 line + 1.
    if constexpr (kMax && !kArgmax) {
      if (attrs_.size.d == 1 && attrs_.size.h == 2 && attrs_.size.w == 2 &&
          TilesImage(geo)) {
        const int64_t row = in_w * chans;
        ctx->intra_op_pool()->ParallelFor(
            geo.batch * depths.out * rows.out, 8 * chans * cols.out,
            [&](int64_t begin, int64_t end) {
              for (int64_t line = begin; line < end; ++line) {
                for (int64_t ow = 0; ow < cols.out; ++ow) {
                  const EigenType<T>* __restrict p =
                      in + 2 * line * row + 2 * ow * chans;
                  const EigenType<T>* __restrict q = p + row;
                  EigenType<T>* __restrict o =
                      out + (line * cols.out + ow) * chans;
                  for (int64_t c = 0; c < chans; ++c) {
                    A m = std::numeric_limits<A>::lowest();
                    for (A v :
                         {static_cast<A>(p[c]), static_cast<A>(p[chans + c]),
                          static_cast<A>(q[c]), static_cast<A>(q[chans + c])}) {
                      m = v > m ? v : m;
                    }
                    o[c] = static_cast<EigenType<T>>(m);
                  }
                }
              }
            });
        return absl::OkStatus();
      }
    }
    const int64_t cost =
        attrs_.size.d * attrs_.size.h * attrs_.size.w * chans * 2;
    // One shard unit: a row of output pixels (n, od, oh).
    ctx->intra_op_pool()->ParallelFor(
        geo.batch * depths.out * rows.out, cost * cols.out,
        [&](int64_t begin, int64_t end) {
          std::vector<A> acc(chans);
          std::vector<int64_t> at(kArgmax ? chans : 0);
          for (int64_t line = begin; line < end; ++line) {
            const int64_t oh = line % rows.out,
                          od = (line / rows.out) % depths.out,
                          n = line / (rows.out * depths.out);
            const Taps dt = DepthTaps(geo, od), rt = RowTaps(geo, oh);
            for (int64_t ow = 0; ow < cols.out; ++ow) {
              const Taps ct = ColTaps(geo, ow);
              std::fill(acc.begin(), acc.end(),
                        kMax ? std::numeric_limits<A>::lowest() : A(0));
              if constexpr (kArgmax) {
                const bool empty = rt.count == 0 || ct.count == 0;
                for (int64_t c = 0; c < chans; ++c) {
                  at[c] = empty ? -1 : (rt.first * in_w + ct.first) * chans + c;
                }
              }
              const EigenType<T>* image = in + n * image_size;
              ForEachTap(geo, dt, rt, ct, [&](int64_t p) {
                const EigenType<T>* px = image + p * chans;
                for (int64_t c = 0; c < chans; ++c) {
                  const A v = static_cast<A>(px[c]);
                  if constexpr (kArgmax) {
                    if (v > acc[c]) at[c] = p * chans + c;
                  }
                  if constexpr (kMax) {
                    acc[c] = v > acc[c] ? v : acc[c];
                  } else {
                    acc[c] += v;
                  }
                }
              });
              const int64_t pixel = line * cols.out + ow;
              EigenType<T>* o = out + pixel * chans;
              const A count = static_cast<A>(dt.count * rt.count * ct.count);
              for (int64_t c = 0; c < chans; ++c) {
                o[c] =
                    static_cast<EigenType<T>>(kMax ? acc[c] : acc[c] / count);
              }
              if constexpr (kArgmax) {
                std::copy(at.begin(), at.end(), argmax + pixel * chans);
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
    const int64_t in_h = geo.in_h, in_w = geo.in_w, chans = geo.chans;
    const Windows depths = geo.depths, rows = geo.rows, cols = geo.cols;
    RN_RETURN_IF_ERROR(
        CheckWindowsDy(ctx->node().op(), dy.dtype(), dy.shape(), geo.y()));
    if constexpr (kMax) {
      const Tensor& y = ctx->input(1);
      if (y.dtype() != x.dtype()) {
        return absl::InvalidArgumentError(
            StrCat(ctx->node().op(), ": y is ", DTypeName(y.dtype()), ", x is ",
                   DTypeName(x.dtype())));
      }
      RN_RETURN_IF_ERROR(
          CheckWindowsDy(ctx->node().op(), y.dtype(), y.shape(), geo.y(), "y"));
    }
    RN_ASSIGN_OR_RETURN(Tensor * dx, ctx->allocate_output(0, x.shape()));
    if (dx->num_elements() == 0) return absl::OkStatus();
    using A = AccumType<T>;
    const EigenType<T>* in = EigenData<T>(x);
    const EigenType<T>* grad = EigenData<T>(dy);
    EigenType<T>* out = EigenMutableData<T>(dx);
    // f32 and f64 take each window's maximum from y, max_pool's output,
    // instead of finding it again: the same value (the same comparisons
    // made it). The 16-bit floats find it again in f32: y holds it
    // rounded (a window of NaN and -inf pools to f32's lowest, -inf in
    // f16).
    constexpr bool kFromY = kMax && std::is_same_v<A, EigenType<T>>;
    const EigenType<T>* maxima = kMax ? EigenData<T>(ctx->input(1)) : nullptr;
    const int64_t image = geo.in_d * in_h * in_w * chans;
    const int64_t window = attrs_.size.d * attrs_.size.h * attrs_.size.w;
    const int64_t cost =
        depths.out * rows.out * cols.out * window * chans * 2 + image;
    // Whether the windows tile the image, each element in exactly one
    // (2 x 2 windows 2 apart on an even image): then each element's
    // gradient is written once, with no zeroing first and no sum.
    const bool tiled = kMax && TilesImage(geo);
    ctx->intra_op_pool()->ParallelFor(
        geo.batch, cost, [&](int64_t begin, int64_t end) {
          // f32 and f64 accumulate in the output itself, the 16-bit floats
          // in f32.
          constexpr bool kInPlace = std::is_same_v<A, EigenType<T>>;
          std::vector<A> scratch(kInPlace ? 0 : image);
          std::vector<A> best(chans), done(chans);
          for (int64_t n = begin; n < end; ++n) {
            A* acc = scratch.data();
            if constexpr (kInPlace) acc = out + n * image;
            if (!tiled) std::fill_n(acc, image, A(0));
            const EigenType<T>* x_n = in + n * image;
            auto each_tap = [&](const Taps& dt, const Taps& rt, const Taps& ct,
                                const auto& f) {
              ForEachTap(geo, dt, rt, ct, [&](int64_t p) { f(p * chans); });
            };
            for (int64_t od = 0; od < depths.out; ++od) {
              const Taps dt = DepthTaps(geo, od);
              for (int64_t oh = 0; oh < rows.out; ++oh) {
                const Taps rt = RowTaps(geo, oh);
                for (int64_t ow = 0; ow < cols.out; ++ow) {
                  const Taps ct = ColTaps(geo, ow);
                  if (dt.count == 0 || rt.count == 0 || ct.count == 0) continue;
                  const int64_t at_y =
                      (((n * depths.out + od) * rows.out + oh) * cols.out +
                       ow) *
                      chans;
                  const EigenType<T>* g = grad + at_y;
                  if constexpr (kMax) {
                    // The maximum as max_pool computes it, then the first
                    // element equal to it takes dy: the first one greater
                    // than all before it. The loops vectorise over
                    // channels.
                    A* __restrict b = best.data();
                    A* __restrict d = done.data();
                    if constexpr (kFromY) {
                      std::copy_n(maxima + at_y, chans, b);
                    } else {
                      std::fill_n(b, chans, std::numeric_limits<A>::lowest());
                      each_tap(dt, rt, ct, [&](int64_t at) {
                        const EigenType<T>* __restrict px = x_n + at;
                        for (int64_t c = 0; c < chans; ++c) {
                          const A v = static_cast<A>(px[c]);
                          b[c] = v > b[c] ? v : b[c];
                        }
                      });
                    }
                    std::fill_n(d, chans, A(0));
                    each_tap(dt, rt, ct, [&](int64_t at) {
                      const EigenType<T>* __restrict px = x_n + at;
                      A* __restrict a = acc + at;
                      // Selects and arithmetic on 0 and 1 rather than `&&`
                      // and branches, so that GCC vectorises these.
                      auto hit = [&](int64_t c) {
                        const A eq =
                            static_cast<A>(px[c]) == b[c] ? A(1) : A(0);
                        const A h = eq * (A(1) - d[c]);
                        d[c] += h;
                        return h > A(0.5) ? static_cast<A>(g[c]) : A(0);
                      };
                      if (tiled) {
                        for (int64_t c = 0; c < chans; ++c) a[c] = hit(c);
                      } else {
                        for (int64_t c = 0; c < chans; ++c) a[c] += hit(c);
                      }
                    });
                    // A window of NaNs and -inf pools to the lowest value;
                    // its gradient goes to the window's first element.
                    A* first =
                        acc + ((dt.first * in_h + rt.first) * in_w + ct.first) *
                                  chans;
                    for (int64_t c = 0; c < chans; ++c) {
                      first[c] += d[c] < A(0.5) ? static_cast<A>(g[c]) : A(0);
                    }
                  } else {
                    const A count =
                        static_cast<A>(dt.count * rt.count * ct.count);
                    for (int64_t c = 0; c < chans; ++c) {
                      best[c] = static_cast<A>(g[c]) / count;
                    }
                    each_tap(dt, rt, ct, [&](int64_t at) {
                      A* a = acc + at;
                      for (int64_t c = 0; c < chans; ++c) a[c] += best[c];
                    });
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
template <typename T>
using MaxPoolWithArgmax = PoolKernel<T, true, true>;

RUNNEL_STATIC_INIT(PoolKernels) {
  for (const char* d : {"", "3d"}) {
    RegisterKernelForTypes<MaxPool, Half, BFloat16, float, double, int32_t,
                           int64_t>(StrCat("max_pool", d));
    RegisterKernelForTypes<AvgPool, Half, BFloat16, float, double>(
        StrCat("avg_pool", d));
    RegisterKernelForTypes<MaxPoolGrad, Half, BFloat16, float, double>(
        StrCat("max_pool", d, "_grad"));
    RegisterKernelForTypes<AvgPoolGrad, Half, BFloat16, float, double>(
        StrCat("avg_pool", d, "_grad"));
  }
  RegisterKernelForTypes<MaxPoolWithArgmax, Half, BFloat16, float, double,
                         int32_t, int64_t>("max_pool_with_argmax");
}

}  // namespace
}  // namespace runnel
