// The path of the running program's executable (/proc/self/exe): where the
// `runnel` command finds itself to start tasks and checkers, and the
// modules it loads from beside itself.
#ifndef RUNNEL_BASE_EXECUTABLE_PATH_H_
#define RUNNEL_BASE_EXECUTABLE_PATH_H_

#include <unistd.h>

#include <string>

namespace runnel {

// The executable's absolute path, symbolic links resolved; empty when the
// system does not say.
inline std::string ExecutablePath() {
  char buf[4096];
  const ssize_t n = ::readlink("/proc/self/exe", buf, sizeof buf - 1);
  return n > 0 ? std::string(buf, static_cast<size_t>(n)) : std::string();
}

}  // namespace runnel

#endif  // RUNNEL_BASE_EXECUTABLE_PATH_H_
