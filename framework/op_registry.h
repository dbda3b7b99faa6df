// The op registry: every op is declared once, here, with its inputs,
// outputs, attributes, statefulness and shape function.
//
//   RUNNEL_REGISTER_OP(OpDefBuilder("matmul")
//                          .Inputs({"a", "b"})
//                          .Outputs({"product"})
//                          .Attr("transpose_a", false)
//                          .SameDType({0, 1})
//                          .Shape(MatMulShape)
//                          .Doc("Matrix product ..."));
//
// The shape function runs when a node is added to a graph (and for every
// eager call): it checks input dtypes and shapes and attributes and returns
// the dtype and (possibly partial) shape of each output. A user mistake is
// reported there, as InvalidArgument, never at run time.
//
// Op names are the language's snake_case builtin names where an op is one
// builtin (`matmul`, `relu`, `conv2d`), so errors read as the user wrote them.
// Kernels are registered separately, per device type and dtype (kernel.h).
//
// The definitions are the one source of what the language says about ops:
// the interpreter's literal promotion reads the dtype groups, the builtins
// their input names and attribute defaults, and `runnel ops --json` prints
// them all (docs/ops.md and the editors' vocabulary are generated from it).
#ifndef RUNNEL_FRAMEWORK_OP_REGISTRY_H_
#define RUNNEL_FRAMEWORK_OP_REGISTRY_H_

#include <functional>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "base/strings.h"
#include "framework/attr_value.h"
#include "framework/dtype.h"
#include "framework/shape.h"

namespace runnel {

struct TensorSpec {
  DType dtype = DType::kF32;
  Shape shape;
  bool operator==(const TensorSpec& o) const {
    return dtype == o.dtype && shape == o.shape;
  }
  // "f32[?,784]"
  std::string ToString() const;
  // The bytes of a tensor of this spec; -1 when the shape is not fully
  // known.
  int64_t StaticBytes() const;
};

// What a shape function sees: input specs, values of inputs known before
// run time (constants), and the node's attributes.
class ShapeContext {
 public:
  ShapeContext(const AttrMap& attrs, std::vector<TensorSpec> inputs,
               std::vector<const Tensor*> input_values)
      : attrs_(attrs),
        inputs_(std::move(inputs)),
        values_(std::move(input_values)) {}

  int num_inputs() const { return static_cast<int>(inputs_.size()); }
  const TensorSpec& input(int i) const { return inputs_[i]; }
  DType dtype(int i) const { return inputs_[i].dtype; }
  const Shape& shape(int i) const { return inputs_[i].shape; }
  // The value of input `i` when known before run time, else nullptr.
  const Tensor* value(int i) const {
    return i < static_cast<int>(values_.size()) ? values_[i] : nullptr;
  }
  const AttrMap& attrs() const { return attrs_; }
  template <typename T>
  absl::StatusOr<T> attr(std::string_view name) const {
    return GetAttr<T>(attrs_, name);
  }
  template <typename T>
  absl::StatusOr<T> attr_or(std::string_view name, T fallback) const {
    return GetAttrOr<T>(attrs_, name, std::move(fallback));
  }

 private:
  const AttrMap& attrs_;
  std::vector<TensorSpec> inputs_;
  std::vector<const Tensor*> values_;
};

using ShapeFn =
    std::function<absl::StatusOr<std::vector<TensorSpec>>(const ShapeContext&)>;

// Inputs that must have one dtype, like a TensorFlow type attribute `T`
// shared by several inputs. Bare literals among them take the dtype of the
// others (docs/language.md §3). The shape function checks the dtypes.
struct DTypeGroup {
  std::vector<int> inputs;  // indices into OpDef::inputs
  bool all = false;         // every input, however many (variadic ops)
};

// What bounds a kernel's time: the cost model's rates by class
// (common_runtime/cost_model.h) estimate a node's seconds for the placer.
enum class KernelClass {
  kFree,            // no work on data: variables, reshapes, control flow
  kMatmul,          // matmul, conv2d: arithmetic (flops)
  kElementwise,     // cheap arithmetic an element: bytes in and out
  kTranscendental,  // exp, tanh, sigmoid, softmax ...: bytes in and out
  kReduction,       // sum, mean, max ...: bytes read
};

struct OpDef {
  std::string name;
  std::vector<std::string> inputs;  // names, for docs and error messages
  // When set, the last input repeats: a node has at least inputs.size() - 1
  // inputs and any number more (concat, stack, group).
  bool variadic = false;
  std::vector<std::string> outputs;  // names; the shape function decides count
  AttrMap default_attrs;             // filled in when a node omits them
  // The attributes declared with Attr or OptionalAttr, in declaration order
  // (the order a builtin's parameters follow). A node may set no other,
  // but for the indexed ones ("dtype_<i>": dtype_0, dtype_1, ...), the
  // `var` names of its `ref` inputs ("var_m" for `ref_m`: the variable a
  // node inside a loop updates) and attributes the runtime adds, which
  // start with '_'. InferOutputs rejects any other.
  std::vector<std::string> attr_names;
  std::vector<std::string> indexed_attrs;  // "dtype" declares dtype_<i>
  // The op has effects or gives a new value each time it runs (random
  // ops, variables and their updates, debug_print): two such nodes are
  // never merged into one, and a result is never folded into a literal.
  bool stateful = false;
  // A random op's replay (NAME_at, framework/ops/random_ops.cc): the op it
  // replays. Its last input, `first`, is the index of its first draw.
  std::string replay_of;
  KernelClass cost = KernelClass::kElementwise;
  std::vector<DTypeGroup> dtype_groups;
  // Which dtype selects the kernel: input `kernel_dtype_input`, or, when
  // that is -1, the attribute named `kernel_dtype_attr` (default "dtype").
  int kernel_dtype_input = 0;
  std::string kernel_dtype_attr = "dtype";
  ShapeFn shape_fn;
  std::string doc;

  // Whether a node of this op may set attribute `name` (see attr_names).
  bool DeclaresAttr(std::string_view name) const;
  int min_inputs() const {
    return static_cast<int>(inputs.size()) - (variadic ? 1 : 0);
  }
  // The inputs of a node with `num_inputs` inputs that share a dtype with
  // others, per group; empty when the op has no group.
  std::vector<std::vector<int>> DTypeGroupsFor(int num_inputs) const;
};

class OpDefBuilder {
 public:
  explicit OpDefBuilder(std::string name) { def_.name = std::move(name); }
  OpDefBuilder& Inputs(std::vector<std::string> names) {
    def_.inputs = std::move(names);
    return *this;
  }
  // The last input repeats (see OpDef::variadic).
  OpDefBuilder& Variadic() {
    def_.variadic = true;
    return *this;
  }
  OpDefBuilder& Outputs(std::vector<std::string> names) {
    def_.outputs = std::move(names);
    return *this;
  }
  OpDefBuilder& Attr(std::string name, AttrValue default_value) {
    def_.attr_names.push_back(name);
    def_.default_attrs[std::move(name)] = std::move(default_value);
    return *this;
  }
  // An attribute without a default: absent unless a node sets it (a
  // reduction's `axis`: all axes).
  OpDefBuilder& OptionalAttr(std::string name) {
    def_.attr_names.push_back(std::move(name));
    return *this;
  }
  // Attributes `name`_0, `name`_1, ... without defaults, one per component
  // of a variable-arity op (a queue's dtype_<i> and shape_<i>).
  OpDefBuilder& IndexedAttr(std::string name) {
    def_.indexed_attrs.push_back(std::move(name));
    return *this;
  }
  // Inputs `inputs` have one dtype (see DTypeGroup).
  OpDefBuilder& SameDType(std::vector<int> inputs) {
    def_.dtype_groups.push_back(DTypeGroup{std::move(inputs), false});
    return *this;
  }
  // Every input has one dtype (variadic ops: concat, stack).
  OpDefBuilder& SameDTypeAllInputs() {
    def_.dtype_groups.push_back(DTypeGroup{{}, true});
    return *this;
  }
  OpDefBuilder& Stateful() {
    def_.stateful = true;
    return *this;
  }
  OpDefBuilder& ReplayOf(std::string op) {
    def_.replay_of = std::move(op);
    return *this;
  }
  OpDefBuilder& Cost(KernelClass c) {
    def_.cost = c;
    return *this;
  }
  OpDefBuilder& KernelDTypeFromInput(int i) {
    def_.kernel_dtype_input = i;
    return *this;
  }
  OpDefBuilder& KernelDTypeFromAttr(std::string attr) {
    def_.kernel_dtype_input = -1;
    def_.kernel_dtype_attr = std::move(attr);
    return *this;
  }
  OpDefBuilder& Shape(ShapeFn fn) {
    def_.shape_fn = std::move(fn);
    return *this;
  }
  OpDefBuilder& Doc(std::string doc) {
    def_.doc = std::move(doc);
    return *this;
  }
  OpDef Build() && { return std::move(def_); }

 private:
  OpDef def_;
};

// Process-wide and append-only: ops register during static initialisation,
// after which lookups need no lock.
class OpRegistry {
 public:
  static OpRegistry& Global();
  // Fails (and keeps the first) when the name is taken.
  absl::Status Register(OpDef def);
  const OpDef* Find(std::string_view name) const;
  std::vector<std::string> ListOps() const;

 private:
  absl::flat_hash_map<std::string, std::unique_ptr<OpDef>> ops_;
};

// Runs `def`'s shape function after filling default attributes into
// `attrs` and checking the input count. Errors are "op: message".
// An error naming `op` when an output shape has more elements than int64
// holds (sizes are int64 end to end and never wrap).
absl::Status CheckOutputSizes(std::string_view op,
                              const std::vector<TensorSpec>& specs);
absl::StatusOr<std::vector<TensorSpec>> InferOutputs(
    const OpDef& def, AttrMap& attrs, std::vector<TensorSpec> inputs,
    std::vector<const Tensor*> input_values);

// The dtype that picks the kernel for a node (see OpDef).
absl::StatusOr<DType> KernelDType(const OpDef& def, const AttrMap& attrs,
                                  absl::Span<const DType> input_dtypes);

namespace op_registry_internal {
struct Registrar {
  explicit Registrar(OpDefBuilder builder);
};
}  // namespace op_registry_internal

#define RUNNEL_REGISTER_OP(builder) \
  RUNNEL_REGISTER_OP_UNIQ_(__COUNTER__, builder)
#define RUNNEL_REGISTER_OP_UNIQ_(ctr, builder) \
  RUNNEL_REGISTER_OP_UNIQ2_(ctr, builder)
#define RUNNEL_REGISTER_OP_UNIQ2_(ctr, builder)          \
  static const ::runnel::op_registry_internal::Registrar \
      runnel_op_registrar_##ctr [[maybe_unused]] =       \
          ::runnel::op_registry_internal::Registrar(builder)

// Runs the following block once at static-initialisation time.
#define RUNNEL_STATIC_INIT(name)                                       \
  static void name##_init();                                           \
  [[maybe_unused]] static const int name##_dummy = (name##_init(), 0); \
  static void name##_init()

}  // namespace runnel

#endif  // RUNNEL_FRAMEWORK_OP_REGISTRY_H_
