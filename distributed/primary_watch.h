// Finds a replicated task's silent primary (stopped, or cut off without a
// reset) sooner than the channel's keepalive pings do, which took 0.9 to
// 1.7 s, most of the 2 s a failover may take (docs/cluster.md,
// "Replicated parameter servers").
//
// The calls a worker makes to a primary (RunGraph, RecvTensor) are added
// to the watch while they are out. Once one has been out for
// `quiet_s`, the watch asks that primary for its status (`probe`, a call
// with a short deadline that the primary's server answers on any of its
// threads, whatever its partitions wait for). When the probe gets no
// answer, every call out to that address is cancelled and ends as
// Unavailable, so the worker resolves the task again (a backup takes
// over) instead of waiting for the keepalive. A primary that answers is
// asked again at most every `quiet_s` while calls to it stay out (a
// synchronous step waits at a barrier for the other workers).
//
//   PrimaryWatch watch(probe, {});
//   const int64_t id = watch.Add(address, call->ctx);  // a shared_ptr
//   ... the call ends ...
//   std::optional<std::string> why = watch.Remove(id);  // cancelled by it?
#ifndef RUNNEL_DISTRIBUTED_PRIMARY_WATCH_H_
#define RUNNEL_DISTRIBUTED_PRIMARY_WATCH_H_

#include <grpcpp/client_context.h>

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"

namespace runnel {

class PrimaryWatch {
 public:
  // Asks the task at `address` for its status within `deadline_s`, and
  // calls `answered` with whether it did (on any thread, once).
  using Probe =
      std::function<void(const std::string& address, double deadline_s,
                         std::function<void(bool answered)>)>;
  struct Options {
    double quiet_s = 0.3;     // a call out this long gets its task probed
    double deadline_s = 0.5;  // the probe's answer must come within this
    double tick_s = 0.05;     // how often the watch looks at the calls
  };

  PrimaryWatch(Probe probe, Options options);
  ~PrimaryWatch() { Stop(); }
  PrimaryWatch(const PrimaryWatch&) = delete;
  PrimaryWatch& operator=(const PrimaryWatch&) = delete;

  // A call to the primary at `address`, cancelled through `ctx` when the
  // primary does not answer a probe (the watch holds `ctx` while it
  // cancels: a call's callback may run within TryCancel). Returns the
  // call's id for Remove.
  int64_t Add(const std::string& address,
              std::shared_ptr<grpc::ClientContext> ctx);
  // The call `id` ended (before its context goes): why the watch cancelled
  // it ("no answer to a status probe within 0.3 s"), or nothing.
  std::optional<std::string> Remove(int64_t id);

  // Stops the watch (the calls out are not cancelled; probes out may
  // still cancel theirs). Idempotent.
  void Stop();

  // How many probes went unanswered (tests).
  int64_t silent_probes() const;

 private:
  using Clock = std::chrono::steady_clock;
  struct Call {
    std::string address;
    std::shared_ptr<grpc::ClientContext> ctx;
    Clock::time_point start;
    std::optional<std::string> cancelled;
  };
  struct Address {
    bool probing = false;
    Clock::time_point last_probe;
  };
  // Shared with the probes' callbacks, which may end after the watch.
  struct State {
    std::mutex mu;
    std::condition_variable cv;
    bool stopping = false;
    int64_t next_id = 1;
    absl::flat_hash_map<int64_t, Call> calls;
    absl::flat_hash_map<std::string, Address> addresses;
    int64_t silent_probes = 0;
  };

  void Loop();
  // The probe of `address` came back.
  static void Answered(State& state, const std::string& address, bool answered,
                       double deadline_s);

  const Probe probe_;
  const Options options_;
  const std::shared_ptr<State> state_ = std::make_shared<State>();
  std::thread thread_;  // started with the first call
};

}  // namespace runnel

#endif  // RUNNEL_DISTRIBUTED_PRIMARY_WATCH_H_
