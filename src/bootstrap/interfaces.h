// Choosing the network interface mixccl listens and connects on, with NCCL's
// NCCL_SOCKET_IFNAME syntax: "eth,ib" prefixes, "^docker" excludes, "=eth0" exact names.
#pragma once

#include <string>
#include <vector>

#include "bootstrap/interface_match.h"
#include "bootstrap/socket_address.h"
#include "base/result.h"

namespace mixccl {

struct NetInterface {
  std::string name;
  SocketAddress address;  // port 0
};

// All usable addresses, in the order the kernel lists them, filtered by spec and family
// ("" = any, "AF_INET", "AF_INET6"); IPv6 link-local addresses are skipped.
std::vector<NetInterface> listInterfaces(const std::string& spec, const std::string& family);

// The interface to use: the first match of MIXCCL_SOCKET_IFNAME (default: not lo/docker,
// else lo), IPv4 before IPv6 unless MIXCCL_SOCKET_FAMILY says otherwise.
Result selectInterface(NetInterface* out);

}  // namespace mixccl
