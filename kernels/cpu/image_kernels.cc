// resize and resize_grad (framework/ops/image_ops.cc) on NHWC images: each
// output pixel the weighted sum of (up to) four input pixels, the weights
// of framework/ops/resize_plan.h, in f32 for the 16-bit floats; the
// gradient shares each dy among the same pixels by the same weights, one
// image per shard, in a fixed order.
#include <algorithm>
#include <array>
#include <vector>

#include "base/status_macros.h"
#include "base/strings.h"
#include "framework/ops/resize_plan.h"
#include "kernels/common/nms.h"
#include "kernels/cpu/broadcast.h"
#include "kernels/cpu/eigen_support.h"

namespace runnel {
namespace {

class ResizeBase : public OpKernel {
 public:
  absl::Status Init(const Node& node) override {
    RN_ASSIGN_OR_RETURN(attrs_, ResizeAttrs::Read(node.attrs()));
    return absl::OkStatus();
  }

 protected:
  // The four taps of output pixel (oh, ow) and their weights, as offsets
  // of pixels in an image of width `in_w`.
  struct Taps {
    int64_t at[4];
    double w[4];
  };
  Taps TapsOf(const ResizeAxis& rows, const ResizeAxis& cols, int64_t oh,
              int64_t ow, int64_t in_w) const {
    const double wr = rows.w[oh], wc = cols.w[ow];
    return Taps{
        {rows.lo[oh] * in_w + cols.lo[ow], rows.lo[oh] * in_w + cols.hi[ow],
         rows.hi[oh] * in_w + cols.lo[ow], rows.hi[oh] * in_w + cols.hi[ow]},
        {(1 - wr) * (1 - wc), (1 - wr) * wc, wr * (1 - wc), wr * wc}};
  }

  ResizeAttrs attrs_;
};

template <typename T>
class ResizeKernel : public ResizeBase {
 public:
  absl::Status Compute(OpKernelContext* ctx) override {
    const Tensor& x = ctx->input(0);
    RN_ASSIGN_OR_RETURN(const ResizeImage im, CheckResize(x, attrs_));
    const int64_t batch = im.batch, in_h = im.in_h, in_w = im.in_w,
                  chans = im.chans;
    const int64_t out_h = attrs_.out_h, out_w = attrs_.out_w;
    RN_ASSIGN_OR_RETURN(
        Tensor * y, ctx->allocate_output(0, Shape{batch, out_h, out_w, chans}));
    if (y->num_elements() == 0) return absl::OkStatus();
    const ResizeAxis rows = PlanResizeAxis(in_h, out_h, attrs_);
    const ResizeAxis cols = PlanResizeAxis(in_w, out_w, attrs_);
    using A = AccumType<T>;
    const EigenType<T>* in = EigenData<T>(x);
    EigenType<T>* out = EigenMutableData<T>(y);
    ctx->intra_op_pool()->ParallelFor(
        batch * out_h, out_w * chans * 8, [&](int64_t begin, int64_t end) {
          for (int64_t line = begin; line < end; ++line) {
            const int64_t n = line / out_h, oh = line % out_h;
            const EigenType<T>* image = in + n * in_h * in_w * chans;
            for (int64_t ow = 0; ow < out_w; ++ow) {
              const Taps t = TapsOf(rows, cols, oh, ow, in_w);
              EigenType<T>* o = out + ((n * out_h + oh) * out_w + ow) * chans;
              for (int64_t c = 0; c < chans; ++c) {
                A v = 0;
                for (int k = 0; k < 4; ++k) {
                  v += static_cast<A>(t.w[k]) *
                       static_cast<A>(image[t.at[k] * chans + c]);
                }
                o[c] = static_cast<EigenType<T>>(v);
              }
            }
          }
        });
    return absl::OkStatus();
  }
};

template <typename T>
class ResizeGradKernel : public ResizeBase {
 public:
  absl::Status Compute(OpKernelContext* ctx) override {
    const Tensor& dy = ctx->input(0);
    const Tensor& x = ctx->input(1);
    RN_ASSIGN_OR_RETURN(const ResizeImage im, CheckResizeGrad(dy, x, attrs_));
    const int64_t batch = im.batch, in_h = im.in_h, in_w = im.in_w,
                  chans = im.chans;
    const int64_t out_h = attrs_.out_h, out_w = attrs_.out_w;
    RN_ASSIGN_OR_RETURN(Tensor * dx, ctx->allocate_output(0, x.shape()));
    if (dx->num_elements() == 0) return absl::OkStatus();
    const ResizeAxis rows = PlanResizeAxis(in_h, out_h, attrs_);
    const ResizeAxis cols = PlanResizeAxis(in_w, out_w, attrs_);
    using A = AccumType<T>;
    const EigenType<T>* g = EigenData<T>(dy);
    EigenType<T>* out = EigenMutableData<T>(dx);
    const int64_t image = in_h * in_w * chans;
    ctx->intra_op_pool()->ParallelFor(
        batch, out_h * out_w * chans * 8, [&](int64_t begin, int64_t end) {
          std::vector<A> acc(image);
          for (int64_t n = begin; n < end; ++n) {
            std::fill(acc.begin(), acc.end(), A(0));
            for (int64_t oh = 0; oh < out_h; ++oh) {
              for (int64_t ow = 0; ow < out_w; ++ow) {
                const Taps t = TapsOf(rows, cols, oh, ow, in_w);
                const EigenType<T>* d =
                    g + ((n * out_h + oh) * out_w + ow) * chans;
                for (int k = 0; k < 4; ++k) {
                  if (t.w[k] == 0) continue;
                  A* a = acc.data() + t.at[k] * chans;
                  for (int64_t c = 0; c < chans; ++c) {
                    a[c] += static_cast<A>(t.w[k]) * static_cast<A>(d[c]);
                  }
                }
              }
            }
            EigenType<T>* o = out + n * image;
            for (int64_t i = 0; i < image; ++i) {
              o[i] = static_cast<EigenType<T>>(acc[i]);
            }
          }
        });
    return absl::OkStatus();
  }
};

// non_max_suppression, in double: NmsSelect (kernels/common/nms.h), each
// overlap computed when the selection asks for it.
template <typename T>
class NmsKernel : public OpKernel {
 public:
  absl::Status Init(const Node& node) override {
    RN_ASSIGN_OR_RETURN(center_, node.attr<bool>("center_point_box"));
    return absl::OkStatus();
  }

  absl::Status Compute(OpKernelContext* ctx) override {
    RN_ASSIGN_OR_RETURN(const NmsRun r, NmsRunOf(ctx));
    const T* b = ctx->input(0).data<T>();
    const int64_t n = r.n;
    const auto kept = NmsSelect(
        ctx->input(1).data<T>(), r.batch, r.classes, n, r.limit, r.floor,
        [&](int64_t i, int64_t j, int64_t k) {
          return Suppresses(b + (i * n + j) * 4, b + (i * n + k) * 4, r.iou);
        });
    const int64_t m = static_cast<int64_t>(kept.size());
    RN_ASSIGN_OR_RETURN(Tensor * y, ctx->allocate_output(0, Shape{m, 3}));
    int64_t* out = y->data<int64_t>();
    for (int64_t r = 0; r < m; ++r) {
      std::copy(kept[r].begin(), kept[r].end(), out + r * 3);
    }
    return absl::OkStatus();
  }

 private:
  // [lo_y, lo_x, hi_y, hi_x] of a box.
  std::array<double, 4> Corners(const T* v) const {
    const double a = v[0], bb = v[1], c = v[2], d = v[3];
    if (center_) {
      return {bb - d / 2, a - c / 2, bb + d / 2, a + c / 2};
    }
    return {std::min(a, c), std::min(bb, d), std::max(a, c), std::max(bb, d)};
  }
  // Whether boxes p and q overlap with an intersection over union above
  // `iou` (boxes that do not overlap, or are empty, never do).
  bool Suppresses(const T* p, const T* q, double iou) const {
    const auto u = Corners(p), v = Corners(q);
    const double h = std::min(u[2], v[2]) - std::max(u[0], v[0]);
    const double w = std::min(u[3], v[3]) - std::max(u[1], v[1]);
    if (h <= 0 || w <= 0) return false;
    const double inter = h * w;
    const double a = (u[2] - u[0]) * (u[3] - u[1]);
    const double bb = (v[2] - v[0]) * (v[3] - v[1]);
    const double uni = a + bb - inter;
    if (a <= 0 || bb <= 0 || uni <= 0) return false;
    return inter / uni > iou;
  }

  bool center_ = false;
};

RUNNEL_STATIC_INIT(ImageKernels) {
  RegisterKernelForTypes<NmsKernel, float, double>("non_max_suppression");
  RegisterKernelForTypeList<ResizeKernel>("resize", FloatTypes{});
  RegisterKernelForTypeList<ResizeGradKernel>("resize_grad", FloatTypes{});
}

}  // namespace
}  // namespace runnel
