// What every rank tells all others at init, exchanged through the rendezvous root.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "bootstrap/socket_address.h"

namespace mixccl {

struct PeerInfo {
  int32_t rank;
  int32_t pid;
  uint64_t hostHash;       // same value <=> same host (hash of hostname and boot id)
  char hostname[64];
  WireAddress listenAddr;  // where this rank's transport accepts connections
  char adaptor[16];        // device adaptor name ("host", ...)
  int32_t device;          // device index as the adaptor numbers it (-1: none)
  int32_t domainColor;      // MIXCCL_DOMAIN_SPLIT color of this rank (0: not split)
};
static_assert(sizeof(PeerInfo) == 128, "PeerInfo is part of the wire format");

// "rank 3 (host pid 1234)", for messages; "rank 3" when r is outside the table.
std::string describePeer(const std::vector<PeerInfo>& peers, int r);

// Fills the host fields (hostname, hostHash, pid) of the calling process.
void fillLocalHostInfo(PeerInfo* info);

}  // namespace mixccl
