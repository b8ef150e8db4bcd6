// Several threads of one rank waiting on one proxy at once (mixccl.h: point-to-point on host
// memory from several threads, one per peer and direction, as the PyTorch backend does): one
// drives progress for all, the others park (Proxy::awaitDriver). Over each transport of
// kTransports, in one process with threads only, so ThreadSanitizer sees every thread.
#include <gtest/gtest.h>

#include <atomic>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "base/clock.h"
#include "proxy_transport_harness.h"

namespace {

using namespace mixccl;
using namespace mixccl::proxytest;

class ProxyWaiters : public ::testing::TestWithParam<const char*> {};

uint8_t byteOf(int from, int msg, size_t i) { return (uint8_t)(from * 61 + msg * 13 + i * 5); }

// Messages of rank `me` to its peer, one at a time, each waited for on this thread.
void sendAll(Proxy& proxy, int me, int messages, std::atomic<int>* bad) {
  const size_t sizes[] = {0, 3, 4096, 65537, 1 << 20, 16};
  for (int m = 0; m < messages; ++m) {
    std::vector<uint8_t> out(sizes[m % 6]);
    for (size_t i = 0; i < out.size(); ++i) out[i] = byteOf(me, m, i);
    TransportRequest op(TransportRequest::Kind::Send, 1 - me, out.data(), out.size());
    proxy.post(&op);
    if (proxy.wait(&op, Deadline::afterSeconds(20)) != mixcclSuccess) bad->fetch_add(1);
  }
}

// The peer's messages, one at a time on this thread, every byte checked.
void recvAll(Proxy& proxy, int me, int messages, std::atomic<int>* bad) {
  const size_t sizes[] = {0, 3, 4096, 65537, 1 << 20, 16};
  const int peer = 1 - me;
  for (int m = 0; m < messages; ++m) {
    std::vector<uint8_t> in(sizes[m % 6] + 1, 0xEE);  // a guard byte past the message
    TransportRequest op(TransportRequest::Kind::Recv, peer, in.data(), in.size() - 1);
    proxy.post(&op);
    if (proxy.wait(&op, Deadline::afterSeconds(20)) != mixcclSuccess) {
      bad->fetch_add(1);
      continue;
    }
    for (size_t i = 0; i + 1 < in.size(); ++i)
      if (in[i] != byteOf(peer, m, i)) {
        bad->fetch_add(1);
        break;
      }
    if (in.back() != 0xEE) bad->fetch_add(1);
  }
}

// Each rank sends on one thread and receives on another, both directions at once, while a
// third thread of each rank probes (mixcclIprobe): every byte arrives, nothing fails.
TEST_P(ProxyWaiters, ASenderAndAReceiverThreadOfEachRankAndAProbe) {
  std::unique_ptr<Pair> pair = makePair(GetParam(), 2, 65536);
  Pair& p = *pair;
  Proxy* proxies[2] = {p.p0.get(), p.p1.get()};
  std::atomic<int> bad{0};
  std::atomic<int> probeFailures{0};
  std::atomic<bool> stop{false};
  std::vector<std::thread> threads;
  const int messages = 60;
  for (int me = 0; me < 2; ++me) {
    threads.emplace_back([&, me] { sendAll(*proxies[me], me, messages, &bad); });
    threads.emplace_back([&, me] { recvAll(*proxies[me], me, messages, &bad); });
  }
  std::vector<std::thread> probers;
  for (int me = 0; me < 2; ++me)
    probers.emplace_back([&, me] {
      while (!stop.load()) {
        bool arrived = false;
        uint64_t bytes = 0;
        Result r = proxies[me]->probe(1 - me, &arrived, &bytes);
        // Transports that cannot tell say so (mixcclInvalidUsage); nothing else may fail.
        if (r != mixcclSuccess && r != mixcclInvalidUsage) probeFailures.fetch_add(1);
        std::this_thread::sleep_for(std::chrono::microseconds(300));
      }
    });
  for (auto& t : threads) t.join();
  stop.store(true);
  for (auto& t : probers) t.join();
  EXPECT_EQ(bad.load(), 0);
  EXPECT_EQ(probeFailures.load(), 0);
  p.p0->shutdownGracefully();
  p.p1->shutdownGracefully();
}

// A parked waiter's request finishes while the driving thread's own still waits: rank 1 sends
// what rank 0's first thread waits for only after rank 0's second thread saw its send finish.
// Were the parked thread woken only when the driver left, this would deadlock until the
// deadlines.
TEST_P(ProxyWaiters, AParkedWaiterFinishesWhileTheDriverStillWaits) {
  std::unique_ptr<Pair> pair = makePair(GetParam(), 2, 65536);
  Pair& p = *pair;
  std::vector<uint8_t> first(100, 0), big(1 << 20, 7), bigIn(1 << 20, 0), reply(100, 9);
  TransportRequest waitsLong(TransportRequest::Kind::Recv, 1, first.data(), first.size());
  std::atomic<bool> bigSent{false};
  Result longResult = mixcclInternalError, bigResult = mixcclInternalError;
  std::thread driver([&] {
    p.p0->post(&waitsLong);
    longResult = p.p0->wait(&waitsLong, Deadline::afterSeconds(15));
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(50));  // let it take the lead
  std::thread parked([&] {
    TransportRequest op(TransportRequest::Kind::Send, 1, big.data(), big.size());
    p.p0->post(&op);
    bigResult = p.p0->wait(&op, Deadline::afterSeconds(10));
    bigSent.store(true);
  });
  TransportRequest in(TransportRequest::Kind::Recv, 0, bigIn.data(), bigIn.size());
  p.p1->post(&in);
  EXPECT_EQ(p.p1->wait(&in, Deadline::afterSeconds(10)), mixcclSuccess);
  parked.join();
  EXPECT_EQ(bigResult, mixcclSuccess);
  EXPECT_EQ(bigIn[(1 << 20) - 1], 7);
  ASSERT_TRUE(bigSent.load());
  EXPECT_EQ(waitsLong.stateNow(), TransportRequest::Pending);
  TransportRequest out(TransportRequest::Kind::Send, 0, reply.data(), reply.size());
  p.p1->post(&out);
  EXPECT_EQ(p.p1->wait(&out, Deadline::afterSeconds(10)), mixcclSuccess);
  driver.join();
  EXPECT_EQ(longResult, mixcclSuccess);
  EXPECT_EQ(first[99], 9);
  p.p0->shutdownGracefully();
  p.p1->shutdownGracefully();
}

// A parked waiter whose deadline passes gets its timeout although another thread drives with
// a later deadline: the communicator fails (as for any timeout) and both waits return.
TEST_P(ProxyWaiters, AParkedWaitersDeadlineEndsBothWaits) {
  std::unique_ptr<Pair> pair = makePair(GetParam(), 2, 65536);
  Pair& p = *pair;
  std::vector<uint8_t> a(64), b(64);
  TransportRequest longOne(TransportRequest::Kind::Recv, 1, a.data(), a.size());
  TransportRequest shortOne(TransportRequest::Kind::Recv, 1, b.data(), b.size());
  Result longResult = mixcclSuccess, shortResult = mixcclSuccess;
  double shortEnded = 0;
  const double start = fault_now();
  std::thread driver([&] {
    p.p0->post(&longOne);
    longResult = p.p0->wait(&longOne, Deadline::afterSeconds(60));
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  std::thread parked([&] {
    p.p0->post(&shortOne);
    shortResult = p.p0->wait(&shortOne, Deadline::afterSeconds(0.3));
    shortEnded = fault_now();
  });
  parked.join();
  driver.join();
  EXPECT_EQ(shortResult, mixcclTimeout) << "the parked waiter's own deadline";
  EXPECT_NE(longResult, mixcclSuccess) << "the communicator failed with it";
  // Hang guard only (the driver's deadline is 60 s): the parked deadline took effect.
  EXPECT_LT(shortEnded - start, 20.0);
  p.p0->abort("test end");
  p.p1->abort("test end");
}

INSTANTIATE_TEST_SUITE_P(Transports, ProxyWaiters, ::testing::ValuesIn(kTransports),
                         transportParamName);

}  // namespace
