#include "transport/registry.h"

#include "base/error.h"

namespace mixccl {

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
  return mixcclSuccess;
}

bool isKnownNetName(const std::string& name) {
  if (name == "auto" || name == "socket" || name == "shm") return true;
#ifdef MIXCCL_HAVE_OFI
  if (name == "ofi") return true;
#endif
  return false;
}

}  // namespace mixccl
