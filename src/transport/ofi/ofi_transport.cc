#include "transport/ofi/ofi_transport.h"

#include <algorithm>
#include <poll.h>
#include <sched.h>

#include <cstring>

#include "base/error.h"
#include "base/log.h"
#include "bootstrap/auth.h"
#include "transport/ofi/ofi_connection.h"
#include "transport/ofi/ofi_provider.h"
#include "transport/ofi/ofi_tag.h"

namespace mixccl {
namespace {

// The shm provider's name for this rank's region: the communicator and the rank, so that a
// failed peer's can be found (OfiEndpoint::unlinkPeerShmName).
std::string shmNameOf(const TransportSetup& setup) {
  char name[64];
  snprintf(name, sizeof(name), "mixccl-ofi-%016llx-%d", (unsigned long long)setup.commHash,
           setup.rank);
  return name;
}

constexpr uint32_t kOfiHelloMagic = 0x4849464f;  // "OFIH"

// What each rank of a pair tells the other over their control connection before any
// libfabric message: whether its endpoint is up, its address, its half of the pair's tag key,
// its largest message and its provider (both must use the same).
struct OfiHello {
  uint32_t magic;
  uint32_t ok;
  uint64_t commHash;
  uint32_t keyPart;
  uint32_t addrLen;
  uint64_t maxMessage;
  char provider[64];
  char addr[256];
};

// A message larger than this goes in pieces even where the provider takes more at once: the
// pieces keep every single operation (and any provider bounce buffer) bounded.
constexpr size_t kMaxPiece = size_t(1) << 30;

Result exchangeHellos(const TransportSetup& setup, const std::vector<int>& peers,
                      const std::vector<OfiHello>& out, std::vector<OfiHello>* in) {
  const std::vector<std::vector<Socket>>& conns = *setup.conns;
  for (size_t i = 0; i < peers.size(); ++i)
    MIXCCL_CHECK(sendAllBefore(conns[peers[i]][0], &out[i], sizeof(OfiHello), setup.deadline,
                               describePeer(*setup.peers, peers[i]).c_str()));
  in->resize(peers.size());
  for (size_t i = 0; i < peers.size(); ++i)
    MIXCCL_CHECK(recvAllBefore(conns[peers[i]][0], &(*in)[i], sizeof(OfiHello), setup.deadline,
                               describePeer(*setup.peers, peers[i]).c_str()));
  return mixcclSuccess;
}

bool isShmProvider(const fi_info* info) {
  const char* p = info->fabric_attr->prov_name;
  return p && strncmp(p, "shm", 3) == 0;
}

// The peer's hello (its fields bounded before use) against ours.
Result checkHello(const TransportSetup& setup, int p, const OfiEndpoint* ep, const OfiHello& mine,
                  OfiHello* t) {
  const std::vector<PeerInfo>& peers = *setup.peers;
  const std::string who = describePeer(peers, p);
  if (t->magic != kOfiHelloMagic || t->commHash != setup.commHash || t->ok > 1 ||
      (t->ok && (t->addrLen == 0 || t->addrLen > sizeof(t->addr))))
    return raiseError(mixcclRemoteError, "rank %d: %s sent an invalid libfabric hello (is "
                      "MIXCCL_NET the same on every rank?)", setup.rank, who.c_str());
  if (!t->ok)
    return raiseError(mixcclRemoteError, "rank %d: %s could not start libfabric (see its log)",
                      setup.rank, who.c_str());
  t->provider[sizeof(t->provider) - 1] = 0;
  if (strcmp(t->provider, mine.provider) != 0)
    return raiseError(mixcclInvalidUsage, "rank %d: %s uses libfabric provider %s, this rank "
                      "%s: MIXCCL_OFI_PROVIDER must be the same on every rank", setup.rank,
                      who.c_str(), t->provider, mine.provider);
  if (isShmProvider(ep->info()) && peers[p].hostHash != peers[setup.rank].hostHash)
    return raiseError(mixcclInvalidUsage, "rank %d: libfabric provider shm reaches only ranks "
                      "of this host, and %s is on another (MIXCCL_OFI_PROVIDER=\"tcp;ofi_rxm\" "
                      "or the fabric's provider reaches it)", setup.rank, who.c_str());
  return mixcclSuccess;
}

// Every pair exchanges one tagged message each way before the proxy starts: connection-based
// providers (rxm) set up their connections now, with both ranks progressing, instead of in
// the middle of the first collective (or of a goodbye nobody waits for); and a peer the fabric
// cannot reach is an error at init that names it.
Result handshake(OfiEndpoint* ep, const TransportSetup& setup, const std::vector<int>& peers,
                 const std::vector<fi_addr_t>& addrs, const std::vector<uint32_t>& keys) {
  std::string error;
  for (size_t i = 0; i < peers.size(); ++i) {
    const std::string who = describePeer(*setup.peers, peers[i]);
    if (!ep->postOrphan(false, addrs[i], ofiTag(keys[i], true, peers[i], 1), setup.deadline, &error) ||
        !ep->postOrphan(true, addrs[i], ofiTag(keys[i], true, setup.rank, 1), setup.deadline, &error))
      return raiseError(mixcclSystemError, "rank %d: libfabric provider %s: first message with %s "
                        "failed: %s", setup.rank, ep->provider().c_str(), who.c_str(), error.c_str());
  }
  // A peer whose own init failed after the exchange (its log says why) closes its control
  // connection: that ends the wait at once instead of at the init deadline.
  std::vector<pollfd> control;
  for (int p : peers) control.push_back(pollfd{(*setup.conns)[p][0].fd(), POLLRDHUP, 0});
  for (int round = 0;
       ep->inFlight() > 0 && ep->orphanError().empty() && !setup.deadline.expired(); ++round) {
    if (ep->progress() == 0) sched_yield();
    if (round % 256 != 0 || poll(control.data(), control.size(), 0) <= 0) continue;
    for (size_t i = 0; i < control.size(); ++i)
      if (control[i].revents & (POLLRDHUP | POLLHUP | POLLERR))
        return raiseError(mixcclRemoteError, "rank %d: %s closed its connection during the "
                          "libfabric handshake (its init failed: see its log)", setup.rank,
                          describePeer(*setup.peers, peers[i]).c_str());
  }
  for (size_t i = 0; i < peers.size(); ++i) {
    bool recvLeft = ep->tagInFlight(ofiTag(keys[i], true, peers[i], 1));
    bool sendLeft = ep->tagInFlight(ofiTag(keys[i], true, setup.rank, 1));
    if (!ep->orphanError().empty() || recvLeft || sendLeft)
      return raiseError(mixcclRemoteError, "rank %d: libfabric provider %s: the first message "
                        "%s %s %s", setup.rank, ep->provider().c_str(),
                        recvLeft ? "from" : "to", describePeer(*setup.peers, peers[i]).c_str(),
                        !ep->orphanError().empty() ? ("failed: " + ep->orphanError()).c_str()
                                                   : "did not arrive within the timeout (is the "
                                                     "fabric between the two hosts up?)");
  }
  return mixcclSuccess;
}

}  // namespace

bool OfiTransport::supportsMemory(MemoryKind kind) const {
  return kind == MemoryKind::Host || (endpoint_ && endpoint_->hmem());
}

Result OfiTransport::connect(const TransportSetup& setup, const std::vector<int>& candidates,
                             std::vector<std::unique_ptr<Connection>>* out) {
  const std::vector<PeerInfo>& peers = *setup.peers;
  if (candidates.empty()) return mixcclSuccess;
  if (setup.nranks > kOfiMaxRanks)
    return raiseError(mixcclInvalidUsage, "rank %d: the libfabric transport carries the rank in "
                      "%d bits of its tags: at most %d ranks (this communicator has %d)",
                      setup.rank, kOfiRankBits, kOfiMaxRanks, setup.nranks);
  // Open the endpoint; a failure is still announced to every peer (ok = 0) so that they fail
  // with a message pointing here instead of waiting for a hello that never comes.
  std::shared_ptr<OfiEndpoint> ep(new OfiEndpoint);
  OfiChoice choice;
  Result mine = chooseOfiProvider(provider_, peers[setup.rank], &choice);
  if (mine == mixcclSuccess) mine = ep->open(std::move(choice), setup.rank, shmNameOf(setup));
  std::vector<OfiHello> hellos(candidates.size());
  for (size_t i = 0; i < candidates.size(); ++i) {
    OfiHello& h = hellos[i];
    memset(&h, 0, sizeof(h));
    h.magic = kOfiHelloMagic;
    h.commHash = setup.commHash;
    if (mine != mixcclSuccess) continue;
    h.ok = 1;
    MIXCCL_CHECK(randomBytes(&h.keyPart, sizeof(h.keyPart)));
    h.addrLen = (uint32_t)ep->address().size();
    if (h.addrLen > sizeof(h.addr))
      return raiseError(mixcclInternalError, "rank %d: libfabric address of %u bytes (at most "
                        "%zu fit the hello)", setup.rank, h.addrLen, sizeof(h.addr));
    memcpy(h.addr, ep->address().data(), h.addrLen);
    h.maxMessage = ep->maxMessage();
    snprintf(h.provider, sizeof(h.provider), "%s", ep->info()->fabric_attr->prov_name);
  }
  std::vector<OfiHello> theirs;
  MIXCCL_CHECK(exchangeHellos(setup, candidates, hellos, &theirs));
  if (mine != mixcclSuccess) return mine;

  std::vector<std::unique_ptr<Connection>> made(setup.nranks);
  std::vector<fi_addr_t> addrs;
  std::vector<uint32_t> keys;
  for (size_t i = 0; i < candidates.size(); ++i) {
    const int p = candidates[i];
    const std::string who = describePeer(peers, p);
    OfiHello& t = theirs[i];
    MIXCCL_CHECK(checkHello(setup, p, ep.get(), hellos[i], &t));
    fi_addr_t addr = FI_ADDR_UNSPEC;
    std::string error;
    if (!ep->insert(std::string(t.addr, t.addrLen), &addr, &error))
      return raiseError(mixcclRemoteError, "rank %d: the libfabric address of %s was refused: %s",
                        setup.rank, who.c_str(), error.c_str());
    // Both halves make the key, so neither rank alone (nor a replay of an old hello) fixes it.
    uint32_t key = (hellos[i].keyPart ^ t.keyPart) & kOfiKeyMask;
    size_t piece = std::min<size_t>({kMaxPiece, (size_t)t.maxMessage, ep->maxMessage()});
    made[p].reset(new OfiConnection(p, setup.rank, ep, addr, key, piece, i == 0));
    addrs.push_back(addr);
    keys.push_back(key);
    INFO(kLogInit | kLogNet, "rank %d: transport to %s: ofi (provider %s, %s, %s, mr_mode 0x%llx%s)",
         setup.rank, who.c_str(), ep->provider().c_str(),
         ep->waitFd() >= 0 ? "wait fd" : "polled",
         ep->directedRecv() ? "directed receives" : "receives matched by tag only",
         (unsigned long long)ep->info()->domain_attr->mr_mode, ep->hmem() ? ", FI_HMEM" : "");
  }
  Result shaken = handshake(ep.get(), setup, candidates, addrs, keys);
  ep->unlinkShmName();  // every peer has mapped our region now (or init fails anyway)
  MIXCCL_CHECK(shaken);
  for (int p : candidates) (*out)[p] = std::move(made[p]);
  endpoint_ = ep;
  return mixcclSuccess;
}

Result OfiTransport::connectOnFirstUse(const TransportSetup& setup, int peer,
                                       std::unique_ptr<Connection>* out) {
  const std::vector<PeerInfo>& peers = *setup.peers;
  const std::string who = describePeer(peers, peer);
  if (setup.nranks > kOfiMaxRanks)
    return raiseError(mixcclInvalidUsage, "rank %d: the libfabric transport carries the rank in "
                      "%d bits of its tags: at most %d ranks (this communicator has %d)",
                      setup.rank, kOfiRankBits, kOfiMaxRanks, setup.nranks);
  std::shared_ptr<OfiEndpoint> ep;
  Result mine;
  {
    std::lock_guard<std::mutex> lock(firstUseMutex_);
    if (!endpoint_ && opened_ == mixcclSuccess) {
      std::shared_ptr<OfiEndpoint> opening(new OfiEndpoint);
      OfiChoice choice;
      opened_ = chooseOfiProvider(provider_, peers[setup.rank], &choice);
      if (opened_ == mixcclSuccess)
        opened_ = opening->open(std::move(choice), setup.rank, shmNameOf(setup));
      if (opened_ == mixcclSuccess) endpoint_ = opening;
    }
    mine = opened_;
    ep = endpoint_;
  }
  // A rank whose endpoint did not open still says so (ok = 0): the peer fails pointing here.
  OfiHello hello;
  memset(&hello, 0, sizeof(hello));
  hello.magic = kOfiHelloMagic;
  hello.commHash = setup.commHash;
  if (mine == mixcclSuccess) {
    hello.ok = 1;
    MIXCCL_CHECK(randomBytes(&hello.keyPart, sizeof(hello.keyPart)));
    hello.addrLen = (uint32_t)ep->address().size();
    if (hello.addrLen > sizeof(hello.addr))
      return raiseError(mixcclInternalError, "rank %d: libfabric address of %u bytes (at most "
                        "%zu fit the hello)", setup.rank, hello.addrLen, sizeof(hello.addr));
    memcpy(hello.addr, ep->address().data(), hello.addrLen);
    hello.maxMessage = ep->maxMessage();
    snprintf(hello.provider, sizeof(hello.provider), "%s", ep->info()->fabric_attr->prov_name);
  }
  std::vector<OfiHello> theirs;
  MIXCCL_CHECK(exchangeHellos(setup, {peer}, {hello}, &theirs));
  if (mine != mixcclSuccess)
    return raiseError(mine, "rank %d: libfabric could not start for %s (provider %s)", setup.rank,
                      who.c_str(), provider_.c_str());
  MIXCCL_CHECK(checkHello(setup, peer, ep.get(), hello, &theirs[0]));
  OfiHello& t = theirs[0];
  const uint32_t key = (hello.keyPart ^ t.keyPart) & kOfiKeyMask;
  const size_t piece = std::min<size_t>({kMaxPiece, (size_t)t.maxMessage, ep->maxMessage()});
  out->reset(new OfiConnection(peer, setup.rank, ep, std::string(t.addr, t.addrLen), key, piece));
  INFO(kLogInit | kLogNet, "rank %d: transport to %s: ofi on first use (provider %s, %s, %s)",
       setup.rank, who.c_str(), ep->provider().c_str(), ep->waitFd() >= 0 ? "wait fd" : "polled",
       ep->directedRecv() ? "directed receives" : "receives matched by tag only");
  return mixcclSuccess;
}

}  // namespace mixccl
