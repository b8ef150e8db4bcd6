// The shared-memory transport's pieces: the ring (wraparound, full/empty, two processes,
// hostile positions), segments (exclusive create, unlink), and the cross-memory descriptor
// checks that stand between a peer and our memory.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstring>
#include <string>
#include <vector>

#include "base/error.h"
#include "transport/shm_ring.h"
#include "transport/shm_transport.h"

namespace mixccl {
namespace {

std::string testName(const char* what) {
  return "/mixccl-unittest-" + std::to_string(getpid()) + "-" + what;
}

// A fresh segment with a ring of cap bytes; unlinked at once (the mapping keeps it).
struct TestRing {
  ShmSegment seg;
  ShmRing ring;
  explicit TestRing(size_t cap, const char* what = "ring") {
    std::string name = testName(what);
    ShmSegment::unlink(name);
    EXPECT_EQ(ShmSegment::create(name, kShmHeaderBytes + cap, &seg), mixcclSuccess);
    EXPECT_TRUE(ShmSegment::unlink(name));
    ShmRing::initHeader(seg.base(), cap, 42);
    ring = ShmRing(seg.base());
  }
};

TEST(ShmRing, EmptyAndFull) {
  TestRing t(4096);
  char buf[8192];
  EXPECT_EQ(t.ring.readable(), 0u);
  EXPECT_EQ(t.ring.read(buf, sizeof(buf)), 0u);
  EXPECT_EQ(t.ring.writable(), 4096u);
  memset(buf, 7, sizeof(buf));
  EXPECT_EQ(t.ring.write(buf, sizeof(buf)), 4096u);  // only what fits
  EXPECT_EQ(t.ring.writable(), 0u);
  EXPECT_EQ(t.ring.write(buf, 1), 0u);
  EXPECT_EQ(t.ring.readable(), 4096u);
  EXPECT_EQ(t.ring.read(buf, 100), 100u);
  EXPECT_EQ(t.ring.writable(), 100u);
}

TEST(ShmRing, WrapsAroundKeepingBytesInOrder) {
  TestRing t(4096);
  std::vector<unsigned char> out, in(3000);
  unsigned char next = 0, expect = 0;
  for (int round = 0; round < 50; ++round) {
    // Write 3000 bytes as a header-like piece plus a body (writev), then read them back in
    // odd-sized pieces: every round crosses the end of the ring at another place.
    std::vector<unsigned char> a(37), b(2963);
    for (auto& c : a) c = next++;
    for (auto& c : b) c = next++;
    iovec iov[2] = {{a.data(), a.size()}, {b.data(), b.size()}};
    ASSERT_EQ(t.ring.writev(iov, 2), 3000u);
    size_t got = 0;
    while (got < 3000) {
      size_t k = t.ring.read(in.data() + got, std::min<size_t>(777, 3000 - got));
      ASSERT_GT(k, 0u);
      got += k;
    }
    for (unsigned char c : in) ASSERT_EQ(c, expect++);
  }
  EXPECT_EQ(t.ring.readable(), 0u);
  EXPECT_EQ(t.ring.header()->head.load(), 50u * 3000u);
}

TEST(ShmRing, HostilePositionsMoveNothing) {
  TestRing t(4096);
  char buf[64] = {};
  // A consumer claiming to have read more than was written, or a producer claiming more than
  // the ring holds: neither side copies anything.
  t.ring.header()->tail.store(10000);
  EXPECT_EQ(t.ring.write(buf, sizeof(buf)), 0u);
  t.ring.header()->tail.store(0);
  t.ring.header()->head.store(1 << 20);
  EXPECT_EQ(t.ring.read(buf, sizeof(buf)), 0u);
}

TEST(ShmRing, TwoProcessesStreamThroughASmallRing) {
  TestRing t(4096, "twoproc");
  const size_t total = 8 << 20;
  pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {  // producer: a pattern in pieces of varying size
    std::vector<unsigned char> piece(5000);
    size_t sent = 0;
    while (sent < total) {
      size_t n = std::min(piece.size() - (sent % 1000), total - sent);
      for (size_t i = 0; i < n; ++i) piece[i] = (unsigned char)((sent + i) * 131 >> 3);
      size_t off = 0;
      while (off < n) {
        size_t k = t.ring.write(piece.data() + off, n - off);
        if (k == 0) usleep(0);
        off += k;
      }
      sent += n;
    }
    t.ring.header()->closed.store(1);
    _exit(0);
  }
  std::vector<unsigned char> buf(3333);
  size_t got = 0;
  bool ok = true;
  while (got < total) {
    size_t k = t.ring.read(buf.data(), buf.size());
    if (k == 0) {
      if (t.ring.header()->closed.load() && t.ring.readable() == 0) break;
      usleep(0);
      continue;
    }
    for (size_t i = 0; i < k && ok; ++i) ok = buf[i] == (unsigned char)((got + i) * 131 >> 3);
    got += k;
  }
  int status = 0;
  waitpid(child, &status, 0);
  EXPECT_TRUE(ok);
  EXPECT_EQ(got, total);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
}

TEST(ShmSegment, CreateIsExclusiveAndUnlinkToleratesMissingNames) {
  std::string name = testName("excl");
  ShmSegment a, b;
  ASSERT_EQ(ShmSegment::create(name, 8192, &a), mixcclSuccess);
  EXPECT_NE(ShmSegment::create(name, 8192, &b), mixcclSuccess);
  ShmSegment opened;
  EXPECT_EQ(ShmSegment::open(name, 8192, &opened), mixcclSuccess);
  EXPECT_NE(ShmSegment::open(name, 1 << 20, &b), mixcclSuccess);  // shorter than required
  EXPECT_TRUE(ShmSegment::unlink(name));
  EXPECT_TRUE(ShmSegment::unlink(name));  // already gone: fine
  EXPECT_EQ(access(("/dev/shm" + name).c_str(), F_OK), -1);
}

TEST(ShmTransport, SegmentNamesAreDeterministicPerDirection) {
  EXPECT_EQ(shmSegmentName(0xabcdefULL, 1, 2), "/mixccl-0000000000abcdef-1-2");
  EXPECT_NE(shmSegmentName(7, 1, 2), shmSegmentName(7, 2, 1));
}

TEST(ShmTransport, CmaFrameMustDescribeTheWholePostedReceive) {
  FrameHeader ok{kFrameMagic, 3, 1 << 20, 0, sizeof(CmaDescriptor), kFrameFlagCma, 0};
  EXPECT_EQ(validateCmaFrame(ok, 1 << 20, 0, UINT64_MAX), FrameCheck::Ok);
  EXPECT_EQ(validateCmaFrame(ok, 1000, 0, UINT64_MAX), FrameCheck::SizeMismatch);
  EXPECT_EQ(validateCmaFrame(ok, 1 << 20, 4096, 1 << 20), FrameCheck::Overfull);  // half received
  FrameHeader h = ok;
  h.offset = 8;
  EXPECT_EQ(validateCmaFrame(h, 1 << 20, 0, UINT64_MAX), FrameCheck::OutOfBounds);
  h = ok;
  h.length = 4096;
  EXPECT_EQ(validateCmaFrame(h, 1 << 20, 0, UINT64_MAX), FrameCheck::OutOfBounds);
  h = ok;
  h.flags = 0;
  EXPECT_EQ(validateCmaFrame(h, 1 << 20, 0, UINT64_MAX), FrameCheck::BadFlags);
  h = ok;
  h.magic = 1;
  EXPECT_EQ(validateCmaFrame(h, 1 << 20, 0, UINT64_MAX), FrameCheck::BadMagic);
  // The socket path's validation refuses descriptor frames: a peer cannot slip one in there.
  EXPECT_EQ(validateFrame(ok, 1 << 20, 0, UINT64_MAX), FrameCheck::BadFlags);
}

TEST(ShmTransport, CmaDescriptorChecks) {
  EXPECT_TRUE(validCmaDescriptor({0x1000, 4096}, 4096));
  EXPECT_FALSE(validCmaDescriptor({0x1000, 8192}, 4096));        // longer than posted
  EXPECT_FALSE(validCmaDescriptor({0x1000, 2048}, 4096));        // shorter than posted
  EXPECT_FALSE(validCmaDescriptor({0, 4096}, 4096));             // null
  EXPECT_FALSE(validCmaDescriptor({UINT64_MAX - 10, 4096}, 4096));  // wraps
}

TEST(ShmTransport, CmaReadCopiesFromAProcessAndReportsFailures) {
  std::vector<char> src(300000), dst(300000, 0);
  for (size_t i = 0; i < src.size(); ++i) src[i] = (char)(i * 7);
  CmaDescriptor d{(uint64_t)(uintptr_t)src.data(), src.size()};
  int err = cmaRead(getpid(), d, dst.data());
  if (err == EPERM || err == ENOSYS) GTEST_SKIP() << "process_vm_readv not permitted here";
  ASSERT_EQ(err, 0);
  EXPECT_EQ(memcmp(src.data(), dst.data(), src.size()), 0);
  CmaDescriptor bad{8, 4096};  // unmapped in this process
  EXPECT_EQ(cmaRead(getpid(), bad, dst.data()), EFAULT);
}

// Which pairs get the full ring: neighbours in rank order and among a host's ranks (cyclic).
std::vector<PeerInfo> peersOnHosts(const std::vector<uint64_t>& hosts) {
  std::vector<PeerInfo> peers(hosts.size());
  for (size_t r = 0; r < hosts.size(); ++r) peers[r].hostHash = hosts[r];
  return peers;
}

TEST(ShmTransport, RingNeighboursInRankOrderAndInTheHost) {
  const auto one = peersOnHosts(std::vector<uint64_t>(8, 7));
  EXPECT_TRUE(shmRingNeighbours(0, 1, one));
  EXPECT_TRUE(shmRingNeighbours(0, 7, one));  // cyclic
  EXPECT_TRUE(shmRingNeighbours(7, 0, one));
  EXPECT_FALSE(shmRingNeighbours(0, 2, one));  // recursive doubling's partner at distance 2
  EXPECT_FALSE(shmRingNeighbours(0, 4, one));
  // Ranks alternating between two hosts: 0, 2, 4 are neighbours inside host 1.
  const auto two = peersOnHosts({1, 2, 1, 2, 1, 2});
  EXPECT_TRUE(shmRingNeighbours(0, 2, two));
  EXPECT_TRUE(shmRingNeighbours(0, 4, two));  // cyclic in the host
  EXPECT_TRUE(shmRingNeighbours(2, 4, two));
  EXPECT_TRUE(shmRingNeighbours(1, 5, two));
}

TEST(ShmTransport, FarPeersGetTheSmallerRing) {
  const auto one = peersOnHosts(std::vector<uint64_t>(16, 7));
  ShmParams p;
  p.rank = 4;
  p.nranks = 16;
  p.ringBytes = 1 << 20;
  p.farRingBytes = 256 << 10;
  EXPECT_EQ(shmRingBytesTo(p, one, 5), (size_t)1 << 20);
  EXPECT_EQ(shmRingBytesTo(p, one, 3), (size_t)1 << 20);
  EXPECT_EQ(shmRingBytesTo(p, one, 6), (size_t)256 << 10);
  EXPECT_EQ(shmRingBytesTo(p, one, 12), (size_t)256 << 10);
  p.farRingBytes = 100;  // rounded up to a power of two, at least a page
  EXPECT_EQ(shmRingBytesTo(p, one, 12), (size_t)4096);
  p.farRingBytes = 0;  // unset: by the distance in rank order (cyclic)
  EXPECT_EQ(shmRingBytesTo(p, one, 12), (size_t)1 << 20);   // 8: half the ranks
  EXPECT_EQ(shmRingBytesTo(p, one, 0), (size_t)512 << 10);  // 4
  EXPECT_EQ(shmRingBytesTo(p, one, 6), (size_t)256 << 10);  // 2
  p.rank = 1;
  EXPECT_EQ(shmRingBytesTo(p, one, 14), (size_t)256 << 10);  // 3 the short way round
}

}  // namespace
}  // namespace mixccl
