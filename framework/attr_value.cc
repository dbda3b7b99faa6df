#include "framework/attr_value.h"

#include "absl/strings/str_join.h"
#include "base/source_span.h"

namespace runnel {

std::string AttrValueToString(const AttrValue& v) {
  struct Visitor {
    std::string operator()(int64_t i) { return StrCat(i); }
    std::string operator()(double d) { return StrCat(d); }
    std::string operator()(bool b) { return b ? "true" : "false"; }
    std::string operator()(const std::string& s) {
      return StrCat("\"", s, "\"");
    }
    std::string operator()(DType d) { return std::string(DTypeName(d)); }
    std::string operator()(const Shape& s) { return s.ToString(); }
    std::string operator()(const std::vector<int64_t>& v) {
      return StrCat("(", absl::StrJoin(v, ", "), ")");
    }
    std::string operator()(const Tensor& t) { return t.DebugString(6); }
  };
  return std::visit(Visitor{}, v);
}

}  // namespace runnel
