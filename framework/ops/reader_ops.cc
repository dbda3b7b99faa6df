// Readers: ops that read input files a few records per run, so that
// reading runs in the graph, on a runner's thread, beside training
// (docs/queues.md).
#include <vector>

#include "base/status_macros.h"
#include "base/strings.h"
#include "framework/op_registry.h"
#include "framework/shape_fns.h"

namespace runnel {
namespace {

// One output per file: up to `batch` records, each of the record shape
// (`shape_i`) and dtype (`dtype_i`) its header gave when the node was made.
Specs ReadIdxShape(const ShapeContext& c) {
  RN_ASSIGN_OR_RETURN(int64_t files, c.attr<int64_t>("files"));
  RN_ASSIGN_OR_RETURN(int64_t batch, c.attr<int64_t>("batch"));
  RN_ASSIGN_OR_RETURN(int64_t epochs, c.attr<int64_t>("epochs"));
  if (files < 1) {
    return absl::InvalidArgumentError("needs at least one file");
  }
  if (batch < 1) {
    return absl::InvalidArgumentError(
        StrCat("batch must be at least 1, got ", batch));
  }
  if (epochs < 0) {
    return absl::InvalidArgumentError(
        StrCat("epochs must be at least 1 (or none: no end), got ", epochs));
  }
  std::vector<TensorSpec> out;
  for (int64_t i = 0; i < files; ++i) {
    RN_RETURN_IF_ERROR(c.attr<std::string>(StrCat("path_", i)).status());
    RN_ASSIGN_OR_RETURN(DType d, c.attr<DType>(StrCat("dtype_", i)));
    RN_ASSIGN_OR_RETURN(Shape s, c.attr<Shape>(StrCat("shape_", i)));
    std::vector<int64_t> dims = {-1};
    dims.insert(dims.end(), s.dims().begin(), s.dims().end());
    out.push_back({d, Shape(std::move(dims))});
  }
  return out;
}

}  // namespace

RUNNEL_REGISTER_OP(
    OpDefBuilder("read_idx")
        .OptionalAttr("files")
        .IndexedAttr("path")
        .IndexedAttr("dtype")
        .IndexedAttr("shape")
        .Attr("batch", int64_t{1})
        .Attr("epochs", int64_t{0})
        .Outputs({"records"})
        .Stateful()
        .Shape(ReadIdxShape)
        .Doc("The next `batch` records (rows of the first axis) of each of "
             "the `files` IDX files `path_i`, read in lock-step, so the "
             "i-th record of every output belongs together. A pass ends "
             "with a shorter batch; after `epochs` passes (0: never) it "
             "fails with OutOfRange."));
}  // namespace runnel
