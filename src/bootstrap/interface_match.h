// NCCL's NCCL_SOCKET_IFNAME syntax, as MIXCCL_SOCKET_IFNAME uses it: "eth,ib" prefixes,
// "^docker" excludes, "=eth0" exact names. Stateless, so tools built apart from the library
// (mixccl-topo) apply the very same rule.
#pragma once

#include <string>

namespace mixccl {

// True if the interface name passes the spec (empty spec: not loopback, not docker*).
bool interfaceMatches(const std::string& spec, const std::string& name);

}  // namespace mixccl
