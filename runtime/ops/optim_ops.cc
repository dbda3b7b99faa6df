// Fused optimizer updates (stdlib/optim.rnl's dense sgd, momentum and adam,
// as TensorFlow's ApplyGradientDescent, ApplyMomentum and ApplyAdam): one
// node reads the gradient, the variable and its slots and writes them back
// in one pass over the elements, instead of a node per operation with a
// tensor between each. The inputs named `ref*` are variables (as assign's
// `ref`); every other input has their dtype. The coefficients are inputs,
// not attributes, and are the values the unfused update multiplies by (so
// `1 - beta1` comes in as computed by the script), which keeps the results
// bit for bit those of the separate ops: each operation rounds to the dtype
// in the order written in each op's doc, with no fused multiply-add.
#include <string>
#include <vector>

#include "runtime/gradients.h"
#include "runtime/op_registry.h"
#include "runtime/shape_fns.h"
#include "runtime/status_macros.h"
#include "runtime/strings.h"

namespace runnel {
namespace {

// Inputs [0, slots] are the variable and its slots, `grad` is the gradient;
// every other input is a scalar coefficient. `names` are the op's inputs.
Specs ApplyShape(const ShapeContext& c, const std::vector<std::string>& names,
                 int slots, int grad) {
  const DType d = c.dtype(0);
  if (!IsFloating(d)) {
    return absl::InvalidArgumentError(
        StrCat("needs a floating variable, got ", c.input(0).ToString()));
  }
  RN_RETURN_IF_ERROR(SameDTypes(c, 0, c.num_inputs() - 1));
  const Shape& var = c.shape(0);
  for (int i = 1; i < c.num_inputs(); ++i) {
    const bool full = i <= slots || i == grad;
    const Shape want = full ? var : Shape{};
    if (!want.IsCompatibleWith(c.shape(i))) {
      return absl::InvalidArgumentError(
          StrCat("`", names[i], "` is ", c.input(i).ToString(), " but must be ",
                 full ? StrCat("shaped like the variable ", var.ToString())
                      : std::string("a scalar")));
    }
  }
  return One(d, var);
}

const std::vector<std::string> kSgdInputs = {"ref", "lr", "grad"};
const std::vector<std::string> kMomentumInputs = {"ref", "ref_buf", "lr",
                                                  "grad", "momentum"};
const std::vector<std::string> kAdamInputs = {"ref",
                                              "ref_m",
                                              "ref_v",
                                              "lr",
                                              "grad",
                                              "beta1",
                                              "one_minus_beta1",
                                              "beta2",
                                              "one_minus_beta2",
                                              "eps",
                                              "correction1",
                                              "correction2"};

RUNNEL_REGISTER_OP(OpDefBuilder("apply_sgd")
                       .Inputs(kSgdInputs)
                       .Outputs({"new_value"})
                       .SameDTypeAllInputs()
                       .Stateful()
                       .Shape([](const ShapeContext& c) {
                         return ApplyShape(c, kSgdInputs, 0, 2);
                       })
                       .Doc("Gradient descent on the variable feeding `ref`: "
                            "`ref -= lr * grad`. Gives the new value."));

RUNNEL_REGISTER_OP(
    OpDefBuilder("apply_momentum")
        .Inputs(kMomentumInputs)
        .Outputs({"new_value"})
        .Attr("nesterov", false)
        .SameDTypeAllInputs()
        .Stateful()
        .Shape([](const ShapeContext& c) {
          return ApplyShape(c, kMomentumInputs, 1, 3);
        })
        .Doc("Momentum (torch.optim.SGD's) on the variable feeding `ref` and "
             "its buffer `ref_buf`: `buf = momentum * buf + grad`, then "
             "`ref -= lr * buf`, or with `nesterov` "
             "`ref -= lr * (grad + momentum * buf)`. Gives the new value."));

RUNNEL_REGISTER_OP(
    OpDefBuilder("apply_adam")
        .Inputs(kAdamInputs)
        .Outputs({"new_value"})
        .SameDTypeAllInputs()
        .Stateful()
        .Shape([](const ShapeContext& c) {
          return ApplyShape(c, kAdamInputs, 2, 4);
        })
        .Doc("Adam on the variable feeding `ref` and its moments `ref_m` and "
             "`ref_v`: `m = beta1 * m + one_minus_beta1 * grad`, `v = beta2 * "
             "v + one_minus_beta2 * (grad * grad)`, then `ref -= ((lr / "
             "correction1) * m) / (sqrt(v / correction2) + eps)`, where "
             "`correction1` is `1 - beta1^t` at step t (and so "
             "`correction2`). Gives the new value."));

RUNNEL_NO_GRADIENT("apply_sgd");
RUNNEL_NO_GRADIENT("apply_momentum");
RUNNEL_NO_GRADIENT("apply_adam");

}  // namespace
}  // namespace runnel
