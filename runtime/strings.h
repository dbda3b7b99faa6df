// String building for messages. Debian's Abseil has its own string_view type
// (ABSL_OPTION_USE_STD_STRING_VIEW=0), which absl::StrCat requires; this
// StrCat takes std::string_view and anything fmt can format instead.
#ifndef RUNNEL_RUNTIME_STRINGS_H_
#define RUNNEL_RUNTIME_STRINGS_H_

#include <fmt/format.h>

#include <iterator>
#include <string>
#include <string_view>

#include "absl/strings/string_view.h"

template <>
struct fmt::formatter<absl::string_view> : fmt::formatter<std::string_view> {
  auto format(absl::string_view s, format_context& ctx) const {
    return fmt::formatter<std::string_view>::format(
        std::string_view(s.data(), s.size()), ctx);
  }
};

namespace runnel {

// Concatenates the fmt "{}" rendering of each argument.
template <typename... Args>
std::string StrCat(const Args&... args) {
  std::string out;
  (fmt::format_to(std::back_inserter(out), "{}", args), ...);
  return out;
}

inline std::string_view ToStd(absl::string_view s) {
  return std::string_view(s.data(), s.size());
}

}  // namespace runnel

#endif  // RUNNEL_RUNTIME_STRINGS_H_
