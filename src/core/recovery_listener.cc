#include "core/recovery_listener.h"

#include "algo/algorithms.h"
#include "core/comm.h"

namespace mixccl {

Result setupRecoveryListener(Comm* comm, const SocketAddress& address, const Deadline& deadline) {
  SocketAddress bound;
  MIXCCL_CHECK(listenOn(address, &comm->recoveryListener, &bound));
  const WireAddress mine = toWire(bound);
  comm->recoveryAddrs.assign(comm->nranks, WireAddress{});
  Transfers t(*comm->proxy, deadline);
  CollContext ctx{comm->rank, comm->nranks, t, comm->tuning.chunkBytes};
  return ringAllGather(ctx, &mine, comm->recoveryAddrs.data(), sizeof(WireAddress), mixcclUint8);
}

}  // namespace mixccl
