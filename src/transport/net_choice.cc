#include "transport/net_choice.h"

#include <cstring>

#include "base/error.h"

namespace mixccl {
namespace {

constexpr uint32_t kNetHelloMagic = 0x4854454e;  // "NETH"
constexpr uint32_t kNetHelloRdma = 1;            // an active RDMA port on this host
constexpr uint32_t kNetHelloUcx = 2;             // this build has ucx
constexpr uint32_t kNetHelloOfi = 4;             // this build has ofi

struct NetHello {
  uint32_t magic;
  uint32_t flags;
  uint64_t commHash;
  char name[16];
};
static_assert(sizeof(NetHello) == 32, "NetHello is part of the wire format");

}  // namespace

PairChoice planPair(const std::string& name, const std::string& source, bool sameHost,
                    bool bothRdma, bool bothUcx, bool bothOfi) {
  const std::string asked = source == "default" ? "default auto" : source + "=" + name;
  if (name == "socket" || name == "ucx" || name == "ofi") return {name, asked + ": every pair"};
  if (name == "shm")
    return sameHost ? PairChoice{"shm", asked + ", same host"}
                    : PairChoice{"socket", asked + ", other host: shared memory cannot cross hosts"};
  // auto
  if (sameHost) return {"shm", asked + ", same host"};
  if (bothRdma && bothUcx) return {"ucx", asked + ", other host, both ranks have an active RDMA port"};
  if (bothRdma && bothOfi) return {"ofi", asked + ", other host, both ranks have an active RDMA port"};
  if (!bothRdma) return {"socket", asked + ", other host, no active RDMA port on both ranks"};
  return {"socket", asked + ", other host, RDMA on both ranks but no RDMA transport built in both"};
}

bool netBuilt(const std::string& name) {
  if (name == "auto" || name == "socket" || name == "shm") return true;
#ifdef MIXCCL_HAVE_UCX
  if (name == "ucx") return true;
#endif
#ifdef MIXCCL_HAVE_OFI
  if (name == "ofi") return true;
#endif
  return false;
}

bool netKnown(const std::string& name) { return netBuilt(name) || name == "ucx" || name == "ofi"; }

std::string netNamesBuilt() {
  std::string s = "auto, socket, shm";
  if (netBuilt("ucx")) s += ", ucx";
  if (netBuilt("ofi")) s += ", ofi";
  return s;
}

Result agreeOnNet(int rank, uint64_t commHash, const std::vector<PeerInfo>& peers,
                  const std::vector<std::vector<Socket>>& conns, const Deadline& deadline,
                  const NetRequest& mine, std::vector<PairChoice>* out) {
  const int nranks = (int)peers.size();
  NetHello hello{};
  hello.magic = kNetHelloMagic;
  hello.flags = (mine.rdma ? kNetHelloRdma : 0) | (netBuilt("ucx") ? kNetHelloUcx : 0) |
                (netBuilt("ofi") ? kNetHelloOfi : 0);
  hello.commHash = commHash;
  snprintf(hello.name, sizeof(hello.name), "%s", mine.name.c_str());
  std::vector<std::string> names(nranks);
  for (int p = 0; p < nranks; ++p) {
    if (p == rank || conns[p].empty()) continue;
    names[p] = describePeer(peers, p);
    MIXCCL_CHECK(sendAllBefore(conns[p][0], &hello, sizeof(hello), deadline, names[p].c_str()));
  }
  out->assign(nranks, PairChoice{});
  for (int p = 0; p < nranks; ++p) {
    if (p == rank || conns[p].empty()) continue;
    NetHello theirs{};
    MIXCCL_CHECK(recvAllBefore(conns[p][0], &theirs, sizeof(theirs), deadline, names[p].c_str()));
    if (theirs.magic != kNetHelloMagic || theirs.commHash != commHash ||
        memchr(theirs.name, 0, sizeof(theirs.name)) == nullptr)
      return raiseError(mixcclRemoteError, "rank %d: %s sent an invalid transport hello", rank,
                        names[p].c_str());
    std::string theirName = theirs.name;
    if (theirName != mine.name)
      return raiseError(mixcclInvalidUsage, "rank %d asked for transport '%s' (%s) but %s asked "
                        "for '%s': every rank of a communicator must ask for the same transport "
                        "(MIXCCL_NET / config.netName)", rank, mine.name.c_str(),
                        mine.source.c_str(), names[p].c_str(), theirName.c_str());
    bool sameHost = peers[p].hostHash == peers[rank].hostHash;
    uint32_t both = hello.flags & theirs.flags;
    (*out)[p] = planPair(mine.name, mine.source, sameHost, (both & kNetHelloRdma) != 0,
                         (both & kNetHelloUcx) != 0, (both & kNetHelloOfi) != 0);
  }
  return mixcclSuccess;
}

}  // namespace mixccl
