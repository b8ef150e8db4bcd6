// The transport plan of a pair (transport/net_choice.h) for every name, host relation and RDMA
// situation, including auto across hosts with RDMA (no RDMA hardware needed), and the UCX tag
// layout and keys (transport/ucx/ucx_tag.h).
#include <gtest/gtest.h>

#include <set>

#include "transport/net_choice.h"
#ifdef MIXCCL_TEST_HAVE_UCX
#include "transport/ucx/ucx_tag.h"
#endif

using namespace mixccl;

TEST(NetChoice, NamedTransportsCarryEveryPair) {
  for (bool sameHost : {true, false}) {
    PairChoice c = planPair("ucx", "MIXCCL_NET", sameHost, false, true);
    EXPECT_EQ(c.net, "ucx");
    EXPECT_EQ(c.why, "MIXCCL_NET=ucx: every pair");
    c = planPair("socket", "config.netName", sameHost, true, true);
    EXPECT_EQ(c.net, "socket");
    EXPECT_EQ(c.why, "config.netName=socket: every pair");
  }
}

TEST(NetChoice, ShmWithinAHostSocketsAcross) {
  EXPECT_EQ(planPair("shm", "MIXCCL_NET", true, false, false).net, "shm");
  PairChoice c = planPair("shm", "MIXCCL_NET", false, true, true);
  EXPECT_EQ(c.net, "socket");
  EXPECT_EQ(c.why, "MIXCCL_NET=shm, other host: shared memory cannot cross hosts");
}

TEST(NetChoice, AutoPicksShmThenRdmaThenSockets) {
  PairChoice c = planPair("auto", "default", true, true, true);
  EXPECT_EQ(c.net, "shm");
  EXPECT_EQ(c.why, "default auto, same host");
  c = planPair("auto", "default", false, true, true);
  EXPECT_EQ(c.net, "ucx");
  EXPECT_EQ(c.why, "default auto, other host, both ranks have an active RDMA port");
  c = planPair("auto", "MIXCCL_NET", false, false, true);
  EXPECT_EQ(c.net, "socket");
  EXPECT_EQ(c.why, "MIXCCL_NET=auto, other host, no active RDMA port on both ranks");
  c = planPair("auto", "default", false, true, false);
  EXPECT_EQ(c.net, "socket");
  EXPECT_EQ(c.why, "default auto, other host, RDMA on both ranks but no RDMA transport built in both");
}

TEST(NetChoice, NamesKnownAndBuilt) {
  EXPECT_TRUE(netKnown("ofi"));
  EXPECT_TRUE(netKnown("ucx"));
  EXPECT_FALSE(netKnown("carrier-pigeon"));
  std::string want = "auto, socket, shm";
#ifdef MIXCCL_TEST_HAVE_UCX
  EXPECT_TRUE(netBuilt("ucx"));
  want += ", ucx";
#else
  EXPECT_FALSE(netBuilt("ucx"));
#endif
#ifdef MIXCCL_HAVE_OFI
  EXPECT_TRUE(netBuilt("ofi"));
  want += ", ofi";
#else
  EXPECT_FALSE(netBuilt("ofi"));
#endif
  EXPECT_EQ(netNamesBuilt(), want);
}

// auto prefers ucx across hosts with RDMA; ofi when only it is built on both; a named ofi
// carries every pair.
TEST(NetChoice, AutoTakesOfiWhenUcxIsMissing) {
  EXPECT_EQ(planPair("auto", "default", false, true, true, true).net, "ucx");
  PairChoice c = planPair("auto", "default", false, true, false, true);
  EXPECT_EQ(c.net, "ofi");
  EXPECT_EQ(c.why, "default auto, other host, both ranks have an active RDMA port");
  EXPECT_EQ(planPair("auto", "default", true, true, false, true).net, "shm");
  EXPECT_EQ(planPair("auto", "default", false, false, true, true).net, "socket");
  PairChoice named = planPair("ofi", "MIXCCL_NET", true, false, false, true);
  EXPECT_EQ(named.net, "ofi");
  EXPECT_EQ(named.why, "MIXCCL_NET=ofi: every pair");
}

#ifdef MIXCCL_TEST_HAVE_UCX
TEST(UcxTag, KeyInTheHighHalfSequenceInTheLow) {
  uint64_t t = ucxTag(0xdeadbeef, 7);
  EXPECT_EQ(t, 0xdeadbeef00000007ull);
  EXPECT_EQ(ucxTagKey(t), 0xdeadbeefu);
  EXPECT_EQ(ucxTagSeq(t), 7u);
  EXPECT_EQ(ucxTagSeq(ucxTag(1, UINT32_MAX)), UINT32_MAX);
  EXPECT_EQ(kUcxFullTagMask, ~0ull);
}

TEST(UcxTag, KeysOfOneReceiverAreDistinct) {
  std::vector<uint32_t> keys;
  ASSERT_EQ(makeUcxKeys(64, &keys), mixcclSuccess);
  ASSERT_EQ(keys.size(), 128u);
  EXPECT_EQ(std::set<uint32_t>(keys.begin(), keys.end()).size(), keys.size());
}
#endif
