// Choosing the libfabric provider: one fi_info for FI_EP_RDM with tagged messages, from the
// provider list MIXCCL_OFI_PROVIDER names ("tcp;ofi_rxm", "shm", "verbs;ofi_rxm", "efa").
// Nothing is chosen silently: a list that matches no provider is an error naming it.
#pragma once

#include <rdma/fabric.h>

#include <memory>
#include <string>

#include "base/result.h"
#include "bootstrap/peer_info.h"
#include "transport/ofi/ofi_library.h"

namespace mixccl {

struct OfiInfoDeleter {
  void operator()(fi_info* i) const { ofiFreeinfo(i); }
};
using OfiInfoPtr = std::unique_ptr<fi_info, OfiInfoDeleter>;

// The libfabric API version mixccl asks for: 1.10 has FI_HMEM and FI_MR_HMEM, and is old
// enough for the libraries of current cluster images.
constexpr uint32_t kOfiApiVersion = FI_VERSION(1, 10);

struct OfiChoice {
  OfiInfoPtr info;            // the one entry used (its own copy, next == nullptr)
  bool directedRecv = false;  // receives can be restricted to one source address
  bool hmem = false;          // the provider offers FI_HMEM (device memory registration)
};

// Asks libfabric for providers matching `providers` and picks one: where several domains
// match (tcp: one per interface), the one whose address is local.listenAddr, the interface
// the rest of mixccl uses, else the first. FI_DIRECTED_RECV is asked for and dropped only if
// no entry has it.
Result chooseOfiProvider(const std::string& providers, const PeerInfo& local, OfiChoice* out);

// "tcp;ofi_rxm (fabric 127.0.0.1/32, domain lo)", for logs.
std::string describeOfiInfo(const fi_info* info);

}  // namespace mixccl
