// Running an executor (executor.h): the state of one run and the
// scheduling of ready nodes. Building it (the plan) is executor.cc; the
// state of frames and iterations is executor_frames.h.
#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <map>
#include <mutex>
#include <optional>
#include <thread>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/container/inlined_vector.h"
#include "base/errors.h"
#include "base/random.h"
#include "base/strings.h"
#include "common_runtime/executor.h"
#include "common_runtime/executor_frames.h"
#include "framework/device_set.h"

namespace runnel {

// A one-shot event. Built on std::mutex and std::condition_variable, which
// ThreadSanitizer sees (Debian's Abseil is not built with its annotations).
class Notification {
 public:
  void Notify() {
    std::lock_guard<std::mutex> lock(mu_);
    notified_ = true;
    cv_.notify_all();
  }
  void Wait() {
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait(lock, [this] { return notified_; });
  }
  // Whether notified within `timeout`.
  bool WaitFor(std::chrono::milliseconds timeout) {
    std::unique_lock<std::mutex> lock(mu_);
    return cv_.wait_for(lock, timeout, [this] { return notified_; });
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  bool notified_ = false;
};

// Per-Run state; deleted when the root frame's iteration is done.
class ExecutorState {
 public:
  ExecutorState(const Executor& ex, const Executor::RunArgs& args)
      : ex_(ex),
        args_(args),
        track_(args.trace_lane.empty()
                   ? ex.track_
                   : StrCat(ex.track_, " ", args.trace_lane)) {
    root_.def = &ex.frames_[0];
    root_.iterations[0] = std::make_unique<IterationState>(ex.frames_[0]);
  }

  absl::Status RunToCompletion() {
    Start(/*here=*/true);
    return Wait();
  }

  // Starts the roots: on this thread (`here`), or all on the pool.
  void Start(bool here) {
    if (ex_.roots_.empty()) {
      done_.Notify();
      return;
    }
    IterationState* is = root_.iterations[0].get();
    std::vector<TaggedNode> ready;
    for (int r : ex_.roots_) ready.push_back({r, &root_, 0, is});
    is->outstanding_ops.store(static_cast<int>(ready.size()));
    std::deque<TaggedNode> inline_ready;
    ScheduleReady(ready, &inline_ready);
    if (here) {
      Process(std::move(inline_ready));
    } else if (!inline_ready.empty()) {
      ex_.pool_->Schedule([this, q = std::move(inline_ready)] { Process(q); });
    }
  }

  absl::Status Wait() {
    // The cancelled flag and the rendezvous are read here too, not only
    // when a node is scheduled: a kernel that waits (a blocked dequeue)
    // schedules nothing, and is cancelled by Abort.
    while (!done_.WaitFor(kPollInterval)) {
      if (aborted_.load(std::memory_order_relaxed)) continue;
      if (args_.cancelled != nullptr &&
          args_.cancelled->load(std::memory_order_relaxed)) {
        Abort(absl::CancelledError("interrupted"));
      } else if (args_.rendezvous != nullptr) {
        absl::Status s = args_.rendezvous->AbortStatus();
        if (!s.ok()) Abort(s);
      }
    }
    // A thread that finished a node may still be on its way out of the
    // frames it touched (they belong to this state): wait until none is.
    while (active_.load(std::memory_order_acquire) != 0) {
      std::this_thread::yield();
    }
    std::lock_guard<std::mutex> lock(mu_);
    return status_;
  }

 private:
  using Outputs = std::vector<Tensor>;
  // Per output: dead or not (inline: no allocation per node).
  using DeadMask = absl::InlinedVector<bool, 4>;
  using Ready = std::vector<TaggedNode>;

  void Process(std::deque<TaggedNode> inline_ready) {
    active_.fetch_add(1, std::memory_order_acq_rel);
    ProcessQueue(std::move(inline_ready));
    active_.fetch_sub(1, std::memory_order_acq_rel);
  }

  void ProcessQueue(std::deque<TaggedNode> inline_ready) {
    Ready ready;
    // An expensive node this thread runs once its queue is empty.
    std::optional<TaggedNode> deferred;
    // One list for every node's outputs, so its buffer is allocated once;
    // likewise their deadness.
    Outputs outputs;
    DeadMask dead;
    while (!inline_ready.empty() || deferred) {
      if (inline_ready.empty()) {
        inline_ready.push_back(*deferred);
        deferred.reset();
      }
      TaggedNode tn = inline_ready.front();
      inline_ready.pop_front();
      const Executor::NodeItem& item = ex_.items_[tn.item];
      Entry* in = tn.state->inputs.data() + item.input_start;
      outputs.clear();
      // (resize and fill: assign() is not inlined, and this runs for
      // every node)
      dead.resize(item.node->num_outputs());
      std::fill(dead.begin(), dead.end(), false);
      bool is_dead = false;
      if (item.kind == Executor::Kind::kMerge) {
        is_dead = !RunMerge(item, in, &outputs);
      } else {
        is_dead =
            item.kind != Executor::Kind::kControlTrigger &&
            tn.state->dead_controls[item.local].load(std::memory_order_relaxed);
        for (int i = 0; i < item.num_inputs; ++i) is_dead |= in[i].is_dead;
        if (!is_dead && args_.cancelled != nullptr &&
            args_.cancelled->load(std::memory_order_relaxed)) {
          Abort(absl::CancelledError("interrupted"));
        }
        const bool aborted = aborted_.load(std::memory_order_relaxed);
        if (item.kind == Executor::Kind::kSend) {
          // Dead values cross too: the receiver's side of an `if` dies.
          if (!aborted) Send(tn, item, in[0], is_dead);
        } else if (item.kind == Executor::Kind::kRecv && !is_dead && !aborted) {
          // Later, on the sender's thread, when the value is not here yet.
          if (!Recv(tn, item, &outputs, &is_dead)) continue;
        } else if (item.kind == Executor::Kind::kAsync && !is_dead &&
                   !aborted) {
          // FinishAsync completes it, on whichever thread calls `done`.
          StartAsync(tn, item, in);
          for (int i = 0; i < item.num_inputs; ++i) in[i] = Entry();
          continue;
        } else if (!is_dead && !aborted) {
          is_dead = item.forwards && args_.tracer == nullptr
                        ? !Forward(item, in, &outputs, &dead)
                        : !RunKernel(tn, item, in, &outputs, &dead);
        } else {
          is_dead = true;
        }
      }
      if (is_dead) std::fill(dead.begin(), dead.end(), true);
      if (outputs.size() != dead.size()) outputs.resize(dead.size());
      // Inputs are no longer needed: release their buffers now.
      for (int i = 0; i < item.num_inputs; ++i) in[i] = Entry();

      ready.clear();
      const int made_ready = Propagate(tn, item, &outputs, dead, &ready);
      // After the run's last node, `this` may be gone: touch nothing.
      if (NodeDone(tn, &ready, made_ready)) return;
      ScheduleReady(ready, &inline_ready, &deferred);
    }
  }

  std::string TransferKey(const TaggedNode& tn,
                          const Executor::NodeItem& item) const {
    return RendezvousKey(item.send_device, item.recv_device, item.edge,
                         tn.frame->id, tn.iter, args_.step_id);
  }

  // Values cross in host memory (framework/device.h): a GPU's sends are
  // copied out of it, its receives into it.
  void Send(const TaggedNode& tn, const Executor::NodeItem& item,
            const Entry& value, bool is_dead) {
    absl::Status s;
    if (args_.rendezvous == nullptr) {
      s = absl::FailedPreconditionError("_send outside a partitioned step");
    } else if (args_.before_send && !(s = args_.before_send()).ok()) {
      // (s says why)
    } else {
      absl::StatusOr<Tensor> host = is_dead ? Tensor() : value.tensor;
      if (!is_dead && !item.input_copy.empty() &&
          item.input_copy[0] == Executor::MemoryCopy::kToHost) {
        host = ex_.device_->CopyToHost(value.tensor);
      }
      s = host.ok() ? args_.rendezvous->Send(TransferKey(tn, item),
                                             *std::move(host), is_dead)
                    : host.status();
    }
    if (!s.ok()) Abort(AttachNode(s, item.node->name(), item.node->span()));
  }

  // A received value in the memory its consumers take it in.
  absl::Status ToDevice(const Executor::NodeItem& item, Tensor* value) {
    if (item.output_in_host[0]) return absl::OkStatus();
    absl::StatusOr<Tensor> t = ex_.device_->CopyFromHost(*value);
    if (!t.ok())
      return AttachNode(t.status(), item.node->name(), item.node->span());
    *value = *std::move(t);
    return absl::OkStatus();
  }

  // Whether the value is here (in `outputs`, or dead); if not, FinishRecv
  // completes the node when it comes.
  bool Recv(const TaggedNode& tn, const Executor::NodeItem& item,
            Outputs* outputs, bool* is_dead) {
    if (args_.rendezvous == nullptr) {
      Abort(AttachNode(
          absl::FailedPreconditionError("_recv outside a partitioned step"),
          item.node->name(), item.node->span()));
      *is_dead = true;
      return true;
    }
    absl::Status s;
    Tensor value;
    bool dead = false;
    const bool here = args_.rendezvous->Recv(
        TransferKey(tn, item),
        [this, tn](const absl::Status& s, const Tensor& v, bool dead) {
          FinishRecv(tn, s, v, dead);
        },
        &s, &value, &dead);
    if (!here) return false;
    if (s.ok() && !dead) s = ToDevice(item, &value);
    if (!s.ok()) Abort(s);
    outputs->assign(1, std::move(value));
    *is_dead = dead || !s.ok();
    return true;
  }

  void FinishRecv(const TaggedNode& tn, absl::Status s, const Tensor& value,
                  bool dead) {
    active_.fetch_add(1, std::memory_order_acq_rel);
    Outputs outputs{value};
    if (s.ok() && !dead) s = ToDevice(ex_.items_[tn.item], &outputs[0]);
    if (!s.ok()) Abort(s);
    DeadMask mask(1, dead || !s.ok());
    FinishLater(tn, &outputs, mask);
  }

  // Completes a node that finished after its thread moved on (a receive or
  // an asynchronous kernel), on the calling thread; Finish* raised active_.
  void FinishLater(const TaggedNode& tn, Outputs* outputs,
                   const DeadMask& mask) {
    Ready ready;
    const int made_ready =
        Propagate(tn, ex_.items_[tn.item], outputs, mask, &ready);
    if (!NodeDone(tn, &ready, made_ready)) {
      std::deque<TaggedNode> inline_ready;
      ScheduleReady(ready, &inline_ready);
      ProcessQueue(std::move(inline_ready));
    }
    active_.fetch_sub(1, std::memory_order_acq_rel);
  }

  // Starts an asynchronous kernel; its `done` finishes the node.
  void StartAsync(const TaggedNode& tn, const Executor::NodeItem& item,
                  Entry* in) {
    struct Call {
      std::vector<Tensor> inputs;
      std::unique_ptr<OpKernelContext> ctx;
    };
    auto call = std::make_shared<Call>();
    if (absl::Status s = InputsToKernelMemory(item, in); !s.ok()) {
      FinishAsync(tn, s, nullptr);
      return;
    }
    KernelInputs inputs;
    call->inputs.reserve(item.num_inputs);
    for (int i = 0; i < item.num_inputs; ++i) {
      call->inputs.push_back(in[i].tensor);
      inputs.push_back(&call->inputs.back());
    }
    call->ctx = std::make_unique<OpKernelContext>(
        *item.node, ex_.device_, std::move(inputs), args_.global_seed,
        args_.call_frame, &step_);
    call->ctx->set_frame_iter(tn.frame->id, tn.iter);
    call->ctx->set_update(args_.update);
    call->ctx->set_cancellation(&cancellation_);
    const double start = args_.tracer != nullptr ? args_.tracer->Now() : 0;
    static_cast<AsyncOpKernel*>(item.kernel.get())
        ->ComputeAsync(call->ctx.get(),
                       [this, tn, call, start](absl::Status s) {
                         Trace(ex_.items_[tn.item], start);
                         FinishAsync(tn, s, call->ctx.get());
                       });
  }

  // A kernel's event from `start` to now, when tracing (an asynchronous
  // kernel's covers its wait: a dequeue waiting for input shows).
  void Trace(const Executor::NodeItem& item, double start) {
    if (args_.tracer == nullptr) return;
    const Node& n = *item.node;
    args_.tracer->Add(
        track_, n.name(),
        n.span().known() ? StrCat(n.op(), " at ", n.span().ToString()) : n.op(),
        start, args_.tracer->Now() - start);
  }

  void FinishAsync(const TaggedNode& tn, const absl::Status& s,
                   OpKernelContext* ctx) {
    active_.fetch_add(1, std::memory_order_acq_rel);
    const Executor::NodeItem& item = ex_.items_[tn.item];
    if (!s.ok()) Abort(AttachNode(s, item.node->name(), item.node->span()));
    Outputs outputs = s.ok() ? std::move(ctx->outputs()) : Outputs();
    DeadMask mask(item.node->num_outputs(), !s.ok());
    for (size_t i = 0; s.ok() && i < mask.size(); ++i) {
      mask[i] = ctx->output_dead(i);
    }
    outputs.resize(mask.size());
    FinishLater(tn, &outputs, mask);
  }

  // `t` in the memory input `i` of `item` takes it in (AssignMemory).
  absl::Status ToKernelMemory(const Executor::NodeItem& item, int i,
                              Tensor* t) {
    if (item.input_copy.empty()) return absl::OkStatus();
    absl::StatusOr<Tensor> copy;
    switch (item.input_copy[i]) {
      case Executor::MemoryCopy::kNone:
        return absl::OkStatus();
      case Executor::MemoryCopy::kToHost:
        // A constant's value is on the host already (its attribute): no
        // copy, and no wait for the device (reshape's shape, say).
        if (const Node* src = item.node->input(i).node; src->op() == "const") {
          absl::StatusOr<Tensor> value = src->attr<Tensor>("value");
          if (value.ok()) {
            *t = *std::move(value);
            return absl::OkStatus();
          }
        }
        copy = ex_.device_->CopyToHost(*t);
        break;
      case Executor::MemoryCopy::kToDevice:
        copy = ex_.device_->CopyFromHost(*t);
        break;
    }
    if (!copy.ok()) return copy.status();
    *t = *std::move(copy);
    return absl::OkStatus();
  }

  absl::Status InputsToKernelMemory(const Executor::NodeItem& item, Entry* in) {
    for (size_t i = 0; i < item.input_copy.size(); ++i) {
      RN_RETURN_IF_ERROR(
          ToKernelMemory(item, static_cast<int>(i), &in[i].tensor));
    }
    return absl::OkStatus();
  }

  // Whether the kernel ran and gave live outputs (per-output deadness in
  // `dead`); an error aborts the run.
  bool RunKernel(const TaggedNode& tn, const Executor::NodeItem& item,
                 Entry* in, Outputs* outputs, DeadMask* dead) {
    if (absl::Status s = InputsToKernelMemory(item, in); !s.ok()) {
      Abort(AttachNode(s, item.node->name(), item.node->span()));
      return false;
    }
    KernelInputs inputs(item.num_inputs);
    for (int i = 0; i < item.num_inputs; ++i) inputs[i] = &in[i].tensor;
    OpKernelContext ctx(*item.node, ex_.device_, std::move(inputs),
                        args_.global_seed, args_.call_frame, &step_, outputs);
    ctx.set_frame_iter(tn.frame->id, tn.iter);
    ctx.set_update(args_.update);
    ctx.set_cancellation(&cancellation_);
    ctx.set_output_in_host(&item.output_in_host);
    ctx.allow_input_forwarding();  // `in` is cleared after the kernel runs
    const double start = args_.tracer != nullptr ? args_.tracer->Now() : 0;
    const bool timed = ex_.Expensive(tn.item);
    const auto began = timed ? std::chrono::steady_clock::now()
                             : std::chrono::steady_clock::time_point();
    absl::Status s = ComputeSafely(*item.kernel, &ctx);
    if (timed) {
      ex_.Ran(tn.item, std::chrono::duration_cast<std::chrono::nanoseconds>(
                           std::chrono::steady_clock::now() - began)
                           .count());
    }
    Trace(item, start);
    if (!s.ok()) {
      Abort(AttachNode(s, item.node->name(), item.node->span()));
      return false;
    }
    *outputs = std::move(ctx.outputs());
    for (size_t i = 0; i < dead->size(); ++i) (*dead)[i] = ctx.output_dead(i);
    return true;
  }

  // What the kernel of a node that `forwards` does: a switch passes its
  // value to the output its predicate picks (the other is dead), a const
  // gives its value, the others pass their input to their output.
  bool Forward(const Executor::NodeItem& item, Entry* in, Outputs* outputs,
               DeadMask* dead) {
    if (absl::Status s = InputsToKernelMemory(item, in); !s.ok()) {
      Abort(AttachNode(s, item.node->name(), item.node->span()));
      return false;
    }
    outputs->resize(dead->size());
    if (item.num_inputs == 0) {
      (*outputs)[0] = item.value;
      return true;
    }
    int live = 0;
    if (item.kind == Executor::Kind::kSwitch) {
      live = in[1].tensor.data<bool>()[0] ? 1 : 0;
      (*dead)[1 - live] = true;
    }
    // As the kernel's set_output checks.
    if (absl::Status s =
            CheckOutputDType(*item.node, live, in[0].tensor.dtype());
        !s.ok()) {
      Abort(AttachNode(s, item.node->name(), item.node->span()));
      return false;
    }
    (*outputs)[live] = std::move(in[0].tensor);
    return true;
  }

  // A merge forwards its live input and that input's index.
  bool RunMerge(const Executor::NodeItem& item, Entry* in, Outputs* outputs) {
    if (aborted_.load(std::memory_order_relaxed)) return false;
    for (int i = 0; i < item.num_inputs; ++i) {
      if (in[i].has_value && !in[i].is_dead) {
        if (absl::Status s = ToKernelMemory(item, i, &in[i].tensor); !s.ok()) {
          Abort(AttachNode(s, item.node->name(), item.node->span()));
          return false;
        }
        outputs->push_back(std::move(in[i].tensor));
        if (!item.index_used) {
          outputs->emplace_back();  // nobody reads it: no reference to take
        } else {
          outputs->push_back(i < 2 ? merge_index_[i]
                                   : Tensor::ScalarOf(DType::kI32, i));
        }
        return true;
      }
    }
    return false;
  }

  // Delivers a node's outputs to its consumers: in the same iteration, or
  // into a loop (enter), out of it (exit) or to the next iteration. The
  // outputs are taken (moved) where they are used last. Returns how many
  // nodes of tn's own iteration it made ready without counting them in its
  // outstanding ops (NodeDone counts them).
  int Propagate(const TaggedNode& tn, const Executor::NodeItem& item,
                Outputs* outputs, const DeadMask& dead, Ready* ready) {
    using K = Executor::Kind;
    const bool all_dead = dead.empty() || dead[0];
    int made_ready = 0;
    switch (item.kind) {
      case K::kEnter:
        Enter(tn, item, *outputs, all_dead, ready);
        break;
      case K::kExit:
        if (all_dead) break;  // a dead exit counts when its frame ends
        {
          std::lock_guard<std::mutex> lock(tn.frame->mu);
          tn.frame->live_exits.insert(tn.item);
        }
        Activate(item, *outputs, true, dead, tn.frame->parent,
                 tn.frame->parent_iter, tn.frame->parent_state, ready);
        break;
      case K::kNextIteration:
        if (!all_dead) NextIteration(tn, item, *outputs, ready);
        break;
      default:
        Activate(item, *outputs, true, dead, tn.frame, tn.iter, tn.state, ready,
                 &made_ready);
    }
    return made_ready;
  }

  // Delivers `outputs` into iteration `is`; with `take`, each output is
  // moved into the slot of its last edge instead of copied there.
  // With `uncounted` (`is` is the iteration of the node that ran, whose
  // own count keeps it open until NodeDone), the nodes made ready are
  // counted there instead of one atomic add each.
  void Activate(const Executor::NodeItem& item, Outputs& outputs, bool take,
                const DeadMask& dead, FrameState* frame, int64_t iter,
                IterationState* is, Ready* ready, int* uncounted = nullptr) {
    auto make_ready = [&](int dst) {
      if (uncounted != nullptr) {
        ++*uncounted;
      } else {
        is->outstanding_ops.fetch_add(1, std::memory_order_relaxed);
      }
      ready->push_back({dst, frame, iter, is});
    };
    for (const Executor::OutEdge& e : item.out_edges) {
      const Executor::NodeItem& dst = ex_.items_[e.dst];
      Entry& slot = is->inputs[e.dst_slot];
      const bool out_dead = dead.empty() || dead[e.src_output];
      auto deliver = [&] {
        Tensor& value = outputs[e.src_output];
        slot.tensor = take && e.last ? std::move(value) : value;
      };
      if (dst.kind == Executor::Kind::kMerge) {
        if (!out_dead) {
          deliver();
          slot.has_value = true;
          if (is->pending[dst.local].exchange(0) == 1) make_ready(e.dst);
        } else {
          slot.is_dead = true;
          if (is->merge_dead[dst.local].fetch_add(1) + 1 ==
                  dst.merge_expected &&
              is->pending[dst.local].exchange(0) == 1) {
            make_ready(e.dst);
          }
        }
        continue;
      }
      if (out_dead) {
        slot.is_dead = true;
      } else {
        deliver();
      }
      if (!Fires(dst, is)) continue;
      if (dst.kind == Executor::Kind::kExit && out_dead) {
        // A dead exit does nothing when it runs (Propagate): a loop's
        // exits get one every iteration but the last. Its frame's end
        // gives the parent the dead value of an exit that never ran live.
        slot = Entry();
        continue;
      }
      make_ready(e.dst);
    }
    const bool node_dead = !dead.empty() && dead[0];
    for (int dst : item.control_out) {
      const Executor::NodeItem& d = ex_.items_[dst];
      if (node_dead) is->dead_controls[d.local].store(true);
      if (Fires(d, is)) make_ready(dst);
    }
  }

  // Whether this input, data or control, is the last `dst` waits for in
  // iteration `is`. A node that waits for one needs no count.
  static bool Fires(const Executor::NodeItem& dst, IterationState* is) {
    return dst.initial_pending == 1 ||
           is->pending[dst.local].fetch_sub(1, std::memory_order_acq_rel) == 1;
  }

  // ---- frames and iterations ------------------------------------------------

  void Enter(const TaggedNode& tn, const Executor::NodeItem& item,
             const Outputs& outputs, bool dead, Ready* ready) {
    FrameState* child = ChildFrame(tn, item.child_frame, ready);
    Entry value;
    if (!dead) value.tensor = outputs[0];
    value.is_dead = dead;
    bool enters_done = false;
    {
      std::lock_guard<std::mutex> lock(child->mu);
      const DeadMask d{dead};
      Outputs out{value.tensor};
      if (item.is_constant) {
        child->invariants.push_back({tn.item, out, dead});
        for (auto& [iter, is] : child->iterations)
          Activate(item, out, false, d, child, iter, is.get(), ready);
      } else {
        auto it = child->iterations.find(0);
        if (it != child->iterations.end())
          Activate(item, out, true, d, child, 0, it->second.get(), ready);
      }
      enters_done = --child->pending_enters == 0;
    }
    // Cannot end the run: the enter itself is still outstanding.
    if (enters_done) FinishIterations(child, ready);
  }

  // The instance of frame `static_id` entered from tn's iteration, made at
  // its first enter: its iteration 0 starts with the frame's constants.
  FrameState* ChildFrame(const TaggedNode& tn, int static_id, Ready* ready) {
    std::lock_guard<std::mutex> lock(frames_mu_);
    auto key = std::make_tuple(tn.frame, tn.iter, static_id);
    auto it = children_.find(key);
    if (it != children_.end()) return it->second.get();
    auto f = std::make_unique<FrameState>();
    f->def = &ex_.frames_[static_id];
    f->static_id = static_id;
    // The same in every partition of the step, in every process of a
    // cluster, so that transfer keys inside loops agree
    // (common_runtime/rendezvous.h): a hash stable across processes (absl::Hash
    // is seeded per process).
    f->id = MixSeeds(MixSeeds(tn.frame->id, HashName(f->def->name)),
                     static_cast<uint64_t>(tn.iter)) |
            1;
    f->parent = tn.frame;
    f->parent_iter = tn.iter;
    f->parent_state = tn.state;
    f->pending_enters = f->def->num_enters;
    f->iterations[0] = std::make_unique<IterationState>(*f->def);
    // Delivered as invariants are (StartIteration, for later iterations);
    // no other thread sees f yet.
    for (int c : f->def->constants) {
      f->invariants.push_back({c, {ex_.items_[c].value}, false});
      Activate(ex_.items_[c], f->invariants.back().value, false, {false},
               f.get(), 0, f->iterations[0].get(), ready);
    }
    tn.state->outstanding_frames.fetch_add(1);
    FrameState* raw = f.get();
    children_.emplace(key, std::move(f));
    return raw;
  }

  void NextIteration(const TaggedNode& tn, const Executor::NodeItem& item,
                     Outputs& outputs, Ready* ready) {
    FrameState* f = tn.frame;
    const int64_t next = tn.iter + 1;
    // Delivering needs no lock (slots are per edge, counts atomic); only
    // finding or starting the iteration does.
    if (IterationState* is = tn.state->next.load(std::memory_order_acquire)) {
      Activate(item, outputs, true, {false}, f, next, is, ready);
      return;
    }
    std::lock_guard<std::mutex> lock(f->mu);
    IterationState* is = StartIteration(f, next, ready);
    if (is == nullptr) {
      f->deferred.emplace_back(next, tn.item,
                               Entry{std::move(outputs[0]), false, true});
      return;
    }
    tn.state->next.store(is, std::memory_order_release);
    Activate(item, outputs, true, {false}, f, next, is, ready);
  }

  // Iteration `iter` of f, made (with the invariants delivered) when the
  // bound on iterations in flight allows; nullptr when it does not yet.
  // Holds f->mu.
  IterationState* StartIteration(FrameState* f, int64_t iter, Ready* ready) {
    auto it = f->iterations.find(iter);
    if (it != f->iterations.end()) return it->second.get();
    const int64_t oldest =
        f->iterations.empty() ? iter : f->iterations.begin()->first;
    if (iter - oldest >= f->def->parallel_iterations) return nullptr;
    auto& slot = f->iterations[iter];
    if (f->spare.empty()) {
      slot = std::make_unique<IterationState>(*f->def);
    } else {
      slot = std::move(f->spare.back());
      f->spare.pop_back();
      slot->Reset(*f->def);
    }
    for (FrameState::Invariant& inv : f->invariants) {
      Activate(ex_.items_[inv.item], inv.value, false, {inv.is_dead}, f, iter,
               slot.get(), ready);
    }
    return slot.get();
  }

  // Called when a node of tn's iteration is done; true when that ended
  // the run. `made_ready`: nodes of tn's iteration it made ready and did
  // not count (Propagate); they take over its own count.
  bool NodeDone(const TaggedNode& tn, Ready* ready, int made_ready) {
    if (made_ready > 0) {
      if (made_ready > 1) {
        tn.state->outstanding_ops.fetch_add(made_ready - 1,
                                            std::memory_order_relaxed);
      }
      return false;
    }
    if (tn.state->outstanding_ops.fetch_sub(1, std::memory_order_acq_rel) ==
        1) {
      return FinishIterations(tn.frame, ready);
    }
    return false;
  }

  // Retires f's done iterations, oldest first, starting deferred ones in
  // the slots they free; ends f when nothing is left.
  bool FinishIterations(FrameState* f, Ready* ready) {
    bool frame_done = false;
    bool run_done = false;
    {
      std::lock_guard<std::mutex> lock(f->mu);
      while (!f->iterations.empty()) {
        auto it = f->iterations.begin();
        IterationState* is = it->second.get();
        if (is->outstanding_ops.load() != 0 ||
            is->outstanding_frames.load() != 0 ||
            (it->first == 0 && f->pending_enters > 0)) {
          break;
        }
        if (f == &root_) {
          run_done = true;
          break;
        }
        is->Retire();
        if (static_cast<int>(f->spare.size()) < f->def->parallel_iterations) {
          f->spare.push_back(std::move(it->second));
        }
        f->iterations.erase(it);
        while (!f->deferred.empty()) {
          auto& [iter, item, value] = f->deferred.front();
          IterationState* next = StartIteration(f, iter, ready);
          if (next == nullptr) break;
          Outputs out{std::move(value.tensor)};
          Activate(ex_.items_[item], out, true, {false}, f, iter, next, ready);
          f->deferred.pop_front();
        }
      }
      frame_done = !f->done && f->iterations.empty() && f->deferred.empty() &&
                   f->pending_enters == 0;
      if (frame_done) f->done = true;
    }
    if (run_done) {
      done_.Notify();
      return true;
    }
    return frame_done && FinishFrame(f, ready);
  }

  // A frame instance is over: exits that never gave a live value give a
  // dead one (the whole loop was on an untaken branch), and the parent's
  // iteration no longer waits for it.
  bool FinishFrame(FrameState* f, Ready* ready) {
    FrameState* parent = f->parent;
    IterationState* ps = f->parent_state;
    for (int exit : f->def->exits) {
      if (f->live_exits.contains(exit)) continue;
      const Executor::NodeItem& item = ex_.items_[exit];
      Outputs none{Tensor()};
      Activate(item, none, false, {true}, parent, f->parent_iter, ps, ready);
    }
    {
      // Another thread may still be about to lock f (its node ended an
      // iteration that this thread's cascade retired): keep f until the
      // run ends, holding nothing: not its invariants, nor its spare
      // iteration states (a loop entered at every iteration of another, as
      // the recomputation of a segment in a gradient's backward loop, kept
      // 2-5 KB an outer iteration until the run ended: O(T) memory in a
      // loop that recomputes to hold O(sqrt(T))).
      std::lock_guard<std::mutex> f_lock(f->mu);
      std::vector<FrameState::Invariant>().swap(f->invariants);
      std::vector<std::unique_ptr<IterationState>>().swap(f->spare);
      f->live_exits = absl::flat_hash_set<int>();
      std::lock_guard<std::mutex> lock(frames_mu_);
      auto it =
          children_.find(std::make_tuple(parent, f->parent_iter, f->static_id));
      finished_.push_back(std::move(it->second));
      children_.erase(it);
    }
    if (ps->outstanding_frames.fetch_sub(1) == 1) {
      return FinishIterations(parent, ready);
    }
    return false;
  }

  // Cheap nodes join this thread's queue; expensive ones go to the pool,
  // except one this thread keeps: at once when its queue is empty, or (in
  // ProcessQueue, `deferred`) for when it is, since the cheap ones take
  // less than waking a pool thread does. A kept node starts only with the
  // queue empty, so a kernel that blocks holds up nothing queued here.
  void ScheduleReady(const Ready& ready, std::deque<TaggedNode>* inline_ready,
                     std::optional<TaggedNode>* deferred = nullptr) {
    const TaggedNode* keep = nullptr;
    for (const TaggedNode& tn : ready) {
      if (!ex_.Expensive(tn.item)) {
        inline_ready->push_back(tn);
        continue;
      }
      if (keep != nullptr) {
        TaggedNode other = *keep;
        ex_.pool_->Schedule([this, other] { Process({other}); });
      }
      keep = &tn;
    }
    if (keep == nullptr) return;
    const bool holding = deferred != nullptr && deferred->has_value();
    if (inline_ready->empty() && !holding) {
      inline_ready->push_back(*keep);
    } else if (deferred != nullptr && !holding) {
      *deferred = *keep;
    } else {
      TaggedNode other = *keep;
      ex_.pool_->Schedule([this, other] { Process({other}); });
    }
  }

  // The first error wins; it aborts the other partitions of the step too
  // (their receives fail with it), outside the lock, since a receive of
  // this state may be among those that fail.
  void Abort(absl::Status s) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (status_.ok()) status_ = s;
      aborted_.store(true, std::memory_order_relaxed);
    }
    if (args_.rendezvous != nullptr) args_.rendezvous->Abort(s);
    cancellation_.StartCancel();
    if (args_.on_abort) args_.on_abort(s);
  }

  // How often Wait looks at the cancelled flag and the rendezvous.
  static constexpr std::chrono::milliseconds kPollInterval{20};

  const Executor& ex_;
  const Executor::RunArgs args_;
  // A merge's value_index for its first two inputs (a loop's merges take
  // one of two each iteration), made once.
  const Tensor merge_index_[2] = {Tensor::ScalarOf(DType::kI32, 0),
                                  Tensor::ScalarOf(DType::kI32, 1)};
  const std::string track_;  // where traced kernels go
  StepContainer step_;
  CancellationManager cancellation_;
  FrameState root_;
  std::mutex frames_mu_;
  std::map<std::tuple<FrameState*, int64_t, int>, std::unique_ptr<FrameState>>
      children_;
  std::vector<std::unique_ptr<FrameState>> finished_;
  std::atomic<bool> aborted_{false};
  std::atomic<int> active_{0};  // threads inside Process
  Notification done_;
  std::mutex mu_;
  absl::Status status_ ABSL_GUARDED_BY(mu_);
};

absl::Status Executor::Run(const RunArgs& args) {
  ExecutorState state(*this, args);
  return state.RunToCompletion();
}

absl::Status Executor::RunPartitions(
    const std::vector<std::pair<Executor*, RunArgs>>& parts) {
  std::vector<std::unique_ptr<ExecutorState>> states;
  for (const auto& [ex, args] : parts) {
    states.push_back(std::make_unique<ExecutorState>(*ex, args));
  }
  for (size_t i = 0; i < states.size(); ++i) {
    states[i]->Start(/*here=*/i + 1 == states.size());
  }
  absl::Status first;
  for (auto& state : states) {
    absl::Status s = state->Wait();
    if (first.ok()) first = s;
  }
  return first;
}

}  // namespace runnel
