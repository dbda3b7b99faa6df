#include "common_runtime/cost_model.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <deque>
#include <filesystem>
#include <memory>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_split.h"
#include "base/atomic_file.h"
#include "base/read_file.h"
#include "base/status_macros.h"
#include "base/strings.h"
#include "base/thread_pool.h"
#include "common_runtime/executor.h"
#include "common_runtime/partition.h"
#include "common_runtime/rendezvous.h"
#include "framework/allocator.h"
#include "framework/device.h"
#include "framework/graph.h"
#include "framework/op_registry.h"
#include "framework/resource_mgr.h"

namespace runnel {
namespace {

// Bumped whenever the calibration or the file's fields change meaning.
constexpr int kFormatVersion = 1;
constexpr char kMagic[] = "runnel-cost-model";

using Clock = std::chrono::steady_clock;

double SecondsSince(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

// The rates' fields, named as in the cache file.
struct Field {
  const char* name;
  double CostRates::*member;
};
constexpr Field kFields[] = {
    {"matmul_flops_per_s", &CostRates::matmul_flops_per_s},
    {"elementwise_bytes_per_s", &CostRates::elementwise_bytes_per_s},
    {"transcendental_bytes_per_s", &CostRates::transcendental_bytes_per_s},
    {"reduction_bytes_per_s", &CostRates::reduction_bytes_per_s},
    {"node_overhead_s", &CostRates::node_overhead_s},
    {"transfer_latency_s", &CostRates::transfer_latency_s},
    {"transfer_bytes_per_s", &CostRates::transfer_bytes_per_s},
};

// ---- the calibration

constexpr char kDevice0[] = "/job:localhost/task:0/device:cpu:0";
constexpr char kDevice1[] = "/job:localhost/task:0/device:cpu:1";

// Two CPU devices with `threads` intra-op threads each, and the pool the
// executors schedule expensive kernels on.
class Bench {
 public:
  explicit Bench(int threads)
      : inter_(std::max(threads, 2)),
        intra0_(threads),
        intra1_(threads),
        device0_(kDevice0, kDeviceCpu, CpuAllocator::Get(), &intra0_,
                 &resources_),
        device1_(kDevice1, kDeviceCpu, CpuAllocator::Get(), &intra1_,
                 &resources_) {}

  // The fastest of `reps` runs of `graph` on device 0 (after one to warm
  // up), with `feeds`, in seconds. The fastest, as other work on the
  // machine only ever slows a run down.
  absl::StatusOr<double> Time(std::shared_ptr<Graph> graph,
                              const std::vector<Tensor>& feeds, int reps) {
    for (Node* n : graph->nodes()) {
      if (n->assigned_device().empty()) n->set_assigned_device(kDevice0);
    }
    RN_ASSIGN_OR_RETURN(std::vector<GraphPartition> parts,
                        PartitionGraph(*graph));
    std::vector<std::unique_ptr<Executor>> executors;
    for (const GraphPartition& p : parts) {
      Device* device = p.device == kDevice0 ? &device0_ : &device1_;
      RN_ASSIGN_OR_RETURN(std::unique_ptr<Executor> ex,
                          Executor::Create(p.graph, device, &inter_));
      executors.push_back(std::move(ex));
    }
    double best = 1e30;
    for (int r = 0; r <= reps; ++r) {
      CallFrame frame{.feeds = feeds,
                      .fetches = std::vector<Tensor>(1),
                      .fetched = std::deque<bool>(1, false)};
      Rendezvous rendezvous;
      std::vector<std::pair<Executor*, Executor::RunArgs>> runs;
      for (auto& ex : executors) {
        runs.push_back(
            {ex.get(),
             {.call_frame = &frame, .rendezvous = &rendezvous, .step_id = r}});
      }
      const Clock::time_point start = Clock::now();
      RN_RETURN_IF_ERROR(Executor::RunPartitions(runs));
      if (r > 0) best = std::min(best, SecondsSince(start));
    }
    return best;
  }

 private:
  ThreadPool inter_;
  ThreadPool intra0_, intra1_;
  ResourceMgr resources_;
  Device device0_, device1_;
};

// A graph fed `inputs` f32 tensors of `shape`, with their feed nodes.
std::pair<std::shared_ptr<Graph>, std::vector<NodeOut>> Fed(
    int inputs, const Shape& shape) {
  auto g = std::make_shared<Graph>();
  std::vector<NodeOut> feeds;
  for (int i = 0; i < inputs; ++i) {
    absl::StatusOr<Node*> f = g->AddNode(
        {.name = StrCat("feed", i),
         .op = "_feed",
         .attrs = {
             {"index", int64_t{i}}, {"dtype", DType::kF32}, {"shape", shape}}});
    if (f.ok()) feeds.push_back({*f, 0});
  }
  return {g, feeds};
}

absl::Status Fetch(Graph& g, NodeOut value) {
  return g
      .AddNode({.name = "fetch",
                .op = "_fetch",
                .inputs = {value},
                .attrs = {{"index", int64_t{0}}}})
      .status();
}

// One `op` over `inputs` fed tensors of `shape`: its time, less the
// executor's cost of its `inputs + 2` nodes.
absl::StatusOr<double> TimeOp(Bench& bench, const std::string& op, int inputs,
                              const Shape& shape, int reps, double overhead) {
  auto [g, feeds] = Fed(inputs, shape);
  RN_ASSIGN_OR_RETURN(Node * n,
                      g->AddNode({.name = "op", .op = op, .inputs = feeds}));
  RN_RETURN_IF_ERROR(Fetch(*g, {n, 0}));
  const std::vector<Tensor> values(inputs, Tensor::Zeros(DType::kF32, shape));
  RN_ASSIGN_OR_RETURN(double t, bench.Time(g, values, reps));
  return std::max(t - (inputs + 2) * overhead, 1e-9);
}

// A chain of `length` negations of a fed f32 tensor of `elements`; with
// `alternate`, node k runs on device k % 2, so each of its edges is a
// Send/Recv pair (the last on device 0 again: `length` is even).
absl::StatusOr<double> TimeChain(Bench& bench, int length, int64_t elements,
                                 bool alternate, int reps) {
  const Shape shape{elements};
  auto [g, feeds] = Fed(1, shape);
  NodeOut x = feeds[0];
  for (int k = 1; k <= length; ++k) {
    RN_ASSIGN_OR_RETURN(
        Node * n,
        g->AddNode({.name = StrCat("n", k), .op = "neg", .inputs = {x}}));
    n->set_assigned_device(alternate && k % 2 == 1 ? kDevice1 : kDevice0);
    x = {n, 0};
  }
  RN_RETURN_IF_ERROR(Fetch(*g, x));
  return bench.Time(g, {Tensor::Zeros(DType::kF32, shape)}, reps);
}

absl::StatusOr<CostRates> Calibrate(int threads) {
  Bench bench(threads);
  CostRates r;
  constexpr int kChain = 64;
  RN_ASSIGN_OR_RETURN(double chain,
                      TimeChain(bench, kChain, 1, false, /*reps=*/20));
  r.node_overhead_s = std::max(chain / (kChain + 2), 1e-8);
  const double overhead = r.node_overhead_s;

  // A matmul the size of an LSTM layer's or a dense layer's (the rate
  // of small products is what placement decides about).
  constexpr int64_t kN = 192;
  RN_ASSIGN_OR_RETURN(double mm,
                      TimeOp(bench, "matmul", 2, Shape{kN, kN}, 6, overhead));
  r.matmul_flops_per_s = 2.0 * kN * kN * kN / mm;

  // Element-wise and reductions over 256 KB, a gate's size, in cache.
  constexpr int64_t kElements = 65536;
  constexpr double kBytes = kElements * sizeof(float);
  RN_ASSIGN_OR_RETURN(double add,
                      TimeOp(bench, "add", 2, Shape{kElements}, 10, overhead));
  r.elementwise_bytes_per_s = 3 * kBytes / add;
  RN_ASSIGN_OR_RETURN(double tanh,
                      TimeOp(bench, "tanh", 1, Shape{kElements}, 10, overhead));
  r.transcendental_bytes_per_s = 2 * kBytes / tanh;
  RN_ASSIGN_OR_RETURN(double sum,
                      TimeOp(bench, "sum", 1, Shape{kElements}, 10, overhead));
  r.reduction_bytes_per_s = kBytes / sum;

  // Send/Recv: a chain split over two devices against the same chain on
  // one, with a scalar (the latency) and with 256 KB (the bytes).
  constexpr int kHops = 16;
  double split[2], whole[2];
  const int64_t sizes[2] = {1, kElements};
  for (int s = 0; s < 2; ++s) {
    RN_ASSIGN_OR_RETURN(split[s], TimeChain(bench, kHops, sizes[s], true, 12));
    RN_ASSIGN_OR_RETURN(whole[s], TimeChain(bench, kHops, sizes[s], false, 12));
  }
  const double small = std::max((split[0] - whole[0]) / kHops, 1e-8);
  const double large = (split[1] - whole[1]) / kHops;
  r.transfer_latency_s = small;
  // Locally a tensor crosses by reference; what its bytes cost is the
  // receiver reading memory another core wrote, which may be lost in the
  // noise: then (and at most) 100 times the element-wise rate.
  const double cap = 100 * r.elementwise_bytes_per_s;
  r.transfer_bytes_per_s =
      large > small ? std::min(kBytes / (large - small), cap) : cap;
  return r;
}

std::string Rate(double per_s, const char* unit) {
  static constexpr const char* kPrefix[] = {"", "k", "M", "G", "T"};
  int p = 0;
  while (p < 4 && per_s >= 1000) {
    per_s /= 1000;
    ++p;
  }
  return fmt::format("{:.3g} {}{}/s", per_s, kPrefix[p], unit);
}

std::string Micros(double s) { return fmt::format("{:.3g} us", s * 1e6); }

std::string Millis(double s) { return fmt::format("{:.3g} ms", s * 1e3); }

// The lines of a file's text, each split at its first space.
std::vector<std::pair<std::string, std::string>> KeyValueLines(
    const std::string& text, char separator) {
  std::vector<std::pair<std::string, std::string>> out;
  for (absl::string_view line : absl::StrSplit(text, '\n', absl::SkipEmpty())) {
    const size_t at = line.find(separator);
    if (at == absl::string_view::npos) {
      out.emplace_back(std::string(line), "");
    } else {
      out.emplace_back(std::string(line.substr(0, at)),
                       std::string(line.substr(at + 1)));
    }
  }
  return out;
}

}  // namespace

KernelClass ClassOfOp(const std::string& op) {
  const OpDef* def = OpRegistry::Global().Find(op);
  return def == nullptr ? KernelClass::kElementwise : def->cost;
}

std::string CostRates::ToString() const {
  return StrCat("matmul ", Rate(matmul_flops_per_s, "flop"), ", element-wise ",
                Rate(elementwise_bytes_per_s, "B"), ", transcendental ",
                Rate(transcendental_bytes_per_s, "B"), ", reductions ",
                Rate(reduction_bytes_per_s, "B"), ", per node ",
                Micros(node_overhead_s), ", Send/Recv ",
                Micros(transfer_latency_s), " + ",
                Rate(transfer_bytes_per_s, "B"));
}

absl::StatusOr<CostRates> MeasureCostRates(const std::string& type,
                                           int threads) {
  if (type != kDeviceCpu) {
    return absl::UnimplementedError(
        StrCat("no calibration for devices of type '", type, "'"));
  }
  return Calibrate(std::max(threads, 1));
}

std::string CpuModelName() {
  std::string text;
  ReadFileFailure failure;
  if (!ReadFileToString("/proc/cpuinfo", &text, &failure)) return "unknown";
  for (auto& [key, value] : KeyValueLines(text, ':')) {
    if (key.rfind("model name", 0) != 0) continue;
    const size_t start = value.find_first_not_of(" \t");
    if (start != std::string::npos) return value.substr(start);
  }
  return "unknown";
}

CostModel::CostModel(std::string cache_dir, Measure measure)
    : cache_dir_(std::move(cache_dir)), measure_(std::move(measure)) {}

std::string CostModel::DefaultCacheDir() {
  const char* off = std::getenv("RUNNEL_COST_CACHE");
  const char* xdg = std::getenv("XDG_CACHE_HOME");
  const char* home = std::getenv("HOME");
  if (off != nullptr && std::string(off) == "off") return "";
  // The XDG base directory spec ignores a relative path.
  if (xdg != nullptr && xdg[0] == '/') return StrCat(xdg, "/runnel");
  if (home != nullptr && home[0] != '\0') {
    return StrCat(home, "/.cache/runnel");
  }
  return "";
}

CostModel& CostModel::Global() {
  static CostModel* const model = new CostModel(DefaultCacheDir());
  return *model;
}

std::string CostModel::CacheFile(const std::string& type, int threads) const {
  if (cache_dir_.empty()) return "";
  return StrCat(cache_dir_, "/cost-model-", type, "-t", threads, ".txt");
}

std::string CostModel::Serialize(const std::string& type, int threads,
                                 const CostRates& rates) {
  std::string text =
      StrCat(kMagic, " ", kFormatVersion, "\n", "cpu_model ", CpuModelName(),
             "\n", "device ", type, "\n", "threads ", threads, "\n");
  for (const Field& f : kFields) {
    text += StrCat(f.name, " ", rates.*f.member, "\n");
  }
  return text;
}

bool CostModel::Parse(const std::string& text, const std::string& type,
                      int threads, CostRates* rates) {
  absl::flat_hash_map<std::string, std::string> values;
  for (auto& [key, value] : KeyValueLines(text, ' ')) {
    if (!values.emplace(key, value).second) return false;  // a field twice
  }
  if (values.size() != 4 + std::size(kFields) ||
      values[kMagic] != StrCat(kFormatVersion) ||
      values["cpu_model"] != CpuModelName() || values["device"] != type ||
      values["threads"] != StrCat(threads)) {
    return false;
  }
  CostRates parsed;
  for (const Field& f : kFields) {
    double v = 0;
    if (!absl::SimpleAtod(values[f.name], &v) || !std::isfinite(v) || v <= 0) {
      return false;
    }
    parsed.*f.member = v;
  }
  *rates = parsed;
  return true;
}

CostModel::Entry& CostModel::Lookup(const std::string& type, int threads) {
  const auto key = std::make_pair(type, threads);
  auto it = entries_.find(key);
  if (it != entries_.end()) return it->second;
  Entry& entry = entries_[key];
  const std::string path = CacheFile(type, threads);
  if (!path.empty()) {
    const Clock::time_point start = Clock::now();
    std::string text;
    ReadFileFailure failure;
    if (ReadFileToString(path, &text, &failure) &&
        Parse(text, type, threads, &entry.rates)) {
      entry.source =
          StrCat("read from ", path, " in ", Millis(SecondsSince(start)));
      return entry;
    }
  }
  const Clock::time_point start = Clock::now();
  absl::StatusOr<CostRates> measured = measure_(type, threads);
  if (!measured.ok()) {
    entry.source = StrCat("defaults (", measured.status().message(), ")");
    return entry;
  }
  entry.rates = *measured;
  entry.source = StrCat("measured in ", Millis(SecondsSince(start)));
  if (path.empty()) return entry;
  // A cache that cannot be written costs the next process a calibration.
  std::error_code ignored;
  std::filesystem::create_directories(cache_dir_, ignored);
  const std::string text = Serialize(type, threads, entry.rates);
  AtomicFile file(path, "cost model cache");
  const absl::Status written = [&]() -> absl::Status {
    RN_RETURN_IF_ERROR(file.Create());
    RN_RETURN_IF_ERROR(file.Write(text.data(), text.size()));
    return file.Commit();
  }();
  entry.source += written.ok() ? StrCat(", saved in ", path)
                               : StrCat(", not saved: ", written.message());
  return entry;
}

CostRates CostModel::RatesFor(const std::string& type, int threads) {
  std::lock_guard<std::mutex> lock(mu_);
  return Lookup(type, threads).rates;
}

std::string CostModel::SourceOf(const std::string& type, int threads) {
  std::lock_guard<std::mutex> lock(mu_);
  return Lookup(type, threads).source;
}

}  // namespace runnel
