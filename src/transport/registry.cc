#include "transport/registry.h"

#include "base/error.h"

namespace mixccl {
namespace {
ConnectionWrapper& testWrapper() {
  static ConnectionWrapper w;
  return w;
}
}  // namespace

Result Transport::connectOnFirstUse(const TransportSetup& setup, int peer,
                                    std::unique_ptr<Connection>*) {
  return raiseError(mixcclInternalError, "rank %d: transport '%s' cannot connect %s on first use",
                    setup.rank, name(), describePeer(*setup.peers, peer).c_str());
}

void setConnectionWrapperForTesting(ConnectionWrapper wrapper) { testWrapper() = std::move(wrapper); }

Result TransportRegistry::connectAll(const TransportSetup& setup,
                                     std::vector<std::unique_ptr<Connection>>* out) {
  const std::vector<PeerInfo>& peers = *setup.peers;
  out->clear();
  out->resize(setup.nranks);
  for (const std::unique_ptr<Transport>& t : transports_) {
    std::vector<int> candidates;
    for (int p = 0; p < setup.nranks; ++p)
      if (p != setup.rank && !(*out)[p] && t->canConnect(peers[setup.rank], peers[p]))
        candidates.push_back(p);
    if (!candidates.empty()) MIXCCL_CHECK(t->connect(setup, candidates, out));
  }
  for (int p = 0; p < setup.nranks; ++p)
    if (p != setup.rank && !(*out)[p])
      return raiseError(mixcclInternalError, "rank %d: no transport can reach %s", setup.rank,
                        describePeer(peers, p).c_str());
  if (testWrapper())
    for (int p = 0; p < setup.nranks; ++p)
      if ((*out)[p]) (*out)[p] = testWrapper()((std::move((*out)[p])));
  return mixcclSuccess;
}

}  // namespace mixccl
