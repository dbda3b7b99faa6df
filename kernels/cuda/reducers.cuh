// Reducers shared by the GPU templates (reduce.cu, nn.cu): an identity and
// an associative combine each, as cub::BlockReduce takes them, with the CPU
// kernels' semantics (max and min propagate NaN). Only .cu files include
// this.
#ifndef RUNNEL_KERNELS_CUDA_REDUCERS_CUH_
#define RUNNEL_KERNELS_CUDA_REDUCERS_CUH_

#include <cuda/std/limits>
#include <type_traits>

namespace runnel::cuda {

inline __device__ float Exp(float x) { return expf(x); }
inline __device__ double Exp(double x) { return exp(x); }
inline __device__ float Log(float x) { return logf(x); }
inline __device__ double Log(double x) { return log(x); }

template <typename A>
struct SumR {
  __device__ static A Identity() { return A(0); }
  __device__ A operator()(A a, A b) const { return a + b; }
};
template <typename A>
struct ProdR {
  __device__ static A Identity() { return A(1); }
  __device__ A operator()(A a, A b) const { return a * b; }
};

// The smallest and largest A: infinities for floats.
template <typename A>
__device__ A Lowest() {
  if constexpr (std::is_floating_point_v<A>) {
    return -::cuda::std::numeric_limits<A>::infinity();
  } else {
    return ::cuda::std::numeric_limits<A>::lowest();
  }
}
template <typename A>
__device__ A Highest() {
  if constexpr (std::is_floating_point_v<A>) {
    return ::cuda::std::numeric_limits<A>::infinity();
  } else {
    return ::cuda::std::numeric_limits<A>::max();
  }
}

// max and min propagate NaN, as the CPU's (Eigen's PropagateNaN).
template <typename A>
struct MaxR {
  __device__ static A Identity() { return Lowest<A>(); }
  __device__ A operator()(A a, A b) const {
    if (a != a) return a;
    if (b != b) return b;
    return a < b ? b : a;
  }
};
template <typename A>
struct MinR {
  __device__ static A Identity() { return Highest<A>(); }
  __device__ A operator()(A a, A b) const {
    if (a != a) return a;
    if (b != b) return b;
    return b < a ? b : a;
  }
};

}  // namespace runnel::cuda

#endif  // RUNNEL_KERNELS_CUDA_REDUCERS_CUH_
