// Which replica of a replicated task a worker uses, from its replicas'
// answers to GetStatus (WorkerChannels::Resolve; docs/cluster.md,
// "Replicated parameter servers"): the primary of the newest epoch; else
// the replica holding the newest state, promoted; else, where every
// replica answered and none holds any state, the first, promoted empty.
//
//   ReplicaChoice c = ChooseReplica(answers, all_answered, floor, asked);
//   if (c.action == ReplicaChoice::kAskAgain) ... ask every replica again
#ifndef RUNNEL_DISTRIBUTED_REPLICA_CHOICE_H_
#define RUNNEL_DISTRIBUTED_REPLICA_CHOICE_H_

#include <cstdint>
#include <vector>

namespace runnel {

// One replica's answer.
struct ReplicaAnswer {
  int index = 0;  // in the task's list of replicas
  bool primary = false;
  int64_t epoch = 0;
  bool holds_state = false;
};

struct ReplicaChoice {
  enum Action {
    kNone,      // none can serve (yet): ask again later, or give up
    kUse,       // `index` is the primary, at `epoch`
    kPromote,   // promote `index` at `epoch` (`fresh`: empty)
    kAskAgain,  // the answers may predate a promotion: ask again now
  };
  Action action = kNone;
  int index = -1;
  int64_t epoch = 0;
  bool fresh = false;
};

// `answers` in the order asked; `all_answered`: no replica was silent;
// `floor`: the newest epoch this worker has seen the task at (an answer
// below it is a stale replica's); `asked_again`: these answers are the
// second round of this resolve.
ReplicaChoice ChooseReplica(const std::vector<ReplicaAnswer>& answers,
                            bool all_answered, int64_t floor, bool asked_again);

}  // namespace runnel

#endif  // RUNNEL_DISTRIBUTED_REPLICA_CHOICE_H_
