// --survive: one rank of a mixccl-train job that goes on when ranks are lost. When a step's
// communication fails on a lost peer, every survivor finds the lost ranks (lost_ranks.h), shrinks
// the world with MIXCCL_SHRINK_ABORT (giving up the communicators split from it), agrees with
// the others on the latest step any survivor finished, re-plans for the devices left
// (survivors_plan.h, on the survivors' rank 0, which hands the plan to the others), splits the
// new plan's communicators, takes every weight and AdamW moment of its new stage from itself or
// from the lowest survivor that held it at that step, writes DIR/recovery-K (the plan, the
// cluster spec it was made for and a checkpoint per rank, resumable with --plan and --resume),
// and repeats the failed step. A pipeline that lost its only copy of some layers stops with a
// message naming them.
#pragma once

#include "mixccl/train/exec_plan.h"
#include "mixccl/train/train_cli.h"

namespace mixccl::train {

// Runs rank `rank` of a job of `num_ranks` on `plan` (checked) until cli.steps; returns the
// exit status. Throws std::runtime_error when it cannot go on.
int RunSurvivingJob(const TrainCli& cli, const ExecPlan& plan, int rank, int num_ranks);

}  // namespace mixccl::train
