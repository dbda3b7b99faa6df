// Queues (docs/queues.md): a `queue` node stands for the Queue resource
// (framework/queue.h) named by its attribute `queue`, on the node's device;
// its output is a handle that every op on the queue takes as input 0, which
// orders them after it and colocates them with it (common_runtime/placer.cc).
// Each of them also carries the queue's name and components (attributes
// "components", "dtype_0", "shape_0", ...), so shapes are checked here.
#include <vector>

#include "base/status_macros.h"
#include "base/strings.h"
#include "framework/op_registry.h"
#include "framework/queue.h"
#include "framework/shape_fns.h"

namespace runnel {
namespace {

absl::Status CheckHandle(const ShapeContext& c) {
  if (c.num_inputs() == 0 || c.dtype(0) != DType::kI64 ||
      !c.shape(0).IsCompatibleWith(Shape{})) {
    return absl::InvalidArgumentError("input 0 must be a queue");
  }
  return absl::OkStatus();
}

Specs QueueShape(const ShapeContext& c) {
  RN_ASSIGN_OR_RETURN(QueueComponents q, GetQueueComponents(c.attrs()));
  if (q.dtypes.empty()) {
    return absl::InvalidArgumentError("a queue needs at least one component");
  }
  for (size_t i = 0; i < q.shapes.size(); ++i) {
    if (!q.shapes[i].IsFullyDefined()) {
      return absl::InvalidArgumentError(StrCat("the shape of component ", i,
                                               " must be fully known, got ",
                                               q.shapes[i].ToString()));
    }
  }
  RN_ASSIGN_OR_RETURN(int64_t capacity, c.attr<int64_t>("capacity"));
  RN_ASSIGN_OR_RETURN(int64_t min_after, c.attr<int64_t>("min_after_dequeue"));
  if (capacity < 1) {
    return absl::InvalidArgumentError(
        StrCat("capacity must be at least 1, got ", capacity));
  }
  if (min_after < 0 || min_after >= capacity) {
    return absl::InvalidArgumentError(
        StrCat("min_after_dequeue must be in [0, capacity), got ", min_after,
               " for a capacity of ", capacity));
  }
  return One(DType::kI64, Shape{});
}

// (queue, components...): an element, or with `many` a batch of them.
Specs EnqueueShape(const ShapeContext& c, bool many) {
  RN_RETURN_IF_ERROR(CheckHandle(c));
  RN_ASSIGN_OR_RETURN(QueueComponents q, GetQueueComponents(c.attrs()));
  const size_t given = static_cast<size_t>(c.num_inputs() - 1);
  if (given != q.dtypes.size()) {
    return absl::InvalidArgumentError(StrCat(
        "the queue holds ", q.dtypes.size(), " component(s), got ", given));
  }
  int64_t batch = -1;
  for (size_t i = 0; i < given; ++i) {
    const TensorSpec& in = c.input(static_cast<int>(i) + 1);
    Shape element = in.shape;
    if (many && !in.shape.unknown_rank()) {
      if (in.shape.rank() == 0) {
        return absl::InvalidArgumentError(
            StrCat("component ", i, " must be a batch (its first axis), got ",
                   in.ToString()));
      }
      const int64_t b = in.shape.dim(0);
      if (b >= 0 && batch >= 0 && b != batch) {
        return absl::InvalidArgumentError(
            StrCat("the components' batches differ: ", batch, " and ", b));
      }
      if (b >= 0) batch = b;
      element = Shape(std::vector<int64_t>(in.shape.dims().begin() + 1,
                                           in.shape.dims().end()));
    }
    const bool shape_ok = (many && in.shape.unknown_rank()) ||
                          element.IsCompatibleWith(q.shapes[i]);
    if (in.dtype != q.dtypes[i] || !shape_ok) {
      const TensorSpec want{q.dtypes[i], q.shapes[i]};
      return absl::InvalidArgumentError(StrCat(
          "component ", i, " of the queue is ", want.ToString(),
          many ? " (after the batch axis)" : "", ", got ", in.ToString()));
    }
  }
  return std::vector<TensorSpec>{};
}

// (queue[, n]): one element, or with `many` n of them stacked.
Specs DequeueShape(const ShapeContext& c, bool many) {
  RN_RETURN_IF_ERROR(CheckHandle(c));
  RN_ASSIGN_OR_RETURN(QueueComponents q, GetQueueComponents(c.attrs()));
  int64_t n = -1;
  if (many) {
    if ((c.dtype(1) != DType::kI32 && c.dtype(1) != DType::kI64) ||
        !c.shape(1).IsCompatibleWith(Shape{})) {
      return absl::InvalidArgumentError(
          StrCat("n must be an integer scalar, got ", c.input(1).ToString()));
    }
    if (const Tensor* v = c.value(1)) {
      RN_ASSIGN_OR_RETURN(n, v->ScalarAsInt());
      if (n < 0) {
        return absl::InvalidArgumentError(
            StrCat("cannot dequeue ", n, " elements"));
      }
    }
  }
  std::vector<TensorSpec> out;
  for (size_t i = 0; i < q.dtypes.size(); ++i) {
    std::vector<int64_t> dims;
    if (many) dims.push_back(n);
    dims.insert(dims.end(), q.shapes[i].dims().begin(),
                q.shapes[i].dims().end());
    out.push_back({q.dtypes[i], Shape(std::move(dims))});
  }
  return out;
}

Specs SizeShape(const ShapeContext& c) {
  RN_RETURN_IF_ERROR(CheckHandle(c));
  return One(DType::kI32, Shape{});
}

Specs CloseShape(const ShapeContext& c) {
  RN_RETURN_IF_ERROR(CheckHandle(c));
  return std::vector<TensorSpec>{};
}

}  // namespace

RUNNEL_REGISTER_OP(
    OpDefBuilder("queue")
        .Cost(KernelClass::kFree)
        .OptionalAttr("components")
        .IndexedAttr("dtype")
        .IndexedAttr("shape")
        .Outputs({"handle"})
        .Attr("capacity", int64_t{1})
        .Attr("shuffle", false)
        .Attr("min_after_dequeue", int64_t{0})
        .Attr("seed", int64_t{-1})
        .Attr("queue", std::string())
        .Stateful()
        .Shape(QueueShape)
        .Doc("The queue resource named `queue` (made on first use) of "
             "elements with components `dtype_i`, `shape_i`; gives its "
             "handle. Shuffling draws with a seed from `seed` (or the node "
             "name) and the global seed."));
RUNNEL_REGISTER_OP(OpDefBuilder("enqueue")
                       .OptionalAttr("components")
                       .OptionalAttr("queue")
                       .IndexedAttr("dtype")
                       .IndexedAttr("shape")
                       .Inputs({"queue", "components"})
                       .Variadic()
                       .Stateful()
                       .Shape([](const ShapeContext& c) {
                         return EnqueueShape(c, false);
                       })
                       .Doc("Adds one element; waits while the queue is "
                            "full. Cancelled when the queue is closed."));
RUNNEL_REGISTER_OP(OpDefBuilder("enqueue_many")
                       .OptionalAttr("components")
                       .OptionalAttr("queue")
                       .IndexedAttr("dtype")
                       .IndexedAttr("shape")
                       .Inputs({"queue", "components"})
                       .Variadic()
                       .Stateful()
                       .Shape([](const ShapeContext& c) {
                         return EnqueueShape(c, true);
                       })
                       .Doc("Adds each row (first axis) of the components "
                            "as an element; waits while the queue is full."));
RUNNEL_REGISTER_OP(OpDefBuilder("dequeue")
                       .OptionalAttr("components")
                       .OptionalAttr("queue")
                       .IndexedAttr("dtype")
                       .IndexedAttr("shape")
                       .Inputs({"queue"})
                       .Outputs({"components"})
                       .Stateful()
                       .Shape([](const ShapeContext& c) {
                         return DequeueShape(c, false);
                       })
                       .Doc("Removes one element; waits while the queue is "
                            "empty. OutOfRange when it is closed and "
                            "empty."));
RUNNEL_REGISTER_OP(OpDefBuilder("dequeue_many")
                       .OptionalAttr("components")
                       .OptionalAttr("queue")
                       .IndexedAttr("dtype")
                       .IndexedAttr("shape")
                       .Inputs({"queue", "n"})
                       .Outputs({"components"})
                       .Stateful()
                       .Shape([](const ShapeContext& c) {
                         return DequeueShape(c, true);
                       })
                       .Doc("Removes n elements, stacked along a new first "
                            "axis; waits until there are enough. OutOfRange "
                            "when the queue is closed with fewer."));
RUNNEL_REGISTER_OP(OpDefBuilder("queue_size")
                       .OptionalAttr("components")
                       .OptionalAttr("queue")
                       .IndexedAttr("dtype")
                       .IndexedAttr("shape")
                       .Inputs({"queue"})
                       .Outputs({"size"})
                       .Stateful()
                       .Shape(SizeShape)
                       .Doc("The number of elements in the queue (i32)."));
RUNNEL_REGISTER_OP(
    OpDefBuilder("queue_close")
        .OptionalAttr("components")
        .OptionalAttr("queue")
        .IndexedAttr("dtype")
        .IndexedAttr("shape")
        .Inputs({"queue"})
        .Attr("cancel_pending_enqueues", false)
        .Stateful()
        .Shape(CloseShape)
        .Doc("Closes the queue: later enqueues fail, dequeues get what is "
             "left and then OutOfRange. Pending enqueues still complete "
             "unless `cancel_pending_enqueues`."));

}  // namespace runnel
