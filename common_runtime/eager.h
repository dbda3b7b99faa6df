// Eager execution: run one op's kernel on concrete tensors, without a graph.
//
//   EagerContext ctx({.num_threads = 2, .seed = 0});
//   absl::StatusOr<std::vector<Tensor>> out =
//       ctx.Execute("matmul", {a, b}, {{"transpose_b", true}});
//
// The same shape function checks the call and the same registered kernel
// computes it as in a graph, so eager and graph results are bit-identical
// (docs/architecture.md). Stateful ops (random, variables) keep their state
// in the context's resource manager under the name passed to Execute.
//
// Thread-safety: Execute may be called from several threads at once.
#ifndef RUNNEL_COMMON_RUNTIME_EAGER_H_
#define RUNNEL_COMMON_RUNTIME_EAGER_H_

#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "base/source_span.h"
#include "base/thread_pool.h"
#include "framework/attr_value.h"
#include "framework/device.h"
#include "framework/resource_mgr.h"
#include "framework/tensor.h"

namespace runnel {

struct EagerOptions {
  int num_threads = 0;  // 0 = all cores
  uint64_t seed = 0;    // global seed for random ops
};

class EagerContext {
 public:
  explicit EagerContext(EagerOptions options = {});
  ~EagerContext();

  // Runs `op` on `inputs`. `name` names the call for stateful ops and for
  // errors (default: the op name); `span` is attached to errors.
  absl::StatusOr<std::vector<Tensor>> Execute(const std::string& op,
                                              std::vector<Tensor> inputs,
                                              AttrMap attrs = {},
                                              const std::string& name = "",
                                              const SourceSpan& span = {});
  // Shorthand for ops with one output.
  absl::StatusOr<Tensor> Execute1(const std::string& op,
                                  std::vector<Tensor> inputs,
                                  AttrMap attrs = {},
                                  const std::string& name = "",
                                  const SourceSpan& span = {});

  Device* device() { return device_.get(); }
  ResourceMgr* resources() { return &resources_; }
  uint64_t seed() const { return options_.seed; }

 private:
  EagerOptions options_;
  ThreadPool intra_op_pool_;
  ResourceMgr resources_;
  std::unique_ptr<Device> device_;
};

}  // namespace runnel

#endif  // RUNNEL_COMMON_RUNTIME_EAGER_H_
