// `runnel export FILE.rnl --fetch NAME ... -o model.onnx`: the forward
// graph that computes the named values from the script's inputs, as an
// ONNX model (docs/onnx.md).
//
// Inputs (`input` declarations, placeholders) become graph inputs (a
// default becomes an initializer of the same name, ONNX's form of a
// default), variables become initializers holding their values at the
// moment of the export, constants become initializers, and each op one or
// more ONNX nodes of opset 17, named after the Runnel node. A node that
// cannot be exported is refused with an error at its script line
// (`file:line:col`), naming the op.
//
// Thread-safety: the function keeps no state; the graph must not change
// while it runs.
#ifndef RUNNEL_IO_ONNX_EXPORT_H_
#define RUNNEL_IO_ONNX_EXPORT_H_

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "framework/graph.h"
#include "io/checkpoint.h"

namespace runnel {

struct OnnxExportFetch {
  std::string name;  // the graph output's name
  NodeOut value;
};

// Writes the model of the graph the fetches' nodes are in to `path`
// atomically. `variables` holds the value of every variable the fetches
// read, by the variable node's name.
absl::Status ExportOnnx(const std::vector<OnnxExportFetch>& fetches,
                        const TensorMap& variables, const std::string& path);

}  // namespace runnel

#endif  // RUNNEL_IO_ONNX_EXPORT_H_
