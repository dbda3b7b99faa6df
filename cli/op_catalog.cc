#include "cli/op_catalog.h"

#include <map>
#include <nlohmann/json.hpp>
#include <vector>

#include "base/strings.h"
#include "common_runtime/gradients.h"
#include "framework/device.h"
#include "framework/kernel.h"
#include "framework/op_registry.h"
#include "interpreter/builtins.h"
#include "interpreter/value.h"

namespace runnel::cli {
namespace {

using Json = nlohmann::ordered_json;

// Builtin names by the op they apply.
std::map<std::string, std::vector<std::string>> BuiltinsByOp() {
  std::map<std::string, std::vector<std::string>> by_op;
  for (const interp::Builtin& b : interp::Builtins()) {
    for (const std::string& op : b.ops) by_op[op].push_back(b.name);
  }
  return by_op;
}

// "yes": a gradient function; "none": registered as not differentiable
// (gradients stop there); "missing": differentiating through it is an
// error.
std::string Gradient(const std::string& op) {
  const GradientRegistry::Entry* e = GradientRegistry::Global().Find(op);
  if (e == nullptr) return "missing";
  return e->fn ? "yes" : "none";
}

Json OpJson(const OpDef& def, const std::vector<std::string>& builtins) {
  Json j;
  j["name"] = def.name;
  j["inputs"] = def.inputs;
  j["variadic"] = def.variadic;
  j["outputs"] = def.outputs;
  Json attrs = Json::array();
  for (const std::string& name : def.attr_names) {
    Json a;
    a["name"] = name;
    auto it = def.default_attrs.find(name);
    if (it != def.default_attrs.end()) {
      a["default"] = AttrValueToString(it->second);
    }
    attrs.push_back(std::move(a));
  }
  j["attrs"] = std::move(attrs);
  Json groups = Json::array();
  for (const DTypeGroup& g : def.dtype_groups) {
    Json names = Json::array();
    if (g.all) {
      names.push_back(def.inputs.empty() ? "*" : def.inputs.back() + "...");
    } else {
      for (int i : g.inputs) names.push_back(def.inputs[i]);
    }
    groups.push_back(std::move(names));
  }
  j["dtype_groups"] = std::move(groups);
  j["stateful"] = def.stateful;
  j["gradient"] = Gradient(def.name);
  // The dtypes with a kernel on each device type (a GPU's only in a build
  // with CUDA, so docs/ops.md shows the CPU's alone).
  for (const char* device : {kDeviceCpu, kDeviceGpu}) {
    Json dtypes = Json::array();
    for (DType d : kAllDTypes) {
      if (KernelRegistry::Global().Has(def.name, device, d)) {
        dtypes.push_back(std::string(DTypeName(d)));
      }
    }
    j[StrCat(device, "_kernel_dtypes")] = std::move(dtypes);
  }
  j["doc"] = def.doc;
  j["builtins"] = builtins;
  return j;
}

std::string DefaultText(const interp::BuiltinParam& p) {
  return interp::FormatValue(p.default_value, /*quote_strings=*/true);
}

Json BuiltinJson(const interp::Builtin& b) {
  Json j;
  j["name"] = b.name;
  Json params = Json::array();
  for (const interp::BuiltinParam& p : b.params) {
    Json q;
    q["name"] = p.name;
    if (!p.required) q["default"] = DefaultText(p);
    params.push_back(std::move(q));
  }
  j["params"] = std::move(params);
  j["variadic"] = b.variadic;
  j["kwargs"] = b.kwargs;
  j["ops"] = b.ops;
  return j;
}

// "relu(x)", "sum(x, axis = none, keepdims = false)", "print(...)".
std::string Signature(const interp::Builtin& b) {
  std::string s = b.name + "(";
  for (size_t i = 0; i < b.params.size(); ++i) {
    const interp::BuiltinParam& p = b.params[i];
    s += StrCat(i ? ", " : "", p.name,
                p.required ? "" : StrCat(" = ", DefaultText(p)));
  }
  if (b.variadic) s += b.params.empty() ? "..." : ", ...";
  if (b.kwargs)
    s += b.params.empty() && !b.variadic ? "name = value..."
                                         : ", name = value...";
  return s + ")";
}

// "op matmul(a, b; transpose_a = false, transpose_b = false)".
std::string OpSignature(const OpDef& def) {
  std::string s = "op " + def.name + "(";
  for (size_t i = 0; i < def.inputs.size(); ++i) {
    s += StrCat(i ? ", " : "", def.inputs[i],
                def.variadic && i + 1 == def.inputs.size() ? "..." : "");
  }
  for (size_t i = 0; i < def.attr_names.size(); ++i) {
    s += StrCat(i ? ", " : "; ", def.attr_names[i]);
    auto it = def.default_attrs.find(def.attr_names[i]);
    if (it != def.default_attrs.end()) {
      s += " = " + AttrValueToString(it->second);
    }
  }
  s += ")";
  if (def.stateful) s += ", stateful";
  return s;
}

std::string OpHelp(const OpDef& def) {
  std::string s = OpSignature(def) + "\n";
  if (!def.doc.empty()) s += "  " + def.doc + "\n";
  return s;
}

}  // namespace

std::string OpsJson() {
  const std::map<std::string, std::vector<std::string>> by_op = BuiltinsByOp();
  Json ops = Json::array();
  const OpRegistry& registry = OpRegistry::Global();
  for (const std::string& name : registry.ListOps()) {
    auto it = by_op.find(name);
    ops.push_back(OpJson(*registry.Find(name), it == by_op.end()
                                                   ? std::vector<std::string>{}
                                                   : it->second));
  }
  std::vector<const interp::Builtin*> sorted;
  for (const interp::Builtin& b : interp::Builtins()) sorted.push_back(&b);
  std::sort(sorted.begin(), sorted.end(),
            [](const interp::Builtin* a, const interp::Builtin* b) {
              return a->name < b->name;
            });
  Json builtins = Json::array();
  for (const interp::Builtin* b : sorted) builtins.push_back(BuiltinJson(*b));
  Json root;
  root["ops"] = std::move(ops);
  root["builtins"] = std::move(builtins);
  return root.dump(2) + "\n";
}

std::optional<std::string> HelpText(std::string_view name) {
  for (const interp::Builtin& b : interp::Builtins()) {
    if (b.name != name) continue;
    std::string s = Signature(b) + "\n";
    for (const std::string& op : b.ops) {
      if (const OpDef* def = OpRegistry::Global().Find(op)) s += OpHelp(*def);
    }
    return s;
  }
  if (const OpDef* def = OpRegistry::Global().Find(name)) return OpHelp(*def);
  return std::nullopt;
}

}  // namespace runnel::cli
