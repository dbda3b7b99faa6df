// The kernel of read_idx (framework/ops/reader_ops.cc): a reader per node,
// a resource of its device, holding one IdxRecordReader per file.
#include <algorithm>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "base/strings.h"
#include "framework/kernel.h"
#include "io/idx_reader.h"

namespace runnel {
namespace {

class IdxReaders : public Resource {
 public:
  std::mutex mu;
  std::vector<std::unique_ptr<IdxRecordReader>> files ABSL_GUARDED_BY(mu);
  int64_t epoch ABSL_GUARDED_BY(mu) = 0;  // passes begun, from 0
};

class ReadIdxKernel : public OpKernel {
 public:
  absl::Status Compute(OpKernelContext* ctx) override {
    const Node& node = ctx->node();
    RN_ASSIGN_OR_RETURN(int64_t batch, node.attr<int64_t>("batch"));
    RN_ASSIGN_OR_RETURN(int64_t epochs, node.attr<int64_t>("epochs"));
    RN_ASSIGN_OR_RETURN(std::shared_ptr<IdxReaders> r,
                        ctx->resources()->LookupOrCreate<IdxReaders>(
                            node.name() + "/_reader",
                            [] { return std::make_shared<IdxReaders>(); }));
    // One lock over every file: two runner threads never interleave
    // their reads, so record i of each output belongs together.
    std::lock_guard<std::mutex> lock(r->mu);
    if (r->files.empty()) RN_RETURN_IF_ERROR(Open(node, r.get()));
    int64_t left = r->files[0]->remaining();
    if (left == 0) {
      ++r->epoch;
      if (epochs > 0 && r->epoch >= epochs) {
        return absl::OutOfRangeError(
            StrCat("read_idx: out of range: read the ", r->files[0]->records(),
                   " records ", epochs, epochs == 1 ? " time" : " times"));
      }
      for (auto& f : r->files) RN_RETURN_IF_ERROR(f->Rewind());
      left = r->files[0]->records();
    }
    const int64_t n = std::min(batch, left);
    for (size_t i = 0; i < r->files.size(); ++i) {
      RN_ASSIGN_OR_RETURN(Tensor t, r->files[i]->Read(n));
      RN_RETURN_IF_ERROR(ctx->set_output(static_cast<int>(i), std::move(t)));
    }
    return absl::OkStatus();
  }

 private:
  // Opens the files and checks them against what the node was made from.
  static absl::Status Open(const Node& node, IdxReaders* r)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(r->mu) {
    RN_ASSIGN_OR_RETURN(int64_t files, node.attr<int64_t>("files"));
    for (int64_t i = 0; i < files; ++i) {
      RN_ASSIGN_OR_RETURN(std::string path,
                          node.attr<std::string>(StrCat("path_", i)));
      RN_ASSIGN_OR_RETURN(DType dtype, node.attr<DType>(StrCat("dtype_", i)));
      RN_ASSIGN_OR_RETURN(Shape shape, node.attr<Shape>(StrCat("shape_", i)));
      RN_ASSIGN_OR_RETURN(std::unique_ptr<IdxRecordReader> f,
                          IdxRecordReader::Open(path));
      if (f->dtype() != dtype || f->record_shape() != shape) {
        return absl::FailedPreconditionError(
            StrCat("read_idx: ", path, " now holds ", DTypeName(f->dtype()),
                   f->record_shape().ToString(), " records, not ",
                   DTypeName(dtype), shape.ToString()));
      }
      if (!r->files.empty() && f->records() != r->files[0]->records()) {
        return absl::FailedPreconditionError(
            StrCat("read_idx: ", path, " has ", f->records(),
                   " records, the first file ", r->files[0]->records()));
      }
      r->files.push_back(std::move(f));
    }
    return absl::OkStatus();
  }
};

RUNNEL_STATIC_INIT(ReaderKernels) {
  RegisterKernelForAllTypes<ReadIdxKernel>("read_idx");
}

}  // namespace
}  // namespace runnel
