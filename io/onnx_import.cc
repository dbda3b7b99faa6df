#include "io/onnx_import.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "absl/strings/str_join.h"
#include "base/atomic_file.h"
#include "base/float16.h"
#include "base/status_macros.h"
#include "base/strings.h"
#include "io/onnx_translate.h"

namespace runnel {
namespace onnx_import {

// The names a script may not bind: the language's keywords, the dtypes and
// the builtins the translators call (a value named `max` would hide the
// builtin from every later node).
const std::set<std::string>& Reserved() {
  static const auto* names = new std::set<std::string>{
      // keywords
      "let", "var", "state", "input", "def", "fn", "return", "import", "as",
      "device", "scope", "after", "if", "else", "loop", "while", "for", "in",
      "run", "with", "break", "continue", "true", "false", "none", "and", "or",
      "not",
      // dtypes
      "f16", "bf16", "f32", "f64", "i8", "u8", "i32", "i64", "bool",
      // builtins the translators use
      "abs", "neg", "sign", "sqrt", "rsqrt", "square", "exp", "log", "sin",
      "cos", "tanh", "sigmoid", "relu", "elu", "softplus", "erf", "asin",
      "acos", "atan", "asinh", "acosh", "atanh", "floor", "ceil", "round",
      "maximum", "minimum", "clip", "where", "cast", "isnan", "isfinite", "sum",
      "mean", "max", "min", "prod", "all", "any", "logsumexp", "argmax",
      "argmin", "cumsum", "reshape", "transpose", "expand_dims", "squeeze",
      "broadcast_to", "concat", "stack", "unstack", "split", "slice", "gather",
      "tile", "pad", "shape_of", "size", "rank", "matmul", "softmax",
      "log_softmax", "conv2d", "conv2d_transpose", "max_pool", "avg_pool",
      "one_hot", "zeros", "ones", "fill", "zeros_like", "ones_like", "arange",
      "restore", "print", "assert", "len", "scan", "gather_elements",
      "scatter_elements", "gather_nd", "scatter_nd", "top_k", "nonzero",
      "unique_all", "einsum", "resize", "non_max_suppression",
      "max_pool_with_argmax", "conv3d", "conv3d_transpose", "max_pool3d",
      "avg_pool3d"};
  return *names;
}

std::string OnnxTypeName(int32_t elem_type) {
  if (onnx::DataType_IsValid(elem_type)) {
    return onnx::DataType_Name(static_cast<onnx::DataType>(elem_type));
  }
  return StrCat("element type ", elem_type);
}

// A TensorProto's value (raw_data or the typed fields, as the format says
// each element type is stored).
absl::StatusOr<Tensor> ToTensor(const onnx::TensorProto& p,
                                const std::string& what) {
  if (p.data_location() == onnx::TensorProto::EXTERNAL) {
    return absl::UnimplementedError(
        StrCat(what,
               ": tensors stored outside the model file (external data) "
               "are not supported"));
  }
  std::optional<DType> dtype = FromOnnx(p.data_type());
  if (!dtype) {
    return absl::UnimplementedError(StrCat(
        what, ": element type ", OnnxTypeName(p.data_type()),
        " is not supported (Runnel has f16 bf16 f32 f64 i8 u8 i32 i64 bool)"));
  }
  std::vector<int64_t> dims(p.dims().begin(), p.dims().end());
  for (int64_t d : dims) {
    if (d < 0)
      return absl::InvalidArgumentError(StrCat(what, ": negative dimension"));
  }
  Tensor t(*dtype, Shape(dims));
  const int64_t n = t.num_elements();
  const size_t bytes = t.bytes();
  auto count_is = [&](int64_t got) -> absl::Status {
    if (got == n) return absl::OkStatus();
    return absl::InvalidArgumentError(
        StrCat(what, ": holds ", got, " elements, its dims say ", n));
  };
  if (p.has_raw_data()) {
    if (p.raw_data().size() != bytes) {
      return absl::InvalidArgumentError(
          StrCat(what, ": raw_data holds ", p.raw_data().size(),
                 " bytes, its dims and type need ", bytes));
    }
    // Little-endian in the file, as on every machine Runnel runs on.
    if (bytes > 0) std::memcpy(t.raw_data(), p.raw_data().data(), bytes);
    return t;
  }
  switch (*dtype) {
    case DType::kF32:
      RN_RETURN_IF_ERROR(count_is(p.float_data_size()));
      std::copy(p.float_data().begin(), p.float_data().end(), t.data<float>());
      break;
    case DType::kF64:
      RN_RETURN_IF_ERROR(count_is(p.double_data_size()));
      std::copy(p.double_data().begin(), p.double_data().end(),
                t.data<double>());
      break;
    case DType::kI64:
      RN_RETURN_IF_ERROR(count_is(p.int64_data_size()));
      std::copy(p.int64_data().begin(), p.int64_data().end(),
                t.data<int64_t>());
      break;
    default: {
      // int32_data holds the 32-bit and narrower types, the 16-bit floats
      // as their bit patterns.
      RN_RETURN_IF_ERROR(count_is(p.int32_data_size()));
      for (int64_t i = 0; i < n; ++i) {
        const int32_t v = p.int32_data(static_cast<int>(i));
        switch (*dtype) {
          case DType::kI32:
            t.data<int32_t>()[i] = v;
            break;
          case DType::kI8:
            t.data<int8_t>()[i] = static_cast<int8_t>(v);
            break;
          case DType::kU8:
            t.data<uint8_t>()[i] = static_cast<uint8_t>(v);
            break;
          case DType::kBool:
            t.data<bool>()[i] = v != 0;
            break;
          case DType::kF16:
            t.data<Half>()[i] = Half{static_cast<uint16_t>(v)};
            break;
          case DType::kBF16:
            t.data<BFloat16>()[i] = BFloat16{static_cast<uint16_t>(v)};
            break;
          default:
            break;
        }
      }
    }
  }
  return t;
}

// An ONNX name as a Runnel identifier: other characters become `_`, a
// leading digit gets a `v`, a reserved word a trailing `_`.
std::string Sanitize(const std::string& name) {
  std::string s;
  for (char c : name) {
    s += std::isalnum(static_cast<unsigned char>(c)) || c == '_' ? c : '_';
  }
  // `/fc1/Gemm_output_0` is `fc1_Gemm_output_0`.
  const size_t first = s.find_first_not_of('_');
  if (first != std::string::npos && first > 0 && !name.empty() &&
      name[0] != '_') {
    s.erase(0, first);
  }
  if (s.empty() || std::isdigit(static_cast<unsigned char>(s[0]))) s = "v" + s;
  if (Reserved().count(s) > 0) s += "_";
  return s;
}

std::string TypeCode(DType dtype, const std::vector<int64_t>& dims,
                     bool rank_known) {
  std::string s = DTypeCode(dtype);
  if (!rank_known) return s;
  std::vector<std::string> parts;
  for (int64_t d : dims) parts.push_back(d < 0 ? "?" : StrCat(d));
  return StrCat(s, "[", absl::StrJoin(parts, ", "), "]");
}

class Importer {
 public:
  Importer(const OnnxImportOptions& options, const onnx::ModelProto& model)
      : options_(options), model_(model) {}

  absl::Status Run();

  // NodeContext's access.
  Value& value(const std::string& name) { return values_.at(name); }
  std::string Ref(const std::string& name);
  absl::Status Define(const onnx::NodeProto& node, int output,
                      const std::string& expr, Value v);
  absl::Status DefineConstant(const onnx::NodeProto& node, int output,
                              Tensor t);
  std::string Temp(const onnx::NodeProto& node, const std::string& what,
                   const std::string& expr) {
    std::string name = Fresh(node, what);
    body_.emplace_back(scope_, StrCat("let ", name, " = ", expr));
    return name;
  }
  std::string Fresh(const onnx::NodeProto& node, const std::string& what) {
    // After the first output the node has (an optional one may be "").
    std::string base = node.name();
    for (const std::string& out : node.output()) {
      if (!out.empty()) {
        base = out;
        break;
      }
    }
    return NewName(StrCat(base, "_", what));
  }
  void Line(std::string text) { body_.emplace_back(scope_, std::move(text)); }
  absl::Status DefineTuple(const onnx::NodeProto& node, const std::string& expr,
                           std::vector<Value> values);
  std::string Where(const onnx::NodeProto& node) const {
    return StrCat(options_.model_path, ": node '",
                  node.name().empty() ? node.output(0) : node.name(), "' (",
                  node.op_type(), ")");
  }

 private:
  absl::Status Inputs();
  absl::Status Initializers();
  absl::Status Nodes(const onnx::GraphProto& graph);
  // In-graph control flow: a Loop as a Runnel `loop`, an If as an `if`,
  // their graphs as the blocks' lines.
  absl::Status LoopNode(const onnx::NodeProto& node);
  absl::Status ScanNode(const onnx::NodeProto& node);
  // A Loop's or Scan's scan output `out` (the body's value `v`) stacked in
  // the loop's state: the stack's name, which the state gets. Its shape is
  // what the body computes, else what its graph declares (v is completed
  // with it); Unimplemented when neither is known while importing.
  absl::StatusOr<std::string> ScanStack(const onnx::NodeProto& node,
                                        const onnx::ValueInfoProto& out,
                                        Value& v);
  absl::Status IfNode(const onnx::NodeProto& node);
  absl::Status Block(const onnx::NodeProto& node, const onnx::GraphProto& g,
                     std::vector<std::string>* lines,
                     std::vector<std::string>* results,
                     std::vector<Value>* values);
  const onnx::GraphProto* GraphAttr(const onnx::NodeProto& node,
                                    const std::string& name) const;
  absl::Status Outputs();
  absl::Status Write();
  std::string NewName(const std::string& onnx_name);
  int64_t Opset() const;  // of the ai.onnx domain; 0 when not imported

  const OnnxImportOptions& options_;
  const onnx::ModelProto& model_;
  int64_t opset_ = 0;
  std::map<std::string, Value> values_;
  std::set<std::string> taken_;
  std::vector<std::string> header_;  // comment and input lines
  std::vector<std::string> decls_;   // var and state declarations
  // The nodes' lines, each with its scope ("" for none).
  std::vector<std::pair<std::string, std::string>> body_;
  std::string scope_;    // the node being translated's
  bool nested_ = false;  // translating a Loop's or If's graph
  TensorMap checkpoint_;
};

std::string Importer::NewName(const std::string& onnx_name) {
  std::string base = Sanitize(onnx_name);
  std::string name = base;
  for (int k = 1; taken_.count(name) > 0; ++k) name = StrCat(base, "_", k);
  taken_.insert(name);
  return name;
}

// A constant becomes a literal where it is small, else a `var` or `state`
// restored from the checkpoint, declared the first time it is used.
std::string Importer::Ref(const std::string& name) {
  Value& v = values_.at(name);
  if (!v.ref.empty()) return v.ref;
  // A trainable initializer is always a `var`, however small.
  if (!v.trainable) {
    if (std::optional<std::string> lit = Literal(*v.constant)) return *lit;
  }
  v.ref = NewName(name);
  decls_.push_back(StrCat(v.trainable ? "var " : "state ", v.ref, ": ",
                          TypeCode(v.dtype, v.dims, true), " = ",
                          v.dtype == DType::kBool ? "false" : "0"));
  checkpoint_[v.ref] = *v.constant;
  return v.ref;
}

absl::Status Importer::Define(const onnx::NodeProto& node, int output,
                              const std::string& expr, Value v) {
  const std::string& onnx_name = node.output(output);
  if (values_.count(onnx_name) > 0) {
    return absl::InvalidArgumentError(
        StrCat(Where(node), ": output '", onnx_name, "' is defined twice"));
  }
  v.ref = NewName(onnx_name);
  body_.emplace_back(scope_, StrCat("let ", v.ref, " = ", expr));
  values_[onnx_name] = std::move(v);
  return absl::OkStatus();
}

absl::Status Importer::DefineConstant(const onnx::NodeProto& node, int output,
                                      Tensor t) {
  const std::string& onnx_name = node.output(output);
  if (values_.count(onnx_name) > 0) {
    return absl::InvalidArgumentError(
        StrCat(Where(node), ": output '", onnx_name, "' is defined twice"));
  }
  Value v;
  v.dtype = t.dtype();
  v.dims = t.shape().dims();
  v.constant = std::move(t);
  values_[onnx_name] = std::move(v);
  return absl::OkStatus();
}

absl::Status Importer::DefineTuple(const onnx::NodeProto& node,
                                   const std::string& expr,
                                   std::vector<Value> values) {
  std::vector<std::string> names;
  for (int i = 0; i < static_cast<int>(values.size()); ++i) {
    const std::string onnx_name = i < node.output_size() ? node.output(i) : "";
    if (onnx_name.empty()) {
      names.push_back("_");
      continue;
    }
    if (values_.count(onnx_name) > 0) {
      return absl::InvalidArgumentError(
          StrCat(Where(node), ": output '", onnx_name, "' is defined twice"));
    }
    values[i].ref = NewName(onnx_name);
    names.push_back(values[i].ref);
    values_[onnx_name] = values[i];
  }
  body_.emplace_back(scope_,
                     StrCat("let (", absl::StrJoin(names, ", "), ") = ", expr));
  return absl::OkStatus();
}

int64_t Importer::Opset() const {
  int64_t opset = 0;
  for (const onnx::OperatorSetIdProto& o : model_.opset_import()) {
    if (o.domain().empty() || o.domain() == "ai.onnx") opset = o.version();
  }
  return opset;
}

absl::Status Importer::Inputs() {
  std::set<std::string> initialized;
  for (const onnx::TensorProto& t : model_.graph().initializer()) {
    initialized.insert(t.name());
  }
  for (const onnx::ValueInfoProto& in : model_.graph().input()) {
    if (initialized.count(in.name()) > 0) continue;  // an initializer's default
    const std::string what =
        StrCat(options_.model_path, ": input '", in.name(), "'");
    if (!in.type().has_tensor_type()) {
      return absl::UnimplementedError(
          StrCat(what,
                 ": an input that is not a tensor (a sequence, map, "
                 "optional or sparse tensor) is not supported"));
    }
    const onnx::TypeProto::Tensor& tt = in.type().tensor_type();
    std::optional<DType> dtype = FromOnnx(tt.elem_type());
    if (!dtype) {
      return absl::UnimplementedError(StrCat(what, ": element type ",
                                             OnnxTypeName(tt.elem_type()),
                                             " is not supported"));
    }
    Value v;
    v.dtype = *dtype;
    v.rank_known = tt.has_shape();
    for (const auto& d : tt.shape().dim()) {
      v.dims.push_back(d.has_dim_value() ? d.dim_value() : -1);
    }
    auto given = options_.constants.find(in.name());
    if (given != options_.constants.end()) {
      const Tensor& c = given->second;
      if (c.dtype() != v.dtype) {
        return absl::InvalidArgumentError(
            StrCat(what, ": --const gives ", DTypeName(c.dtype()),
                   ", the input is ", DTypeName(v.dtype)));
      }
      v.dims = c.shape().dims();
      v.rank_known = true;
      v.constant = c;
      header_.push_back(StrCat("# onnx-const: ", in.name()));
      values_[in.name()] = std::move(v);
      continue;
    }
    v.ref = NewName(in.name());
    header_.push_back(StrCat("# onnx-input: ", in.name(), " -> ", v.ref));
    decls_.push_back(
        StrCat("input ", v.ref, ": ", TypeCode(v.dtype, v.dims, v.rank_known)));
    values_[in.name()] = std::move(v);
  }
  for (const auto& [name, t] : options_.constants) {
    if (values_.count(name) == 0) {
      return absl::InvalidArgumentError(
          StrCat(options_.model_path, ": --const ", name,
                 ": the graph has no input of that name"));
    }
  }
  return absl::OkStatus();
}

absl::Status Importer::Initializers() {
  if (model_.graph().sparse_initializer_size() > 0) {
    return absl::UnimplementedError(
        StrCat(options_.model_path, ": sparse initializers are not supported"));
  }
  for (const onnx::TensorProto& p : model_.graph().initializer()) {
    RN_ASSIGN_OR_RETURN(
        Tensor t, ToTensor(p, StrCat(options_.model_path, ": initializer '",
                                     p.name(), "'")));
    Value v;
    v.dtype = t.dtype();
    v.dims = t.shape().dims();
    v.trainable = IsFloating(t.dtype());
    v.constant = std::move(t);
    values_[p.name()] = std::move(v);
  }
  return absl::OkStatus();
}

// `/layer1/conv/Conv` is in the scope `layer1/conv`.
std::string ScopeOf(const std::string& node_name) {
  size_t slash = node_name.rfind('/');
  if (slash == std::string::npos) return "";
  std::string s = node_name.substr(0, slash);
  while (!s.empty() && s[0] == '/') s.erase(0, 1);
  std::string clean;
  for (char c : s) {
    clean += std::isalnum(static_cast<unsigned char>(c)) || c == '_' ||
                     c == '/' || c == '.' || c == '-'
                 ? c
                 : '_';
  }
  return clean;
}

absl::Status Importer::Nodes(const onnx::GraphProto& graph) {
  for (const onnx::NodeProto& node : graph.node()) {
    if (!node.domain().empty() && node.domain() != "ai.onnx") {
      return absl::UnimplementedError(
          StrCat(Where(node), ": operator ", node.domain(), ".", node.op_type(),
                 " is not supported (only the ai.onnx domain is)"));
    }
    if (opset_ == 0) {
      return absl::InvalidArgumentError(
          StrCat(Where(node), ": the model imports no ai.onnx opset"));
    }
    for (const std::string& in : node.input()) {
      if (!in.empty() && values_.count(in) == 0) {
        return absl::InvalidArgumentError(
            StrCat(Where(node), ": input '", in,
                   "' is not defined before it (the graph is not in "
                   "topological order, or the name is wrong)"));
      }
    }
    scope_ = nested_ ? "" : ScopeOf(node.name());
    if (node.op_type() == "Loop" || node.op_type() == "If" ||
        node.op_type() == "Scan") {
      RN_RETURN_IF_ERROR(node.op_type() == "Loop"   ? LoopNode(node)
                         : node.op_type() == "Scan" ? ScanNode(node)
                                                    : IfNode(node));
      continue;
    }
    {
      NodeContext ctx(this, node, opset_);
      RN_ASSIGN_OR_RETURN(bool folded, Fold(ctx));
      if (folded) {
        RN_RETURN_IF_ERROR(ctx.Finish());
        continue;
      }
    }
    Translator translate = FindTranslator(node.op_type());
    if (translate == nullptr) {
      return absl::UnimplementedError(StrCat(
          Where(node), ": operator ", node.op_type(), " is not supported"));
    }
    NodeContext ctx(this, node, opset_);
    RN_RETURN_IF_ERROR(translate(ctx));
    RN_RETURN_IF_ERROR(ctx.Finish());
  }
  return absl::OkStatus();
}

const onnx::GraphProto* Importer::GraphAttr(const onnx::NodeProto& node,
                                            const std::string& name) const {
  for (const onnx::AttributeProto& a : node.attribute()) {
    if (a.name() == name && a.has_g()) return &a.g();
  }
  return nullptr;
}

// The nodes of a Loop's body or an If's branch, translated into lines of
// their own, and the Runnel code of the graph's outputs.
absl::Status Importer::Block(const onnx::NodeProto& node,
                             const onnx::GraphProto& g,
                             std::vector<std::string>* lines,
                             std::vector<std::string>* results,
                             std::vector<Value>* values) {
  if (g.initializer_size() > 0 || g.sparse_initializer_size() > 0) {
    return absl::UnimplementedError(StrCat(
        Where(node), ": an initializer inside a subgraph is not supported"));
  }
  std::vector<std::pair<std::string, std::string>> outer = std::move(body_);
  body_.clear();
  const bool was_nested = nested_;
  nested_ = true;
  absl::Status s = Nodes(g);
  nested_ = was_nested;
  if (s.ok()) {
    for (const onnx::ValueInfoProto& out : g.output()) {
      if (values_.count(out.name()) == 0) {
        s = absl::InvalidArgumentError(StrCat(
            Where(node), ": no node of its graph computes '", out.name(), "'"));
        break;
      }
      results->push_back(Ref(out.name()));
      values->push_back(values_.at(out.name()));
    }
    for (auto& [scope, line] : body_) lines->push_back(std::move(line));
  }
  body_ = std::move(outer);
  return s;
}

std::string Indented(const std::vector<std::string>& lines,
                     const std::string& last) {
  std::string s;
  for (const std::string& line : lines) {
    std::string text = line;
    for (size_t at = 0; (at = text.find('\n', at)) != std::string::npos;
         at += 5) {
      text.insert(at + 1, "    ");
    }
    s += StrCat("    ", text, "\n");
  }
  return StrCat(s, "    ", last, "\n");
}

std::string TupleOf(const std::vector<std::string>& items) {
  if (items.size() == 1) return items[0];
  return StrCat("(", absl::StrJoin(items, ", "), ")");
}

// Loop(M, cond, v...) with body(iteration, cond, v...) -> (cond, v...):
//   let (_, _, v...) = loop (i, c, v...) = (0, cond, v0...) while c [and i < M]
//   {
//       body
//       (i + 1, cond_out, v_out...)
//   }
// ONNX tests the condition after each pass (its input is the first
// test), Runnel's loop before each: carrying it in the state makes them
// the same. A scan output (a body output past the state) is carried too,
// stacked along a new first axis (ONNX stacks them so) in a tensor with
// room for one pass at first, each pass's value written into its row i
// (scatter_nd, in place), the room doubled when it is full; after the
// loop, its first i rows are the output. Its shape must be known while
// importing.
absl::Status Importer::LoopNode(const onnx::NodeProto& node) {
  const onnx::GraphProto* body = GraphAttr(node, "body");
  if (body == nullptr)
    return absl::InvalidArgumentError(StrCat(Where(node), ": no body"));
  for (const onnx::AttributeProto& a : node.attribute()) {
    if (a.name() != "body") {
      return absl::UnimplementedError(StrCat(Where(node), ": attribute '",
                                             a.name(),
                                             "' of Loop is not supported"));
    }
  }
  const int n = node.input_size() - 2;
  if (n < 0 || body->input_size() != n + 2 || body->output_size() < n + 1) {
    return absl::InvalidArgumentError(
        StrCat(Where(node),
               ": the body's inputs and outputs do not match the Loop's"));
  }
  const std::string& trips = node.input(0);
  const std::string& cond = node.input(1);
  if (trips.empty() && cond.empty()) {
    return absl::UnimplementedError(
        StrCat(Where(node),
               ": a Loop without a trip count or condition (endless) is not "
               "supported"));
  }
  // The state's names, bound inside the body.
  std::vector<std::string> state, init;
  auto bind = [&](const onnx::ValueInfoProto& in, DType dtype,
                  std::vector<int64_t> dims) {
    Value v;
    v.ref = NewName(in.name());
    v.dtype = dtype;
    v.dims = std::move(dims);
    state.push_back(v.ref);
    values_[in.name()] = std::move(v);
  };
  bind(body->input(0), DType::kI64, {});
  bind(body->input(1), DType::kBool, {});
  init.push_back("cast(0, i64)");
  init.push_back(cond.empty() ? "true" : Ref(cond));
  for (int k = 0; k < n; ++k) {
    const Value& v0 = values_.at(node.input(2 + k));
    bind(body->input(2 + k), v0.dtype, v0.dims);
    init.push_back(Ref(node.input(2 + k)));
  }
  std::vector<std::string> lines, results;
  std::vector<Value> outs;
  RN_RETURN_IF_ERROR(Block(node, *body, &lines, &results, &outs));
  const int scans = body->output_size() - (n + 1);
  std::vector<std::string> next = {StrCat(state[0], " + 1")};
  next.insert(next.end(), results.begin(), results.begin() + n + 1);
  for (int j = 0; j < scans; ++j) {
    Value& y = outs[1 + n + j];  // its shape completed by ScanStack
    RN_ASSIGN_OR_RETURN(std::string stack,
                        ScanStack(node, body->output(1 + n + j), y));
    std::vector<int64_t> one = {1};
    one.insert(one.end(), y.dims.begin(), y.dims.end());
    init.push_back(
        StrCat("zeros(", IntList(one), ", dtype = ", DTypeCode(y.dtype), ")"));
    // Room for this pass: the stack, or twice its rows when it is full.
    const std::string room = NewName(StrCat(stack, "_room"));
    lines.push_back(StrCat("let ", room, " = if ", state[0],
                           " < cast(shape_of(", stack, ")[0], i64) { ", stack,
                           " } else { concat([", stack, ", ", stack,
                           "], axis = 0) }"));
    next.push_back(StrCat("scatter_nd(", room, ", reshape(", state[0],
                          ", [1, 1]), expand_dims(", results[1 + n + j],
                          ", 0))"));
    state.push_back(std::move(stack));
  }
  std::string test = state[1];
  if (!trips.empty()) test = StrCat(test, " and ", state[0], " < ", Ref(trips));
  // The passes made, when a scan output needs them.
  std::vector<std::string> finals = {scans > 0 ? NewName("passes") : "_", "_"};
  std::vector<std::string> trims;  // the scan outputs cut to the passes
  for (int k = 0; k < n; ++k) {
    if (k >= node.output_size() || node.output(k).empty()) {
      finals.push_back("_");
      continue;
    }
    Value v = outs[1 + k];
    v.constant.reset();
    v.ref = NewName(node.output(k));
    finals.push_back(v.ref);
    values_[node.output(k)] = std::move(v);
  }
  for (int j = 0; j < scans; ++j) {
    const int k = n + j;
    if (k >= node.output_size() || node.output(k).empty()) {
      finals.push_back("_");
      continue;
    }
    Value v = outs[1 + k];
    v.constant.reset();
    v.dims.insert(v.dims.begin(), -1);  // the passes, known when it runs
    v.ref = NewName(node.output(k));
    const std::string whole = NewName(StrCat(node.output(k), "_rows"));
    finals.push_back(whole);
    trims.push_back(StrCat("let ", v.ref, " = ", whole, "[0:", finals[0], "]"));
    values_[node.output(k)] = std::move(v);
  }
  body_.emplace_back(
      scope_, StrCat("let ", TupleOf(finals), " = loop ", TupleOf(state), " = ",
                     TupleOf(init), " while ", test, " {\n",
                     Indented(lines, TupleOf(next)), "}"));
  for (std::string& line : trims) body_.emplace_back(scope_, std::move(line));
  return absl::OkStatus();
}

absl::StatusOr<std::string> Importer::ScanStack(const onnx::NodeProto& node,
                                                const onnx::ValueInfoProto& out,
                                                Value& v) {
  auto known = [](const std::vector<int64_t>& dims) {
    return std::none_of(dims.begin(), dims.end(),
                        [](int64_t d) { return d < 0; });
  };
  const onnx::TypeProto::Tensor& declared = out.type().tensor_type();
  if ((!v.rank_known || !known(v.dims)) && declared.has_shape()) {
    std::vector<int64_t> dims;
    for (const auto& d : declared.shape().dim()) {
      dims.push_back(d.has_dim_value() ? d.dim_value() : -1);
    }
    if (known(dims)) {
      v.dims = std::move(dims);
      v.rank_known = true;
    }
  }
  if (!v.rank_known || !known(v.dims)) {
    return absl::UnimplementedError(
        StrCat(Where(node), ": scan output '", out.name(),
               "' has a shape not known while importing"));
  }
  return NewName(StrCat(out.name(), "_stack"));
}

// Scan (opset 9 on) of N states and M scan inputs, with body(states...,
// slices...) -> (states..., outputs...): an in-graph loop over the scan
// inputs' scan axis (its length the first scan input's):
//   let (_, s..., y...) = loop (t, s..., y_stack...) = (0, s0..., zeros...)
//       while t < length {
//       let slice = x_moved[t]           # or [length - 1 - t], reversed
//       body
//       (t + 1, s_out..., scatter_nd(y_stack, [[t]], y[None]), ...)
//   }
// A scan input's axis is moved to the front first (x_moved, before the
// loop); a scan output is stacked along axis 0, each pass's value written
// into its row of a tensor of `length` rows (in place; row length - 1 - t
// when prepended), and then moved to its axis. The stacks are made before
// the first pass, so each output's shape must be known while importing.
absl::Status Importer::ScanNode(const onnx::NodeProto& node) {
  if (opset_ < 9) {
    return absl::UnimplementedError(
        StrCat(Where(node),
               ": Scan before opset 9 (with a batch axis and "
               "sequence_lens) is not supported"));
  }
  const onnx::GraphProto* body = GraphAttr(node, "body");
  if (body == nullptr)
    return absl::InvalidArgumentError(StrCat(Where(node), ": no body"));
  int64_t m = -1;
  std::vector<int64_t> in_axes, in_dirs, out_axes, out_dirs;
  for (const onnx::AttributeProto& a : node.attribute()) {
    const std::vector<int64_t> ints(a.ints().begin(), a.ints().end());
    if (a.name() == "num_scan_inputs") {
      m = a.i();
    } else if (a.name() == "scan_input_axes") {
      in_axes = ints;
    } else if (a.name() == "scan_input_directions") {
      in_dirs = ints;
    } else if (a.name() == "scan_output_axes") {
      out_axes = ints;
    } else if (a.name() == "scan_output_directions") {
      out_dirs = ints;
    } else if (a.name() != "body") {
      return absl::UnimplementedError(StrCat(Where(node), ": attribute '",
                                             a.name(),
                                             "' of Scan is not supported"));
    }
  }
  const int n = node.input_size() - static_cast<int>(m);
  const int k = body->output_size() - n;
  if (m < 1 || n < 0 || body->input_size() != n + m || k < 0 ||
      node.output_size() > n + k) {
    return absl::InvalidArgumentError(
        StrCat(Where(node),
               ": the body's inputs and outputs do not match the Scan's "
               "(num_scan_inputs ",
               m, ")"));
  }
  auto pick = [&](const std::vector<int64_t>& v, int i) -> int64_t {
    return v.empty() ? 0 : v[i];
  };
  if ((!in_axes.empty() && static_cast<int64_t>(in_axes.size()) != m) ||
      (!in_dirs.empty() && static_cast<int64_t>(in_dirs.size()) != m) ||
      (!out_axes.empty() && static_cast<int>(out_axes.size()) != k) ||
      (!out_dirs.empty() && static_cast<int>(out_dirs.size()) != k)) {
    return absl::InvalidArgumentError(StrCat(
        Where(node), ": an axes or directions list of the wrong length"));
  }
  // The state's names, bound inside the body, and the scan inputs moved.
  std::vector<std::string> state = {NewName("t")}, init = {"cast(0, i64)"};
  for (int i = 0; i < n; ++i) {
    Value v = values_.at(node.input(i));
    init.push_back(Ref(node.input(i)));
    v.constant.reset();
    v.ref = NewName(body->input(i).name());
    state.push_back(v.ref);
    values_[body->input(i).name()] = std::move(v);
  }
  std::vector<std::string> slices;  // lines at the top of the body
  std::string length, rows;
  for (int j = 0; j < m; ++j) {
    const Value& x = values_.at(node.input(n + j));
    if (!x.rank_known || x.dims.empty()) {
      return absl::UnimplementedError(
          StrCat(Where(node), ": scan input '", node.input(n + j),
                 "' of a rank not known while importing (or a scalar)"));
    }
    const int r = static_cast<int>(x.dims.size());
    int64_t axis = pick(in_axes, j);
    if (axis < 0) axis += r;
    if (axis < 0 || axis >= r) {
      return absl::InvalidArgumentError(
          StrCat(Where(node), ": scan_input_axes ", pick(in_axes, j),
                 " for an input of rank ", r));
    }
    std::string moved = Ref(node.input(n + j));
    if (axis != 0) {  // moved once, before the loop
      std::vector<int64_t> perm = {axis};
      for (int d = 0; d < r; ++d) {
        if (d != axis) perm.push_back(d);
      }
      const std::string name = NewName(StrCat(node.input(n + j), "_moved"));
      Line(StrCat("let ", name, " = transpose(", moved, ", ", IntList(perm),
                  ")"));
      moved = name;
    }
    if (j == 0) {
      rows = StrCat("shape_of(", moved, ")[0:1]");
      length = StrCat("cast(shape_of(", moved, ")[0], i64)");
    }
    const std::string index =
        pick(in_dirs, j) != 0 ? StrCat(length, " - 1 - ", state[0]) : state[0];
    Value v = x;
    v.constant.reset();
    v.dims.erase(v.dims.begin() + axis);
    v.ref = NewName(body->input(n + j).name());
    slices.push_back(StrCat("let ", v.ref, " = ", moved, "[", index, "]"));
    values_[body->input(n + j).name()] = std::move(v);
  }
  std::vector<std::string> lines, results;
  std::vector<Value> outs;
  RN_RETURN_IF_ERROR(Block(node, *body, &lines, &results, &outs));
  lines.insert(lines.begin(), slices.begin(), slices.end());
  std::vector<std::string> next = {StrCat(state[0], " + 1")};
  next.insert(next.end(), results.begin(), results.begin() + n);
  for (int j = 0; j < k; ++j) {
    Value& y = outs[n + j];  // its shape completed by ScanStack
    RN_ASSIGN_OR_RETURN(std::string stack,
                        ScanStack(node, body->output(n + j), y));
    init.push_back(StrCat(
        "zeros(",
        y.dims.empty()
            ? rows
            : StrCat("concat([", rows, ", ", IntList(y.dims), "], axis = 0)"),
        ", dtype = ", DTypeCode(y.dtype), ")"));
    const std::string index =
        pick(out_dirs, j) != 0 ? StrCat(length, " - 1 - ", state[0]) : state[0];
    next.push_back(StrCat("scatter_nd(", stack, ", reshape(", index,
                          ", [1, 1]), expand_dims(", results[n + j], ", 0))"));
    state.push_back(std::move(stack));
  }
  std::vector<std::string> finals = {"_"};
  std::vector<std::string> moves;  // scan outputs moved to their axes
  for (int i = 0; i < n + k; ++i) {
    if (i >= node.output_size() || node.output(i).empty()) {
      finals.push_back("_");
      continue;
    }
    Value v = outs[i];
    v.constant.reset();
    if (i >= n) v.dims.insert(v.dims.begin(), -1);  // the passes
    v.ref = NewName(node.output(i));
    if (i >= n) {
      const int r = static_cast<int>(v.dims.size());
      int64_t axis = pick(out_axes, i - n);
      if (axis < 0) axis += r;
      if (axis < 0 || axis >= r) {
        return absl::InvalidArgumentError(
            StrCat(Where(node), ": scan_output_axes ", pick(out_axes, i - n),
                   " for an output of rank ", r));
      }
      if (axis != 0) {
        // Axis 0 (the passes) goes to `axis`.
        std::vector<int64_t> perm;
        for (int d = 1; d <= axis; ++d) perm.push_back(d);
        perm.push_back(0);
        for (int d = static_cast<int>(axis) + 1; d < r; ++d) perm.push_back(d);
        const std::string stacked_name =
            NewName(StrCat(node.output(i), "_stacked"));
        finals.push_back(stacked_name);
        moves.push_back(StrCat("let ", v.ref, " = transpose(", stacked_name,
                               ", ", IntList(perm), ")"));
        std::rotate(v.dims.begin(), v.dims.begin() + 1,
                    v.dims.begin() + axis + 1);
        values_[node.output(i)] = std::move(v);
        continue;
      }
    }
    finals.push_back(v.ref);
    values_[node.output(i)] = std::move(v);
  }
  body_.emplace_back(
      scope_, StrCat("let ", TupleOf(finals), " = loop ", TupleOf(state), " = ",
                     TupleOf(init), " while ", state[0], " < ", length, " {\n",
                     Indented(lines, TupleOf(next)), "}"));
  for (std::string& line : moves) body_.emplace_back(scope_, std::move(line));
  return absl::OkStatus();
}

// If(cond) with then_branch and else_branch: a Runnel `if` on the graph.
absl::Status Importer::IfNode(const onnx::NodeProto& node) {
  const onnx::GraphProto* then_g = GraphAttr(node, "then_branch");
  const onnx::GraphProto* else_g = GraphAttr(node, "else_branch");
  if (then_g == nullptr || else_g == nullptr) {
    return absl::InvalidArgumentError(
        StrCat(Where(node), ": a branch is missing"));
  }
  for (const onnx::AttributeProto& a : node.attribute()) {
    if (a.name() != "then_branch" && a.name() != "else_branch") {
      return absl::UnimplementedError(StrCat(
          Where(node), ": attribute '", a.name(), "' of If is not supported"));
    }
  }
  // A condition known while importing (a Constant, or folded shape
  // arithmetic, as in the expansions of ONNX's functions): only the branch
  // taken is imported, its lines in the enclosing block; the other may not
  // even be valid for these shapes.
  const Value& pred = values_.at(node.input(0));
  if (pred.constant.has_value() && pred.constant->num_elements() == 1) {
    const bool take = pred.constant->ToDoubles()[0] != 0;
    std::vector<std::string> lines, results;
    std::vector<Value> values;
    RN_RETURN_IF_ERROR(
        Block(node, take ? *then_g : *else_g, &lines, &results, &values));
    if (static_cast<int>(results.size()) != node.output_size()) {
      return absl::InvalidArgumentError(
          StrCat(Where(node), ": the branch's outputs do not match the If's"));
    }
    for (std::string& line : lines) body_.emplace_back(scope_, std::move(line));
    for (int k = 0; k < node.output_size(); ++k) {
      Value v = values[k];
      if (!v.constant.has_value()) {
        v.ref = NewName(node.output(k));
        body_.emplace_back(scope_, StrCat("let ", v.ref, " = ", results[k]));
      }
      values_[node.output(k)] = std::move(v);
    }
    return absl::OkStatus();
  }
  std::vector<std::string> then_lines, then_results, else_lines, else_results;
  std::vector<Value> then_values, else_values;
  RN_RETURN_IF_ERROR(
      Block(node, *then_g, &then_lines, &then_results, &then_values));
  RN_RETURN_IF_ERROR(
      Block(node, *else_g, &else_lines, &else_results, &else_values));
  if (then_results.size() != else_results.size() ||
      static_cast<int>(then_results.size()) != node.output_size()) {
    return absl::InvalidArgumentError(
        StrCat(Where(node), ": the branches' outputs do not match"));
  }
  std::string test = Ref(node.input(0));
  if (values_.at(node.input(0)).dims.size() == 1)
    test = StrCat("reshape(", test, ", [])");
  std::vector<std::string> names;
  for (int k = 0; k < node.output_size(); ++k) {
    if (then_values[k].dtype != else_values[k].dtype) {
      return absl::UnimplementedError(
          StrCat(Where(node),
                 ": an If whose branches differ in dtype is not supported"));
    }
    Value v = then_values[k];
    v.constant.reset();
    if (v.dims != else_values[k].dims) v.dims.assign(v.dims.size(), -1);
    v.ref = NewName(node.output(k));
    names.push_back(v.ref);
    values_[node.output(k)] = std::move(v);
  }
  body_.emplace_back(
      scope_, StrCat("let ", TupleOf(names), " = if ", test, " {\n",
                     Indented(then_lines, TupleOf(then_results)), "} else {\n",
                     Indented(else_lines, TupleOf(else_results)), "}"));
  return absl::OkStatus();
}

absl::Status Importer::Outputs() {
  scope_.clear();
  for (const onnx::ValueInfoProto& out : model_.graph().output()) {
    auto it = values_.find(out.name());
    const std::string what =
        StrCat(options_.model_path, ": output '", out.name(), "'");
    if (it == values_.end()) {
      return absl::InvalidArgumentError(StrCat(what, ": no node computes it"));
    }
    if (!out.type().has_tensor_type()) {
      return absl::UnimplementedError(
          StrCat(what, ": an output that is not a tensor is not supported"));
    }
    Value& v = it->second;
    const int32_t declared = out.type().tensor_type().elem_type();
    if (declared != 0 && FromOnnx(declared) != v.dtype) {
      // The translation computed another dtype than the model declares:
      // refuse rather than hand back a different result.
      return absl::UnimplementedError(
          StrCat(what, ": the model declares ", OnnxTypeName(declared),
                 ", the import computes ", DTypeName(v.dtype),
                 "; this is not supported"));
    }
    std::string ref = Ref(out.name());
    if (ref != v.ref || v.constant) {
      // An input, a constant or an output listed twice: give it its name.
      std::string name = NewName(out.name());
      body_.emplace_back("", StrCat("let ", name, " = ", ref));
      ref = name;
    }
    header_.push_back(StrCat("# onnx-output: ", out.name(), " -> ", ref));
  }
  return absl::OkStatus();
}

absl::Status Importer::Write() {
  std::string ckpt = std::filesystem::path(options_.script_path)
                         .replace_extension(".ckpt")
                         .string();
  std::string s;
  s += StrCat("# Imported from ", options_.model_path,
              " by `runnel import` (ONNX IR ", model_.ir_version(), ", opset ",
              opset_);
  if (!model_.producer_name().empty()) {
    s += StrCat(", made by ", model_.producer_name(), " ",
                model_.producer_version());
    while (s.back() == ' ') s.pop_back();
  }
  s += ").\n";
  for (const std::string& line : header_) s += line + "\n";
  s += "\n";
  for (const std::string& line : decls_) s += line + "\n";
  if (!checkpoint_.empty()) {
    s += StrCat("restore(\"", ckpt, "\")  # the initializers' values\n");
  }
  s += "\n";
  std::string open;
  for (const auto& [scope, line] : body_) {
    if (scope != open) {
      if (!open.empty()) s += "}\n";
      if (!scope.empty()) s += StrCat("scope \"", scope, "\" {\n");
      open = scope;
    }
    const std::string indent = open.empty() ? "" : "    ";
    std::string text = line;
    for (size_t at = 0; (at = text.find('\n', at)) != std::string::npos;
         at += 1 + indent.size()) {
      text.insert(at + 1, indent);
    }
    s += StrCat(indent, text, "\n");
  }
  if (!open.empty()) s += "}\n";
  if (!checkpoint_.empty())
    RN_RETURN_IF_ERROR(WriteCheckpoint(ckpt, checkpoint_));
  AtomicFile f(options_.script_path, "script");
  RN_RETURN_IF_ERROR(f.Create());
  RN_RETURN_IF_ERROR(f.Write(s.data(), s.size()));
  return f.Commit();
}

absl::Status Importer::Run() {
  for (const std::string& name : Reserved()) taken_.insert(name);
  opset_ = Opset();
  RN_RETURN_IF_ERROR(Initializers());
  RN_RETURN_IF_ERROR(Inputs());
  RN_RETURN_IF_ERROR(Nodes(model_.graph()));
  RN_RETURN_IF_ERROR(Outputs());
  return Write();
}

// NodeContext

const Value& NodeContext::in(int i) const {
  return importer_->value(node_.input(i));
}

std::string NodeContext::ref(int i) { return importer_->Ref(node_.input(i)); }

absl::StatusOr<std::vector<int64_t>> NodeContext::ConstInts(
    int i, std::string_view what) {
  const std::optional<Tensor>& c = constant(i);
  if (!c) return NeedConstant(i, what);
  if (!IsInteger(c->dtype())) {
    return Invalid(StrCat(what, " (input '", node_.input(i),
                          "') is not an integer tensor"));
  }
  return c->ToInt64s();
}

absl::Status NodeContext::NeedConstant(int i, std::string_view what) const {
  return Unsupported(StrCat(
      "a computed ", what, " (input '", node_.input(i),
      "'; Runnel needs it while building the graph: make it an initializer "
      "or a Constant, or give it with --const ",
      node_.input(i), "=FILE.npy)"));
}

const onnx::AttributeProto* NodeContext::Find(const std::string& name) {
  for (const onnx::AttributeProto& a : node_.attribute()) {
    if (a.name() == name) {
      read_.insert(name);
      return &a;
    }
  }
  return nullptr;
}

bool NodeContext::has(const std::string& name) const {
  for (const onnx::AttributeProto& a : node_.attribute()) {
    if (a.name() == name) return true;
  }
  return false;
}

int64_t NodeContext::Int(const std::string& name, int64_t fallback) {
  const onnx::AttributeProto* a = Find(name);
  return a != nullptr ? a->i() : fallback;
}

float NodeContext::Float(const std::string& name, float fallback) {
  const onnx::AttributeProto* a = Find(name);
  return a != nullptr ? a->f() : fallback;
}

std::string NodeContext::Str(const std::string& name,
                             const std::string& fallback) {
  const onnx::AttributeProto* a = Find(name);
  return a != nullptr ? a->s() : fallback;
}

std::vector<int64_t> NodeContext::Ints(const std::string& name) {
  const onnx::AttributeProto* a = Find(name);
  if (a == nullptr) return {};
  return std::vector<int64_t>(a->ints().begin(), a->ints().end());
}

std::vector<std::string> NodeContext::Strs(const std::string& name) {
  const onnx::AttributeProto* a = Find(name);
  if (a == nullptr) return {};
  return std::vector<std::string>(a->strings().begin(), a->strings().end());
}

const onnx::TensorProto* NodeContext::TensorAttr(const std::string& name) {
  const onnx::AttributeProto* a = Find(name);
  return a != nullptr && a->has_t() ? &a->t() : nullptr;
}

absl::Status NodeContext::Out(int i, const std::string& expr, DType dtype,
                              std::vector<int64_t> dims, bool rank_known) {
  if (!has_output(i)) return absl::OkStatus();
  Value v;
  v.dtype = dtype;
  v.dims = std::move(dims);
  v.rank_known = rank_known;
  return importer_->Define(node_, i, expr, std::move(v));
}

absl::Status NodeContext::OutConstant(int i, Tensor value) {
  if (!has_output(i)) return absl::OkStatus();
  return importer_->DefineConstant(node_, i, std::move(value));
}

std::string NodeContext::Fresh(const std::string& what) {
  return importer_->Fresh(node_, what);
}

void NodeContext::Line(std::string text) { importer_->Line(std::move(text)); }

std::string NodeContext::Temp(const std::string& what,
                              const std::string& expr) {
  return importer_->Temp(node_, what, expr);
}

absl::Status NodeContext::OutTuple(
    const std::string& expr, DType dtype,
    const std::vector<std::vector<int64_t>>& dims) {
  std::vector<Value> values;
  for (const auto& d : dims) {
    Value v;
    v.dtype = dtype;
    v.dims = d;
    values.push_back(std::move(v));
  }
  return importer_->DefineTuple(node_, expr, std::move(values));
}

absl::Status NodeContext::Unsupported(std::string_view what) const {
  return absl::UnimplementedError(
      StrCat(importer_->Where(node_), ": ", what, " is not supported"));
}

absl::Status NodeContext::Invalid(std::string_view what) const {
  return absl::InvalidArgumentError(
      StrCat(importer_->Where(node_), ": ", what));
}

absl::Status NodeContext::Finish() const {
  for (const onnx::AttributeProto& a : node_.attribute()) {
    if (read_.count(a.name()) == 0) {
      return Unsupported(StrCat("attribute '", a.name(), "' of ", op(),
                                " (opset ", opset_, ")"));
    }
  }
  return absl::OkStatus();
}

// Shared helpers

std::string DTypeCode(DType dtype) { return std::string(DTypeName(dtype)); }

std::string IntList(const std::vector<int64_t>& v) {
  std::vector<std::string> parts;
  for (int64_t x : v) parts.push_back(StrCat(x));
  return StrCat("[", absl::StrJoin(parts, ", "), "]");
}

std::optional<std::string> Literal(const Tensor& t) {
  constexpr int64_t kMaxLiteral = 16;
  if (t.num_elements() > kMaxLiteral || t.num_elements() == 0)
    return std::nullopt;
  std::vector<std::string> items;
  for (int64_t i = 0; i < t.num_elements(); ++i) {
    switch (t.dtype()) {
      case DType::kF32: {
        const float f = t.data<float>()[i];
        if (!std::isfinite(f)) return std::nullopt;
        std::string s = fmt::format("{}", f);
        if (s.find_first_of(".e") == std::string::npos) s += ".0";
        items.push_back(s);
        break;
      }
      case DType::kI32:
        items.push_back(StrCat(t.data<int32_t>()[i]));
        break;
      case DType::kI64:
        items.push_back(StrCat(t.data<int64_t>()[i]));
        break;
      case DType::kI8:
        items.push_back(StrCat(int{t.data<int8_t>()[i]}));
        break;
      case DType::kU8:
        items.push_back(StrCat(int{t.data<uint8_t>()[i]}));
        break;
      case DType::kBool:
        items.push_back(t.data<bool>()[i] ? "true" : "false");
        break;
      default:
        return std::nullopt;
    }
  }
  // Nest the items by the shape, innermost first.
  const std::vector<int64_t>& dims = t.shape().dims();
  for (int axis = static_cast<int>(dims.size()) - 1; axis >= 0; --axis) {
    std::vector<std::string> outer;
    const size_t d = static_cast<size_t>(dims[axis]);
    for (size_t k = 0; k < items.size(); k += d) {
      std::vector<std::string> group(items.begin() + k, items.begin() + k + d);
      outer.push_back(StrCat("[", absl::StrJoin(group, ", "), "]"));
    }
    items = std::move(outer);
  }
  std::string lit = items.at(0);
  if (lit[0] == '-') lit = StrCat("(", lit, ")");
  switch (t.dtype()) {
    case DType::kF32:
    case DType::kBool:
      return lit;
    case DType::kI32:
      // A literal beyond i32's range would be read as an i64.
      return lit;
    default:
      return StrCat("cast(", lit, ", ", DTypeCode(t.dtype()), ")");
  }
}

std::vector<int64_t> BroadcastDims(const std::vector<int64_t>& a,
                                   const std::vector<int64_t>& b) {
  const size_t n = std::max(a.size(), b.size());
  std::vector<int64_t> out(n);
  for (size_t i = 0; i < n; ++i) {
    const int64_t x = i < n - a.size() ? 1 : a[i - (n - a.size())];
    const int64_t y = i < n - b.size() ? 1 : b[i - (n - b.size())];
    out[i] = x == 1 ? y : y == 1 ? x : (x < 0 || y < 0) ? std::max(x, y) : x;
  }
  return out;
}

}  // namespace onnx_import

absl::Status ImportOnnx(const OnnxImportOptions& options) {
  std::ifstream in(options.model_path, std::ios::binary);
  if (!in) {
    return absl::NotFoundError(StrCat("cannot open '", options.model_path,
                                      "': ", std::strerror(errno)));
  }
  onnx::ModelProto model;
  if (!model.ParseFromIstream(&in)) {
    return absl::InvalidArgumentError(
        StrCat(options.model_path,
               ": not an ONNX model (the file does not parse "
               "as a ModelProto)"));
  }
  if (!model.has_graph()) {
    return absl::InvalidArgumentError(
        StrCat(options.model_path, ": the model has no graph"));
  }
  onnx_import::Importer importer(options, model);
  return importer.Run();
}

}  // namespace runnel
