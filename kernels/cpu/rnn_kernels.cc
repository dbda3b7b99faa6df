// Kernels of the fused recurrent cells, lstm_cell and gru_cell, and of
// their gradients (framework/ops/nn_ops.cc). Each works a row (one batch
// element: its gates and its state) at a time, the activations in arrays
// of the accumulation type (f32 for the 16-bit floats, rounded once on
// output), with the element-wise kernels' formulas (the `sigmoid` kernel's
// SigmoidOf, Eigen's tanh). The gradients recompute the activations from
// the cell's inputs, so a loop's gradient stacks only what the forward
// step read.
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <functional>
#include <vector>

#include "framework/kernel.h"
#include "framework/ops/kernel_checks.h"
#include "kernels/cpu/broadcast.h"
#include "kernels/cpu/eigen_support.h"
#include "kernels/cpu/gemm.h"

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

// The activations of one row of gates [4 u] (i, f, g, o): sigmoid, sigmoid,
// tanh, sigmoid.
template <typename T>
void GateActivations(const EigenType<T>* row, int64_t u, Array1<Acc<T>>& i,
                     Array1<Acc<T>>& f, Array1<Acc<T>>& g, Array1<Acc<T>>& o) {
  i = SigmoidOf(LoadRun<T>(row, u));
  f = SigmoidOf(LoadRun<T>(row + u, u));
  g = LoadRun<T>(row + 2 * u, u).tanh();
  o = SigmoidOf(LoadRun<T>(row + 3 * u, u));
}

// lstm_cell on `rows` rows from their first: gates [rows, 4 u] and c
// [rows, u] to h and c_next; the activations (i, f, g, o) also to pa
// [rows, 4 u] unless it is nullptr (pa may be pg: each row is read before
// it is written).
template <typename T>
void LstmRows(const EigenType<T>* pg, const EigenType<T>* pc, EigenType<T>* ph,
              EigenType<T>* pn, int64_t rows, int64_t u,
              EigenType<T>* pa = nullptr) {
  Array1<Acc<T>> i(u), f(u), g(u), o(u), cn(u);
  for (int64_t r = 0; r < rows; ++r) {
    GateActivations<T>(pg + r * 4 * u, u, i, f, g, o);
    if (pa != nullptr) {
      EigenType<T>* a = pa + r * 4 * u;
      StoreRun<T>(i, a);
      StoreRun<T>(f, a + u);
      StoreRun<T>(g, a + 2 * u);
      StoreRun<T>(o, a + 3 * u);
    }
    cn = f * LoadRun<T>(pc + r * u, u) + i * g;
    StoreRun<T>(cn, pn + r * u);
    StoreRun<T>(o * cn.tanh(), ph + r * u);
  }
}

// lstm_cell_grad on `rows` rows from their first, dh the sum of pdh's and
// (unless nullptr) pdh2's rows, dc_next so of pdn and pdn2: with the
// activations i, f, g, o, c_next = f * c + i * g and t = tanh(c_next), the
// cell state's whole gradient is d = dc_next + dh * o * (1 - t^2); then
// dgates = (d * g * i (1 - i), d * c * f (1 - f), d * i * (1 - g^2),
// dh * t * o (1 - o)) and dc = d * f. pdc may be pdn or pdn2 (each row is
// read before it is written). With `activated`, pg holds the activations
// (LstmRows' pa) rather than the gates.
template <typename T>
void LstmGradRows(const EigenType<T>* pg, const EigenType<T>* pc,
                  const EigenType<T>* pdh, const EigenType<T>* pdh2,
                  const EigenType<T>* pdn, const EigenType<T>* pdn2,
                  EigenType<T>* pdg, EigenType<T>* pdc, int64_t rows, int64_t u,
                  bool activated = false) {
  using A = Acc<T>;
  Array1<A> i(u), f(u), g(u), o(u), cp(u), t(u), d(u), gh(u);
  for (int64_t r = 0; r < rows; ++r) {
    const EigenType<T>* row = pg + r * 4 * u;
    if (activated) {
      i = LoadRun<T>(row, u);
      f = LoadRun<T>(row + u, u);
      g = LoadRun<T>(row + 2 * u, u);
      o = LoadRun<T>(row + 3 * u, u);
    } else {
      GateActivations<T>(row, u, i, f, g, o);
    }
    cp = LoadRun<T>(pc + r * u, u);
    t = (f * cp + i * g).tanh();
    gh = LoadRun<T>(pdh + r * u, u);
    if (pdh2 != nullptr) gh += LoadRun<T>(pdh2 + r * u, u);
    d = LoadRun<T>(pdn + r * u, u);
    if (pdn2 != nullptr) d += LoadRun<T>(pdn2 + r * u, u);
    d += gh * o * (A(1) - t * t);
    EigenType<T>* out = pdg + r * 4 * u;
    StoreRun<T>(d * g * i * (A(1) - i), out);
    StoreRun<T>(d * cp * f * (A(1) - f), out + u);
    StoreRun<T>(d * i * (A(1) - g * g), out + 2 * u);
    StoreRun<T>(gh * t * o * (A(1) - o), out + 3 * u);
    StoreRun<T>(d * f, pdc + r * u);
  }
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
      LstmRows<T>(pg + begin * 4 * u, pc + begin * u, ph + begin * u,
                  pn + begin * u, end - begin, u);
    });
    return absl::OkStatus();
  }
};

// lstm_cell_grad(gates, c, dh, dc_next) -> (dgates, dc).
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
      const int64_t a = begin * u;
      LstmGradRows<T>(pg + 4 * a, pc + a, pdh + a, nullptr, pdn + a, nullptr,
                      pdg + 4 * a, pdc + a, end - begin, u);
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

// lstm_sequence and its gradient cut the batch into pieces of this many
// rows: each piece runs every step of its rows on one thread (the rows'
// recurrences are independent), so the threads never wait for each other
// within the sequence. The cut depends on the shapes alone, so results do
// not depend on the number of threads. The recurrent weights are packed
// once (PackedMatrixF32, kernels/cpu/gemm.h), so a piece's product keeps
// its rate on 16 rows.
constexpr int64_t kSequenceRows = 16;

int64_t CeilDiv(int64_t a, int64_t b) { return (a + b - 1) / b; }

// fn(first row, rows) for each piece of `batch` rows, on the intra-op
// pool's threads; the first error of any piece.
absl::Status ForPieces(
    OpKernelContext* ctx, int64_t batch,
    const std::function<absl::Status(int64_t, int64_t)>& fn) {
  const int64_t pieces = CeilDiv(batch, kSequenceRows);
  std::vector<absl::Status> status(static_cast<size_t>(pieces));
  auto piece = [&](int64_t i) {
    const int64_t first = i * kSequenceRows;
    status[i] = fn(first, std::min(kSequenceRows, batch - first));
  };
  ThreadPool* pool = ctx->intra_op_pool();
  if (pool == nullptr || pieces < 2) {
    for (int64_t i = 0; i < pieces; ++i) piece(i);
  } else {
    pool->RunClaimed(pieces, piece);
  }
  for (absl::Status& s : status) RN_RETURN_IF_ERROR(s);
  return absl::OkStatus();
}

// The rows [first, first + rows) of step t of a time-major [time, batch,
// width] tensor.
struct TimeMajorRows {
  int64_t batch, first;
  template <typename P>
  P* at(P* base, int64_t t, int64_t width) const {
    return base + (t * batch + first) * width;
  }
};

// lstm_sequence(z, h0, c0, w_h[, b][, lengths]) -> (hs, h, c, cs, gates):
// for each step, the pre-activations z[t] + b + h[t-1] @ w_h (the packed
// w_h's product added into a copy of z[t], the bias added in the copy), then
// lstm_cell's rows, which overwrite them with their activations (`gates`, so
// that the gradient need not compute them again); a row at or past its length
// then takes its previous state back.
class LstmSequenceKernel : public OpKernel {
 public:
  absl::Status Compute(OpKernelContext* ctx) override {
    RN_ASSIGN_OR_RETURN(const LstmSequenceArgs a, PrepareLstmSequence(ctx));
    const Tensor &h0 = *a.h0, &c0 = *a.c0;
    Tensor *hs = a.hs, *h = a.h, *c = a.c, *cs = a.cs;
    const int64_t time = a.dims.time, batch = a.dims.batch, u = a.dims.units;
    const float* ph0 = h0.data<float>();
    const float* pc0 = c0.data<float>();
    float* phs = hs->data<float>();
    float* pcs = cs->data<float>();
    const size_t state_bytes = h0.bytes();
    if (time == 0 || state_bytes == 0) {
      if (state_bytes > 0) {
        std::memcpy(h->raw_data(), ph0, state_bytes);
        std::memcpy(c->raw_data(), pc0, state_bytes);
      }
      return absl::OkStatus();
    }
    const float* pz = a.z->data<float>();
    const PackedMatrixF32 w_h(ctx->intra_op_pool(), u, 4 * u,
                              {a.w_h->data<float>(), 4 * u, 1});
    const float* pb = a.b != nullptr ? a.b->data<float>() : nullptr;
    float* pg = a.gates->data<float>();
    const int32_t* len =
        a.lengths != nullptr ? a.lengths->data<int32_t>() : nullptr;
    RN_RETURN_IF_ERROR(ForPieces(ctx, batch, [&](int64_t first, int64_t rows) {
      const TimeMajorRows at{batch, first};
      for (int64_t t = 0; t < time; ++t) {
        float* g = at.at(pg, t, 4 * u);
        const float* zt = at.at(pz, t, 4 * u);
        if (pb == nullptr) {
          std::memcpy(g, zt, static_cast<size_t>(rows * 4 * u) * sizeof(float));
        } else {
          for (int64_t r = 0; r < rows; ++r) {
            for (int64_t j = 0; j < 4 * u; ++j) {
              g[r * 4 * u + j] = zt[r * 4 * u + j] + pb[j];
            }
          }
        }
        const float* hp = t == 0 ? ph0 + first * u : at.at(phs, t - 1, u);
        const float* cp = t == 0 ? pc0 + first * u : at.at(pcs, t - 1, u);
        w_h.Multiply(rows, hp, u, g, 4 * u, /*accumulate=*/true);
        float* hn = at.at(phs, t, u);
        float* cn = at.at(pcs, t, u);
        LstmRows<float>(g, cp, hn, cn, rows, u, /*pa=*/g);
        // A row at or past its length keeps its state.
        for (int64_t r = 0; r < rows && len != nullptr; ++r) {
          if (t < len[first + r]) continue;
          std::copy_n(hp + r * u, u, hn + r * u);
          std::copy_n(cp + r * u, u, cn + r * u);
        }
      }
      return absl::OkStatus();
    }));
    std::memcpy(h->raw_data(), phs + (time - 1) * batch * u, state_bytes);
    std::memcpy(c->raw_data(), pcs + (time - 1) * batch * u, state_bytes);
    return absl::OkStatus();
  }
};

// lstm_sequence_grad(gates, cs, hs, h0, c0, w_h, dhs, dh, dc) -> (dz, dh0,
// dc0, dw_h, db): the steps backwards, each piece of rows carrying its
// state's gradients from the final state's (dh[t-1] = dz[t] @ w_h^T by
// w_h^T packed once, plus dhs[t-1]; lstm_cell_grad's dc),
// dz[t] being the gates' gradient, whose rows the piece also sums for db
// while they are in cache; then dw_h = h0^T dz[0] + hs[0 : time-1]^T dz[1
// : time], two products over the whole batch on the pool, and db the sum
// of the pieces' sums, in order.
class LstmSequenceGradKernel : public OpKernel {
 public:
  absl::Status Compute(OpKernelContext* ctx) override {
    RN_ASSIGN_OR_RETURN(const LstmSequenceGradArgs a,
                        PrepareLstmSequenceGrad(ctx));
    const Tensor &dh = *a.dh, &dc = *a.dc;
    Tensor *dz = a.dz, *dh0 = a.dh0, *dc0 = a.dc0, *dw = a.dw_h;
    const int64_t time = a.dims.time, batch = a.dims.batch, u = a.dims.units;
    float* pdz = dz->data<float>();
    float* pdh0 = dh0->data<float>();
    float* pdc0 = dc0->data<float>();
    float* pdw = dw->data<float>();
    float* pdb = a.db->data<float>();
    // The carried gradients start as the final state's.
    if (dh.bytes() > 0) {
      std::memcpy(pdh0, dh.raw_data(), dh.bytes());
      std::memcpy(pdc0, dc.raw_data(), dc.bytes());
    }
    std::fill_n(pdw, dw->num_elements(), 0.0f);
    std::fill_n(pdb, 4 * u, 0.0f);
    if (time == 0 || batch == 0 || u == 0) return absl::OkStatus();
    // Each piece's sum of its rows of dz.
    std::vector<float> piece_db(
        static_cast<size_t>(CeilDiv(batch, kSequenceRows) * 4 * u), 0.0f);
    const float* pg = a.gates->data<float>();
    const float* pcs = a.cs->data<float>();
    const float* phs = a.hs->data<float>();
    const float* pc0 = a.c0->data<float>();
    const float* pdhs = a.dhs->data<float>();
    const int32_t* len =
        a.lengths != nullptr ? a.lengths->data<int32_t>() : nullptr;
    // w_h^T (4 u x u), packed once for every step's product.
    const PackedMatrixF32 w_t(ctx->intra_op_pool(), 4 * u, u,
                              {a.w_h->data<float>(), 1, 4 * u});
    RN_RETURN_IF_ERROR(ForPieces(ctx, batch, [&](int64_t first, int64_t rows) {
      const TimeMajorRows at{batch, first};
      // This piece's gradients by h[t] (less dhs[t]) and c[t], carried
      // down the steps: dh0's and dc0's rows at the end.
      float* carry_h = pdh0 + first * u;
      float* carry_c = pdc0 + first * u;
      // A row at or past its length passes its state's gradients through
      // the step: they are kept here while the step's kernels run on every
      // row, and its gates get none.
      std::vector<float> keep_h, keep_c;
      std::vector<int64_t> frozen;  // this step's such rows
      for (int64_t t = time - 1; t >= 0; --t) {
        const float* cp = t == 0 ? pc0 + first * u : at.at(pcs, t - 1, u);
        float* dg = at.at(pdz, t, 4 * u);
        const float* dhs_t = at.at(pdhs, t, u);
        frozen.clear();
        for (int64_t r = 0; r < rows && len != nullptr; ++r) {
          if (t >= len[first + r]) frozen.push_back(r);
        }
        keep_h.resize(frozen.size() * u);
        keep_c.resize(frozen.size() * u);
        for (size_t k = 0; k < frozen.size(); ++k) {
          const int64_t r = frozen[k];
          for (int64_t j = 0; j < u; ++j) {
            keep_h[k * u + j] = dhs_t[r * u + j] + carry_h[r * u + j];
          }
          std::copy_n(carry_c + r * u, u, keep_c.data() + k * u);
        }
        LstmGradRows<float>(at.at(pg, t, 4 * u), cp, dhs_t, carry_h, carry_c,
                            nullptr, dg, carry_c, rows, u, /*activated=*/true);
        for (int64_t r : frozen) std::fill_n(dg + r * 4 * u, 4 * u, 0.0f);
        float* sum = piece_db.data() + first / kSequenceRows * 4 * u;
        for (int64_t r = 0; r < rows; ++r) {
          for (int64_t j = 0; j < 4 * u; ++j) sum[j] += dg[r * 4 * u + j];
        }
        w_t.Multiply(rows, dg, 4 * u, carry_h, u, /*accumulate=*/false);
        for (size_t k = 0; k < frozen.size(); ++k) {
          std::copy_n(keep_h.data() + k * u, u, carry_h + frozen[k] * u);
          std::copy_n(keep_c.data() + k * u, u, carry_c + frozen[k] * u);
        }
      }
      return absl::OkStatus();
    }));
    for (size_t i = 0; i < piece_db.size(); ++i)
      pdb[i % (4 * u)] += piece_db[i];
    ThreadPool* pool = ctx->intra_op_pool();
    RN_RETURN_IF_ERROR(GemmF32(pool, u, 4 * u, batch,
                               {a.h0->data<float>(), 1, u}, {pdz, 4 * u, 1},
                               pdw, 4 * u));
    return GemmF32(pool, u, 4 * u, (time - 1) * batch, {phs, 1, u},
                   {pdz + batch * 4 * u, 4 * u, 1}, pdw, 4 * u,
                   /*accumulate=*/true);
  }
};

RUNNEL_STATIC_INIT(RnnKernels) {
  RegisterKernelForTypeList<LstmCellKernel>("lstm_cell", FloatTypes{});
  RegisterKernelForTypeList<LstmCellGradKernel>("lstm_cell_grad", FloatTypes{});
  RegisterKernelForTypeList<GruCellKernel>("gru_cell", FloatTypes{});
  RegisterKernelForTypeList<GruCellGradKernel>("gru_cell_grad", FloatTypes{});
  RegisterKernel<LstmSequenceKernel>("lstm_sequence", kDeviceCpu, DType::kF32);
  RegisterKernel<LstmSequenceGradKernel>("lstm_sequence_grad", kDeviceCpu,
                                         DType::kF32);
}

}  // namespace
}  // namespace runnel
