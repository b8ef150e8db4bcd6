// Hosts as a grouping of ranks, for the host-hierarchical collectives (host_hierarchical.h):
// the same DomainMap the cross-domain algorithms use, with one "domain" per host. Every rank
// builds it from the peer table exchanged at init, so every rank holds the same map.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "base/result.h"
#include "topology/domains.h"

namespace mixccl {

// Groups ranks by key (hostKeys[r]: rank r's host), hosts ordered by their lowest rank, ranks
// ascending in each; color is the host's index. adaptor stays empty.
DomainMap groupRanksByHost(const std::vector<uint64_t>& hostKeys);

// MIXCCL_HIER_HOSTS: one non-negative host label per rank, comma-separated ("0,0,1,1" puts
// ranks 0-1 on one host and 2-3 on another), so that ranks of one machine can be grouped as
// if they were on several hosts. It changes the grouping of the collectives only (transports
// still follow the real hosts) and must be the same on every rank. Empty spec: *keys is left
// alone. Returns an error saying what is wrong with spec.
Result parseHostSplit(const std::string& spec, int nranks, std::vector<uint64_t>* keys);

// "2 hosts: {0,1} + {2,3}", for logs and mixcclCommInspect "hosts".
std::string describeHosts(const DomainMap& hosts);

}  // namespace mixccl
