#include "framework/op_registry.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>

#include "base/status_macros.h"

namespace runnel {

std::string TensorSpec::ToString() const {
  return StrCat(DTypeName(dtype), shape.ToString());
}

int64_t TensorSpec::StaticBytes() const {
  if (!shape.IsFullyDefined()) return -1;
  return shape.num_elements() * static_cast<int64_t>(DTypeSize(dtype));
}

std::vector<std::vector<int>> OpDef::DTypeGroupsFor(int num_inputs) const {
  std::vector<std::vector<int>> groups;
  for (const DTypeGroup& g : dtype_groups) {
    std::vector<int> idx;
    if (g.all) {
      for (int i = 0; i < num_inputs; ++i) idx.push_back(i);
    } else {
      for (int i : g.inputs) {
        if (i < num_inputs) idx.push_back(i);
      }
    }
    groups.push_back(std::move(idx));
  }
  return groups;
}

OpRegistry& OpRegistry::Global() {
  static OpRegistry* const kRegistry = new OpRegistry();
  return *kRegistry;
}

absl::Status OpRegistry::Register(OpDef def) {
  if (ops_.contains(def.name)) {
    return absl::AlreadyExistsError(
        StrCat("op '", def.name, "' registered twice"));
  }
  for (const DTypeGroup& g : def.dtype_groups) {
    for (int i : g.inputs) {
      if (i < 0 || i >= static_cast<int>(def.inputs.size())) {
        return absl::InvalidArgumentError(StrCat("op '", def.name,
                                                 "': dtype group names input ",
                                                 i, " of ", def.inputs.size()));
      }
    }
  }
  std::string name = def.name;
  ops_.emplace(std::move(name), std::make_unique<OpDef>(std::move(def)));
  return absl::OkStatus();
}

const OpDef* OpRegistry::Find(std::string_view name) const {
  auto it = ops_.find(std::string(name));
  return it == ops_.end() ? nullptr : it->second.get();
}

std::vector<std::string> OpRegistry::ListOps() const {
  std::vector<std::string> names;
  for (const auto& [name, def] : ops_) names.push_back(name);
  std::sort(names.begin(), names.end());
  return names;
}

absl::Status CheckOutputSizes(std::string_view op,
                              const std::vector<TensorSpec>& specs) {
  // Checked before any kernel computes a byte count from the shape.
  for (const TensorSpec& spec : specs) {
    if (spec.shape.num_elements() == Shape::kMaxElements) {
      return absl::InvalidArgumentError(StrCat(
          op, ": shape ", spec.shape.ToString(),
          " has too many elements (more than ", Shape::kMaxElements, ")"));
    }
  }
  return absl::OkStatus();
}

bool OpDef::DeclaresAttr(std::string_view name) const {
  if (name.starts_with("_")) return true;  // the runtime's own
  if (std::find(attr_names.begin(), attr_names.end(), name) !=
      attr_names.end()) {
    return true;
  }
  for (const std::string& prefix : indexed_attrs) {
    if (name.size() > prefix.size() + 1 && name.starts_with(prefix) &&
        name[prefix.size()] == '_' &&
        std::all_of(name.begin() + prefix.size() + 1, name.end(),
                    [](char c) { return c >= '0' && c <= '9'; })) {
      return true;
    }
  }
  // "var" and "var_m" name the variables behind inputs "ref" and "ref_m".
  if (name.starts_with("var")) {
    const std::string ref = StrCat("ref", name.substr(3));
    return std::find(inputs.begin(), inputs.end(), ref) != inputs.end();
  }
  return false;
}

absl::StatusOr<std::vector<TensorSpec>> InferOutputs(
    const OpDef& def, AttrMap& attrs, std::vector<TensorSpec> inputs,
    std::vector<const Tensor*> input_values) {
  for (const auto& [name, value] : def.default_attrs) {
    if (!attrs.contains(name)) attrs.emplace(name, value);
  }
  const int n = static_cast<int>(inputs.size());
  const bool count_ok = def.variadic ? n >= def.min_inputs()
                                     : n == static_cast<int>(def.inputs.size());
  if (!count_ok) {
    return absl::InvalidArgumentError(
        StrCat(def.name, ": expected ", def.variadic ? "at least " : "",
               def.min_inputs(), " input(s), got ", n));
  }
  // An attribute the op does not declare would be ignored: a misspelt
  // option must fail, not change nothing.
  for (const auto& [name, value] : attrs) {
    if (!def.DeclaresAttr(name)) {
      std::string declared;
      for (const std::string& a : def.attr_names) {
        declared += StrCat(declared.empty() ? "" : ", ", a);
      }
      for (const std::string& a : def.indexed_attrs) {
        declared += StrCat(declared.empty() ? "" : ", ", a, "_<i>");
      }
      return absl::InvalidArgumentError(
          StrCat(def.name, ": no attribute '", name, "' (it has ",
                 declared.empty() ? std::string("none") : declared, ")"));
    }
  }
  if (!def.shape_fn) {
    return absl::InternalError(StrCat(def.name, ": op has no shape function"));
  }
  ShapeContext ctx(attrs, std::move(inputs), std::move(input_values));
  absl::StatusOr<std::vector<TensorSpec>> out = def.shape_fn(ctx);
  if (!out.ok()) {
    return absl::Status(out.status().code(),
                        StrCat(def.name, ": ", out.status().message()));
  }
  RN_RETURN_IF_ERROR(CheckOutputSizes(def.name, *out));
  return out;
}

absl::StatusOr<DType> KernelDType(const OpDef& def, const AttrMap& attrs,
                                  absl::Span<const DType> input_dtypes) {
  if (def.kernel_dtype_input >= 0 &&
      def.kernel_dtype_input < static_cast<int>(input_dtypes.size())) {
    return input_dtypes[def.kernel_dtype_input];
  }
  auto it = attrs.find(def.kernel_dtype_attr);
  if (it != attrs.end()) {
    if (const DType* d = std::get_if<DType>(&it->second)) return *d;
    if (const Tensor* t = std::get_if<Tensor>(&it->second)) return t->dtype();
  }
  if (input_dtypes.empty()) return DType::kF32;  // dtype-agnostic ops
  return input_dtypes[0];
}

namespace op_registry_internal {
Registrar::Registrar(OpDefBuilder builder) {
  absl::Status s = OpRegistry::Global().Register(std::move(builder).Build());
  if (!s.ok()) {
    // A programming error in the op tables, found at start-up.
    std::fprintf(stderr, "runnel: %s\n",
                 std::string(ToStd(s.message())).c_str());
    std::abort();
  }
}
}  // namespace op_registry_internal

}  // namespace runnel
