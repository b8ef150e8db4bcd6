// The shared-memory transport between ranks of one host: per ordered pair of ranks one /dev/shm
// segment holding a byte ring (shm_ring.h) that carries the same frames as a socket
// (frame.h), plus cross-memory attach (process_vm_readv) for large messages: the sender puts a
// descriptor of its buffer in the ring, the receiver copies straight from the sender's memory
// into the posted receive. The pair's TCP connection stays: it tells of a peer's death and
// carries goodbyes, failure notices and doorbells. docs/architecture.md explains the design.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "bootstrap/peer_info.h"
#include "bootstrap/socket.h"
#include "base/clock.h"
#include "base/result.h"
#include "transport/frame.h"
#include "transport/shm_ring.h"

namespace mixccl {

struct CmaDescriptor {
  uint64_t addr;   // the message in the sender's address space
  uint64_t bytes;  // its length
};
static_assert(sizeof(CmaDescriptor) == 16, "CmaDescriptor is part of the wire format");

// Checks a descriptor frame's header against the receive it matched, like validateFrame: the
// message must arrive whole (nothing received or announced before), fill the posted receive
// exactly, and carry exactly one descriptor.
FrameCheck validateCmaFrame(const FrameHeader& h, size_t postedBytes, size_t receivedBytes,
                            uint64_t knownTotal);
// Checks the descriptor itself: its length is the posted length, its range does not wrap.
bool validCmaDescriptor(const CmaDescriptor& d, size_t postedBytes);
// Copies d into dst (whose length is d.bytes, checked by the caller) from process pid.
// Returns 0 or the errno of the failure.
int cmaRead(pid_t pid, const CmaDescriptor& d, void* dst);

// What the shm transport of one communicator is set up with.
struct ShmParams {
  int rank = 0;
  int nranks = 1;
  uint64_t commHash = 0;
  size_t ringBytes = 1 << 20;   // rings to ring neighbours; rounded up to a power of two
  size_t farRingBytes = 0;      // rings to the other peers (MIXCCL_SHM_FAR_BYTES); 0: by
                                // their distance (shmFarRingBytesFor)
  bool cma = false;             // try cross-memory attach (MIXCCL_SHM_CMA=1)
  size_t cmaThreshold = 64 << 10;
};

// The two rings between this rank and one peer.
struct ShmLink {
  int peer = -1;
  pid_t peerPid = 0;
  ShmSegment outSeg, inSeg;
  ShmRing out;   // this rank -> peer (this rank created it)
  ShmRing in;    // peer -> this rank
  bool cmaSend = false;  // the peer can read our memory: large sends go as descriptors
  bool cmaRecv = false;  // we can read the peer's memory
  size_t cmaThreshold = 64 << 10;
};

// /mixccl-<commHash>-<from>-<to>, the shm_open name of one direction's segment.
std::string shmSegmentName(uint64_t commHash, int from, int to);

// Whether rank and peer are ring neighbours: next to each other in rank order (cyclic), or
// among the ranks of their host in rank order (cyclic). The ring collectives and the pipelined
// chains stream their largest messages between these; every other pair gets the smaller rings
// of ShmParams::farRingBytes.
bool shmRingNeighbours(int rank, int peer, const std::vector<PeerInfo>& peers);

// The ring bytes of the segment rank sends through to peer (a power of two, at least 4096):
// ringBytes to a ring neighbour, else farRingBytes or, 0 there, shmFarRingBytesFor's.
size_t shmRingBytesTo(const ShmParams& p, const std::vector<PeerInfo>& peers, int peer);

// The peers on this rank's host (hostHash): candidates for shared memory. [rank] is false.
std::vector<bool> shmCandidates(const ShmParams& p, const std::vector<PeerInfo>& peers);

// Sets up the shared-memory links with every candidate peer, over the first connection to
// each (blocking sockets, before the proxy starts). Both sides of a pair must agree, so a rank
// that does not want shm still answers the hello of a candidate peer. links[p] is null where
// the pair keeps sockets only. Every segment is unlinked again before this returns (success or
// failure), so nothing stays in /dev/shm whatever happens to the ranks later.
Result setupShmLinks(const ShmParams& p, const std::vector<PeerInfo>& peers,
                     const std::vector<bool>& candidates, bool wantShm,
                     const std::vector<std::vector<Socket>>& conns, const Deadline& deadline,
                     std::vector<std::unique_ptr<ShmLink>>* links);

}  // namespace mixccl
