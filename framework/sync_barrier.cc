#include "framework/sync_barrier.h"

#include <algorithm>
#include <utility>

#include "framework/replicated_state.pb.h"

namespace runnel {
namespace {

bool SameRun(const UpdateTag& a, const UpdateTag& b) {
  return a.writer == b.writer && a.seq == b.seq;
}

// The worker task of a writer ("/job:worker/task:1#<incarnation>").
std::string TaskOf(const std::string& writer) {
  return writer.substr(0, writer.rfind('#'));
}

}  // namespace

std::shared_ptr<SyncBarrier> SyncBarrier::Create(
    std::shared_ptr<LiveWorkers> live) {
  std::shared_ptr<SyncBarrier> b(new SyncBarrier(std::move(live)));
  if (b->live_ != nullptr) {
    std::weak_ptr<SyncBarrier> weak = b;
    b->subscription_ = b->live_->Subscribe([weak] {
      if (std::shared_ptr<SyncBarrier> self = weak.lock()) self->Evaluate();
    });
  }
  return b;
}

SyncBarrier::SyncBarrier(std::shared_ptr<LiveWorkers> live)
    : live_(std::move(live)) {}

SyncBarrier::~SyncBarrier() {
  if (live_ != nullptr && subscription_ >= 0) {
    live_->Unsubscribe(subscription_);
  }
}

void SyncBarrier::Arrive(int64_t step, int64_t replicas,
                         CancellationManager* run, const UpdateTag* tag,
                         Done done) {
  const std::optional<UpdateTag> tagged =
      tag != nullptr ? std::optional<UpdateTag>(*tag) : std::nullopt;
  int64_t id = 0;
  bool early = false;
  {
    std::lock_guard<std::mutex> lock(mu_);
    id = ++arrivals_;
    if (tag != nullptr) {
      bool retry = false;
      step = runs_.Resolve(*tag, step, &retry);
      if (!retry) ++version_;
      // The same worker's earlier arrival (an attempt of a run that failed
      // elsewhere, or a retried one) no longer counts: it goes on.
      for (auto it = waiting_.begin(); it != waiting_.end();) {
        if (!it->tag.has_value() || it->tag->writer != tag->writer) {
          ++it;
          continue;
        }
        if (it->counts) --arrived_;
        stale_.push_back(std::move(it->done));
        it = waiting_.erase(it);
      }
      if (chosen_.has_value() && chosen_->writer != tag->writer &&
          TaskOf(chosen_->writer) == TaskOf(tag->writer)) {
        chosen_.reset();  // its worker restarted: the old one is gone
        ++version_;
      }
    }
    if (step < step_) {
      stale_.push_back(std::move(done));
    } else if (step > step_ && (applying_ || chosen_.has_value())) {
      // The applier has counted its step but not yet ended it (or, after
      // a failover, will end it when its run is retried): starting the
      // new step now would make its Advance miss (and the barrier wait
      // for ever). Arrive again after Advance.
      early_.push_back({step, replicas, run, tagged, std::move(done), id});
      early = true;
    } else if (step == step_ && applying_) {
      // Too late for this step, but the update is under way: go on once
      // it is done, so the next step reads the new values. (It does not
      // count: it cannot become the applier.)
      // (A chosen applier's retry waits here until its first attempt
      // is found lost, and then applies.)
      waiting_.push_back({std::move(done), run, /*counts=*/false, tagged, id});
    } else {
      if (step > step_) {  // restored, or the first arrival
        step_ = step;
        arrived_ = 0;
        ++version_;
      }
      replicas_ = replicas;
      ++arrived_;
      waiting_.push_back({std::move(done), run, /*counts=*/true, tagged, id});
    }
  }
  if (run != nullptr) WatchRun(run, id);
  if (!early) Evaluate();
}

void SyncBarrier::WatchRun(CancellationManager* run, int64_t id) {
  std::weak_ptr<SyncBarrier> weak = weak_from_this();
  const CancellationManager::Token t = run->Register([weak, id] {
    if (std::shared_ptr<SyncBarrier> self = weak.lock()) self->Leave(id);
  });
  if (t == CancellationManager::kCancelled) Leave(id);
}

void SyncBarrier::Leave(int64_t id) {
  Done done;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto w = std::find_if(waiting_.begin(), waiting_.end(),
                          [id](const Waiter& x) { return x.id == id; });
    auto e = std::find_if(early_.begin(), early_.end(),
                          [id](const Early& x) { return x.id == id; });
    if (w != waiting_.end()) {
      if (w->counts) --arrived_;
      done = std::move(w->done);
      waiting_.erase(w);
    } else if (e != early_.end()) {
      done = std::move(e->done);
      early_.erase(e);
    }
  }
  if (done) done(false);
}

void SyncBarrier::ArriveAgain(std::vector<Early> early) {
  for (Early& e : early) {
    Arrive(e.step, e.replicas, e.run, e.tag ? &*e.tag : nullptr,
           std::move(e.done));
  }
}

void SyncBarrier::Advance(int64_t step, const UpdateTag* tag) {
  std::vector<Waiter> go;
  std::vector<std::function<void()>> granted;
  std::vector<Early> early;
  {
    std::lock_guard<std::mutex> lock(mu_);
    step = runs_.StepOf(tag, step);
    if (step != step_) return;
    if (applier_run_ != nullptr) applier_run_->Deregister(applier_token_);
    applier_run_ = nullptr;
    step_ = step + 1;
    arrived_ = 0;
    applying_ = false;
    chosen_.reset();
    ++version_;
    go.swap(waiting_);
    early.swap(early_);
    granted = GrantHolds();
  }
  for (auto& g : granted) g();
  for (Waiter& w : go) w.done(false);
  ArriveAgain(std::move(early));
}

void SyncBarrier::Hold(CancellationManager* run,
                       std::function<void()> granted) {
  auto token = std::make_shared<CancellationManager::Token>(0);
  bool now = false;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (run != nullptr) {
      std::weak_ptr<SyncBarrier> weak = weak_from_this();
      const CancellationManager::Token t = run->Register([weak, run, token] {
        if (std::shared_ptr<SyncBarrier> self = weak.lock()) {
          self->HoldCancelled(run, token);
        }
      });
      if (t == CancellationManager::kCancelled) {
        now = true;  // the run is ending: nothing to hold
      } else {
        *token = t;
      }
    }
    if (!now) {
      holders_.push_back({run, token, std::move(granted)});
      if (!applying_) {
        now = true;
        granted = std::move(holders_.back().granted);
        holders_.back().granted = nullptr;
      }
    }
  }
  if (now && granted) granted();
}

void SyncBarrier::Release(CancellationManager* run) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = std::find_if(holders_.begin(), holders_.end(),
                           [run](const Holder& h) { return h.run == run; });
    if (it == holders_.end()) return;
    if (run != nullptr) run->Deregister(*it->token);
    holders_.erase(it);
  }
  Evaluate();
}

void SyncBarrier::HoldCancelled(
    CancellationManager* run,
    const std::shared_ptr<CancellationManager::Token>& token) {
  std::function<void()> pending;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = std::find_if(
        holders_.begin(), holders_.end(),
        [&](const Holder& h) { return h.run == run && *h.token == *token; });
    if (it == holders_.end()) return;  // released already
    pending = std::move(it->granted);
    holders_.erase(it);
  }
  if (pending) pending();
  Evaluate();
}

std::vector<std::function<void()>> SyncBarrier::GrantHolds() {
  std::vector<std::function<void()>> out;
  for (Holder& h : holders_) {
    if (h.granted) {
      out.push_back(std::move(h.granted));
      h.granted = nullptr;
    }
  }
  return out;
}

bool SyncBarrier::Held() const { return !holders_.empty(); }

bool SyncBarrier::IsChosen(const Waiter& w) const {
  return chosen_.has_value() && w.tag.has_value() && SameRun(*w.tag, *chosen_);
}

bool SyncBarrier::DropDeadChoice() {
  if (!chosen_.has_value() || live_ == nullptr ||
      live_->Alive(TaskOf(chosen_->writer))) {
    return false;
  }
  chosen_.reset();
  ++version_;
  return true;
}

void SyncBarrier::Evaluate() {
  std::vector<Done> release;
  std::vector<Early> early;
  Done applier;
  const int live = live_ != nullptr ? live_->Count() : 1;
  {
    std::lock_guard<std::mutex> lock(mu_);
    release.swap(stale_);
    if (DropDeadChoice() && !applying_) early.swap(early_);
    const int64_t needed =
        std::max<int64_t>(1, std::min<int64_t>(replicas_, live));
    // (Not while a snapshot holds the barrier: see Hold.)
    while (!applying_ && !Held() &&
           (chosen_.has_value() || arrived_ >= needed)) {
      // The chosen applier's run, once it arrives (again); otherwise the
      // newest arrival that counts becomes the applier.
      auto it = chosen_.has_value()
                    ? std::find_if(waiting_.rbegin(), waiting_.rend(),
                                   [&](const Waiter& w) { return IsChosen(w); })
                    : std::find_if(waiting_.rbegin(), waiting_.rend(),
                                   [](const Waiter& w) { return w.counts; });
      if (it == waiting_.rend()) break;
      Waiter w = std::move(*it);
      waiting_.erase(std::next(it).base());
      if (w.run != nullptr) {
        // Its run's cancellation tells us if it dies before Advance. (The
        // token is read under mu_, where it is set, in ApplierLost.)
        std::weak_ptr<SyncBarrier> weak = weak_from_this();
        auto token = std::make_shared<CancellationManager::Token>(0);
        const CancellationManager::Token t =
            w.run->Register([weak, step = step_, token] {
              if (std::shared_ptr<SyncBarrier> self = weak.lock()) {
                self->ApplierLost(step, token);
              }
            });
        if (t == CancellationManager::kCancelled) {
          // Its run is ending already: it goes on, and no longer counts.
          if (w.counts) --arrived_;
          release.push_back(std::move(w.done));
          continue;
        }
        *token = t;
        applier_token_ = t;
      }
      if (w.tag.has_value() && !chosen_.has_value()) {
        chosen_ = w.tag;
        ++version_;
      }
      applying_ = true;
      applier_run_ = w.run;
      applier = std::move(w.done);
    }
  }
  for (Done& d : release) d(false);
  if (applier) applier(true);
  ArriveAgain(std::move(early));
}

uint64_t SyncBarrier::version() const {
  std::lock_guard<std::mutex> lock(mu_);
  return version_;
}

ReplicatedState::Saved SyncBarrier::Save() const {
  proto::SyncBarrierState st;
  Saved saved;
  {
    std::lock_guard<std::mutex> lock(mu_);
    st.set_step(step_);
    if (chosen_.has_value()) {
      st.set_chosen(true);
      st.set_applier_writer(chosen_->writer);
      st.set_applier_seq(chosen_->seq);
    }
    runs_.SaveTo(st.mutable_run());
    saved.version = version_;
  }
  saved.bytes = st.SerializeAsString();
  return saved;
}

absl::Status SyncBarrier::Load(const std::string& bytes) {
  proto::SyncBarrierState st;
  if (!st.ParseFromString(bytes)) {
    return absl::DataLossError("a malformed copy of a synchronous barrier");
  }
  std::vector<Waiter> gone;
  std::vector<Early> early;
  {
    std::lock_guard<std::mutex> lock(mu_);
    step_ = st.step();
    chosen_.reset();
    if (st.chosen()) {
      chosen_ =
          UpdateTag{.writer = st.applier_writer(), .seq = st.applier_seq()};
    }
    runs_.LoadFrom(st.run());
    ++version_;
    // A backup runs no steps; a primary that stepped down has aborted
    // its own: whoever waited here goes on.
    arrived_ = 0;
    applying_ = false;
    if (applier_run_ != nullptr) applier_run_->Deregister(applier_token_);
    applier_run_ = nullptr;
    gone.swap(waiting_);
    early.swap(early_);
  }
  for (Waiter& w : gone) w.done(false);
  for (Early& e : early) e.done(false);
  return absl::OkStatus();
}

void SyncBarrier::ApplierLost(
    int64_t step, const std::shared_ptr<CancellationManager::Token>& token) {
  std::vector<std::function<void()>> granted;
  {
    std::lock_guard<std::mutex> lock(mu_);
    // A cancellation that raced with Advance, or with another applier.
    if (!applying_ || step != step_ || applier_run_ == nullptr ||
        applier_token_ != *token) {
      return;
    }
    // (A chosen applier stays chosen: its run, retried, applies the step.)
    applying_ = false;
    applier_run_ = nullptr;
    --arrived_;  // its arrival no longer counts
    granted = GrantHolds();
  }
  for (auto& g : granted) g();
  Evaluate();
}

}  // namespace runnel
