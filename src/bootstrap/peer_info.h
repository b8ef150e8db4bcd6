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
  // What every rank must have set alike, compared as soon as the table is exchanged (before any
  // pair connects: with connections on first use a pair may never meet to compare them).
  char net[16];             // the transport it asked for (MIXCCL_NET / config.netName)
  uint64_t hierHostsHash;   // hash of its MIXCCL_HIER_HOSTS value (0: unset)
  // When its pairs connect (core/connect_mode.h): what it asked for and what it would choose by
  // itself, and whether its host has an active RDMA port (which makes MIXCCL_NET=auto eager).
  uint8_t connectAsked;     // MIXCCL_CONNECT: kConnectAuto, kConnectEager, kConnectLazy or kConnectInvalid
  uint8_t lazyAlone;        // 1: it would connect on first use by itself, 0: at init
  uint8_t rdmaPort;         // 1: an active RDMA port on its host
  uint8_t reserved[5];      // zero
};
static_assert(sizeof(PeerInfo) == 160, "PeerInfo is part of the wire format");

// PeerInfo::connectAsked values.
constexpr uint8_t kConnectAuto = 0;
constexpr uint8_t kConnectEager = 1;
constexpr uint8_t kConnectLazy = 2;
// A value that is none of them: the rank still takes part in the exchange so that every rank
// fails init naming it, instead of the others waiting for it until the timeout.
constexpr uint8_t kConnectInvalid = 3;

// "rank 3 (host pid 1234)", for messages; "rank 3" when r is outside the table.
std::string describePeer(const std::vector<PeerInfo>& peers, int r);

// Fills the host fields (hostname, hostHash, pid) of the calling process.
void fillLocalHostInfo(PeerInfo* info);

}  // namespace mixccl
