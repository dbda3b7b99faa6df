#include "distributed/replica_choice.h"

#include <algorithm>

namespace runnel {

ReplicaChoice ChooseReplica(const std::vector<ReplicaAnswer>& answers,
                            bool all_answered, int64_t floor,
                            bool asked_again) {
  const ReplicaAnswer* primary = nullptr;
  const ReplicaAnswer* holder = nullptr;
  int64_t top_epoch = floor;
  for (const ReplicaAnswer& a : answers) {
    top_epoch = std::max(top_epoch, a.epoch);
    if (a.epoch < floor) continue;  // stale
    if (a.primary && (primary == nullptr || a.epoch > primary->epoch)) {
      primary = &a;
    }
    if (a.holds_state && (holder == nullptr || a.epoch > holder->epoch)) {
      holder = &a;
    }
  }
  const bool fresh = holder == nullptr && all_answered && !answers.empty();
  const ReplicaAnswer* chosen = primary;
  if (chosen == nullptr) chosen = holder;
  if (chosen == nullptr && fresh) chosen = &answers.front();
  ReplicaChoice c;
  if (chosen == nullptr) return c;
  // The replicas are asked one after another, and another worker may
  // promote one meanwhile: a backup holds epoch E's state only once E's
  // primary has sent it, so a replica that answered with an older epoch
  // was asked before its promotion. Promoting over it would demote a
  // healthy primary (at start-up, racing the chief's first step).
  if (!chosen->primary && !asked_again &&
      std::any_of(answers.begin(), answers.end(), [&](const ReplicaAnswer& a) {
        return a.epoch < chosen->epoch;
      })) {
    c.action = ReplicaChoice::kAskAgain;
    return c;
  }
  c.index = chosen->index;
  // (Fresh, a stale primary too: it drops its state.)
  if (!chosen->primary || fresh) {
    c.action = ReplicaChoice::kPromote;
    c.epoch = top_epoch + 1;
    c.fresh = fresh;
  } else {
    c.action = ReplicaChoice::kUse;
    c.epoch = chosen->epoch;
  }
  return c;
}

}  // namespace runnel
