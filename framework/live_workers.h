// Which workers of a cluster are alive, as a parameter server sees them
// (docs/cluster.md): each worker sends a heartbeat every half second and a
// last one when it leaves. A worker that left, or that has been silent for
// 3 seconds after its first heartbeat, no longer counts; one never heard
// from counts (it may still be starting). Synchronous replicas wait for
// min(replicas, live workers) gradients, so the last workers never wait for
// ones that are gone.
//
// The task's Worker keeps one in its device's resources as
// "_live_workers"; without one (a local run) there is one live worker.
#ifndef RUNNEL_FRAMEWORK_LIVE_WORKERS_H_
#define RUNNEL_FRAMEWORK_LIVE_WORKERS_H_

#include <chrono>
#include <condition_variable>
#include <functional>
#include <map>
#include <mutex>
#include <string>
#include <thread>

#include "framework/resource_mgr.h"

namespace runnel {

class LiveWorkers : public Resource {
 public:
  static constexpr char kName[] = "_live_workers";
  // `expected`: the workers of the cluster spec.
  explicit LiveWorkers(int expected);
  ~LiveWorkers() override;

  void Beat(const std::string& task, bool leaving);
  int Count() const;
  // Whether `task` counts (as above: never heard from, it does).
  bool Alive(const std::string& task) const;
  // Called (on another thread) whenever Count may have changed. Returns an
  // id for Unsubscribe.
  int Subscribe(std::function<void()> on_change);
  void Unsubscribe(int id);

 private:
  void Watch();
  void Notify();

  const int expected_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  bool stop_ = false;
  struct Seen {
    std::chrono::steady_clock::time_point last;
    bool left = false;
    bool silent = false;
  };
  std::map<std::string, Seen> seen_;
  std::map<int, std::function<void()>> subscribers_;
  int next_id_ = 0;
  std::thread watcher_;
};

}  // namespace runnel

#endif  // RUNNEL_FRAMEWORK_LIVE_WORKERS_H_
