// The proxy's side of blaming a stall, in one process (threads only, so it also runs under
// ThreadSanitizer): rank 0 of 3 is a real Proxy whose peers are raw sockets the test plays.
// A timeout names the peer nothing came from, following a peer's waiting notice past it; the
// proxy tells its peers whom it waits for before its deadline, at once when a peer's notice
// says it waits for this rank, and whom it blamed when it gives up; a peer-failed notice read
// after the cut of the data connection it preceded is still what the failure says; a malformed
// wait list fails the communicator with a message that names the sender.
#include <gtest/gtest.h>
#include <sys/socket.h>
#include <unistd.h>

#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "base/clock.h"
#include "base/health.h"
#include "proxy/proxy.h"
#include "transport/control_channel.h"
#include "transport/frame.h"
#include "transport/socket_connection.h"
#include "transport/wait_notice.h"

namespace {

using namespace mixccl;

const bool kQuiet = [] {
  setenv("MIXCCL_DEBUG", "NONE", 0);
  return true;
}();

constexpr int kRanks = 3;

// Rank 0's proxy; for each peer p, data[p] is the raw end of its socket data connection and
// control[p] a ControlChannel on the raw end of its control connection.
struct Rank0 {
  Health health;
  std::unique_ptr<Proxy> proxy;
  std::vector<Socket> data;
  std::vector<ControlChannel> control;

  // Sends a waiting or peer-failed notice from peer p.
  void notice(int p, uint32_t flags, uint32_t seq, const WaitNotice& n) {
    control[p].send(flags, seq, false, encodeWaitNotice(n));
  }
  // The next frame rank 0 sent peer p (doorbells skipped), within seconds; false if none came.
  bool nextFrame(int p, double seconds, FrameHeader* h, std::string* payload) {
    Deadline d = Deadline::afterSeconds(seconds);
    while (!d.expired()) {
      ControlChannel::Read got = control[p].read(h, payload);
      if (got == ControlChannel::Read::Frame && h->flags != kFrameFlagDoorbell) return true;
      if (got != ControlChannel::Read::Frame && got != ControlChannel::Read::Empty) return false;
      usleep(1000);
    }
    return false;
  }
  std::string error() const {
    std::string msg;
    health.error(&msg);
    return msg;
  }
};

std::unique_ptr<Rank0> makeRank0(double timeoutS) {
  std::unique_ptr<Rank0> r(new Rank0);
  ProxyParams pp;
  pp.rank = 0;
  pp.nranks = kRanks;
  pp.spinUs = 20;
  pp.timeoutS = timeoutS;
  pp.peerNames = {"rank 0 (test)", "rank 1 (test)", "rank 2 (test)"};
  std::vector<Socket> control(kRanks);
  std::vector<std::unique_ptr<Connection>> conns(kRanks);
  r->data.resize(kRanks);
  r->control.resize(kRanks);
  for (int p = 1; p < kRanks; ++p) {
    int d[2], c[2];
    EXPECT_EQ(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, d), 0);
    EXPECT_EQ(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, c), 0);
    std::vector<Socket> mine;
    mine.emplace_back(d[0]);
    conns[p].reset(new SocketConnection(p, std::move(mine), 4096));
    r->data[p] = Socket(d[1]);
    control[p] = Socket(c[0]);
    r->control[p] = ControlChannel(p, Socket(c[1]));
  }
  r->proxy.reset(new Proxy(pp, r->health, std::move(control), std::move(conns)));
  EXPECT_EQ(r->proxy->start(), mixcclSuccess);
  return r;
}

WaitNotice waits(int waiter, int peer, uint32_t idleMs) {
  WaitNotice n;
  n.edges.push_back(WaitEdge{waiter, peer, idleMs});
  return n;
}

// Rank 0 waits for rank 1. Rank 1 answers rank 0's waiting notice with its own: it waits for
// rank 2, which says nothing. The timeout names rank 2, seen by rank 1, and so does the notice
// rank 0 sends when it gives up, to every peer but the one it blames.
TEST(ProxyStall, TimeoutFollowsAPeersWaitToTheSilentRank) {
  std::unique_ptr<Rank0> r = makeRank0(1);
  char buf[64];
  TransportRequest op(TransportRequest::Kind::Recv, 1, buf, sizeof(buf));
  r->proxy->post(&op);
  FrameHeader waiting{};
  std::string waitingPayload;
  bool heard = false;
  std::thread rank1([&] {
    heard = r->nextFrame(1, 2, &waiting, &waitingPayload);
    r->notice(1, kFrameFlagWaiting, 0, waits(1, 2, 400));
  });
  Clock::time_point start = Clock::now();
  EXPECT_EQ(r->proxy->wait(&op, Deadline::afterSeconds(1)), mixcclTimeout);
  const double took = std::chrono::duration<double>(Clock::now() - start).count();
  rank1.join();
  EXPECT_GT(took, 0.9);
  EXPECT_LT(took, 1.5);
  // Before its deadline (a quarter of the timeout), rank 0 said that it waits for rank 1.
  ASSERT_TRUE(heard);
  ASSERT_EQ(waiting.flags, kFrameFlagWaiting);
  WaitNotice n;
  std::string why;
  ASSERT_TRUE(decodeWaitNotice(waiting.flags, waiting.seq, 0, kRanks, waitingPayload, &n, &why))
      << why;
  ASSERT_EQ(n.edges.size(), 1u);
  EXPECT_EQ(n.edges[0].peer, 1);
  EXPECT_GE(n.edges[0].idleMs, 700u);
  EXPECT_LT(n.edges[0].idleMs, 900u);
  // Rank 1's 400 ms when it answered (about 0.75 s in), aged to the deadline.
  const std::string msg = r->error();
  const std::string head = "rank 0: timed out; rank 1 (test) was waiting for rank 2 (test) (no "
                           "data from it for ";
  const std::string tail = " s) (MIXCCL_TIMEOUT_S)";
  ASSERT_EQ(msg.compare(0, head.size(), head), 0) << msg;
  ASSERT_GT(msg.size(), head.size() + tail.size());
  ASSERT_EQ(msg.compare(msg.size() - tail.size(), tail.size(), tail), 0) << msg;
  const double idle = std::stod(msg.substr(head.size(), msg.size() - head.size() - tail.size()));
  EXPECT_GE(idle, 0.5) << msg;
  EXPECT_LE(idle, 0.9) << msg;
  // Rank 1 hears whom rank 0 blamed; rank 2, blamed, got the waiting notice and is not told.
  FrameHeader h;
  std::string payload;
  ASSERT_TRUE(r->nextFrame(1, 2, &h, &payload));
  ASSERT_EQ(h.flags, kFrameFlagPeerFailed);
  EXPECT_EQ(h.seq, 2u);
  ASSERT_TRUE(decodeWaitNotice(h.flags, h.seq, 0, kRanks, payload, &n, &why)) << why;
  EXPECT_EQ(n.timedOut, 0);
  ASSERT_EQ(n.edges.size(), 1u);
  EXPECT_EQ(n.edges[0].waiter, 1);
  EXPECT_EQ(n.edges[0].peer, 2);
  ASSERT_TRUE(r->nextFrame(2, 2, &h, &payload));
  EXPECT_EQ(h.flags, kFrameFlagWaiting);
  EXPECT_FALSE(r->nextFrame(2, 0.2, &h, &payload)) << "the rank blamed is not told";
}

// A peer whose waiting notice says it waits for this rank, while this rank waits too, gets
// this rank's waits at once, not near this rank's deadline.
TEST(ProxyStall, AnswersANoticeThatWaitsForItAtOnce) {
  std::unique_ptr<Rank0> r = makeRank0(20);  // its own notice would go out 2 s before a deadline
  char buf[64];
  TransportRequest op(TransportRequest::Kind::Recv, 2, buf, sizeof(buf));
  r->proxy->post(&op);
  FrameHeader h{};
  std::string payload;
  bool answered = false;
  double answeredAfter = 0;
  std::thread peers([&] {
    Clock::time_point sent = Clock::now();
    r->notice(1, kFrameFlagWaiting, 0, waits(1, 0, 300));
    answered = r->nextFrame(1, 2, &h, &payload);
    answeredAfter = std::chrono::duration<double>(Clock::now() - sent).count();
    // Then rank 2's message arrives and the wait ends well.
    FrameHeader data{kFrameMagic, 0, sizeof(buf), 0, (uint32_t)sizeof(buf), 0, 0};
    std::string bytes(reinterpret_cast<const char*>(&data), sizeof(data));
    bytes.append(sizeof(buf), 'x');
    EXPECT_EQ(::send(r->data[2].fd(), bytes.data(), bytes.size(), MSG_NOSIGNAL), (ssize_t)bytes.size());
  });
  EXPECT_EQ(r->proxy->wait(&op, Deadline::afterSeconds(5)), mixcclSuccess) << r->error();
  peers.join();
  ASSERT_TRUE(answered);
  EXPECT_LT(answeredAfter, 0.5);
  ASSERT_EQ(h.flags, kFrameFlagWaiting);
  WaitNotice n;
  std::string why;
  ASSERT_TRUE(decodeWaitNotice(h.flags, h.seq, 0, kRanks, payload, &n, &why)) << why;
  ASSERT_EQ(n.edges.size(), 1u);
  EXPECT_EQ(n.edges[0].waiter, 0);
  EXPECT_EQ(n.edges[0].peer, 2);
  EXPECT_EQ(r->error(), "");
}

// Rank 1 gave up blaming rank 2 and cut its connections: rank 0 sees the data connection end
// before it reads the notice that came first, and still reports what the notice says.
TEST(ProxyStall, NoticeBeforeACutIsWhatTheFailureSays) {
  std::unique_ptr<Rank0> r = makeRank0(20);
  char buf[64];
  TransportRequest op(TransportRequest::Kind::Recv, 1, buf, sizeof(buf));
  r->proxy->post(&op);
  // The data connection ends first in the proxy's event order, the notice is already there.
  r->data[1].shutdown();
  WaitNotice n = waits(1, 2, 1500);
  n.timedOut = 1;
  r->notice(1, kFrameFlagPeerFailed, 2, n);
  EXPECT_EQ(r->proxy->wait(&op, Deadline::afterSeconds(5)), mixcclRemoteError);
  EXPECT_EQ(r->error(), "rank 0: rank 1 (test) timed out waiting for rank 2 (test) (no data "
                        "from it for 1.5 s) (reported by rank 1 (test))");
  // Passed on to the peers as it came, but for rank 2, which it blames.
  FrameHeader h;
  std::string payload;
  ASSERT_TRUE(r->nextFrame(1, 1, &h, &payload));
  EXPECT_EQ(h.flags, kFrameFlagPeerFailed);
  EXPECT_EQ(payload, encodeWaitNotice(n));
  EXPECT_FALSE(r->nextFrame(2, 0.2, &h, &payload)) << "the rank blamed is not told";
}

// A wait list whose fields do not hold fails the communicator, naming the sender and what is
// wrong; nothing of it is used.
TEST(ProxyStall, MalformedWaitListIsAnErrorNamingTheSender) {
  std::unique_ptr<Rank0> r = makeRank0(20);
  char buf[64];
  TransportRequest op(TransportRequest::Kind::Recv, 1, buf, sizeof(buf));
  r->proxy->post(&op);
  r->notice(1, kFrameFlagWaiting, 0, waits(2, 0, 10));  // rank 1 sending rank 2's waits
  EXPECT_EQ(r->proxy->wait(&op, Deadline::afterSeconds(5)), mixcclRemoteError);
  EXPECT_EQ(r->error(), "rank 0: rank 1 (test) sent an invalid waiting notice on its control "
                        "connection (a waiting notice with another rank's waits)");
}

// A control frame no control connection carries (a doorbell with a payload) is refused before
// its payload is read.
TEST(ProxyStall, ControlFrameWithAPayloadItsFlagForbidsIsRefused) {
  std::unique_ptr<Rank0> r = makeRank0(20);
  char buf[64];
  TransportRequest op(TransportRequest::Kind::Recv, 1, buf, sizeof(buf));
  r->proxy->post(&op);
  r->control[1].send(kFrameFlagDoorbell, 0, false, "payload");
  EXPECT_EQ(r->proxy->wait(&op, Deadline::afterSeconds(5)), mixcclRemoteError);
  EXPECT_EQ(r->error(), "rank 0: rank 1 (test) sent an invalid frame on its control connection");
}

}  // namespace
