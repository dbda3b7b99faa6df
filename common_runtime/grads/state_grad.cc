// The stateful ops no gradient passes through: the optimizer updates
// (framework/ops/optim_ops.cc), the queues (queue_ops.cc) and the readers
// (reader_ops.cc). Gradients stop there, as at a constant.
#include "common_runtime/gradients.h"

namespace runnel {
namespace {

RUNNEL_NO_GRADIENT("sparse_apply_momentum");
RUNNEL_NO_GRADIENT("sparse_apply_adam");
RUNNEL_NO_GRADIENT("apply_sgd");
RUNNEL_NO_GRADIENT("apply_sgd_matmul");
RUNNEL_NO_GRADIENT("apply_momentum_matmul");
RUNNEL_NO_GRADIENT("apply_adam_matmul");
RUNNEL_NO_GRADIENT("apply_momentum");
RUNNEL_NO_GRADIENT("apply_adam");

RUNNEL_NO_GRADIENT("queue");
RUNNEL_NO_GRADIENT("enqueue");
RUNNEL_NO_GRADIENT("enqueue_many");
RUNNEL_NO_GRADIENT("dequeue");
RUNNEL_NO_GRADIENT("dequeue_many");
RUNNEL_NO_GRADIENT("queue_size");
RUNNEL_NO_GRADIENT("queue_close");

RUNNEL_NO_GRADIENT("read_idx");

}  // namespace
}  // namespace runnel
