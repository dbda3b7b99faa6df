#include "kernels/common/variable_util.h"

#include <algorithm>

#include "absl/container/flat_hash_set.h"
#include "base/strings.h"
#include "framework/op_registry.h"

namespace runnel {
namespace {

// Holds vars[k..] in turn (nested Variable::Update), then writes.
absl::Status UpdateFrom(
    size_t k, const std::vector<std::shared_ptr<Variable>>& vars,
    const Shape& shape, Allocator* allocator,
    const std::function<absl::Status(const VariableUpdate&)>& write,
    const WriteKey* key, std::vector<Tensor>& old, std::vector<Tensor>& next) {
  if (k == vars.size()) {
    VariableUpdate u;
    for (size_t i = 0; i < vars.size(); ++i) {
      u.old.push_back(&old[i]);
      u.next.push_back(&next[i]);
    }
    return write(u);
  }
  return vars[k]
      ->Update(
          [&](const Tensor& value) -> absl::StatusOr<Tensor> {
            if (value.shape() != shape) {
              return absl::InvalidArgumentError(
                  StrCat("the variable is ", value.shape().ToString(),
                         " but the gradient ", shape.ToString()));
            }
            old[k] = value;
            next[k] = Tensor(value.dtype(), value.shape(), allocator);
            RN_RETURN_IF_ERROR(UpdateFrom(k + 1, vars, shape, allocator, write,
                                          key, old, next));
            return next[k];
          },
          key)
      .status();
}

// Holds vars[k..] in turn (nested Variable::Mutate), then writes.
absl::Status MutateFrom(
    size_t k, const std::vector<std::shared_ptr<Variable>>& vars,
    const std::function<absl::StatusOr<Tensor>(const Tensor&)>& copy,
    const std::function<absl::Status(const std::vector<Tensor*>&)>& write,
    const WriteKey* key, std::vector<Tensor*>& values, Tensor* first) {
  if (k == vars.size()) return write(values);
  absl::StatusOr<Tensor> next = vars[k]->Mutate(
      [&](Tensor* value) {
        values[k] = value;
        return MutateFrom(k + 1, vars, copy, write, key, values, first);
      },
      copy, key);
  if (!next.ok()) return next.status();
  if (k == 0) *first = *std::move(next);
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<Tensor> MutateVariables(
    const std::vector<std::shared_ptr<Variable>>& vars,
    const std::function<absl::StatusOr<Tensor>(const Tensor&)>& copy,
    const std::function<absl::Status(const std::vector<Tensor*>&)>& write,
    const WriteKey* key) {
  std::vector<Tensor*> values(vars.size(), nullptr);
  Tensor first;
  RN_RETURN_IF_ERROR(MutateFrom(0, vars, copy, write, key, values, &first));
  return first;
}

absl::StatusOr<std::shared_ptr<Variable>> FindVariable(
    OpKernelContext* ctx, const std::string& name) {
  std::shared_ptr<Variable> v = ctx->resources()->Lookup<Variable>(name);
  if (v == nullptr || !v->initialized()) {
    return absl::FailedPreconditionError(
        StrCat("variable '", name, "' is not initialized"));
  }
  RN_RETURN_IF_ERROR(v->MoveTo(ctx->device()));
  return v;
}

absl::StatusOr<std::vector<std::string>> VariablesOf(const Node& node) {
  const OpDef* def = OpRegistry::Global().Find(node.op());
  std::vector<std::string> names;
  for (size_t i = 0; def != nullptr && i < def->inputs.size(); ++i) {
    const std::string& in = def->inputs[i];
    if (in != "ref" && !in.starts_with("ref_")) continue;
    const std::string attr = "var" + in.substr(3);
    std::string name;
    if (auto a = node.attrs().find(attr); a != node.attrs().end()) {
      if (const auto* s = std::get_if<std::string>(&a->second)) name = *s;
    } else if (static_cast<int>(i) < node.num_inputs() &&
               node.input(i).node->op() == "variable") {
      name = node.input(i).node->name();
    }
    if (name.empty()) {
      return absl::InvalidArgumentError(
          StrCat("input `", in, "` is not a var or state"));
    }
    if (std::find(names.begin(), names.end(), name) != names.end()) {
      return absl::InvalidArgumentError(
          StrCat("variable '", name, "' is given twice"));
    }
    names.push_back(std::move(name));
  }
  return names;
}

absl::StatusOr<std::vector<std::shared_ptr<Variable>>> FindVariables(
    OpKernelContext* ctx, const std::vector<std::string>& names) {
  std::vector<std::shared_ptr<Variable>> vars;
  for (const std::string& name : names) {
    RN_ASSIGN_OR_RETURN(std::shared_ptr<Variable> v, FindVariable(ctx, name));
    vars.push_back(std::move(v));
  }
  return vars;
}

absl::StatusOr<Tensor> UpdateVariables(
    const std::vector<std::shared_ptr<Variable>>& vars, const Shape& shape,
    Allocator* allocator,
    const std::function<absl::Status(const VariableUpdate&)>& write,
    const WriteKey* key) {
  std::vector<Tensor> old(vars.size()), next(vars.size());
  RN_RETURN_IF_ERROR(
      UpdateFrom(0, vars, shape, allocator, write, key, old, next));
  // (An update already in, with `key`, wrote nothing: the current value.)
  return next[0].empty() ? vars[0]->Read() : next[0];
}

absl::Status CheckScatter(const std::string& op, const Shape& var,
                          const Shape& indices, const std::vector<int64_t>& idx,
                          const Shape& updates) {
  std::vector<int64_t> dims = indices.dims();
  if (var.rank() > 0) {
    dims.insert(dims.end(), var.dims().begin() + 1, var.dims().end());
  }
  if (var.rank() == 0 || updates != Shape(dims)) {
    return absl::InvalidArgumentError(
        StrCat(op, ": updates ", updates.ToString(), " do not match indices ",
               indices.ToString(), " into the variable ", var.ToString()));
  }
  const int64_t rows = var.dim(0);
  for (size_t j = 0; j < idx.size(); ++j) {
    if (idx[j] < 0 || idx[j] >= rows) {
      return absl::InvalidArgumentError(StrCat(
          op, ": index ", idx[j], " (indices[", j, "]) is out of range [0, ",
          rows, ") for the variable ", var.ToString()));
    }
  }
  return absl::OkStatus();
}

absl::Status ApplyKernelBase::Init(const Node& node) {
  RN_ASSIGN_OR_RETURN(variables_, VariablesOf(node));
  if (rule_ == ApplyRule::kMomentum) {
    RN_ASSIGN_OR_RETURN(nesterov_, node.attr<bool>("nesterov"));
  }
  sparse_ = node.op().rfind("sparse_", 0) == 0;
  return absl::OkStatus();
}

absl::StatusOr<std::vector<const Tensor*>> ScalarInputs(
    OpKernelContext* ctx, int first, const std::vector<int>& skip) {
  const DType dtype = ctx->input(0).dtype();
  const std::string& op = ctx->node().op();
  std::vector<const Tensor*> scalars;
  for (int i = first; i < ctx->num_inputs(); ++i) {
    if (std::find(skip.begin(), skip.end(), i) != skip.end()) continue;
    const Tensor& t = ctx->input(i);
    if (t.num_elements() != 1 || t.dtype() != dtype) {
      const OpDef* def = OpRegistry::Global().Find(op);
      return absl::InvalidArgumentError(
          StrCat(op, ": `", def->inputs[i], "` must be a ", DTypeName(dtype),
                 " scalar, got ", DTypeName(t.dtype()), t.shape().ToString()));
    }
    scalars.push_back(&t);
  }
  return scalars;
}

absl::Status ApplyKernelBase::Compute(OpKernelContext* ctx) {
  RN_ASSIGN_OR_RETURN(std::vector<std::shared_ptr<Variable>> vars,
                      FindVariables(ctx, variables_));
  // The variable and its slots, then lr, then the gradient (every op of
  // framework/ops/optim_ops.cc) and a sparse one's indices; the other inputs
  // are scalars.
  const int grad = static_cast<int>(vars.size()) + 1;
  const int indices = sparse_ ? grad + 1 : -1;
  RN_ASSIGN_OR_RETURN(
      const std::vector<const Tensor*> scalars,
      ScalarInputs(ctx, static_cast<int>(vars.size()), {grad, indices}));
  const Tensor& g = ctx->input(grad);
  if (sparse_) {
    return ComputeSparse(ctx, vars, g, ctx->input(indices), scalars);
  }
  RN_ASSIGN_OR_RETURN(Tensor next,
                      UpdateVariables(
                          vars, g.shape(), ctx->device()->allocator(),
                          [&](const VariableUpdate& u) {
                            return Write(ctx, u, g, scalars, nullptr);
                          },
                          ctx->write_key()));
  return ctx->set_output(0, std::move(next));
}

absl::Status ApplyKernelBase::ComputeSparse(
    OpKernelContext* ctx, const std::vector<std::shared_ptr<Variable>>& vars,
    const Tensor& grad, const Tensor& indices,
    const std::vector<const Tensor*>& scalars) {
  const std::string& op = ctx->node().op();
  const std::vector<int64_t> rows = indices.ToInt64s();
  absl::flat_hash_set<int64_t> seen;
  for (size_t j = 0; j < rows.size(); ++j) {
    if (!seen.insert(rows[j]).second) {
      return absl::InvalidArgumentError(
          StrCat(op, ": index ", rows[j], " (indices[", j,
                 "]) is repeated; the indices must be distinct"));
    }
  }
  // The variables' values as their nodes read them: as readers of the
  // buffers they would make Mutate copy the whole tables. Unused: dropped.
  for (size_t i = 0; i < vars.size(); ++i) {
    ctx->release_input(static_cast<int>(i));
  }
  RN_ASSIGN_OR_RETURN(
      Tensor next,
      MutateVariables(
          vars, [&](const Tensor& value) { return CopyValue(ctx, value); },
          [&](const std::vector<Tensor*>& values) -> absl::Status {
            const Shape& shape = values[0]->shape();
            for (const Tensor* v : values) {
              if (v->shape() != shape) {
                return absl::InvalidArgumentError(
                    StrCat(op, ": the variable is ", shape.ToString(),
                           " but a slot ", v->shape().ToString()));
              }
            }
            RN_RETURN_IF_ERROR(
                CheckScatter(op, shape, indices.shape(), rows, grad.shape()));
            VariableUpdate u;
            for (Tensor* v : values) {
              u.old.push_back(v);
              u.next.push_back(v);
            }
            return Write(ctx, u, grad, scalars, &rows);
          },
          ctx->write_key()));
  return ctx->set_output(0, std::move(next));
}

}  // namespace runnel
