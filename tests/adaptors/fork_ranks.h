// Runs a rank body in N forked processes whose services->allGather goes through the parent:
// each child has a socketpair to the parent, which collects one contribution from every rank
// and sends the concatenation back to all. Children that take longer than the deadline are
// killed (SIGALRM) so a test fails instead of hanging.
#pragma once

#include <functional>

#include "mixccl_adaptor.h"

namespace adaptor_test {

// body(rank, nranks, services) returns the number of failures of that rank.
// Returns 0 when every rank exited with 0 and the exchange stayed consistent.
int runForkedRanks(int nranks, int deadlineS,
                   const std::function<int(int, int, const mixcclAdaptorServices_t&)>& body);

}  // namespace adaptor_test
