// Conversion between Graph and its protobuf form, GraphDef (graph.proto).
// The distributed master ships partitions to workers this way; graph dumps
// and tests use it too. FromGraphDef re-runs shape inference, so a GraphDef
// from an untrusted peer is checked like a script.
#ifndef RUNNEL_FRAMEWORK_GRAPH_DEF_H_
#define RUNNEL_FRAMEWORK_GRAPH_DEF_H_

#include "absl/status/statusor.h"
#include "framework/graph.h"
#include "framework/graph.pb.h"

namespace runnel {

proto::GraphDef ToGraphDef(const Graph& graph);
// Adds the GraphDef's nodes to `graph` (normally empty). Nodes may appear in
// any order; a missing input or a cycle is an error naming the node.
absl::Status FromGraphDef(const proto::GraphDef& def, Graph* graph);

proto::TensorProto ToProto(const Tensor& t);
void ShapeToProto(const Shape& s, proto::ShapeProto* p);
Shape ShapeFromProto(const proto::ShapeProto& p);
// "f32" -> DType::kF32; InvalidArgument for an unknown name.
absl::StatusOr<DType> DTypeFromProto(const std::string& name);
absl::StatusOr<Tensor> FromProto(const proto::TensorProto& p);

}  // namespace runnel

#endif  // RUNNEL_FRAMEWORK_GRAPH_DEF_H_
