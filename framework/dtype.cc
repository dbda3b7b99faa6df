#include "framework/dtype.h"

namespace runnel {

std::optional<DType> DTypeFromName(std::string_view name) {
  for (DType d : kAllDTypes) {
    if (DTypeName(d) == name) return d;
  }
  return std::nullopt;
}

}  // namespace runnel
