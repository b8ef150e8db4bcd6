// Full-mesh connection over services->allGather. Every rank creates one pair per peer and
// publishes, for each peer, the address of the pair meant for that peer; after one allGather,
// rank r finds in rank i's contribution the address of i's pair for r and connects to it.
#include "gloo_mesh.h"

#include <gloo/transport/address.h>
#include <gloo/transport/context.h>
#include <gloo/transport/tcp/device.h>
#include <signal.h>
#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <stdexcept>
#include <string>
#include <vector>

namespace mixccl_gloo {
namespace {

constexpr size_t kHostBytes = 256;  // host name, for the pairs' local rank
constexpr size_t kAddrBytes = gloo::transport::Address::kMaxByteSize;
constexpr size_t kSlotBytes = sizeof(uint32_t) + kAddrBytes;  // length + address

std::string hostName() {
  char buf[kHostBytes] = {0};
  if (gethostname(buf, sizeof buf - 1) != 0) return "localhost";
  return buf;
}

// Gloo's TCP pairs write with writev, which raises SIGPIPE when the peer has gone; its default
// action ends this rank before Gloo can report the broken pair (a gloo rank died so, exit
// status 141, when a peer was killed mid-collective). PyTorch's Python ignores SIGPIPE, which
// is where Gloo usually runs. So a program that left SIGPIPE at its default gets it ignored
// (writes then fail with EPIPE, which Gloo reports); one that installed a handler keeps it.
void ignoreSigpipeIfDefault() {
  struct sigaction old {};
  if (sigaction(SIGPIPE, nullptr, &old) != 0 || old.sa_handler != SIG_DFL) return;
  struct sigaction ignore {};
  ignore.sa_handler = SIG_IGN;
  sigemptyset(&ignore.sa_mask);
  sigaction(SIGPIPE, &ignore, nullptr);
}

}  // namespace

std::shared_ptr<gloo::transport::Device> createTcpDevice() {
  ignoreSigpipeIfDefault();
  gloo::transport::tcp::attr attr;
  const char* ifname = std::getenv("MIXCCL_GLOO_IFNAME");
  const char* host = std::getenv("MIXCCL_GLOO_HOSTNAME");
  if (ifname && *ifname) {
    attr.iface = ifname;
  } else if (host && *host) {
    attr.hostname = host;
  } else {
    attr.hostname = hostName();
  }
  return gloo::transport::tcp::CreateDevice(attr);
}

void MeshContext::connectFullMesh(const std::shared_ptr<gloo::transport::Device>& dev,
                                  const mixcclAdaptorServices_t& services) {
  auto tctx = dev->createContext(rank, size);
  tctx->setTimeout(getTimeout());  // pairs take the context's timeout when created

  // Contribution: [host name][size slots: address of my pair for rank i (empty for me)].
  const size_t contribution = kHostBytes + size * kSlotBytes;
  std::vector<char> mine(contribution, 0);
  const std::string host = hostName();
  std::memcpy(mine.data(), host.data(), std::min(host.size(), kHostBytes - 1));
  for (int i = 0; i < size; ++i) {
    if (i == rank) continue;
    auto& pair = tctx->createPair(i);
    std::vector<char> addr = pair->address().bytes();
    if (addr.size() > kAddrBytes)
      throw std::runtime_error("gloo pair address of " + std::to_string(addr.size()) +
                               " bytes exceeds " + std::to_string(kAddrBytes));
    char* slot = mine.data() + kHostBytes + i * kSlotBytes;
    uint32_t len = static_cast<uint32_t>(addr.size());
    std::memcpy(slot, &len, sizeof len);
    std::memcpy(slot + sizeof len, addr.data(), addr.size());
  }
  std::vector<char> all(contribution * size);
  mixcclResult_t rc = services.allGather(services.ctx, mine.data(), all.data(), contribution);
  if (rc != mixcclSuccess)
    throw std::runtime_error("address exchange (services allGather) failed with code " +
                             std::to_string(rc));

  // Gloo wants this process's rank among the ranks on its host.
  int localRank = 0;
  for (int i = 0; i < rank; ++i)
    if (std::strncmp(all.data() + i * contribution, host.c_str(), kHostBytes) == 0) ++localRank;

  for (int i = 0; i < size; ++i) {
    if (i == rank) continue;
    const char* slot = all.data() + i * contribution + kHostBytes + rank * kSlotBytes;
    uint32_t len = 0;
    std::memcpy(&len, slot, sizeof len);
    if (len == 0 || len > kAddrBytes)
      throw std::runtime_error("rank " + std::to_string(i) + " published an invalid address");
    auto& pair = tctx->getPair(i);
    pair->setLocalRank(localRank);
    pair->connect(std::vector<char>(slot + sizeof len, slot + sizeof len + len));
  }
  device_ = dev;
  transportContext_ = std::move(tctx);
}

}  // namespace mixccl_gloo
