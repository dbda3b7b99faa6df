// Helpers of the kernels that update variables, on the CPU and the GPU
// (kernels/cpu/state_kernels.cc, optim_kernels.cc, kernels/cuda/
// state_kernels.cc, optim_kernels.cc): finding a node's variables, and the
// read-modify-write of several variables at once that a fused optimizer
// update is.
#ifndef RUNNEL_KERNELS_COMMON_VARIABLE_UTIL_H_
#define RUNNEL_KERNELS_COMMON_VARIABLE_UTIL_H_

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "framework/kernel.h"
#include "framework/resource_mgr.h"
#include "framework/variable.h"

namespace runnel {

// The session's initialized variable `name`, its value moved to the
// kernel's device (Variable::MoveTo) when it was on another; FailedPrecondition
// naming it when there is none.
absl::StatusOr<std::shared_ptr<Variable>> FindVariable(OpKernelContext* ctx,
                                                       const std::string& name);

// The variables a node updates, one for each of its op's inputs named `ref`
// or `ref_*`, in order: the node feeding that input, or (inside a loop or
// branch, where the input is an imported value) the attribute `var` for
// `ref` and `var_*` for `ref_*` (interpreter/graph_builder.cc). Fails when
// one is missing or a variable is named twice.
absl::StatusOr<std::vector<std::string>> VariablesOf(const Node& node);

// The tensors of one fused update: the variables' current values (`old`)
// and their next values (`next`, allocated like `old` from `allocator`,
// uninitialised), in the order of VariablesOf.
struct VariableUpdate {
  std::vector<const Tensor*> old;
  std::vector<Tensor*> next;
};

// Replaces the values of `vars` at once: each value is first checked to
// have `shape`, then `write` fills every next value in one pass. Each variable
// is held (Variable::Update) until all are written, so no other update of them
// interleaves; on any error no value changes. Returns the first variable's new
// value. With `key` (OpKernelContext::write_key), an update already in
// changes nothing.
absl::StatusOr<Tensor> UpdateVariables(
    const std::vector<std::shared_ptr<Variable>>& vars, const Shape& shape,
    Allocator* allocator,
    const std::function<absl::Status(const VariableUpdate&)>& write,
    const WriteKey* key = nullptr);

// Changes the values of `vars` in place at once: each variable is held
// (nested Variable::Mutate, which first copies a value a reader still
// holds, with `copy`) until `write` has changed them all. `write` must
// check before it writes: on an error no value changes. Returns the first
// variable's new value.
absl::StatusOr<Tensor> MutateVariables(
    const std::vector<std::shared_ptr<Variable>>& vars,
    const std::function<absl::StatusOr<Tensor>(const Tensor&)>& copy,
    const std::function<absl::Status(const std::vector<Tensor*>&)>& write,
    const WriteKey* key = nullptr);

// FindVariable for each of VariablesOf(ctx->node()), in order.
absl::StatusOr<std::vector<std::shared_ptr<Variable>>> FindVariables(
    OpKernelContext* ctx, const std::vector<std::string>& names);

// The inputs of ctx's node from `first` on, but those in `skip`: a fused
// update's coefficients, each checked to be one element of input 0's dtype
// (InvalidArgument naming the op's input otherwise).
absl::StatusOr<std::vector<const Tensor*>> ScalarInputs(
    OpKernelContext* ctx, int first, const std::vector<int>& skip);

// The checks of scatter_add/sub/update on the host, before anything is
// written (the CPU's and the GPU's kernels fail alike): `updates` must be
// `indices` followed by the variable's shape without its first axis, and
// every index (`idx`, the values of indices) a row of the variable.
absl::Status CheckScatter(const std::string& op, const Shape& var,
                          const Shape& indices, const std::vector<int64_t>& idx,
                          const Shape& updates);

// The fused optimizer updates (framework/ops/optim_ops.cc): what the CPU and
// GPU kernels share. Compute finds the variables, checks the gradient and
// the scalars, and updates the variables through UpdateVariables with the
// device's Write; the sparse ones (sparse_apply_*) check the rows and
// update those rows in place through MutateVariables.
enum class ApplyRule { kSgd, kMomentum, kAdam };

class ApplyKernelBase : public OpKernel {
 public:
  explicit ApplyKernelBase(ApplyRule rule) : rule_(rule) {}
  absl::Status Init(const Node& node) override;
  absl::Status Compute(OpKernelContext* ctx) override;

 protected:
  // Fills u.next (the variable, then its slots) from u.old, the gradient
  // and the scalar inputs (in the op's order, each one element). With
  // `rows` (a sparse update) the gradient holds those rows of the
  // variable's, distinct and checked, and u.next is u.old (in place):
  // only the rows change.
  virtual absl::Status Write(OpKernelContext* ctx, const VariableUpdate& u,
                             const Tensor& grad,
                             const std::vector<const Tensor*>& scalars,
                             const std::vector<int64_t>* rows) = 0;
  // A copy of a variable's value on the kernel's device, for a sparse
  // update of a value a reader still holds.
  virtual absl::StatusOr<Tensor> CopyValue(OpKernelContext* ctx,
                                           const Tensor& value) {
    return value.Clone();
  }
  ApplyRule rule() const { return rule_; }
  bool nesterov() const { return nesterov_; }

 private:
  absl::Status ComputeSparse(OpKernelContext* ctx,
                             const std::vector<std::shared_ptr<Variable>>& vars,
                             const Tensor& grad, const Tensor& indices,
                             const std::vector<const Tensor*>& scalars);

  const ApplyRule rule_;
  bool nesterov_ = false;
  bool sparse_ = false;
  std::vector<std::string> variables_;
};

}  // namespace runnel

#endif  // RUNNEL_KERNELS_COMMON_VARIABLE_UTIL_H_
