// The libfabric transport (MIXCCL_NET=ofi): every pair of ranks, same host included, over one
// FI_EP_RDM endpoint per communicator of the provider MIXCCL_OFI_PROVIDER names. Endpoint
// addresses and the pairs' tag keys travel only over the pairs' authenticated control
// connections, so an address in the address vector always belongs to a rank that proved it
// knows the communicator's secret. docs/transports.md ("libfabric") describes it.
#pragma once

#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "transport/ofi/ofi_endpoint.h"
#include "transport/transport.h"

namespace mixccl {

class OfiTransport : public Transport {
 public:
  // provider: a libfabric provider list such as "tcp;ofi_rxm" or "shm". serve[p]: the selection
  // (net_choice.h) gave the pair with peer p to ofi.
  OfiTransport(std::string provider, std::vector<bool> serve)
      : provider_(std::move(provider)), serve_(std::move(serve)) {}
  const char* name() const override { return "ofi"; }
  // The pairs the selection gave it: the provider decides what it reaches, and connect() says
  // plainly when it cannot (shm to another host) instead of leaving the pair to another transport.
  bool canConnect(const PeerInfo&, const PeerInfo& peer) const override {
    return peer.rank >= 0 && (size_t)peer.rank < serve_.size() && serve_[peer.rank];
  }
  Result connect(const TransportSetup& setup, const std::vector<int>& candidates,
                 std::vector<std::unique_ptr<Connection>>* out) override;
  // One pair on first use: the endpoint opens with the first pair, then the pair's hellos go
  // over its control connection; the address vector and the progress are the connection's
  // start()'s. No first message is exchanged: the engine progresses whatever the provider
  // sets up when the pair's first message goes (rxm's connection).
  Result connectOnFirstUse(const TransportSetup& setup, int peer,
                           std::unique_ptr<Connection>* out) override;
  // Host memory always; device memory where the provider offers FI_HMEM (known once connected).
  bool supportsMemory(MemoryKind kind) const override;

 private:
  std::string provider_;
  std::vector<bool> serve_;
  std::shared_ptr<OfiEndpoint> endpoint_;
  // connectOnFirstUse runs on two threads at once (a dial and an answer): the endpoint's opening
  // is shared.
  std::mutex firstUseMutex_;
  Result opened_ = mixcclSuccess;
};

}  // namespace mixccl
