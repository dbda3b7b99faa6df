// Reading a whole file into memory, with errors that name the path: the one
// file reader of the runtime, the language front end (scripts, modules) and
// the interpreter (data files, metrics logs).
//
// Header-only, so that lang/, which builds without the runtime library,
// reads its sources with it too.
#ifndef RUNNEL_BASE_READ_FILE_H_
#define RUNNEL_BASE_READ_FILE_H_

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>

#include "absl/status/statusor.h"
#include "base/strings.h"

namespace runnel {

// Why a read failed: the system's explanation ("No such file or
// directory", "Is a directory", ...) and whether the file opened at all.
struct ReadFileFailure {
  bool opened = false;
  std::string reason;
};

// Reads the whole file at `path` into `*contents`. On failure returns false
// and describes it in `*failure`, for callers that word the error their own
// way. A directory is a failure to open (EISDIR), not an empty file.
inline bool ReadFileToString(const std::string& path, std::string* contents,
                             ReadFileFailure* failure) {
  contents->clear();
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    *failure = {false, std::strerror(errno)};
    return false;
  }
  struct stat st;
  if (::fstat(fd, &st) == 0 && S_ISDIR(st.st_mode)) {
    ::close(fd);
    *failure = {false, std::strerror(EISDIR)};
    return false;
  }
  if (S_ISREG(st.st_mode) && st.st_size > 0) contents->reserve(st.st_size);
  char buf[1 << 16];
  for (;;) {
    const ssize_t n = ::read(fd, buf, sizeof buf);
    if (n == 0) break;
    if (n < 0) {
      if (errno == EINTR) continue;
      *failure = {true, std::strerror(errno)};
      ::close(fd);
      return false;
    }
    contents->append(buf, static_cast<size_t>(n));
  }
  ::close(fd);
  return true;
}

// The whole file at `path`. Errors name it: NotFound "PATH: cannot open:
// REASON" when it does not open (missing, unreadable, a directory), DataLoss
// "PATH: read error: REASON" when reading fails part way.
inline absl::StatusOr<std::string> ReadFileToString(const std::string& path) {
  std::string contents;
  ReadFileFailure failure;
  if (ReadFileToString(path, &contents, &failure)) return contents;
  if (!failure.opened) {
    return absl::NotFoundError(StrCat(path, ": cannot open: ", failure.reason));
  }
  return absl::DataLossError(StrCat(path, ": read error: ", failure.reason));
}

}  // namespace runnel

#endif  // RUNNEL_BASE_READ_FILE_H_
