// What the gRPC service, its channels and the cluster share: the token's
// metadata key, deadlines, and statuses across the wire.
#ifndef RUNNEL_DISTRIBUTED_GRPC_UTIL_H_
#define RUNNEL_DISTRIBUTED_GRPC_UTIL_H_

#include <grpcpp/channel.h>
#include <grpcpp/support/status.h>

#include <chrono>
#include <string>
#include <string_view>

#include "absl/status/status.h"
#include "distributed/cluster_spec.h"
#include "distributed/grpc_options.h"

namespace runnel {

// The request metadata that carries the cluster's token.
inline constexpr char kTokenKey[] = "runnel-token";

// A channel to the task at `address`: messages up to the options' limit,
// keepalive pings that find a task that stopped answering within
// seconds (5; with `fast`, a replica's, 0.9, so that its backup takes
// over within 2), and quick reconnection to a restarted one.
std::shared_ptr<grpc::Channel> NewTaskChannel(const std::string& address,
                                              const GrpcOptions& options,
                                              bool fast = false);

// The deadline `seconds` from now.
std::chrono::system_clock::time_point After(double seconds);

// An absl status as a gRPC one, code and message kept.
grpc::Status ToGrpc(const absl::Status& s);

// A short reason for a transport failure ("connection refused").
std::string Reason(const grpc::Status& s);

// Constant-time comparison of a request's token with ours.
bool SameToken(std::string_view a, std::string_view b);

// The address to listen on: the spec's, or every interface at its port
// when it names another machine's name or address.
std::string ListenAddress(const ClusterSpec& spec, const std::string& address);

}  // namespace runnel

#endif  // RUNNEL_DISTRIBUTED_GRPC_UTIL_H_
