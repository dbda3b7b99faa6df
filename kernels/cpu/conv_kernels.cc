// Kernels of conv2d and its gradients (framework/ops/nn_ops.cc), NHWC, and
// of conv3d and its gradients, NDHWC: one geometry serves both, a 2-D
// convolution being a 3-D one of depth 1. The pooling kernels are in
// pool_kernels.cc.
//
// conv2d and its two gradients in f32 run on oneDNN (onednn.h), which
// measured about twice as fast here as the hand-written implicit GEMM it
// replaced (bench/ops_bench). The 16-bit floats are converted to f32 around
// it; f64 uses direct loops.
#include <algorithm>
#include <limits>
#include <string>
#include <vector>

#include "base/strings.h"
#include "framework/window.h"
#include "kernels/cpu/eigen_support.h"
#include "kernels/cpu/onednn.h"

namespace runnel {
namespace {

// Everything a convolution needs to know about its operands. conv2d's is
// conv3d's with one input and output depth and a filter of depth 1.
struct ConvGeometry {
  int spatial = 2;  // 3 for conv3d
  int64_t batch, in_d, in_h, in_w, in_c;
  int64_t k_d, k_h, k_w, out_c;
  int64_t stride_d, stride_h, stride_w, dil_d, dil_h, dil_w;
  Windows depths, rows, cols;  // output depth, height and width placement

  int64_t in_pixels() const { return in_d * in_h * in_w; }
  int64_t out_pixels() const { return depths.out * rows.out * cols.out; }
  int64_t taps() const { return k_d * k_h * k_w; }
  // The output's shape: NHWC, or NDHWC for conv3d.
  Shape y() const {
    return spatial == 3 ? Shape{batch, depths.out, rows.out, cols.out, out_c}
                        : Shape{batch, rows.out, cols.out, out_c};
  }
};

// The geometry of conv2d(x, f) (NHWC x, HWIO f) or of conv3d(x, f) (NDHWC
// x, DHWIO f).
absl::StatusOr<ConvGeometry> MakeGeometry(const Tensor& x, const Tensor& f,
                                          const ConvAttrs& attrs) {
  RN_ASSIGN_OR_RETURN(const ConvWindows windows,
                      PlaceConvWindows(x.dtype(), x.shape(), f.shape(), attrs));
  const bool three = attrs.spatial == 3;
  const int s = three ? 1 : 0;
  ConvGeometry g;
  g.spatial = attrs.spatial;
  g.batch = x.dim(0);
  g.in_d = three ? x.dim(1) : 1;
  g.in_h = x.dim(1 + s);
  g.in_w = x.dim(2 + s);
  g.in_c = x.dim(3 + s);
  g.k_d = three ? f.dim(0) : 1;
  g.k_h = f.dim(s);
  g.k_w = f.dim(1 + s);
  g.out_c = f.dim(3 + s);
  g.stride_d = attrs.strides.d;
  g.stride_h = attrs.strides.h;
  g.stride_w = attrs.strides.w;
  g.dil_d = attrs.dilations.d;
  g.dil_h = attrs.dilations.h;
  g.dil_w = attrs.dilations.w;
  g.depths = windows.depths;
  g.rows = windows.rows;
  g.cols = windows.cols;
  return g;
}

// Calls visit(input pixel, tap) for the taps of output pixel (od, oh, ow)
// of an image that fall inside it; pixels and taps are counted row-major
// over (d, h, w).
template <typename Visit>
void ForEachTap(const ConvGeometry& g, int64_t od, int64_t oh, int64_t ow,
                const Visit& visit) {
  for (int64_t kd = 0; kd < g.k_d; ++kd) {
    const int64_t id = od * g.stride_d - g.depths.pad_begin + kd * g.dil_d;
    if (id < 0 || id >= g.in_d) continue;
    for (int64_t kh = 0; kh < g.k_h; ++kh) {
      const int64_t ih = oh * g.stride_h - g.rows.pad_begin + kh * g.dil_h;
      if (ih < 0 || ih >= g.in_h) continue;
      for (int64_t kw = 0; kw < g.k_w; ++kw) {
        const int64_t iw = ow * g.stride_w - g.cols.pad_begin + kw * g.dil_w;
        if (iw < 0 || iw >= g.in_w) continue;
        visit((id * g.in_h + ih) * g.in_w + iw, (kd * g.k_h + kh) * g.k_w + kw);
      }
    }
  }
}

// Output pixel `p` of an image as (od, oh, ow).
struct OutPixel {
  OutPixel(const ConvGeometry& g, int64_t p)
      : od(p / (g.rows.out * g.cols.out)),
        oh((p / g.cols.out) % g.rows.out),
        ow(p % g.cols.out) {}
  int64_t od, oh, ow;
};

// f64: out[pixel, :] = sum over taps and channels of x * filters[tap, c, :].
template <typename T>
void ConvDirect(ThreadPool* pool, const ConvGeometry& g, const T* x,
                const T* filters, T* y) {
  const int64_t per_image = g.out_pixels();
  const int64_t cost = g.taps() * g.in_c * g.out_c;
  pool->ParallelFor(g.batch * per_image, cost, [&](int64_t begin, int64_t end) {
    for (int64_t pixel = begin; pixel < end; ++pixel) {
      const int64_t n = pixel / per_image;
      const OutPixel o(g, pixel % per_image);
      T* out = y + pixel * g.out_c;
      std::fill_n(out, g.out_c, T(0));
      ForEachTap(g, o.od, o.oh, o.ow, [&](int64_t at, int64_t tap) {
        const T* in = x + (n * g.in_pixels() + at) * g.in_c;
        const T* f = filters + tap * g.in_c * g.out_c;
        for (int64_t c = 0; c < g.in_c; ++c) {
          const T v = in[c];
          const T* fc = f + c * g.out_c;
          for (int64_t k = 0; k < g.out_c; ++k) out[k] += v * fc[k];
        }
      });
    }
  });
}

// ---- f32 through oneDNN
// ------------------------------------------------------
//
// The batch is cut into pieces of at most kImagesPerPiece images (fewer
// when the batch is small, so there are pieces for every thread), each
// convolved single-threaded by oneDNN on a pool thread (onednn.h). The
// filters go into the layout oneDNN's kernels want (blocked) once per call.
// The filter gradient is one partial sum per piece, added in piece order.

constexpr int64_t kMaxPieces = 8;

using DnnlTag = dnnl::memory::format_tag;

// How the batch is cut: `count` pieces of `per` images, the last maybe
// fewer. Depends on the batch size alone.
struct BatchPieces {
  explicit BatchPieces(int64_t batch)
      : per((batch + std::min(batch, kMaxPieces) - 1) /
            std::min(batch, kMaxPieces)),
        count((batch + per - 1) / per),
        batch(batch) {}
  int64_t First(int64_t i) const { return i * per; }
  int64_t Size(int64_t i) const { return std::min(per, batch - i * per); }
  int64_t per, count, batch;
};

// The spatial entries of a geometry's (d, h, w) values: (h, w) for conv2d.
dnnl::memory::dims Spatial(const ConvGeometry& g, int64_t d, int64_t h,
                           int64_t w) {
  return g.spatial == 3 ? dnnl::memory::dims{d, h, w}
                        : dnnl::memory::dims{h, w};
}

// Dimensions in oneDNN's order: n, c, then the spatial ones.
dnnl::memory::dims Dims(int64_t n, int64_t c, const dnnl::memory::dims& sp) {
  dnnl::memory::dims out{n, c};
  out.insert(out.end(), sp.begin(), sp.end());
  return out;
}

dnnl::memory::desc ImageDesc(const ConvGeometry& g, int64_t n, bool output) {
  return dnnl::memory::desc(
      output
          ? Dims(n, g.out_c, Spatial(g, g.depths.out, g.rows.out, g.cols.out))
          : Dims(n, g.in_c, Spatial(g, g.in_d, g.in_h, g.in_w)),
      dnnl::memory::data_type::f32,
      g.spatial == 3 ? DnnlTag::ndhwc : DnnlTag::nhwc);
}

// The filters in oneDNN's layout of choice (`plain` false) or as the op
// has them (HWIO, DHWIO).
dnnl::memory::desc FilterDesc(const ConvGeometry& g, bool plain) {
  const DnnlTag tag = !plain           ? DnnlTag::any
                      : g.spatial == 3 ? DnnlTag::dhwio
                                       : DnnlTag::hwio;
  return dnnl::memory::desc(
      Dims(g.out_c, g.in_c, Spatial(g, g.k_d, g.k_h, g.k_w)),
      dnnl::memory::data_type::f32, tag);
}

// Strides, dilations (oneDNN counts the gaps: 0 is none) and the padding
// before and after, in oneDNN's terms.
struct DnnlWindows {
  explicit DnnlWindows(const ConvGeometry& g)
      : strides(Spatial(g, g.stride_d, g.stride_h, g.stride_w)),
        dilates(Spatial(g, g.dil_d - 1, g.dil_h - 1, g.dil_w - 1)),
        pad_l(
            Spatial(g, g.depths.pad_begin, g.rows.pad_begin, g.cols.pad_begin)),
        pad_r(Spatial(g, g.depths.pad_end, g.rows.pad_end, g.cols.pad_end)) {}
  dnnl::memory::dims strides, dilates, pad_l, pad_r;
};

dnnl::convolution_forward::primitive_desc ForwardPd(const ConvGeometry& g,
                                                    int64_t n) {
  const DnnlWindows w(g);
  return {
      {dnnl::prop_kind::forward_training, dnnl::algorithm::convolution_direct,
       ImageDesc(g, n, false), FilterDesc(g, false), ImageDesc(g, n, true),
       w.strides, w.dilates, w.pad_l, w.pad_r},
      DnnlUserScratchpad(),
      DnnlEngine()};
}

// `filters` (HWIO) copied into the layout `want`, or wrapped as they are.
dnnl::memory FiltersAs(const ConvGeometry& g, const float* filters,
                       const dnnl::memory::desc& want) {
  const dnnl::engine& engine = DnnlEngine();
  dnnl::memory user(FilterDesc(g, true), engine, const_cast<float*>(filters));
  if (want == user.get_desc()) return user;
  dnnl::memory out(want, engine);
  dnnl::stream stream(engine);
  dnnl::reorder(user, out).execute(stream, user, out);
  stream.wait();
  return out;
}

// A primitive for pieces of one size, with the filters in its layout.
struct PiecePrimitive {
  int64_t images = 0;
  dnnl::primitive primitive;
  dnnl::memory filters;  // forward and input gradient
  dnnl::memory::desc filters_desc;
  dnnl::memory::desc scratchpad;  // per execution: pieces run concurrently
};

// The primitives for the piece sizes of `pieces` (one or two), made by
// `make(images)`.
template <typename Make>
std::vector<PiecePrimitive> MakePieces(const BatchPieces& pieces,
                                       const Make& make) {
  std::vector<PiecePrimitive> out;
  for (int64_t n : {pieces.per, pieces.Size(pieces.count - 1)}) {
    if (out.empty() || out.back().images != n) out.push_back(make(n));
  }
  return out;
}

const PiecePrimitive& ForSize(const std::vector<PiecePrimitive>& p, int64_t n) {
  return p.front().images == n ? p.front() : p.back();
}

// One side of a primitive that maps images to images: the data, whether
// it has the output's shape (else the input's), and its oneDNN argument.
struct ImageArg {
  const float* data;
  bool output;
  int arg;
};

// Runs `prims` (with their filters) piece by piece from `from` to `to`:
// conv2d, or its input gradient.
absl::Status MapPieces(ThreadPool* pool, const ConvGeometry& g,
                       const BatchPieces& pieces,
                       const std::vector<PiecePrimitive>& prims,
                       std::string_view what, ImageArg from, ImageArg to) {
  const dnnl::engine& engine = DnnlEngine();
  auto image = [&](const ImageArg& a, int64_t n0, int64_t n) {
    const int64_t size =
        a.output ? g.out_pixels() * g.out_c : g.in_pixels() * g.in_c;
    return dnnl::memory(ImageDesc(g, n, a.output), engine,
                        const_cast<float*>(a.data + n0 * size));
  };
  return DnnlPieces(pool, pieces.count, what, [&](int64_t i) {
    const int64_t n0 = pieces.First(i), n = pieces.Size(i);
    const PiecePrimitive& p = ForSize(prims, n);
    dnnl::stream stream(engine);
    p.primitive.execute(
        stream, {{from.arg, image(from, n0, n)},
                 {DNNL_ARG_WEIGHTS, p.filters},
                 {to.arg, image(to, n0, n)},
                 {DNNL_ARG_SCRATCHPAD, dnnl::memory(p.scratchpad, engine)}});
    stream.wait();
  });
}

absl::Status DnnlConvForward(ThreadPool* pool, const ConvGeometry& g,
                             const float* x, const float* filters, float* y) {
  const BatchPieces pieces(g.batch);
  std::vector<PiecePrimitive> prims;
  DnnlSingleThread();
  RN_RETURN_IF_ERROR(DnnlStatus("conv2d", [&] {
    prims = MakePieces(pieces, [&](int64_t n) {
      const auto pd = ForwardPd(g, n);
      return PiecePrimitive{n,
                            dnnl::convolution_forward(pd),
                            FiltersAs(g, filters, pd.weights_desc()),
                            {},
                            pd.scratchpad_desc()};
    });
  }));
  return MapPieces(pool, g, pieces, prims, "conv2d", {x, false, DNNL_ARG_SRC},
                   {y, true, DNNL_ARG_DST});
}

absl::Status DnnlConvBackwardData(ThreadPool* pool, const ConvGeometry& g,
                                  const float* filters, const float* dy,
                                  float* dx) {
  const BatchPieces pieces(g.batch);
  std::vector<PiecePrimitive> prims;
  DnnlSingleThread();
  RN_RETURN_IF_ERROR(DnnlStatus("conv2d_backprop_input", [&] {
    prims = MakePieces(pieces, [&](int64_t n) {
      const DnnlWindows w(g);
      const dnnl::convolution_backward_data::primitive_desc pd(
          {dnnl::algorithm::convolution_direct, ImageDesc(g, n, false),
           FilterDesc(g, false), ImageDesc(g, n, true), w.strides, w.dilates,
           w.pad_l, w.pad_r},
          DnnlUserScratchpad(), DnnlEngine(), ForwardPd(g, n));
      return PiecePrimitive{n,
                            dnnl::convolution_backward_data(pd),
                            FiltersAs(g, filters, pd.weights_desc()),
                            {},
                            pd.scratchpad_desc()};
    });
  }));
  return MapPieces(pool, g, pieces, prims, "conv2d_backprop_input",
                   {dy, true, DNNL_ARG_DIFF_DST},
                   {dx, false, DNNL_ARG_DIFF_SRC});
}

absl::Status DnnlConvBackwardFilter(ThreadPool* pool, const ConvGeometry& g,
                                    const float* x, const float* dy,
                                    float* df) {
  const BatchPieces pieces(g.batch);
  std::vector<PiecePrimitive> prims;
  DnnlSingleThread();
  RN_RETURN_IF_ERROR(DnnlStatus("conv2d_backprop_filter", [&] {
    prims = MakePieces(pieces, [&](int64_t n) {
      const DnnlWindows w(g);
      const dnnl::convolution_backward_weights::primitive_desc pd(
          {dnnl::algorithm::convolution_direct, ImageDesc(g, n, false),
           FilterDesc(g, false), ImageDesc(g, n, true), w.strides, w.dilates,
           w.pad_l, w.pad_r},
          DnnlUserScratchpad(), DnnlEngine(), ForwardPd(g, n));
      return PiecePrimitive{n,
                            dnnl::convolution_backward_weights(pd),
                            {},
                            pd.diff_weights_desc(),
                            pd.scratchpad_desc()};
    });
  }));
  // Each piece's partial sum, as HWIO; the first piece's goes to df.
  const int64_t size = g.taps() * g.in_c * g.out_c;
  Tensor partials(DType::kF32, Shape{(pieces.count - 1) * size});
  float* partial = partials.data<float>();
  const dnnl::engine& engine = DnnlEngine();
  RN_RETURN_IF_ERROR(
      DnnlPieces(pool, pieces.count, "conv2d_backprop_filter", [&](int64_t i) {
        const int64_t n0 = pieces.First(i), n = pieces.Size(i);
        const PiecePrimitive& p = ForSize(prims, n);
        dnnl::memory src(ImageDesc(g, n, false), engine,
                         const_cast<float*>(x + n0 * g.in_pixels() * g.in_c));
        dnnl::memory diff_dst(
            ImageDesc(g, n, true), engine,
            const_cast<float*>(dy + n0 * g.out_pixels() * g.out_c));
        dnnl::memory hwio(FilterDesc(g, true), engine,
                          i == 0 ? df : partial + (i - 1) * size);
        dnnl::stream stream(engine);
        const bool plain = p.filters_desc == hwio.get_desc();
        dnnl::memory out = plain ? hwio : dnnl::memory(p.filters_desc, engine);
        p.primitive.execute(stream, {{DNNL_ARG_SRC, src},
                                     {DNNL_ARG_DIFF_DST, diff_dst},
                                     {DNNL_ARG_DIFF_WEIGHTS, out},
                                     {DNNL_ARG_SCRATCHPAD,
                                      dnnl::memory(p.scratchpad, engine)}});
        if (!plain) dnnl::reorder(out, hwio).execute(stream, out, hwio);
        stream.wait();
      }));
  if (pieces.count > 1) {
    pool->ParallelFor(size, pieces.count, [&](int64_t begin, int64_t end) {
      for (int64_t i = 1; i < pieces.count; ++i) {
        const float* from = partial + (i - 1) * size;
        for (int64_t k = begin; k < end; ++k) df[k] += from[k];
      }
    });
  }
  return absl::OkStatus();
}

// conv2d, conv3d and their gradients: the attributes they share.
class ConvKernelBase : public OpKernel {
 public:
  absl::Status Init(const Node& node) override {
    RN_ASSIGN_OR_RETURN(attrs_,
                        ReadConvAttrs(node.attrs(), WindowRank(node.op())));
    return absl::OkStatus();
  }

 protected:
  absl::StatusOr<ConvGeometry> Geometry(const Tensor& x,
                                        const Tensor& f) const {
    return MakeGeometry(x, f, attrs_);
  }

 private:
  ConvAttrs attrs_;
};

template <typename T>
class Conv2DKernel : public ConvKernelBase {
 public:
  absl::Status Compute(OpKernelContext* ctx) override {
    const Tensor& x = ctx->input(0);
    const Tensor& f = ctx->input(1);
    RN_ASSIGN_OR_RETURN(ConvGeometry g, Geometry(x, f));
    RN_ASSIGN_OR_RETURN(Tensor * y, ctx->allocate_output(0, g.y()));
    if (y->num_elements() == 0) return absl::OkStatus();
    ThreadPool* pool = ctx->intra_op_pool();
    if constexpr (std::is_same_v<T, float>) {
      return DnnlConvForward(pool, g, x.data<float>(), f.data<float>(),
                             y->data<float>());
    } else if constexpr (std::is_same_v<AccumType<T>, float>) {
      // f16/bf16: computed in f32, rounded once at the end.
      const Eigen::ThreadPoolDevice device = EigenDevice(ctx);
      const Tensor xf = ToF32<T>(device, x), ff = ToF32<T>(device, f);
      Tensor yf(DType::kF32, y->shape());
      RN_RETURN_IF_ERROR(DnnlConvForward(pool, g, xf.data<float>(),
                                         ff.data<float>(), yf.data<float>()));
      FromF32<T>(device, yf, y);
    } else {
      ConvDirect(pool, g, x.data<T>(), f.data<T>(), y->data<T>());
    }
    return absl::OkStatus();
  }
};

// ---- gradients of conv2d in f64 ---------------------------------------------

// f64: dx[pixel] = sum over the windows covering it of dy x filters^T.
template <typename T>
void BackpropInputDirect(ThreadPool* pool, const ConvGeometry& g,
                         const T* filters, const T* dy, T* dx) {
  const int64_t image = g.in_pixels() * g.in_c;
  const int64_t cost = g.out_pixels() * g.taps() * g.in_c * g.out_c;
  pool->ParallelFor(g.batch, cost, [&](int64_t begin, int64_t end) {
    for (int64_t n = begin; n < end; ++n) {
      T* out = dx + n * image;
      std::fill_n(out, image, T(0));
      for (int64_t p = 0; p < g.out_pixels(); ++p) {
        const OutPixel o(g, p);
        const T* d = dy + (n * g.out_pixels() + p) * g.out_c;
        ForEachTap(g, o.od, o.oh, o.ow, [&](int64_t at, int64_t tap) {
          T* to = out + at * g.in_c;
          const T* f = filters + tap * g.in_c * g.out_c;
          for (int64_t c = 0; c < g.in_c; ++c) {
            T sum = 0;
            for (int64_t k = 0; k < g.out_c; ++k) {
              sum += d[k] * f[c * g.out_c + k];
            }
            to[c] += sum;
          }
        });
      }
    }
  });
}

// f64: dfilters[tap] = sum over pixels of x under the tap x dy, one tap
// per shard unit.
template <typename T>
void BackpropFilterDirect(ThreadPool* pool, const ConvGeometry& g, const T* x,
                          const T* dy, T* df) {
  const int64_t cost = g.batch * g.out_pixels() * g.in_c * g.out_c;
  pool->ParallelFor(g.taps(), cost, [&](int64_t begin, int64_t end) {
    for (int64_t tap = begin; tap < end; ++tap) {
      const int64_t kd = tap / (g.k_h * g.k_w), kh = (tap / g.k_w) % g.k_h,
                    kw = tap % g.k_w;
      T* out = df + tap * g.in_c * g.out_c;
      std::fill_n(out, g.in_c * g.out_c, T(0));
      for (int64_t n = 0; n < g.batch; ++n) {
        for (int64_t p = 0; p < g.out_pixels(); ++p) {
          const OutPixel o(g, p);
          const int64_t id =
              o.od * g.stride_d - g.depths.pad_begin + kd * g.dil_d;
          const int64_t ih =
              o.oh * g.stride_h - g.rows.pad_begin + kh * g.dil_h;
          const int64_t iw =
              o.ow * g.stride_w - g.cols.pad_begin + kw * g.dil_w;
          if (id < 0 || id >= g.in_d || ih < 0 || ih >= g.in_h || iw < 0 ||
              iw >= g.in_w) {
            continue;
          }
          const T* in =
              x + (((n * g.in_d + id) * g.in_h + ih) * g.in_w + iw) * g.in_c;
          const T* d = dy + (n * g.out_pixels() + p) * g.out_c;
          for (int64_t c = 0; c < g.in_c; ++c) {
            const T v = in[c];
            T* to = out + c * g.out_c;
            for (int64_t k = 0; k < g.out_c; ++k) to[k] += v * d[k];
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
    RN_RETURN_IF_ERROR(
        CheckWindowsDy(ctx->node().op(), dy.dtype(), dy.shape(), g.y()));
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
        return DnnlConvBackwardFilter(pool, g, a, d, o);
      } else {
        return DnnlConvBackwardData(pool, g, a, d, o);
      }
    };
    if constexpr (std::is_same_v<T, float>) {
      return run_f32(operand.data<float>(), dy.data<float>(),
                     out->data<float>());
    } else if constexpr (std::is_same_v<AccumType<T>, float>) {
      // f16/bf16: computed in f32, rounded once at the end.
      const Eigen::ThreadPoolDevice device = EigenDevice(ctx);
      const Tensor af = ToF32<T>(device, operand), dyf = ToF32<T>(device, dy);
      Tensor outf(DType::kF32, out->shape());
      RN_RETURN_IF_ERROR(
          run_f32(af.data<float>(), dyf.data<float>(), outf.data<float>()));
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

RUNNEL_STATIC_INIT(ConvKernels) {
  for (const char* d : {"2d", "3d"}) {
    RegisterKernelForTypes<Conv2DKernel, Half, BFloat16, float, double>(
        StrCat("conv", d));
    RegisterKernelForTypes<Conv2DBackpropInput, Half, BFloat16, float, double>(
        StrCat("conv", d, "_backprop_input"));
    RegisterKernelForTypes<Conv2DBackpropFilter, Half, BFloat16, float, double>(
        StrCat("conv", d, "_backprop_filter"));
  }
}

}  // namespace
}  // namespace runnel
