// GPU kernels of the binary arithmetic ops (the CPU's:
// kernels/cpu/cwise_binary_kernels.cc), with NumPy broadcasting.
#include <vector>

#include "base/strings.h"
#include "kernels/cuda/cwise_kernels.h"

namespace runnel::gpu_cwise {

absl::StatusOr<cuda::Broadcast> MakeBroadcast(const Shape& a, const Shape& b,
                                              const Shape& out) {
  const int r = out.rank();
  auto strides = [r](const Shape& s) {
    std::vector<int64_t> st(r, 0);
    int64_t stride = 1;
    for (int i = s.rank() - 1; i >= 0; --i) {
      st[i + r - s.rank()] = s.dim(i) == 1 ? 0 : stride;
      stride *= s.dim(i);
    }
    return st;
  };
  const std::vector<int64_t> as = strides(a), bs = strides(b);
  std::vector<int64_t> dims, sa, sb;  // outermost first
  for (int d = 0; d < r; ++d) {
    const int64_t n = out.dim(d);
    if (n == 1) continue;
    if (!dims.empty() && sa.back() == as[d] * n && sb.back() == bs[d] * n) {
      dims.back() *= n;
      sa.back() = as[d];
      sb.back() = bs[d];
      continue;
    }
    dims.push_back(n);
    sa.push_back(as[d]);
    sb.push_back(bs[d]);
  }
  if (dims.size() > static_cast<size_t>(cuda::kMaxDims)) {
    return absl::UnimplementedError(StrCat(
        "broadcasting ", a.ToString(), " against ", b.ToString(), " needs ",
        dims.size(), " dims on the GPU (at most ", cuda::kMaxDims, ")"));
  }
  cuda::Broadcast bc;
  bc.rank = static_cast<int>(dims.size());
  for (int d = 0; d < bc.rank; ++d) {
    bc.dims[d] = dims[d];
    bc.a_strides[d] = sa[d];
    bc.b_strides[d] = sb[d];
  }
  return bc;
}

namespace {

RUNNEL_STATIC_INIT(GpuCwiseBinaryKernels) {
  Binary<BinaryOp::kAdd>("add", kNumbers);
  Binary<BinaryOp::kSub>("sub", kNumbers);
  Binary<BinaryOp::kMul>("mul", kNumbers);
  // Integer div gives a float, and integer floordiv, mod and pow check
  // their operands on the host: those stay on the CPU.
  Binary<BinaryOp::kDiv>("div", kFloats);
  Binary<BinaryOp::kFloorDiv>("floordiv", kFloats);
  Binary<BinaryOp::kMod>("mod", kFloats);
  Binary<BinaryOp::kPow>("pow", kFloats);
  Binary<BinaryOp::kMaximum>("maximum", kNumbers);
  Binary<BinaryOp::kMinimum>("minimum", kNumbers);
}

}  // namespace
}  // namespace runnel::gpu_cwise
