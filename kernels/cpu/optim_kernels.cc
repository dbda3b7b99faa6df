// CPU kernels of the fused optimizer updates (framework/ops/optim_ops.cc): one
// pass over the elements with kernels/common/optim_math.h, split over the
// intra-op pool. This file is compiled with -ffp-contract=off (CMakeLists),
// so that no multiply-add is fused and the results equal the separate ops',
// and with -fno-math-errno, so that sqrt vectorises (errno is never read).
#include <cmath>
#include <functional>

#include "base/strings.h"
#include "framework/kernel.h"
#include "framework/ops/kernel_checks.h"
#include "framework/shape_fns.h"
#include "kernels/common/optim_math.h"
#include "kernels/common/variable_util.h"
#include "kernels/cpu/eigen_types.h"
#include "kernels/cpu/gemm.h"

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

// Adam's coefficients from its scalar inputs in the op's order: lr, beta1,
// 1 - beta1, beta2, 1 - beta2, eps, correction1, correction2.
template <typename T>
optim_math::AdamCoefficients<AccumType<T>> AdamCoefficientsOf(
    const std::vector<const Tensor*>& scalars) {
  using A = AccumType<T>;
  auto at = [&](int i) {
    return static_cast<A>(
        reinterpret_cast<const EigenType<T>*>(scalars[i]->data<T>())[0]);
  };
  return {optim_math::AdamStep<CpuArith<T>, A>(at(0), at(6)),
          at(1),
          at(2),
          at(3),
          at(4),
          at(5),
          at(7)};
}

// One element's momentum: the variable's next value, its buffer's in *buf1
// (which may be buf's own).
template <typename T, typename E = EigenType<T>>
inline E MomentumElement(E v, E buf, E g, AccumType<T> lr,
                         AccumType<T> momentum, bool nesterov, E* buf1) {
  using A = AccumType<T>;
  A b = static_cast<A>(buf);
  const E out = static_cast<E>(optim_math::Momentum<CpuArith<T>, A>(
      static_cast<A>(v), &b, static_cast<A>(g), lr, momentum, nesterov));
  *buf1 = static_cast<E>(b);
  return out;
}

// One element's Adam: the variable's next value, its moments' in *m1, *s1
// (which may be m's and s's own).
template <typename T, typename E = EigenType<T>>
inline E AdamElement(E v, E m, E s, E g,
                     const optim_math::AdamCoefficients<AccumType<T>>& k, E* m1,
                     E* s1) {
  using A = AccumType<T>;
  A mi = static_cast<A>(m), si = static_cast<A>(s);
  const E out = static_cast<E>(optim_math::Adam<CpuArith<T>, A>(
      static_cast<A>(v), &mi, &si, static_cast<A>(g), k));
  *m1 = static_cast<E>(mi);
  *s1 = static_cast<E>(si);
  return out;
}

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
        v1[i] = MomentumElement<T>(v[i], buf[i], g[w], lr, momentum, nesterov,
                                   &buf1[i]);
      });
    } else {
      const E* m = In(*u.old[1]);
      const E* s = In(*u.old[2]);
      E* m1 = Out(u.next[1]);
      E* s1 = Out(u.next[2]);
      const optim_math::AdamCoefficients<A> k = AdamCoefficientsOf<T>(scalars);
      run([&](int64_t i, int64_t w) {
        v1[i] = AdamElement<T>(v[i], m[i], s[i], g[w], k, &m1[i], &s1[i]);
      });
    }
    return absl::OkStatus();
  }
};

// Adam on `count` elements of a variable and its moments, in place, with
// the gradient g (not a macro's argument: the pragma would not survive).
void AdamInPlace(float* v, float* m, float* s, const float* g, int64_t count,
                 const optim_math::AdamCoefficients<float>& k) {
#pragma GCC ivdep
  for (int64_t i = 0; i < count; ++i) {
    v[i] = AdamElement<float>(v[i], m[i], s[i], g[i], k, &m[i], &s[i]);
  }
}

// The updates by a product (apply_sgd_matmul, apply_adam_matmul: Session's
// rewrite of an update whose gradient is a matmul nothing else reads,
// common_runtime/fuse_updates.h), in place: the variable and its slots are
// held (MutateVariables, which first copies a value a reader still holds)
// while Update writes them. Compute checks the scalars, that the variable
// and its slots are f32 of one shape and that a @ b has it, then calls
// Update with the product's plan and operands. Inputs: the variable and its
// slots (`ref*`), then lr, a and b, then the other scalars.
class UpdateByProductKernel : public MatMulAttrsKernel {
 public:
  absl::Status Init(const Node& node) override {
    RN_RETURN_IF_ERROR(MatMulAttrsKernel::Init(node));
    RN_ASSIGN_OR_RETURN(variables_, VariablesOf(node));
    return absl::OkStatus();
  }

  absl::Status Compute(OpKernelContext* ctx) override {
    RN_ASSIGN_OR_RETURN(std::vector<std::shared_ptr<Variable>> vars,
                        FindVariables(ctx, variables_));
    const int a_in = static_cast<int>(vars.size()) + 1;
    RN_ASSIGN_OR_RETURN(
        const std::vector<const Tensor*> scalars,
        ScalarInputs(ctx, static_cast<int>(vars.size()), {a_in, a_in + 1}));
    const Tensor& a = ctx->input(a_in);
    const Tensor& b = ctx->input(a_in + 1);
    // The values as the variables' nodes read them: as readers of the
    // buffers they would make Mutate copy them.
    for (size_t i = 0; i < vars.size(); ++i) {
      ctx->release_input(static_cast<int>(i));
    }
    const std::string& op = ctx->node().op();
    RN_ASSIGN_OR_RETURN(
        Tensor next,
        MutateVariables(
            vars, nullptr,
            [&](const std::vector<Tensor*>& values) -> absl::Status {
              for (const Tensor* v : values) {
                if (v->dtype() == DType::kF32 &&
                    v->shape() == values[0]->shape()) {
                  continue;
                }
                std::string got;
                for (const Tensor* t : values) {
                  got = StrCat(got, got.empty() ? "" : ", ",
                               DTypeName(t->dtype()), t->shape().ToString());
                }
                return absl::InvalidArgumentError(StrCat(
                    op, ": the variable", values.size() > 1 ? " and slots" : "",
                    " must be f32", values.size() > 1 ? " of one shape" : "",
                    ", got ", got));
              }
              RN_ASSIGN_OR_RETURN(const MatMulPlan d,
                                  PlanMatMulAdd(*values[0], a, b, ta_, tb_));
              return Update(ctx, d,
                            StoredMatrix(a.data<float>(), d.a_cols, d.ta),
                            StoredMatrix(b.data<float>(), d.b_cols, d.tb),
                            scalars, values);
            },
            ctx->write_key()));
    return ctx->set_output(0, std::move(next));
  }

 protected:
  // Writes the variable and its slots (`values`, in place) from the product
  // of `a` and `b` (as `d` plans it) and the scalars (lr first).
  virtual absl::Status Update(OpKernelContext* ctx, const MatMulPlan& d,
                              ConstMatrixF32 a, ConstMatrixF32 b,
                              const std::vector<const Tensor*>& scalars,
                              const std::vector<Tensor*>& values) = 0;

  // The product of `a` and `b` (as `d` plans it) by GemmF32Rows, each block
  // handed to update(at, count, g): g is the gradient's elements [at, at +
  // count), those of the variable and its slots (row-major) to update.
  static absl::Status ByRows(
      OpKernelContext* ctx, const MatMulPlan& d, ConstMatrixF32 a,
      ConstMatrixF32 b,
      const std::function<void(int64_t at, int64_t count, const float* g)>&
          update) {
    return GemmF32Rows(ctx->intra_op_pool(), d.m, d.n, d.k, a, b,
                       [&](int64_t first, int64_t rows, const float* g) {
                         update(first * d.n, rows * d.n, g);
                       });
  }

 private:
  std::vector<std::string> variables_;
};

// apply_sgd_matmul(ref, lr, a, b): ref -= lr * (a @ b), the sgemm adding
// -lr times the product into the variable's value (beta = 1): the
// gradient is never written, nor read back by a pass of its own.
class ApplySgdMatMulKernel : public UpdateByProductKernel {
 protected:
  absl::Status Update(OpKernelContext* ctx, const MatMulPlan& d,
                      ConstMatrixF32 a, ConstMatrixF32 b,
                      const std::vector<const Tensor*>& scalars,
                      const std::vector<Tensor*>& values) override {
    return GemmF32(ctx->intra_op_pool(), d.m, d.n, d.k, a, b,
                   values[0]->data<float>(), d.n, /*accumulate=*/true,
                   -scalars[0]->data<float>()[0]);
  }
};

// Momentum on `count` elements of a variable and its buffer, in place, as
// AdamInPlace.
void MomentumInPlace(float* v, float* buf, const float* g, int64_t count,
                     float lr, float momentum, bool nesterov) {
#pragma GCC ivdep
  for (int64_t i = 0; i < count; ++i) {
    v[i] = MomentumElement<float>(v[i], buf[i], g[i], lr, momentum, nesterov,
                                  &buf[i]);
  }
}

// apply_momentum_matmul(ref, ref_buf, lr, a, b, momentum): apply_momentum
// with the gradient a @ b, computed by GemmF32Rows in blocks of rows, each
// applied to those rows of the variable and its buffer while in the cache.
class ApplyMomentumMatMulKernel : public UpdateByProductKernel {
 public:
  absl::Status Init(const Node& node) override {
    RN_RETURN_IF_ERROR(UpdateByProductKernel::Init(node));
    RN_ASSIGN_OR_RETURN(nesterov_, node.attr<bool>("nesterov"));
    return absl::OkStatus();
  }

 protected:
  absl::Status Update(OpKernelContext* ctx, const MatMulPlan& d,
                      ConstMatrixF32 a, ConstMatrixF32 b,
                      const std::vector<const Tensor*>& scalars,
                      const std::vector<Tensor*>& values) override {
    const float lr = scalars[0]->data<float>()[0];
    const float momentum = scalars[1]->data<float>()[0];
    float* v = values[0]->data<float>();
    float* buf = values[1]->data<float>();
    return ByRows(ctx, d, a, b, [&](int64_t at, int64_t count, const float* g) {
      MomentumInPlace(v + at, buf + at, g, count, lr, momentum, nesterov_);
    });
  }

 private:
  bool nesterov_ = false;
};

// apply_adam_matmul(ref, ref_m, ref_v, lr, a, b, beta1, ...): apply_adam
// with the gradient a @ b, computed by GemmF32Rows in blocks of rows, each
// applied to those rows of the variable and its moments while in the cache:
// the gradient, as large as the variable, is never written whole nor read
// back, and the moments change in place rather than into new buffers.
class ApplyAdamMatMulKernel : public UpdateByProductKernel {
 protected:
  absl::Status Update(OpKernelContext* ctx, const MatMulPlan& d,
                      ConstMatrixF32 a, ConstMatrixF32 b,
                      const std::vector<const Tensor*>& scalars,
                      const std::vector<Tensor*>& values) override {
    const optim_math::AdamCoefficients<float> k =
        AdamCoefficientsOf<float>(scalars);
    float* v = values[0]->data<float>();
    float* m = values[1]->data<float>();
    float* s = values[2]->data<float>();
    return ByRows(ctx, d, a, b, [&](int64_t at, int64_t count, const float* g) {
      AdamInPlace(v + at, m + at, s + at, g, count, k);
    });
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
  RegisterKernel<ApplySgdMatMulKernel>("apply_sgd_matmul", kDeviceCpu,
                                       DType::kF32);
  RegisterKernel<ApplyMomentumMatMulKernel>("apply_momentum_matmul", kDeviceCpu,
                                            DType::kF32);
  RegisterKernel<ApplyAdamMatMulKernel>("apply_adam_matmul", kDeviceCpu,
                                        DType::kF32);
}

}  // namespace
}  // namespace runnel
