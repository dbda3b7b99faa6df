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
#include <algorithm>
#include <string>
#include <vector>

#include "base/status_macros.h"
#include "base/strings.h"
#include "framework/op_registry.h"
#include "framework/shape_fns.h"

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

// The sparse updates: inputs as the dense op's, with `grad` the rows
// `indices` (the input after it) of the gradient.
Specs SparseApplyShape(const ShapeContext& c,
                       const std::vector<std::string>& names, int slots,
                       int grad) {
  const DType d = c.dtype(0);
  if (!IsFloating(d)) {
    return absl::InvalidArgumentError(
        StrCat("needs a floating variable, got ", c.input(0).ToString()));
  }
  const int indices = grad + 1;
  const Shape& var = c.shape(0);
  const Shape& idx = c.shape(indices);
  if (c.dtype(indices) != DType::kI32 && c.dtype(indices) != DType::kI64) {
    return absl::InvalidArgumentError(StrCat("`indices` is ",
                                             c.input(indices).ToString(),
                                             " but must be i32 or i64"));
  }
  if (!idx.unknown_rank() && idx.rank() != 1) {
    return absl::InvalidArgumentError(StrCat(
        "`indices` is ", c.input(indices).ToString(), " but must be a vector"));
  }
  for (int i = 1; i < c.num_inputs(); ++i) {
    if (i == indices) continue;
    if (c.dtype(i) != d) {
      return absl::InvalidArgumentError(
          StrCat("`", names[i], "` is ", c.input(i).ToString(), " but must be ",
                 DTypeName(d), " like the variable"));
    }
    Shape want = Shape{};
    if (i <= slots) {
      want = var;
    } else if (i == grad) {
      if (var.unknown_rank() || var.rank() == 0) continue;
      std::vector<int64_t> dims = var.dims();
      dims[0] = idx.unknown_rank() ? -1 : idx.dim(0);
      want = Shape(std::move(dims));
    }
    if (!want.IsCompatibleWith(c.shape(i))) {
      std::string what = "a scalar";
      if (i <= slots)
        what = StrCat("shaped like the variable ", var.ToString());
      if (i == grad) {
        what = StrCat("the rows `indices` of the variable ", var.ToString());
      }
      return absl::InvalidArgumentError(StrCat("`", names[i], "` is ",
                                               c.input(i).ToString(),
                                               " but must be ", what));
    }
  }
  return One(d, var);
}

// `names` with "indices" after "grad".
std::vector<std::string> WithIndices(std::vector<std::string> names) {
  names.insert(std::find(names.begin(), names.end(), "grad") + 1, "indices");
  return names;
}

// The positions of `names` but "indices": the inputs of the variable's dtype.
std::vector<int> AllButIndices(const std::vector<std::string>& names) {
  std::vector<int> out;
  for (size_t i = 0; i < names.size(); ++i) {
    if (names[i] != "indices") out.push_back(static_cast<int>(i));
  }
  return out;
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

const std::vector<std::string> kSparseMomentumInputs =
    WithIndices(kMomentumInputs);
const std::vector<std::string> kSparseAdamInputs = WithIndices(kAdamInputs);

RUNNEL_REGISTER_OP(
    OpDefBuilder("sparse_apply_momentum")
        .Inputs(kSparseMomentumInputs)
        .Outputs({"new_value"})
        .Attr("nesterov", false)
        .SameDType(AllButIndices(kSparseMomentumInputs))
        .Stateful()
        .Shape([](const ShapeContext& c) {
          return SparseApplyShape(c, kSparseMomentumInputs, 1, 3);
        })
        .Doc("apply_momentum on the rows `indices` of the variable and its "
             "buffer, `grad` holding those rows of the gradient; the indices "
             "must be distinct. The variable and its buffer are held for the "
             "whole update and changed in place. Gives the new value."));

RUNNEL_REGISTER_OP(
    OpDefBuilder("sparse_apply_adam")
        .Inputs(kSparseAdamInputs)
        .Outputs({"new_value"})
        .SameDType(AllButIndices(kSparseAdamInputs))
        .Stateful()
        .Shape([](const ShapeContext& c) {
          return SparseApplyShape(c, kSparseAdamInputs, 2, 4);
        })
        .Doc("apply_adam on the rows `indices` of the variable and its "
             "moments (a lazy Adam: other rows and their moments do not "
             "change), `grad` holding those rows of the gradient; the indices "
             "must be distinct. The variable and its moments are held for the "
             "whole update, so an asynchronous worker's update never reads "
             "one moment before and the other after another's, and changed "
             "in place. Gives the new value."));

}  // namespace
}  // namespace runnel
