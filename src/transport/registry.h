// Per-pair transport selection. The registry is an ordered list of transports; each pair of
// ranks gets the first whose canConnect() accepts it and whose connect() does not decline it,
// the way NCCL walks its transport table for each peer: shared memory within a host, then the
// network transports (ucx, next ofi) for the pairs the plan gives them (net_choice.h), then
// sockets, which serve any pair. Both ranks of a pair walk the same
// list with the same exchanged peer information, so they agree.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "transport/transport.h"

namespace mixccl {

class TransportRegistry {
 public:
  // Appends a transport; earlier ones are preferred.
  void add(std::unique_ptr<Transport> t) { transports_.push_back(std::move(t)); }
  const std::vector<std::unique_ptr<Transport>>& transports() const { return transports_; }

  // Connects every peer of setup.rank: (*out)[p] is the chosen connection (null for the rank
  // itself). Fails if some pair is left without one.
  Result connectAll(const TransportSetup& setup, std::vector<std::unique_ptr<Connection>>* out);

 private:
  std::vector<std::unique_ptr<Transport>> transports_;
};

// Tests only: when set, connectAll passes every connection it made through this wrapper, so a
// test can stand a transport double (one that declares device-memory capability, say) in
// front of a real connection. Process-wide; set before creating a communicator.
using ConnectionWrapper = std::function<std::unique_ptr<Connection>(std::unique_ptr<Connection>)>;
void setConnectionWrapperForTesting(ConnectionWrapper wrapper);

}  // namespace mixccl
