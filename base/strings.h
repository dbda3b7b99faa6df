// String building for messages. Debian's Abseil has its own string_view type
// (ABSL_OPTION_USE_STD_STRING_VIEW=0), which absl::StrCat requires; this
// StrCat takes std::string_view and anything fmt can format instead.
#ifndef RUNNEL_BASE_STRINGS_H_
#define RUNNEL_BASE_STRINGS_H_

#include <fmt/format.h>

#include <iterator>
#include <string>
#include <string_view>
#include <type_traits>

#include "absl/strings/string_view.h"

template <>
struct fmt::formatter<absl::string_view> : fmt::formatter<std::string_view> {
  auto format(absl::string_view s, format_context& ctx) const {
    return fmt::formatter<std::string_view>::format(
        std::string_view(s.data(), s.size()), ctx);
  }
};

namespace runnel {

// `s` as a JSON string literal (metrics lines, traces).
inline std::string JsonString(std::string_view s) {
  std::string out = "\"";
  for (char c : s) {
    switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\t':
        out += "\\t";
        break;
      default:
        if (static_cast<unsigned char>(c) < 0x20) {
          out += fmt::format("\\u{:04x}", static_cast<int>(c));
        } else {
          out += c;
        }
    }
  }
  return out + "\"";
}

namespace strings_internal {
template <typename T>
void Append(std::string* out, const T& arg) {
  if constexpr (std::is_convertible_v<const T&, std::string_view>) {
    out->append(std::string_view(arg));
  } else if constexpr (std::is_integral_v<T> && !std::is_same_v<T, bool> &&
                       !std::is_same_v<T, char>) {
    out->append(fmt::format_int(arg).c_str());
  } else {
    fmt::format_to(std::back_inserter(*out), "{}", arg);
  }
}
}  // namespace strings_internal

// Concatenates the fmt "{}" rendering of each argument (strings and integers
// appended directly: names are built from them by the hundred thousand).
template <typename... Args>
std::string StrCat(const Args&... args) {
  std::string out;
  (strings_internal::Append(&out, args), ...);
  return out;
}

// 'name' in single quotes, as messages cite files, variables and tensors.
inline std::string Quoted(std::string_view name) {
  return StrCat("'", name, "'");
}

inline std::string_view ToStd(absl::string_view s) {
  return std::string_view(s.data(), s.size());
}

}  // namespace runnel

#endif  // RUNNEL_BASE_STRINGS_H_
