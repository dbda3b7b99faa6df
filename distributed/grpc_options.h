// How a task talks to the others over gRPC (docs/cluster.md): the shared
// token, timeouts and message sizes.
#ifndef RUNNEL_DISTRIBUTED_GRPC_OPTIONS_H_
#define RUNNEL_DISTRIBUTED_GRPC_OPTIONS_H_

#include <string>

#include "absl/status/statusor.h"

namespace runnel {

struct GrpcOptions {
  // Required of every request when not empty (the spec names non-loopback
  // addresses); compared in constant time.
  std::string token;
  // How long the first contact with a task may wait for it to come up
  // (later calls fail at once when it is down).
  double connect_timeout_s = 10;
  // Largest message accepted (tensors cross in chunks of 8 MiB,
  // tensor_coding.h).
  int max_message_bytes = 256 << 20;
  // How long a worker waits for the chief to initialize shared state.
  double chief_wait_s = 60;
  // How long a run that failed as unreachable is retried (--restart).
  double retry_unreachable_s = 0;
};

// Reads the token file: its first line, which must not be empty.
absl::StatusOr<std::string> ReadTokenFile(const std::string& path);

}  // namespace runnel

#endif  // RUNNEL_DISTRIBUTED_GRPC_OPTIONS_H_
