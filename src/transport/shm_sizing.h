// The default ring size of the shared-memory transport, from the machine's L2 cache.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace mixccl {

constexpr size_t kShmRingFallbackBytes = 1 << 20;  // when the L2 cache is not known
constexpr size_t kShmRingMaxDerivedBytes = 4 << 20;

// MIXCCL_SHM_BYTES unset: the largest power of two <= the L2 cache one core can count on
// (l2Bytes shared by l2Cores cores; 0 cores counts as 1): the ring's lines, which the producer
// writes and the consumer reads over and over, then cycle through no more memory than one L2
// holds (docs/performance.md: rings of 4x the L2 lost up to 8% here, 1-2x did not); but at
// least 4 chunks of chunkBytes (rounded up to a power of two), so that the producer writes
// ahead while the consumer reads (rings of 1-2 chunks lost 6-9%), and at most
// kShmRingMaxDerivedBytes. l2Bytes 0 (not reported): kShmRingFallbackBytes. why, if not null,
// receives how the value came about, for the log. This is the ring of a pair of ring
// neighbours; the other pairs get shmFarRingBytesFor's.
size_t shmRingBytesFor(uint64_t l2Bytes, int l2Cores, size_t chunkBytes, std::string* why);

constexpr size_t kShmFarRingMinBytes = 64 << 10;

// MIXCCL_SHM_FAR_BYTES unset: the ring of a same-host pair that is not a pair of ring neighbours
// (shm_transport.h, shmRingNeighbours), `distance` apart in rank order (cyclic) in a
// communicator of nranks. Recursive halving (and the recursive-doubling AllGather) sends its
// partner at distance d a d/n share of the buffer, the partner at n/2 the largest; so the
// ring is ringBytes x d / (n/2), d and n rounded down to powers of two, within
// [kShmFarRingMinBytes, ringBytes]. A rank's recursive partners (distances 2, 4, ..., n/2)
// then hold less than 2 x ringBytes together (plus the floor's few extra), so with its two
// neighbours' full rings a rank's collectives hold about 4 rings however many ranks there are:
// a host's shared memory grows with its ranks, not with ranks x log2 ranks (each partner a
// full ring) or ranks x ranks (every pair).
size_t shmFarRingBytesFor(size_t ringBytes, int nranks, int distance);

constexpr size_t kShmSlotFallbackBytes = 16 << 10;  // when the L2 cache is not known
constexpr size_t kShmSlotMinBytes = 4 << 10;
constexpr size_t kShmSlotMaxBytes = 64 << 10;

// MIXCCL_SHM_SLOT_BYTES unset: the data bytes of each shared-memory slot (shm_slots.h) for
// nranks ranks. A slot collective reads every rank's slot and writes the result, so the
// largest power of two with 4 * nranks slots within one core's L2 (l2Bytes shared by l2Cores
// cores) keeps the whole call in that cache; within [kShmSlotMinBytes, kShmSlotMaxBytes].
size_t shmSlotBytesFor(uint64_t l2Bytes, int l2Cores, int nranks, std::string* why);

// CPUs of this host that are online (not the affinity mask: a launcher that binds each rank
// to its own core leaves one CPU in each rank's mask); at least 1.
int onlineCpuCount();

}  // namespace mixccl
