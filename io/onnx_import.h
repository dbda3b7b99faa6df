// `runnel import MODEL.onnx -o OUT.rnl`: an ONNX model as a readable
// Runnel script (docs/onnx.md).
//
// The script declares one `input` per graph input (its ONNX dtype and
// shape, `?` for a symbolic dimension), the initializers it computes with
// as `var`s (floating) or `state`s (the rest) restored from a checkpoint
// written beside it (OUT.ckpt), and one `let` per node, named after the
// node's output, in a `scope` named after the node name's prefix
// (`/layer1/conv/Conv` is in `scope "layer1/conv"`). Its header maps the
// graph's input and output names to the script's, one comment line each:
//
//   # onnx-input: input.1 -> input_1
//   # onnx-output: 23 -> v23
//
// Every node is translated or refused: an operator, an attribute, an
// opset or a dtype the importer has no exact Runnel meaning for is an
// Unimplemented error naming the node, the operator and what is missing
// ("... is not supported"). An input that Runnel needs as a constant (a
// shape, axes, pads) must be an initializer or a Constant node's value, or
// be given with `constants`; otherwise the error names it and says so.
//
// Thread-safety: the function keeps no state.
#ifndef RUNNEL_IO_ONNX_IMPORT_H_
#define RUNNEL_IO_ONNX_IMPORT_H_

#include <string>

#include "absl/status/status.h"
#include "io/checkpoint.h"

namespace runnel {

struct OnnxImportOptions {
  std::string model_path;   // the .onnx file
  std::string script_path;  // the .rnl to write; its .ckpt goes beside it
  // Graph inputs taken as constants (`--const NAME=FILE.npy`): their values
  // become part of the script, as an initializer's would.
  TensorMap constants;
};

// Writes the script (and its checkpoint, when the graph has initializers
// the script uses) atomically. Nothing is written when an error is
// returned.
absl::Status ImportOnnx(const OnnxImportOptions& options);

}  // namespace runnel

#endif  // RUNNEL_IO_ONNX_IMPORT_H_
