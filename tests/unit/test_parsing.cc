// Parsing and validation of what comes from users and from the network.
#include <gtest/gtest.h>
#include <netinet/in.h>

#include <cstring>

#include "bootstrap/interfaces.h"
#include "bootstrap/socket_address.h"
#include "bootstrap/unique_id.h"
#include "core/args.h"
#include "core/config.h"
#include "base/error.h"
#include "transport/frame.h"
#include "transport/net_choice.h"

namespace mixccl {
namespace {

TEST(InterfaceMatch, DefaultSkipsLoopbackAndDocker) {
  EXPECT_TRUE(interfaceMatches("", "eth0"));
  EXPECT_TRUE(interfaceMatches("", "ens3"));
  EXPECT_FALSE(interfaceMatches("", "lo"));
  EXPECT_FALSE(interfaceMatches("", "docker0"));
}

TEST(InterfaceMatch, PrefixListExcludeAndExact) {
  EXPECT_TRUE(interfaceMatches("eth,ib", "eth1"));
  EXPECT_TRUE(interfaceMatches("eth,ib", "ib0"));
  EXPECT_FALSE(interfaceMatches("eth,ib", "ens3"));
  EXPECT_FALSE(interfaceMatches("^eth", "eth0"));
  EXPECT_TRUE(interfaceMatches("^eth", "ib0"));
  EXPECT_TRUE(interfaceMatches("=eth0", "eth0"));
  EXPECT_FALSE(interfaceMatches("=eth0", "eth01"));
  EXPECT_FALSE(interfaceMatches("^=eth0", "eth0"));
  EXPECT_TRUE(interfaceMatches("^=eth0", "eth01"));
}

TEST(InterfaceMatch, LoopbackIsListed) {
  auto found = listInterfaces("lo", "AF_INET");
  ASSERT_FALSE(found.empty());
  EXPECT_EQ(found[0].name, "lo");
  EXPECT_EQ(found[0].address.family(), AF_INET);
}

TEST(HostPort, ParsesIpv4Ipv6AndNames) {
  SocketAddress a;
  ASSERT_EQ(parseHostPort("127.0.0.1:1234", &a), mixcclSuccess);
  EXPECT_EQ(a.family(), AF_INET);
  EXPECT_EQ(a.port(), 1234);
  EXPECT_EQ(a.toString(), "127.0.0.1:1234");
  ASSERT_EQ(parseHostPort("[::1]:80", &a), mixcclSuccess);
  EXPECT_EQ(a.family(), AF_INET6);
  EXPECT_EQ(a.toString(), "[::1]:80");
  ASSERT_EQ(parseHostPort("localhost:9", &a), mixcclSuccess);
  EXPECT_EQ(a.port(), 9);
}

TEST(HostPort, RejectsMalformed) {
  SocketAddress a;
  EXPECT_EQ(parseHostPort("127.0.0.1", &a), mixcclInvalidArgument);
  EXPECT_EQ(parseHostPort("127.0.0.1:", &a), mixcclInvalidArgument);
  EXPECT_EQ(parseHostPort("127.0.0.1:70000", &a), mixcclInvalidArgument);
  EXPECT_EQ(parseHostPort("127.0.0.1:12x", &a), mixcclInvalidArgument);
  EXPECT_EQ(parseHostPort("[::1:80", &a), mixcclInvalidArgument);
  EXPECT_EQ(parseHostPort(":80", &a), mixcclInvalidArgument);
  EXPECT_NE(threadLastError().find("address"), std::string::npos);
}

TEST(WireAddress, RoundTripsAndRejectsUnknownFamilies) {
  SocketAddress a, b;
  ASSERT_EQ(parseHostPort("[::1]:4242", &a), mixcclSuccess);
  ASSERT_EQ(fromWire(toWire(a), &b), mixcclSuccess);
  EXPECT_EQ(b.toString(), "[::1]:4242");
  WireAddress w = toWire(a);
  w.family = 77;
  EXPECT_EQ(fromWire(w, &b), mixcclRemoteError);
}

TEST(UniqueId, FromEnvironmentIsDeterministic) {
  UniqueIdData a, b;
  ASSERT_EQ(uniqueIdFromEnv("127.0.0.1:5000", "00112233445566778899aabbccddeeff", &a), mixcclSuccess);
  ASSERT_EQ(uniqueIdFromEnv("127.0.0.1:5000", "00112233445566778899aabbccddeeff", &b), mixcclSuccess);
  EXPECT_EQ(memcmp(&a, &b, sizeof(a)), 0);
  EXPECT_EQ(a.secret.bytes[15], 0xff);
  EXPECT_TRUE(a.flags & kIdRootAtRank0);
  mixcclUniqueId id;
  encodeUniqueId(a, &id);
  UniqueIdData back;
  ASSERT_EQ(decodeUniqueId(id, &back), mixcclSuccess);
  EXPECT_EQ(back.commHash, a.commHash);
  EXPECT_EQ(uniqueIdFromEnv("127.0.0.1:5000", "0011", &a), mixcclInvalidArgument);
  EXPECT_EQ(uniqueIdFromEnv("127.0.0.1:5000", "zz112233445566778899aabbccddeeff", &a),
            mixcclInvalidArgument);
}

TEST(UniqueId, GarbageIsRejected) {
  mixcclUniqueId id;
  memset(&id, 0xab, sizeof(id));
  UniqueIdData d;
  EXPECT_EQ(decodeUniqueId(id, &d), mixcclInvalidArgument);
}

FrameHeader frame(uint64_t total, uint64_t offset, uint32_t length) {
  return FrameHeader{kFrameMagic, 0, total, offset, length, 0, 0};
}

TEST(Frame, AcceptsFramesInsideThePostedMessage) {
  EXPECT_EQ(validateFrame(frame(100, 0, 100), 100, 0, UINT64_MAX), FrameCheck::Ok);
  EXPECT_EQ(validateFrame(frame(100, 60, 40), 100, 60, 100), FrameCheck::Ok);
  EXPECT_EQ(validateFrame(frame(0, 0, 0), 0, 0, UINT64_MAX), FrameCheck::Ok);
}

TEST(Frame, RejectsAnythingThatCouldWriteOutOfBounds) {
  EXPECT_EQ(validateFrame(frame(200, 0, 100), 100, 0, UINT64_MAX), FrameCheck::SizeMismatch);
  EXPECT_EQ(validateFrame(frame(100, 90, 20), 100, 0, UINT64_MAX), FrameCheck::OutOfBounds);
  EXPECT_EQ(validateFrame(frame(100, UINT64_MAX - 5, 10), 100, 0, UINT64_MAX),
            FrameCheck::OutOfBounds);
  EXPECT_EQ(validateFrame(frame(100, 0, 60), 100, 50, 100), FrameCheck::Overfull);
  EXPECT_EQ(validateFrame(frame(100, 0, 10), 100, 0, 80), FrameCheck::SizeMismatch);
  FrameHeader bad = frame(10, 0, 10);
  bad.magic = 0x12345678;
  EXPECT_EQ(validateFrame(bad, 10, 0, UINT64_MAX), FrameCheck::BadMagic);
  bad = frame(10, 0, 10);
  bad.flags = 8;
  EXPECT_EQ(validateFrame(bad, 10, 0, UINT64_MAX), FrameCheck::BadFlags);
}

TEST(Config, DefaultsAndOverrides) {
  CommConfig c;
  ASSERT_EQ(resolveConfig(nullptr, &c), mixcclSuccess);
  EXPECT_TRUE(c.blocking);
  EXPECT_EQ(c.netName, "auto");
  EXPECT_EQ(c.netSource, "default");
  mixcclConfig_t cfg = MIXCCL_CONFIG_INITIALIZER;
  cfg.timeout = 7;
  cfg.nsocksPerPeer = 3;
  cfg.blocking = 0;
  ASSERT_EQ(resolveConfig(&cfg, &c), mixcclSuccess);
  EXPECT_EQ(c.timeoutS, 7);
  EXPECT_EQ(c.nsocksPerPeer, 3);
  EXPECT_FALSE(c.blocking);
}

// The transports a test matrix runs over: "socket" and "ucx" (every peer), "shm" (shared memory
// on one host, sockets elsewhere) and "auto"; each counts as asked for.
TEST(Config, NetNamesSocketShmUcxAuto) {
  for (const char* name : {"socket", "shm", "ucx", "auto"}) {
    if (!netBuilt(name)) continue;
    CommConfig c;
    mixcclConfig_t cfg = MIXCCL_CONFIG_INITIALIZER;
    cfg.netName = name;
    ASSERT_EQ(resolveConfig(&cfg, &c), mixcclSuccess) << name;
    EXPECT_EQ(c.netName, name);
    EXPECT_TRUE(c.netExplicit);
  }
}

TEST(Config, RejectsBadValues) {
  CommConfig c;
  mixcclConfig_t cfg = MIXCCL_CONFIG_INITIALIZER;
  cfg.nsocksPerPeer = 99;
  EXPECT_EQ(resolveConfig(&cfg, &c), mixcclInvalidArgument);
  cfg = MIXCCL_CONFIG_INITIALIZER;
  cfg.netName = "carrier-pigeon";
  EXPECT_EQ(resolveConfig(&cfg, &c), mixcclInvalidArgument);
  std::string have = "auto, socket, shm";
  if (netBuilt("ucx")) have += ", ucx";
  if (netBuilt("ofi")) have += ", ofi";
  EXPECT_EQ(threadLastError(),
            "network transport 'carrier-pigeon' is not available (have: " + have + ")");
  // A transport mixccl knows but this build lacks is refused by name, never replaced.
  for (const char* name : {"ucx", "ofi"}) {
    if (netBuilt(name)) continue;
    cfg = MIXCCL_CONFIG_INITIALIZER;
    cfg.netName = name;
    EXPECT_EQ(resolveConfig(&cfg, &c), mixcclInvalidArgument);
    EXPECT_EQ(threadLastError(), std::string("transport '") + name + "' was asked for "
              "(config.netName) but this mixccl was built without it (have: " + netNamesBuilt() + ")");
  }
  cfg = MIXCCL_CONFIG_INITIALIZER;
  cfg.blocking = 2;
  EXPECT_EQ(resolveConfig(&cfg, &c), mixcclInvalidArgument);
  cfg = MIXCCL_CONFIG_INITIALIZER;
  cfg.connect = "sometimes";
  EXPECT_EQ(resolveConfig(&cfg, &c), mixcclInvalidArgument);
  EXPECT_EQ(threadLastError(), "config.connect must be one of auto, eager, lazy, got 'sometimes'");
}

// config.connect overrides MIXCCL_CONNECT (unset here: "auto") and says where it came from.
TEST(Config, ConnectFromTheConfig) {
  CommConfig c;
  ASSERT_EQ(resolveConfig(nullptr, &c), mixcclSuccess);
  EXPECT_EQ(c.connectSource, "MIXCCL_CONNECT");
  for (const char* mode : {"auto", "eager", "lazy"}) {
    mixcclConfig_t cfg = MIXCCL_CONFIG_INITIALIZER;
    cfg.connect = mode;
    ASSERT_EQ(resolveConfig(&cfg, &c), mixcclSuccess) << mode;
    EXPECT_EQ(c.connect, mode);
    EXPECT_EQ(c.connectSource, "config.connect");
  }
}

TEST(Args, ChecksTypesOpsRanksBuffersAndStreams) {
  size_t bytes = 0;
  EXPECT_EQ(checkDataType("f", (mixcclDataType_t)12), mixcclInvalidArgument);
  EXPECT_EQ(checkDataType("f", mixcclFloat8e5m2), mixcclSuccess);
  EXPECT_EQ(checkRedOp("f", (mixcclRedOp_t)-1), mixcclInvalidArgument);
  EXPECT_EQ(checkRank("f", "root", 4, 4), mixcclInvalidArgument);
  EXPECT_EQ(checkRank("f", "root", 3, 4), mixcclSuccess);
  EXPECT_EQ(checkStream("f", (void*)0x10), mixcclInvalidArgument);
  EXPECT_EQ(checkBuffer("f", "sendbuff", nullptr, 0, 1, mixcclFloat, &bytes), mixcclSuccess);
  EXPECT_EQ(checkBuffer("f", "sendbuff", nullptr, 1, 1, mixcclFloat, &bytes), mixcclInvalidArgument);
  int x;
  EXPECT_EQ(checkBuffer("f", "recvbuff", &x, SIZE_MAX / 8, 4, mixcclFloat, &bytes),
            mixcclInvalidArgument);
  EXPECT_EQ(checkBuffer("f", "recvbuff", &x, 10, 4, mixcclDouble, &bytes), mixcclSuccess);
  EXPECT_EQ(bytes, 320u);
}

}  // namespace
}  // namespace mixccl
