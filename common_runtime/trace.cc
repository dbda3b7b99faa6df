#include "common_runtime/trace.h"

#include <algorithm>

#include "base/atomic_file.h"
#include "base/strings.h"
#include "framework/device_set.h"

namespace runnel {

Tracer::Tracer() : born_(std::chrono::steady_clock::now()) {}

double Tracer::Now() const {
  return std::chrono::duration<double, std::micro>(
             std::chrono::steady_clock::now() - born_)
      .count();
}

void Tracer::Add(const std::string& track, std::string name, std::string detail,
                 double start, double duration) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = std::find(tracks_.begin(), tracks_.end(), track);
  const int t = static_cast<int>(it - tracks_.begin());
  if (it == tracks_.end()) tracks_.push_back(track);
  events_.push_back({t, std::move(name), std::move(detail), start, duration});
}

void Tracer::AddCounter(std::string name, double time,
                        std::vector<std::pair<std::string, double>> series) {
  std::lock_guard<std::mutex> lock(mu_);
  counters_.push_back({std::move(name), time, std::move(series)});
}

int Tracer::num_events() const {
  std::lock_guard<std::mutex> lock(mu_);
  return static_cast<int>(events_.size());
}

std::string Tracer::ToJson() const {
  std::lock_guard<std::mutex> lock(mu_);
  std::string out = "{\"displayTimeUnit\": \"ms\", \"traceEvents\": [\n";
  out +=
      "{\"ph\": \"M\", \"pid\": 1, \"name\": \"process_name\", "
      "\"args\": {\"name\": \"runnel\"}}";
  for (size_t t = 0; t < tracks_.size(); ++t) {
    out += fmt::format(
        ",\n{{\"ph\": \"M\", \"pid\": 1, \"tid\": {}, \"name\": "
        "\"thread_name\", \"args\": {{\"name\": {}}}}}",
        t, JsonString(tracks_[t]));
  }
  for (const Event& e : events_) {
    out += fmt::format(
        ",\n{{\"ph\": \"X\", \"pid\": 1, \"tid\": {}, \"name\": {}, \"ts\": "
        "{:.3f}, \"dur\": {:.3f}, \"args\": {{\"detail\": {}}}}}",
        e.track, JsonString(e.name), e.start, e.duration, JsonString(e.detail));
  }
  for (const Counter& c : counters_) {
    std::string args;
    for (const auto& [series, value] : c.series) {
      args += StrCat(args.empty() ? "" : ", ", JsonString(series),
                     fmt::format(": {:.3f}", value));
    }
    out += fmt::format(
        ",\n{{\"ph\": \"C\", \"pid\": 1, \"name\": {}, \"ts\": {:.3f}, "
        "\"args\": {{{}}}}}",
        JsonString(c.name), c.time, args);
  }
  return out + "\n]}\n";
}

absl::Status Tracer::WriteFile(const std::string& path) const {
  const std::string json = ToJson();
  AtomicFile f(path, "trace");
  if (absl::Status s = f.Create(); !s.ok()) return s;
  if (absl::Status s = f.Write(json.data(), json.size()); !s.ok()) return s;
  return f.Commit();
}

namespace {

double MiB(size_t bytes) { return static_cast<double>(bytes) / (1 << 20); }

}  // namespace

std::vector<DeviceMemory> DeviceMemoryOf(const DeviceSet& devices) {
  std::vector<DeviceMemory> out;
  for (int i = 0; i < devices.num_local(); ++i) {
    const Device* d = devices.device(i);
    if (std::optional<CachingAllocatorStats> s = d->MemoryStats()) {
      out.push_back({DeviceSet::ShortName(d->name()), *s});
    }
  }
  return out;
}

void TraceMemory(const DeviceSet& devices, Tracer& tracer) {
  for (const DeviceMemory& m : DeviceMemoryOf(devices)) {
    tracer.AddCounter(StrCat(m.device, " memory (MiB)"), tracer.Now(),
                      {{"in use", MiB(m.stats.in_use)},
                       {"reserved", MiB(m.stats.reserved)},
                       {"peak reserved", MiB(m.stats.peak_reserved)}});
  }
}

MemoryReport ReportMemory(const std::vector<DeviceMemory>& memory) {
  MemoryReport r;
  for (const DeviceMemory& m : memory) {
    // "/gpu:0" -> "gpu0": a name plots and scripts take as it is.
    std::string key;
    for (char c : m.device) {
      if (c != '/' && c != ':') key += c;
    }
    for (const auto& [what, bytes] :
         {std::pair{"in_use", m.stats.in_use},
          std::pair{"reserved", m.stats.reserved},
          std::pair{"peak", m.stats.peak_reserved}}) {
      r.json.emplace_back(StrCat(key, "_mem_", what),
                          fmt::format("{:.3f}", MiB(bytes)));
    }
    r.shown.emplace_back(StrCat(key, " mem"),
                         StrCat(FormatBytes(m.stats.in_use), " in use, peak ",
                                FormatBytes(m.stats.peak_reserved)));
  }
  return r;
}

}  // namespace runnel
