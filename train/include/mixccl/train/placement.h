// Where the devices of a group's type block sit. Devices are numbered host by host; a block
// with `stages` stages of `tp` devices and `dp` replicas is laid out tensor-parallel ranks
// innermost, then pipeline stages, then replicas: replica r's local stage i starts at device
// (r * stages + i) * tp. Consecutive stages of a replica thus share a host when they can, which
// keeps the per-micro-batch activation traffic inside the domain; the once-per-step gradient
// AllReduce is what crosses hosts. tp must divide the host size, so a tensor-parallel group
// never straddles two hosts.
#pragma once

namespace mixccl::train {

struct BlockLayout {
  int tp = 1;
  int stages = 1;
  int dp = 1;
  int devices_per_host = 1;
};

// True when, for at least one replica, local stages `i` and `i + 1` are on different hosts.
bool StageBoundaryCrossesDomain(const BlockLayout& b, int local_stage);

// Number of hosts holding the `dp` replicas of local stage `i`.
int DomainsOfStage(const BlockLayout& b, int local_stage);

}  // namespace mixccl::train
