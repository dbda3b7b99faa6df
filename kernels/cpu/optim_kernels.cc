// CPU kernels of the fused optimizer updates (framework/ops/optim_ops.cc): one
// pass over the elements with kernels/common/optim_math.h, split over the
// intra-op pool. This file is compiled with -ffp-contract=off (CMakeLists),
// so that no multiply-add is fused and the results equal the separate ops',
// and with -fno-math-errno, so that sqrt vectorises (errno is never read).
#include <cmath>

#include "framework/kernel.h"
#include "kernels/common/optim_math.h"
#include "kernels/common/variable_util.h"
#include "kernels/cpu/eigen_types.h"

namespace runnel {
namespace {

// Rough cycles an element, for ParallelFor (the dense loops vectorise).
constexpr int64_t kApplyCost = 4;

// Arithmetic in T's accumulation type, each result rounded to T as the
// separate op's output is (16-bit floats compute in f32).
template <typename T>
struct CpuArith {
  using E = EigenType<T>;
  using A = AccumType<T>;
  static A Round(A x) { return static_cast<A>(static_cast<E>(x)); }
  static A Add(A a, A b) { return Round(a + b); }
  static A Sub(A a, A b) { return Round(a - b); }
  static A Mul(A a, A b) { return Round(a * b); }
  static A Div(A a, A b) { return Round(a / b); }
  static A Sqrt(A a) { return Round(std::sqrt(a)); }
};

template <typename T, ApplyRule kRule>
class ApplyKernel : public ApplyKernelBase {
 public:
  ApplyKernel() : ApplyKernelBase(kRule) {}

 protected:
  using Ar = CpuArith<T>;
  using E = EigenType<T>;
  using A = AccumType<T>;

  static const E* In(const Tensor& t) {
    return reinterpret_cast<const E*>(t.data<T>());
  }
  static E* Out(Tensor* t) { return reinterpret_cast<E*>(t->data<T>()); }
  static A Scalar(const Tensor* t) { return static_cast<A>(In(*t)[0]); }

  absl::Status Write(OpKernelContext* ctx, const VariableUpdate& u,
                     const Tensor& grad,
                     const std::vector<const Tensor*>& scalars,
                     const std::vector<int64_t>* rows) override {
    const E* v = In(*u.old[0]);
    const E* g = In(grad);
    E* v1 = Out(u.next[0]);
    const A lr = Scalar(scalars[0]);
    // element(i, w): element i of the variable and its slots, with element
    // w of the gradient (a sparse update's rows are distinct, so no two
    // threads touch one element).
    const int64_t n = grad.num_elements();
    const int64_t row = rows == nullptr || rows->empty()
                            ? 1
                            : n / static_cast<int64_t>(rows->size());
    auto run = [&](auto element) {
      ctx->intra_op_pool()->ParallelFor(
          n, kApplyCost, [&](int64_t b, int64_t e) {
            // Dense: element i reads and writes index i only, also where
            // an output is its input's buffer; no dependence between
            // iterations, which lets the loop vectorise.
            if (rows == nullptr) {
#pragma GCC ivdep
              for (int64_t w = b; w < e; ++w) element(w, w);
            } else {
              for (int64_t w = b; w < e; ++w) {
                element((*rows)[w / row] * row + w % row, w);
              }
            }
          });
    };
    if constexpr (kRule == ApplyRule::kSgd) {
      run([&](int64_t i, int64_t w) {
        v1[i] = static_cast<E>(optim_math::Sgd<Ar, A>(
            static_cast<A>(v[i]), static_cast<A>(g[w]), lr));
      });
    } else if constexpr (kRule == ApplyRule::kMomentum) {
      const E* buf = In(*u.old[1]);
      E* buf1 = Out(u.next[1]);
      const A momentum = Scalar(scalars[1]);
      const bool nesterov = this->nesterov();
      run([&](int64_t i, int64_t w) {
        A b = static_cast<A>(buf[i]);
        v1[i] = static_cast<E>(optim_math::Momentum<Ar, A>(
            static_cast<A>(v[i]), &b, static_cast<A>(g[w]), lr, momentum,
            nesterov));
        buf1[i] = static_cast<E>(b);
      });
    } else {
      const E* m = In(*u.old[1]);
      const E* s = In(*u.old[2]);
      E* m1 = Out(u.next[1]);
      E* s1 = Out(u.next[2]);
      // Scalars: beta1, 1 - beta1, beta2, 1 - beta2, eps, correction1,
      // correction2.
      const optim_math::AdamCoefficients<A> k{
          optim_math::AdamStep<Ar, A>(lr, Scalar(scalars[6])),
          Scalar(scalars[1]),
          Scalar(scalars[2]),
          Scalar(scalars[3]),
          Scalar(scalars[4]),
          Scalar(scalars[5]),
          Scalar(scalars[7])};
      run([&](int64_t i, int64_t w) {
        A mi = static_cast<A>(m[i]), si = static_cast<A>(s[i]);
        v1[i] = static_cast<E>(optim_math::Adam<Ar, A>(
            static_cast<A>(v[i]), &mi, &si, static_cast<A>(g[w]), k));
        m1[i] = static_cast<E>(mi);
        s1[i] = static_cast<E>(si);
      });
    }
    return absl::OkStatus();
  }
};

template <typename T>
using ApplySgd = ApplyKernel<T, ApplyRule::kSgd>;
template <typename T>
using ApplyMomentum = ApplyKernel<T, ApplyRule::kMomentum>;
template <typename T>
using ApplyAdam = ApplyKernel<T, ApplyRule::kAdam>;

RUNNEL_STATIC_INIT(OptimKernels) {
  RegisterKernelForTypes<ApplySgd, Half, BFloat16, float, double>("apply_sgd");
  RegisterKernelForTypes<ApplyMomentum, Half, BFloat16, float, double>(
      "apply_momentum");
  RegisterKernelForTypes<ApplyAdam, Half, BFloat16, float, double>(
      "apply_adam");
  RegisterKernelForTypes<ApplyMomentum, Half, BFloat16, float, double>(
      "sparse_apply_momentum");
  RegisterKernelForTypes<ApplyAdam, Half, BFloat16, float, double>(
      "sparse_apply_adam");
}

}  // namespace
}  // namespace runnel
