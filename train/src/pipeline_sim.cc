#include "mixccl/train/pipeline_sim.h"

#include <algorithm>

#include "mixccl/train/schedule_1f1b.h"

namespace mixccl::train {

SimResult Simulate1F1B(const std::vector<SimStage>& stages, int micro_batches) {
  const int p = static_cast<int>(stages.size());
  const int m = micro_batches;
  SimResult result;
  result.finish_s.assign(p, 0.0);
  result.busy_s.assign(p, 0.0);
  if (p == 0 || m <= 0) return result;

  // The same generator orders the trainer's pipeline: what is simulated is what runs.
  std::vector<std::vector<PipelineOp>> order(p);
  for (int j = 0; j < p; ++j) order[j] = OneFOneBOrder(j, p, m);
  // End times of each (stage, micro-batch) forward and backward; negative = not run yet.
  std::vector<double> fwd_end(static_cast<size_t>(p) * m, -1.0);
  std::vector<double> bwd_end(static_cast<size_t>(p) * m, -1.0);
  auto at = [m](int j, int i) { return static_cast<size_t>(j) * m + i; };
  std::vector<size_t> next(p, 0);
  std::vector<double> free_at(p, 0.0);

  // Run every operation whose input is ready; finishing one may unblock a neighbour.
  std::vector<int> pending;
  for (int j = p - 1; j >= 0; --j) pending.push_back(j);
  while (!pending.empty()) {
    const int j = pending.back();
    pending.pop_back();
    while (next[j] < order[j].size()) {
      const PipelineOp op = order[j][next[j]];
      double ready = 0.0;
      if (op.forward && j > 0) {
        ready = fwd_end[at(j - 1, op.micro_batch)];
      } else if (!op.forward && j < p - 1) {
        ready = bwd_end[at(j + 1, op.micro_batch)];
      }
      if (ready < 0.0) break;  // input not produced yet
      const SimStage& s = stages[j];
      double duration;
      if (op.forward) {
        duration = s.forward_s + (j < p - 1 ? s.send_forward_s : 0.0);
      } else {
        duration = s.backward_s + (j > 0 ? s.send_backward_s : 0.0);
      }
      const double start = std::max(free_at[j], ready);
      free_at[j] = start + duration;
      result.busy_s[j] += duration;
      if (op.forward) {
        fwd_end[at(j, op.micro_batch)] = free_at[j];
        if (j < p - 1) pending.push_back(j + 1);
      } else {
        bwd_end[at(j, op.micro_batch)] = free_at[j];
        if (j > 0) pending.push_back(j - 1);
      }
      ++next[j];
    }
  }
  for (int j = 0; j < p; ++j) {
    result.finish_s[j] = free_at[j];
    result.makespan_s = std::max(result.makespan_s, free_at[j]);
  }
  return result;
}

}  // namespace mixccl::train
