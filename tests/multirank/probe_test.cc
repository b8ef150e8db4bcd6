// mixcclIprobe across real ranks: it sees the next message no receive matches yet (size
// included) without taking it, over sockets and shared memory; bad calls get named errors and
// leave the communicator usable; a transport that cannot probe says so.
#include <gtest/gtest.h>
#include <unistd.h>

#include <string>
#include <vector>

extern "C" {
#include "rank_harness.h"
}
#include "rank_check.h"

namespace {

const size_t kSizes[] = {40, 4096, 1 << 20};

bool barrier(mixcclComm_t comm) {
  int x = 1;
  return mixcclAllReduce(&x, &x, 1, mixcclInt, mixcclSum, comm, nullptr) == mixcclSuccess;
}

// Polls until a message from peer is there (or about 10 s pass); its size in *bytes.
bool waitForMessage(mixcclComm_t comm, int peer, size_t* bytes) {
  for (int i = 0; i < 100000; ++i) {
    int flag = -1;
    if (mixcclIprobe(peer, &flag, bytes, comm) != mixcclSuccess) return false;
    if (flag == 1) return true;
    if (flag != 0 || *bytes != 0) return false;
    usleep(100);
  }
  return false;
}

bool nothingFrom(mixcclComm_t comm, int peer) {
  int flag = -1;
  size_t bytes = 7;
  return mixcclIprobe(peer, &flag, &bytes, comm) == mixcclSuccess && flag == 0 && bytes == 0;
}

// Takes the next message from peer after probing for it: its size must be `expect`, and a
// second probe must still see it (a probe takes nothing).
bool probeThenReceive(mixcclComm_t comm, int peer, std::vector<unsigned char>* got, size_t expect) {
  size_t bytes = 0;
  if (!waitForMessage(comm, peer, &bytes) || bytes != expect) return false;
  if (!waitForMessage(comm, peer, &bytes) || bytes != expect) return false;
  got->assign(bytes, 0);
  return mixcclRecv(got->data(), bytes, mixcclUint8, peer, comm, nullptr) == mixcclSuccess;
}

// Rank 1 probes (nothing yet) and sends rank 0 a 1-byte token, which rank 0 probes for and
// takes; then rank 0 sends three messages of different sizes in one group, which rank 1 probes
// for and takes one by one; rank 1 finds nothing more and sends a last token. Each rank sends
// only after it knows what the other probes for (a collective's message would be "next" too).
int probeRank(mixcclComm_t comm, int rank, int nranks, void*) {
  std::vector<std::vector<unsigned char>> msgs;
  for (size_t n : kSizes) {
    msgs.emplace_back(n);
    for (size_t i = 0; i < n; ++i) msgs.back()[i] = (unsigned char)(i * 7 + n);
  }
  unsigned char token = 42;
  std::vector<unsigned char> got;
  if (rank == 0) {
    RANK_CHECK(probeThenReceive(comm, 1, &got, 1) && got[0] == token);
    RANK_CHECK(mixcclGroupStart() == mixcclSuccess);
    for (auto& m : msgs) mixcclSend(m.data(), m.size(), mixcclUint8, 1, comm, nullptr);
    RANK_CHECK(mixcclGroupEnd() == mixcclSuccess);
    RANK_CHECK(probeThenReceive(comm, 1, &got, 1) && got[0] == token);
  } else {
    RANK_CHECK(nothingFrom(comm, 0));
    RANK_CHECK(mixcclSend(&token, 1, mixcclUint8, 0, comm, nullptr) == mixcclSuccess);
    for (auto& m : msgs) {
      RANK_CHECK(probeThenReceive(comm, 0, &got, m.size()));
      RANK_CHECK(got == m);
    }
    RANK_CHECK(nothingFrom(comm, 0));
    RANK_CHECK(mixcclSend(&token, 1, mixcclUint8, 0, comm, nullptr) == mixcclSuccess);
  }
  RANK_CHECK(barrier(comm));
  return 0;
}

TEST(Iprobe, SeesTheNextMessageAndItsSizeOverSharedMemory) {
  gHarnessNet = nullptr;
  EXPECT_EQ(runRanks(2, probeRank, nullptr, 60), 0);
}

TEST(Iprobe, SeesTheNextMessageAndItsSizeOverSockets) {
  gHarnessNet = "socket";
  EXPECT_EQ(runRanks(2, probeRank, nullptr, 60), 0);
  gHarnessNet = nullptr;
}

bool failsWith(mixcclComm_t comm, mixcclResult_t got, mixcclResult_t want, const char* mention) {
  if (got != want) return false;
  std::string msg = mixcclGetLastError(comm);
  if (msg.find(mention) == std::string::npos) {
    fprintf(stderr, "message \"%s\" does not mention \"%s\"\n", msg.c_str(), mention);
    return false;
  }
  return true;
}

int badProbeRank(mixcclComm_t comm, int rank, int nranks, void*) {
  int flag;
  size_t bytes;
  RANK_CHECK(failsWith(comm, mixcclIprobe(rank, &flag, &bytes, comm), mixcclInvalidUsage,
                       "probes for a message from itself"));
  RANK_CHECK(failsWith(comm, mixcclIprobe(nranks, &flag, &bytes, comm), mixcclInvalidArgument,
                       "peer"));
  RANK_CHECK(failsWith(comm, mixcclIprobe(1 - rank, nullptr, &bytes, comm), mixcclInvalidArgument,
                       "mixcclIprobe: flag is NULL"));
  RANK_CHECK(failsWith(comm, mixcclIprobe(1 - rank, &flag, nullptr, comm), mixcclInvalidArgument,
                       "mixcclIprobe: bytes is NULL"));
  RANK_CHECK(mixcclGroupStart() == mixcclSuccess);
  mixcclResult_t inGroup = mixcclIprobe(1 - rank, &flag, &bytes, comm);
  RANK_CHECK(mixcclGroupEnd() == mixcclSuccess);
  RANK_CHECK(failsWith(comm, inGroup, mixcclInvalidUsage, "inside a group"));
  RANK_CHECK(mixcclIprobe(1 - rank, &flag, &bytes, nullptr) == mixcclInvalidArgument);
  RANK_CHECK(barrier(comm));  // still usable
  return 0;
}

TEST(Iprobe, BadCallsAreNamedAndTheCommStaysUsable) {
  gHarnessNet = nullptr;
  EXPECT_EQ(runRanks(2, badProbeRank, nullptr, 60), 0);
}

#ifdef MIXCCL_TEST_HAVE_UCX
int ucxProbeRank(mixcclComm_t comm, int rank, int nranks, void*) {
  int flag;
  size_t bytes;
  RANK_CHECK(failsWith(comm, mixcclIprobe(1 - rank, &flag, &bytes, comm), mixcclInvalidUsage,
                       "the ucx transport to rank"));
  RANK_CHECK(barrier(comm));
  return 0;
}

TEST(Iprobe, ATransportThatCannotProbeSaysSo) {
  setenv("UCX_TLS", "tcp", 1);
  gHarnessNet = "ucx";
  EXPECT_EQ(runRanks(2, ucxProbeRank, nullptr, 60), 0);
  gHarnessNet = nullptr;
  unsetenv("UCX_TLS");
}
#endif

}  // namespace
