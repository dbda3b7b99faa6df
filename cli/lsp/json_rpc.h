// The Language Server Protocol's framing of JSON-RPC 2.0 messages: headers
// ("Content-Length: N", optionally "Content-Type: ..."), a blank line, then
// N bytes of JSON.
#ifndef RUNNEL_CLI_LSP_JSON_RPC_H_
#define RUNNEL_CLI_LSP_JSON_RPC_H_

#include <cstdio>
#include <optional>
#include <string>

namespace runnel::lsp {

// The largest message read: a bigger Content-Length is refused.
inline constexpr size_t kMaxMessageBytes = size_t{256} << 20;

struct ReadResult {
  enum class Kind { kMessage, kEnd, kBadHeader } kind = Kind::kEnd;
  std::string body;   // kMessage
  std::string error;  // kBadHeader: what was wrong; the headers were skipped
};

// The next message on `in`. A header block without a usable Content-Length
// is skipped whole (kBadHeader), so that one bad message does not end the
// session; kEnd at the end of input (also in the middle of a message).
ReadResult ReadMessage(std::FILE* in);

// Writes `body` framed, and flushes.
void WriteMessage(std::FILE* out, const std::string& body);

}  // namespace runnel::lsp

#endif  // RUNNEL_CLI_LSP_JSON_RPC_H_
