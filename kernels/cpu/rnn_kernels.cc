// Kernels of the fused recurrent cells, lstm_cell and gru_cell, and of
// their gradients (framework/ops/nn_ops.cc). Each works a row (one batch
// element: its gates and its state) at a time, the activations in arrays
// of the accumulation type (f32 for the 16-bit floats, rounded once on
// output), with the element-wise kernels' formulas (the `sigmoid` kernel's
// SigmoidOf, Eigen's tanh). The gradients recompute the activations from
// the cell's inputs, so a loop's gradient stacks only what the forward
// step read.
#include <cstdint>

#include "framework/kernel.h"
#include "framework/ops/kernel_checks.h"
#include "kernels/cpu/broadcast.h"
#include "kernels/cpu/eigen_support.h"

namespace runnel {
namespace {

template <typename T>
using Acc = AccumType<T>;
template <typename S>
using Array1 = Eigen::Array<S, Eigen::Dynamic, 1>;

// Cycles per unit of a cell's row, for ParallelFor: four or five
// activations and their products.
constexpr int64_t kCellCost = 120;

// A cell of fewer units than this (all rows) runs on the calling thread:
// a recurrent step is short (a batch of 32 by 256 units takes about 20 us
// on one core), and in a time loop waking a second thread for half of it
// cost more than it saved (examples/charlm.rnl's step, against the unfused
// cell in alternating runs: 0.91-0.96 inline, 0.98 split).
constexpr int64_t kMinParallelUnits = int64_t{1} << 16;

// fn(begin, end) over the rows, split across the intra-op pool only when
// the cell is large.
template <class Fn>
void ForRows(OpKernelContext* ctx, int64_t rows, int64_t units, int64_t cost,
             const Fn& fn) {
  if (rows * units < kMinParallelUnits) {
    if (rows > 0) fn(int64_t{0}, rows);
    return;
  }
  ctx->intra_op_pool()->ParallelFor(rows, units * cost, fn);
}

// lstm_cell(gates, c) -> (h, c_next).
template <typename T>
class LstmCellKernel : public OpKernel {
 public:
  absl::Status Compute(OpKernelContext* ctx) override {
    const Tensor& gates = ctx->input(0);
    const Tensor& c = ctx->input(1);
    RN_ASSIGN_OR_RETURN(const CellRows cr,
                        CheckCellInputs(ctx->node().op(), gates, c, 4, {}, {}));
    RN_ASSIGN_OR_RETURN(Tensor * h, ctx->allocate_output(0, c.shape()));
    RN_ASSIGN_OR_RETURN(Tensor * c_next, ctx->allocate_output(1, c.shape()));
    const int64_t u = cr.units;
    const EigenType<T>* pg = EigenData<T>(gates);
    const EigenType<T>* pc = EigenData<T>(c);
    EigenType<T>* ph = EigenMutableData<T>(h);
    EigenType<T>* pn = EigenMutableData<T>(c_next);
    ForRows(ctx, cr.rows, u, kCellCost, [&](int64_t begin, int64_t end) {
      Array1<Acc<T>> i(u), f(u), g(u), o(u), cn(u);
      for (int64_t r = begin; r < end; ++r) {
        const EigenType<T>* row = pg + r * 4 * u;
        i = SigmoidOf(LoadRun<T>(row, u));
        f = SigmoidOf(LoadRun<T>(row + u, u));
        g = LoadRun<T>(row + 2 * u, u).tanh();
        o = SigmoidOf(LoadRun<T>(row + 3 * u, u));
        cn = f * LoadRun<T>(pc + r * u, u) + i * g;
        StoreRun<T>(cn, pn + r * u);
        StoreRun<T>(o * cn.tanh(), ph + r * u);
      }
    });
    return absl::OkStatus();
  }
};

// lstm_cell_grad(gates, c, dh, dc_next) -> (dgates, dc): with the
// activations i, f, g, o, c_next = f * c + i * g and t = tanh(c_next),
// the cell state's whole gradient is d = dc_next + dh * o * (1 - t^2);
// then dgates = (d * g * i (1 - i), d * c * f (1 - f), d * i * (1 - g^2),
// dh * t * o (1 - o)) and dc = d * f.
template <typename T>
class LstmCellGradKernel : public OpKernel {
 public:
  absl::Status Compute(OpKernelContext* ctx) override {
    const Tensor& gates = ctx->input(0);
    const Tensor& c = ctx->input(1);
    const Tensor& dh = ctx->input(2);
    const Tensor& dc_next = ctx->input(3);
    RN_ASSIGN_OR_RETURN(
        const CellRows cr,
        CheckCellInputs(ctx->node().op(), gates, c, 4, {}, {&dh, &dc_next}));
    RN_ASSIGN_OR_RETURN(Tensor * dgates,
                        ctx->allocate_output(0, gates.shape()));
    RN_ASSIGN_OR_RETURN(Tensor * dc, ctx->allocate_output(1, c.shape()));
    const int64_t u = cr.units;
    const EigenType<T>* pg = EigenData<T>(gates);
    const EigenType<T>* pc = EigenData<T>(c);
    const EigenType<T>* pdh = EigenData<T>(dh);
    const EigenType<T>* pdn = EigenData<T>(dc_next);
    EigenType<T>* pdg = EigenMutableData<T>(dgates);
    EigenType<T>* pdc = EigenMutableData<T>(dc);
    ForRows(ctx, cr.rows, u, kCellCost * 2, [&](int64_t begin, int64_t end) {
      using A = Acc<T>;
      Array1<A> i(u), f(u), g(u), o(u), cp(u), t(u), d(u), gh(u);
      for (int64_t r = begin; r < end; ++r) {
        const EigenType<T>* row = pg + r * 4 * u;
        i = SigmoidOf(LoadRun<T>(row, u));
        f = SigmoidOf(LoadRun<T>(row + u, u));
        g = LoadRun<T>(row + 2 * u, u).tanh();
        o = SigmoidOf(LoadRun<T>(row + 3 * u, u));
        cp = LoadRun<T>(pc + r * u, u);
        t = (f * cp + i * g).tanh();
        gh = LoadRun<T>(pdh + r * u, u);
        d = LoadRun<T>(pdn + r * u, u) + gh * o * (A(1) - t * t);
        EigenType<T>* out = pdg + r * 4 * u;
        StoreRun<T>(d * g * i * (A(1) - i), out);
        StoreRun<T>(d * cp * f * (A(1) - f), out + u);
        StoreRun<T>(d * i * (A(1) - g * g), out + 2 * u);
        StoreRun<T>(gh * t * o * (A(1) - o), out + 3 * u);
        StoreRun<T>(d * f, pdc + r * u);
      }
    });
    return absl::OkStatus();
  }
};

// gru_cell(x, hh, h) -> h_next.
template <typename T>
class GruCellKernel : public OpKernel {
 public:
  absl::Status Compute(OpKernelContext* ctx) override {
    const Tensor& x = ctx->input(0);
    const Tensor& hh = ctx->input(1);
    const Tensor& h = ctx->input(2);
    RN_ASSIGN_OR_RETURN(const CellRows cr,
                        CheckCellInputs(ctx->node().op(), x, h, 3, {&hh}, {}));
    RN_ASSIGN_OR_RETURN(Tensor * out, ctx->allocate_output(0, h.shape()));
    const int64_t u = cr.units;
    const EigenType<T>* px = EigenData<T>(x);
    const EigenType<T>* phh = EigenData<T>(hh);
    const EigenType<T>* ph = EigenData<T>(h);
    EigenType<T>* po = EigenMutableData<T>(out);
    ForRows(ctx, cr.rows, u, kCellCost, [&](int64_t begin, int64_t end) {
      using A = Acc<T>;
      Array1<A> r(u), z(u), n(u);
      for (int64_t k = begin; k < end; ++k) {
        const EigenType<T>* a = px + k * 3 * u;
        const EigenType<T>* b = phh + k * 3 * u;
        r = SigmoidOf(LoadRun<T>(a, u) + LoadRun<T>(b, u));
        z = SigmoidOf(LoadRun<T>(a + u, u) + LoadRun<T>(b + u, u));
        n = (LoadRun<T>(a + 2 * u, u) + r * LoadRun<T>(b + 2 * u, u)).tanh();
        StoreRun<T>((A(1) - z) * n + z * LoadRun<T>(ph + k * u, u), po + k * u);
      }
    });
    return absl::OkStatus();
  }
};

// gru_cell_grad(x, hh, h, dh_next) -> (dx, dhh, dh): with the activations
// r, z, n and e = dh_next * (1 - z) * (1 - n^2), the gradient by the
// candidate's pre-activation, dx = (a_r, a_z, e) and dhh = (a_r, a_z, e *
// r), where a_r = e * hh_n * r (1 - r) and a_z = dh_next * (h - n) * z (1 -
// z); dh = dh_next * z.
template <typename T>
class GruCellGradKernel : public OpKernel {
 public:
  absl::Status Compute(OpKernelContext* ctx) override {
    const Tensor& x = ctx->input(0);
    const Tensor& hh = ctx->input(1);
    const Tensor& h = ctx->input(2);
    const Tensor& dh_next = ctx->input(3);
    RN_ASSIGN_OR_RETURN(
        const CellRows cr,
        CheckCellInputs(ctx->node().op(), x, h, 3, {&hh}, {&dh_next}));
    RN_ASSIGN_OR_RETURN(Tensor * dx, ctx->allocate_output(0, x.shape()));
    RN_ASSIGN_OR_RETURN(Tensor * dhh, ctx->allocate_output(1, x.shape()));
    RN_ASSIGN_OR_RETURN(Tensor * dh, ctx->allocate_output(2, h.shape()));
    const int64_t u = cr.units;
    const EigenType<T>* px = EigenData<T>(x);
    const EigenType<T>* phh = EigenData<T>(hh);
    const EigenType<T>* ph = EigenData<T>(h);
    const EigenType<T>* pd = EigenData<T>(dh_next);
    EigenType<T>* pdx = EigenMutableData<T>(dx);
    EigenType<T>* pdhh = EigenMutableData<T>(dhh);
    EigenType<T>* pdh = EigenMutableData<T>(dh);
    ForRows(ctx, cr.rows, u, kCellCost * 2, [&](int64_t begin, int64_t end) {
      using A = Acc<T>;
      Array1<A> r(u), z(u), hn(u), n(u), d(u), e(u), ar(u), az(u);
      for (int64_t k = begin; k < end; ++k) {
        const EigenType<T>* a = px + k * 3 * u;
        const EigenType<T>* b = phh + k * 3 * u;
        r = SigmoidOf(LoadRun<T>(a, u) + LoadRun<T>(b, u));
        z = SigmoidOf(LoadRun<T>(a + u, u) + LoadRun<T>(b + u, u));
        hn = LoadRun<T>(b + 2 * u, u);
        n = (LoadRun<T>(a + 2 * u, u) + r * hn).tanh();
        d = LoadRun<T>(pd + k * u, u);
        e = d * (A(1) - z) * (A(1) - n * n);
        ar = e * hn * r * (A(1) - r);
        az = d * (LoadRun<T>(ph + k * u, u) - n) * z * (A(1) - z);
        EigenType<T>* ox = pdx + k * 3 * u;
        EigenType<T>* oh = pdhh + k * 3 * u;
        StoreRun<T>(ar, ox);
        StoreRun<T>(ar, oh);
        StoreRun<T>(az, ox + u);
        StoreRun<T>(az, oh + u);
        StoreRun<T>(e, ox + 2 * u);
        StoreRun<T>(e * r, oh + 2 * u);
        StoreRun<T>(d * z, pdh + k * u);
      }
    });
    return absl::OkStatus();
  }
};

RUNNEL_STATIC_INIT(RnnKernels) {
  RegisterKernelForTypeList<LstmCellKernel>("lstm_cell", FloatTypes{});
  RegisterKernelForTypeList<LstmCellGradKernel>("lstm_cell_grad", FloatTypes{});
  RegisterKernelForTypeList<GruCellKernel>("gru_cell", FloatTypes{});
  RegisterKernelForTypeList<GruCellGradKernel>("gru_cell_grad", FloatTypes{});
}

}  // namespace
}  // namespace runnel
