// Tests of the decoding of libibverbs' raw port values: every speed, width and state value, the
// link layers, GID and GUID text, and the comparison of PCI bus ids.
#include <gtest/gtest.h>

#include "test_rdma_facts.h"
#include "topology/rdma_facts.h"

namespace mixccl {
namespace {

using namespace rdmatest;

TEST(RdmaDecode, EverySpeedValue) {
  struct {
    unsigned value;
    const char* name;
    double lane;
  } speeds[] = {{1, "SDR", 2.5},  {2, "DDR", 5},  {4, "QDR", 10},  {8, "FDR10", 10},
                {16, "FDR", 14},  {32, "EDR", 25}, {64, "HDR", 50}, {128, "NDR", 100},
                {256, "XDR", 200}};
  for (const auto& s : speeds) {
    EXPECT_STREQ(rdmaSpeedName(s.value), s.name) << s.value;
    EXPECT_EQ(rdmaLaneGbps(s.value), s.lane) << s.value;
  }
  for (unsigned bad : {0u, 3u, 5u, 48u, 255u, 512u}) {
    EXPECT_STREQ(rdmaSpeedName(bad), "") << bad;
    EXPECT_EQ(rdmaLaneGbps(bad), 0.0) << bad;
  }
}

TEST(RdmaDecode, EveryWidthValue) {
  EXPECT_EQ(rdmaWidthLanes(1), 1);
  EXPECT_EQ(rdmaWidthLanes(2), 4);
  EXPECT_EQ(rdmaWidthLanes(4), 8);
  EXPECT_EQ(rdmaWidthLanes(8), 12);
  EXPECT_EQ(rdmaWidthLanes(16), 2);
  for (unsigned bad : {0u, 3u, 6u, 32u, 255u}) EXPECT_EQ(rdmaWidthLanes(bad), 0) << bad;
}

TEST(RdmaDecode, PortRateIsLanesTimesLaneRate) {
  EXPECT_EQ(rdmaPortGbps(kHdr, k4x), 200.0);   // 4x HDR
  EXPECT_EQ(rdmaPortGbps(kEdr, k4x), 100.0);   // 4x EDR, also what 100GbE RoCE reports
  EXPECT_EQ(rdmaPortGbps(16, k4x), 56.0);      // 4x FDR
  EXPECT_EQ(rdmaPortGbps(1, 1), 2.5);          // 1x SDR
  EXPECT_EQ(rdmaPortGbps(128, 16), 200.0);     // 2x NDR
  EXPECT_EQ(rdmaPortGbps(kEdr, 8), 300.0);     // 12x EDR
  EXPECT_EQ(rdmaPortGbps(256, 4), 1600.0);     // 8x XDR
  EXPECT_EQ(rdmaPortGbps(0, k4x), 0.0);
  EXPECT_EQ(rdmaPortGbps(kHdr, 0), 0.0);
}

TEST(RdmaDecode, StatesLinkLayersGidAndGuid) {
  const char* names[] = {"nop", "down", "init", "armed", "active", "active-defer"};
  for (int s = 0; s <= 5; s++) EXPECT_STREQ(rdmaPortStateName(s), names[s]);
  EXPECT_STREQ(rdmaPortStateName(6), "unknown");
  EXPECT_STREQ(rdmaPortStateName(-1), "unknown");
  for (int s = 0; s <= 6; s++) EXPECT_EQ(rdmaPortStateActive(s), s == kActive) << s;
  EXPECT_STREQ(rdmaLinkLayerName(0), "InfiniBand");  // kernels before link layers
  EXPECT_STREQ(rdmaLinkLayerName(kInfiniBand), "InfiniBand");
  EXPECT_STREQ(rdmaLinkLayerName(kEthernet), "Ethernet");
  uint8_t gid[16] = {0xfe, 0x80, 0, 0, 0, 0, 0, 0, 0x02, 0x02, 0xc9, 0xff, 0xfe, 0x00, 0x00, 0x01};
  EXPECT_EQ(rdmaGidText(gid), "fe80:0000:0000:0000:0202:c9ff:fe00:0001");
  EXPECT_EQ(rdmaGuidText(0x0002c90300102030ull), "0002:c903:0010:2030");
  EXPECT_TRUE(samePciBusId("0000:03:00.0", "03:00.0"));
  EXPECT_TRUE(samePciBusId("0000:0a:00.1", "0000:0A:00.1"));
  EXPECT_FALSE(samePciBusId("0000:03:00.0", "0000:03:00.1"));
  EXPECT_FALSE(samePciBusId("", ""));
}

}  // namespace
}  // namespace mixccl
