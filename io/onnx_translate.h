// Internal to `runnel import` (io/onnx_import.h): what a node's translator
// sees of the model being imported, and the table of translators
// (io/onnx_ops.cc, one function per ONNX operator).
#ifndef RUNNEL_IO_ONNX_TRANSLATE_H_
#define RUNNEL_IO_ONNX_TRANSLATE_H_

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "framework/tensor.h"
#include "io/onnx.pb.h"
#include "io/onnx_types.h"

namespace runnel::onnx_import {

// What the importer knows of one ONNX value.
struct Value {
  std::string ref;  // its Runnel name; empty for a constant not yet used
  DType dtype = DType::kF32;
  std::vector<int64_t> dims;  // -1: unknown
  bool rank_known = true;
  std::optional<Tensor> constant;  // known while importing
  bool trainable = false;          // a floating initializer: a `var`
};

class Importer;

// One node being translated. A translator reads the node's inputs and
// attributes through it and defines each output with Out. Every attribute
// the node has must be read: Finish refuses the node otherwise, so that an
// attribute the translator does not know never changes a result silently.
class NodeContext {
 public:
  NodeContext(Importer* importer, const onnx::NodeProto& node, int64_t opset)
      : importer_(importer), node_(node), opset_(opset) {}

  const std::string& op() const { return node_.op_type(); }
  int64_t opset() const { return opset_; }
  int num_inputs() const { return node_.input_size(); }
  int num_outputs() const { return node_.output_size(); }
  bool has_input(int i) const {
    return i < node_.input_size() && !node_.input(i).empty();
  }
  bool has_output(int i) const {
    return i < node_.output_size() && !node_.output(i).empty();
  }
  // The input's facts; the input must be present.
  const Value& in(int i) const;
  // The input as Runnel code: a name, or a literal for a small constant.
  std::string ref(int i);
  // The input's value when it is known while importing.
  const std::optional<Tensor>& constant(int i) const { return in(i).constant; }
  // The input's integer values, which Runnel needs while building the
  // graph (a shape, axes, pads); an error naming it when not known.
  absl::StatusOr<std::vector<int64_t>> ConstInts(int i, std::string_view what);
  // The error of an input that must be known while importing.
  absl::Status NeedConstant(int i, std::string_view what) const;

  // Attributes; each getter marks the attribute as read.
  bool has(const std::string& name) const;
  int64_t Int(const std::string& name, int64_t fallback);
  float Float(const std::string& name, float fallback);
  std::string Str(const std::string& name, const std::string& fallback);
  std::vector<int64_t> Ints(const std::string& name);
  std::vector<std::string> Strs(const std::string& name);
  const onnx::TensorProto* TensorAttr(const std::string& name);

  // Defines output `i` as `expr` (a `let`), with its dtype and dims.
  absl::Status Out(int i, const std::string& expr, DType dtype,
                   std::vector<int64_t> dims, bool rank_known = true);
  // Defines output `i` as a value known while importing (a Constant).
  absl::Status OutConstant(int i, Tensor value);
  // A `let` of an intermediate value, named after the node's first output
  // and `what`; gives its name.
  std::string Temp(const std::string& what, const std::string& expr);
  // A name no other value has, after the node's first output and `what`.
  std::string Fresh(const std::string& what);
  // A statement of its own (several lines: a `def`).
  void Line(std::string text);
  // Defines several outputs with one destructuring `let (a, b) = expr`.
  absl::Status OutTuple(const std::string& expr, DType dtype,
                        const std::vector<std::vector<int64_t>>& dims);

  // "model.onnx: node 'NAME' (OP): WHAT is not supported" (Unimplemented).
  absl::Status Unsupported(std::string_view what) const;
  // "model.onnx: node 'NAME' (OP): WHAT" (InvalidArgument).
  absl::Status Invalid(std::string_view what) const;
  // Refuses the node when an attribute was not read.
  absl::Status Finish() const;

 private:
  const onnx::AttributeProto* Find(const std::string& name);

  Importer* importer_;
  const onnx::NodeProto& node_;
  int64_t opset_;
  std::set<std::string> read_;
};

using Translator = absl::Status (*)(NodeContext&);

// Computes the node while importing when its inputs are small integer
// constants (shape arithmetic); true when it did.
absl::StatusOr<bool> Fold(NodeContext& c);

// The translator of an ai.onnx operator; nullptr when there is none.
Translator FindTranslator(std::string_view op_type);

// A TensorProto's value; errors begin with `what`.
absl::StatusOr<Tensor> ToTensor(const onnx::TensorProto& p,
                                const std::string& what);

// Runnel code helpers the translators share.
std::string DTypeCode(DType dtype);                  // "f32"
std::string IntList(const std::vector<int64_t>& v);  // "[1, 2]"
// A tensor as a Runnel literal of its own dtype, or nullopt when it is too
// large or has no exact literal (f16, bf16, f64, a NaN or infinity).
std::optional<std::string> Literal(const Tensor& t);
// NumPy's broadcast of two dimension lists (-1 unknown).
std::vector<int64_t> BroadcastDims(const std::vector<int64_t>& a,
                                   const std::vector<int64_t>& b);

}  // namespace runnel::onnx_import

#endif  // RUNNEL_IO_ONNX_TRANSLATE_H_
