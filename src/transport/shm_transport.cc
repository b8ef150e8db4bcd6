#include "transport/shm_transport.h"

#include <sys/prctl.h>
#include <sys/uio.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cinttypes>
#include <cstddef>
#include <cstdio>
#include <cstring>
#include <random>

#include "base/error.h"
#include "base/log.h"
#include "base/pow2.h"
#include "transport/control_exchange.h"
#include "transport/shm_sizing.h"

namespace mixccl {

FrameCheck validateCmaFrame(const FrameHeader& h, size_t postedBytes, size_t receivedBytes,
                            uint64_t knownTotal) {
  if (h.magic != kFrameMagic) return FrameCheck::BadMagic;
  if (h.flags != kFrameFlagCma) return FrameCheck::BadFlags;
  if (h.total != postedBytes) return FrameCheck::SizeMismatch;
  if (knownTotal != UINT64_MAX || receivedBytes != 0) return FrameCheck::Overfull;
  if (h.offset != 0 || h.length != sizeof(CmaDescriptor)) return FrameCheck::OutOfBounds;
  return FrameCheck::Ok;
}

bool validCmaDescriptor(const CmaDescriptor& d, size_t postedBytes) {
  return d.bytes == postedBytes && d.addr != 0 && d.addr + d.bytes >= d.addr;
}

int cmaRead(pid_t pid, const CmaDescriptor& d, void* dst) {
  char* out = static_cast<char*>(dst);
  uint64_t done = 0;
  while (done < d.bytes) {
    iovec local{out + done, (size_t)(d.bytes - done)};
    iovec remote{reinterpret_cast<void*>((uintptr_t)(d.addr + done)), (size_t)(d.bytes - done)};
    ssize_t k = process_vm_readv(pid, &local, 1, &remote, 1, 0);
    if (k < 0) {
      if (errno == EINTR) continue;
      return errno;
    }
    if (k == 0) return EFAULT;
    done += (uint64_t)k;
  }
  return 0;
}

std::string shmSegmentName(uint64_t commHash, int from, int to) {
  char name[64];
  snprintf(name, sizeof(name), "/mixccl-%016" PRIx64 "-%d-%d", commHash, from, to);
  return name;
}

bool shmRingNeighbours(int rank, int peer, const std::vector<PeerInfo>& peers) {
  const int n = (int)peers.size();
  if ((rank + 1) % n == peer || (peer + 1) % n == rank) return true;
  // The host's ranks in rank order: the chains inside a host (host_hierarchical.h) follow it.
  std::vector<int> host;
  int me = -1;
  for (int r = 0; r < n; ++r)
    if (peers[r].hostHash == peers[rank].hostHash) {
      if (r == rank) me = (int)host.size();
      host.push_back(r);
    }
  const int k = (int)host.size();
  return host[(me + 1) % k] == peer || host[(me + k - 1) % k] == peer;
}

size_t shmRingBytesTo(const ShmParams& p, const std::vector<PeerInfo>& peers, int peer) {
  size_t bytes = p.ringBytes;
  if (!shmRingNeighbours(p.rank, peer, peers)) {
    const int n = (int)peers.size(), gap = peer > p.rank ? peer - p.rank : p.rank - peer;
    bytes = p.farRingBytes ? p.farRingBytes
                           : shmFarRingBytesFor(p.ringBytes, n, std::min(gap, n - gap));
  }
  return std::max<size_t>(ceilPow2(bytes), 4096);
}

std::vector<bool> shmCandidates(const ShmParams& p, const std::vector<PeerInfo>& peers) {
  std::vector<bool> c(p.nranks, false);
  for (int r = 0; r < p.nranks; ++r)
    c[r] = r != p.rank && peers[r].hostHash == peers[p.rank].hostHash;
  return c;
}

namespace {

constexpr uint32_t kShmHelloMagic = 0x4c4d4853;  // "SHML"

struct ShmHello {
  uint32_t magic;
  uint32_t want;      // 1: this rank wants shm with the receiver
  uint64_t commHash;
};
struct ShmStatus {
  uint32_t magic;
  uint32_t ok;
};

uint64_t randomNonce() {
  std::random_device rd;
  return ((uint64_t)rd() << 32) ^ rd() ^ (uint64_t)getpid();
}

// Yama (ptrace_scope 1) lets only ancestors read a process's memory; our peers are siblings.
void allowPeersToAttach() {
  static std::atomic<bool> done{false};
  if (done.exchange(true)) return;
#ifdef PR_SET_PTRACER
  if (prctl(PR_SET_PTRACER, PR_SET_PTRACER_ANY, 0, 0, 0) != 0 && errno != EINVAL)
    TRACE(kLogInit | kLogNet, "prctl(PR_SET_PTRACER_ANY): %s", strerror(errno));
#endif
}

void noteCmaUnavailableOnce(const std::string& why) {
  static std::atomic<bool> logged{false};
  if (!logged.exchange(true))
    INFO(kLogInit | kLogNet,
         "cross-memory attach unavailable (%s): shared memory carries every message through "
         "its ring", why.c_str());
}

// Reads the producer's nonce through its own address space: succeeds only if the kernel lets
// this process read the peer's memory (ptrace access) and the pid is really the peer.
bool probeCma(const ShmRingHeader* h, std::string* why) {
  uint64_t got = 0;
  iovec local{&got, sizeof(got)};
  iovec remote{reinterpret_cast<void*>((uintptr_t)(h->producerAddr + offsetof(ShmRingHeader, nonce))),
               sizeof(got)};
  ssize_t k = process_vm_readv(h->producerPid, &local, 1, &remote, 1, 0);
  if (k != (ssize_t)sizeof(got)) {
    *why = std::string("process_vm_readv: ") + (k < 0 ? strerror(errno) : "short read");
    return false;
  }
  if (got != h->nonce) {
    *why = "the peer's pid names another process (pid namespaces?)";
    return false;
  }
  return true;
}

Result setupLinks(const ShmParams& p, const std::vector<PeerInfo>& peers,
                  const std::vector<bool>& candidates, bool wantShm,
                  const std::vector<std::vector<Socket>>& conns, const Deadline& deadline,
                  std::vector<std::unique_ptr<ShmLink>>* links) {
  std::vector<int> cand;
  std::vector<std::string> candNames;
  for (int r = 0; r < p.nranks; ++r)
    if (candidates[r] && !conns[r].empty()) {
      cand.push_back(r);
      candNames.push_back(describePeer(peers, r));
    }
  if (cand.empty()) return mixcclSuccess;

  // 1. Both sides must want shared memory (MIXCCL_SHM_DISABLE may differ between ranks).
  std::vector<ShmHello> helloOut(cand.size(), ShmHello{kShmHelloMagic, wantShm ? 1u : 0u, p.commHash});
  std::vector<ShmHello> helloIn;
  MIXCCL_CHECK(exchangeWithPeers(cand, conns, helloOut, &helloIn, deadline, candNames));
  std::vector<int> use;
  std::vector<std::string> names;
  for (size_t i = 0; i < cand.size(); ++i) {
    if (helloIn[i].magic != kShmHelloMagic || helloIn[i].commHash != p.commHash || helloIn[i].want > 1)
      return raiseError(mixcclRemoteError, "rank %d: %s sent an invalid shared-memory hello",
                        p.rank, candNames[i].c_str());
    if (wantShm && helloIn[i].want) {
      use.push_back(cand[i]);
      names.push_back(candNames[i]);
    }
  }
  if (use.empty()) return mixcclSuccess;
  if (p.cma) allowPeersToAttach();

  // 2. Each rank creates the segments it sends through, sized by the pair (the consumer reads
  // the capacity from the header).
  std::vector<std::unique_ptr<ShmLink>> made(p.nranks);
  Result mine = mixcclSuccess;
  for (int r : use) {
    std::unique_ptr<ShmLink> link(new ShmLink);
    link->peer = r;
    link->cmaThreshold = p.cmaThreshold;
    if (mine == mixcclSuccess) {
      std::string name = shmSegmentName(p.commHash, p.rank, r);
      const size_t ring = shmRingBytesTo(p, peers, r);
      mine = ShmSegment::create(name, kShmHeaderBytes + ring, &link->outSeg);
      if (mine == mixcclSuccess) {
        ShmRing::initHeader(link->outSeg.base(), ring, randomNonce());
        link->out = ShmRing(link->outSeg.base());
      }
    }
    made[r] = std::move(link);
  }
  std::vector<ShmStatus> stOut(use.size(), ShmStatus{kShmHelloMagic, mine == mixcclSuccess ? 1u : 0u});
  std::vector<ShmStatus> stIn;
  MIXCCL_CHECK(exchangeWithPeers(use, conns, stOut, &stIn, deadline, names));
  if (mine != mixcclSuccess) return mine;
  for (size_t i = 0; i < use.size(); ++i)
    if (stIn[i].ok != 1)
      return raiseError(mixcclRemoteError,
                        "rank %d: %s could not create its shared memory segment (see its log); "
                        "MIXCCL_SHM_DISABLE=1 makes ranks of one host use sockets",
                        p.rank, names[i].c_str());

  // 3. Map the peer's segment, check it, and find out whether we can read the peer's memory.
  for (int r : use) {
    ShmLink& l = *made[r];
    if (mine != mixcclSuccess) break;
    std::string name = shmSegmentName(p.commHash, r, p.rank);
    mine = ShmSegment::open(name, kShmHeaderBytes + 4096, &l.inSeg);
    if (mine != mixcclSuccess) break;
    auto* h = static_cast<ShmRingHeader*>(l.inSeg.base());
    uint64_t cap = h->capacity;
    if (h->magic.load(std::memory_order_acquire) != kShmRingMagic || h->version != kShmRingVersion ||
        cap < 4096 || (cap & (cap - 1)) != 0 || cap > l.inSeg.size() - kShmHeaderBytes ||
        h->producerPid <= 0) {
      mine = raiseError(mixcclRemoteError, "rank %d: the shared memory segment of %s is invalid",
                        p.rank, describePeer(peers, r).c_str());
      break;
    }
    l.in = ShmRing(l.inSeg.base());
    l.peerPid = h->producerPid;
    std::string why = "off, MIXCCL_SHM_CMA=0";
    l.cmaRecv = p.cma && probeCma(h, &why);
    if (!l.cmaRecv && p.cma) noteCmaUnavailableOnce(why);
    h->cmaOk.store(l.cmaRecv ? 1 : 0, std::memory_order_release);
  }
  for (ShmStatus& s : stOut) s.ok = mine == mixcclSuccess ? 1u : 0u;
  MIXCCL_CHECK(exchangeWithPeers(use, conns, stOut, &stIn, deadline, names));
  if (mine != mixcclSuccess) return mine;
  for (size_t i = 0; i < use.size(); ++i)
    if (stIn[i].ok != 1)
      return raiseError(mixcclRemoteError,
                        "rank %d: %s could not map its shared memory segments (see its log); "
                        "MIXCCL_SHM_DISABLE=1 makes ranks of one host use sockets",
                        p.rank, names[i].c_str());

  // 4. Both sides have both mappings: the names can go (the caller unlinks them).
  for (int r : use) {
    ShmLink& l = *made[r];
    l.cmaSend = l.out.header()->cmaOk.load(std::memory_order_acquire) == 1;
    (*links)[r] = std::move(made[r]);
  }
  return mixcclSuccess;
}

}  // namespace

Result setupShmLinks(const ShmParams& p, const std::vector<PeerInfo>& peers,
                     const std::vector<bool>& candidates, bool wantShm,
                     const std::vector<std::vector<Socket>>& conns, const Deadline& deadline,
                     std::vector<std::unique_ptr<ShmLink>>* links) {
  links->clear();
  links->resize(p.nranks);
  Result r = setupLinks(p, peers, candidates, wantShm, conns, deadline, links);
  // Success or not, no name stays: the mappings keep the memory as long as they live, and a
  // rank that crashes later leaves nothing behind in /dev/shm.
  // Only the candidates' names: a communicator that connects pairs on demand may be setting
  // up another pair on another thread at this moment (core/lazy_connector.h).
  for (int q = 0; q < p.nranks; ++q) {
    if (q == p.rank || !candidates[q]) continue;
    ShmSegment::unlink(shmSegmentName(p.commHash, p.rank, q));
    ShmSegment::unlink(shmSegmentName(p.commHash, q, p.rank));
  }
  if (r != mixcclSuccess) links->clear();
  return r;
}

}  // namespace mixccl
