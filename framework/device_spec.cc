#include "framework/device_spec.h"

#include <cctype>
#include <vector>

#include "base/strings.h"

namespace runnel {
namespace {

bool IsDigits(std::string_view s) {
  if (s.empty()) return false;
  for (char c : s) {
    if (!std::isdigit(static_cast<unsigned char>(c))) return false;
  }
  return true;
}

bool IsName(std::string_view s) {
  if (s.empty() ||
      !(std::isalpha(static_cast<unsigned char>(s[0])) || s[0] == '_')) {
    return false;
  }
  for (char c : s) {
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_' && c != '-') {
      return false;
    }
  }
  return true;
}

std::string Lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(c));
  return out;
}

absl::Status Bad(std::string_view text, std::string why) {
  return absl::InvalidArgumentError(
      StrCat("malformed device spec \"", text, "\": ", why,
             " (expected /job:NAME/task:N/device:cpu:N, or a short form "
             "such as /cpu:0, /gpu:1 or /job:ps)"));
}

}  // namespace

absl::StatusOr<DeviceSpec> DeviceSpec::Parse(std::string_view text) {
  DeviceSpec spec;
  if (text.empty()) return spec;
  if (text[0] != '/') return Bad(text, "it must start with '/'");
  std::vector<std::string_view> parts;
  std::string_view rest = text.substr(1);
  while (true) {
    size_t slash = rest.find('/');
    parts.push_back(rest.substr(0, slash));
    if (slash == std::string_view::npos) break;
    rest = rest.substr(slash + 1);
  }
  int order = 0;  // job < replica < task < device
  auto set = [&](std::string* field, std::string value, int rank,
                 std::string_view what) -> absl::Status {
    if (!field->empty()) return Bad(text, StrCat(what, " is given twice"));
    if (rank < order) return Bad(text, StrCat(what, " is out of order"));
    order = rank;
    *field = std::move(value);
    return absl::OkStatus();
  };
  auto device = [&](std::string_view type,
                    std::string_view index) -> absl::Status {
    std::string t = Lower(type);
    if (t != "cpu" && t != "gpu") {
      return Bad(text, StrCat("unknown device type '", type,
                              "' (expected cpu or gpu)"));
    }
    if (!IsDigits(index) && index != "*") {
      return Bad(text, StrCat("device index '", index, "' is not a number"));
    }
    if (!spec.type.empty()) return Bad(text, "the device is given twice");
    if (order > 3) return Bad(text, "the device is out of order");
    order = 4;
    spec.type = t;
    spec.index = std::string(index);
    return absl::OkStatus();
  };
  for (std::string_view part : parts) {
    if (part.empty()) return Bad(text, "it has an empty part");
    size_t colon = part.find(':');
    if (colon == std::string_view::npos) {
      return Bad(text, StrCat("'", part, "' has no ':'"));
    }
    std::string_view key = part.substr(0, colon);
    std::string_view value = part.substr(colon + 1);
    absl::Status s;
    if (key == "job") {
      if (!IsName(value)) {
        return Bad(text, StrCat("job name '", value, "' is not a name"));
      }
      s = set(&spec.job, std::string(value), 1, "the job");
    } else if (key == "replica") {
      if (!IsDigits(value)) {
        return Bad(text, StrCat("replica '", value, "' is not a number"));
      }
      s = set(&spec.replica, std::string(value), 2, "the replica");
    } else if (key == "task") {
      if (!IsDigits(value) && value != "*") {
        return Bad(text, StrCat("task '", value, "' is not a number or '*'"));
      }
      s = set(&spec.task, std::string(value), 3, "the task");
    } else if (key == "device") {
      size_t c2 = value.find(':');
      if (c2 == std::string_view::npos) {
        return Bad(text, StrCat("device '", value, "' needs TYPE:INDEX"));
      }
      s = device(value.substr(0, c2), value.substr(c2 + 1));
    } else {
      s = device(key, value);
    }
    if (!s.ok()) return s;
  }
  return spec;
}

DeviceSpec DeviceSpec::Refine(const DeviceSpec& inner) const {
  DeviceSpec out = *this;
  if (!inner.job.empty()) out.job = inner.job;
  if (!inner.replica.empty()) out.replica = inner.replica;
  if (!inner.task.empty()) out.task = inner.task;
  if (!inner.type.empty()) {
    out.type = inner.type;
    out.index = inner.index;
  }
  return out;
}

bool DeviceSpec::Matches(const DeviceSpec& device) const {
  auto field = [](const std::string& want, const std::string& have) {
    return want.empty() || want == "*" || want == have;
  };
  return field(job, device.job) && field(replica, device.replica) &&
         field(task, device.task) && field(type, device.type) &&
         field(index, device.index);
}

absl::StatusOr<DeviceSpec> DeviceSpec::Merge(const DeviceSpec& a,
                                             const DeviceSpec& b) {
  DeviceSpec out;
  auto merge = [](const std::string& x, const std::string& y,
                  std::string_view what, std::string* to) -> absl::Status {
    if (!x.empty() && !y.empty() && x != y && x != "*" && y != "*") {
      return absl::InvalidArgumentError(
          StrCat("the ", what, " differs (", x, " and ", y, ")"));
    }
    *to = x.empty() || x == "*" ? y : x;
    return absl::OkStatus();
  };
  absl::Status s = merge(a.job, b.job, "job", &out.job);
  if (s.ok()) s = merge(a.replica, b.replica, "replica", &out.replica);
  if (s.ok()) s = merge(a.task, b.task, "task", &out.task);
  if (s.ok()) s = merge(a.type, b.type, "device type", &out.type);
  if (s.ok()) s = merge(a.index, b.index, "device index", &out.index);
  if (!s.ok()) return s;
  return out;
}

std::string DeviceSpec::ToString() const {
  std::string s;
  if (!job.empty()) s += StrCat("/job:", job);
  if (!replica.empty()) s += StrCat("/replica:", replica);
  if (!task.empty()) s += StrCat("/task:", task);
  if (!type.empty()) s += StrCat("/device:", type, ":", index);
  return s;
}

std::string TaskOfDevice(std::string_view device) {
  return std::string(device.substr(0, device.find("/device:")));
}

}  // namespace runnel
