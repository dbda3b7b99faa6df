#include "framework/kernel.h"

#include "base/errors.h"
#include "base/strings.h"

namespace runnel {
namespace {

std::string Key(std::string_view op, std::string_view device, DType dtype) {
  return StrCat(op, "|", device, "|", DTypeName(dtype));
}

// Outputs at most this many elements in all make a node cheap: it runs
// inline on the scheduling thread instead of hopping to the pool.
constexpr int64_t kCheapOutputElements = 4096;

bool IsCheap(const Node& node) {
  int64_t total = 0;
  for (const TensorSpec& o : node.outputs()) {
    int64_t n = o.shape.num_elements();
    if (n < 0) return false;
    total += n;
  }
  return total <= kCheapOutputElements;
}

}  // namespace

absl::StatusOr<Tensor*> OpKernelContext::allocate_output(int i, Shape shape) {
  if (!shape.IsFullyDefined()) {
    return absl::InternalError(
        StrCat("output shape ", shape.ToString(), " is not defined"));
  }
  const bool host = output_in_host_ != nullptr && (*output_in_host_)[i];
  outputs_[i] = Tensor(node_.output_dtype(i), std::move(shape),
                       host ? nullptr : device_->allocator());
  return &outputs_[i];
}

Tensor* OpKernelContext::forward_input(int in, int out, const Shape& shape) {
  const Tensor& x = *inputs_[in];
  if (!forwarding_ || !x.RefCountIsOne() ||
      x.dtype() != node_.output_dtype(out) || x.shape() != shape) {
    return nullptr;
  }
  outputs_[out] = x;
  return &outputs_[out];
}

absl::StatusOr<Tensor*> OpKernelContext::forward_input_or_allocate(
    int in, int out, Shape shape, bool* forwarded) {
  Tensor* t = forward_input(in, out, shape);
  *forwarded = t != nullptr;
  if (t != nullptr) return t;
  return allocate_output(out, std::move(shape));
}

absl::Status OutputDTypeError(const Node& node, int i, DType dtype) {
  return absl::InternalError(StrCat("output ", i, " has dtype ",
                                    DTypeName(dtype), ", expected ",
                                    DTypeName(node.output_dtype(i))));
}

absl::Status OpKernelContext::set_output(int i, Tensor t) {
  RN_RETURN_IF_ERROR(CheckOutputDType(node_, i, t.dtype()));
  outputs_[i] = std::move(t);
  return absl::OkStatus();
}

int64_t StepContainer::NewStack() {
  std::lock_guard<std::mutex> lock(mu_);
  stacks_.emplace_back();
  return static_cast<int64_t>(stacks_.size()) - 1;
}

absl::Status StepContainer::Push(int64_t stack, int64_t index,
                                 Element element) {
  std::lock_guard<std::mutex> lock(mu_);
  if (stack < 0 || stack >= static_cast<int64_t>(stacks_.size())) {
    return absl::InvalidArgumentError(
        StrCat("no stack ", stack, " in this run"));
  }
  stacks_[stack][index] = std::move(element);
  return absl::OkStatus();
}

absl::StatusOr<std::optional<StepContainer::Element>> StepContainer::Pop(
    int64_t stack, int64_t index, bool keep) {
  std::lock_guard<std::mutex> lock(mu_);
  if (stack < 0 || stack >= static_cast<int64_t>(stacks_.size())) {
    return absl::InvalidArgumentError(
        StrCat("no stack ", stack, " in this run"));
  }
  auto it = stacks_[stack].find(index);
  if (it == stacks_[stack].end()) return std::optional<Element>();
  if (keep) return std::optional<Element>(it->second);
  Element e = std::move(it->second);
  stacks_[stack].erase(it);
  return std::optional<Element>(std::move(e));
}

absl::Status ComputeSafely(OpKernel& kernel, OpKernelContext* ctx) {
  absl::Status s;
  try {
    s = kernel.Compute(ctx);
  } catch (const AllocationFailed& e) {
    return absl::ResourceExhaustedError(StrCat(
        ctx->node().op(), ": ", OutOfMemoryMessage(e.bytes(), e.detail())));
  } catch (const std::bad_alloc&) {
    return absl::ResourceExhaustedError(
        StrCat(ctx->node().op(), ": out of memory"));
  } catch (const std::exception& e) {
    // A library call that throws (std::length_error from a huge vector,
    // say) must not reach std::terminate on a worker thread.
    return absl::InternalError(StrCat(ctx->node().op(), ": ", e.what()));
  }
  for (int i = 0; s.ok() && i < ctx->num_outputs(); ++i) {
    if (ctx->output(i).empty() && !ctx->output_dead(i)) {
      s = absl::InternalError(
          StrCat(ctx->node().op(), ": output ", i, " was not produced"));
    }
  }
  return s;
}

KernelRegistry& KernelRegistry::Global() {
  static KernelRegistry* const kRegistry = new KernelRegistry();
  return *kRegistry;
}

void KernelRegistry::Register(std::string op, std::string device_type,
                              DType dtype, KernelFactory factory) {
  factories_[Key(op, device_type, dtype)] = std::move(factory);
}

bool KernelRegistry::Has(std::string_view op, std::string_view device_type,
                         DType dtype) const {
  return factories_.contains(Key(op, device_type, dtype));
}

bool KernelRegistry::HasFor(const Node& node,
                            std::string_view device_type) const {
  absl::StatusOr<DType> dtype =
      KernelDType(node.op_def(), node.attrs(), node.input_dtypes());
  return dtype.ok() && Has(node.op(), device_type, *dtype);
}

absl::StatusOr<std::unique_ptr<OpKernel>> KernelRegistry::Create(
    const Node& node, const std::string& device_type) const {
  absl::StatusOr<DType> dtype =
      KernelDType(node.op_def(), node.attrs(), node.input_dtypes());
  if (!dtype.ok()) return AttachNode(dtype.status(), node.name(), node.span());
  auto it = factories_.find(Key(node.op(), device_type, *dtype));
  if (it == factories_.end()) {
    return AttachNode(absl::UnimplementedError(
                          StrCat(node.op(), ": no ", device_type,
                                 " kernel for dtype ", DTypeName(*dtype))),
                      node.name(), node.span());
  }
  absl::StatusOr<std::unique_ptr<OpKernel>> k = it->second(node);
  if (!k.ok()) return AttachNode(k.status(), node.name(), node.span());
  (*k)->set_expensive(!IsCheap(node));
  return k;
}

const WriteKey* OpKernelContext::write_key() {
  if (update_ == nullptr) return nullptr;
  if (!write_key_.has_value()) {
    write_key_ = WriteKey{
        .writer = update_->writer,
        .seq = update_->seq,
        .write = StrCat(node_.name(), "@", frame_id_, ":", iteration_)};
  }
  return &*write_key_;
}

}  // namespace runnel
