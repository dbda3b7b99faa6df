// What the gRPC service, its channels and the cluster share: the token's
// metadata key, deadlines, and statuses across the wire.
#ifndef RUNNEL_DISTRIBUTED_GRPC_UTIL_H_
#define RUNNEL_DISTRIBUTED_GRPC_UTIL_H_

#include <grpcpp/support/status.h>

#include <chrono>
#include <string>
#include <string_view>

#include "absl/status/status.h"
#include "distributed/cluster_spec.h"

namespace runnel {

// The request metadata that carries the cluster's token.
inline constexpr char kTokenKey[] = "runnel-token";

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
