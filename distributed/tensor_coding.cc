#include "distributed/tensor_coding.h"

#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/io/zero_copy_stream_impl_lite.h>
#include <google/protobuf/wire_format_lite.h>
#include <grpcpp/support/proto_buffer_reader.h>
#include <grpcpp/support/slice.h>

#include <algorithm>
#include <utility>
#include <vector>

#include "base/errors.h"
#include "base/status_macros.h"
#include "base/strings.h"
#include "distributed/worker.pb.h"
#include "framework/graph_def.h"

namespace runnel {
namespace {

using google::protobuf::internal::WireFormatLite;

constexpr int kHeaderField = 1;  // RecvTensorChunk.header
constexpr int kDataField = 2;    // RecvTensorChunk.data
// A header is a few dozen bytes; more is malformed.
constexpr uint32_t kMaxHeaderBytes = 1 << 16;
// Tensors larger than this are refused from the wire (16 GiB).
constexpr int64_t kMaxTensorBytes = int64_t{1} << 34;

// Appends the tag and length of a length-delimited field.
void AppendFieldStart(int field, size_t length, std::string* out) {
  google::protobuf::io::StringOutputStream stream(out);
  google::protobuf::io::CodedOutputStream coded(&stream);
  coded.WriteTag(WireFormatLite::MakeTag(
      field, WireFormatLite::WIRETYPE_LENGTH_DELIMITED));
  coded.WriteVarint32(static_cast<uint32_t>(length));
}

// The edge of a rendezvous key ("src;dst;edge;frame;step").
std::string EdgeOfKey(const std::string& key) {
  size_t start = 0;
  for (int i = 0; i < 2 && start != std::string::npos; ++i) {
    start = key.find(';', start);
    if (start != std::string::npos) ++start;
  }
  if (start == std::string::npos) return key;
  return key.substr(start, key.find(';', start) - start);
}

}  // namespace

void StatusToProto(const absl::Status& s, proto::StatusProto* p) {
  p->set_code(static_cast<int>(s.code()));
  p->set_message(std::string(s.message()));
  if (std::optional<std::string> node = NodeNameOf(s)) p->set_node(*node);
  if (std::optional<SourceSpan> span = SpanOf(s)) {
    proto::SourceSpanProto* sp = p->mutable_span();
    sp->set_file(span->file.str());
    sp->set_line(span->line);
    sp->set_col(span->col);
    sp->set_end_line(span->end_line);
    sp->set_end_col(span->end_col);
  }
}

absl::Status StatusFromProto(const proto::StatusProto& p) {
  if (p.code() == 0) return absl::OkStatus();
  const int code = std::clamp(p.code(), 1, 16);
  absl::Status s(static_cast<absl::StatusCode>(code), p.message());
  if (p.node().empty()) return s;
  const proto::SourceSpanProto& sp = p.span();
  return AttachNode(
      s, p.node(),
      SourceSpan{sp.file(), sp.line(), sp.col(), sp.end_line(), sp.end_col()});
}

TensorMessages::TensorMessages(const absl::Status& status, Tensor value,
                               bool is_dead, size_t chunk_bytes, int index)
    : value_(std::move(value)), chunk_bytes_(std::max<size_t>(chunk_bytes, 1)) {
  proto::RecvTensorHeader header;
  header.set_index(index);
  if (!status.ok()) {
    StatusToProto(status, header.mutable_status());
    value_ = Tensor();
  } else if (is_dead) {
    header.set_is_dead(true);
    value_ = Tensor();
  } else {
    header.set_dtype(std::string(DTypeName(value_.dtype())));
    ShapeToProto(value_.shape(), header.mutable_shape());
    total_ = value_.bytes();
    header.set_total_bytes(static_cast<int64_t>(total_));
  }
  const std::string bytes = header.SerializeAsString();
  AppendFieldStart(kHeaderField, bytes.size(), &header_);
  header_ += bytes;
}

bool TensorMessages::Next(grpc::ByteBuffer* out) {
  if (started_ && offset_ >= total_) return false;
  const size_t n = std::min(chunk_bytes_, total_ - offset_);
  std::string framing;
  if (!started_) framing = std::move(header_);
  started_ = true;
  if (n == 0) {
    grpc::Slice head(framing);
    *out = grpc::ByteBuffer(&head, 1);
    return true;
  }
  AppendFieldStart(kDataField, n, &framing);
  // The data slice refers to the tensor's buffer, and keeps it alive.
  auto* ref = new Tensor(value_);
  char* data = static_cast<char*>(value_.raw_data()) + offset_;
  const grpc::Slice slices[2] = {
      grpc::Slice(framing),
      grpc::Slice(
          data, n, [](void* t) { delete static_cast<Tensor*>(t); }, ref)};
  *out = grpc::ByteBuffer(slices, 2);
  offset_ += n;
  return true;
}

TensorAssembler::TensorAssembler(std::string sender, const std::string& key)
    : sender_(std::move(sender)), edge_(EdgeOfKey(key)) {}

TensorAssembler::TensorAssembler(std::string sender,
                                 const std::vector<std::string>* keys)
    : sender_(std::move(sender)),
      edge_(keys->size() == 1 ? EdgeOfKey(keys->front()) : std::string()),
      keys_(keys) {}

absl::Status TensorAssembler::Fail(std::string_view what) const {
  if (keys_ != nullptr && edge_.empty()) {
    return absl::DataLossError(StrCat(sender_, " sent ", what,
                                      ", in an answer of ", keys_->size(),
                                      " values"));
  }
  return absl::DataLossError(
      StrCat(sender_, " sent ", what, ", for edge '", edge_, "'"));
}

absl::Status TensorAssembler::TakeHeader(const std::string& serialized) {
  proto::RecvTensorHeader header;
  if (started_) return Fail("a second tensor header");
  if (!header.ParseFromString(serialized))
    return Fail("a malformed tensor header");
  started_ = true;
  if (keys_ != nullptr) {
    if (header.index() < 0 ||
        static_cast<size_t>(header.index()) >= keys_->size()) {
      return Fail(StrCat("a value for no key it was asked (index ",
                         header.index(), " of ", keys_->size(), ")"));
    }
    index_ = header.index();
    edge_ = EdgeOfKey((*keys_)[index_]);
  }
  if (header.has_status() && header.status().code() != 0) {
    return StatusFromProto(header.status());
  }
  dead_ = header.is_dead();
  if (dead_) return absl::OkStatus();
  absl::StatusOr<DType> dtype = DTypeFromProto(header.dtype());
  if (!dtype.ok()) return Fail(std::string(dtype.status().message()));
  const Shape shape = ShapeFromProto(header.shape());
  if (shape.unknown_rank()) return Fail("a tensor of unknown rank");
  double bytes = static_cast<double>(DTypeSize(*dtype));
  for (int64_t d : shape.dims()) {
    if (d < 0) return Fail("a tensor with a negative dimension");
    bytes *= static_cast<double>(d);
  }
  if (bytes > static_cast<double>(kMaxTensorBytes) ||
      static_cast<int64_t>(bytes) != header.total_bytes()) {
    return Fail("a tensor whose size does not match its shape");
  }
  value_ = Tensor(*dtype, shape);
  return absl::OkStatus();
}

absl::Status TensorAssembler::Add(grpc::ByteBuffer* message) {
  grpc::ProtoBufferReader reader(message);
  if (!reader.status().ok()) return Fail("an unreadable message");
  google::protobuf::io::CodedInputStream in(&reader);
  while (uint32_t tag = in.ReadTag()) {
    const int field = WireFormatLite::GetTagFieldNumber(tag);
    const bool delimited = WireFormatLite::GetTagWireType(tag) ==
                           WireFormatLite::WIRETYPE_LENGTH_DELIMITED;
    if (field == kHeaderField && delimited) {
      uint32_t length = 0;
      std::string bytes;
      if (!in.ReadVarint32(&length) || length > kMaxHeaderBytes ||
          !in.ReadString(&bytes, static_cast<int>(length))) {
        return Fail("a malformed tensor header");
      }
      RN_RETURN_IF_ERROR(TakeHeader(bytes));
      continue;
    }
    if (field == kDataField && delimited) {
      uint32_t length = 0;
      if (!in.ReadVarint32(&length)) return Fail("a malformed message");
      if (!started_) return Fail("bytes before the tensor header");
      if (dead_ && length > 0) return Fail("bytes for a dead tensor");
      if (offset_ + static_cast<int64_t>(length) >
          static_cast<int64_t>(value_.bytes())) {
        return Fail("more bytes than the tensor holds");
      }
      // The one copy: from gRPC's slices into the tensor.
      if (length > 0 &&
          !in.ReadRaw(static_cast<char*>(value_.raw_data()) + offset_,
                      static_cast<int>(length))) {
        return Fail("a message cut short");
      }
      offset_ += length;
      continue;
    }
    if (!WireFormatLite::SkipField(&in, tag)) {
      return Fail("a malformed message");
    }
  }
  if (!in.ConsumedEntireMessage()) return Fail("a malformed message");
  return absl::OkStatus();
}

absl::Status TensorAssembler::Finish() const {
  if (!started_) return Fail("no tensor");
  if (!dead_ && offset_ != static_cast<int64_t>(value_.bytes())) {
    return Fail(StrCat(offset_, " of ", value_.bytes(), " bytes"));
  }
  return absl::OkStatus();
}

}  // namespace runnel
