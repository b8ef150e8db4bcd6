#include "mixccl/train/schedule_1f1b.h"

#include <algorithm>

namespace mixccl::train {

std::vector<PipelineOp> OneFOneBOrder(int stage, int num_stages, int micro_batches) {
  const int m = micro_batches;
  const int warmup = std::min(num_stages - 1 - stage, m);
  std::vector<PipelineOp> ops;
  ops.reserve(2 * static_cast<size_t>(std::max(m, 0)));
  for (int i = 0; i < warmup; ++i) ops.push_back({true, i});
  for (int i = 0; i < m - warmup; ++i) {
    ops.push_back({true, warmup + i});
    ops.push_back({false, i});
  }
  for (int i = m - warmup; i < m; ++i) ops.push_back({false, i});
  return ops;
}

int MaxInFlight(int stage, int num_stages, int micro_batches) {
  return std::min(num_stages - stage, micro_batches);
}

}  // namespace mixccl::train
