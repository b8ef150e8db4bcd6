// config.connect (mixcclConfig_t): a communicator of 4 ranks, which MIXCCL_CONNECT=auto connects
// at init, connects on first use when its config says "lazy", and says so and why through
// mixcclCommInspect; its point-to-point still works. Ranks of one process, each initialised
// with non-blocking init from this thread (no fork, so it runs under ThreadSanitizer too).
#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

#include "base/clock.h"
#include "mixccl.h"

namespace {

using namespace mixccl;

std::string inspect(mixcclComm_t comm, const char* key) {
  char v[256] = "";
  if (mixcclCommInspect(comm, key, v, sizeof(v)) != mixcclSuccess) return "(failed)";
  return v;
}

// n ranks of one communicator, all with cfg, initialised from this thread.
std::vector<mixcclComm_t> initRanks(int n, const mixcclConfig_t& base) {
  mixcclUniqueId id;
  EXPECT_EQ(mixcclGetUniqueId(&id), mixcclSuccess);
  std::vector<mixcclComm_t> comms(n, nullptr);
  for (int r = 0; r < n; ++r) {
    mixcclConfig_t cfg = base;
    cfg.blocking = 0;
    EXPECT_EQ(mixcclCommInitRankConfig(&comms[r], n, id, r, &cfg), mixcclInProgress);
  }
  for (int r = 0; r < n; ++r) {
    mixcclResult_t state = mixcclInProgress;
    Deadline d = Deadline::afterSeconds(15);
    while (state == mixcclInProgress && !d.expired()) {
      EXPECT_EQ(mixcclCommGetAsyncError(comms[r], &state), mixcclSuccess);
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    EXPECT_EQ(state, mixcclSuccess) << mixcclGetLastError(comms[r]);
  }
  return comms;
}

TEST(ConfigConnect, LazyFromTheConfigWhereAutoWouldConnectAtInit) {
  // What MIXCCL_CONNECT says for this process decides the contrast; CTest leaves it unset.
  const char* env = getenv("MIXCCL_CONNECT");
  if (env && std::string(env) != "auto") GTEST_SKIP() << "MIXCCL_CONNECT=" << env << " is set";
  const int n = 4;
  mixcclConfig_t plain = MIXCCL_CONFIG_INITIALIZER;
  plain.netName = "socket";
  std::vector<mixcclComm_t> eager = initRanks(n, plain);
  EXPECT_EQ(inspect(eager[0], "connect"), "eager");
  EXPECT_EQ(inspect(eager[0], "connected_peers"), "3");
  for (mixcclComm_t c : eager) EXPECT_EQ(mixcclCommDestroy(c), mixcclSuccess);

  mixcclConfig_t lazyCfg = plain;
  lazyCfg.connect = "lazy";
  std::vector<mixcclComm_t> lazy = initRanks(n, lazyCfg);
  EXPECT_EQ(inspect(lazy[0], "connect"), "lazy");
  EXPECT_EQ(inspect(lazy[0], "connect_why"), "config.connect=lazy");
  // Rank 0 and rank 2 are no partners of init's own exchanges over 4 ranks' rings: the pair
  // connects when the send below first needs it.
  const int before = atoi(inspect(lazy[0], "connected_peers").c_str());
  EXPECT_LT(before, 3);
  std::vector<int> out(1000, 7), in(1000, 0);
  std::thread receiver([&] {
    EXPECT_EQ(mixcclRecv(in.data(), in.size(), mixcclInt, 0, lazy[2], nullptr), mixcclSuccess);
  });
  EXPECT_EQ(mixcclSend(out.data(), out.size(), mixcclInt, 2, lazy[0], nullptr), mixcclSuccess);
  receiver.join();
  EXPECT_EQ(in[999], 7);
  for (mixcclComm_t c : lazy) EXPECT_EQ(mixcclCommDestroy(c), mixcclSuccess);
}

}  // namespace
