// Step traces in the Chrome / Perfetto trace-event format
// (`runnel run FILE --trace out.json`, docs/devices.md): one track per
// device with a complete event ("ph": "X") per kernel, and one for the host
// with an event per traced `run`. Open the file in https://ui.perfetto.dev
// or chrome://tracing.
#ifndef RUNNEL_RUNTIME_TRACE_H_
#define RUNNEL_RUNTIME_TRACE_H_

#include <chrono>
#include <cstdint>
#include <mutex>
#include <string>
#include <vector>

#include "absl/status/status.h"

namespace runnel {

class Tracer {
 public:
  Tracer();
  // Microseconds since the tracer was made.
  double Now() const;
  // An event on `track` ("/cpu:0", "host") from `start` for `duration`
  // microseconds; `detail` (the op, a source line) goes to its args.
  void Add(const std::string& track, std::string name, std::string detail,
           double start, double duration);
  int num_events() const;
  // The whole trace as JSON; tracks in the order they first appear.
  std::string ToJson() const;
  // Writes it atomically (a reader never sees half a file).
  absl::Status WriteFile(const std::string& path) const;

 private:
  struct Event {
    int track;
    std::string name, detail;
    double start, duration;
  };
  std::chrono::steady_clock::time_point born_;
  mutable std::mutex mu_;
  std::vector<std::string> tracks_;
  std::vector<Event> events_;
};

}  // namespace runnel

#endif  // RUNNEL_RUNTIME_TRACE_H_
