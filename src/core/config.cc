#include "core/config.h"

#include <cstddef>

#include "adaptors/adaptor_loader.h"
#include "base/env.h"
#include "base/error.h"
#include "transport/net_choice.h"

namespace mixccl {

Result resolveConfig(const mixcclConfig_t* config, CommConfig* out) {
  CommConfig c;
  c.timeoutS = env().timeoutS;
  c.nsocksPerPeer = env().nsocksPerPeer;
  if (!env().net.empty()) {
    c.netName = env().net;
    c.netExplicit = true;
    c.netSource = "MIXCCL_NET";
  }
  if (!env().adaptor.empty()) c.adaptor = env().adaptor;
  c.connect = env().connect;
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
      c.netSource = "config.netName";
    }
    if (MIXCCL_HAS(commName) && config->commName) c.commName = config->commName;
    if (MIXCCL_HAS(adaptor) && config->adaptor) c.adaptor = config->adaptor;
    if (MIXCCL_HAS(nsocksPerPeer) && config->nsocksPerPeer != MIXCCL_CONFIG_UNDEF_INT) {
      if (config->nsocksPerPeer < 1 || config->nsocksPerPeer > 16)
        return raiseError(mixcclInvalidArgument, "config.nsocksPerPeer must be in [1, 16], got %d",
                          config->nsocksPerPeer);
      c.nsocksPerPeer = config->nsocksPerPeer;
    }
    if (MIXCCL_HAS(connect) && config->connect) {
      const std::string mode = config->connect;
      if (mode != "auto" && mode != "eager" && mode != "lazy")
        return raiseError(mixcclInvalidArgument, "config.connect must be one of auto, eager, "
                          "lazy, got '%s'", config->connect);
      c.connect = mode;
      c.connectSource = "config.connect";
    }
#undef MIXCCL_HAS
  }
  // The names and what each chooses per pair: transport/net_choice.h. A known transport this
  // build lacks is refused here, naming the build option, never replaced by another.
  if (!netKnown(c.netName))
    return raiseError(mixcclInvalidArgument, "network transport '%s' is not available (have: %s)",
                      c.netName.c_str(), netNamesBuilt().c_str());
  if (!netBuilt(c.netName))
    return raiseError(mixcclInvalidArgument, "transport '%s' was asked for (%s) but this mixccl "
                      "was built without it (have: %s)", c.netName.c_str(), c.netSource.c_str(),
                      netNamesBuilt().c_str());
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
