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
#include "base/thread_pool.h"

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

// Runs fn(i) for each piece i in [0, count) on the calling thread and the
// pool's (null: the caller alone; ThreadPool::RunClaimed), with oneDNN
// single-threaded; returns the first error.
inline absl::Status DnnlPieces(ThreadPool* pool, int64_t count,
                               std::string_view what,
                               const std::function<void(int64_t)>& fn) {
  std::atomic<bool> failed{false};
  std::mutex mu;
  absl::Status status;
  auto piece = [&](int64_t i) {
    if (failed.load(std::memory_order_relaxed)) return;  // stop early
    DnnlSingleThread();
    absl::Status s = DnnlStatus(what, [&] { fn(i); });
    if (!s.ok()) {
      std::lock_guard<std::mutex> lock(mu);
      if (status.ok()) status = s;
      failed.store(true);
    }
  };
  if (pool == nullptr) {
    for (int64_t i = 0; i < count; ++i) piece(i);
  } else {
    pool->RunClaimed(count, piece);
  }
  return status;
}

}  // namespace runnel

#endif  // RUNNEL_KERNELS_CPU_ONEDNN_H_
