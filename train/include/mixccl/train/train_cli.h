// The command line of mixccl-train.
#pragma once

#include <string>
#include <vector>

#include "mixccl/train/trainer.h"

namespace mixccl::train {

struct TrainCli {
  TrainOptions options;
  int steps = 20;
  std::string data;  // token file
  std::string text;  // any file, its bytes as tokens
  std::size_t default_text_bytes = 512 * 1024;
  std::string plan;          // plan JSON (mixccl-plan's or hand-written); empty: single process
  bool batch_given = false;  // --global-batch or --micro-batches on the command line
  std::string checkpoint;
  int checkpoint_every = 0;  // 0: only at the end (when --checkpoint is given)
  std::string resume;
  std::string report;
  std::string debug_state;  // directory for what torch_crosscheck.py checks (debug_state.h)
  std::string cluster;      // cluster spec whose device speeds are emulated (speed_emulation.h)
  std::string device_type;  // a single process's device type in --cluster
  // Multiplies every type's emulated slowdown: with B > 1 even the fastest type computes at
  // 1/B of the machine's speed, so that several emulated devices share few cores.
  double slowdown_base = 1.0;
  std::string profile_out;     // profiling mode: write mixccl-plan's --profile here
  std::string model_spec_out;  // profiling mode: and the planner's model spec here
  std::vector<int> profile_micro_batches = {1, 2, 4, 8};
  bool quiet = false;
  // --survive: when ranks are lost the survivors shrink, re-plan and go on; the recoveries'
  // plans and checkpoints go to DIR/recovery-K (survive_recovery.cc).
  std::string survive;
  bool help = false;
};

extern const char kTrainUsage[];

// Throws std::invalid_argument with a message for the user.
TrainCli ParseTrainCli(int argc, char** argv);

}  // namespace mixccl::train
