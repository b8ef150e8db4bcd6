// Revoke and shrink with ranks of one process, one thread each (so the ThreadSanitizer stage,
// which cannot fork after threads, runs them too): ranks blocked in different calls return once
// another rank's second thread revokes the communicator; then all shrink it at once and the new
// communicator works.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include "mixccl.h"

namespace {

TEST(ShrinkThreads, RevokeFromASecondThreadThenShrinkInOneProcess) {
  constexpr int n = 4;
  mixcclComm_t comms[n];
  ASSERT_EQ(mixcclCommInitAll(comms, n, nullptr), mixcclSuccess);
  // Ranks 0 and 1 wait in an AllReduce that 2 and 3 never join; 2 and 3 wait for each other's
  // Send; rank 3's second thread revokes. Nothing one sends can match another's receive.
  std::vector<std::string> messages(n);
  std::vector<mixcclResult_t> codes(n, mixcclSuccess);
  std::vector<std::thread> threads;
  for (int r = 0; r < n; ++r)
    threads.emplace_back([&, r] {
      std::vector<float> buf(1024, 1.0f);
      codes[r] = r < 2 ? mixcclAllReduce(buf.data(), buf.data(), buf.size(), mixcclFloat,
                                         mixcclSum, comms[r], nullptr)
                       : mixcclRecv(buf.data(), buf.size(), mixcclFloat, 5 - r, comms[r], nullptr);
      messages[r] = mixcclGetLastError(comms[r]);
    });
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  std::thread revoker([&] { EXPECT_EQ(mixcclCommRevoke(comms[3], MIXCCL_REVOKE_DEFAULT), mixcclSuccess); });
  revoker.join();
  for (auto& t : threads) t.join();
  for (int r = 0; r < n; ++r) {
    SCOPED_TRACE("rank " + std::to_string(r));
    EXPECT_EQ(codes[r], r == 3 ? mixcclInvalidUsage : mixcclRemoteError);
    EXPECT_NE(messages[r].find(r == 3 ? "revoked by this rank" : "revoked by rank 3 ("),
              std::string::npos) << messages[r];
  }
  // Every rank shrinks (nobody excluded) from its own thread; the new communicator works.
  mixcclComm_t next[n] = {};
  std::atomic<int> bad{0};
  threads.clear();
  for (int r = 0; r < n; ++r)
    threads.emplace_back([&, r] {
      if (mixcclCommShrink(comms[r], nullptr, 0, &next[r], nullptr, MIXCCL_SHRINK_ABORT) !=
          mixcclSuccess) {
        bad.fetch_add(1);
        return;
      }
      int v = r + 1;
      if (mixcclAllReduce(&v, &v, 1, mixcclInt, mixcclSum, next[r], nullptr) != mixcclSuccess ||
          v != n * (n + 1) / 2)
        bad.fetch_add(1);
    });
  for (auto& t : threads) t.join();
  EXPECT_EQ(bad.load(), 0);
  for (int r = 0; r < n; ++r) {
    EXPECT_EQ(mixcclCommDestroy(next[r]), mixcclSuccess);
    EXPECT_EQ(mixcclCommDestroy(comms[r]), mixcclSuccess);
  }
}

}  // namespace
