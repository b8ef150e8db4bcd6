// Step-by-step simulation of the 1F1B (one-forward-one-backward) pipeline schedule for stages
// of unequal speed.
#pragma once

#include <vector>

namespace mixccl::train {

struct SimStage {
  double forward_s = 0.0;        // one micro-batch forward on this stage
  double backward_s = 0.0;       // one micro-batch backward, recomputation included
  double send_forward_s = 0.0;   // activations to the next stage (ignored on the last stage)
  double send_backward_s = 0.0;  // gradients to the previous stage (ignored on the first)
};

struct SimResult {
  double makespan_s = 0.0;       // last backward of the first stage
  std::vector<double> finish_s;  // per stage: end of its last backward
  std::vector<double> busy_s;    // per stage: time spent computing or sending
};

// Each stage runs its operations in the order of OneFOneBOrder (schedule_1f1b.h), the
// generator the trainer executes: min(P-1-j, m) warm-up forwards, then one forward and one
// backward alternately, then the remaining backwards. An operation starts when the stage is
// free and its input has arrived; sends are blocking, so a stage is busy while it sends, and
// the receiver may start once the send is over. Idle gaps therefore reproduce the warm-up and
// cool-down bubbles and the waiting a slow stage imposes on its neighbours. O(P*m).
SimResult Simulate1F1B(const std::vector<SimStage>& stages, int micro_batches);

}  // namespace mixccl::train
