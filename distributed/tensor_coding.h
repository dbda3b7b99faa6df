// RecvTensor's messages (worker.proto: RecvTensorChunk), written and read
// by hand so that a tensor's bytes cross with one copy, the receiver's:
//
//  - The sender's messages are gRPC byte buffers of two slices: a few bytes
//    of protobuf framing (the header, then the tag and length of `data`),
//    and a slice that points into the tensor's own buffer. The slice holds
//    a reference to the buffer until gRPC has sent it (a variable's value
//    is copy-on-write, framework/resource_mgr.h, so it cannot change under
//    it).
//  - The receiver parses each message from gRPC's slices and copies `data`
//    straight into the tensor it builds: no std::string in between.
//
// Tensors above kTensorChunkBytes cross in several messages, so no message
// nears gRPC's limit. This follows what TensorFlow's grpc_tensor_coding
// does for its RecvTensorResponse.
#ifndef RUNNEL_DISTRIBUTED_TENSOR_CODING_H_
#define RUNNEL_DISTRIBUTED_TENSOR_CODING_H_

#include <grpcpp/support/byte_buffer.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "framework/tensor.h"

namespace runnel {
namespace proto {
class StatusProto;
}

// A status on the wire, with the node and script place it points at
// (base/errors.h).
void StatusToProto(const absl::Status& s, proto::StatusProto* p);
absl::Status StatusFromProto(const proto::StatusProto& p);

constexpr size_t kTensorChunkBytes = size_t{8} << 20;

// The messages of one RecvTensor answer, made one at a time: the first
// carries the header (and, on failure, the step's error).
class TensorMessages {
 public:
  // `index`: the value's place among a RecvTensors request's keys.
  TensorMessages(const absl::Status& status, Tensor value, bool is_dead,
                 size_t chunk_bytes = kTensorChunkBytes, int index = 0);
  // The next message; false once all have been made.
  bool Next(grpc::ByteBuffer* out);
  // The tensor bytes the messages carry.
  int64_t bytes() const { return static_cast<int64_t>(total_); }

 private:
  std::string header_;  // the first message's framing
  Tensor value_;
  size_t total_ = 0;
  size_t offset_ = 0;
  size_t chunk_bytes_;
  bool started_ = false;
};

// Builds the tensor of one RecvTensor answer from its messages. A
// malformed message is DataLoss naming the sender and the edge
// ("/job:ps/task:0 sent more bytes than the tensor holds, for edge 'w:0'").
class TensorAssembler {
 public:
  // `sender` is the task; `key` the rendezvous key
  // (common_runtime/rendezvous.h).
  TensorAssembler(std::string sender, const std::string& key);
  // One of the values of a RecvTensors answer: its header names which of
  // `keys` (not owned) it is; one naming none is malformed. With one key
  // (a RecvTensor answer, whose header leaves its index 0 out), its errors
  // name that key's edge from the start, as the constructor above's do.
  TensorAssembler(std::string sender, const std::vector<std::string>* keys);
  // Takes one message (consuming it). An error ends the answer: the
  // sender's step error, or the message's fault.
  absl::Status Add(grpc::ByteBuffer* message);
  // After the last message: OK when the tensor is whole.
  absl::Status Finish() const;
  const Tensor& value() const { return value_; }
  bool is_dead() const { return dead_; }
  // Tensor bytes copied in so far.
  int64_t bytes() const { return offset_; }
  // Whether the header and every byte it announced have come.
  bool complete() const {
    return started_ && offset_ == static_cast<int64_t>(value_.bytes());
  }
  // Which of the keys it was made with the value is (after the header).
  int index() const { return index_; }

 private:
  absl::Status Fail(std::string_view what) const;
  absl::Status TakeHeader(const std::string& serialized);

  const std::string sender_;
  std::string edge_;
  const std::vector<std::string>* keys_ = nullptr;
  int index_ = 0;
  bool started_ = false;
  bool dead_ = false;
  Tensor value_;
  int64_t offset_ = 0;
};

}  // namespace runnel

#endif  // RUNNEL_DISTRIBUTED_TENSOR_CODING_H_
