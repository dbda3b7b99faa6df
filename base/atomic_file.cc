#include "base/atomic_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <vector>

#include "base/status_macros.h"
#include "base/strings.h"

namespace runnel {
namespace {
constexpr size_t kBufferSize = size_t{1} << 20;
}  // namespace

std::string Dirname(const std::string& path) {
  size_t slash = path.rfind('/');
  if (slash == std::string::npos) return ".";
  if (slash == 0) return "/";
  return path.substr(0, slash);
}

AtomicFile::AtomicFile(std::string path, std::string what)
    : path_(std::move(path)), what_(std::move(what)) {}

AtomicFile::~AtomicFile() {
  if (fd_ >= 0) close(fd_);
  if (!temp_name_.empty() && !committed_) unlink(temp_name_.c_str());
}

absl::Status AtomicFile::Create() {
  std::string tmpl = path_ + ".tmp.XXXXXX";
  std::vector<char> name(tmpl.begin(), tmpl.end());
  name.push_back('\0');
  fd_ = mkstemp(name.data());
  if (fd_ < 0) {
    return Error(
        StrCat("cannot create a temporary file in '", Dirname(path_), "'"));
  }
  temp_name_ = name.data();
  return absl::OkStatus();
}

absl::Status AtomicFile::Write(const void* data, size_t n) {
  if (buffer_.size() + n > kBufferSize) RN_RETURN_IF_ERROR(Flush());
  if (n >= kBufferSize) return WriteAll(data, n);
  buffer_.append(static_cast<const char*>(data), n);
  return absl::OkStatus();
}

absl::Status AtomicFile::Flush() {
  absl::Status s = WriteAll(buffer_.data(), buffer_.size());
  buffer_.clear();
  return s;
}

absl::Status AtomicFile::Commit() {
  RN_RETURN_IF_ERROR(Flush());
  if (fchmod(fd_, 0644) != 0) return Error("cannot set its permissions");
  if (fsync(fd_) != 0) return Error("fsync failed");
  int fd = fd_;
  fd_ = -1;
  if (close(fd) != 0) return Error("close failed");
  if (rename(temp_name_.c_str(), path_.c_str()) != 0) {
    return Error("cannot rename the temporary file over it");
  }
  committed_ = true;
  int dir = open(Dirname(path_).c_str(), O_RDONLY | O_DIRECTORY);
  if (dir >= 0) {
    // Some file systems cannot fsync a directory (EINVAL): nothing more
    // can be done there.
    const bool failed = fsync(dir) != 0 && errno != EINVAL;
    const int err = errno;
    close(dir);
    if (failed) {
      errno = err;
      return Error("fsync of its directory failed");
    }
  }
  return absl::OkStatus();
}

absl::Status AtomicFile::WriteAll(const void* data, size_t n) {
  const char* p = static_cast<const char*>(data);
  while (n > 0) {
    ssize_t w = write(fd_, p, n);
    if (w < 0) {
      if (errno == EINTR) continue;
      return Error("write failed");
    }
    p += w;
    n -= static_cast<size_t>(w);
  }
  return absl::OkStatus();
}

absl::Status AtomicFile::Error(const std::string& reason) const {
  return absl::InternalError(StrCat("cannot write ", what_, " '", path_,
                                    "': ", reason, ": ", std::strerror(errno)));
}

}  // namespace runnel
