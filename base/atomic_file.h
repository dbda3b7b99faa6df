// Writing a file so that a reader, or the next run after a crash, finds
// either the old file or the complete new one, never a torn one.
//
//   AtomicFile f("model.ckpt", "checkpoint");
//   RN_RETURN_IF_ERROR(f.Create());
//   RN_RETURN_IF_ERROR(f.Write(bytes.data(), bytes.size()));
//   RN_RETURN_IF_ERROR(f.Commit());
//
// The bytes go to a temporary file beside `path` (PATH.tmp.XXXXXX), which
// Commit flushes, fsyncs and renames over `path`, and then fsyncs the
// directory so the rename itself survives a crash. A failure or a
// destruction before Commit removes the temporary file and leaves `path` as
// it was. (A crash of the whole process can leave a .tmp file, never a torn
// `path`.) Errors read "cannot write WHAT 'PATH': reason: strerror".
#ifndef RUNNEL_BASE_ATOMIC_FILE_H_
#define RUNNEL_BASE_ATOMIC_FILE_H_

#include <string>

#include "absl/status/status.h"

namespace runnel {

class AtomicFile {
 public:
  AtomicFile(std::string path, std::string what);
  ~AtomicFile();
  AtomicFile(const AtomicFile&) = delete;
  AtomicFile& operator=(const AtomicFile&) = delete;

  absl::Status Create();
  // Buffers small writes; large ones go straight to the file.
  absl::Status Write(const void* data, size_t n);
  absl::Status Commit();

 private:
  absl::Status Flush();
  absl::Status WriteAll(const void* data, size_t n);
  absl::Status Error(const std::string& reason) const;

  std::string path_;
  std::string what_;
  std::string temp_name_;
  int fd_ = -1;
  bool committed_ = false;
  std::string buffer_;
};

// "dir" of "dir/file", "." for a bare name.
std::string Dirname(const std::string& path);

}  // namespace runnel

#endif  // RUNNEL_BASE_ATOMIC_FILE_H_
