#include "common_runtime/saver.h"

#include <set>

#include "base/status_macros.h"
#include "base/strings.h"
#include "common_runtime/session.h"
#include "framework/variable.h"

namespace runnel {
namespace {

std::string VariableProblem(const std::string& name, DType dtype,
                            const Shape& shape, const Tensor* in_file) {
  if (in_file == nullptr) {
    return StrCat(Quoted(name), " (",
                  StrCat(DTypeName(dtype), shape.ToString()),
                  ") is not in the checkpoint");
  }
  return StrCat(
      Quoted(name), " is ", StrCat(DTypeName(dtype), shape.ToString()),
      " but the checkpoint has ",
      StrCat(DTypeName(in_file->dtype()), in_file->shape().ToString()));
}

}  // namespace

std::vector<const Node*> VariableNodes(Session& session) {
  std::vector<const Node*> out;
  for (const Node* n : session.graph().nodes()) {
    if (n->op() == "variable") out.push_back(n);
  }
  return out;
}

absl::StatusOr<TensorMap> ReadVariables(Session& session, int64_t snapshot) {
  std::vector<const Node*> vars = VariableNodes(session);
  TensorMap out;
  if (vars.empty()) return out;
  // One run fetching every variable: it initialises those never initialised
  // and reads all of them at one moment.
  std::vector<NodeOut> fetches;
  for (const Node* v : vars) fetches.push_back({const_cast<Node*>(v), 0});
  RN_ASSIGN_OR_RETURN(
      std::vector<Tensor> values,
      session.Run(Session::Feeds{}, fetches, {}, {.snapshot = snapshot}));
  for (size_t i = 0; i < vars.size(); ++i) {
    out.emplace(vars[i]->name(), std::move(values[i]));
  }
  return out;
}

absl::Status SaveVariables(Session& session, const std::string& path) {
  RN_ASSIGN_OR_RETURN(TensorMap values, ReadVariables(session));
  return WriteCheckpoint(path, values);
}

absl::Status AssignVariables(Session& session, const TensorMap& values,
                             const std::string& source,
                             std::vector<CheckpointMismatch>* mismatches) {
  std::vector<const Node*> vars = VariableNodes(session);
  std::vector<CheckpointMismatch> found;
  for (const Node* v : vars) {
    RN_ASSIGN_OR_RETURN(DType dtype, v->attr<DType>("dtype"));
    RN_ASSIGN_OR_RETURN(Shape shape, v->attr<Shape>("shape"));
    auto it = values.find(v->name());
    const Tensor* t = it == values.end() ? nullptr : &it->second;
    if (t == nullptr || t->dtype() != dtype || t->shape() != shape) {
      found.push_back(
          {v, t == nullptr, VariableProblem(v->name(), dtype, shape, t)});
    }
  }
  if (!found.empty()) {
    std::string msg = StrCat(source, " does not match the variables: ");
    const size_t max = 8;
    for (size_t i = 0; i < found.size() && i < max; ++i) {
      if (i > 0) msg += "; ";
      msg += found[i].problem;
    }
    if (found.size() > max)
      msg += StrCat("; and ", found.size() - max, " more");
    if (mismatches != nullptr) *mismatches = std::move(found);
    return absl::InvalidArgumentError(msg);
  }
  // Everything matches: assign them all.
  for (const Node* v : vars) {
    RN_ASSIGN_OR_RETURN(std::shared_ptr<Variable> var, session.VariableFor(*v));
    RN_RETURN_IF_ERROR(var->Assign(values.at(v->name())));
  }
  return absl::OkStatus();
}

absl::Status RestoreVariables(Session& session, const std::string& path,
                              std::vector<CheckpointMismatch>* mismatches,
                              std::vector<std::string>* extra) {
  RN_ASSIGN_OR_RETURN(TensorMap values, ReadCheckpoint(path));
  if (extra != nullptr) {
    extra->clear();
    std::set<std::string> vars;
    for (const Node* v : VariableNodes(session)) vars.insert(v->name());
    for (const auto& [name, t] : values) {
      if (!vars.contains(name)) extra->push_back(name);
    }
  }
  return AssignVariables(session, values, StrCat("checkpoint ", Quoted(path)),
                         mismatches);
}

}  // namespace runnel
