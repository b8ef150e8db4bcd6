// --survive: a survivor's state under the survivors' plan. Every weight and AdamW moment of the
// survivor's new stage comes from its own old stage when it held the tensor at the step the
// survivors go on from, else from the lowest survivor that did (one mixcclBroadcast per tensor
// over the survivors' world; every survivor takes part in the same ones). A whole replica lost
// moves nothing: each survivor of a one-stage replica holds the whole model.
#pragma once

#include <vector>

#include "mixccl.h"
#include "mixccl/train/exec_plan.h"
#include "mixccl/train/trainer.h"

namespace mixccl::train {

// `survivors`: the old ranks that survive, ascending (survivor s is rank s of `world`); `rank`:
// this survivor's new rank; `steps[s]`: the last step survivor s finished; `step`: the latest of
// them. `old_trainer` ran `old_plan`; `target` is this rank's trainer of `new_plan`, whose
// weights and moments are replaced (tp 1). Throws std::runtime_error, on every survivor alike,
// naming the tensors no survivor held at `step` (a pipeline's only copy lost).
void TakeSurvivorState(const GptConfig& model, const ExecPlan& old_plan, Trainer& old_trainer,
                       const std::vector<int>& survivors, int rank,
                       const std::vector<long long>& steps, long long step,
                       const ExecPlan& new_plan, Trainer& target, mixcclComm_t world);

}  // namespace mixccl::train
