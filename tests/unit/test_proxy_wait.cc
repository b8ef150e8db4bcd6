// The progress engine's waiting rule: a waiting call polls until MIXCCL_SPIN_US have passed
// since the last round that moved something, then blocks. A fake polled connection delivers a
// receive piece by piece at a fixed pace and counts how often the engine got ready to block.
#include <gtest/gtest.h>
#include <sys/socket.h>

#include <chrono>
#include <memory>
#include <thread>
#include <vector>

#include "base/clock.h"
#include "base/health.h"
#include "proxy/proxy.h"
#include "transport/transport.h"

namespace {

using namespace mixccl;
using Seconds = std::chrono::duration<double>;

// Needs polling (no fd, as UCX or shared memory); the posted receive gets one piece per `gap`
// and completes with the last. prepareToBlock() counts the times the engine was about to sleep.
class PacedConnection : public Connection {
 public:
  PacedConnection(int peer, int pieces, Seconds gap) : Connection(peer), left_(pieces), gap_(gap) {}
  const char* transportName() const override { return "paced"; }
  Result start(TransportEvents* events) override {
    events_ = events;
    return mixcclSuccess;
  }
  void postSend(TransportRequest*) override {}
  void postRecv(TransportRequest* r) override {
    recv_ = r;
    next_ = Clock::now() + std::chrono::duration_cast<Clock::duration>(gap_);
  }
  void onEvent(int, uint32_t) override {}
  bool needsPolling() const override { return true; }
  bool poll() override {
    if (!recv_ || left_ == 0 || Clock::now() < next_) return false;
    next_ += std::chrono::duration_cast<Clock::duration>(gap_);
    if (--left_ == 0) events_->complete(recv_, mixcclSuccess);
    return true;
  }
  bool prepareToBlock() override {
    ++blocks;
    return !poll();
  }
  void goodbye() override {}
  void abandon() override { recv_ = nullptr; }

  int blocks = 0;  // read after the wait, on the waiting thread

 private:
  TransportEvents* events_ = nullptr;
  TransportRequest* recv_ = nullptr;
  int left_;
  Seconds gap_;
  Clock::time_point next_{};
};

// Rank 0 of two with the paced connection to rank 1 (whose control connection is `peerEnd`).
struct PacedEngine {
  PacedEngine(int spinUs, int pieces, Seconds gap) {
    int sv[2];
    EXPECT_EQ(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
    peerEnd = Socket(sv[1]);
    std::vector<Socket> control(2);
    control[1] = Socket(sv[0]);
    auto c = std::make_unique<PacedConnection>(1, pieces, gap);
    conn = c.get();
    std::vector<std::unique_ptr<Connection>> conns(2);
    conns[1] = std::move(c);
    ProxyParams p;
    p.rank = 0;
    p.nranks = 2;
    p.spinUs = spinUs;
    p.yieldWhileSpinning = false;
    p.peerNames = {"rank 0 (test)", "rank 1 (test)"};
    proxy = std::make_unique<Proxy>(p, health, std::move(control), std::move(conns));
    EXPECT_EQ(proxy->start(), mixcclSuccess);
  }
  ~PacedEngine() { proxy->abort("test over"); }

  Result receive() {
    char buf[8];
    TransportRequest r(TransportRequest::Kind::Recv, 1, buf, sizeof(buf));
    proxy->post(&r);
    return proxy->wait(&r, Deadline::afterSeconds(20));
  }

  Health health;
  Socket peerEnd;
  PacedConnection* conn = nullptr;
  std::unique_ptr<Proxy> proxy;
};

// 60 pieces 1 ms apart (60 ms in all) with a 20 ms spin: counted from the start of the wait,
// the spin would end a third of the way and every later piece would be slept for (up to 100 ms
// each: nothing wakes the engine); counted from the last piece, it never ends.
TEST(ProxyWait, KeepsPollingWhileDataFlows) {
  PacedEngine e(20000, 60, Seconds(0.001));
  auto t0 = Clock::now();
  ASSERT_EQ(e.receive(), mixcclSuccess);
  double took = Seconds(Clock::now() - t0).count();
  // A descheduled test process may miss the spin once or twice on a loaded machine.
  EXPECT_LE(e.conn->blocks, 2) << "the wait slept between pieces";
  EXPECT_LT(took, 1.0);
}

// The spin still ends when nothing moves: two pieces 60 ms apart with a 2 ms spin make the wait
// get ready to sleep in between (nothing busy-waits past MIXCCL_SPIN_US).
TEST(ProxyWait, BlocksWhenNothingMovesForTheSpin) {
  PacedEngine e(2000, 2, Seconds(0.06));
  ASSERT_EQ(e.receive(), mixcclSuccess);
  EXPECT_GE(e.conn->blocks, 1) << "the wait polled through a 60 ms pause with a 2 ms spin";
}

}  // namespace
