#include "mixccl/train/survivor_state.h"

#include <algorithm>
#include <set>
#include <stdexcept>
#include <string>

#include "mixccl/train/recovery_call.h"

namespace mixccl::train {

namespace {

// The names of the tensors a stage of `range` holds (tp 1).
std::set<std::string> TensorNames(const GptConfig& model, const StageRange& range) {
  std::set<std::string> names;
  const GptStage stage(model, range);
  for (const ParamTensor& t : stage.tensors()) names.insert(t.name);
  return names;
}

}  // namespace

void TakeSurvivorState(const GptConfig& model, const ExecPlan& old_plan, Trainer& old_trainer,
                       const std::vector<int>& survivors, int rank,
                       const std::vector<long long>& steps, long long step,
                       const ExecPlan& new_plan, Trainer& target, mixcclComm_t world) {
  const int n = static_cast<int>(survivors.size());
  // What each survivor holds at `step` (a survivor behind it holds nothing current) and what
  // its new stage needs.
  std::vector<std::set<std::string>> held(n), needed(n);
  for (int s = 0; s < n; ++s) {
    if (steps[s] == step) held[s] = TensorNames(model, RoleOfRank(old_plan, survivors[s]).range);
    needed[s] = TensorNames(model, RoleOfRank(new_plan, s).range);
  }
  std::vector<float> old_m, old_v, new_m, new_v;
  old_trainer.optimizer().ExportMoments(&old_m, &old_v);
  target.optimizer().ExportMoments(&new_m, &new_v);
  std::vector<float>& old_params = old_trainer.stage().params();
  std::vector<float>& new_params = target.stage().params();
  std::vector<std::string> lost_tensors;
  std::vector<float> buffer;
  const GptStage whole(model, StageRange::Whole(model));
  for (const ParamTensor& t : whole.tensors()) {
    int holder = -1;
    bool moves = false;
    for (int s = 0; s < n; ++s) {
      if (holder < 0 && held[s].count(t.name)) holder = s;
      if (needed[s].count(t.name) && !held[s].count(t.name)) moves = true;
    }
    if (moves && holder < 0) lost_tensors.push_back(t.name);
    if (!lost_tensors.empty()) continue;  // every survivor stops below, alike
    const ParamTensor* mine_old = held[rank].count(t.name) ? old_trainer.stage().FindTensor(t.name)
                                                           : nullptr;
    const ParamTensor* mine_new = target.stage().FindTensor(t.name);
    if (moves) {
      // One broadcast from the lowest holder: weights, first and second moments.
      buffer.assign(3 * t.size, 0.0f);
      if (rank == holder) {
        std::copy_n(old_params.data() + mine_old->offset, t.size, buffer.data());
        std::copy_n(old_m.data() + mine_old->offset, t.size, buffer.data() + t.size);
        std::copy_n(old_v.data() + mine_old->offset, t.size, buffer.data() + 2 * t.size);
      }
      CheckRecoveryCall(mixcclBroadcast(buffer.data(), buffer.data(), buffer.size(), mixcclFloat32, holder,
                            world, nullptr),
            "mixcclBroadcast (state)", world);
      if (mine_new != nullptr && mine_old == nullptr) {
        std::copy_n(buffer.data(), t.size, new_params.data() + mine_new->offset);
        std::copy_n(buffer.data() + t.size, t.size, new_m.data() + mine_new->offset);
        std::copy_n(buffer.data() + 2 * t.size, t.size, new_v.data() + mine_new->offset);
      }
    }
    if (mine_new != nullptr && mine_old != nullptr) {
      std::copy_n(old_params.data() + mine_old->offset, t.size, new_params.data() + mine_new->offset);
      std::copy_n(old_m.data() + mine_old->offset, t.size, new_m.data() + mine_new->offset);
      std::copy_n(old_v.data() + mine_old->offset, t.size, new_v.data() + mine_new->offset);
    }
  }
  if (!lost_tensors.empty()) {
    std::string names;
    for (size_t i = 0; i < lost_tensors.size() && i < 4; ++i) {
      names += (i ? ", " : "") + lost_tensors[i];
    }
    if (lost_tensors.size() > 4) names += ", ...";
    throw std::runtime_error(
        "no survivor holds " + names + " at step " + std::to_string(step) +
        " (a pipeline lost its only copy of these layers): mixccl-train cannot go on; restart "
        "the job from its last checkpoint with --resume");
  }
  target.optimizer().ImportMoments(new_m, new_v);
}

}  // namespace mixccl::train
