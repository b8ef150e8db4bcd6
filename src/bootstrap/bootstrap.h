// The rank side of the rendezvous: send this rank's PeerInfo, receive everyone's.
#pragma once

#include <vector>

#include "bootstrap/peer_info.h"
#include "bootstrap/unique_id.h"
#include "base/clock.h"
#include "base/result.h"

namespace mixccl {

Result rendezvous(const UniqueIdData& id, int rank, int nranks, const PeerInfo& mine,
                  const Deadline& deadline, std::vector<PeerInfo>* all);

}  // namespace mixccl
