// The reductions (reduce.h): one pair of kernels serves every op. A
// reduction is a reducer (an associative combine with an identity), a
// loader (input element -> accumulator) and a storer (accumulator ->
// output); the input is [outer, reduced, inner] (framework/reduce_layout.h):
//
//   inner == 1 and long runs: a block of threads per output reduces its
//       contiguous run (cub::BlockReduce);
//   otherwise: a thread per output walks its column (neighbouring threads
//       read neighbouring elements).
//
// A reduced dim too long for the outputs to fill the GPU is cut into
// chunks (SplitReduce): a first pass stores partial accumulators in the
// scratch, a second combines them.
#include <cstdint>
#include <cub/block/block_reduce.cuh>
#include <cuda/std/limits>
#include <type_traits>

#include "kernels/cuda/elem.cuh"
#include "kernels/cuda/reduce.h"
#include "kernels/cuda/reduce_plan.h"
#include "kernels/cuda/reducers.cuh"

namespace runnel::cuda {
namespace {

// ---- reducers (the others are in reducers.cuh) ----------------------------

struct AllR {
  __device__ static bool Identity() { return true; }
  __device__ bool operator()(bool a, bool b) const { return a && b; }
};
struct AnyR {
  __device__ static bool Identity() { return false; }
  __device__ bool operator()(bool a, bool b) const { return a || b; }
};

// argmax / argmin: a value and its position along the reduced dim. The
// extreme wins, NaN above all; among equals the first position, so the
// result is the CPU's whatever order the pairs combine in.
template <typename C>
struct ArgAcc {
  C v;
  int64_t i;
};
template <typename C, bool kMax>
struct ArgR {
  using A = ArgAcc<C>;
  __device__ static A Identity() {
    return {kMax ? Lowest<C>() : Highest<C>(),
            ::cuda::std::numeric_limits<int64_t>::max()};
  }
  __device__ A operator()(const A& a, const A& b) const {
    const bool a_nan = a.v != a.v, b_nan = b.v != b.v;
    if (a_nan != b_nan) return a_nan ? a : b;
    if (!a_nan) {
      if (kMax ? a.v > b.v : a.v < b.v) return a;
      if (kMax ? b.v > a.v : b.v < a.v) return b;
    }
    return a.i < b.i ? a : b;
  }
};

// ---- loaders: (input index, output index, position r) -> accumulator --------

template <typename T, typename A>
struct Plain {
  const T* in;
  __device__ A operator()(int64_t i, int64_t, int64_t) const {
    return static_cast<A>(Widen(in[i]));
  }
};
template <typename T>
struct Squared {
  const T* in;
  __device__ double operator()(int64_t i, int64_t, int64_t) const {
    const double x = static_cast<double>(Widen(in[i]));
    return x * x;
  }
};
template <typename T, typename A>
struct Positioned {
  const T* in;
  __device__ A operator()(int64_t i, int64_t, int64_t r) const {
    return {Widen(in[i]), r};
  }
};

// The shift of logsumexp: the maximum where finite, else 0.
template <typename A>
__device__ A Shift(A m) {
  return isfinite(m) ? m : A(0);
}
template <typename T, typename A>
struct ExpShifted {
  const T* in;
  const A* maxima;
  __device__ A operator()(int64_t i, int64_t o, int64_t) const {
    return Exp(static_cast<A>(Widen(in[i])) - Shift(maxima[o]));
  }
};
template <typename A>
struct FromPartial {
  const A* partial;
  __device__ A operator()(int64_t i, int64_t, int64_t) const {
    return partial[i];
  }
};

// ---- storers: (output slot, accumulator)
// -------------------------------------

template <typename A>
struct ToPartial {
  A* partial;
  __device__ void operator()(int64_t q, A a) const { partial[q] = a; }
};
template <typename T, typename A>
struct ToOut {
  T* out;
  __device__ void operator()(int64_t q, A a) const { out[q] = Narrow<T>(a); }
};
// The mean of floats divides in the accumulator (0 / 0 is NaN for an empty
// dim); of integers, the i64 sum divided truncating toward zero.
template <typename T, typename A>
struct MeanOut {
  T* out;
  int64_t count;
  __device__ void operator()(int64_t q, A a) const {
    if constexpr (std::is_floating_point_v<A>) {
      out[q] = Narrow<T>(a / static_cast<A>(count));
    } else {
      out[q] = static_cast<T>(static_cast<int64_t>(a) / count);
    }
  }
};
// l2_loss: the f64 sum halved, rounded to T through T's compute type, as
// the CPU does.
template <typename T>
struct HalfOut {
  T* out;
  __device__ void operator()(int64_t q, double a) const {
    out[q] = Narrow<T>(static_cast<Wide<T>>(a / 2));
  }
};
template <typename T, typename A>
struct LogSumExpOut {
  T* out;
  const A* maxima;
  __device__ void operator()(int64_t q, A sum) const {
    const A m = maxima[q];
    out[q] = Narrow<T>(isfinite(m) ? m + Log(sum) : m);
  }
};
template <typename C>
struct IndexOut {
  int32_t* out;
  __device__ void operator()(int64_t q, const ArgAcc<C>& a) const {
    out[q] = static_cast<int32_t>(a.i);
  }
};

// ---- the two kernels --------------------------------------------------------

// Slot q = (o * chunks + c) * inner + j reduces positions r of chunk c,
// [c * rows, min(reduced, (c + 1) * rows)), of output o * inner + j.
struct Slots {
  int64_t outer, reduced, inner, chunks, rows;
  __host__ __device__ int64_t count() const { return outer * chunks * inner; }
};

// inner == 1: one block per slot.
template <class R, typename A, class Load, class Store>
__global__ void __launch_bounds__(kThreads)
    ReduceRuns(Slots s, Load load, Store store) {
  using BlockReduce = cub::BlockReduce<A, kThreads>;
  __shared__ typename BlockReduce::TempStorage temp;
  const int64_t n = s.outer * s.chunks;
  for (int64_t q = blockIdx.x; q < n; q += gridDim.x) {
    const int64_t o = q / s.chunks, c = q % s.chunks;
    const int64_t r0 = c * s.rows;
    const int64_t r1 = r0 + s.rows < s.reduced ? r0 + s.rows : s.reduced;
    A acc = R::Identity();
    for (int64_t r = r0 + threadIdx.x; r < r1; r += blockDim.x) {
      acc = R()(acc, load(o * s.reduced + r, o, r));
    }
    const A total = BlockReduce(temp).Reduce(acc, R());
    if (threadIdx.x == 0) store(q, total);
    __syncthreads();  // `temp` serves the block's next slot
  }
}

// One thread per slot.
template <class R, typename A, class Load, class Store>
__global__ void ReduceColumns(Slots s, Load load, Store store) {
  const int64_t n = s.count();
  for (int64_t q = FirstIndex(); q < n; q += GridStride()) {
    const int64_t j = q % s.inner;
    const int64_t c = (q / s.inner) % s.chunks;
    const int64_t o = q / (s.inner * s.chunks);
    const int64_t r0 = c * s.rows;
    const int64_t r1 = r0 + s.rows < s.reduced ? r0 + s.rows : s.reduced;
    const int64_t out_index = o * s.inner + j;
    A acc = R::Identity();
    for (int64_t r = r0; r < r1; ++r) {
      acc = R()(acc, load((o * s.reduced + r) * s.inner + j, out_index, r));
    }
    store(q, acc);
  }
}

// A run shorter than this is walked by one thread.
constexpr int64_t kMinBlockRun = 64;

template <class R, typename A, class Load, class Store>
cudaError_t Pass(const Slots& s, Load load, Store store, cudaStream_t stream) {
  const int64_t n = s.count();
  if (n == 0) return cudaSuccess;
  if (s.inner == 1 && s.rows >= kMinBlockRun) {
    const unsigned blocks =
        static_cast<unsigned>(n < (1 << 20) ? n : (1 << 20));
    ReduceRuns<R, A><<<blocks, kThreads, 0, stream>>>(s, load, store);
  } else {
    ReduceColumns<R, A><<<Blocks(n), kThreads, 0, stream>>>(s, load, store);
  }
  return cudaGetLastError();
}

// Partial results fill the scratch from its start.
template <class R, typename A, class Load, class Store>
cudaError_t Run(int64_t outer, int64_t reduced, int64_t inner, Load load,
                Store store, void* scratch, cudaStream_t stream) {
  static_assert(sizeof(A) <= kPartialBytes);
  const ReduceSplit split = SplitReduce(outer, reduced, inner);
  if (split.chunks == 1) {
    return Pass<R, A>({outer, reduced, inner, 1, reduced}, load, store, stream);
  }
  A* partial = static_cast<A*>(scratch);
  cudaError_t e = Pass<R, A>({outer, reduced, inner, split.chunks, split.rows},
                             load, ToPartial<A>{partial}, stream);
  if (e != cudaSuccess) return e;
  return Pass<R, A>({outer, split.chunks, inner, 1, split.chunks},
                    FromPartial<A>{partial}, store, stream);
}

template <typename T>
cudaError_t ReduceOfType(ReduceOp op, const T* in, void* out, int64_t outer,
                         int64_t reduced, int64_t inner, void* scratch,
                         cudaStream_t stream) {
  using W = Wide<T>;
  T* y = static_cast<T*>(out);
  if constexpr (std::is_same_v<T, bool>) {
    if (op == ReduceOp::kAll) {
      return Run<AllR, bool>(outer, reduced, inner, Plain<T, bool>{in},
                             ToOut<T, bool>{y}, scratch, stream);
    }
    if (op == ReduceOp::kAny) {
      return Run<AnyR, bool>(outer, reduced, inner, Plain<T, bool>{in},
                             ToOut<T, bool>{y}, scratch, stream);
    }
    return cudaErrorNotSupported;
  } else {
    switch (op) {
      case ReduceOp::kSum: {
        using A = Wide<Wrap<T>>;
        return Run<SumR<A>, A>(outer, reduced, inner, Plain<T, A>{in},
                               ToOut<T, A>{y}, scratch, stream);
      }
      case ReduceOp::kProd: {
        using A = Wide<Wrap<T>>;
        return Run<ProdR<A>, A>(outer, reduced, inner, Plain<T, A>{in},
                                ToOut<T, A>{y}, scratch, stream);
      }
      case ReduceOp::kMean: {
        using A = std::conditional_t<kFloat<T>, W, uint64_t>;
        return Run<SumR<A>, A>(outer, reduced, inner, Plain<T, A>{in},
                               MeanOut<T, A>{y, reduced}, scratch, stream);
      }
      case ReduceOp::kMax:
        return Run<MaxR<W>, W>(outer, reduced, inner, Plain<T, W>{in},
                               ToOut<T, W>{y}, scratch, stream);
      case ReduceOp::kMin:
        return Run<MinR<W>, W>(outer, reduced, inner, Plain<T, W>{in},
                               ToOut<T, W>{y}, scratch, stream);
      case ReduceOp::kArgMax:
        return Run<ArgR<W, true>, ArgAcc<W>>(
            outer, reduced, inner, Positioned<T, ArgAcc<W>>{in},
            IndexOut<W>{static_cast<int32_t*>(out)}, scratch, stream);
      case ReduceOp::kArgMin:
        return Run<ArgR<W, false>, ArgAcc<W>>(
            outer, reduced, inner, Positioned<T, ArgAcc<W>>{in},
            IndexOut<W>{static_cast<int32_t*>(out)}, scratch, stream);
      case ReduceOp::kLogSumExp:
      case ReduceOp::kL2Loss:
        if constexpr (kFloat<T>) {
          if (op == ReduceOp::kL2Loss) {
            return Run<SumR<double>, double>(outer, reduced, inner,
                                             Squared<T>{in}, HalfOut<T>{y},
                                             scratch, stream);
          }
          // The maxima after the partial results (reduce_plan.h).
          const ReduceSplit split = SplitReduce(outer, reduced, inner);
          const int64_t partials =
              split.chunks > 1 ? outer * split.chunks * inner : 0;
          W* maxima = reinterpret_cast<W*>(static_cast<char*>(scratch) +
                                           partials * kPartialBytes);
          cudaError_t e =
              Run<MaxR<W>, W>(outer, reduced, inner, Plain<T, W>{in},
                              ToPartial<W>{maxima}, scratch, stream);
          if (e != cudaSuccess) return e;
          return Run<SumR<W>, W>(
              outer, reduced, inner, ExpShifted<T, W>{in, maxima},
              LogSumExpOut<T, W>{y, maxima}, scratch, stream);
        }
        return cudaErrorNotSupported;
      case ReduceOp::kAll:
      case ReduceOp::kAny:
        return cudaErrorNotSupported;
    }
    return cudaErrorNotSupported;
  }
}

struct PermuteArgs {
  int rank;
  int64_t dims[kMaxPermuteDims];
  int64_t strides[kMaxPermuteDims];
};

template <typename U>
__global__ void Permute(const U* in, U* out, int64_t n, PermuteArgs p) {
  for (int64_t i = FirstIndex(); i < n; i += GridStride()) {
    int64_t rest = i, from = 0;
    for (int d = p.rank - 1; d >= 0; --d) {
      from += (rest % p.dims[d]) * p.strides[d];
      rest /= p.dims[d];
    }
    out[i] = in[from];
  }
}

template <typename U>
cudaError_t PermuteOf(const void* in, void* out, int64_t n, int rank,
                      const int64_t* dims, const int64_t* strides,
                      cudaStream_t stream) {
  PermuteArgs p{};
  p.rank = rank;
  for (int d = 0; d < rank; ++d) {
    p.dims[d] = dims[d];
    p.strides[d] = strides[d];
  }
  Permute<U><<<Blocks(n), kThreads, 0, stream>>>(static_cast<const U*>(in),
                                                 static_cast<U*>(out), n, p);
  return cudaGetLastError();
}

}  // namespace

cudaError_t LaunchReduce(ReduceOp op, ElemType type, const void* in, void* out,
                         int64_t outer, int64_t reduced, int64_t inner,
                         void* scratch, cudaStream_t stream) {
  return WithElemType(type, [&](auto tag) {
    using T = decltype(tag);
    return ReduceOfType<T>(op, static_cast<const T*>(in), out, outer, reduced,
                           inner, scratch, stream);
  });
}

cudaError_t LaunchPermute(int elem_bytes, const void* in, void* out, int64_t n,
                          int rank, const int64_t* dims, const int64_t* strides,
                          cudaStream_t stream) {
  if (rank < 0 || rank > kMaxPermuteDims) return cudaErrorInvalidValue;
  if (n == 0) return cudaSuccess;
  switch (elem_bytes) {
    case 1:
      return PermuteOf<uint8_t>(in, out, n, rank, dims, strides, stream);
    case 2:
      return PermuteOf<uint16_t>(in, out, n, rank, dims, strides, stream);
    case 4:
      return PermuteOf<uint32_t>(in, out, n, rank, dims, strides, stream);
    case 8:
      return PermuteOf<uint64_t>(in, out, n, rank, dims, strides, stream);
    default:
      return cudaErrorInvalidValue;
  }
}

}  // namespace runnel::cuda
