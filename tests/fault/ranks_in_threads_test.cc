// Ranks of one process driven by threads (no fork, so it also runs under ThreadSanitizer): one
// thread initialises them all with non-blocking init, then each rank runs collectives from its
// own thread, then one thread runs them in a group, then one rank is aborted while the others
// wait in a collective on it. (proxy_transport_harness.cc sets MIXCCL_TIMEOUT_S=20 for the whole
// binary.)
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <thread>
#include <vector>

#include "base/clock.h"
#include "mixccl.h"

namespace {

using namespace mixccl;

// Ranks of one process: one thread initialises all of them (possible only because init does
// not block), then each rank is driven by its own thread, then by one thread in a group.
TEST(ProxyTransport, NonBlockingInitOfSeveralRanksFromOneThread) {
  const int n = 3;
  mixcclUniqueId id;
  ASSERT_EQ(mixcclGetUniqueId(&id), mixcclSuccess);
  mixcclComm_t comms[n];
  for (int r = 0; r < n; ++r) {
    mixcclConfig_t cfg = MIXCCL_CONFIG_INITIALIZER;
    cfg.blocking = 0;
    ASSERT_EQ(mixcclCommInitRankConfig(&comms[r], n, id, r, &cfg), mixcclInProgress);
  }
  for (int r = 0; r < n; ++r) {
    mixcclResult_t state = mixcclInProgress;
    Deadline d = Deadline::afterSeconds(10);
    while (state == mixcclInProgress && !d.expired()) {
      ASSERT_EQ(mixcclCommGetAsyncError(comms[r], &state), mixcclSuccess);
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    ASSERT_EQ(state, mixcclSuccess) << mixcclGetLastError(comms[r]);
  }
  std::atomic<int> bad{0};
  std::vector<std::thread> threads;
  for (int r = 0; r < n; ++r)
    threads.emplace_back([&, r] {
      std::vector<int> buf(50000);
      for (int it = 0; it < 20; ++it) {
        for (size_t i = 0; i < buf.size(); ++i) buf[i] = r + it + (int)i;
        if (mixcclAllReduce(buf.data(), buf.data(), buf.size(), mixcclInt, mixcclSum, comms[r],
                            nullptr) != mixcclSuccess)
          bad.fetch_add(1);
        for (size_t i = 0; i < buf.size(); ++i)
          if (buf[i] != n * (it + (int)i) + n * (n - 1) / 2) {
            bad.fetch_add(1);
            break;
          }
      }
    });
  for (auto& t : threads) t.join();
  EXPECT_EQ(bad.load(), 0);
  std::vector<std::vector<float>> g(n, std::vector<float>(1000, 2.0f));
  ASSERT_EQ(mixcclGroupStart(), mixcclSuccess);
  for (int r = 0; r < n; ++r)
    mixcclAllReduce(g[r].data(), g[r].data(), 1000, mixcclFloat, mixcclProd, comms[r], nullptr);
  ASSERT_EQ(mixcclGroupEnd(), mixcclSuccess);
  for (int r = 0; r < n; ++r) EXPECT_EQ(g[r][999], 8.0f);
  // Abort one rank from another thread while the others are blocked in a collective on it.
  std::vector<std::thread> blocked;
  std::atomic<int> failed{0};
  for (int r = 1; r < n; ++r)
    blocked.emplace_back([&, r] {
      float v = 1;
      if (mixcclAllReduce(&v, &v, 1, mixcclFloat, mixcclSum, comms[r], nullptr) != mixcclSuccess)
        failed.fetch_add(1);
    });
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  EXPECT_EQ(mixcclCommAbort(comms[0]), mixcclSuccess);
  for (auto& t : blocked) t.join();
  EXPECT_EQ(failed.load(), n - 1);
  for (int r = 1; r < n; ++r) EXPECT_EQ(mixcclCommDestroy(comms[r]), mixcclSuccess);
}

}  // namespace
