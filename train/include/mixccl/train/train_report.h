// What mixccl-train tells the user: one log line per step and a JSON report at the end
// (schema "mixccl-train-report", version 1, documented in docs/training.md).
#pragma once

#include <string>
#include <vector>

#include "mixccl/train/train_cli.h"
#include "mixccl/train/trainer.h"

namespace mixccl::train {

// One rank's part and its totals, as the report lists them.
struct RankSummary {
  int rank = 0;
  RankRole role;
  double compute_s = 0.0;
  double comm_s = 0.0;
  double idle_s = 0.0;  // step time not spent computing or communicating
  double peak_rss_bytes = 0.0;
  double optimizer_state_bytes = 0.0;  // AdamW moments this rank holds (ZeRO-1: its shards)
  double emulation_behind_s = 0.0;     // compute beyond the emulated device's (speed_emulation.h)
};

// "step    3/20  loss 5.123456  step 12.3 ms  41600 tok/s  |g| 1.234  compute 10.1 ms  comm 0.2 ms"
// followed, in a job of several ranks, by "  | r0 10.1/0.2/0.4 r1 ..." (each rank's compute,
// communication and idle ms of the step).
std::string StepLogLine(const StepRecord& r, int total_steps);

std::string ReportJson(const TrainCli& cli, const std::string& data_origin, int num_ranks,
                       std::size_t parameters, const std::vector<StepRecord>& steps,
                       const std::vector<RankSummary>& ranks);

// Peak resident memory of this process (getrusage), in bytes.
double PeakRssBytes();

}  // namespace mixccl::train
