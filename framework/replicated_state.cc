#include "framework/replicated_state.h"

#include <mutex>

#include "base/strings.h"

namespace runnel {
namespace {

struct Makers {
  std::mutex mu;
  std::map<std::string, ReplicatedStateMaker> by_kind;
};

Makers& TheMakers() {
  static Makers* makers = new Makers;
  return *makers;
}

}  // namespace

void RegisterReplicatedState(const std::string& kind,
                             ReplicatedStateMaker make) {
  Makers& m = TheMakers();
  std::lock_guard<std::mutex> lock(m.mu);
  m.by_kind[kind] = std::move(make);
}

absl::StatusOr<std::shared_ptr<ReplicatedState>> MakeReplicatedState(
    const std::string& kind, ResourceMgr* resources) {
  ReplicatedStateMaker make;
  {
    Makers& m = TheMakers();
    std::lock_guard<std::mutex> lock(m.mu);
    auto it = m.by_kind.find(kind);
    if (it == m.by_kind.end()) {
      return absl::InvalidArgumentError(
          StrCat("a copy of state of an unknown kind '", kind, "'"));
    }
    make = it->second;
  }
  return make(resources);
}

absl::Status CommitReplicas(ResourceMgr* resources) {
  std::shared_ptr<ReplicaCommit> c =
      resources->Lookup<ReplicaCommit>(ReplicaCommit::kName);
  return c == nullptr ? absl::OkStatus() : c->Commit();
}

int64_t RunSteps::Resolve(const UpdateTag& tag, int64_t step, bool* retry) {
  auto [it, fresh] = by_writer_.try_emplace(tag.writer, tag.seq, step);
  *retry = !fresh && it->second.first == tag.seq;
  if (*retry) return it->second.second;
  it->second = {tag.seq, step};
  return step;
}

int64_t RunSteps::StepOf(const UpdateTag* tag, int64_t step) const {
  if (tag == nullptr) return step;
  auto it = by_writer_.find(tag->writer);
  return it != by_writer_.end() && it->second.first == tag->seq
             ? it->second.second
             : step;
}

void RunSteps::SaveTo(
    google::protobuf::RepeatedPtrField<proto::RunStep>* out) const {
  for (const auto& [writer, run] : by_writer_) {
    proto::RunStep* r = out->Add();
    r->set_writer(writer);
    r->set_seq(run.first);
    r->set_step(run.second);
  }
}

void RunSteps::LoadFrom(
    const google::protobuf::RepeatedPtrField<proto::RunStep>& in) {
  by_writer_.clear();
  for (const proto::RunStep& r : in) {
    by_writer_[r.writer()] = {r.seq(), r.step()};
  }
}

}  // namespace runnel
