// Tests of the topology layer: discovery on this machine, a hand-made two-socket hwloc XML for
// PCI distances, NIC choice and binding plans, the per-rank wire summary, and the reports.
#include <gtest/gtest.h>
#include <sched.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "bootstrap/peer_info.h"
#include "test_topology_xml.h"
#include "topology/topology.h"

namespace mixccl {
namespace {

using nlohmann::json;

LocalTopology loadSynthetic() {
  LocalTopology t;
  Result r = loadTopologyFromXml(testdata::kTwoSocketXml, &t);
  EXPECT_EQ(r, mixcclSuccess) << topologyLastError();
  return t;
}

const TopoNic* nicNamed(const LocalTopology& t, const std::string& name) {
  for (const TopoNic& n : t.nics)
    if (n.name == name) return &n;
  return nullptr;
}

// ---------------------------------------------------------------------------------------------
// Discovery on this machine

TEST(TopologyDiscovery, CountsOnThisMachineAreSane) {
  LocalTopology t;
  ASSERT_EQ(discoverLocalTopology(&t), mixcclSuccess) << topologyLastError();
  EXPECT_TRUE(t.thisSystem);
  EXPECT_GE(t.packages.size(), 1u);
  EXPECT_GE(t.numaNodes.size(), 1u);
  cpu_set_t allowed;
  ASSERT_EQ(sched_getaffinity(0, sizeof(allowed), &allowed), 0);
  int nproc = CPU_COUNT(&allowed);
  EXPECT_GE(t.pus, nproc);
  EXPECT_GE(t.cores, 1);
  EXPECT_LE(t.cores, t.pus);
  int pkgCores = 0;
  for (const TopoPackage& p : t.packages) pkgCores += p.cores;
  EXPECT_EQ(pkgCores, t.cores);
  EXPECT_FALSE(t.hwlocVersion.empty());
  EXPECT_FALSE(t.threadCpus.empty());
  EXPECT_GE(t.threadNumaNode, 0);
}

TEST(TopologyDiscovery, HostIdentityMatchesTheBootstrap) {
  LocalTopology t;
  ASSERT_EQ(discoverLocalTopology(&t), mixcclSuccess) << topologyLastError();
  PeerInfo pi{};
  fillLocalHostInfo(&pi);
  EXPECT_EQ(t.hostHash, pi.hostHash);
  EXPECT_EQ(t.hostname, std::string(pi.hostname));
}

TEST(TopologyDiscovery, PciTreeIsOrderedAndNicsAreComplete) {
  LocalTopology t;
  ASSERT_EQ(discoverLocalTopology(&t), mixcclSuccess) << topologyLastError();
  for (size_t i = 0; i < t.pci.size(); i++) {
    const TopoPciObject& p = t.pci[i];
    EXPECT_LT(p.parent, (int)i);
    if (p.parent >= 0) {
      EXPECT_EQ(p.level, t.pci[p.parent].level + 1);
    }
    if (p.kind == TopoPciObject::kHostBridge) {
      EXPECT_TRUE(p.busId.empty());
    } else {
      EXPECT_FALSE(p.busId.empty());
    }
  }
  // Every interface the kernel knows is listed, physical or not; lo is always there.
  const TopoNic* lo = nicNamed(t, "lo");
  ASSERT_NE(lo, nullptr);
  EXPECT_TRUE(lo->pciBusId.empty());
  EXPECT_TRUE(lo->up);
  // An interface hwloc places on PCI names a PCI function that the tree holds.
  for (const TopoNic& n : t.nics) {
    if (n.pciBusId.empty()) continue;
    bool inTree = false;
    for (const TopoPciObject& p : t.pci) inTree = inTree || p.busId == n.pciBusId;
    EXPECT_TRUE(inTree) << n.name << " " << n.pciBusId;
  }
}

TEST(TopologyDiscovery, RdmaIsReportedOrCleanlyAbsent) {
  LocalTopology t;
  ASSERT_EQ(discoverLocalTopology(&t), mixcclSuccess) << topologyLastError();
  struct stat st;
  bool sysfs = stat("/sys/class/infiniband", &st) == 0;
  ASSERT_FALSE(t.rdmaStatus.empty());
  if (!sysfs) {
    // No RDMA driver: libibverbs lists nothing (ENOSYS), which is not a failure.
    EXPECT_TRUE(t.rdma.empty());
    EXPECT_EQ(t.rdmaStatus, "no RDMA devices (libibverbs found none)");
  } else {
    for (const TopoRdmaDevice& r : t.rdma) EXPECT_FALSE(r.name.empty());
  }
}

TEST(TopologyDiscovery, BindingOnOneNumaNodeIsANoOp) {
  LocalTopology t;
  ASSERT_EQ(discoverLocalTopology(&t), mixcclSuccess) << topologyLastError();
  std::string target;
  for (const TopoNic& n : t.nics)
    if (!n.pciBusId.empty()) target = n.name;
  if (target.empty()) target = "lo";
  BindPlan plan;
  if (t.numaNodes.size() == 1) {
    // Nothing to narrow: bindThreadNear must not touch the thread's affinity.
    cpu_set_t before, after;
    ASSERT_EQ(sched_getaffinity(0, sizeof(before), &before), 0);
    ASSERT_EQ(bindThreadNear(t, target, &plan), mixcclSuccess) << topologyLastError();
    ASSERT_EQ(sched_getaffinity(0, sizeof(after), &after), 0);
    EXPECT_FALSE(plan.bind);
    EXPECT_TRUE(CPU_EQUAL(&before, &after));
    EXPECT_EQ(currentNumaNode(t), t.numaNodes[0].osIndex);
  } else {
    // Several nodes: only plan, so that the test process keeps its placement.
    ASSERT_EQ(planBindNear(t, target, &plan), mixcclSuccess) << topologyLastError();
  }
  EXPECT_FALSE(plan.note.empty());
  BindPlan none;
  ASSERT_EQ(planBindNear(t, "", &none), mixcclSuccess);
  EXPECT_FALSE(none.bind);
}

// ---------------------------------------------------------------------------------------------
// The synthetic two-socket topology

TEST(TopologyXml, LoadsPackagesNumaAndPciTree) {
  LocalTopology t = loadSynthetic();
  EXPECT_FALSE(t.thisSystem);
  EXPECT_EQ(t.hostname, "synthhost");
  ASSERT_EQ(t.packages.size(), 2u);
  ASSERT_EQ(t.numaNodes.size(), 2u);
  EXPECT_EQ(t.cores, 4);
  EXPECT_EQ(t.pus, 4);
  EXPECT_EQ(t.packages[1].numaNodes, std::vector<int>{1});
  EXPECT_EQ(t.packages[0].cpuModel, "Test CPU A");
  EXPECT_EQ(t.numaNodes[1].cpus, "2-3");
  EXPECT_EQ(t.numaNodes[1].memoryBytes, 2147483648ull);

  const TopoNic* a = nicNamed(t, "ensA");
  const TopoNic* c = nicNamed(t, "ensC");
  ASSERT_NE(a, nullptr);
  ASSERT_NE(c, nullptr);
  EXPECT_EQ(a->pciBusId, "0000:03:00.0");
  EXPECT_EQ(a->numaNode, 0);
  EXPECT_EQ(a->mac, "02:00:00:00:00:0a");
  EXPECT_EQ(c->numaNode, 1);
  EXPECT_EQ(t.nics.size(), 5u);  // nothing of the running system is merged in

  ASSERT_EQ(t.rdma.size(), 1u);
  EXPECT_EQ(t.rdma[0].name, "mlx5_0");
  EXPECT_EQ(t.rdma[0].pciBusId, "0000:03:00.0");
  ASSERT_EQ(t.accelerators.size(), 2u);
  EXPECT_EQ(t.accelerators[0].pciBusId, "0000:02:00.0");
  EXPECT_EQ(t.accelerators[1].numaNode, 1);

  // The GPU sits three levels deep: host bridge, switch upstream port, downstream port.
  int gpu = -1;
  for (size_t i = 0; i < t.pci.size(); i++)
    if (t.pci[i].busId == "0000:02:00.0") gpu = (int)i;
  ASSERT_GE(gpu, 0);
  EXPECT_EQ(t.pci[gpu].level, 3);
  EXPECT_EQ(t.pci[gpu].classId, 0x0302u);
  EXPECT_EQ(t.pci[gpu].vendorId, 0x10deu);
  EXPECT_EQ(t.pci[gpu].osDevices, std::vector<std::string>{"card0"});
  EXPECT_EQ(t.pci[t.pci[gpu].parent].downstream, "0000:[02-02]");
}

TEST(TopologyXml, PciDistanceClassesAndHops) {
  LocalTopology t = loadSynthetic();
  int hops = -2;
  EXPECT_EQ(pciDistance(t, "0000:02:00.0", "0000:02:00.0", &hops), PciDistance::kSameDevice);
  EXPECT_EQ(hops, 0);
  EXPECT_EQ(pciDistance(t, "0000:02:00.0", "0000:03:00.0", &hops), PciDistance::kPciSwitch);
  EXPECT_EQ(hops, 4);
  EXPECT_EQ(pciDistance(t, "0000:02:00.0", "0000:00:02.0", &hops), PciDistance::kHostBridge);
  EXPECT_EQ(hops, 4);
  EXPECT_EQ(pciDistance(t, "0000:02:00.0", "0000:20:00.0", &hops), PciDistance::kNumaNode);
  EXPECT_EQ(pciDistance(t, "0000:02:00.0", "0000:10:00.0", &hops), PciDistance::kSystem);
  EXPECT_EQ(pciDistance(t, "0000:10:01.0", "0000:10:00.0", &hops), PciDistance::kHostBridge);
  EXPECT_EQ(hops, 2);
  // Domain 0 may be left out; an unknown function has no distance.
  EXPECT_EQ(pciDistance(t, "02:00.0", "03:00.0", &hops), PciDistance::kPciSwitch);
  EXPECT_EQ(pciDistance(t, "0000:02:00.0", "0000:99:00.0", &hops), PciDistance::kUnknown);
  EXPECT_EQ(hops, -1);
}

TEST(TopologyXml, ChooseNicTakesTheNearestCandidate) {
  LocalTopology t = loadSynthetic();
  NicChoice c;
  // Everything offered: the NIC behind the GPU's own switch wins, wherever it is listed.
  ASSERT_EQ(chooseNic(t, "0000:02:00.0", {"ensC", "ensD", "ensB", "ensA"}, "ensC", &c),
            mixcclSuccess);
  EXPECT_EQ(c.name, "ensA");
  EXPECT_TRUE(c.byPciDistance);
  EXPECT_EQ(c.distance, PciDistance::kPciSwitch);
  EXPECT_EQ(c.hops, 4);
  EXPECT_EQ(c.pciBusId, "0000:03:00.0");
  EXPECT_EQ(c.numaNode, 0);
  // Without it: the same host bridge beats another host bridge beats the other package.
  ASSERT_EQ(chooseNic(t, "0000:02:00.0", {"ensC", "ensD", "ensB"}, "ensC", &c), mixcclSuccess);
  EXPECT_EQ(c.name, "ensB");
  EXPECT_EQ(c.distance, PciDistance::kHostBridge);
  ASSERT_EQ(chooseNic(t, "0000:02:00.0", {"ensC", "ensD"}, "ensC", &c), mixcclSuccess);
  EXPECT_EQ(c.name, "ensD");
  EXPECT_EQ(c.distance, PciDistance::kNumaNode);
  // The only positioned candidate is taken even when far.
  ASSERT_EQ(chooseNic(t, "0000:02:00.0", {"veth0", "ensC"}, "veth0", &c), mixcclSuccess);
  EXPECT_EQ(c.name, "ensC");
  EXPECT_EQ(c.distance, PciDistance::kSystem);
  // The second GPU is on the other package.
  ASSERT_EQ(chooseNic(t, "0000:10:01.0", {"ensA", "ensB", "ensC"}, "ensA", &c), mixcclSuccess);
  EXPECT_EQ(c.name, "ensC");
}

TEST(TopologyXml, ChooseNicBreaksTiesByCandidateOrder) {
  LocalTopology t = loadSynthetic();
  NicChoice c;
  ASSERT_EQ(chooseNic(t, "0000:02:00.0", {"ensA2", "ensA"}, "", &c), mixcclSuccess);
  EXPECT_EQ(c.name, "ensA2");
  ASSERT_EQ(chooseNic(t, "0000:02:00.0", {"ensA", "ensA2"}, "", &c), mixcclSuccess);
  EXPECT_EQ(c.name, "ensA");
}

TEST(TopologyXml, ChooseNicFallsBackToTheSocketChoice) {
  LocalTopology t = loadSynthetic();
  NicChoice c;
  // Host ranks have no device.
  ASSERT_EQ(chooseNic(t, "", {"ensA", "ensC"}, "ensC", &c), mixcclSuccess);
  EXPECT_EQ(c.name, "ensC");
  EXPECT_FALSE(c.byPciDistance);
  EXPECT_NE(c.reason.find("no device"), std::string::npos) << c.reason;
  // A device the topology does not know.
  ASSERT_EQ(chooseNic(t, "0000:99:00.0", {"ensA", "ensC"}, "ensC", &c), mixcclSuccess);
  EXPECT_EQ(c.name, "ensC");
  EXPECT_FALSE(c.byPciDistance);
  // Only virtual candidates (the testbed's veths).
  ASSERT_EQ(chooseNic(t, "0000:02:00.0", {"veth0", "veth1"}, "veth1", &c), mixcclSuccess);
  EXPECT_EQ(c.name, "veth1");
  EXPECT_FALSE(c.byPciDistance);
  EXPECT_EQ(c.distance, PciDistance::kUnknown);
  // No fallback given: the first candidate.
  ASSERT_EQ(chooseNic(t, "0000:02:00.0", {"veth0", "veth1"}, "", &c), mixcclSuccess);
  EXPECT_EQ(c.name, "veth0");
  // Nothing at all to choose from.
  EXPECT_EQ(chooseNic(t, "0000:02:00.0", {}, "", &c), mixcclInvalidArgument);
  EXPECT_FALSE(topologyLastError().empty());
}

TEST(TopologyXml, BindPlansFollowTheNumaNodeOfTheTarget) {
  LocalTopology t = loadSynthetic();
  BindPlan p;
  ASSERT_EQ(planBindNear(t, "ensC", &p), mixcclSuccess);
  EXPECT_TRUE(p.bind);
  EXPECT_EQ(p.cpus, "2-3");
  EXPECT_EQ(p.numaNode, 1);
  ASSERT_EQ(planBindNear(t, "0000:02:00.0", &p), mixcclSuccess);
  EXPECT_TRUE(p.bind);
  EXPECT_EQ(p.cpus, "0-1");
  EXPECT_EQ(p.numaNode, 0);
  ASSERT_EQ(planBindNear(t, "mlx5_0", &p), mixcclSuccess);
  EXPECT_EQ(p.cpus, "0-1");
  ASSERT_EQ(planBindNear(t, "veth7", &p), mixcclSuccess);
  EXPECT_FALSE(p.bind);
  EXPECT_NE(p.note.find("veth7"), std::string::npos);
  // A topology read from XML is not this machine: binding is refused, not faked.
  EXPECT_EQ(bindThreadNear(t, "ensC", &p), mixcclInvalidUsage);
  EXPECT_FALSE(topologyLastError().empty());
}

TEST(TopologyXml, MalformedXmlIsRefused) {
  LocalTopology t;
  EXPECT_NE(loadTopologyFromXml("<topology version=\"2.0\"><object", &t), mixcclSuccess);
  EXPECT_EQ(loadTopologyFromXml("", &t), mixcclInvalidArgument);
}

// ---------------------------------------------------------------------------------------------
// The wire summary

RankTopology sampleRank(int rank) {
  LocalTopology t = loadSynthetic();
  NicChoice c;
  EXPECT_EQ(chooseNic(t, "0000:02:00.0", {"ensB", "ensA"}, "ensB", &c), mixcclSuccess);
  RankTopology r;
  EXPECT_EQ(fillRankTopology(t, rank, "cuda", 3, "0000:02:00.0", c, &r), mixcclSuccess)
      << topologyLastError();
  return r;
}

uint32_t fnv32(const uint8_t* p, size_t n) {
  uint32_t h = 2166136261u;
  for (size_t i = 0; i < n; i++) h = (h ^ p[i]) * 16777619u;
  return h;
}

// Rewrites the checksum so that only the field check can refuse the buffer.
void reseal(uint8_t* w) {
  uint32_t h = fnv32(w, kRankTopologyWireBytes - 4);
  for (int i = 0; i < 4; i++) w[kRankTopologyWireBytes - 4 + i] = (uint8_t)(h >> (8 * i));
}

TEST(RankTopologyWire, FillTakesTheChoiceAndTheDevice) {
  RankTopology r = sampleRank(5);
  EXPECT_EQ(r.rank, 5);
  EXPECT_EQ(r.device, 3);
  EXPECT_STREQ(r.hostname, "synthhost");
  EXPECT_STREQ(r.nicName, "ensA");
  EXPECT_STREQ(r.nicPciBusId, "0000:03:00.0");
  EXPECT_STREQ(r.devicePciBusId, "0000:02:00.0");
  EXPECT_STREQ(r.adaptor, "cuda");
  EXPECT_EQ(r.nicNumaNode, 0);
  EXPECT_EQ(r.deviceNumaNode, 0);
  EXPECT_EQ(r.nicHops, 4);
  EXPECT_EQ(r.nicDistance, PciDistance::kPciSwitch);
  EXPECT_TRUE(r.nicByPci);
}

TEST(RankTopologyWire, RoundTripKeepsEveryField) {
  RankTopology in = sampleRank(7);
  in.hostHash = 0x0123456789abcdefull;
  in.numaNode = 1;
  uint8_t w[kRankTopologyWireBytes];
  ASSERT_EQ(encodeRankTopology(in, w, sizeof(w)), mixcclSuccess) << topologyLastError();
  // Little endian on the wire whatever the host.
  EXPECT_EQ(w[0], 0x4d);
  EXPECT_EQ(w[8], 7);
  EXPECT_EQ(w[16], 0xef);
  RankTopology out;
  ASSERT_EQ(decodeRankTopology(w, sizeof(w), &out), mixcclSuccess) << topologyLastError();
  EXPECT_EQ(out.rank, in.rank);
  EXPECT_EQ(out.device, in.device);
  EXPECT_EQ(out.hostHash, in.hostHash);
  EXPECT_EQ(out.numaNode, in.numaNode);
  EXPECT_EQ(out.nicNumaNode, in.nicNumaNode);
  EXPECT_EQ(out.deviceNumaNode, in.deviceNumaNode);
  EXPECT_EQ(out.nicHops, in.nicHops);
  EXPECT_EQ(out.nicDistance, in.nicDistance);
  EXPECT_EQ(out.nicByPci, in.nicByPci);
  EXPECT_EQ(0, memcmp(out.hostname, in.hostname, sizeof(in.hostname)));
  EXPECT_EQ(0, memcmp(out.nicName, in.nicName, sizeof(in.nicName)));
  EXPECT_EQ(0, memcmp(out.nicPciBusId, in.nicPciBusId, sizeof(in.nicPciBusId)));
  EXPECT_EQ(0, memcmp(out.devicePciBusId, in.devicePciBusId, sizeof(in.devicePciBusId)));
  EXPECT_EQ(0, memcmp(out.adaptor, in.adaptor, sizeof(in.adaptor)));
}

TEST(RankTopologyWire, EveryCorruptedByteIsRejected) {
  RankTopology in = sampleRank(2);
  uint8_t good[kRankTopologyWireBytes];
  ASSERT_EQ(encodeRankTopology(in, good, sizeof(good)), mixcclSuccess);
  for (size_t i = 0; i < kRankTopologyWireBytes; i++) {
    for (uint8_t flip : {0x01, 0x80, 0xff}) {
      uint8_t w[kRankTopologyWireBytes];
      memcpy(w, good, sizeof(w));
      w[i] ^= flip;
      RankTopology out;
      EXPECT_EQ(decodeRankTopology(w, sizeof(w), &out), mixcclInvalidArgument)
          << "byte " << i << " flip " << (int)flip;
    }
  }
}

TEST(RankTopologyWire, FieldChecksHoldEvenWithAValidChecksum) {
  RankTopology in = sampleRank(1);
  uint8_t good[kRankTopologyWireBytes];
  ASSERT_EQ(encodeRankTopology(in, good, sizeof(good)), mixcclSuccess);
  RankTopology out;
  auto refused = [&](void (*edit)(uint8_t*)) {
    uint8_t w[kRankTopologyWireBytes];
    memcpy(w, good, sizeof(w));
    edit(w);
    reseal(w);
    return decodeRankTopology(w, sizeof(w), &out) == mixcclInvalidArgument;
  };
  {  // The resealed original is accepted: the edits below are what is refused.
    uint8_t w[kRankTopologyWireBytes];
    memcpy(w, good, sizeof(w));
    reseal(w);
    ASSERT_EQ(decodeRankTopology(w, sizeof(w), &out), mixcclSuccess);
  }
  EXPECT_TRUE(refused([](uint8_t* w) { memset(w + 120, 'x', 24); }));   // nicName unterminated
  EXPECT_TRUE(refused([](uint8_t* w) { memset(w + 48, 'h', 72); }));    // hostname unterminated
  EXPECT_TRUE(refused([](uint8_t* w) { w[192 + 20] = 'z'; }));          // junk after adaptor's NUL
  EXPECT_TRUE(refused([](uint8_t* w) { w[48] = '\n'; }));               // unprintable
  EXPECT_TRUE(refused([](uint8_t* w) { w[4] = 2; }));                   // version 2
  EXPECT_TRUE(refused([](uint8_t* w) { w[6] = 0xff; w[7] = 0; }));      // length field 255
  EXPECT_TRUE(refused([](uint8_t* w) { w[40] = 6; }));                  // distance out of range
  EXPECT_TRUE(refused([](uint8_t* w) { w[41] = 2; }));                  // unknown flag
  EXPECT_TRUE(refused([](uint8_t* w) { w[44] = 1; }));                  // reserved
  EXPECT_TRUE(refused([](uint8_t* w) { w[230] = 1; }));                 // reserved
  EXPECT_TRUE(refused([](uint8_t* w) { w[8] = 0xff; w[9] = 0xff; w[10] = 0xff; w[11] = 0xff; }));  // rank -1
  EXPECT_TRUE(refused([](uint8_t* w) { w[24] = 0xfe; w[25] = 0xff; w[26] = 0xff; w[27] = 0xff; }));  // numa -2
  // Lengths other than the exact size.
  EXPECT_EQ(decodeRankTopology(good, kRankTopologyWireBytes - 1, &out), mixcclInvalidArgument);
  EXPECT_EQ(decodeRankTopology(good, kRankTopologyWireBytes + 1, &out), mixcclInvalidArgument);
}

TEST(RankTopologyWire, OversizedTextsAreRefused) {
  LocalTopology t = loadSynthetic();
  NicChoice c;
  c.name = "eth0";
  RankTopology r;
  EXPECT_EQ(fillRankTopology(t, 0, std::string(23, 'a'), -1, "", c, &r), mixcclSuccess);
  EXPECT_EQ(fillRankTopology(t, 0, std::string(24, 'a'), -1, "", c, &r), mixcclInvalidArgument);
  EXPECT_NE(topologyLastError().find("adaptor"), std::string::npos) << topologyLastError();
  EXPECT_EQ(fillRankTopology(t, 0, "host", -1, std::string(24, '0'), c, &r),
            mixcclInvalidArgument);
  c.name = std::string(30, 'n');
  EXPECT_EQ(fillRankTopology(t, 0, "host", -1, "", c, &r), mixcclInvalidArgument);
  t.hostname = std::string(72, 'h');
  c.name = "eth0";
  EXPECT_EQ(fillRankTopology(t, 0, "host", -1, "", c, &r), mixcclInvalidArgument);
  // A struct filled by hand with an unterminated field is not encoded.
  RankTopology bad = sampleRank(0);
  memset(bad.adaptor, 'q', sizeof(bad.adaptor));
  uint8_t w[kRankTopologyWireBytes];
  EXPECT_EQ(encodeRankTopology(bad, w, sizeof(w)), mixcclInvalidArgument);
  RankTopology ok = sampleRank(0);
  EXPECT_EQ(encodeRankTopology(ok, w, sizeof(w) - 1), mixcclInvalidArgument);
}

// ---------------------------------------------------------------------------------------------
// Reports

std::vector<RankTopology> sampleJob() {
  std::vector<RankTopology> ranks;
  for (int i = 0; i < 4; i++) {
    RankTopology r = sampleRank(i);
    r.hostHash = i < 2 ? 0x1111 : 0x2222;
    snprintf(r.hostname, sizeof(r.hostname), "%s", i < 2 ? "alpha" : "beta");
    r.numaNode = i % 2;
    ranks.push_back(r);
  }
  return ranks;
}

TEST(TopologyReport, JsonParsesAndCarriesBothViews) {
  LocalTopology local;
  ASSERT_EQ(discoverLocalTopology(&local), mixcclSuccess);
  std::vector<RankTopology> ranks = sampleJob();
  TopologyView v;
  v.local = &local;
  v.ranks = &ranks;
  v.rank = 2;
  json j = json::parse(topologyToJson(v));
  EXPECT_EQ(j["schema"], "mixccl-topology/1");
  EXPECT_EQ(j["rank"], 2);
  EXPECT_EQ(j["local"]["counts"]["packages"], local.packages.size());
  EXPECT_EQ(j["local"]["counts"]["cores"], local.cores);
  EXPECT_EQ(j["local"]["nics"].size(), local.nics.size());
  EXPECT_EQ(j["local"]["rdma"]["status"], local.rdmaStatus);
  EXPECT_EQ(j["global"]["nranks"], 4);
  EXPECT_EQ(j["global"]["nhosts"], 2);
  EXPECT_EQ(j["global"]["hosts"][1]["hostname"], "beta");
  EXPECT_EQ(j["global"]["hosts"][1]["ranks"], json({2, 3}));
  EXPECT_EQ(j["global"]["ranks"][3]["host"], 1);
  EXPECT_EQ(j["global"]["ranks"][3]["numaNode"], 1);
  EXPECT_EQ(j["global"]["ranks"][0]["nic"]["name"], "ensA");
  EXPECT_EQ(j["global"]["ranks"][0]["nic"]["distance"], "pci-switch");
  EXPECT_EQ(j["global"]["ranks"][0]["nic"]["selectedBy"], "pci-distance");
  EXPECT_EQ(j["global"]["ranks"][0]["devicePciBusId"], "0000:02:00.0");
  EXPECT_EQ(j["global"]["ranks"][0]["device"], 3);

  // Local only, from the synthetic topology: the PCI tree keeps its parents.
  LocalTopology syn = loadSynthetic();
  TopologyView lv;
  lv.local = &syn;
  json l = json::parse(topologyToJson(lv));
  EXPECT_TRUE(l["rank"].is_null());
  EXPECT_FALSE(l.contains("global"));
  EXPECT_EQ(l["local"]["counts"]["numaNodes"], 2);
  EXPECT_EQ(l["local"]["counts"]["accelerators"], 2);
  EXPECT_EQ(l["local"]["rdma"]["devices"][0]["name"], "mlx5_0");
  for (const json& p : l["local"]["pci"])
    if (p["busId"] == "0000:02:00.0") {
      EXPECT_EQ(p["class"], "0302");
      EXPECT_EQ(l["local"]["pci"][p["parent"].get<int>()]["busId"], "0000:01:00.0");
    }
}

TEST(TopologyReport, TextNamesEveryRankAndHost) {
  std::vector<RankTopology> ranks = sampleJob();
  LocalTopology syn = loadSynthetic();
  TopologyView v;
  v.local = &syn;
  v.ranks = &ranks;
  std::string s = topologyToText(v);
  EXPECT_NE(s.find("job: 4 rank(s) on 2 host(s)"), std::string::npos) << s;
  EXPECT_NE(s.find("ranks 2,3"), std::string::npos) << s;
  EXPECT_NE(s.find("2 package(s), 2 NUMA node(s), 4 core(s)"), std::string::npos) << s;
  EXPECT_NE(s.find("ensA"), std::string::npos);
  EXPECT_NE(s.find("0000:02:00.0"), std::string::npos);
}

TEST(TopologyReport, DumpPathRules) {
  std::vector<RankTopology> ranks = sampleJob();
  std::string p;
  EXPECT_TRUE(topologyDumpPath("/tmp/t.json", 0, ranks, &p));
  EXPECT_EQ(p, "/tmp/t.json");
  EXPECT_FALSE(topologyDumpPath("/tmp/t.json", 1, ranks, &p));
  EXPECT_TRUE(topologyDumpPath("/tmp/t.%r.json", 3, ranks, &p));
  EXPECT_EQ(p, "/tmp/t.3.json");
  // %h: the lowest rank of each host writes.
  EXPECT_TRUE(topologyDumpPath("/tmp/t.%h.json", 0, ranks, &p));
  EXPECT_EQ(p, "/tmp/t.alpha.json");
  EXPECT_FALSE(topologyDumpPath("/tmp/t.%h.json", 1, ranks, &p));
  EXPECT_TRUE(topologyDumpPath("/tmp/t.%h.json", 2, ranks, &p));
  EXPECT_EQ(p, "/tmp/t.beta.json");
  EXPECT_FALSE(topologyDumpPath("/tmp/t.%h.json", 3, ranks, &p));
  EXPECT_TRUE(topologyDumpPath("/tmp/100%%-%r", 1, ranks, &p));
  EXPECT_EQ(p, "/tmp/100%-1");
  EXPECT_TRUE(topologyDumpPath("/tmp/t.%p", 1, ranks, &p));
  EXPECT_EQ(p, "/tmp/t." + std::to_string(getpid()));
  EXPECT_FALSE(topologyDumpPath("", 0, ranks, &p));
}

TEST(TopologyReport, DumpWritesParsableJsonAtomically) {
  char dir[] = "/tmp/mixccl_topo_test_XXXXXX";
  ASSERT_NE(mkdtemp(dir), nullptr);
  std::string path = std::string(dir) + "/topo.json";
  LocalTopology syn = loadSynthetic();
  std::vector<RankTopology> ranks = sampleJob();
  TopologyView v;
  v.local = &syn;
  v.ranks = &ranks;
  v.rank = 0;
  ASSERT_EQ(writeTopologyDump(path, v), mixcclSuccess) << topologyLastError();
  std::ifstream f(path);
  std::stringstream ss;
  ss << f.rdbuf();
  EXPECT_EQ(ss.str(), topologyToJson(v));
  json j = json::parse(ss.str());
  EXPECT_EQ(j["global"]["nranks"], 4);
  // No temporary is left behind.
  EXPECT_NE(access((path + ".tmp." + std::to_string(getpid())).c_str(), F_OK), 0);
  EXPECT_EQ(writeTopologyDump(std::string(dir) + "/missing/dir/t.json", v), mixcclSystemError);
  unlink(path.c_str());
  rmdir(dir);
}

}  // namespace
}  // namespace mixccl
