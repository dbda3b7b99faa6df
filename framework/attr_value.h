// Typed node attributes: the compile-time parameters of an op
// (`transpose_a`, `axis`, `dtype`, a constant's value, ...).
#ifndef RUNNEL_FRAMEWORK_ATTR_VALUE_H_
#define RUNNEL_FRAMEWORK_ATTR_VALUE_H_

#include <cstdint>
#include <map>
#include <string>
#include <variant>
#include <vector>

#include "absl/status/statusor.h"
#include "base/strings.h"
#include "framework/dtype.h"
#include "framework/shape.h"
#include "framework/tensor.h"

namespace runnel {

using AttrValue = std::variant<int64_t, double, bool, std::string, DType, Shape,
                               std::vector<int64_t>, Tensor>;
// Ordered so graph dumps and GraphDefs are deterministic.
using AttrMap = std::map<std::string, AttrValue, std::less<>>;

std::string AttrValueToString(const AttrValue& v);

// Typed lookup. An int attribute also reads as double; a missing attribute
// or a type mismatch is an InvalidArgument naming the attribute.
template <typename T>
absl::StatusOr<T> GetAttr(const AttrMap& attrs, std::string_view name) {
  auto it = attrs.find(name);
  if (it == attrs.end()) {
    return absl::InvalidArgumentError(StrCat("missing attribute '", name, "'"));
  }
  if (const T* v = std::get_if<T>(&it->second)) return *v;
  if constexpr (std::is_same_v<T, double>) {
    if (const int64_t* i = std::get_if<int64_t>(&it->second)) return double(*i);
  }
  if constexpr (std::is_same_v<T, std::vector<int64_t>>) {
    if (const int64_t* i = std::get_if<int64_t>(&it->second)) {
      return std::vector<int64_t>{*i};
    }
  }
  return absl::InvalidArgumentError(
      StrCat("attribute '", name, "' has the wrong type"));
}

// Like GetAttr, but returns `fallback` when the attribute is absent.
template <typename T>
absl::StatusOr<T> GetAttrOr(const AttrMap& attrs, std::string_view name,
                            T fallback) {
  if (attrs.find(name) == attrs.end()) return fallback;
  return GetAttr<T>(attrs, name);
}

}  // namespace runnel

#endif  // RUNNEL_FRAMEWORK_ATTR_VALUE_H_
