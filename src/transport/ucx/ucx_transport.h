// The UCX transport (docs/transports.md, "UCX"): one UCP worker per communicator, one endpoint
// per peer it serves, worker addresses and tag keys exchanged over the pairs' authenticated
// control connections (ucx_handshake.h), tagged messages (ucx_tag.h).
#pragma once

#include <memory>
#include <mutex>
#include <unordered_set>
#include <vector>

#include "transport/transport.h"
#include "transport/ucx/ucx_worker.h"

namespace mixccl {

class UcxTransport : public Transport {
 public:
  // serve[p]: the selection (net_choice.h) gave the pair with peer p to ucx.
  explicit UcxTransport(std::vector<bool> serve) : serve_(std::move(serve)) {}
  const char* name() const override { return "ucx"; }
  bool canConnect(const PeerInfo&, const PeerInfo& peer) const override {
    return peer.rank >= 0 && (size_t)peer.rank < serve_.size() && serve_[peer.rank];
  }
  // Collective over the candidate pairs: starts the worker, exchanges addresses and keys,
  // creates the endpoints, and agrees with every peer that both sides succeeded. Never
  // declines: a pair given to ucx that cannot use it is an error naming ucx.
  Result connect(const TransportSetup& setup, const std::vector<int>& candidates,
                 std::vector<std::unique_ptr<Connection>>* out) override;
  // One pair on first use: the worker starts with the first pair (both ranks say whether it
  // did), then address and keys go over the pair's control connection; the endpoint and its
  // wire-up wait for the connection's start() (UcxConnection::openAtStart).
  Result connectOnFirstUse(const TransportSetup& setup, int peer,
                           std::unique_ptr<Connection>* out) override;

 private:
  std::vector<bool> serve_;
  std::shared_ptr<UcxWorker> worker_;
  // connectOnFirstUse runs on two threads at once (a dial and an answer): the worker's creation
  // and the keys handed out so far (a receive key must be unique on the worker) are shared.
  std::mutex firstUseMutex_;
  Result workerStarted_ = mixcclSuccess;
  std::unordered_set<uint32_t> keysUsed_;
};

}  // namespace mixccl
