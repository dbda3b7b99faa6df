#include "interpreter/value.h"

#include <algorithm>
#include <cmath>
#include <iterator>

#include "base/strings.h"
#include "lang/ast.h"

namespace runnel::interp {

namespace {
const std::vector<Value>& EmptyItems() {
  static const auto* empty = new std::vector<Value>();
  return *empty;
}
const std::vector<Field>& EmptyFields() {
  static const auto* empty = new std::vector<Field>();
  return *empty;
}
bool AnySymbolic(const std::vector<Value>& items) {
  return std::any_of(items.begin(), items.end(),
                     [](const Value& i) { return i.contains_symbolic(); });
}
}  // namespace

Value Value::Concrete(Tensor t, bool literal) {
  const bool lit = literal && t.dtype() != DType::kBool;
  Value v = Make(ValueKind::kTensor, Concrete_{std::move(t), nullptr});
  v.literal_ = lit;
  return v;
}
Value Value::FloatLiteral(Tensor f32, Tensor exact_f64) {
  Value v =
      Make(ValueKind::kTensor,
           Concrete_{std::move(f32), std::make_shared<const Extra_>(Extra_{
                                         std::move(exact_f64), nullptr, 0})});
  v.literal_ = true;
  return v;
}
Value Value::Deferred(Tensor t, std::shared_ptr<DeferredOp> op, int index) {
  return Make(
      ValueKind::kTensor,
      Concrete_{std::move(t), std::make_shared<const Extra_>(
                                  Extra_{std::nullopt, std::move(op), index})});
}
const std::shared_ptr<DeferredOp>& Value::deferred() const {
  static const auto* none = new std::shared_ptr<DeferredOp>();
  return is_concrete() && As<Concrete_>().extra
             ? As<Concrete_>().extra->deferred
             : *none;
}
Value Value::Symbolic(NodeOut out) {
  return Make(ValueKind::kSymbolic, out, /*contains_symbolic=*/true);
}
Value Value::Op(Node* node) { return Make(ValueKind::kOp, node); }
Value Value::String(std::string s) {
  return Make(ValueKind::kString, std::move(s));
}
Value Value::OfDType(DType d) { return Make(ValueKind::kDType, d); }
Value Value::Tuple(std::vector<Value> items) {
  const bool sym = AnySymbolic(items);
  return Make(ValueKind::kTuple,
              std::make_shared<const std::vector<Value>>(std::move(items)),
              sym);
}
Value Value::List(std::vector<Value> items) {
  const bool sym = AnySymbolic(items);
  return Make(ValueKind::kList,
              std::make_shared<const std::vector<Value>>(std::move(items)),
              sym);
}
Value Value::Record(std::vector<Field> fields) {
  const bool sym =
      std::any_of(fields.begin(), fields.end(),
                  [](const Field& f) { return f.second.contains_symbolic(); });
  return Make(ValueKind::kRecord,
              std::make_shared<const std::vector<Field>>(std::move(fields)),
              sym);
}
Value Value::Range(int64_t start, int64_t stop) {
  return Make(ValueKind::kRange, Range_{start, stop});
}
Value Value::OfFunction(std::shared_ptr<const Function> f) {
  return Make(ValueKind::kFunction, std::move(f));
}
Value Value::OfModule(std::shared_ptr<Module> m) {
  return Make(ValueKind::kModule, std::move(m));
}
Value Value::OfDataset(std::shared_ptr<const Dataset> d) {
  return Make(ValueKind::kDataset, std::move(d));
}
Value Value::OfIterable(std::shared_ptr<Iterable> it) {
  return Make(ValueKind::kIterable, std::move(it));
}
Value Value::Int(int64_t x, bool literal) {
  return Concrete(Tensor::Scalar<int32_t>(static_cast<int32_t>(x)), literal);
}
Value Value::Float(double x, bool literal) {
  const float f = static_cast<float>(x);
  if (!literal || static_cast<double>(f) == x || std::isnan(x)) {
    return Concrete(Tensor::Scalar<float>(f), literal);
  }
  return FloatLiteral(Tensor::Scalar<float>(f), Tensor::Scalar<double>(x));
}
Value Value::Bool(bool x) { return Concrete(Tensor::Scalar<bool>(x)); }
Value Value::NoneOfIf(const SourceSpan& if_span) {
  return Make(ValueKind::kNone,
              IfSpan_{std::make_shared<const SourceSpan>(if_span)});
}

Value AsNamed(Value v) {
  if (v.is_concrete() && v.literal()) return Value::Concrete(v.tensor());
  if (v.is_sequence()) {
    bool any = false;
    for (const Value& i : v.items())
      any = any || (i.is_concrete() && i.literal()) || i.is_sequence();
    if (!any) return v;
    std::vector<Value> items;
    items.reserve(v.items().size());
    for (const Value& i : v.items()) items.push_back(AsNamed(i));
    return v.kind() == ValueKind::kTuple ? Value::Tuple(std::move(items))
                                         : Value::List(std::move(items));
  }
  return v;
}

namespace {
template <typename T>
const T& Null() {
  static const T* none = new T();
  return *none;
}
}  // namespace

const Tensor& Value::tensor() const {
  return is_concrete() ? As<Concrete_>().tensor : Null<Tensor>();
}
const std::string& Value::str() const {
  return kind_ == ValueKind::kString ? As<std::string>() : Null<std::string>();
}
const std::vector<Value>& Value::items() const {
  return is_sequence() ? *As<Items_>() : EmptyItems();
}
const std::vector<Field>& Value::fields() const {
  return kind_ == ValueKind::kRecord
             ? *As<std::shared_ptr<const std::vector<Field>>>()
             : EmptyFields();
}
const Value::Range_& Value::RangeOrEmpty() const {
  return kind_ == ValueKind::kRange ? As<Range_>() : Null<Range_>();
}
const std::shared_ptr<const Function>& Value::function() const {
  using P = std::shared_ptr<const Function>;
  return kind_ == ValueKind::kFunction ? As<P>() : Null<P>();
}
const std::shared_ptr<Module>& Value::module() const {
  using P = std::shared_ptr<Module>;
  return kind_ == ValueKind::kModule ? As<P>() : Null<P>();
}
const std::shared_ptr<const Dataset>& Value::dataset() const {
  using P = std::shared_ptr<const Dataset>;
  return kind_ == ValueKind::kDataset ? As<P>() : Null<P>();
}
const std::shared_ptr<Iterable>& Value::iterable() const {
  using P = std::shared_ptr<Iterable>;
  return kind_ == ValueKind::kIterable ? As<P>() : Null<P>();
}
const SourceSpan* Value::if_without_else() const {
  const IfSpan_* s = std::get_if<IfSpan_>(&payload_);
  return s == nullptr ? nullptr : s->span.get();
}
const Value* Value::FindField(std::string_view name) const {
  for (const Field& f : fields()) {
    if (f.first == name) return &f.second;
  }
  return nullptr;
}

DType Value::tensor_dtype() const {
  if (is_symbolic()) return out().node->output_dtype(out().index);
  return tensor().dtype();
}
Shape Value::tensor_shape() const {
  if (is_symbolic()) return out().node->output_shape(out().index);
  return tensor().shape();
}

std::optional<double> Value::AsDouble() const {
  if (kind_ != ValueKind::kTensor || tensor().num_elements() != 1) {
    return std::nullopt;
  }
  absl::StatusOr<double> d = tensor().ScalarAsDouble();
  if (!d.ok()) return std::nullopt;
  return *d;
}

std::optional<int64_t> Value::AsInt() const {
  if (kind_ != ValueKind::kTensor || tensor().num_elements() != 1 ||
      !IsInteger(tensor().dtype())) {
    return std::nullopt;
  }
  absl::StatusOr<int64_t> i = tensor().ScalarAsInt();
  if (!i.ok()) return std::nullopt;
  return *i;
}

Value Dataset::AsRecord() const {
  std::vector<Field> fields;
  for (const auto& [name, t] : columns) {
    fields.emplace_back(name, Value::Concrete(t));
  }
  return Value::Record(std::move(fields));
}

const std::vector<lang::Param>& Function::params() const {
  static const auto* none = new std::vector<lang::Param>();
  if (def != nullptr) return def->params;
  if (lambda != nullptr) return lambda->params;
  return *none;
}

namespace {
std::string SpecString(const Value& v) {
  return StrCat(DTypeName(v.tensor_dtype()), v.tensor_shape().ToString());
}
}  // namespace

std::string DescribeValue(const Value& v) {
  switch (v.kind()) {
    case ValueKind::kNone:
      return "none";
    case ValueKind::kTensor:
      return StrCat("a concrete ", SpecString(v), " tensor");
    case ValueKind::kSymbolic:
      return StrCat("a symbolic ", SpecString(v), " tensor");
    case ValueKind::kOp:
      return "an op";
    case ValueKind::kString:
      return "a string";
    case ValueKind::kDType:
      return "a dtype";
    case ValueKind::kTuple:
      return "a tuple";
    case ValueKind::kList:
      return "a list";
    case ValueKind::kRecord:
      return "a record";
    case ValueKind::kRange:
      return "a range";
    case ValueKind::kFunction:
      return "a function";
    case ValueKind::kModule:
      return "a module";
    case ValueKind::kDataset:
      return "a dataset";
    case ValueKind::kIterable:
      return "an iterable";
  }
  return "a value";
}

std::string FormatValue(const Value& v, bool quote_strings) {
  switch (v.kind()) {
    case ValueKind::kNone:
      return "none";
    case ValueKind::kTensor:
      return v.tensor().ValuesString(1000);
    case ValueKind::kSymbolic: {
      std::string name = v.out().node->name();
      if (v.out().index != 0) name += StrCat(":", v.out().index);
      return StrCat("<symbolic ", SpecString(v), " ", name, ">");
    }
    case ValueKind::kOp:
      return StrCat("<op ", v.node()->name(), ">");
    case ValueKind::kString:
      if (!quote_strings) return v.str();
      {
        std::string s = "\"";
        for (char c : v.str()) {
          if (c == '"' || c == '\\') s += '\\';
          if (c == '\n') {
            s += "\\n";
          } else if (c == '\t') {
            s += "\\t";
          } else {
            s += c;
          }
        }
        return s + "\"";
      }
    case ValueKind::kDType:
      return std::string(DTypeName(v.dtype_value()));
    case ValueKind::kTuple:
    case ValueKind::kList: {
      const bool tuple = v.kind() == ValueKind::kTuple;
      std::string s = tuple ? "(" : "[";
      for (size_t i = 0; i < v.items().size(); ++i) {
        if (i) s += ", ";
        s += FormatValue(v.items()[i], true);
      }
      if (tuple && v.items().size() == 1) s += ",";
      return s + (tuple ? ")" : "]");
    }
    case ValueKind::kRecord: {
      std::string s = "{";
      for (size_t i = 0; i < v.fields().size(); ++i) {
        if (i) s += ", ";
        s += StrCat(v.fields()[i].first, ": ",
                    FormatValue(v.fields()[i].second, true));
      }
      return s + "}";
    }
    case ValueKind::kRange:
      return StrCat(v.range_start(), "..", v.range_stop());
    case ValueKind::kFunction:
      return StrCat(v.function()->builtin ? "<builtin " : "<function ",
                    v.function()->name, ">");
    case ValueKind::kModule:
      return StrCat("<module ", v.module()->name, ">");
    case ValueKind::kDataset: {
      std::string s = StrCat("<dataset of ", v.dataset()->rows, " rows:");
      for (const auto& [name, t] : v.dataset()->columns) {
        s += StrCat(" ", name, " ", DTypeName(t.dtype()), t.shape().ToString());
      }
      return s + ">";
    }
    case ValueKind::kIterable:
      return StrCat("<", v.iterable()->Describe(), ">");
  }
  return "?";
}

const char* BindingKindName(BindingKind k) {
  switch (k) {
    case BindingKind::kLet:
      return "let";
    case BindingKind::kVar:
      return "var";
    case BindingKind::kState:
      return "state";
    case BindingKind::kInput:
      return "input";
    case BindingKind::kParam:
      return "parameter";
    case BindingKind::kDef:
      return "function";
    case BindingKind::kImport:
      return "module";
    case BindingKind::kBuiltin:
      return "builtin";
  }
  return "name";
}

Binding* Env::Find(const std::string& name) {
  for (Env* e = this; e != nullptr; e = e->parent_.get()) {
    auto it = e->vars_.find(name);
    if (it != e->vars_.end()) return &it->second;
  }
  return nullptr;
}

Binding* Env::FindLocal(const std::string& name) {
  auto it = vars_.find(name);
  return it == vars_.end() ? nullptr : &it->second;
}

Binding* Env::FindForRebind(const std::string& name, bool* crossed) {
  *crossed = false;
  bool past_boundary = false;
  for (Env* e = this; e != nullptr; e = e->parent_.get()) {
    auto it = e->vars_.find(name);
    if (it != e->vars_.end()) {
      if (past_boundary) {
        *crossed = true;
        return nullptr;
      }
      return &it->second;
    }
    if (e->function_boundary_) past_boundary = true;
  }
  return nullptr;
}

void Env::CollectNames(std::vector<std::string>* out) const {
  for (const Env* e = this; e != nullptr; e = e->parent_.get()) {
    std::vector<std::string> names = e->Names();
    out->insert(out->end(), std::make_move_iterator(names.begin()),
                std::make_move_iterator(names.end()));
  }
}

std::vector<std::string> Env::Names() const {
  std::vector<std::string> names;
  names.reserve(vars_.size());
  for (const auto& [name, b] : vars_) names.push_back(name);
  std::sort(names.begin(), names.end());
  return names;
}

}  // namespace runnel::interp
