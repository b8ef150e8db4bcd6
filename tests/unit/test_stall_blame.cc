// Whom a timeout is blamed on (proxy/stall_tracker.h), the wait lists the control connection
// carries for it (transport/wait_notice.h) and their framing (transport/control_channel.h):
// the blame follows the waits through the peers that reported theirs to the one that did not;
// every field of a wait list is checked; a payload is read whole, after its header is checked.
#include <gtest/gtest.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <string>
#include <vector>

#include "proxy/stall_tracker.h"
#include "transport/control_channel.h"
#include "transport/frame.h"
#include "transport/wait_notice.h"

namespace {

using namespace mixccl;
using std::chrono::milliseconds;

const Clock::time_point t0 = Clock::now();
Clock::time_point at(int ms) { return t0 + milliseconds(ms); }

std::vector<std::string> names(int n) {
  std::vector<std::string> out;
  for (int r = 0; r < n; ++r) out.push_back("rank " + std::to_string(r) + " (h pid " + std::to_string(100 + r) + ")");
  return out;
}

// --- wait lists on the wire ---------------------------------------------------------------

TEST(WaitNotice, RoundTripsAWaitingAndATimeoutNotice) {
  WaitNotice waiting;
  waiting.edges = {{1, 2, 750}, {1, 0, 740}};
  WaitNotice decoded;
  std::string why;
  ASSERT_TRUE(decodeWaitNotice(kFrameFlagWaiting, 0, 1, 4, encodeWaitNotice(waiting), &decoded, &why)) << why;
  EXPECT_EQ(decoded.timedOut, -1);
  ASSERT_EQ(decoded.edges.size(), 2u);
  EXPECT_EQ(decoded.edges[1].waiter, 1);
  EXPECT_EQ(decoded.edges[1].peer, 0);
  EXPECT_EQ(decoded.edges[1].idleMs, 740u);

  WaitNotice timeout;
  timeout.timedOut = 0;
  timeout.edges = {{3, 2, 1000}};
  const std::string bytes = encodeWaitNotice(timeout);
  EXPECT_EQ(bytes.size(), kWaitNoticeHeaderBytes + kWaitEdgeBytes);
  ASSERT_TRUE(decodeWaitNotice(kFrameFlagPeerFailed, 2, 0, 4, bytes, &decoded, &why)) << why;
  EXPECT_EQ(decoded.timedOut, 0);
  EXPECT_EQ(decoded.edges[0].waiter, 3);
  EXPECT_EQ(decoded.edges[0].peer, 2);
}

TEST(WaitNotice, EncodesAtMostTheLimit) {
  WaitNotice n;
  for (int i = 0; i < 40; ++i) n.edges.push_back({0, 1 + i, 5});
  EXPECT_EQ(encodeWaitNotice(n).size(), kWaitNoticeMaxBytes);
}

TEST(WaitNotice, RefusesEveryMalformedField) {
  WaitNotice good;
  good.edges = {{1, 2, 10}};
  const std::string ok = encodeWaitNotice(good);
  WaitNotice out;
  std::string why;
  auto refused = [&](uint32_t flags, uint32_t seq, int sender, int nranks, const std::string& b) {
    why.clear();
    bool r = !decodeWaitNotice(flags, seq, sender, nranks, b, &out, &why);
    return r && !why.empty();
  };
  EXPECT_TRUE(refused(kFrameFlagDoorbell, 0, 1, 4, ok));           // a flag without wait lists
  EXPECT_TRUE(refused(kFrameFlagWaiting, 0, 1, 4, ok.substr(0, 7)));  // shorter than its header
  EXPECT_TRUE(refused(kFrameFlagWaiting, 0, 1, 4, ok + "x"));       // count and size disagree
  EXPECT_TRUE(refused(kFrameFlagWaiting, 0, 1, 4, ok.substr(0, 8)));  // count 1, no edge
  EXPECT_TRUE(refused(kFrameFlagWaiting, 0, 1, 2, ok));             // rank 2 of 2
  EXPECT_TRUE(refused(kFrameFlagWaiting, 0, 2, 4, ok));             // another rank's waits
  EXPECT_TRUE(refused(kFrameFlagWaiting, 5, 1, 4, ok));             // seq must be 0
  WaitNotice none;
  EXPECT_TRUE(refused(kFrameFlagWaiting, 0, 1, 4, encodeWaitNotice(none)));  // count 0
  WaitNotice self;
  self.edges = {{1, 1, 10}};
  EXPECT_TRUE(refused(kFrameFlagWaiting, 0, 1, 4, encodeWaitNotice(self)));  // waits for itself
  WaitNotice timedOut = good;
  timedOut.timedOut = 1;
  EXPECT_TRUE(refused(kFrameFlagWaiting, 0, 1, 4, encodeWaitNotice(timedOut)));  // not a timeout
  EXPECT_TRUE(refused(kFrameFlagPeerFailed, 2, 1, 4, ok));          // no rank timed out
  EXPECT_TRUE(refused(kFrameFlagPeerFailed, 3, 1, 4, encodeWaitNotice(timedOut)));  // seq != blamed
  timedOut.timedOut = 9;
  EXPECT_TRUE(refused(kFrameFlagPeerFailed, 2, 1, 4, encodeWaitNotice(timedOut)));  // rank 9 of 4
  std::string huge(kWaitNoticeMaxBytes + kWaitEdgeBytes, '\0');
  EXPECT_TRUE(refused(kFrameFlagWaiting, 0, 1, 4, huge));
}

// --- the blame ------------------------------------------------------------------------------

TEST(StallTracker, WaitsCountFromTheLaterOfPostAndLastMovement) {
  StallTracker t(1, 4);
  t.posted(2, at(0));
  t.posted(0, at(100));
  t.sample(2, 0, at(200));      // nothing moved with 2 since the post
  t.sample(0, 4096, at(300));   // data from 0
  std::vector<WaitEdge> w = t.waits(at(1000));
  ASSERT_EQ(w.size(), 2u);
  EXPECT_EQ(w[0].peer, 2);  // longest idle first
  EXPECT_EQ(w[0].idleMs, 1000u);
  EXPECT_EQ(w[1].peer, 0);
  EXPECT_EQ(w[1].idleMs, 700u);
  t.finished(2, at(1000));  // the only request to 2 ended: no longer waited for
  EXPECT_FALSE(t.waitingFor(2));
  EXPECT_TRUE(t.waiting());
  t.finished(0, at(1000));
  EXPECT_FALSE(t.waiting());
  EXPECT_TRUE(t.waits(at(1000)).empty());
  EXPECT_TRUE(t.blame(at(1000), milliseconds(500)).empty());
}

TEST(StallTracker, BlamesTheSilentPeerItWaitsFor) {
  StallTracker t(1, 4);
  t.posted(2, at(0));
  t.posted(0, at(0));
  t.heard(0, {{0, 3, 900}}, at(800));
  t.heard(3, {{3, 2, 950}}, at(850));
  // 0 and 3 said they wait (for 3, and for 2); 2 said nothing.
  std::vector<WaitEdge> b = t.blame(at(1000), milliseconds(500));
  ASSERT_EQ(b.size(), 1u);
  EXPECT_EQ(b[0].waiter, 1);
  EXPECT_EQ(b[0].peer, 2);
  EXPECT_EQ(b[0].idleMs, 1000u);
}

TEST(StallTracker, FollowsTheWaitsOfPeersThatReportedToTheOneThatDidNot) {
  // Rank 0 of a ring waits only for 3, which waits for the stopped 2.
  StallTracker t(0, 4);
  t.posted(3, at(0));
  t.sample(3, 100, at(50));
  t.heard(3, {{3, 2, 700}}, at(780));
  t.heard(1, {{1, 2, 745}, {1, 0, 700}}, at(760));
  std::vector<WaitEdge> b = t.blame(at(1000), milliseconds(500));
  ASSERT_EQ(b.size(), 1u);
  EXPECT_EQ(b[0].waiter, 3);
  EXPECT_EQ(b[0].peer, 2);
  EXPECT_EQ(b[0].idleMs, 920u);  // 700 ms when reported, 220 ms ago
  EXPECT_EQ(describeTimeout(0, b, names(4), true),
            "timed out; rank 3 (h pid 103) was waiting for rank 2 (h pid 102) (no data from it for "
            "0.9 s)");
}

// Pairs connected on first use: rank 3 of a ring of 4 holds pairs with 2 and 0 only. It waits
// for the stopped 0 (silent) and for 2, which says it waits for 1, a rank 3 has no pair with:
// 1 could not have told it that it waits for 0 too, so only 0 is blamed, not the healthy 1.
TEST(StallTracker, APeerWithoutAControlConnectionIsNotTakenForSilent) {
  StallTracker t(3, 4);
  t.posted(0, at(0));
  t.posted(2, at(0));
  t.heard(2, {{2, 1, 950}}, at(950));
  const std::vector<bool> canHear = {true, false, true, false};
  std::vector<WaitEdge> b = t.blame(at(1000), milliseconds(500), canHear);
  ASSERT_EQ(b.size(), 1u);
  EXPECT_EQ(b[0].waiter, 3);
  EXPECT_EQ(b[0].peer, 0);
  EXPECT_EQ(describeTimeout(3, b, names(4), true),
            "timed out waiting for rank 0 (h pid 100) (no data from it for 1.0 s)");
  // Connected to every peer, 1's silence counts (and is as long as 0's): both are named.
  EXPECT_EQ(t.blame(at(1000), milliseconds(500)).size(), 2u);
  // When the only wait this rank can follow ends at a peer it cannot hear, that peer is named.
  StallTracker only(3, 4);
  only.posted(2, at(0));
  only.heard(2, {{2, 1, 950}}, at(950));
  b = only.blame(at(1000), milliseconds(500), canHear);
  ASSERT_EQ(b.size(), 1u);
  EXPECT_EQ(b[0].waiter, 2);
  EXPECT_EQ(b[0].peer, 1);
}

TEST(StallTracker, AReportOlderThanFreshCountsAsSilence) {
  StallTracker t(0, 3);
  t.posted(1, at(0));
  t.heard(1, {{1, 2, 100}}, at(100));
  std::vector<WaitEdge> b = t.blame(at(1000), milliseconds(500));
  ASSERT_EQ(b.size(), 1u);
  EXPECT_EQ(b[0].peer, 1);
  EXPECT_EQ(t.blame(at(550), milliseconds(500))[0].peer, 2);
}

TEST(StallTracker, RanksThatAllWaitForEachOtherBlameTheLongestOwnWait) {
  StallTracker t(0, 3);
  t.posted(1, at(0));
  t.posted(2, at(400));
  t.heard(1, {{1, 0, 900}}, at(900));
  t.heard(2, {{2, 1, 900}}, at(900));
  std::vector<WaitEdge> b = t.blame(at(1000), milliseconds(500));
  ASSERT_EQ(b.size(), 1u);
  EXPECT_EQ(b[0].waiter, 0);
  EXPECT_EQ(b[0].peer, 1);
}

TEST(StallTracker, NamesEverySilentPeerIdleNearlyAsLongAsTheLongest) {
  StallTracker t(0, 5);
  t.posted(1, at(0));
  t.posted(2, at(80));    // 920 ms: within nine tenths of 1000
  t.posted(3, at(200));   // 800 ms: not
  std::vector<WaitEdge> b = t.blame(at(1000), milliseconds(500));
  ASSERT_EQ(b.size(), 2u);
  EXPECT_EQ(b[0].peer, 1);
  EXPECT_EQ(b[1].peer, 2);
  EXPECT_EQ(describeTimeout(0, b, names(5), true),
            "timed out waiting for rank 1 (h pid 101) (no data from it for 1.0 s) and rank 2 "
            "(h pid 102) (no data from it for 0.9 s)");
}

TEST(StallTracker, ReportsAtMostOncePerInterval) {
  StallTracker t(0, 2);
  EXPECT_TRUE(t.mayReport(at(0), milliseconds(100)));
  t.reported(at(0));
  EXPECT_FALSE(t.mayReport(at(99), milliseconds(100)));
  EXPECT_TRUE(t.mayReport(at(100), milliseconds(100)));
}

TEST(StallTracker, DescribesARelayedTimeoutInBothShapes) {
  const std::vector<std::string> n = names(4);
  EXPECT_EQ(describeTimeout(1, {{1, 2, 2000}}, n, false),
            "rank 1 (h pid 101) timed out waiting for rank 2 (h pid 102) (no data from it for 2.0 s)");
  EXPECT_EQ(describeTimeout(0, {{3, 2, 1049}}, n, false),
            "rank 0 (h pid 100) timed out; rank 3 (h pid 103) was waiting for rank 2 (h pid 102) "
            "(no data from it for 1.0 s)");
  EXPECT_EQ(describeTimeout(1, {{1, 2, 2000}}, n, true),
            "timed out waiting for rank 2 (h pid 102) (no data from it for 2.0 s)");
}

// --- control frames with a payload ------------------------------------------------------------

struct Pair {
  Pair() {
    int sv[2];
    EXPECT_EQ(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
    channel = ControlChannel(1, Socket(sv[0]));
    peer = sv[1];
  }
  ~Pair() { close(peer); }
  void write(const void* p, size_t n) { EXPECT_EQ(::write(peer, p, n), (ssize_t)n); }
  void header(uint32_t flags, uint32_t seq, uint32_t length) {
    FrameHeader h{kFrameMagic, seq, 0, 0, length, flags, 0};
    write(&h, sizeof(h));
  }
  ControlChannel channel;
  int peer = -1;
};

TEST(ControlChannelFrames, ReadsAPayloadThatArrivesInPieces) {
  Pair p;
  WaitNotice n;
  n.edges = {{0, 2, 500}};
  const std::string bytes = encodeWaitNotice(n);
  FrameHeader h;
  std::string payload;
  p.header(kFrameFlagWaiting, 0, (uint32_t)bytes.size());
  p.write(bytes.data(), 5);
  EXPECT_EQ(p.channel.read(&h, &payload), ControlChannel::Read::Empty);
  p.write(bytes.data() + 5, bytes.size() - 5);
  p.header(kFrameFlagDoorbell, 0, 0);
  ASSERT_EQ(p.channel.read(&h, &payload), ControlChannel::Read::Frame);
  EXPECT_EQ(h.flags, kFrameFlagWaiting);
  EXPECT_EQ(payload, bytes);
  ASSERT_EQ(p.channel.read(&h, &payload), ControlChannel::Read::Frame);
  EXPECT_EQ(h.flags, kFrameFlagDoorbell);
  EXPECT_TRUE(payload.empty());
  // A frame put back is read again, before anything else.
  p.channel.putBack(h, "");
  p.header(kFrameFlagBye, 0, 0);
  ASSERT_EQ(p.channel.read(&h, &payload), ControlChannel::Read::Frame);
  EXPECT_EQ(h.flags, kFrameFlagDoorbell);
  ASSERT_EQ(p.channel.read(&h, &payload), ControlChannel::Read::Frame);
  EXPECT_EQ(h.flags, kFrameFlagBye);
  EXPECT_EQ(p.channel.read(&h, &payload), ControlChannel::Read::Empty);
}

TEST(ControlChannelFrames, SendWritesHeaderAndPayload) {
  Pair p;
  p.channel.send(kFrameFlagWaiting, 0, false, "0123456789ab0123456789ab");
  FrameHeader h;
  char buf[64];
  ASSERT_EQ(::read(p.peer, &h, sizeof(h)), (ssize_t)sizeof(h));
  EXPECT_TRUE(isControlHeader(h));
  EXPECT_EQ(h.length, 24u);
  EXPECT_EQ(::read(p.peer, buf, sizeof(buf)), 24);
}

TEST(ControlChannelFrames, RefusesHeadersNoControlFrameHasForGood) {
  struct Bad {
    uint32_t magic, flags, length;
  } cases[] = {
      {0x12345678, kFrameFlagBye, 0},                                 // not a frame
      {kFrameMagic, 0, 0},                                            // data, not control
      {kFrameMagic, kFrameFlagBye | kFrameFlagDoorbell, 0},           // two flags
      {kFrameMagic, kFrameFlagCma, 0},                                // a ring's flag
      {kFrameMagic, kFrameFlagDoorbell, 4},                           // a doorbell with payload
      {kFrameMagic, kFrameFlagCallMismatch, 8},                       // a mismatch notice, too
      {kFrameMagic, kFrameFlagWaiting, 0},                            // a wait list without one
      {kFrameMagic, kFrameFlagPeerFailed, (uint32_t)kWaitNoticeMaxBytes + 1},  // too long
      {kFrameMagic, kFrameFlagWaiting, 1u << 31},                     // far too long
  };
  for (const Bad& c : cases) {
    SCOPED_TRACE("magic " + std::to_string(c.magic) + " flags " + std::to_string(c.flags) +
                 " length " + std::to_string(c.length));
    Pair p;
    FrameHeader h{c.magic, 0, 0, 0, c.length, c.flags, 0};
    EXPECT_FALSE(isControlHeader(h));
    p.write(&h, sizeof(h));
    p.header(kFrameFlagDoorbell, 0, 0);  // a good frame after a bad one is not read
    std::string payload;
    EXPECT_EQ(p.channel.read(&h, &payload), ControlChannel::Read::Invalid);
    EXPECT_EQ(p.channel.read(&h, &payload), ControlChannel::Read::Invalid);
  }
}

}  // namespace
