#include "cli/render.h"

#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <thread>
#include <vector>

#include "base/read_file.h"
#include "base/strings.h"

extern char** environ;

namespace runnel::cli {
namespace {

std::string TempDirBase() {
  const char* tmp = std::getenv("TMPDIR");
  return tmp != nullptr && *tmp != '\0' ? tmp : "/tmp";
}

// How long a renderer may run. Graphviz's layout can take many minutes on
// a few hundred nodes with a hub (one input read by every step of a long
// chain); a clear error is better than a hang.
constexpr int kRenderSeconds = 60;

// Runs `argv` (the program looked up on $PATH) and waits for it, at most
// kRenderSeconds; its exit status, -1 when it could not start or did not
// exit, -2 when it ran out of time (and was killed).
int Spawn(const std::vector<std::string>& argv) {
  std::vector<char*> args;
  for (const std::string& a : argv)
    args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  pid_t pid;
  if (posix_spawnp(&pid, args[0], nullptr, nullptr, args.data(), environ) !=
      0) {
    return -1;
  }
  const auto deadline =
      std::chrono::steady_clock::now() + std::chrono::seconds(kRenderSeconds);
  int status = 0;
  while (true) {
    const pid_t done = waitpid(pid, &status, WNOHANG);
    if (done == pid) break;
    if (done < 0 && errno != EINTR) return -1;
    if (std::chrono::steady_clock::now() > deadline) {
      kill(pid, SIGKILL);
      waitpid(pid, &status, 0);
      return -2;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

// Writes `input` to a scratch file, runs `program` with the arguments
// `args(input_path, output_path)` give, and moves what it wrote to `out`.
absl::Status Render(const std::string& program, const std::string& input,
                    const std::function<std::vector<std::string>(
                        const std::string&, const std::string&)>& args,
                    const std::string& out) {
  std::string dir = TempDirBase() + "/runnel-render-XXXXXX";
  if (mkdtemp(dir.data()) == nullptr) {
    return absl::InternalError(
        StrCat("cannot create a temporary directory: ", std::strerror(errno)));
  }
  const std::string in_path = dir + "/input";
  const std::string out_path = dir + "/output." + Extension(out);
  absl::Status status = WriteFileAtomically(in_path, input);
  if (status.ok()) {
    std::vector<std::string> argv = {program};
    for (std::string& a : args(in_path, out_path)) argv.push_back(std::move(a));
    const int rc = Spawn(argv);
    absl::StatusOr<std::string> rendered = ReadFileToString(out_path);
    if (rc == -2) {
      status = absl::DeadlineExceededError(StrCat(
          program, " did not finish writing ", out, " within ", kRenderSeconds,
          " seconds; ",
          program == "dot"
              ? "a graph of many unscoped nodes is slow to lay out: group "
                "them with `scope \"NAME\" { ... }`, or write DOT (-o "
                "OUT.dot)"
              : "the logs may be too large"));
    } else if (rc != 0 || !rendered.ok()) {
      status = absl::InternalError(
          rc < 0 ? StrCat(program, " did not run to completion writing ", out)
                 : StrCat(program, " failed to write ", out, " (exit status ",
                          rc, ")"));
    } else {
      status = WriteFileAtomically(out, *rendered);
    }
  }
  std::remove(in_path.c_str());
  std::remove(out_path.c_str());
  rmdir(dir.c_str());
  return status;
}

}  // namespace

bool HasProgram(const std::string& program) {
  const char* path = std::getenv("PATH");
  const std::string dirs = path ? path : "/usr/bin:/bin";
  size_t start = 0;
  while (start <= dirs.size()) {
    size_t colon = dirs.find(':', start);
    std::string dir = dirs.substr(
        start, colon == std::string::npos ? std::string::npos : colon - start);
    if (dir.empty()) dir = ".";
    if (access((dir + "/" + program).c_str(), X_OK) == 0) return true;
    if (colon == std::string::npos) break;
    start = colon + 1;
  }
  return false;
}

absl::Status WriteFileAtomically(const std::string& path,
                                 const std::string& text) {
  const std::string tmp = path + ".tmp";
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    if (out) {
      out << text;
      out.flush();
    }
    if (!out) {
      const int err = errno;
      std::remove(tmp.c_str());
      return absl::InvalidArgumentError(
          StrCat("cannot write ", path, ": ", std::strerror(err)));
    }
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    const int err = errno;
    std::remove(tmp.c_str());
    return absl::InvalidArgumentError(
        StrCat("cannot write ", path, ": ", std::strerror(err)));
  }
  return absl::OkStatus();
}

std::string Extension(const std::string& path) {
  const size_t dot = path.rfind('.');
  const size_t slash = path.rfind('/');
  if (dot == std::string::npos || (slash != std::string::npos && dot < slash)) {
    return "";
  }
  return path.substr(dot + 1);
}

absl::Status WriteDot(const std::string& dot, const std::string& out) {
  const std::string ext = Extension(out);
  if (ext.empty() || ext == "dot" || ext == "gv") {
    return WriteFileAtomically(out, dot);
  }
  if (ext != "svg" && ext != "png" && ext != "pdf") {
    return absl::InvalidArgumentError(
        StrCat("cannot write the graph as ", out,
               ": name it .dot or .gv for DOT text, or .svg, .png or .pdf for "
               "a picture (drawn by Graphviz)"));
  }
  if (!HasProgram("dot")) {
    return absl::FailedPreconditionError(
        StrCat("writing ", out,
               " needs the Graphviz 'dot' program, which is not installed; "
               "install graphviz, or write DOT with -o ",
               out.substr(0, out.size() - ext.size()), "dot"));
  }
  return Render(
      "dot", dot,
      [&](const std::string& in, const std::string& rendered) {
        return std::vector<std::string>{"-T" + ext, "-o", rendered, in};
      },
      out);
}

absl::Status RunGnuplot(const std::string& script, const std::string& out) {
  if (!HasProgram("gnuplot")) {
    return absl::FailedPreconditionError(
        StrCat("writing ", out,
               " needs gnuplot, which is not installed; install it (Debian: "
               "apt-get install gnuplot-nox), or write the gnuplot script "
               "with -o ",
               out.substr(0, out.size() - Extension(out).size()), "gp"));
  }
  return Render(
      "gnuplot", script,
      [](const std::string& in, const std::string& rendered) {
        return std::vector<std::string>{
            "-e", StrCat("set output '", rendered, "'"), in};
      },
      out);
}

}  // namespace runnel::cli
