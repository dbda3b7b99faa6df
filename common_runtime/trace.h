// Step traces in the Chrome / Perfetto trace-event format
// (`runnel run FILE --trace out.json`, docs/devices.md): one track per
// device with a complete event ("ph": "X") per kernel, and one for the host
// with an event per traced `run`. Open the file in https://ui.perfetto.dev
// or chrome://tracing. Devices with a caching allocator (GPUs) also get a
// memory counter track ("ph": "C"), sampled after each traced `run`: MiB in
// use, reserved and the peak reserved (MemoryCounters).
#ifndef RUNNEL_COMMON_RUNTIME_TRACE_H_
#define RUNNEL_COMMON_RUNTIME_TRACE_H_

#include <chrono>
#include <cstdint>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "framework/caching_allocator.h"

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
  // A sample at `time` of the counter `name` (a track of its own), one
  // line per series: {"in use", 12.5}.
  void AddCounter(std::string name, double time,
                  std::vector<std::pair<std::string, double>> series);
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
  struct Counter {
    std::string name;
    double time;
    std::vector<std::pair<std::string, double>> series;
  };
  std::chrono::steady_clock::time_point born_;
  mutable std::mutex mu_;
  std::vector<std::string> tracks_;
  std::vector<Event> events_;
  std::vector<Counter> counters_;
};

class DeviceSet;

// The memory of each local device that has a caching allocator (the GPUs),
// by short name ("/gpu:0"), in the set's order; empty without a GPU.
struct DeviceMemory {
  std::string device;
  CachingAllocatorStats stats;
};
std::vector<DeviceMemory> DeviceMemoryOf(const DeviceSet& devices);

// Samples DeviceMemoryOf(devices) into `tracer` at its Now(), one counter
// per device ("/gpu:0 memory"); nothing without a GPU.
void TraceMemory(const DeviceSet& devices, Tracer& tracer);

// What `report` adds for each device of `memory`: JSON values in MiB
// ("gpu0_mem_in_use", "gpu0_mem_reserved", "gpu0_mem_peak" for the peak
// reserved) and one value for the display ("gpu0 mem": "1.2 GiB in use,
// peak 2 GiB").
struct MemoryReport {
  std::vector<std::pair<std::string, std::string>> json, shown;
};
MemoryReport ReportMemory(const std::vector<DeviceMemory>& memory);

}  // namespace runnel

#endif  // RUNNEL_COMMON_RUNTIME_TRACE_H_
