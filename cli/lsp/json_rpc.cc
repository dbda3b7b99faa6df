#include "cli/lsp/json_rpc.h"

#include <cctype>
#include <charconv>
#include <string_view>

namespace runnel::lsp {
namespace {

// One header line without its line end; nullopt at the end of input.
std::optional<std::string> ReadLine(std::FILE* in) {
  std::string line;
  for (int c; (c = std::fgetc(in)) != EOF;) {
    if (c == '\n') {
      if (!line.empty() && line.back() == '\r') line.pop_back();
      return line;
    }
    line.push_back(static_cast<char>(c));
    if (line.size() > 4096) line.erase(0, line.size() - 4096);
  }
  return std::nullopt;
}

bool EqualsIgnoringCase(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (std::tolower(static_cast<unsigned char>(a[i])) !=
        std::tolower(static_cast<unsigned char>(b[i]))) {
      return false;
    }
  }
  return true;
}

}  // namespace

ReadResult ReadMessage(std::FILE* in) {
  std::optional<size_t> length;
  std::string error;
  bool any = false;
  while (true) {
    std::optional<std::string> line = ReadLine(in);
    if (!line) return {};
    if (line->empty()) {
      if (!any) continue;  // stray blank lines between messages
      break;
    }
    any = true;
    const size_t colon = line->find(':');
    if (colon == std::string::npos) {
      error = "a header line without ':'";
      continue;
    }
    if (!EqualsIgnoringCase(std::string_view(*line).substr(0, colon),
                            "Content-Length")) {
      continue;  // Content-Type and anything else
    }
    std::string_view value = std::string_view(*line).substr(colon + 1);
    while (!value.empty() && value.front() == ' ') value.remove_prefix(1);
    while (!value.empty() && value.back() == ' ') value.remove_suffix(1);
    size_t n = 0;
    auto [end, ec] =
        std::from_chars(value.data(), value.data() + value.size(), n);
    if (ec != std::errc() || end != value.data() + value.size()) {
      error = "Content-Length is not a number";
    } else if (n > kMaxMessageBytes) {
      error = "Content-Length is larger than 256 MiB";
    } else {
      length = n;
    }
  }
  if (!length) {
    return {.kind = ReadResult::Kind::kBadHeader,
            .body = "",
            .error = error.empty() ? "no Content-Length header" : error};
  }
  std::string body(*length, '\0');
  if (std::fread(body.data(), 1, body.size(), in) != body.size()) return {};
  return {
      .kind = ReadResult::Kind::kMessage, .body = std::move(body), .error = ""};
}

void WriteMessage(std::FILE* out, const std::string& body) {
  std::fprintf(out, "Content-Length: %zu\r\n\r\n", body.size());
  std::fwrite(body.data(), 1, body.size(), out);
  std::fflush(out);
}

}  // namespace runnel::lsp
