// oneDNN (Debian's libdnnl, the engine PyTorch uses for convolutions) for
// the f32 convolutions (conv_kernels.cc) and matrix products
// (matmul_kernels.cc).
//
// Threading: this oneDNN runs on OpenMP, whose threads would fight the
// session's pools for the cores (OpenMP spin-waits). So oneDNN only ever
// runs single-threaded, on the intra-op pool's threads: work is cut into
// pieces (images of a batch, blocks of a product) that threads claim one at
// a time. The cuts depend on the shapes alone, so results do not depend on
// the number of threads.
//
// Errors: oneDNN's C++ API throws dnnl::error; DnnlStatus turns it into a
// status, so no exception leaves a kernel.
#ifndef RUNNEL_KERNELS_CPU_ONEDNN_H_
#define RUNNEL_KERNELS_CPU_ONEDNN_H_

#include <omp.h>

#include <atomic>
#include <functional>
#include <mutex>
#include <new>
#include <oneapi/dnnl/dnnl.hpp>

#include "absl/status/status.h"
#include "base/strings.h"
#include "kernels/cpu/eigen_support.h"

namespace runnel {

// The CPU engine, made once.
inline const dnnl::engine& DnnlEngine() {
  static const dnnl::engine* engine =
      new dnnl::engine(dnnl::engine::kind::cpu, 0);
  return *engine;
}

// Attributes for primitives whose pieces run concurrently: each execution
// brings its own scratchpad (the library's own is shared).
inline dnnl::primitive_attr DnnlUserScratchpad() {
  dnnl::primitive_attr attr;
  attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
  return attr;
}

// Makes oneDNN on the calling thread single-threaded; call before creating
// or running a primitive (OpenMP's thread count is per thread).
inline void DnnlSingleThread() {
  if (omp_get_max_threads() != 1) omp_set_num_threads(1);
}

// Runs fn(), turning oneDNN's exceptions (and allocation failures) into a
// status that names `what`.
inline absl::Status DnnlStatus(std::string_view what,
                               const std::function<void()>& fn) {
  try {
    fn();
  } catch (const dnnl::error& e) {
    if (e.status == dnnl_out_of_memory) {
      return absl::ResourceExhaustedError(StrCat(what, ": out of memory"));
    }
    return absl::InternalError(StrCat(what, ": oneDNN: ", e.what()));
  } catch (const std::bad_alloc&) {
    return absl::ResourceExhaustedError(StrCat(what, ": out of memory"));
  }
  return absl::OkStatus();
}

// Runs fn(i) for each piece i in [0, count) on the pool's threads (null:
// the caller alone), each thread claiming the next piece, with oneDNN
// single-threaded; returns the first error.
inline absl::Status DnnlPieces(ThreadPool* pool, int64_t count,
                               std::string_view what,
                               const std::function<void(int64_t)>& fn) {
  const int shards = static_cast<int>(
      std::min<int64_t>(pool == nullptr ? 1 : pool->num_threads(), count));
  std::atomic<int64_t> next{0};
  std::mutex mu;
  absl::Status status;
  RunShards(shards > 1 ? pool : nullptr, shards, [&](int) {
    DnnlSingleThread();
    for (int64_t i; (i = next.fetch_add(1)) < count;) {
      absl::Status s = DnnlStatus(what, [&] { fn(i); });
      if (!s.ok()) {
        std::lock_guard<std::mutex> lock(mu);
        if (status.ok()) status = s;
        next.store(count);  // stop claiming
      }
    }
  });
  return status;
}

}  // namespace runnel

#endif  // RUNNEL_KERNELS_CPU_ONEDNN_H_
