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

// A hash of a MIXCCL_HIER_HOSTS value (0: unset), which every rank sends in its peer record so
// that ranks given different labels fail init at once (core/peer_agreement.h) instead of each
// running its own grouping and waiting on the others in their first collective.
uint64_t hostSplitHash(const std::string& spec);

// Succeeds when every rank's hash (hashes[r], names[r] "rank r (host pid N)") equals rank 0's;
// else mixcclInvalidUsage naming the ranks whose value differs from rank 0's (the same list on
// every rank) and this rank's own value (spec).
Result checkHostSplitAgreed(int rank, const std::string& spec, const std::vector<uint64_t>& hashes,
                            const std::vector<std::string>& names);

// "2 hosts: {0,1} + {2,3}", for logs and mixcclCommInspect "hosts".
std::string describeHosts(const DomainMap& hosts);

}  // namespace mixccl
