// Every MIXCCL_* environment variable, read once at first use (docs/environment.md lists them).
#pragma once

#include <cstddef>
#include <string>

namespace mixccl {

struct EnvParams {
  std::string debugLevel;     // MIXCCL_DEBUG
  std::string debugSubsys;    // MIXCCL_DEBUG_SUBSYS
  int timeoutS;               // MIXCCL_TIMEOUT_S: bound of every wait, seconds
  std::string commId;         // MIXCCL_COMM_ID: host:port of the rendezvous root
  std::string commSecret;     // MIXCCL_COMM_SECRET: 32 hex digits, secret with MIXCCL_COMM_ID
  std::string socketIfname;   // MIXCCL_SOCKET_IFNAME: NCCL syntax (prefix list, ^, =)
  std::string socketFamily;   // MIXCCL_SOCKET_FAMILY: AF_INET or AF_INET6
  int nsocksPerPeer;          // MIXCCL_NSOCKS_PERPEER
  size_t socketFrameBytes;    // MIXCCL_SOCKET_FRAME_BYTES: largest wire frame on one socket
  // The three sizes below are -1 when unset: the communicator derives them (algo/tuning.h).
  long long socketBufferBytes;  // MIXCCL_SOCKET_BUFFER_BYTES: same-host SO_SNDBUF/SO_RCVBUF; 0 kernel's
  std::string socketCongestion;  // MIXCCL_SOCKET_CONGESTION: same-host TCP congestion control
  std::string algo;           // MIXCCL_ALGO: auto, ring, rd (recursive doubling), rh (halving),
                              // hierarchical-host
  size_t rdThresholdBytes;    // MIXCCL_RD_THRESHOLD: AllReduce below this uses rd
  long long rhThresholdBytes;  // MIXCCL_RH_THRESHOLD: below this (power-of-two n >= 4) rh
  long long chunkBytes;       // MIXCCL_CHUNK_BYTES: pipelining unit of ring algorithms
  int spinUs;                 // MIXCCL_SPIN_US: busy-poll time before blocking
  std::string adaptor;        // MIXCCL_ADAPTOR
  std::string net;            // MIXCCL_NET
  std::string connect;        // MIXCCL_CONNECT: auto, eager (every pair at init), lazy (on first use)
  std::string testRdmaActive; // MIXCCL_TEST_RDMA_ACTIVE (tests only): "1"/"0" replaces whether
                              // this host has an active RDMA port; "": the host's answer
  std::string ofiProvider;    // MIXCCL_OFI_PROVIDER: libfabric provider list of MIXCCL_NET=ofi
  std::string topoDumpFile;   // MIXCCL_TOPO_DUMP_FILE: write the job topology as JSON at init
  bool checkMismatch;         // MIXCCL_CHECK_MISMATCH: compare every collective across ranks
  std::string pluginPath;     // MIXCCL_PLUGIN_PATH: folders searched for adaptor plugins
  std::string domainSplit;    // MIXCCL_DOMAIN_SPLIT: artificial domains of a homogeneous job
  std::string hierHosts;      // MIXCCL_HIER_HOSTS: host label per rank, for the algorithms only
  size_t hierPieceBytes;      // MIXCCL_HIER_PIECE_BYTES: pipelining unit across domains
  bool shmDisable;            // MIXCCL_SHM_DISABLE: same-host peers use the network transport
  size_t shmBytes;            // MIXCCL_SHM_BYTES: ring of each shared-memory segment; 0 (unset):
                              // from the L2 cache (transport/shm_sizing.h)
  size_t shmFarBytes;         // MIXCCL_SHM_FAR_BYTES: ring to a same-host peer that is not a ring
                              // neighbour; 0 (unset): a share of a per-rank budget (shm_sizing.h)
  bool shmCma;                // MIXCCL_SHM_CMA: 1 turns cross-memory attach on
  long long shmSlotBytes;     // MIXCCL_SHM_SLOT_BYTES: data bytes of each shared-memory slot;
                              // 0 turns the slots off, -1 (unset): from the L2 (shm_sizing.h)
  size_t shmCmaThreshold;     // MIXCCL_SHM_CMA_THRESHOLD: messages from this size use it
};

// Parsed once; invalid numbers fall back to the default with a warning.
const EnvParams& env();

}  // namespace mixccl
