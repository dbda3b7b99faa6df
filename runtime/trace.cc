#include "runtime/trace.h"

#include <algorithm>

#include "runtime/atomic_file.h"
#include "runtime/strings.h"

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
  return out + "\n]}\n";
}

absl::Status Tracer::WriteFile(const std::string& path) const {
  const std::string json = ToJson();
  AtomicFile f(path, "trace");
  if (absl::Status s = f.Create(); !s.ok()) return s;
  if (absl::Status s = f.Write(json.data(), json.size()); !s.ok()) return s;
  return f.Commit();
}

}  // namespace runnel
