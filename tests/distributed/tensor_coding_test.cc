// RecvTensor's messages (distributed/tensor_coding.h): the sender's slices
// point into the tensor, the receiver rebuilds it from any chunking, and a
// malformed answer is an error naming the edge.
#include "distributed/tensor_coding.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "common_runtime/rendezvous.h"
#include "distributed/worker.pb.h"
#include "tests/util/test_util.h"

namespace runnel {
namespace {

using ::runnel::testing::ExpectTensor;

using ::runnel::testing::Message;

// The messages of `t` in chunks of `chunk` bytes.
std::vector<grpc::ByteBuffer> Messages(const Tensor& t, size_t chunk,
                                       bool dead = false) {
  TensorMessages messages(absl::OkStatus(), t, dead, chunk);
  std::vector<grpc::ByteBuffer> out;
  grpc::ByteBuffer b;
  while (messages.Next(&b)) out.push_back(b);
  return out;
}

TEST(TensorCodingTest, TheSenderCopiesNoTensorBytes) {
  const Tensor t = Tensor::FromVector<float>({1, 2, 3, 4, 5, 6, 7}, Shape{7});
  std::vector<grpc::ByteBuffer> messages = Messages(t, 12);
  ASSERT_EQ(messages.size(), 3u);  // 12 + 12 + 4 bytes
  for (size_t i = 0; i < messages.size(); ++i) {
    std::vector<grpc::Slice> slices;
    ASSERT_TRUE(messages[i].Dump(&slices).ok());
    ASSERT_EQ(slices.size(), 2u);  // framing, then the tensor's own bytes
    EXPECT_EQ(slices[1].begin(),
              static_cast<const uint8_t*>(t.raw_data()) + 12 * i);
  }
  // The receiver rebuilds it from any chunking.
  TensorAssembler in("/job:ps/task:0", "a;b;w:0;0:0;7");
  for (grpc::ByteBuffer& m : messages) ASSERT_TRUE(in.Add(&m).ok());
  ASSERT_TRUE(in.Finish().ok());
  ExpectTensor(in.value(), DType::kF32, {7}, {1, 2, 3, 4, 5, 6, 7});
  EXPECT_EQ(in.bytes(), 28);
}

TEST(TensorCodingTest, MalformedAnswersAreErrorsNamingTheEdge) {
  const std::string key =
      RendezvousKey("/job:ps/task:0/device:cpu:0",
                    "/job:worker/task:0/device:cpu:0", "layer/w:0", 0, 0, 3);
  // Each answer read as RecvTensor's, and as a RecvTensors answer of this
  // one key: the same errors, naming the edge.
  const std::vector<std::string> keys = {key};
  bool as_list = false;
  auto error = [&](std::vector<grpc::ByteBuffer> messages) {
    TensorAssembler in = as_list ? TensorAssembler("/job:ps/task:0", &keys)
                                 : TensorAssembler("/job:ps/task:0", key);
    for (grpc::ByteBuffer& m : messages) {
      if (absl::Status s = in.Add(&m); !s.ok()) return Message(s);
    }
    absl::Status s = in.Finish();
    return s.ok() ? std::string("ok") : Message(s);
  };
  auto raw = [](const std::string& bytes) {
    grpc::Slice slice(bytes);
    return grpc::ByteBuffer(&slice, 1);
  };
  for (bool list : {false, true}) {
    as_list = list;
    SCOPED_TRACE(list ? "RecvTensors" : "RecvTensor");
    const Tensor t = Tensor::FromVector<float>({1, 2, 3}, Shape{3});
    std::vector<grpc::ByteBuffer> whole = Messages(t, 4);
    EXPECT_EQ(error(whole), "ok");
    // The last chunk missing.
    EXPECT_EQ(error({whole[0], whole[1]}),
              "/job:ps/task:0 sent 8 of 12 bytes, for edge 'layer/w:0'");
    // A chunk twice.
    EXPECT_EQ(error({whole[0], whole[1], whole[2], whole[2]}),
              "/job:ps/task:0 sent more bytes than the tensor holds, for edge "
              "'layer/w:0'");
    // A header whose size does not match its shape.
    proto::RecvTensorChunk chunk;
    chunk.mutable_header()->set_dtype("f32");
    chunk.mutable_header()->mutable_shape()->add_dim(3);
    chunk.mutable_header()->set_total_bytes(16);
    EXPECT_EQ(error({raw(chunk.SerializeAsString())}),
              "/job:ps/task:0 sent a tensor whose size does not match its "
              "shape, for edge 'layer/w:0'");
    // Bytes before any header, bytes for a dead tensor, and garbage.
    chunk.Clear();
    chunk.set_data("abcd");
    EXPECT_EQ(error({raw(chunk.SerializeAsString())}),
              "/job:ps/task:0 sent bytes before the tensor header, for edge "
              "'layer/w:0'");
    chunk.mutable_header()->set_is_dead(true);
    EXPECT_EQ(error({raw(chunk.SerializeAsString())}),
              "/job:ps/task:0 sent bytes for a dead tensor, for edge "
              "'layer/w:0'");
    EXPECT_EQ(error({raw(std::string("\x12\xff\xff\xff\x0f", 5))}),
              "/job:ps/task:0 sent bytes before the tensor header, for edge "
              "'layer/w:0'");
    EXPECT_EQ(error({raw(std::string("\x0a\x05"
                                     "ab",
                                     4))}),
              "/job:ps/task:0 sent a malformed tensor header, for edge "
              "'layer/w:0'");
    EXPECT_EQ(error({}), "/job:ps/task:0 sent no tensor, for edge 'layer/w:0'");
  }
}

// A RecvTensors answer's values name their key by index; one naming a key
// that was not asked for is malformed, naming the call.
TEST(TensorCodingTest, AValueOfSeveralNamesItsKey) {
  const std::vector<std::string> keys = {"a;b;x:0;0:0;7", "a;b;y:0;0:0;7",
                                         "a;b;z:0;0:0;7"};
  const Tensor t = Tensor::FromVector<float>({5, 6}, Shape{2});
  TensorMessages second(absl::OkStatus(), t, false, 4, /*index=*/2);
  TensorAssembler in("/job:ps/task:0", &keys);
  grpc::ByteBuffer b;
  ASSERT_TRUE(second.Next(&b));
  ASSERT_TRUE(in.Add(&b).ok());
  EXPECT_FALSE(in.complete());  // 4 of 8 bytes
  ASSERT_TRUE(second.Next(&b));
  ASSERT_TRUE(in.Add(&b).ok());
  EXPECT_TRUE(in.complete());
  EXPECT_EQ(in.index(), 2);
  ExpectTensor(in.value(), DType::kF32, {2}, {5, 6});
  // A dead value is whole with its header.
  TensorMessages dead(absl::OkStatus(), Tensor(), true, 4, 1);
  TensorAssembler in_dead("/job:ps/task:0", &keys);
  ASSERT_TRUE(dead.Next(&b));
  ASSERT_TRUE(in_dead.Add(&b).ok());
  EXPECT_TRUE(in_dead.complete() && in_dead.is_dead());
  EXPECT_EQ(in_dead.index(), 1);
  // An index beyond the keys.
  TensorMessages stray(absl::OkStatus(), t, false, 8, 3);
  TensorAssembler in_stray("/job:ps/task:0", &keys);
  ASSERT_TRUE(stray.Next(&b));
  EXPECT_EQ(Message(in_stray.Add(&b)),
            "/job:ps/task:0 sent a value for no key it was asked (index 3 of "
            "3), in an answer of 3 values");
  // A later fault names the value's edge.
  TensorAssembler in_short("/job:ps/task:0", &keys);
  TensorMessages cut(absl::OkStatus(), t, false, 4, 0);
  ASSERT_TRUE(cut.Next(&b));
  ASSERT_TRUE(in_short.Add(&b).ok());
  EXPECT_EQ(Message(in_short.Finish()),
            "/job:ps/task:0 sent 4 of 8 bytes, for edge 'x:0'");
}

}  // namespace
}  // namespace runnel
