#include "cli/cluster_launcher.h"

#include <fcntl.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "base/atomic_file.h"
#include "base/strings.h"
#include "cli/load_cluster.h"

namespace runnel::cli {
namespace {

std::atomic<bool> g_stop{false};
extern "C" void OnClusterSignal(int) { g_stop.store(true); }

std::mutex g_output_mu;

void Say(const std::string& line) {
  std::lock_guard<std::mutex> lock(g_output_mu);
  std::fprintf(stderr, "[cluster] %s\n", line.c_str());
  std::fflush(stderr);
}

// Copies lines from `fd` to `to`, each after `prefix`; a carriage return
// (a progress bar's redraw) ends a line too.
void Forward(int fd, std::string prefix, std::FILE* to) {
  std::string pending;
  char buf[4096];
  auto emit = [&](const std::string& line) {
    std::lock_guard<std::mutex> lock(g_output_mu);
    std::fprintf(to, "%s%s\n", prefix.c_str(), line.c_str());
    std::fflush(to);
  };
  for (;;) {
    const ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    for (ssize_t i = 0; i < n; ++i) {
      if (buf[i] == '\n' || buf[i] == '\r') {
        if (!pending.empty() || buf[i] == '\n') emit(pending);
        pending.clear();
      } else {
        pending += buf[i];
      }
    }
  }
  if (!pending.empty()) emit(pending);
  ::close(fd);
}

struct Task {
  std::string name;  // "worker:1"
  bool worker = false;
  std::vector<std::string> argv;
  pid_t pid = -1;
  bool running = false;
};

// Starts `t`; its output goes through reader threads added to `readers`.
bool Spawn(const std::string& program, Task& t,
           std::vector<std::thread>* readers) {
  int out[2], err[2];
  if (::pipe2(out, O_CLOEXEC) != 0) return false;
  if (::pipe2(err, O_CLOEXEC) != 0) {
    ::close(out[0]);
    ::close(out[1]);
    return false;
  }
  std::vector<char*> argv;
  for (std::string& a : t.argv) argv.push_back(a.data());
  argv.push_back(nullptr);
  const pid_t parent = ::getpid();
  const pid_t pid = ::fork();
  if (pid == 0) {
    // A task ends with the cluster, killed too (SIGKILL, an OOM): none is
    // left serving a port, or waiting for a partner, with nobody to see it.
    if (::prctl(PR_SET_PDEATHSIG, SIGTERM) != 0 || ::getppid() != parent) {
      _exit(127);
    }
    ::dup2(out[1], 1);
    ::dup2(err[1], 2);
    ::execv(program.c_str(), argv.data());
    _exit(127);
  }
  ::close(out[1]);
  ::close(err[1]);
  if (pid < 0) {
    ::close(out[0]);
    ::close(err[0]);
    return false;
  }
  t.pid = pid;
  t.running = true;
  const std::string prefix = "[" + t.name + "] ";
  readers->emplace_back(Forward, out[0], prefix, stdout);
  readers->emplace_back(Forward, err[0], prefix, stderr);
  return true;
}

std::string Describe(int status) {
  if (WIFSIGNALED(status)) {
    return StrCat("was killed by signal ", WTERMSIG(status), " (",
                  strsignal(WTERMSIG(status)), ")");
  }
  return StrCat("exited with status ", WEXITSTATUS(status));
}

// Signals every running task, then waits up to `grace` for them.
void StopAll(std::vector<Task>& tasks, int sig) {
  for (Task& t : tasks) {
    if (t.running) ::kill(t.pid, sig);
  }
  const auto deadline =
      std::chrono::steady_clock::now() + std::chrono::seconds(5);
  for (Task& t : tasks) {
    while (t.running) {
      int status = 0;
      const pid_t r = ::waitpid(t.pid, &status, WNOHANG);
      if (r == t.pid || (r < 0 && errno == ECHILD)) {
        t.running = false;
      } else if (std::chrono::steady_clock::now() > deadline) {
        ::kill(t.pid, SIGKILL);
        ::waitpid(t.pid, &status, 0);
        t.running = false;
      } else {
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
      }
    }
  }
}

// Writes `json` as cluster.json into a new directory under /tmp;
// the file, or nullopt (the error said).
std::optional<std::string> WriteSpec(const std::string& spec_json) {
  char dir_template[] = "/tmp/runnel-cluster-XXXXXX";
  if (::mkdtemp(dir_template) == nullptr) {
    Say(StrCat("cannot make a directory for the cluster spec: ",
               std::strerror(errno)));
    return std::nullopt;
  }
  const std::string spec_file = std::string(dir_template) + "/cluster.json";
  AtomicFile f(spec_file, "cluster spec");
  const std::string json = spec_json + "\n";
  absl::Status s = f.Create();
  if (s.ok()) s = f.Write(json.data(), json.size());
  if (s.ok()) s = f.Commit();
  if (!s.ok()) {
    Say(std::string(s.message()));
    ::rmdir(dir_template);
    return std::nullopt;
  }
  return spec_file;
}

// The command lines of the cluster's tasks: a `runnel server` per ps, a
// `runnel run` of the file per worker.
std::vector<Task> Tasks(const ClusterLaunch& launch,
                        const std::string& spec_file) {
  std::vector<Task> tasks;
  for (int i = 0; i < launch.ps; ++i) {
    for (int r = 0; r < launch.ps_replicas; ++r) {
      Task t{
          launch.ps_replicas > 1 ? StrCat("ps:", i, ".", r) : StrCat("ps:", i),
          false,
          {launch.runnel, "server", "--cluster", spec_file, "--job", "ps",
           "--task", std::to_string(i)}};
      if (launch.ps_replicas > 1) {
        t.argv.insert(t.argv.end(), {"--replica", std::to_string(r)});
      }
      t.argv.insert(t.argv.end(), launch.task_args.begin(),
                    launch.task_args.end());
      tasks.push_back(std::move(t));
    }
  }
  for (int i = 0; i < launch.workers; ++i) {
    Task t{StrCat("worker:", i),
           true,
           {launch.runnel, "run", launch.file, "--cluster", spec_file, "--job",
            "worker", "--task", std::to_string(i)}};
    t.argv.insert(t.argv.end(), launch.task_args.begin(),
                  launch.task_args.end());
    t.argv.insert(t.argv.end(), launch.worker_args.begin(),
                  launch.worker_args.end());
    // Runs that meet a dead task wait for its restart, then go on.
    if (launch.restart) {
      t.argv.insert(t.argv.end(), {"--retry-unreachable", "120"});
    }
    tasks.push_back(std::move(t));
  }
  return tasks;
}

// Waits until every worker has exited (restarting a task killed by a
// signal, with --restart) or Ctrl-C; the exit status of the cluster: the
// first worker's failure, 130 when interrupted, else 0.
int Supervise(const ClusterLaunch& launch, std::vector<Task>& tasks,
              std::vector<std::thread>* readers) {
  int result = 0;
  int workers_left = launch.workers;
  while (workers_left > 0) {
    if (g_stop.load()) {
      Say("interrupted: stopping every task");
      StopAll(tasks, SIGINT);
      return 130;
    }
    int status = 0;
    const pid_t pid = ::waitpid(-1, &status, WNOHANG);
    if (pid == 0 || (pid < 0 && errno == EINTR)) {
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
      continue;
    }
    if (pid < 0) break;
    Task* t = nullptr;
    for (Task& c : tasks) {
      if (c.running && c.pid == pid) t = &c;
    }
    if (t == nullptr) continue;
    t->running = false;
    // A replica rejoins its task as a backup.
    const bool replica = !t->worker && launch.ps_replicas > 1;
    if (WIFSIGNALED(status) && !g_stop.load() && (launch.restart || replica)) {
      Say(StrCat(t->name, " ", Describe(status), "; restarting it"));
      if (Spawn(launch.runnel, *t, readers)) continue;
      Say(StrCat("cannot restart ", t->name, ": ", std::strerror(errno)));
    }
    if (!t->worker) {
      Say(StrCat(t->name, " ", Describe(status)));
      continue;
    }
    --workers_left;
    const int code =
        WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    if (code != 0) {
      Say(StrCat(t->name, " ", Describe(status)));
      if (result == 0) result = code;
    }
  }
  return result;
}

}  // namespace

int LaunchCluster(const ClusterLaunch& launch) {
  const absl::StatusOr<const ClusterModule*> cluster = LoadCluster();
  const absl::StatusOr<std::string> spec =
      cluster.ok() ? (*cluster)->LoopbackSpec(launch.ps, launch.workers,
                                              launch.ps_replicas)
                   : cluster.status();
  if (!spec.ok()) {
    Say(std::string(spec.status().message()));
    return 1;
  }
  const std::optional<std::string> spec_file = WriteSpec(*spec);
  if (!spec_file) return 1;
  Say(StrCat("spec ", *spec));
  std::vector<Task> tasks = Tasks(launch, *spec_file);

  std::signal(SIGINT, OnClusterSignal);
  std::signal(SIGTERM, OnClusterSignal);
  std::vector<std::thread> readers;
  bool spawned = true;
  for (Task& t : tasks) spawned = spawned && Spawn(launch.runnel, t, &readers);
  int result = 1;
  if (spawned) {
    result = Supervise(launch, tasks, &readers);
  } else {
    Say(StrCat("cannot start a task: ", std::strerror(errno)));
  }
  StopAll(tasks, SIGTERM);
  for (std::thread& r : readers) r.join();
  std::remove(spec_file->c_str());
  ::rmdir(std::filesystem::path(*spec_file).parent_path().c_str());
  return result;
}

}  // namespace runnel::cli
