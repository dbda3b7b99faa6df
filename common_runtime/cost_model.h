// The placer's cost model (docs/devices.md): how fast a device runs each
// class of kernel, how much the executor spends on any node, and what a
// local Send/Recv costs. The rates are measured, not assumed: a short
// calibration (tens of milliseconds) runs the real CPU kernels through an
// Executor on a device with the given intra-op threads, and a chain of
// nodes alternating between two such devices through the real partitioner
// and rendezvous.
//
// Measured once and cached: in the process, and on disk in
// $XDG_CACHE_HOME/runnel/cost-model-TYPE-tN.txt (else
// ~/.cache/runnel/...), one file per device type and thread count, which
// also names the CPU (/proc/cpuinfo's model name) and a format version. A
// file that does not parse, or that was made for another CPU, thread count,
// type or version, is measured over and rewritten (atomically); a cache
// that cannot be read or written only costs a new calibration.
// RUNNEL_COST_CACHE=off keeps the disk out of it.
#ifndef RUNNEL_COMMON_RUNTIME_COST_MODEL_H_
#define RUNNEL_COMMON_RUNTIME_COST_MODEL_H_

#include <functional>
#include <map>
#include <mutex>
#include <string>
#include <utility>

#include "absl/status/statusor.h"
#include "framework/op_registry.h"

namespace runnel {

// The class an op's definition declares (OpDef::cost); element-wise for
// an op the registry does not know.
KernelClass ClassOfOp(const std::string& op);

struct CostRates {
  double matmul_flops_per_s = 2e10;
  double elementwise_bytes_per_s = 5e9;
  double transcendental_bytes_per_s = 1e9;
  double reduction_bytes_per_s = 5e9;
  // The executor's fixed cost of one node (scheduling, allocation).
  double node_overhead_s = 1e-6;
  // A local Send/Recv pair: a fixed cost and bytes crossing.
  double transfer_latency_s = 5e-6;
  double transfer_bytes_per_s = 5e9;

  // "matmul 21.3 Gflop/s, element-wise 6.1 GB/s, ...", for `:devices`.
  std::string ToString() const;
};

// Runs the calibration on a device of `type` ("cpu") with `threads`
// intra-op threads. An error for a type it cannot measure.
absl::StatusOr<CostRates> MeasureCostRates(const std::string& type,
                                           int threads);

// The CPU's model name from /proc/cpuinfo ("unknown" without one).
std::string CpuModelName();

class CostModel {
 public:
  using Measure =
      std::function<absl::StatusOr<CostRates>(const std::string&, int)>;

  // `cache_dir` empty: no disk cache. `measure` is MeasureCostRates except
  // in tests.
  explicit CostModel(std::string cache_dir, Measure measure = MeasureCostRates);

  // The process's model: cached under $XDG_CACHE_HOME/runnel (or
  // ~/.cache/runnel) unless RUNNEL_COST_CACHE=off.
  static CostModel& Global();
  // Its directory: "" when RUNNEL_COST_CACHE=off or there is no HOME.
  static std::string DefaultCacheDir();

  // The rates of a device of `type` with `threads` intra-op threads:
  // remembered, else read from the cache file, else measured (and the
  // file written). Never fails: a type the calibration cannot measure
  // gets CostRates' defaults.
  CostRates RatesFor(const std::string& type, int threads);
  // Where RatesFor's answer came from: "measured in 84 ms", "read from
  // PATH", or why the defaults stand.
  std::string SourceOf(const std::string& type, int threads);

  // The cache file for `type` and `threads` ("" without a disk cache).
  std::string CacheFile(const std::string& type, int threads) const;
  // The file's text for these rates, and the rates in a file's text when
  // it is valid for `type` and `threads` on this CPU.
  static std::string Serialize(const std::string& type, int threads,
                               const CostRates& rates);
  static bool Parse(const std::string& text, const std::string& type,
                    int threads, CostRates* rates);

 private:
  struct Entry {
    CostRates rates;
    std::string source;
  };
  Entry& Lookup(const std::string& type, int threads);

  const std::string cache_dir_;
  const Measure measure_;
  std::mutex mu_;
  std::map<std::pair<std::string, int>, Entry> entries_;
};

}  // namespace runnel

#endif  // RUNNEL_COMMON_RUNTIME_COST_MODEL_H_
