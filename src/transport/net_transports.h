// The network transports this build may have (MIXCCL_WITH_UCX, next MIXCCL_WITH_OFI), made by
// name so that core code needs no #ifdef: the registry (comm_init.cc connectTransports) asks
// for each network transport the pair plan (net_choice.h) names.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "base/result.h"
#include "transport/transport.h"

namespace mixccl {

// The network transports in registry order, between shm and socket.
const std::vector<std::string>& networkTransportNames();

// Makes the network transport name serving the pairs serve[p]; an error naming it when this
// build lacks it.
Result makeNetworkTransport(const std::string& name, int rank, std::vector<bool> serve,
                            std::unique_ptr<Transport>* out);

}  // namespace mixccl
