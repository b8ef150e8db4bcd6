// The 1F1B (one forward, one backward) pipeline order: the single generator behind both the
// planner's simulator (pipeline_sim) and the trainer's pipeline executor, so the order that is
// predicted is the order that runs.
#pragma once

#include <vector>

namespace mixccl::train {

struct PipelineOp {
  bool forward = true;
  int micro_batch = 0;
  bool operator==(const PipelineOp& o) const {
    return forward == o.forward && micro_batch == o.micro_batch;
  }
};

// Stage j of P runs w = min(P-1-j, m) warm-up forwards, then alternates one forward and one
// backward (forward w+i, backward i) until every forward ran, then drains the remaining
// backwards. Stage j thus holds at most P-j micro-batches' activations at once, and those in
// flight are always consecutive micro-batches. With one stage it is F0 B0 F1 B1 ...
std::vector<PipelineOp> OneFOneBOrder(int stage, int num_stages, int micro_batches);

// The most micro-batches stage j has between their forward and their backward.
int MaxInFlight(int stage, int num_stages, int micro_batches);

}  // namespace mixccl::train
