// mixcclCommInspect across real ranks: the transport of every peer, the algorithm by size and
// rank count, domains and adaptors, and every error (exact message, communicator still usable).
#include <gtest/gtest.h>

#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

extern "C" {
#include "rank_harness.h"
}
#include "rank_check.h"

namespace {

std::string inspected(mixcclComm_t comm, const std::string& key) {
  char value[256];
  if (mixcclCommInspect(comm, key.c_str(), value, sizeof(value)) != mixcclSuccess)
    return "error: " + std::string(mixcclGetLastError(comm));
  return value;
}

// The call fails with mixcclInvalidArgument and exactly this message, and leaves value as it was.
bool failsWith(mixcclComm_t comm, const char* key, size_t size, const std::string& message) {
  char value[64] = "untouched";
  mixcclResult_t res = mixcclCommInspect(comm, key, size ? value : nullptr, size);
  std::string got = mixcclGetLastError(comm);
  if (res == mixcclInvalidArgument && got == message && !strcmp(value, "untouched")) return true;
  fprintf(stderr, "key %s: got %d, message '%s'; expected '%s'\n", key ? key : "(null)", (int)res,
          got.c_str(), message.c_str());
  return false;
}

bool allReduceWorks(mixcclComm_t comm, int nranks) {
  std::vector<int> buf(5, 1);
  if (mixcclAllReduce(buf.data(), buf.data(), buf.size(), mixcclInt, mixcclSum, comm, nullptr) !=
      mixcclSuccess)
    return false;
  for (int v : buf)
    if (v != nranks) return false;
  return true;
}

// Every peer's transport is *arg ("shm" or "socket").
int transportRank(mixcclComm_t comm, int rank, int nranks, void* arg) {
  const std::string want = static_cast<const char*>(arg);
  for (int p = 0; p < nranks; ++p)
    if (p != rank) RANK_CHECK(inspected(comm, "transport." + std::to_string(p)) == want);
  RANK_CHECK(allReduceWorks(comm, nranks));
  return 0;
}

TEST(Inspect, SharedMemoryOnOneHostByDefault) {
  gHarnessNet = nullptr;
  EXPECT_EQ(runRanks(3, transportRank, (void*)"shm", 60), 0);
}

TEST(Inspect, NetSocketGivesSocketsToEveryPeer) {
  gHarnessNet = "socket";
  EXPECT_EQ(runRanks(3, transportRank, (void*)"socket", 60), 0);
  gHarnessNet = nullptr;
}

TEST(Inspect, NetShmGivesSharedMemoryOnOneHost) {
  gHarnessNet = "shm";
  EXPECT_EQ(runRanks(3, transportRank, (void*)"shm", 60), 0);
  gHarnessNet = nullptr;
}

// Why and of what: transport_why and transport_detail of every peer (docs/transports.md,
// "Selection"), for the default (auto) and for named transports.
struct WhyAndDetail {
  const char* transport;
  const char* why;
  const char* detail;  // nullptr: the default shared-memory ring (autoRingDetail)
};

// The default ring follows the host's L2 cache per core (docs/transports.md): "ring N KiB,
// cross-memory attach off" with N a power of two within the sizing's bounds (64-4096 KiB), so
// the check holds on every CPU (1024 KiB on a 512 KiB-L2 EPYC, 2048 on a 2 MiB-L2 Xeon).
bool autoRingDetail(const std::string& detail) {
  unsigned kib = 0;
  char tail[64] = "";
  if (sscanf(detail.c_str(), "ring %u KiB, %63[^\n]", &kib, tail) != 2) return false;
  return std::string(tail) == "cross-memory attach off" && kib >= 64 && kib <= 4096 &&
         (kib & (kib - 1)) == 0;
}

int whyRank(mixcclComm_t comm, int rank, int nranks, void* arg) {
  const WhyAndDetail& w = *static_cast<const WhyAndDetail*>(arg);
  for (int p = 0; p < nranks; ++p) {
    if (p == rank) continue;
    RANK_CHECK(inspected(comm, "transport." + std::to_string(p)) == w.transport);
    RANK_CHECK(inspected(comm, "transport_why." + std::to_string(p)) == w.why);
    const std::string detail = inspected(comm, "transport_detail." + std::to_string(p));
    RANK_CHECK(w.detail ? detail == w.detail : autoRingDetail(detail));
  }
  RANK_CHECK(allReduceWorks(comm, nranks));
  return 0;
}

TEST(Inspect, TransportWhyAndDetail) {
  gHarnessNet = nullptr;
  WhyAndDetail autoShm{"shm", "default auto, same host", nullptr};
  EXPECT_EQ(runRanks(3, whyRank, &autoShm, 60), 0);
  gHarnessNet = "socket";
  WhyAndDetail socket{"socket", "config.netName=socket: every pair", "1 connection"};
  EXPECT_EQ(runRanks(2, whyRank, &socket, 60), 0);
  gHarnessNet = nullptr;
}

#ifdef MIXCCL_TEST_HAVE_UCX
// Over UCX the detail names the lanes' transports and the largest tagged send UCX sends eagerly
// in one short message, which follows its tcp segment size: the segments mixccl asks for (the
// socket transport's 256 KiB frame) must have taken effect, and the environment's must win.
struct UcxEager {
  size_t atLeast, atMost;
};

int ucxDetailRank(mixcclComm_t comm, int rank, int nranks, void* arg) {
  const UcxEager& want = *static_cast<const UcxEager*>(arg);
  const std::string prefix = "tcp, eager up to ";
  for (int p = 0; p < nranks; ++p) {
    if (p == rank) continue;
    RANK_CHECK(inspected(comm, "transport." + std::to_string(p)) == "ucx");
    RANK_CHECK(inspected(comm, "transport_why." + std::to_string(p)) ==
               "config.netName=ucx: every pair");
    std::string detail = inspected(comm, "transport_detail." + std::to_string(p));
    RANK_CHECK(detail.compare(0, prefix.size(), prefix) == 0);
    size_t eager = strtoull(detail.c_str() + prefix.size(), nullptr, 10);
    if (eager < want.atLeast || eager > want.atMost)
      fprintf(stderr, "rank %d: detail \"%s\"\n", rank, detail.c_str());
    RANK_CHECK(eager >= want.atLeast && eager <= want.atMost);
  }
  RANK_CHECK(allReduceWorks(comm, nranks));
  return 0;
}

TEST(Inspect, UcxDetailShowsTheTcpSegmentsTookEffect) {
  setenv("UCX_TLS", "tcp", 1);
  gHarnessNet = "ucx";
  UcxEager frame{(256 << 10) - 64, 256 << 10};  // UCX's header takes a few bytes
  EXPECT_EQ(runRanks(3, ucxDetailRank, &frame, 60), 0);
  setenv("UCX_TCP_TX_SEG_SIZE", "8K", 1);
  setenv("UCX_TCP_RX_SEG_SIZE", "64K", 1);
  UcxEager ucxDefault{(8 << 10) - 64, 8 << 10};
  EXPECT_EQ(runRanks(2, ucxDetailRank, &ucxDefault, 60), 0);
  unsetenv("UCX_TCP_TX_SEG_SIZE");
  unsetenv("UCX_TCP_RX_SEG_SIZE");
  unsetenv("UCX_TLS");
  gHarnessNet = nullptr;
}
#endif

// The default thresholds (docs/environment.md): below MIXCCL_RD_THRESHOLD (64 KiB) recursive
// doubling; power-of-two rank counts of 4+ recursive halving below the rh threshold (derived
// from the L3: 4 MiB on the measured VM, algo/tuning.h) and recursive-doubling AllGathers whose
// result is below it; the ring otherwise.
int algoRank(mixcclComm_t comm, int rank, int nranks, void*) {
  const bool powerOfTwo4 = nranks == 4;
  // The threshold follows the machine (4 MiB here); the checks hold for any value it takes.
  const std::string t = inspected(comm, "tuning.rh_threshold_bytes");
  const unsigned long long th = strtoull(t.c_str(), nullptr, 10);
  RANK_CHECK(th >= (1u << 20));
  const std::string below = std::to_string(th - 1), at = std::to_string(th);
  RANK_CHECK(inspected(comm, "algo.allreduce.8") == "rd");
  RANK_CHECK(inspected(comm, "algo.allreduce.65535") == "rd");
  RANK_CHECK(inspected(comm, "algo.allreduce.65536") == (powerOfTwo4 ? "rh" : "ring"));
  RANK_CHECK(inspected(comm, "algo.allreduce." + below) == (powerOfTwo4 ? "rh" : "ring"));
  RANK_CHECK(inspected(comm, "algo.allreduce." + at) == "ring");
  RANK_CHECK(inspected(comm, "algo.allgather.0") == (powerOfTwo4 ? "rd" : "ring"));
  RANK_CHECK(inspected(comm, "algo.allgather." + below) == (powerOfTwo4 ? "rd" : "ring"));
  RANK_CHECK(inspected(comm, "algo.allgather." + at) == "ring");
  return 0;
}

// Over sockets: on one host's shared memory the small calls would take the slots (below).
TEST(Inspect, AlgorithmFollowsSizeAndRankCount) {
  gHarnessNet = "socket";
  EXPECT_EQ(runRanks(4, algoRank, nullptr, 60), 0);
  EXPECT_EQ(runRanks(3, algoRank, nullptr, 60), 0);
  gHarnessNet = nullptr;
}

// One host, shared memory: calls whose largest part fits a slot run on the shared-memory slots
// (transport/shm_slots.h). The slot size follows the L2 cache unless MIXCCL_SHM_SLOT_BYTES sets
// it (CTest runs this once more with 4096 and with 0: the setting must take effect).
int slotsRank(mixcclComm_t comm, int rank, int nranks, void*) {
  const char* forced = getenv("MIXCCL_SHM_SLOT_BYTES");
  const size_t slot = std::stoul(inspected(comm, "shm_slot_bytes"));
  if (forced) RANK_CHECK(slot == std::stoul(forced));
  if (slot == 0) {
    RANK_CHECK(inspected(comm, "algo.allreduce.8") == "rd");
    return 0;
  }
  RANK_CHECK(slot >= 4096);
  const std::string n = std::to_string(nranks);
  RANK_CHECK(inspected(comm, "algo.allreduce.8") == "slots");
  RANK_CHECK(inspected(comm, "algo.allreduce." + std::to_string(slot)) == "slots");
  RANK_CHECK(inspected(comm, "algo.allreduce." + std::to_string(slot + 4)) != "slots");
  RANK_CHECK(inspected(comm, "algo.allgather." + std::to_string(slot * nranks)) == "slots");
  RANK_CHECK(inspected(comm, "algo.allgather." + std::to_string((slot + 4) * nranks)) != "slots");
  RANK_CHECK(inspected(comm, "algo.allreduce.0") != "slots");  // nothing to move
  return 0;
}

TEST(Inspect, SmallCallsTakeTheSlotsOnOneHost) {
  EXPECT_EQ(runRanks(3, slotsRank, nullptr, 60), 0);
  EXPECT_EQ(runRanks(2, slotsRank, nullptr, 60), 0);
}

int noSlotsRank(mixcclComm_t comm, int rank, int, void*) {
  RANK_CHECK(inspected(comm, "shm_slot_bytes") == "0");
  RANK_CHECK(inspected(comm, "algo.allreduce.8") == "rd");
  return 0;
}

// Not every pair on shared memory: no slots.
TEST(Inspect, SocketsGiveNoSlots) {
  gHarnessNet = "socket";
  EXPECT_EQ(runRanks(3, noSlotsRank, nullptr, 60), 0);
  gHarnessNet = nullptr;
}

// Ranks whose hosts report different caches (a per-rank hwloc XML topology: one core with an
// L2 of 256 KiB << r and an L3 of 4 MiB << r) derive different chunks (64 KiB << r) and rh
// thresholds (1 MiB << r, at most 16 MiB) and socket buffers, but must run the same algorithm
// with the same chunk: they agree on the smallest chunk and threshold, and keep their own
// socket buffers. A 3 MiB AllReduce on 4 ranks is above the thresholds ranks 0 and 1 derive
// and below those of ranks 2 and 3: without the agreement the first two would run the ring
// against the others' recursive halving.
std::string oneCoreXml(unsigned long long l2, unsigned long long l3) {
  const std::string set = "cpuset=\"0x00000001\" complete_cpuset=\"0x00000001\" nodeset=\"0x00000001\" "
                          "complete_nodeset=\"0x00000001\"";
  return "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<!DOCTYPE topology SYSTEM \"hwloc2.dtd\">\n"
         "<topology version=\"2.0\">\n"
         "<object type=\"Machine\" os_index=\"0\" " + set + " allowed_cpuset=\"0x00000001\" "
         "allowed_nodeset=\"0x00000001\" gp_index=\"1\">\n"
         "<object type=\"Package\" os_index=\"0\" " + set + " gp_index=\"2\">\n"
         "<object type=\"NUMANode\" os_index=\"0\" " + set + " gp_index=\"3\" local_memory=\"1073741824\"/>\n"
         "<object type=\"L3Cache\" " + set + " gp_index=\"4\" cache_size=\"" + std::to_string(l3) +
         "\" depth=\"3\" cache_linesize=\"64\" cache_associativity=\"16\" cache_type=\"0\">\n"
         "<object type=\"L2Cache\" " + set + " gp_index=\"5\" cache_size=\"" + std::to_string(l2) +
         "\" depth=\"2\" cache_linesize=\"64\" cache_associativity=\"8\" cache_type=\"0\">\n"
         "<object type=\"Core\" os_index=\"0\" " + set + " gp_index=\"6\">\n"
         "<object type=\"PU\" os_index=\"0\" " + set + " gp_index=\"7\"/>\n"
         "</object></object></object></object></object>\n</topology>\n";
}

void differentCaches(int rank) {
  char path[128];
  snprintf(path, sizeof(path), "/tmp/mixccl-tuning-test-%d-%d.xml", (int)getppid(), rank);
  FILE* f = fopen(path, "w");
  if (!f) return;  // the rank then sees this host's caches, and the checks fail
  const std::string xml = oneCoreXml(256ull << (10 + rank), 4ull << (20 + rank));
  fwrite(xml.data(), 1, xml.size(), f);
  fclose(f);
  setenv("HWLOC_XMLFILE", path, 1);
  setenv("HWLOC_THISSYSTEM", "1", 1);  // still this host (its name, its interfaces)
  // A component list (the sanitizer stage sets HWLOC_COMPONENTS=-pci) makes hwloc ignore
  // HWLOC_XMLFILE; this rank's topology is the XML alone.
  unsetenv("HWLOC_COMPONENTS");
}

int agreeRank(mixcclComm_t comm, int rank, int nranks, void*) {
  unlink(getenv("HWLOC_XMLFILE"));
  RANK_CHECK(inspected(comm, "tuning.chunk_bytes") == "65536");
  RANK_CHECK(inspected(comm, "tuning.rh_threshold_bytes") == "1048576");
  // 4 ranks on the XML's one core: L3 / 4 ranks / 4 / 4 ranks per core, at least 256 KiB.
  const int ownBuffer = std::max((4 << (20 + rank)) / 64, 256 << 10);
  RANK_CHECK(inspected(comm, "tuning.socket_buffer_bytes") == std::to_string(ownBuffer));
  char why[1024];
  RANK_CHECK(mixcclCommInspect(comm, "tuning", why, sizeof(why)) == mixcclSuccess);
  RANK_CHECK(std::string(why).find(rank == 0 ? "chunk 65536 bytes (L2 256 KiB per core"
                                             : "chunk 65536 bytes (rank 0's 65536, the smallest") == 0);
  RANK_CHECK(inspected(comm, "algo.allreduce.3145728") == "ring");
  const size_t count = (3u << 20) / sizeof(float);
  std::vector<float> buf(count);
  for (size_t i = 0; i < count; ++i) buf[i] = (float)((i % 97) + rank);
  RANK_CHECK(mixcclAllReduce(buf.data(), buf.data(), count, mixcclFloat, mixcclSum, comm, nullptr) ==
             mixcclSuccess);
  bool ok = true;
  for (size_t i = 0; i < count && ok; ++i)
    ok = buf[i] == (float)(nranks * (i % 97) + nranks * (nranks - 1) / 2);
  RANK_CHECK(ok);
  // AllGather: 512 KiB per rank, a 2 MiB result (recursive doubling for none: above 1 MiB).
  const size_t per = (512u << 10) / sizeof(int);
  std::vector<int> mine(per, rank + 1), all(per * nranks, 0);
  RANK_CHECK(mixcclAllGather(mine.data(), all.data(), per, mixcclInt, comm, nullptr) == mixcclSuccess);
  for (size_t i = 0; i < all.size() && ok; ++i) ok = all[i] == (int)(i / per) + 1;
  RANK_CHECK(ok);
  return 0;
}

TEST(Inspect, RanksWithDifferentCachesAgreeOnChunkAndThreshold) {
  gHarnessRankSetup = differentCaches;
  EXPECT_EQ(runRanks(4, agreeRank, nullptr, 90), 0);
  gHarnessRankSetup = nullptr;
}

int oneDomainRank(mixcclComm_t comm, int rank, int nranks, void*) {
  RANK_CHECK(inspected(comm, "domains") == "0,0,0");
  for (int r = 0; r < nranks; ++r) RANK_CHECK(inspected(comm, "adaptor." + std::to_string(r)) == "host");
  RANK_CHECK(inspected(comm, "memory") == "host");
  return 0;
}

TEST(Inspect, OneHostJobIsOneHostDomain) { EXPECT_EQ(runRanks(3, oneDomainRank, nullptr, 60), 0); }

#ifdef MIXCCL_TEST_HAVE_GLOO
// Ranks on different adaptors form domains; AllReduce then runs across domains, AllGather with
// the flat algorithm over every rank; a job on one native adaptor hands both to its library.
int mixedDomainsRank(mixcclComm_t comm, int rank, int nranks, void*) {
  RANK_CHECK(inspected(comm, "domains") == "0,1,1");
  RANK_CHECK(inspected(comm, "adaptor.0") == "host");
  RANK_CHECK(inspected(comm, "adaptor.1") == "gloo");
  RANK_CHECK(inspected(comm, "adaptor.2") == "gloo");
  RANK_CHECK(inspected(comm, "algo.allreduce.8") == "hierarchical");
  RANK_CHECK(inspected(comm, "algo.allgather.8") == "ring");
  RANK_CHECK(allReduceWorks(comm, nranks));
  return 0;
}

int nativeDomainRank(mixcclComm_t comm, int rank, int nranks, void*) {
  RANK_CHECK(inspected(comm, "domains") == "0,0");
  RANK_CHECK(inspected(comm, "adaptor.1") == "gloo");
  RANK_CHECK(inspected(comm, "algo.allreduce.8") == "native");
  RANK_CHECK(inspected(comm, "algo.allgather.8") == "native");
  return 0;
}

TEST(Inspect, AdaptorsFormDomains) {
  gHarnessAdaptors = "host,gloo,gloo";
  EXPECT_EQ(runRanks(3, mixedDomainsRank, nullptr, 60), 0);
  gHarnessAdaptors = "gloo,gloo";
  EXPECT_EQ(runRanks(2, nativeDomainRank, nullptr, 60), 0);
  gHarnessAdaptors = nullptr;
}
#endif

int errorsRank(mixcclComm_t comm, int rank, int nranks, void*) {
  const std::string f = "mixcclCommInspect: ";
  RANK_CHECK(failsWith(comm, "nosuchkey", 64, f + "unknown key 'nosuchkey' (keys: transport.<peer>, "
             "transport_why.<peer>, transport_detail.<peer>, device_direct.<peer>, algo.allreduce.<bytes>, algo.allgather.<bytes>, "
             "algo.broadcast.<bytes>, algo.reduce.<bytes>, tuning, tuning.chunk_bytes, tuning.rh_threshold_bytes, "
             "tuning.socket_buffer_bytes, connect, connect_why, connected_peers, domains, hosts, adaptor.<rank>, memory, shm_slot_bytes)"));
  RANK_CHECK(failsWith(comm, "algo.gather.8", 64, f + "unknown key 'algo.gather.8' (keys: "
             "transport.<peer>, transport_why.<peer>, transport_detail.<peer>, device_direct.<peer>, algo.allreduce.<bytes>, algo.allgather.<bytes>, "
             "algo.broadcast.<bytes>, algo.reduce.<bytes>, tuning, tuning.chunk_bytes, tuning.rh_threshold_bytes, "
             "tuning.socket_buffer_bytes, connect, connect_why, connected_peers, domains, hosts, adaptor.<rank>, memory, shm_slot_bytes)"));
  RANK_CHECK(failsWith(comm, "transport.3", 64,
                       f + "key 'transport.3': no rank 3 in this communicator of 3 ranks"));
  RANK_CHECK(failsWith(comm, "transport.-1", 64, f + "key 'transport.-1': '-1' is not a rank number"));
  RANK_CHECK(failsWith(comm, "transport.", 64, f + "key 'transport.': '' is not a rank number"));
  RANK_CHECK(failsWith(comm, "transport.1x", 64, f + "key 'transport.1x': '1x' is not a rank number"));
  RANK_CHECK(failsWith(comm, "transport.99999999999999999999", 64,
                       f + "key 'transport.99999999999999999999': '99999999999999999999' is not a "
                       "rank number"));
  const std::string self = "transport." + std::to_string(rank);
  RANK_CHECK(failsWith(comm, self.c_str(), 64, f + "key '" + self + "': rank " +
                       std::to_string(rank) + " is this rank (a transport joins two ranks)"));
  RANK_CHECK(failsWith(comm, "adaptor.7", 64,
                       f + "key 'adaptor.7': no rank 7 in this communicator of 3 ranks"));
  RANK_CHECK(failsWith(comm, "algo.allreduce.1k", 64,
                       f + "key 'algo.allreduce.1k': '1k' is not a byte count"));
  RANK_CHECK(failsWith(comm, "algo.allgather.", 64, f + "key 'algo.allgather.': '' is not a byte count"));
  // "0,0,0" needs 6 bytes with its NUL.
  RANK_CHECK(failsWith(comm, "domains", 5,
                       f + "key 'domains': the value '0,0,0' needs 6 bytes, valueSize is 5"));
  RANK_CHECK(failsWith(comm, "domains", 0, f + "key 'domains': value is NULL"));
  RANK_CHECK(failsWith(comm, nullptr, 64, f + "key is NULL"));
  char exact[6];
  RANK_CHECK(mixcclCommInspect(comm, "domains", exact, sizeof(exact)) == mixcclSuccess);
  RANK_CHECK(!strcmp(exact, "0,0,0"));
  RANK_CHECK(allReduceWorks(comm, nranks));
  return 0;
}

TEST(Inspect, ErrorsNameTheKeyAndLeaveTheCommUsable) {
  EXPECT_EQ(runRanks(3, errorsRank, nullptr, 60), 0);
  char value[8];
  EXPECT_EQ(mixcclCommInspect(nullptr, "domains", value, sizeof(value)), mixcclInvalidArgument);
  EXPECT_STREQ(mixcclGetLastError(nullptr), "mixcclCommInspect: comm is NULL");
}

// Before a non-blocking init has finished there is nothing to inspect yet.
int refusedWhileInitialising() {
  const int rank = 0;  // named in RANK_CHECK's message
  mixcclUniqueId id;
  RANK_CHECK(mixcclGetUniqueId(&id) == mixcclSuccess);
  mixcclConfig_t config = MIXCCL_CONFIG_INITIALIZER;
  config.blocking = 0;
  mixcclComm_t comm = nullptr;
  // Rank 1 never comes, so the init stays in progress.
  RANK_CHECK(mixcclCommInitRankConfig(&comm, 2, id, 0, &config) == mixcclInProgress);
  char value[64];
  RANK_CHECK(mixcclCommInspect(comm, "domains", value, sizeof(value)) == mixcclInvalidArgument);
  RANK_CHECK(std::string(mixcclGetLastError(comm)) ==
             "mixcclCommInspect: the communicator is still initialising (non-blocking init): "
             "poll mixcclCommGetAsyncError until it returns mixcclSuccess first");
  RANK_CHECK(mixcclCommAbort(comm) == mixcclSuccess);
  return 0;
}

TEST(Inspect, RefusedWhileInitialising) {
  // In a child that ends with _exit: the rendezvous root started here outlives the aborted init
  // and may still be in its handshake (OpenSSL) with the aborted rank's connection; a normal
  // exit would run OpenSSL's atexit cleanup under that thread (LeakSanitizer reported what the
  // handshake allocated after the cleanup).
  pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) _exit(refusedWhileInitialising());
  int status = 0;
  ASSERT_EQ(waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0);
}

}  // namespace
