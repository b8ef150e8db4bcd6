// A communicator's configuration: mixcclConfig_t fields resolved against the environment.
#pragma once

#include <string>

#include "base/result.h"
#include "mixccl.h"

namespace mixccl {

struct CommConfig {
  bool blocking = true;
  int timeoutS = 300;
  int nsocksPerPeer = 0;  // 0: automatic per peer (1 on the same host, 2 across hosts)
  // "auto", "socket", "shm", "ucx" (transport/net_choice.h says what each chooses per pair).
  std::string netName = "auto";
  // netName was asked for (MIXCCL_NET or config.netName): a named network transport carries
  // every pair, same-host ones included; "shm" keeps shared memory within a host.
  bool netExplicit = false;
  std::string netSource = "default";  // "MIXCCL_NET", "config.netName" or "default"
  std::string commName;
  std::string adaptor;  // empty: detected at init (nccl with a usable GPU, else host)
  // "auto", "eager" or "lazy" (core/connect_mode.h); from MIXCCL_CONNECT (not checked here: an
  // invalid value fails every rank at once after the peer exchange) or config.connect.
  std::string connect = "auto";
  std::string connectSource = "MIXCCL_CONNECT";
};

// Defaults from the environment, then the fields config defines (config may be NULL).
Result resolveConfig(const mixcclConfig_t* config, CommConfig* out);

}  // namespace mixccl
