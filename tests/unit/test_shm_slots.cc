// The shared-memory slots (transport/shm_slots.h) and the collectives on them
// (algo/slot_collectives.h), with threads as ranks and socket pairs as their control
// connections: setup and its refusals, the alternating slots, every kind's result, the
// mismatch verdict, and the ends of a wait (timeout, a failed communicator, a peer that left,
// a peer whose process died).
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <functional>
#include <memory>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "algo/reduce.h"
#include "algo/slot_collectives.h"
#include "base/error.h"
#include "transport/shm_slots.h"

namespace mixccl {
namespace {

// n ranks' control connections: conns[r][p][0] joins rank r to rank p.
std::vector<std::vector<std::vector<Socket>>> meshOf(int n) {
  std::vector<std::vector<std::vector<Socket>>> conns(n);
  for (auto& row : conns) row.resize(n);
  for (int a = 0; a < n; ++a)
    for (int b = a + 1; b < n; ++b) {
      int fds[2];
      EXPECT_EQ(socketpair(AF_UNIX, SOCK_STREAM, 0, fds), 0);
      conns[a][b].emplace_back(fds[0]);
      conns[b][a].emplace_back(fds[1]);
    }
  return conns;
}

uint64_t randomHash() {
  std::random_device rd;
  return ((uint64_t)rd() << 32) ^ rd();
}

struct Ranks {
  std::vector<std::unique_ptr<ShmSlots>> slots;
  std::vector<std::string> why;
  std::vector<Result> results;
  uint64_t hash = 0;
};

// Sets up slots for n ranks in n threads; slotBytes[r] is rank r's wish.
Ranks setUp(const std::vector<size_t>& slotBytes, int spinUs = 50) {
  const int n = (int)slotBytes.size();
  auto conns = meshOf(n);
  const uint64_t hash = randomHash();
  Ranks out;
  out.hash = hash;
  out.slots.resize(n);
  out.why.resize(n);
  out.results.assign(n, mixcclSuccess);
  std::vector<std::string> names;
  for (int r = 0; r < n; ++r) names.push_back("rank " + std::to_string(r) + " (test)");
  std::vector<std::thread> threads;
  for (int r = 0; r < n; ++r)
    threads.emplace_back([&, r] {
      ShmSlotsParams p;
      p.rank = r;
      p.nranks = n;
      p.commHash = hash;
      p.slotBytes = slotBytes[r];
      p.spinUs = spinUs;
      out.results[r] = ShmSlots::setup(p, conns[r], names, Deadline::afterSeconds(10),
                                       &out.slots[r], &out.why[r]);
    });
  for (std::thread& t : threads) t.join();
  return out;
}

// Runs fn(rank) on every rank at once.
void onEveryRank(int n, const std::function<void(int)>& fn) {
  std::vector<std::thread> threads;
  for (int r = 0; r < n; ++r) threads.emplace_back(fn, r);
  for (std::thread& t : threads) t.join();
}

TEST(ShmSlots, EveryRankGetsThemWhenAllAgree) {
  Ranks k = setUp({4096, 4096, 4096});
  for (int r = 0; r < 3; ++r) {
    EXPECT_EQ(k.results[r], mixcclSuccess);
    ASSERT_TRUE(k.slots[r]) << k.why[r];
    EXPECT_EQ(k.slots[r]->slotBytes(), 4096u);
    EXPECT_EQ(k.why[r], "4096-byte slots");
  }
}

TEST(ShmSlots, OneRankTurningThemOffTurnsThemOffEverywhere) {
  Ranks k = setUp({4096, 0, 4096});
  for (int r = 0; r < 3; ++r) {
    EXPECT_EQ(k.results[r], mixcclSuccess);
    EXPECT_FALSE(k.slots[r]);
  }
  EXPECT_EQ(k.why[0], "rank 1 (test) does not use them (MIXCCL_SHM_SLOT_BYTES=0 there)");
  EXPECT_EQ(k.why[1], "MIXCCL_SHM_SLOT_BYTES=0 here");
}

TEST(ShmSlots, DifferentSizesTurnThemOff) {
  Ranks k = setUp({4096, 8192});
  EXPECT_FALSE(k.slots[0]);
  EXPECT_FALSE(k.slots[1]);
  EXPECT_EQ(k.why[0], "rank 1 (test) asks for 8192-byte slots, this rank for 4096");
}

TEST(ShmSlots, NoNameIsLeftInDevShm) {
  Ranks k = setUp({4096, 4096});
  ASSERT_TRUE(k.slots[0]);
  // The segments live on in the mappings only.
  ShmSegment probe;
  EXPECT_NE(ShmSegment::open(shmSlotsSegmentName(k.hash, 0), 64, &probe), mixcclSuccess);
}

TEST(ShmSlots, OperationsAlternateBetweenTwoSlotsAndCarryTheirData) {
  const int n = 3, ops = 200;
  Ranks k = setUp({256, 256, 256});
  std::atomic<int> wrong{0};
  onEveryRank(n, [&](int r) {
    ShmSlots& s = *k.slots[r];
    Health health;
    for (int op = 0; op < ops; ++op) {
      const uint64_t mine = (uint64_t)op * 1000 + r;
      SlotStamp stamp;
      stamp.count = (uint64_t)op;
      uint64_t seq = s.publish(stamp, &mine, sizeof(mine));
      if (s.waitForAll(seq, 10, health, "test") != mixcclSuccess) ++wrong;
      for (int q = 0; q < n; ++q) {
        uint64_t got;
        memcpy(&got, s.dataOf(q, seq), sizeof(got));
        if (got != (uint64_t)op * 1000 + q || s.headerOf(q, seq).stamp.count != (uint64_t)op ||
            s.headerOf(q, seq).bytes != sizeof(got))
          ++wrong;
      }
    }
  });
  EXPECT_EQ(wrong.load(), 0);
}

TEST(ShmSlots, AWaitEndsAtTheDeadlineNamingTheMissingRanks) {
  Ranks k = setUp({64, 64, 64, 64}, /*spinUs=*/0);
  Health health;
  uint64_t seq = k.slots[0]->publish(SlotStamp{}, nullptr, 0);
  k.slots[2]->publish(SlotStamp{}, nullptr, 0);  // rank 2 arrives, ranks 1 and 3 never do
  Result r = k.slots[0]->waitForAll(seq, 0.2, health, "mixcclAllReduce");
  EXPECT_EQ(r, mixcclTimeout);
  std::string msg;
  EXPECT_EQ(health.error(&msg), mixcclTimeout);
  EXPECT_EQ(msg, "rank 0: mixcclAllReduce on shared-memory slots: rank 1 (test), rank 3 (test) "
                 "did not join within the timeout (MIXCCL_TIMEOUT_S)");
  EXPECT_EQ(health.culprit(), 1);
}

TEST(ShmSlots, AFailedCommunicatorEndsASleepingWait) {
  Ranks k = setUp({64, 64}, /*spinUs=*/0);
  Health health;
  uint64_t seq = k.slots[0]->publish(SlotStamp{}, nullptr, 0);
  std::thread failer([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    health.fail(mixcclRemoteError, "rank 1 (test) died");
  });
  Result r = k.slots[0]->waitForAll(seq, 30, health, "mixcclAllReduce");
  failer.join();
  EXPECT_EQ(r, mixcclRemoteError);
  EXPECT_EQ(threadLastError(), "rank 1 (test) died");
}

TEST(ShmSlots, APeerThatLeftEndsTheWaitNamingIt) {
  Ranks k = setUp({64, 64}, /*spinUs=*/0);
  Health health;
  uint64_t seq = k.slots[0]->publish(SlotStamp{}, nullptr, 0);
  std::thread leaver([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    k.slots[1].reset();  // rank 1 destroys its communicator
  });
  Result r = k.slots[0]->waitForAll(seq, 30, health, "mixcclBroadcast");
  leaver.join();
  EXPECT_EQ(r, mixcclRemoteError);
  EXPECT_EQ(threadLastError(), "rank 0: mixcclBroadcast on shared-memory slots: rank 1 (test) has "
                                   "left the communicator (destroyed it) while this rank waited for it");
}

// No connection tells rank 0 of the death (a communicator connected on first use may have
// none to that rank): the wait looks at the owner's process. Left unreaped, it is a zombie,
// as a killed rank is until its launcher reaps it.
TEST(ShmSlots, APeerWhoseProcessDiedEndsTheWaitNamingIt) {
  ShmSlotsParams p;
  p.nranks = 2;
  p.commHash = randomHash();
  p.slotBytes = 64;
  p.spinUs = 0;
  const std::vector<std::string> names{"rank 0 (test)", "rank 1 (test)"};
  int ready[2];
  ASSERT_EQ(pipe(ready), 0);
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    ShmSlotsParams mine = p;
    mine.rank = 1;
    std::unique_ptr<ShmSlots> s;
    const char ok = ShmSlots::create(mine, names, &s) == mixcclSuccess ? 'y' : 'n';
    if (write(ready[1], &ok, 1) != 1) _exit(2);
    for (;;) pause();  // killed by the test
  }
  char ok = 0;
  ASSERT_EQ(read(ready[0], &ok, 1), 1);
  close(ready[0]);
  close(ready[1]);
  std::unique_ptr<ShmSlots> s;
  p.rank = 0;
  Result created = ok == 'y' ? ShmSlots::create(p, names, &s) : mixcclInternalError;
  Result mapped = created == mixcclSuccess ? s->mapPeers() : created;
  ShmSlots::unlinkAll(p.commHash, 2);
  if (mapped != mixcclSuccess) kill(child, SIGKILL);
  ASSERT_EQ(mapped, mixcclSuccess) << threadLastError();
  Health health;
  const uint64_t seq = s->publish(SlotStamp{}, nullptr, 0);
  std::thread killer([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    kill(child, SIGKILL);
  });
  const auto start = std::chrono::steady_clock::now();
  Result r = s->waitForAll(seq, 30, health, "mixcclAllReduce");
  const double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  killer.join();
  int status = 0;
  EXPECT_EQ(waitpid(child, &status, 0), child);
  EXPECT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
  EXPECT_EQ(r, mixcclRemoteError);
  EXPECT_EQ(threadLastError(), "rank 0: mixcclAllReduce on shared-memory slots: rank 1 (test) died "
                               "(its process has ended) while this rank waited for it");
  EXPECT_LT(took, 1.0) << "the 30 s timeout, not the death, ended the wait";
  std::string msg;
  EXPECT_EQ(health.error(&msg), mixcclRemoteError);
}

TEST(ShmSlots, ASleepingWaitIsWokenByThePublish) {
  Ranks k = setUp({64, 64}, /*spinUs=*/0);
  Health health;
  uint64_t seq = k.slots[0]->publish(SlotStamp{}, nullptr, 0);
  std::thread late([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(30));
    k.slots[1]->publish(SlotStamp{}, nullptr, 0);
  });
  EXPECT_EQ(k.slots[0]->waitForAll(seq, 30, health, "test"), mixcclSuccess);
  late.join();
}

// Every kind on 3 ranks against the same computation done here, int32 sums and products.
TEST(SlotCollectives, EveryKindGivesTheExpectedResult) {
  const int n = 3;
  const size_t count = 5;
  Ranks k = setUp({1024, 1024, 1024});
  const CollKind kinds[] = {CollKind::AllReduce, CollKind::Broadcast, CollKind::Reduce,
                            CollKind::AllGather, CollKind::ReduceScatter, CollKind::AlltoAll,
                            CollKind::Gather, CollKind::Scatter};
  for (CollKind kind : kinds) {
    SCOPED_TRACE(collSpec(kind).name);
    const int root = 2;
    std::vector<std::vector<int32_t>> send(n), recv(n);
    for (int r = 0; r < n; ++r) {
      send[r].resize(count * n);
      for (size_t i = 0; i < send[r].size(); ++i) send[r][i] = (int32_t)(100 * r + i + 1);
      recv[r].assign(count * n, -1);
    }
    std::vector<Result> results(n);
    onEveryRank(n, [&](int r) {
      Health health;
      SlotCall c{kind, send[r].data(), recv[r].data(), count, mixcclInt32, mixcclSum, root};
      ASSERT_TRUE(fitsSlots(*k.slots[r], c));
      results[r] = slotCollective(*k.slots[r], c, 10, health);
    });
    for (int r = 0; r < n; ++r) {
      ASSERT_EQ(results[r], mixcclSuccess);
      auto sumAt = [&](size_t i) { int32_t s = 0; for (int q = 0; q < n; ++q) s += send[q][i]; return s; };
      for (size_t i = 0; i < count; ++i) {
        switch (kind) {
          case CollKind::AllReduce: EXPECT_EQ(recv[r][i], sumAt(i)); break;
          case CollKind::Reduce: EXPECT_EQ(recv[r][i], r == root ? sumAt(i) : -1); break;
          case CollKind::ReduceScatter: EXPECT_EQ(recv[r][i], sumAt(r * count + i)); break;
          case CollKind::Broadcast: EXPECT_EQ(recv[r][i], send[root][i]); break;
          case CollKind::Scatter: EXPECT_EQ(recv[r][i], send[root][r * count + i]); break;
          case CollKind::AllGather:
          case CollKind::Gather:
            for (int q = 0; q < n; ++q)
              EXPECT_EQ(recv[r][q * count + i], kind == CollKind::Gather && r != root ? -1 : send[q][i]);
            break;
          case CollKind::AlltoAll:
            for (int q = 0; q < n; ++q) EXPECT_EQ(recv[r][q * count + i], send[q][r * count + i]);
            break;
        }
      }
    }
  }
}

TEST(SlotCollectives, AvgDividesAndInPlaceWorks) {
  const int n = 2;
  Ranks k = setUp({64, 64});
  std::vector<std::vector<float>> buf = {{1, 2, 3}, {3, 6, 9}};
  onEveryRank(n, [&](int r) {
    Health health;
    SlotCall c{CollKind::AllReduce, buf[r].data(), buf[r].data(), 3, mixcclFloat, mixcclAvg, -1};
    EXPECT_EQ(slotCollective(*k.slots[r], c, 10, health), mixcclSuccess);
  });
  for (int r = 0; r < n; ++r) EXPECT_EQ(buf[r], (std::vector<float>{2, 4, 6}));
}

TEST(SlotCollectives, TooLargeOrEmptyCallsDoNotFit) {
  Ranks k = setUp({64, 64});
  SlotCall c{CollKind::AllReduce, nullptr, nullptr, 16, mixcclFloat, mixcclSum, -1};
  EXPECT_TRUE(fitsSlots(*k.slots[0], c));  // 64 bytes
  c.count = 17;
  EXPECT_FALSE(fitsSlots(*k.slots[0], c));
  c.count = 0;
  EXPECT_FALSE(fitsSlots(*k.slots[0], c));
  // ReduceScatter publishes count * nranks elements, Scatter's root too.
  c = {CollKind::ReduceScatter, nullptr, nullptr, 8, mixcclFloat, mixcclSum, -1};
  EXPECT_TRUE(fitsSlots(*k.slots[0], c));
  c.count = 9;
  EXPECT_FALSE(fitsSlots(*k.slots[0], c));
  c = {CollKind::Scatter, nullptr, nullptr, 9, mixcclFloat, mixcclSum, 1};
  EXPECT_FALSE(fitsSlots(*k.slots[0], c)) << "every rank answers for the root's part";
}

// Rank 1 calls Broadcast while rank 0 calls AllReduce: both refuse with the same story, and the
// next matching call works (the slots stay in step).
TEST(SlotCollectives, AMismatchIsRefusedOnEveryRankAndTheSlotsStayUsable) {
  Ranks k = setUp({64, 64});
  std::vector<Result> results(2);
  std::vector<std::string> messages(2);
  onEveryRank(2, [&](int r) {
    Health health;
    float v = 1;
    SlotCall c{r == 0 ? CollKind::AllReduce : CollKind::Broadcast, &v, &v, 1, mixcclFloat, mixcclSum,
               r == 0 ? -1 : 0};
    results[r] = slotCollective(*k.slots[r], c, 10, health);
    messages[r] = threadLastError();
    c = {CollKind::AllReduce, &v, &v, 1, mixcclFloat, mixcclSum, -1};
    EXPECT_EQ(slotCollective(*k.slots[r], c, 10, health), mixcclSuccess);
    EXPECT_FALSE(health.failed());
  });
  EXPECT_EQ(results[0], mixcclInvalidUsage);
  EXPECT_EQ(results[1], mixcclInvalidUsage);
  EXPECT_EQ(messages[0], "rank 0: mixcclAllReduce: this rank called allreduce of 1 float, op sum, "
                         "rank 1 called broadcast of 1 float, root 0 (every rank must make the "
                         "same collective calls in the same order)");
  EXPECT_EQ(messages[1], "rank 1: mixcclBroadcast: this rank called broadcast of 1 float, root 0, "
                         "rank 0 called allreduce of 1 float, op sum (every rank must make the "
                         "same collective calls in the same order)");
}

}  // namespace
}  // namespace mixccl
