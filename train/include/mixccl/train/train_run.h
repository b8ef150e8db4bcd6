// The run loop of mixccl-train, shared by the single-process and the distributed paths: steps
// until the requested step, log lines, checkpoints, the report.
#pragma once

#include "mixccl/train/collectives.h"
#include "mixccl/train/train_cli.h"
#include "mixccl/train/trainer.h"

namespace mixccl::train {

// The data the command line names: a token file, a file's bytes, or the generated text.
TokenData LoadTrainData(const TrainCli& cli);

// Trains until step cli.steps (a resumed run continues from its checkpoint's step). Rank 0
// logs and writes the report; every rank writes its own checkpoint file (the path, with
// ".rank<r>" appended when there are several ranks). `comm` is null for a single process.
// Returns the process exit status.
int RunTraining(const TrainCli& cli, Trainer& trainer, Collectives* comm, int rank, int num_ranks);

}  // namespace mixccl::train
