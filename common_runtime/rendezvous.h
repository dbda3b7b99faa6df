// Rendezvous: where a step's Send and Recv nodes meet. The partitioner
// (common_runtime/partition.h) cuts every edge between devices into a `_send`
// on the producer's device and a `_recv` on the consumer's; both name the same
// key, made of the devices, the edge, the loop frame and iteration the value
// belongs to, and the step:
//
//   /job:localhost/task:0/device:cpu:0;/job:localhost/task:0/device:cpu:1;
//   layer1/h:0;frame 0:0;step 7
//
// A value may arrive before or after its receiver asks for it. Dead values
// (an untaken branch) cross too, so an `if` may span devices. When any
// partition of the step fails, Abort hands the error to every waiting and
// later receiver, so no partition waits for a value that will never come.
#ifndef RUNNEL_COMMON_RUNTIME_RENDEZVOUS_H_
#define RUNNEL_COMMON_RUNTIME_RENDEZVOUS_H_

#include <cstdint>
#include <functional>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "framework/tensor.h"

namespace runnel {

// The key of one transfer. `edge` is the producer's output ("node:0");
// `frame` and `iteration` place it in the loops (0 and 0 outside them).
std::string RendezvousKey(std::string_view src_device,
                          std::string_view dst_device, std::string_view edge,
                          uint64_t frame, int64_t iteration, int64_t step);
// The devices a key made by RendezvousKey names.
std::string_view SrcDeviceOfKey(std::string_view key);
std::string_view DstDeviceOfKey(std::string_view key);

class Rendezvous {
 public:
  virtual ~Rendezvous() = default;

  // Called once with the value (or an empty tensor when `is_dead`), or with
  // the error that aborted the step.
  using Done =
      std::function<void(const absl::Status&, const Tensor&, bool is_dead)>;

  // Delivers a value. A second send of one key is an internal error.
  absl::Status Send(const std::string& key, Tensor value, bool is_dead);
  // The value of `key`. When it is already there (or the step has been
  // aborted), returns true with it in `*status`, `*value` and `*is_dead`,
  // and `done` is dropped. Otherwise returns false and calls `done` later,
  // on the sender's thread (or the aborting one).
  // (A cluster's rendezvous fetches keys sent on other tasks from there.)
  virtual bool Recv(const std::string& key, Done done, absl::Status* status,
                    Tensor* value, bool* is_dead);
  // The keys of values this step will receive here, known as its
  // partitions start: a cluster's rendezvous asks each task for those it
  // sends in one call, instead of one call a value. Nothing here.
  virtual void Prefetch(const std::vector<std::string>& keys) { (void)keys; }
  // Fails every pending and later receive with `status` (the first abort
  // wins). Returns whether this call was the first.
  virtual bool Abort(const absl::Status& status);
  // The error the step was aborted with; OK while it was not.
  absl::Status AbortStatus();
  // Whether a value sent under `key` waits for its receiver.
  bool Holds(const std::string& key);
  // Whether a receiver waits for `key` now (so a test can send after it
  // asked, without guessing how long asking takes).
  bool HasWaiter(const std::string& key);

  // A value sent and not received yet.
  struct Held {
    std::string key;
    Tensor value;
    bool is_dead = false;
  };
  using KeyFilter = std::function<bool(const std::string& key)>;
  // Takes out the held values whose keys `which` picks (a run that hands
  // its values back with its answer); `*rest`: whether anything else is
  // left, a value or a waiting receiver.
  std::vector<Held> Take(const KeyFilter& which, bool* rest);
  // Fails the receivers waiting now for keys that `which` picks, with
  // `status` (values that will not come).
  void FailWaiters(const KeyFilter& which, const absl::Status& status);

 private:
  struct Item {
    bool has_value = false;
    Tensor value;
    bool is_dead = false;
    Done waiter;  // set while a receiver waits
  };
  std::mutex mu_;
  absl::Status aborted_;
  absl::flat_hash_map<std::string, Item> items_;
};

}  // namespace runnel

#endif  // RUNNEL_COMMON_RUNTIME_RENDEZVOUS_H_
