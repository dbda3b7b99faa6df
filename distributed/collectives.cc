#include "distributed/collectives.h"

#include <chrono>
#include <cstring>
#include <memory>
#include <thread>
#include <utility>
#include <vector>

#include "base/strings.h"
#include "common_runtime/rendezvous.h"

namespace runnel {
namespace {

std::string WorkerDevice(int i) {
  return StrCat("/job:worker/task:", i, "/device:cpu:0");
}

// Worker `from`'s tensor for worker `to` in a group's call (the call
// number in the iteration's place). A key is received once, so each other
// worker has its own.
std::string CallKey(int from, int to, const std::string& group, int64_t call,
                    int64_t step) {
  return RendezvousKey(WorkerDevice(from), WorkerDevice(to), group, 0, call,
                       step);
}

// "f32[3, 4]"
std::string TypeOf(const Tensor& t) {
  return StrCat(DTypeName(t.dtype()), t.shape().ToString());
}

template <typename T>
void AddInto(Tensor* sum, const Tensor& x) {
  T* s = sum->data<T>();
  const T* v = x.data<T>();
  const int64_t n = x.num_elements();
  for (int64_t i = 0; i < n; ++i) s[i] += v[i];
}

}  // namespace

// How long a worker that has never answered counts as starting.
constexpr double kStartSeconds = 60;

// One call of a group: every worker's tensor, as they arrive.
struct WorkerCollectives::Call {
  std::string group;
  int64_t call = 0;
  std::shared_ptr<StepRendezvous> rendezvous;  // the call's (CallStep)
  std::chrono::steady_clock::time_point started;
  std::mutex mu;
  std::vector<Tensor> parts;
  int missing = 0;
  absl::Status status;
  Done done;
};

int64_t WorkerCollectives::CallStep(const std::string& group, int64_t call) {
  // FNV-1a: the same in every process (absl's hash is seeded per process).
  uint64_t h = 14695981039346656037ull;
  auto mix = [&h](unsigned char c) {
    h ^= c;
    h *= 1099511628211ull;
  };
  for (char c : group) mix(static_cast<unsigned char>(c));
  for (int i = 0; i < 8; ++i) {
    mix(static_cast<unsigned char>(static_cast<uint64_t>(call) >> (8 * i)));
  }
  // Negative: a run's step ids are positive (GrpcCluster::NewStepId).
  return -1 - static_cast<int64_t>(h >> 2);
}

void WorkerCollectives::AllReduceSum(const std::string& group, const Tensor& x,
                                     Done done) {
  int64_t call = 0;
  {
    std::lock_guard<std::mutex> lock(mu_);
    Group& g = groups_[group];
    if (g.busy) {
      done(absl::FailedPreconditionError(StrCat(
          "all_reduce '", group,
          "' was called again before its previous call ended (two runs at "
          "once, or a loop whose iterations overlap): the workers could pair "
          "the calls differently, so it is refused")));
      return;
    }
    g.busy = true;
    call = g.next_call++;
  }
  // This worker ended call - 1, so every worker has begun it and thus ended
  // call - 2, reading this worker's tensor of that call: it can go.
  if (call >= 2) worker_->EndStep(CallStep(group, call - 2));
  const int64_t step = CallStep(group, call);
  std::shared_ptr<StepRendezvous> r = worker_->Step(step);
  auto state = std::make_shared<Call>();
  state->group = group;
  state->call = call;
  state->parts.resize(static_cast<size_t>(num_workers_));
  state->parts[static_cast<size_t>(index_)] = x;
  state->missing = num_workers_ - 1;
  state->done = std::move(done);
  for (int j = 0; j < num_workers_; ++j) {
    if (j == index_) continue;
    const std::string key = CallKey(index_, j, group, call, step);
    if (absl::Status s = r->Send(key, x, false); !s.ok()) {
      state->status = s;
      state->missing = 0;
      Finish(state);
      return;
    }
    std::lock_guard<std::mutex> lock(mu_);
    sent_[group].push_back({step, key});
    // Only the last two calls' tensors can still be waiting for a reader.
    if (sent_[group].size() > 2 * static_cast<size_t>(num_workers_ - 1)) {
      sent_[group].pop_front();
    }
  }
  if (state->missing == 0) {
    Finish(state);
    return;
  }
  state->rendezvous = std::move(r);
  state->started = std::chrono::steady_clock::now();
  for (int j = 0; j < num_workers_; ++j) {
    if (j != index_) Fetch(state, j);
  }
}

void WorkerCollectives::Fetch(const std::shared_ptr<Call>& state, int from) {
  auto arrive = [this, state, from](const absl::Status& s, const Tensor& v,
                                    bool dead) {
    Arrive(state, from, s, v, dead);
  };
  absl::Status status;
  Tensor value;
  bool dead = false;
  const int64_t step = CallStep(state->group, state->call);
  if (state->rendezvous->Recv(
          CallKey(from, index_, state->group, state->call, step), arrive,
          &status, &value, &dead)) {
    arrive(status, value, dead);
  }
}

bool WorkerCollectives::Drain(double seconds) {
  std::vector<std::pair<int64_t, std::string>> sent;
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (const auto& [group, keys] : sent_) {
      sent.insert(sent.end(), keys.begin(), keys.end());
    }
  }
  const auto deadline =
      std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
  for (const auto& [step, key] : sent) {
    while (worker_->Step(step)->Holds(key)) {
      if (std::chrono::steady_clock::now() > deadline) return false;
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
  }
  return true;
}

void WorkerCollectives::Arrive(const std::shared_ptr<Call>& state, int from,
                               const absl::Status& s, const Tensor& v,
                               bool dead) {
  // A worker that has never answered may still be starting (workers start
  // in any order): it is asked again, for up to kStartSeconds.
  if (absl::IsUnavailable(s)) {
    bool starting;
    {
      std::lock_guard<std::mutex> lock(mu_);
      starting = !answered_.contains(from);
    }
    if (starting && std::chrono::steady_clock::now() - state->started <
                        std::chrono::duration<double>(kStartSeconds)) {
      std::thread([this, state, from] {
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
        Fetch(state, from);
      }).detach();
      return;
    }
  } else if (s.ok()) {
    std::lock_guard<std::mutex> lock(mu_);
    answered_.insert(from);
  }
  {
    std::lock_guard<std::mutex> lock(state->mu);
    const Tensor& mine = state->parts[static_cast<size_t>(index_)];
    if (state->status.ok()) {
      if (!s.ok()) {
        state->status = absl::Status(
            s.code(),
            StrCat("all_reduce '", state->group, "' (call ", state->call,
                   "): from ", WorkerDevice(from), ": ", s.message()));
      } else if (dead || v.dtype() != mine.dtype() ||
                 v.shape() != mine.shape()) {
        state->status = absl::InvalidArgumentError(
            StrCat("all_reduce '", state->group, "' (call ", state->call,
                   "): ", WorkerDevice(from), " gave ",
                   dead ? std::string("no value") : TypeOf(v), ", ",
                   WorkerDevice(index_), " ", TypeOf(mine),
                   ": every worker must reduce the same tensors"));
      } else {
        state->parts[static_cast<size_t>(from)] = v;
      }
    }
    if (--state->missing > 0) return;
  }
  Finish(state);
}

void WorkerCollectives::Finish(const std::shared_ptr<Call>& state) {
  absl::StatusOr<Tensor> result = absl::UnknownError("no sum");
  if (!state->status.ok()) {
    result = state->status;
  } else {
    const Tensor& first = state->parts[0];
    Tensor sum(first.dtype(), first.shape());
    std::memcpy(sum.raw_data(), first.raw_data(), first.bytes());
    for (size_t i = 1; i < state->parts.size(); ++i) {
      if (sum.dtype() == DType::kF64) {
        AddInto<double>(&sum, state->parts[i]);
      } else {
        AddInto<float>(&sum, state->parts[i]);
      }
    }
    result = std::move(sum);
  }
  {
    std::lock_guard<std::mutex> lock(mu_);
    groups_[state->group].busy = false;
  }
  state->done(std::move(result));
}

}  // namespace runnel
