#include "mixccl/train/placement.h"

#include <algorithm>

namespace mixccl::train {

bool StageBoundaryCrossesDomain(const BlockLayout& b, int local_stage) {
  const long span = static_cast<long>(b.stages) * b.tp;  // devices of one replica
  const long d = b.devices_per_host;
  // Stage i+1 of replica r starts at r*span + (i+1)*tp; since tp divides the host size, the two
  // stages are on different hosts exactly when that start is a host boundary. r*span mod d
  // repeats with a period of at most d replicas.
  const long replicas = std::min<long>(b.dp, d);
  for (long r = 0; r < replicas; ++r) {
    if ((r * span + static_cast<long>(local_stage + 1) * b.tp) % d == 0) return true;
  }
  return false;
}

int DomainsOfStage(const BlockLayout& b, int local_stage) {
  const long span = static_cast<long>(b.stages) * b.tp;
  const long d = b.devices_per_host;
  if (span >= d) return b.dp;  // replicas a host or more apart: one host each
  const long first = static_cast<long>(local_stage) * b.tp;
  const long last = static_cast<long>(b.dp - 1) * span + first;
  return static_cast<int>(last / d - first / d + 1);
}

}  // namespace mixccl::train
