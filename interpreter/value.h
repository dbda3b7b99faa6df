// Values of the Runnel language (docs/language.md §1, §3) and the environments
// that bind names to them.
//
// A Value is cheap to copy: tensors share their buffers and compound values
// (tuples, lists, records, functions, modules, datasets) share immutable
// payloads. Tensor values are either concrete (a runnel::Tensor, computed
// now) or symbolic (an output of a node in the interpreter's graph). A bare
// numeric literal is a concrete tensor with `literal()` set: it takes the
// dtype of the tensor it meets (`x * 2` is f32 for an f32 `x`).
#ifndef RUNNEL_INTERPRETER_VALUE_H_
#define RUNNEL_INTERPRETER_VALUE_H_

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#include "absl/container/node_hash_map.h"
#include "absl/status/statusor.h"
#include "base/source_span.h"
#include "framework/graph.h"
#include "framework/tensor.h"

namespace runnel::lang {
struct DefStmt;
struct LambdaExpr;
struct Param;
}  // namespace runnel::lang

namespace runnel::interp {

class Value;
class Env;
struct Builtin;
struct Function;
struct Module;
struct Dataset;
class Iterable;

enum class ValueKind {
  kNone,
  kTensor,    // concrete
  kSymbolic,  // a graph edge
  kOp,        // a graph node without outputs (assignment target, group)
  kString,
  kDType,
  kTuple,
  kList,
  kRecord,
  kRange,
  kFunction,
  kModule,
  kDataset,
  kIterable,  // batches(...), progress(...)
};

using Field = std::pair<std::string, Value>;

struct DeferredOp;  // graph_builder.h

class Value {
 public:
  Value() = default;  // none

  static Value Concrete(Tensor t, bool literal = false);
  // A float literal (f32, as `0.1` is) that remembers its exact value in
  // f64, for when it meets an f64 tensor: `x * 0.1` then multiplies by the
  // f64 nearest 0.1, not by the f32 nearest it.
  static Value FloatLiteral(Tensor f32, Tensor exact_f64);
  // Output `index` of an op computed now whose graph node is made when the
  // value reaches the graph: a random draw, drawn anew at each run there.
  static Value Deferred(Tensor t, std::shared_ptr<DeferredOp> op, int index);
  static Value Symbolic(NodeOut out);
  static Value Op(Node* node);
  static Value String(std::string s);
  static Value OfDType(DType d);
  static Value Tuple(std::vector<Value> items);
  static Value List(std::vector<Value> items);
  static Value Record(std::vector<Field> fields);
  static Value Range(int64_t start, int64_t stop);
  static Value OfFunction(std::shared_ptr<const Function> f);
  static Value OfModule(std::shared_ptr<Module> m);
  static Value OfDataset(std::shared_ptr<const Dataset> d);
  static Value OfIterable(std::shared_ptr<Iterable> it);
  // Literal scalars: `2` (i32), `2.0` (f32), `true` (bool, not literal).
  static Value Int(int64_t v, bool literal = true);
  static Value Float(double v, bool literal = true);
  static Value Bool(bool v);
  // The none an `if` without `else` gives when its condition is false; it
  // remembers the `if`, so a later use can point at the missing `else`.
  static Value NoneOfIf(const SourceSpan& if_span);

  ValueKind kind() const { return kind_; }
  bool is_none() const { return kind_ == ValueKind::kNone; }
  bool is_concrete() const { return kind_ == ValueKind::kTensor; }
  bool is_symbolic() const { return kind_ == ValueKind::kSymbolic; }
  bool is_tensor() const { return is_concrete() || is_symbolic(); }
  bool is_sequence() const {
    return kind_ == ValueKind::kTuple || kind_ == ValueKind::kList;
  }
  // Whether this is a symbolic tensor or a tuple, list or record with one
  // inside, at any depth. Known when the value is made: asking is O(1), so
  // a host loop that nests its state ever deeper stays linear.
  bool contains_symbolic() const { return contains_symbolic_; }

  // kTensor (an empty tensor for other kinds)
  const Tensor& tensor() const;
  bool literal() const { return is_concrete() && literal_; }
  // A float literal's exact value in f64, where its f32 tensor rounded it;
  // null otherwise.
  const Tensor* exact_f64() const {
    return literal_ && As<Concrete_>().extra && As<Concrete_>().extra->exact_f64
               ? &*As<Concrete_>().extra->exact_f64
               : nullptr;
  }
  // The op that computes this concrete value again in the graph, and which
  // of its outputs it is; null for an ordinary concrete value.
  const std::shared_ptr<DeferredOp>& deferred() const;
  int deferred_index() const {
    return is_concrete() && As<Concrete_>().extra
               ? As<Concrete_>().extra->deferred_index
               : 0;
  }
  // kSymbolic
  NodeOut out() const { return is_symbolic() ? As<NodeOut>() : NodeOut{}; }
  // kOp (and the node of kSymbolic)
  Node* node() const {
    if (is_symbolic()) return As<NodeOut>().node;
    return kind_ == ValueKind::kOp ? As<Node*>() : nullptr;
  }
  // kString (empty for other kinds)
  const std::string& str() const;
  // kDType
  DType dtype_value() const {
    return kind_ == ValueKind::kDType ? As<DType>() : DType::kF32;
  }
  // kTuple, kList
  const std::vector<Value>& items() const;
  // kRecord
  const std::vector<Field>& fields() const;
  const Value* FindField(std::string_view name) const;
  // kRange
  int64_t range_start() const { return RangeOrEmpty().start; }
  int64_t range_stop() const { return RangeOrEmpty().stop; }
  // kFunction, kModule, kDataset, kIterable (null for other kinds)
  const std::shared_ptr<const Function>& function() const;
  const std::shared_ptr<Module>& module() const;
  const std::shared_ptr<const Dataset>& dataset() const;
  const std::shared_ptr<Iterable>& iterable() const;
  // kNone made by NoneOfIf: the `if`; nullptr otherwise.
  const SourceSpan* if_without_else() const;

  // The dtype and static shape of a tensor value (concrete or symbolic).
  DType tensor_dtype() const;
  Shape tensor_shape() const;

  // A concrete scalar of any dtype, as a number.
  std::optional<double> AsDouble() const;
  std::optional<int64_t> AsInt() const;  // integer dtype (or literal) only

 private:
  // What few concrete values carry, behind one pointer to keep Value small.
  struct Extra_ {
    std::optional<Tensor> exact_f64;       // literal floats only
    std::shared_ptr<DeferredOp> deferred;  // see Value::Deferred
    int deferred_index = 0;
  };
  struct Concrete_ {
    Tensor tensor;
    std::shared_ptr<const Extra_> extra;
  };
  struct Range_ {
    int64_t start = 0, stop = 0;
  };
  // The none of an `if` without `else`: the `if`.
  struct IfSpan_ {
    std::shared_ptr<const SourceSpan> span;
  };
  using Items_ = std::shared_ptr<const std::vector<Value>>;  // tuple, list
  using Payload =
      std::variant<std::monostate, IfSpan_, Concrete_, NodeOut, Node*,
                   std::string, DType, Items_,
                   std::shared_ptr<const std::vector<Field>>, Range_,
                   std::shared_ptr<const Function>, std::shared_ptr<Module>,
                   std::shared_ptr<const Dataset>, std::shared_ptr<Iterable>>;

  template <typename T>
  const T& As() const {
    return std::get<T>(payload_);
  }
  const Range_& RangeOrEmpty() const;
  template <typename T>
  static Value Make(ValueKind kind, T payload, bool contains_symbolic = false) {
    Value v;
    v.kind_ = kind;
    v.contains_symbolic_ = contains_symbolic;
    v.payload_ = std::move(payload);
    return v;
  }

  ValueKind kind_ = ValueKind::kNone;
  bool contains_symbolic_ = false;
  bool literal_ = false;  // kTensor: a bare literal (beside the tag: no size)
  // Which alternative is set follows from kind_ (tuples and lists share
  // Items_).
  Payload payload_;
};

// What `let` and `=` bind: a value whose bare literals (at the top, or as
// items of tuples and lists) become ordinary tensors. Only a literal written
// in place adapts to the other operand's dtype; `let a = [1, 2]` is i32.
Value AsNamed(Value v);

// "a concrete f32[2,3] tensor", "a list", "a string", ... for messages.
std::string DescribeValue(const Value& v);
// What `print` shows: tensors as nested lists, strings raw, symbolic tensors
// as `<symbolic f32[?,10] name>`. Inside tuples, lists and records strings
// are quoted.
std::string FormatValue(const Value& v, bool quote_strings = false);

// ---- callables, modules, datasets, iterables -------------------------------

// A user function (`def` or `fn`) with its closure, or a builtin.
struct Function {
  std::string name;  // "dense"; "<lambda>" for `fn`
  const lang::DefStmt* def = nullptr;
  const lang::LambdaExpr* lambda = nullptr;
  std::shared_ptr<Env> closure;
  const Builtin* builtin = nullptr;
  SourceSpan span;  // where it was declared
  const std::vector<lang::Param>& params() const;
};

struct Module {
  std::string name;  // the name it was imported as
  std::string path;
  std::shared_ptr<Env> env;  // its top-level names
  bool loading = true;       // for import cycles
};

// Named columns of one first dimension (docs/language.md §6 `dataset`). A
// dataset is a record of its columns for `run ... with`.
struct Dataset {
  std::vector<std::pair<std::string, Tensor>> columns;
  int64_t rows = 0;
  Value AsRecord() const;
};

// Something `for` iterates lazily: batches, progress bars.
class Iterator {
 public:
  virtual ~Iterator() = default;
  // The next element, or nullopt at the end.
  virtual absl::StatusOr<std::optional<Value>> Next() = 0;
};

class Iterable {
 public:
  virtual ~Iterable() = default;
  virtual absl::StatusOr<std::unique_ptr<Iterator>> Begin() = 0;
  // Number of elements, -1 when unknown.
  virtual int64_t Size() const = 0;
  virtual std::string Describe() const = 0;
};

// ---- environments ----------------------------------------------------------

enum class BindingKind {
  kLet,
  kVar,
  kState,
  kInput,
  kParam,
  kDef,
  kImport,
  kBuiltin,
};
const char* BindingKindName(BindingKind k);

struct Binding {
  Value value;
  BindingKind kind = BindingKind::kLet;
  SourceSpan span;  // the declaration
};

// A lexical scope: names bound in a block, function body or module. Bodies
// of `def`, `fn`, `if`, `loop` and `for` get a new Env; a function body's
// Env is a function boundary (rebinding with `=` stops there).
class Env {
 public:
  Env(std::shared_ptr<Env> parent, bool function_boundary)
      : parent_(std::move(parent)), function_boundary_(function_boundary) {}

  Binding* Find(const std::string& name);
  Binding* FindLocal(const std::string& name);
  // The binding `name = ...` may change: found before crossing a function
  // boundary. `*crossed` tells whether the name exists only further out.
  Binding* FindForRebind(const std::string& name, bool* crossed);
  void Define(const std::string& name, Binding b) {
    vars_[name] = std::move(b);
  }
  // Forgets every name bound here. A function bound in the scope it closes
  // over keeps that scope alive (a cycle of shared_ptrs): the interpreter
  // clears its scopes when it goes, so that they are freed.
  void Clear() { vars_.clear(); }
  // Every name visible from here (for "did you mean"), innermost scope
  // first, each scope's names sorted.
  void CollectNames(std::vector<std::string>* out) const;
  // The names bound in this scope itself, sorted.
  std::vector<std::string> Names() const;
  const std::shared_ptr<Env>& parent() const { return parent_; }

 private:
  std::shared_ptr<Env> parent_;
  bool function_boundary_;
  // A node map: Find's pointers stay valid while other names are defined.
  absl::node_hash_map<std::string, Binding> vars_;
};

}  // namespace runnel::interp

#endif  // RUNNEL_INTERPRETER_VALUE_H_
