// The run loop of mixccl-train, shared by the single-process and the distributed paths: steps
// until the requested step, log lines, checkpoints, the report.
#pragma once

#include <functional>

#include "mixccl/train/collectives.h"
#include "mixccl/train/comm_failure.h"
#include "mixccl/train/exec_plan.h"
#include "mixccl/train/train_cli.h"
#include "mixccl/train/trainer.h"

namespace mixccl::train {

// The data the command line names: a token file, a file's bytes, or the generated text.
TokenData LoadTrainData(const TrainCli& cli);

// Rank `rank`'s role in `plan` with its device type's emulated speed and BLAS threads from
// --cluster (when given); every stage's device type must be in the cluster spec.
RankRole PlanRoleWithSpeed(const TrainCli& cli, const ExecPlan& plan, int rank);

// Trains until step cli.steps (a resumed run continues from its checkpoint's step). Rank 0
// logs and writes the report; every rank writes its own checkpoint file (the path, with
// ".rank<r>" appended when there are several ranks). `comm` is null for a single process.
// Returns the process exit status.
int RunTraining(const TrainCli& cli, Trainer& trainer, Collectives* comm, int rank, int num_ranks);

// One rank of a job whose trainer and communication may be replaced during the run.
struct TrainingRank {
  Trainer* trainer = nullptr;
  Collectives* comm = nullptr;
  int rank = 0;
  int num_ranks = 1;
  // --survive: called when a step's communication failed on a lost peer, with the error and
  // the last step this rank finished (its record, null when it finished none in this run).
  // It points the fields above at the survivors' trainer and communication, whose position is
  // the step to go on from, and returns the record of that step when this rank is the
  // survivors' rank 0 and had not logged it (another survivor finished it), else nothing.
  // Throws when the job cannot go on. Empty: a failure ends the run.
  std::function<std::vector<StepRecord>(const CommFailure&, const StepRecord*)> recover;
};
int RunTraining(const TrainCli& cli, TrainingRank& job);

}  // namespace mixccl::train
