// Kernels: the device code of an op, registered per (op, device type, dtype).
//
//   template <typename T>
//   class NegKernel : public OpKernel {
//    public:
//     absl::Status Compute(OpKernelContext* ctx) override {
//       const Tensor& x = ctx->input(0);
//       RN_ASSIGN_OR_RETURN(Tensor* y, ctx->allocate_output(0, x.shape()));
//       ...
//       return absl::OkStatus();
//     }
//   };
//   RUNNEL_STATIC_INIT(NegKernels) {
//     RegisterKernel<NegKernel<float>>("neg", kDeviceCpu, DType::kF32);
//   }
//
// A kernel object is made once per node per executor (or per eager call) by
// its factory, which may read attributes in `Init`; `Compute` may then run
// concurrently for different steps, so kernels keep no per-step state in
// members. Eager execution calls the same kernels (docs/architecture.md).
#ifndef RUNNEL_FRAMEWORK_KERNEL_H_
#define RUNNEL_FRAMEWORK_KERNEL_H_

#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/inlined_vector.h"
#include "absl/status/statusor.h"
#include "base/cancellation.h"
#include "base/status_macros.h"
#include "framework/device.h"
#include "framework/graph.h"
#include "framework/tensor.h"
#include "framework/variable.h"

namespace runnel {

// Feeds and fetches of one run, for the executor's `_feed`/`_fetch` nodes.
struct CallFrame {
  std::vector<Tensor> feeds;
  std::vector<Tensor> fetches;
  // Whether each fetch was set: one computed only on a branch that did not
  // run is dead and never reaches its `_fetch`.
  std::deque<bool> fetched;
};

// What lives for one run and no longer: the stacks that carry a loop's
// forward values to its gradient (stack_new/stack_push/stack_pop). The
// executor makes one per Run and frees it, and every stack, at the end.
class StepContainer {
 public:
  // A stack's element: the value itself, or (swap_memory) its copy in host
  // memory, which its device gives back (Device::SwapIn).
  struct Element {
    Tensor value;
    std::shared_ptr<SwappedValue> swapped;
  };

  int64_t NewStack();
  absl::Status Push(int64_t stack, int64_t index, Element element);
  // The element at `index`, removed unless `keep`; nullopt when nothing
  // was pushed there.
  absl::StatusOr<std::optional<Element>> Pop(int64_t stack, int64_t index,
                                             bool keep = false);

 private:
  std::mutex mu_;
  std::vector<absl::flat_hash_map<int64_t, Element>> stacks_;
};

// Internal error unless `dtype` is the dtype of the node's output `i`
// (what set_output checks); inline, as every forwarding node checks it.
absl::Status OutputDTypeError(const Node& node, int i, DType dtype);
inline absl::Status CheckOutputDType(const Node& node, int i, DType dtype) {
  if (dtype == node.output_dtype(i)) return absl::OkStatus();
  return OutputDTypeError(node, i, dtype);
}

// A kernel's inputs: inline, so a kernel of up to 4 inputs allocates no
// list for them (a loop runs several kernels an iteration).
using KernelInputs = absl::InlinedVector<const Tensor*, 4>;

class OpKernelContext {
 public:
  OpKernelContext(const Node& node, Device* device, KernelInputs inputs,
                  uint64_t global_seed, CallFrame* call_frame,
                  StepContainer* step = nullptr,
                  std::vector<Tensor>* reuse = nullptr)
      : node_(node),
        device_(device),
        inputs_(std::move(inputs)),
        outputs_(reuse != nullptr ? std::move(*reuse) : std::vector<Tensor>()),
        dead_(node.num_outputs(), false),
        global_seed_(global_seed),
        call_frame_(call_frame),
        step_(step) {
    // `reuse`: a list whose buffer the outputs take over (the executor
    // passes one list from kernel to kernel); its values are dropped.
    outputs_.clear();
    outputs_.resize(node.num_outputs());
  }

  const Node& node() const { return node_; }
  int num_inputs() const { return static_cast<int>(inputs_.size()); }
  const Tensor& input(int i) const { return *inputs_[i]; }
  int num_outputs() const { return static_cast<int>(outputs_.size()); }
  DType output_dtype(int i) const { return node_.output_dtype(i); }

  // Allocates output `i` with the node's output dtype and `shape`, in the
  // device's memory, or the host's for an output the kernel gives in host
  // memory (set_output_in_host below).
  absl::StatusOr<Tensor*> allocate_output(int i, Shape shape);
  // Which outputs the kernel gives in host memory (HostMemory below; the
  // executor's per-output flags, which outlive the context).
  void set_output_in_host(const std::vector<bool>* in_host) {
    output_in_host_ = in_host;
  }
  // Sets output `i` to an existing tensor (forwarding an input, a view).
  // Its dtype must be the node's output dtype.
  absl::Status set_output(int i, Tensor t);
  // Output `out` of `shape`, in input `in`'s buffer when the caller owns
  // that input slot (the executor does) and nothing else holds the buffer,
  // so the kernel may update it in place; otherwise freshly allocated.
  // `*forwarded` says which (the kernel then skips copying the input).
  absl::StatusOr<Tensor*> forward_input_or_allocate(int in, int out,
                                                    Shape shape,
                                                    bool* forwarded);
  // Output `out` in input `in`'s buffer under the same rule, or nullptr
  // (nothing allocated) when it cannot be.
  Tensor* forward_input(int in, int out, const Shape& shape);
  // Lets kernels take over input buffers nobody else holds (above). Only
  // a caller that discards the inputs after Compute may allow it.
  void allow_input_forwarding() { forwarding_ = true; }
  // Drops input `i`, when the caller allows forwarding (above): a kernel
  // that updates in place the state the input shows (scatter_*) must not
  // count itself as a reader. The input is empty afterwards.
  void release_input(int i) {
    if (forwarding_) *const_cast<Tensor*>(inputs_[i]) = Tensor();
  }
  Tensor& output(int i) { return outputs_[i]; }
  std::vector<Tensor>& outputs() { return outputs_; }
  // Output `i` carries a dead value (switch's untaken side; a pop of what
  // an untaken branch never pushed): its consumers do not run.
  void set_output_dead(int i) { dead_[i] = true; }
  bool output_dead(int i) const { return dead_[i]; }

  // The run's step container (nullptr outside an executor run), and where
  // in the loops this kernel runs: the frame instance (0 for the root) and
  // the iteration. Send/Recv keys carry both (common_runtime/rendezvous.h).
  StepContainer* step_container() const { return step_; }
  uint64_t frame_id() const { return frame_id_; }
  int64_t iteration() const { return iteration_; }
  void set_frame_iter(uint64_t frame, int64_t iter) {
    frame_id_ = frame;
    iteration_ = iter;
  }

  // Cancels the run's waiting kernels when it aborts
  // (base/cancellation.h); nullptr outside an executor run (eager calls).
  CancellationManager* cancellation() const { return cancellation_; }
  void set_cancellation(CancellationManager* c) { cancellation_ = c; }

  // The update this run's writes of variables belong to (UpdateTag;
  // nullptr but on a replicated parameter server), and this kernel's key
  // in it: kernels that write variables pass it, so that a retried update
  // writes once.
  void set_update(const UpdateTag* update) { update_ = update; }
  const UpdateTag* update() const { return update_; }
  const WriteKey* write_key();

  Device* device() const { return device_; }
  ResourceMgr* resources() const { return device_->resources(); }
  ThreadPool* intra_op_pool() const { return device_->intra_op_pool(); }
  uint64_t global_seed() const { return global_seed_; }
  CallFrame* call_frame() const { return call_frame_; }

 private:
  const Node& node_;
  Device* device_;
  KernelInputs inputs_;
  std::vector<Tensor> outputs_;
  absl::InlinedVector<bool, 4> dead_;
  uint64_t global_seed_;
  CallFrame* call_frame_;
  StepContainer* step_;
  CancellationManager* cancellation_ = nullptr;
  uint64_t frame_id_ = 0;
  int64_t iteration_ = 0;
  bool forwarding_ = false;
  const std::vector<bool>* output_in_host_ = nullptr;
  const UpdateTag* update_ = nullptr;
  std::optional<WriteKey> write_key_;
};

// The inputs and outputs that a kernel of a device whose memory is not the
// host's (a GPU) takes or gives in host memory, as TensorFlow's HostMemory
// does: a switch's predicate, a loop's condition, a stack's handle and
// index, read on the host to decide what runs next. The executor delivers
// each value in the memory its consumer takes it in (a copy where the
// producer gave it in the other), so such a kernel may read those inputs
// directly. A CPU kernel's memory is all host memory and ignores this.
struct HostMemory {
  std::vector<int> inputs = {};
  std::vector<int> outputs = {};
};

class OpKernel {
 public:
  virtual ~OpKernel() = default;
  // Reads attributes; called once by the factory. Errors carry the node.
  virtual absl::Status Init(const Node& node) { return absl::OkStatus(); }
  virtual absl::Status Compute(OpKernelContext* ctx) = 0;
  // Whether the executor should hand this kernel to the inter-op pool
  // rather than run it inline. Set by the factory from the node's static
  // output size (small outputs are cheap); kernels may override.
  virtual bool IsExpensive() const { return expensive_; }
  void set_expensive(bool e) { expensive_ = e; }

  // Whether input `i` / output `i` is in host memory (HostMemory above).
  bool input_in_host_memory(int i) const { return Has(host_memory_.inputs, i); }
  bool output_in_host_memory(int i) const {
    return Has(host_memory_.outputs, i);
  }
  void set_host_memory(HostMemory m) { host_memory_ = std::move(m); }

 private:
  static bool Has(const std::vector<int>& v, int i) {
    for (int x : v) {
      if (x == i) return true;
    }
    return false;
  }

  bool expensive_ = true;
  HostMemory host_memory_;
};

// A kernel that may finish later, on another thread (TensorFlow's
// AsyncOpKernel): it calls `done` exactly once, after setting its outputs,
// and the context lives until then. The executor starts it and goes on
// with other nodes, so a kernel that waits (for other workers, say) holds
// no thread while it does.
class AsyncOpKernel : public OpKernel {
 public:
  using Done = std::function<void(absl::Status)>;
  virtual void ComputeAsync(OpKernelContext* ctx, Done done) = 0;
  absl::Status Compute(OpKernelContext* ctx) final {
    return absl::InternalError("an asynchronous kernel was run synchronously");
  }
};

// Runs kernel->Compute, turning an allocation failure (a user asking for an
// enormous tensor) into ResourceExhausted instead of ending the process.
absl::Status ComputeSafely(OpKernel& kernel, OpKernelContext* ctx);

using KernelFactory =
    std::function<absl::StatusOr<std::unique_ptr<OpKernel>>(const Node&)>;

// Process-wide and filled during static initialisation.
class KernelRegistry {
 public:
  static KernelRegistry& Global();
  void Register(std::string op, std::string device_type, DType dtype,
                KernelFactory factory);
  // Makes the kernel for `node` on a device of `device_type`. NotFound
  // names the op, device type and dtype when none is registered.
  absl::StatusOr<std::unique_ptr<OpKernel>> Create(
      const Node& node, const std::string& device_type) const;
  bool Has(std::string_view op, std::string_view device_type,
           DType dtype) const;
  // Whether Create(node, device_type) would find a kernel (the placer puts
  // nodes only on devices that can run them).
  bool HasFor(const Node& node, std::string_view device_type) const;

 private:
  absl::flat_hash_map<std::string, KernelFactory> factories_;
};

// Registers kernel class K (default-constructible) for one dtype, with the
// inputs and outputs it takes in host memory on a device that is not the
// CPU.
template <typename K>
void RegisterKernel(std::string op, std::string device_type, DType dtype,
                    HostMemory host_memory = {}) {
  KernelRegistry::Global().Register(
      std::move(op), std::move(device_type), dtype,
      [host_memory](
          const Node& node) -> absl::StatusOr<std::unique_ptr<OpKernel>> {
        auto k = std::make_unique<K>();
        k->set_host_memory(host_memory);
        RN_RETURN_IF_ERROR(k->Init(node));
        return std::unique_ptr<OpKernel>(std::move(k));
      });
}

// Registers K<T> for each storage type T listed, e.g.
//   RegisterKernelForTypes<NegKernel, float, double, int32_t>("neg");
template <template <typename> class K, typename... Ts>
void RegisterKernelForTypes(const std::string& op,
                            const std::string& device_type = kDeviceCpu,
                            const HostMemory& host_memory = {}) {
  (RegisterKernel<K<Ts>>(op, device_type, DTypeOf<Ts>::value, host_memory),
   ...);
}

// Registers K (dtype-independent, e.g. reshape) for every dtype.
template <typename K>
void RegisterKernelForAllTypes(const std::string& op,
                               const std::string& device_type = kDeviceCpu,
                               const HostMemory& host_memory = {}) {
  for (DType d : kAllDTypes) RegisterKernel<K>(op, device_type, d, host_memory);
}

}  // namespace runnel

#endif  // RUNNEL_FRAMEWORK_KERNEL_H_
