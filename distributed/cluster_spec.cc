#include "distributed/cluster_spec.h"

#include <google/protobuf/struct.pb.h>
#include <google/protobuf/util/json_util.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdlib>

#include "base/read_file.h"
#include "base/status_macros.h"
#include "base/strings.h"

namespace runnel {
namespace {

namespace pb = google::protobuf;

// "host:port" with a port from 1 to 65535; says what is wrong otherwise.
std::string CheckAddress(const std::string& a) {
  const size_t colon = a.rfind(':');
  if (colon == std::string::npos || colon == 0) {
    return "needs \"host:port\"";
  }
  const std::string port = a.substr(colon + 1);
  char* end = nullptr;
  const long p = std::strtol(port.c_str(), &end, 10);
  if (port.empty() || *end != '\0' || p < 1 || p > 65535) {
    return StrCat("has no valid port (1 to 65535) after ':'");
  }
  return "";
}

bool IsLoopbackHost(std::string_view host) {
  return host == "localhost" || host == "[::1]" || host == "::1" ||
         host.rfind("127.", 0) == 0;
}

}  // namespace

absl::StatusOr<ClusterSpec> ClusterSpec::Parse(std::string_view text,
                                               const std::string& file) {
  pb::Struct root;
  pb::util::JsonParseOptions opts;
  const auto parsed =
      pb::util::JsonStringToMessage(std::string(text), &root, opts);
  if (!parsed.ok()) {
    return absl::InvalidArgumentError(
        StrCat(file, ": not a JSON object of jobs: ",
               std::string(parsed.message().data(), parsed.message().size())));
  }
  ClusterSpec spec;
  for (const auto& [job, value] : root.fields()) {
    const std::string where = StrCat(file, ": \"", job, "\"");
    if (job.empty() || job.find_first_of("/: ") != std::string::npos) {
      return absl::InvalidArgumentError(
          StrCat(where, ": a job name is a word without '/', ':' or spaces"));
    }
    if (value.kind_case() != pb::Value::kListValue) {
      return absl::InvalidArgumentError(
          StrCat(where, ": needs a list of \"host:port\" addresses"));
    }
    std::vector<std::string>& tasks = spec.jobs_[job];
    const auto& list = value.list_value().values();
    if (list.empty()) {
      return absl::InvalidArgumentError(StrCat(where, ": has no tasks"));
    }
    for (int i = 0; i < list.size(); ++i) {
      // A task: "host:port", or a list of them (its replicas).
      std::vector<std::pair<std::string, const pb::Value*>> replicas;
      if (list[i].kind_case() == pb::Value::kListValue &&
          list[i].list_value().values_size() > 0) {
        const auto& r = list[i].list_value().values();
        for (int k = 0; k < r.size(); ++k) {
          replicas.emplace_back(StrCat(where, "[", i, "][", k, "]"), &r[k]);
        }
      } else {
        replicas.emplace_back(StrCat(where, "[", i, "]"), &list[i]);
      }
      std::vector<std::string> addresses;
      for (const auto& [at, v] : replicas) {
        if (v->kind_case() != pb::Value::kStringValue) {
          return absl::InvalidArgumentError(
              StrCat(at, ": needs a \"host:port\" string"));
        }
        const std::string& a = v->string_value();
        if (std::string problem = CheckAddress(a); !problem.empty()) {
          return absl::InvalidArgumentError(
              StrCat(at, ": '", a, "' ", problem));
        }
        addresses.push_back(a);
      }
      tasks.push_back(addresses.front());
      if (addresses.size() > 1) {
        spec.replicas_[TaskName(job, i)] = std::move(addresses);
      }
    }
  }
  if (spec.jobs_.empty()) {
    return absl::InvalidArgumentError(StrCat(file, ": names no jobs"));
  }
  return spec;
}

absl::StatusOr<ClusterSpec> ClusterSpec::Load(const std::string& path) {
  absl::StatusOr<std::string> text = ReadFileToString(path);
  if (!text.ok()) return text.status();
  return Parse(*text, path);
}

ClusterSpec ClusterSpec::Loopback(int ps, int workers,
                                  const std::vector<int>& ports,
                                  int ps_replicas) {
  ClusterSpec spec;
  size_t next = 0;
  auto add = [&](const std::string& job, int n) {
    for (int i = 0; i < n; ++i) {
      spec.jobs_[job].push_back(StrCat("127.0.0.1:", ports.at(next++)));
    }
  };
  add("ps", ps);
  for (int r = 1; r < ps_replicas; ++r) {
    for (int i = 0; i < ps; ++i) {
      std::vector<std::string>& replicas = spec.replicas_[TaskName("ps", i)];
      if (replicas.empty()) replicas.push_back(spec.jobs_["ps"][i]);
      replicas.push_back(StrCat("127.0.0.1:", ports.at(next++)));
    }
  }
  add("worker", workers);
  return spec;
}

absl::StatusOr<std::vector<std::string>> ClusterSpec::Replicas(
    const std::string& task_name) const {
  if (auto it = replicas_.find(task_name); it != replicas_.end()) {
    return it->second;
  }
  RN_ASSIGN_OR_RETURN(std::string address, AddressOf(task_name));
  return std::vector<std::string>{address};
}

int ClusterSpec::num_tasks(const std::string& job) const {
  auto it = jobs_.find(job);
  return it == jobs_.end() ? 0 : static_cast<int>(it->second.size());
}

absl::StatusOr<std::string> ClusterSpec::Address(const std::string& job,
                                                 int task) const {
  auto it = jobs_.find(job);
  if (it == jobs_.end()) {
    return absl::NotFoundError(
        StrCat("the cluster spec has no job '", job, "'"));
  }
  if (task < 0 || task >= static_cast<int>(it->second.size())) {
    return absl::NotFoundError(StrCat("the cluster spec's job '", job,
                                      "' has no task ", task, " (it has ",
                                      it->second.size(), ")"));
  }
  return it->second[task];
}

std::vector<std::string> ClusterSpec::TaskNames() const {
  std::vector<std::string> out;
  for (const auto& [job, tasks] : jobs_) {
    for (size_t i = 0; i < tasks.size(); ++i) {
      out.push_back(TaskName(job, static_cast<int>(i)));
    }
  }
  return out;
}

absl::StatusOr<std::string> ClusterSpec::AddressOf(
    const std::string& task_name) const {
  // "/job:NAME/task:N"
  const size_t t = task_name.find("/task:");
  if (task_name.rfind("/job:", 0) != 0 || t == std::string::npos) {
    return absl::InvalidArgumentError(
        StrCat("'", task_name, "' is not a task name"));
  }
  const std::string job = task_name.substr(5, t - 5);
  char* end = nullptr;
  const long index = std::strtol(task_name.c_str() + t + 6, &end, 10);
  if (*end != '\0') {
    return absl::InvalidArgumentError(
        StrCat("'", task_name, "' is not a task name"));
  }
  return Address(job, static_cast<int>(index));
}

bool ClusterSpec::AllLoopback() const {
  auto loopback = [](const std::vector<std::string>& addresses) {
    for (const std::string& a : addresses) {
      if (!IsLoopbackHost(std::string_view(a).substr(0, a.rfind(':')))) {
        return false;
      }
    }
    return true;
  };
  for (const auto& [job, tasks] : jobs_) {
    if (!loopback(tasks)) return false;
  }
  for (const auto& [task, addresses] : replicas_) {
    if (!loopback(addresses)) return false;
  }
  return true;
}

std::string ClusterSpec::ToJson() const {
  std::string out = "{";
  for (const auto& [job, tasks] : jobs_) {
    if (out.size() > 1) out += ", ";
    out += JsonString(job) + ": [";
    for (size_t i = 0; i < tasks.size(); ++i) {
      out += i > 0 ? ", " : "";
      auto r = replicas_.find(TaskName(job, static_cast<int>(i)));
      if (r == replicas_.end()) {
        out += JsonString(tasks[i]);
        continue;
      }
      out += "[";
      for (size_t k = 0; k < r->second.size(); ++k) {
        out += (k > 0 ? ", " : "") + JsonString(r->second[k]);
      }
      out += "]";
    }
    out += "]";
  }
  return out + "}";
}

std::vector<int> FreeLoopbackPorts(int n) {
  // Held open together, so that they differ.
  std::vector<int> fds, ports;
  for (int i = 0; i < n; ++i) {
    const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof addr;
    if (fd < 0 || ::bind(fd, reinterpret_cast<sockaddr*>(&addr), len) != 0 ||
        ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
      if (fd >= 0) ::close(fd);
      break;
    }
    fds.push_back(fd);
    ports.push_back(ntohs(addr.sin_port));
  }
  for (int fd : fds) ::close(fd);
  return ports;
}

}  // namespace runnel
