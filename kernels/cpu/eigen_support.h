// Eigen and threading helpers for CPU kernels.
//
// Include only from kernels/cpu/*.cc: it pulls in Eigen's Tensor module,
// which is heavy. It gives a kernel
//   - EigenDevice(ctx): an Eigen::ThreadPoolDevice over the intra-op pool,
//     for `out.device(d) = expr` evaluation of Eigen tensor expressions;
//   - RunShards(pool, n, fn): fn(0..n-1) in parallel with the caller;
//   - EigenData<T>(t): a tensor's data as Eigen's scalar type (the types
//     themselves are in eigen_types.h), LoadRun/StoreRun for a contiguous
//     run of it in the accumulation type, and ToF32/FromF32 for kernels
//     that compute the 16-bit floats in f32.
#ifndef RUNNEL_KERNELS_CPU_EIGEN_SUPPORT_H_
#define RUNNEL_KERNELS_CPU_EIGEN_SUPPORT_H_

#ifndef EIGEN_USE_THREADS
#define EIGEN_USE_THREADS
#endif

#include <cstdint>
#include <functional>
#include <type_traits>
#include <unsupported/Eigen/CXX11/Tensor>
#include <unsupported/Eigen/CXX11/ThreadPool>
#include <vector>

#include "base/thread_pool.h"
#include "framework/dtype.h"
#include "framework/kernel.h"
#include "kernels/cpu/eigen_types.h"

namespace runnel {

// Eigen evaluation on the kernel's intra-op pool. The device borrows the
// pool; it is cheap to make per Compute call.
inline Eigen::ThreadPoolDevice EigenDevice(OpKernelContext* ctx) {
  ThreadPool* pool = ctx->intra_op_pool();
  return Eigen::ThreadPoolDevice(pool->eigen_pool(), pool->num_threads());
}

// Runs fn(i) for i in [0, n) in parallel on the calling thread and `pool`
// (ThreadPool::RunClaimed; all inline when `pool` is null), returning when
// all are done. Shards must not block on each other.
inline void RunShards(ThreadPool* pool, int n,
                      const std::function<void(int)>& fn) {
  if (pool == nullptr || n <= 1) {
    for (int i = 0; i < n; ++i) fn(i);
    return;
  }
  pool->RunClaimed(n, [&fn](int64_t i) { fn(static_cast<int>(i)); });
}

template <typename T>
const EigenType<T>* EigenData(const Tensor& t) {
  return reinterpret_cast<const EigenType<T>*>(t.data<T>());
}
template <typename T>
EigenType<T>* EigenMutableData(Tensor* t) {
  return reinterpret_cast<EigenType<T>*>(t->data<T>());
}

// A contiguous run of T as an Eigen array expression of its accumulation
// type (f32 for the 16-bit floats).
template <typename T>
auto LoadRun(const EigenType<T>* p, int64_t n) {
  return Eigen::Map<const Eigen::Array<EigenType<T>, Eigen::Dynamic, 1>>(p, n)
      .template cast<AccumType<T>>();
}

// Writes an expression of T's accumulation type to a contiguous run of T,
// rounding once.
template <typename T, class Expr>
void StoreRun(const Expr& e, EigenType<T>* p) {
  Eigen::Map<Eigen::Array<EigenType<T>, Eigen::Dynamic, 1>> out(p, e.size());
  if constexpr (std::is_same_v<EigenType<T>, AccumType<T>>) {
    out = e;
  } else {
    out = e.template cast<EigenType<T>>();
  }
}

// f32 copy of a tensor of 16-bit floats (T = Half or BFloat16), for kernels
// that compute those in f32; converted on `device`.
template <typename T>
Tensor ToF32(const Eigen::ThreadPoolDevice& device, const Tensor& t) {
  Tensor f(DType::kF32, t.shape());
  Eigen::TensorMap<Eigen::Tensor<const EigenType<T>, 1>> in(EigenData<T>(t),
                                                            t.num_elements());
  Eigen::TensorMap<Eigen::Tensor<float, 1>> out(f.data<float>(),
                                                t.num_elements());
  out.device(device) = in.template cast<float>();
  return f;
}

// Rounds f32 `from` into `to`, a T tensor with as many elements.
template <typename T>
void FromF32(const Eigen::ThreadPoolDevice& device, const Tensor& from,
             Tensor* to) {
  Eigen::TensorMap<Eigen::Tensor<const float, 1>> in(from.data<float>(),
                                                     from.num_elements());
  Eigen::TensorMap<Eigen::Tensor<EigenType<T>, 1>> out(EigenMutableData<T>(to),
                                                       to->num_elements());
  out.device(device) = in.template cast<EigenType<T>>();
}

}  // namespace runnel

#endif  // RUNNEL_KERNELS_CPU_EIGEN_SUPPORT_H_
