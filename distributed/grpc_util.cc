#include "distributed/grpc_util.h"

#include <grpcpp/create_channel.h>
#include <grpcpp/security/credentials.h>
#include <grpcpp/support/channel_arguments.h>

#include <algorithm>

#include "base/read_file.h"
#include "base/status_macros.h"
#include "base/strings.h"
#include "distributed/grpc_options.h"

namespace runnel {

std::shared_ptr<grpc::Channel> NewTaskChannel(const std::string& address,
                                              const GrpcOptions& options,
                                              bool fast) {
  grpc::ChannelArguments args;
  args.SetMaxReceiveMessageSize(options.max_message_bytes);
  args.SetMaxSendMessageSize(options.max_message_bytes);
  // A task that stops answering is found within seconds.
  args.SetInt(GRPC_ARG_KEEPALIVE_TIME_MS, fast ? 300 : 2000);
  args.SetInt(GRPC_ARG_KEEPALIVE_TIMEOUT_MS, fast ? 600 : 3000);
  args.SetInt(GRPC_ARG_KEEPALIVE_PERMIT_WITHOUT_CALLS, 1);
  args.SetInt(GRPC_ARG_HTTP2_MAX_PINGS_WITHOUT_DATA, 0);
  // A restarted task is found again quickly: reconnecting starts 100 ms
  // after a failure. gRPC also takes the "min reconnect backoff" as the
  // least time a connection attempt gets to finish its HTTP/2 handshake;
  // at 100 ms a task just started on a busy machine (two cores running the
  // tests) sometimes missed it, and its first call failed as unreachable.
  args.SetInt(GRPC_ARG_INITIAL_RECONNECT_BACKOFF_MS, 100);
  args.SetInt(GRPC_ARG_MIN_RECONNECT_BACKOFF_MS, 1000);
  args.SetInt(GRPC_ARG_MAX_RECONNECT_BACKOFF_MS, 1000);
  return grpc::CreateCustomChannel(address, grpc::InsecureChannelCredentials(),
                                   args);
}

std::chrono::system_clock::time_point After(double seconds) {
  return std::chrono::system_clock::now() +
         std::chrono::microseconds(static_cast<int64_t>(seconds * 1e6));
}

grpc::Status ToGrpc(const absl::Status& s) {
  if (s.ok()) return grpc::Status::OK;
  return grpc::Status(static_cast<grpc::StatusCode>(s.code()),
                      std::string(s.message()));
}

std::string Reason(const grpc::Status& s) {
  const std::string& m = s.error_message();
  if (m.find("onnection refused") != std::string::npos) {
    return "connection refused";
  }
  if (s.error_code() == grpc::StatusCode::DEADLINE_EXCEEDED) {
    return "no answer in time";
  }
  if (m.find("keepalive") != std::string::npos ||
      m.find("ping") != std::string::npos) {
    return "no answer to keepalive pings";
  }
  if (m.find("Socket closed") != std::string::npos ||
      m.find("reset") != std::string::npos ||
      m.find("Broken pipe") != std::string::npos ||
      m.find("GOAWAY") != std::string::npos) {
    return "connection lost";
  }
  return m;
}

bool SameToken(std::string_view a, std::string_view b) {
  unsigned char diff = a.size() == b.size() ? 0 : 1;
  const size_t n = std::max(a.size(), b.size());
  for (size_t i = 0; i < n; ++i) {
    const unsigned char x = i < a.size() ? a[i] : 0;
    const unsigned char y = i < b.size() ? b[i] : 0;
    diff |= x ^ y;
  }
  return diff == 0;
}

std::string ListenAddress(const ClusterSpec& spec, const std::string& address) {
  if (spec.AllLoopback()) return address;
  return "0.0.0.0" + address.substr(address.rfind(':'));
}

absl::StatusOr<std::string> ReadTokenFile(const std::string& path) {
  RN_ASSIGN_OR_RETURN(std::string text, ReadFileToString(path));
  const std::string line = text.substr(0, text.find('\n'));
  if (line.empty()) {
    return absl::InvalidArgumentError(
        StrCat(path, ": the token file's first line is empty"));
  }
  return line;
}

}  // namespace runnel
