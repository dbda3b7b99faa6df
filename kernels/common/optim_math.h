// The element-wise math of the fused optimizer updates (framework/ops/
// optim_ops.cc), shared by the CPU kernels (kernels/cpu/optim_kernels.cc)
// and the GPU's (kernels/cuda/optim.cu), so that both compute exactly what
// the separate ops of stdlib/optim.rnl compute. Plain C++ that nvcc also
// compiles (no Abseil, no runtime headers).
//
// `Ar` supplies the arithmetic on the accumulation type A, each operation
// rounded to the variable's dtype as a separate op's output would be, and
// never contracted into a fused multiply-add (the CPU file is compiled with
// -ffp-contract=off; the GPU uses the _rn intrinsics). Sqrt is correctly
// rounded on both (the CPU's sqrt kernel, Eigen's AVX-512 code, may be an
// ulp off):
//
//   static A Add(A, A), Sub(A, A), Mul(A, A), Div(A, A), Sqrt(A);
#ifndef RUNNEL_KERNELS_COMMON_OPTIM_MATH_H_
#define RUNNEL_KERNELS_COMMON_OPTIM_MATH_H_

#if defined(__CUDACC__)
#define RN_HOST_DEVICE __host__ __device__
#else
#define RN_HOST_DEVICE
#endif

namespace runnel::optim_math {

// v -= lr * g
template <typename Ar, typename A>
RN_HOST_DEVICE inline A Sgd(A v, A g, A lr) {
  return Ar::Sub(v, Ar::Mul(lr, g));
}

// buf = momentum * buf + g;  v -= lr * buf
// (nesterov: v -= lr * (g + momentum * buf))
template <typename Ar, typename A>
RN_HOST_DEVICE inline A Momentum(A v, A* buf, A g, A lr, A momentum,
                                 bool nesterov) {
  const A b = Ar::Add(Ar::Mul(momentum, *buf), g);
  *buf = b;
  const A d = nesterov ? Ar::Add(g, Ar::Mul(momentum, b)) : b;
  return Ar::Sub(v, Ar::Mul(lr, d));
}

// Adam's scalars: `step` is lr / correction1 (computed once, AdamStep).
template <typename A>
struct AdamCoefficients {
  A step, beta1, one_minus_beta1, beta2, one_minus_beta2, eps, correction2;
};

template <typename Ar, typename A>
RN_HOST_DEVICE inline A AdamStep(A lr, A correction1) {
  return Ar::Div(lr, correction1);
}

// m = beta1 * m + (1 - beta1) * g;  s = beta2 * s + (1 - beta2) * g^2;
// v -= (step * m) / (sqrt(s / correction2) + eps)
template <typename Ar, typename A>
RN_HOST_DEVICE inline A Adam(A v, A* m, A* s, A g,
                             const AdamCoefficients<A>& k) {
  const A m1 = Ar::Add(Ar::Mul(k.beta1, *m), Ar::Mul(k.one_minus_beta1, g));
  const A s1 =
      Ar::Add(Ar::Mul(k.beta2, *s), Ar::Mul(k.one_minus_beta2, Ar::Mul(g, g)));
  *m = m1;
  *s = s1;
  const A denominator = Ar::Add(Ar::Sqrt(Ar::Div(s1, k.correction2)), k.eps);
  return Ar::Sub(v, Ar::Div(Ar::Mul(k.step, m1), denominator));
}

}  // namespace runnel::optim_math

#endif  // RUNNEL_KERNELS_COMMON_OPTIM_MATH_H_
