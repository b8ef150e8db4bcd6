// The topology step of communicator init: each rank discovers its host (hwloc), picks its NIC
// by PCI distance to its device, and the ranks exchange their summaries so that every rank
// knows every rank's host, NUMA node, device, NIC and adaptor (comm->topology). With
// MIXCCL_TOPO_DUMP_FILE set, the job's view is written as JSON.
#pragma once

#include <string>

#include "core/comm.h"

namespace mixccl {

// Runs after the proxy has started (the exchange uses the communicator's own connections).
// Discovery problems are warnings: init goes on with what is known. A failed exchange is an
// error: the connections are broken then.
Result exchangeTopology(Comm* comm, const std::string& socketInterface);

// Whether this host has an active RDMA port (the topology discovery, once per process), for
// MIXCCL_NET=auto's choice between an RDMA transport and sockets across hosts.
// MIXCCL_TEST_RDMA_ACTIVE=0|1 replaces the answer (tests only, docs/environment.md).
bool hostHasActiveRdmaPort(int rank);

// This host's cache sizes (the same discovery); all zero when the discovery failed.
TopoCaches hostCaches(int rank);
// This host's cores (the same discovery); 0 when the discovery failed.
int hostCores(int rank);

}  // namespace mixccl
