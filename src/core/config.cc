#include "core/config.h"

#include <cstddef>

#include "adaptors/adaptor_loader.h"
#include "base/env.h"
#include "base/error.h"

namespace mixccl {

Result resolveConfig(const mixcclConfig_t* config, CommConfig* out) {
  CommConfig c;
  c.timeoutS = env().timeoutS;
  c.nsocksPerPeer = env().nsocksPerPeer;
  if (!env().net.empty()) {
    c.netName = env().net;
    c.netExplicit = true;
  }
  if (!env().adaptor.empty()) c.adaptor = env().adaptor;
  if (config) {
    if (config->magic != MIXCCL_CONFIG_MAGIC || config->size < sizeof(size_t) + 2 * sizeof(unsigned))
      return raiseError(mixcclInvalidArgument,
                        "mixcclConfig_t was not initialised with MIXCCL_CONFIG_INITIALIZER");
    // Fields beyond the caller's struct size (an older header) keep their defaults.
    auto has = [&](size_t offsetEnd) { return config->size >= offsetEnd; };
#define MIXCCL_HAS(field) has(offsetof(mixcclConfig_t, field) + sizeof(config->field))
    if (MIXCCL_HAS(blocking) && config->blocking != MIXCCL_CONFIG_UNDEF_INT) {
      if (config->blocking != 0 && config->blocking != 1)
        return raiseError(mixcclInvalidArgument, "config.blocking must be 0 or 1, got %d",
                          config->blocking);
      c.blocking = config->blocking == 1;
    }
    if (MIXCCL_HAS(timeout) && config->timeout != MIXCCL_CONFIG_UNDEF_INT) {
      if (config->timeout < 1)
        return raiseError(mixcclInvalidArgument, "config.timeout must be >= 1 second, got %d",
                          config->timeout);
      c.timeoutS = config->timeout;
    }
    if (MIXCCL_HAS(netName) && config->netName) {
      c.netName = config->netName;
      c.netExplicit = true;
    }
    if (MIXCCL_HAS(commName) && config->commName) c.commName = config->commName;
    if (MIXCCL_HAS(adaptor) && config->adaptor) c.adaptor = config->adaptor;
    if (MIXCCL_HAS(nsocksPerPeer) && config->nsocksPerPeer != MIXCCL_CONFIG_UNDEF_INT) {
      if (config->nsocksPerPeer < 1 || config->nsocksPerPeer > 16)
        return raiseError(mixcclInvalidArgument, "config.nsocksPerPeer must be in [1, 16], got %d",
                          config->nsocksPerPeer);
      c.nsocksPerPeer = config->nsocksPerPeer;
    }
#undef MIXCCL_HAS
  }
  // "socket": sockets to every peer, also on this host; "shm": shared memory to peers on this
  // host (that want it too), sockets to the rest, which is also what leaving it unset gives.
  // "ofi": libfabric carries every pair, also on this host (transport/ofi), in builds with it.
#ifdef MIXCCL_HAVE_OFI
  const bool haveOfi = true;
#else
  const bool haveOfi = false;
  if (c.netName == "ofi")
    return raiseError(mixcclInvalidArgument, "network transport 'ofi' is not available: this "
                      "build has no libfabric (cmake -DMIXCCL_WITH_OFI=ON with libfabric-dev)");
#endif
  if (c.netName != "socket" && c.netName != "shm" && !(haveOfi && c.netName == "ofi"))
    return raiseError(mixcclInvalidArgument,
                      "network transport '%s' is not available (have: socket, shm%s)",
                      c.netName.c_str(), haveOfi ? ", ofi" : "");
  if (c.netName == "shm" && env().shmDisable)
    return raiseError(mixcclInvalidArgument, "transport 'shm' was asked for (MIXCCL_NET or "
                      "config.netName) but MIXCCL_SHM_DISABLE=1 turns shared memory off");
  // A named adaptor must load now (a clear error at init, never a silent fallback); an empty
  // name means detection at init (domain_comm.cc).
  if (!c.adaptor.empty()) {
    const Adaptor* adaptor = nullptr;
    MIXCCL_CHECK(loadAdaptor(c.adaptor, &adaptor));
  }
  *out = c;
  return mixcclSuccess;
}

}  // namespace mixccl
