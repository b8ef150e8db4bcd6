// Domains: the groups of ranks that share one device adaptor (one vendor library). Inside a
// domain mixccl uses the adaptor's native collectives; between domains it moves data itself.
// Every rank computes the same map from the peer table exchanged at init.
#pragma once

#include <string>
#include <vector>

#include "bootstrap/peer_info.h"
#include "base/result.h"

namespace mixccl {

struct Domain {
  std::string adaptor;     // adaptor name every member uses
  int color = 0;           // MIXCCL_DOMAIN_SPLIT color (0 when not split)
  std::vector<int> ranks;  // communicator ranks, ascending; index in this list = domain rank
};

struct DomainMap {
  std::vector<Domain> domains;   // ordered by their lowest rank
  std::vector<int> domainOf;     // rank -> index into domains
  std::vector<int> indexInDomain;  // rank -> its position in domains[domainOf[rank]].ranks

  bool single() const { return domains.size() <= 1; }
};

// MIXCCL_DOMAIN_SPLIT: a comma-separated list of one non-negative color per rank
// ("0,1,1,1" makes domains {0} and {1,2,3}; "0,1,0,1" two interleaved ones). Empty: color 0.
// Returns this rank's color, or an error saying what is wrong with spec.
Result parseDomainSplit(const std::string& spec, int rank, int nranks, int* color);

// Groups ranks by (adaptor, color). peers[r].adaptor and peers[r].domainColor must be set.
DomainMap buildDomainMap(const std::vector<PeerInfo>& peers);

// "2 domains: host {0,2} + gloo {1,3}", for logs and errors.
std::string describeDomains(const DomainMap& map);

}  // namespace mixccl
