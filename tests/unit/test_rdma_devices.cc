// Tests of RDMA device discovery without RDMA hardware: the decoding of every libibverbs speed,
// width and state value; placing injected device descriptions on the synthetic two-socket
// topology (test_topology_xml.h) and the NIC choice that follows; the libibverbs calls through a
// stand-in library (no devices, no kernel support, failing opens and queries); the sysfs facts
// from a directory of sysfs' shape; the reports.
#include <endian.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "test_topology_xml.h"
#include "topology/rdma_facts.h"
#include "topology/rdma_verbs.h"
#include "topology/topology.h"

namespace mixccl {
namespace {

using nlohmann::json;

// libibverbs' raw values (ibv_query_port(3)).
constexpr int kDown = 1, kInit = 2, kActive = 4;
constexpr int kInfiniBand = 1, kEthernet = 2;
constexpr unsigned kEdr = 32, kHdr = 64;
constexpr unsigned k4x = 2;

LocalTopology loadSynthetic() {
  LocalTopology t;
  EXPECT_EQ(loadTopologyFromXml(testdata::kTwoSocketXml, &t), mixcclSuccess) << topologyLastError();
  return t;
}

RdmaPortFacts port(int n, int state, int linkLayer, unsigned speed = kHdr, unsigned width = k4x) {
  RdmaPortFacts p;
  p.port = n;
  p.state = state;
  p.linkLayer = linkLayer;
  p.activeSpeed = speed;
  p.activeWidth = width;
  p.hasGid = true;
  p.gid[0] = 0xfe;
  p.gid[1] = 0x80;
  p.gid[15] = (uint8_t)n;
  return p;
}

// One device on one PCI function with one interface whose dev_port is 0 (mlx5's shape).
RdmaDeviceFacts hca(const std::string& name, const std::string& bus, const std::string& netdev,
                    RdmaPortFacts p) {
  RdmaDeviceFacts d;
  d.name = name;
  d.nodeGuid = 0x0002c90300102030ull;
  d.pciBusId = bus;
  if (!netdev.empty()) d.netdevs.push_back({netdev, 0});
  d.ports.push_back(p);
  return d;
}

const TopoNic* nicNamed(const LocalTopology& t, const std::string& name) {
  for (const TopoNic& n : t.nics)
    if (n.name == name) return &n;
  return nullptr;
}

const TopoRdmaDevice* rdmaNamed(const LocalTopology& t, const std::string& name) {
  for (const TopoRdmaDevice& r : t.rdma)
    if (r.name == name) return &r;
  return nullptr;
}

const TopoPciObject* pciNamed(const LocalTopology& t, const std::string& busId) {
  for (const TopoPciObject& p : t.pci)
    if (p.busId == busId) return &p;
  return nullptr;
}

bool contains(const std::vector<std::string>& v, const std::string& s) {
  for (const std::string& x : v)
    if (x == s) return true;
  return false;
}

// ---------------------------------------------------------------------------------------------
// Decoding

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

// ---------------------------------------------------------------------------------------------
// Placing injected devices on the synthetic topology

TEST(RdmaPlacement, TwoHcasOnTwoNumaNodesAndTheNicNearEachGpu) {
  LocalTopology t = loadSynthetic();
  RdmaScan scan;
  scan.devices.push_back(hca("mlx5_0", "0000:03:00.0", "ensA", port(1, kActive, kInfiniBand)));
  scan.devices.push_back(hca("mlx5_1", "0000:10:00.0", "ensC", port(1, kActive, kInfiniBand)));
  placeRdmaDevices(scan, &t);

  ASSERT_EQ(t.rdma.size(), 2u);
  const TopoRdmaDevice* a = rdmaNamed(t, "mlx5_0");
  const TopoRdmaDevice* c = rdmaNamed(t, "mlx5_1");
  ASSERT_TRUE(a && c);
  EXPECT_TRUE(a->onPciTree);
  EXPECT_EQ(a->numaNode, 0);
  EXPECT_TRUE(c->onPciTree);
  EXPECT_EQ(c->numaNode, 1);
  EXPECT_EQ(a->nodeGuid, "0002:c903:0010:2030");
  ASSERT_EQ(a->ports.size(), 1u);
  EXPECT_EQ(a->ports[0].state, "active");
  EXPECT_EQ(a->ports[0].linkLayer, "InfiniBand");
  EXPECT_EQ(a->ports[0].speed, "HDR");
  EXPECT_EQ(a->ports[0].width, 4);
  EXPECT_EQ(a->ports[0].gbps, 200.0);
  EXPECT_EQ(a->ports[0].gid, "fe80:0000:0000:0000:0000:0000:0000:0001");
  EXPECT_EQ(a->ports[0].netDevice, "ensA");
  // mlx5_1 joins its function's OS devices on the PCI tree, beside the NIC hwloc knew.
  const TopoPciObject* fn = pciNamed(t, "0000:10:00.0");
  ASSERT_NE(fn, nullptr);
  EXPECT_TRUE(contains(fn->osDevices, "mlx5_1"));
  EXPECT_TRUE(contains(fn->osDevices, "ensC"));
  EXPECT_EQ(t.rdmaStatus, "2 RDMA device(s) from libibverbs, 2 active port(s)");

  // Each GPU takes the HCA of its own NUMA node, wherever the socket layer lists it.
  NicChoice ch;
  ASSERT_EQ(chooseNic(t, "0000:02:00.0", {"ensC", "ensA"}, "ensC", &ch), mixcclSuccess);
  EXPECT_EQ(ch.name, "ensA");
  EXPECT_EQ(ch.rdmaDevice, "mlx5_0");
  EXPECT_EQ(ch.rdmaPort, 1);
  EXPECT_EQ(ch.rdmaGbps, 200.0);
  EXPECT_EQ(ch.distance, PciDistance::kPciSwitch);
  ASSERT_EQ(chooseNic(t, "0000:10:01.0", {"ensA", "ensC"}, "ensA", &ch), mixcclSuccess);
  EXPECT_EQ(ch.name, "ensC");
  EXPECT_EQ(ch.rdmaDevice, "mlx5_1");
  EXPECT_EQ(ch.numaNode, 1);
  EXPECT_NE(ch.reason.find("RDMA mlx5_1 port 1 active (InfiniBand, 200 Gb/s)"), std::string::npos)
      << ch.reason;
}

TEST(RdmaPlacement, RocePortMergesWithTheHwlocNic) {
  LocalTopology t = loadSynthetic();
  size_t nics = t.nics.size();
  RdmaPortFacts p = port(1, kActive, kEthernet, kEdr, k4x);
  p.gidNetdev = "ensA";  // RoCE: sysfs names the GID's interface
  RdmaDeviceFacts d = hca("mlx5_0", "0000:03:00.0", "", p);
  d.netdevs.clear();  // only the GID names the interface (software RoCE's shape)
  RdmaScan scan;
  scan.devices.push_back(d);
  placeRdmaDevices(scan, &t);

  EXPECT_EQ(t.nics.size(), nics);  // merged into the NIC record, not a second record
  const TopoNic* n = nicNamed(t, "ensA");
  ASSERT_NE(n, nullptr);
  EXPECT_EQ(n->rdmaDevice, "mlx5_0");
  EXPECT_EQ(n->rdmaPort, 1);
  EXPECT_EQ(n->pciBusId, "0000:03:00.0");
  EXPECT_EQ(n->mac, "02:00:00:00:00:0a");  // hwloc's facts stay
  ASSERT_EQ(t.rdma.size(), 1u);
  EXPECT_EQ(t.rdma[0].netDevices, std::vector<std::string>{"ensA"});
  EXPECT_EQ(t.rdma[0].ports[0].linkLayer, "Ethernet");
  EXPECT_EQ(t.rdma[0].ports[0].gbps, 100.0);
  EXPECT_EQ(nicNamed(t, "ensA2")->rdmaDevice, "");
  // hwloc's own OS device of the function is not listed twice.
  int listed = 0;
  for (const std::string& o : pciNamed(t, "0000:03:00.0")->osDevices) listed += o == "mlx5_0";
  EXPECT_EQ(listed, 1);
}

TEST(RdmaPlacement, ActiveRdmaPortBeatsAPlainNicAtTheSameDistance) {
  LocalTopology t = loadSynthetic();
  RdmaScan scan;
  // ensA (03:00.0) stays a plain NIC; ensA2 (03:00.1, the same switch) is RoCE, active.
  scan.devices.push_back(hca("mlx5_1", "0000:03:00.1", "ensA2", port(1, kActive, kEthernet)));
  placeRdmaDevices(scan, &t);
  NicChoice ch;
  ASSERT_EQ(chooseNic(t, "0000:02:00.0", {"ensA", "ensA2"}, "ensA", &ch), mixcclSuccess);
  EXPECT_EQ(ch.name, "ensA2");
  EXPECT_EQ(ch.distance, PciDistance::kPciSwitch);
  EXPECT_EQ(ch.rdmaDevice, "mlx5_1");
  EXPECT_NE(ch.reason.find("preferred to ensA at the same distance"), std::string::npos)
      << ch.reason;
  // But never across a distance class: a plain NIC on the GPU's host bridge beats an active
  // HCA on the other package.
  LocalTopology u = loadSynthetic();
  RdmaScan far;
  far.devices.push_back(hca("mlx5_2", "0000:10:00.0", "ensC", port(1, kActive, kInfiniBand)));
  placeRdmaDevices(far, &u);
  ASSERT_EQ(chooseNic(u, "0000:02:00.0", {"ensC", "ensB"}, "ensC", &ch), mixcclSuccess);
  EXPECT_EQ(ch.name, "ensB");
  EXPECT_EQ(ch.distance, PciDistance::kHostBridge);
  EXPECT_EQ(ch.rdmaDevice, "");
}

TEST(RdmaPlacement, FasterActivePortWinsBetweenTwoHcasAtTheSameDistance) {
  LocalTopology t = loadSynthetic();
  RdmaScan scan;
  scan.devices.push_back(hca("mlx5_0", "0000:03:00.0", "ensA", port(1, kActive, kEthernet, kEdr)));
  scan.devices.push_back(hca("mlx5_1", "0000:03:00.1", "ensA2", port(1, kActive, kEthernet, kHdr)));
  placeRdmaDevices(scan, &t);
  NicChoice ch;
  ASSERT_EQ(chooseNic(t, "0000:02:00.0", {"ensA", "ensA2"}, "", &ch), mixcclSuccess);
  EXPECT_EQ(ch.name, "ensA2");
  EXPECT_EQ(ch.rdmaGbps, 200.0);
}

TEST(RdmaPlacement, DownPortIsIgnoredByTheNicChoice) {
  LocalTopology t = loadSynthetic();
  RdmaScan scan;
  scan.devices.push_back(hca("mlx5_1", "0000:03:00.1", "ensA2", port(1, kDown, kEthernet)));
  scan.devices.push_back(hca("mlx5_3", "0000:00:02.0", "ensB", port(1, kInit, kInfiniBand)));
  placeRdmaDevices(scan, &t);
  // The records stay (they are what the host has) ...
  EXPECT_EQ(nicNamed(t, "ensA2")->rdmaDevice, "mlx5_1");
  EXPECT_EQ(rdmaNamed(t, "mlx5_1")->ports[0].state, "down");
  // (The XML's own mlx5_0 is not in this scan, so the status names it.)
  EXPECT_EQ(t.rdmaStatus,
            "2 RDMA device(s) from libibverbs, 0 active port(s); hwloc also lists mlx5_0, which "
            "libibverbs does not (no provider library for it?)");
  const TopoRdmaDevice* dev = nullptr;
  EXPECT_EQ(activeRdmaPortOfNic(t, "ensA2", &dev), nullptr);
  EXPECT_EQ(dev, nullptr);
  EXPECT_EQ(activeRdmaPortOfNic(t, "ensB", &dev), nullptr);  // init is not active either
  // ... but the choice is the plain rule: same distance, same hops, the socket layer's order.
  NicChoice ch;
  ASSERT_EQ(chooseNic(t, "0000:02:00.0", {"ensA", "ensA2"}, "", &ch), mixcclSuccess);
  EXPECT_EQ(ch.name, "ensA");
  EXPECT_EQ(ch.rdmaDevice, "");
  EXPECT_EQ(ch.reason.find("RDMA"), std::string::npos) << ch.reason;
}

TEST(RdmaPlacement, TwoPortsOnOneFunctionMapByDevPort) {
  LocalTopology t = loadSynthetic();
  RdmaDeviceFacts d;
  d.name = "mlx4_0";
  d.pciBusId = "03:00.1";  // another spelling of hwloc's 0000:03:00.1
  d.netdevs = {{"ensA2", 1}, {"ensX", 0}};
  d.ports = {port(1, kDown, kEthernet), port(2, kActive, kEthernet)};
  RdmaScan scan;
  scan.devices.push_back(d);
  placeRdmaDevices(scan, &t);
  const TopoRdmaDevice* r = rdmaNamed(t, "mlx4_0");
  ASSERT_NE(r, nullptr);
  EXPECT_EQ(r->pciBusId, "0000:03:00.1");
  EXPECT_TRUE(r->onPciTree);
  EXPECT_EQ(r->ports[0].netDevice, "ensX");
  EXPECT_EQ(r->ports[1].netDevice, "ensA2");
  EXPECT_EQ(nicNamed(t, "ensA2")->rdmaPort, 2);
  const TopoRdmaDevice* dev = nullptr;
  const TopoRdmaPort* p = activeRdmaPortOfNic(t, "ensA2", &dev);
  ASSERT_NE(p, nullptr);
  EXPECT_EQ(p->port, 2);
  EXPECT_EQ(dev, r);
}

TEST(RdmaPlacement, DeviceOffTheTreeKeepsTheSysfsNumaNode) {
  LocalTopology t = loadSynthetic();
  RdmaDeviceFacts d = hca("rxe0", "", "", port(1, kActive, kEthernet));
  d.sysfsNumaNode = 1;
  d.ports[0].gidNetdev = "veth9";  // not a NIC of this topology: nothing to merge with
  RdmaDeviceFacts e = hca("mlx5_9", "0000:99:00.0", "", port(1, kActive, kInfiniBand));
  e.sysfsNumaNode = -1;
  RdmaScan scan;
  scan.devices = {d, e};
  placeRdmaDevices(scan, &t);
  const TopoRdmaDevice* r = rdmaNamed(t, "rxe0");
  ASSERT_NE(r, nullptr);
  EXPECT_FALSE(r->onPciTree);
  EXPECT_EQ(r->numaNode, 1);
  EXPECT_EQ(r->netDevices, std::vector<std::string>{"veth9"});
  EXPECT_FALSE(rdmaNamed(t, "mlx5_9")->onPciTree);
  EXPECT_EQ(rdmaNamed(t, "mlx5_9")->numaNode, -1);
  for (const TopoNic& n : t.nics) EXPECT_EQ(n.rdmaDevice, "") << n.name;
}

TEST(RdmaPlacement, EmptyScanSaysSoAndNamesWhatOnlyHwlocSaw) {
  LocalTopology t = loadSynthetic();  // hwloc's XML holds an mlx5_0 OS device
  ASSERT_EQ(t.rdma.size(), 1u);
  EXPECT_EQ(t.rdma[0].ports[0].state, "active");  // hwloc's Port1State 4
  RdmaScan scan;
  scan.status = kRdmaNoneFound;
  placeRdmaDevices(scan, &t);
  EXPECT_TRUE(t.rdma.empty());
  EXPECT_EQ(t.rdmaStatus,
            "no RDMA devices (libibverbs found none); hwloc also lists mlx5_0, which libibverbs "
            "does not (no provider library for it?)");
  // A scan without a status is the same plain "none".
  LocalTopology u = loadSynthetic();
  u.rdma.clear();
  placeRdmaDevices(RdmaScan{}, &u);
  EXPECT_EQ(u.rdmaStatus, "no RDMA devices (libibverbs found none)");
}

TEST(RdmaPlacement, DeviceAndPortErrorsAreKept) {
  LocalTopology t = loadSynthetic();
  RdmaDeviceFacts broken;
  broken.name = "mlx5_7";
  broken.pciBusId = "0000:00:02.0";
  broken.error = "ibv_open_device failed: Permission denied";
  RdmaDeviceFacts half = hca("mlx5_8", "0000:20:00.0", "ensD", port(1, kActive, kInfiniBand));
  RdmaPortFacts bad;
  bad.port = 2;
  bad.error = "ibv_query_port failed: Invalid argument";
  half.ports.push_back(bad);
  RdmaScan scan;
  scan.devices = {broken, half};
  placeRdmaDevices(scan, &t);
  const TopoRdmaDevice* b = rdmaNamed(t, "mlx5_7");
  ASSERT_NE(b, nullptr);
  EXPECT_EQ(b->error, "ibv_open_device failed: Permission denied");
  EXPECT_TRUE(b->ports.empty());
  EXPECT_EQ(b->numaNode, 0);
  const TopoRdmaDevice* h = rdmaNamed(t, "mlx5_8");
  ASSERT_EQ(h->ports.size(), 2u);
  EXPECT_EQ(h->ports[1].error, "ibv_query_port failed: Invalid argument");
  EXPECT_EQ(h->ports[1].state, "");
}

// ---------------------------------------------------------------------------------------------
// The libibverbs calls, through a stand-in library

struct FakeDevice {
  std::string name;
  int openErrno = 0;             // nonzero: ibv_open_device fails with it
  int queryDeviceRc = 0;
  uint64_t guidBigEndian = 0;
  std::vector<ibv_port_attr> ports;
  std::vector<int> portRc;       // per port, 0 ok
  std::vector<int> gidRc;        // per port, 0 ok
};

struct FakeVerbs {
  int listErrno = 0;             // nonzero: ibv_get_device_list returns NULL with it
  std::vector<FakeDevice> devices;
  std::vector<ibv_device> handles;
  std::vector<ibv_context> contexts;
  int opened = 0, closed = 0, freed = 0;
};
FakeVerbs* gFake = nullptr;

int indexOf(ibv_device* d) { return (int)(d - gFake->handles.data()); }
int indexOf(ibv_context* c) { return (int)(c - gFake->contexts.data()); }

ibv_device** fakeGetDeviceList(int* count) {
  if (gFake->listErrno) {
    errno = gFake->listErrno;
    return nullptr;
  }
  gFake->handles.assign(gFake->devices.size(), ibv_device{});
  gFake->contexts.assign(gFake->devices.size(), ibv_context{});
  auto** list = new ibv_device*[gFake->devices.size() + 1];
  for (size_t i = 0; i < gFake->devices.size(); i++) {
    snprintf(gFake->handles[i].name, sizeof(gFake->handles[i].name), "%s",
             gFake->devices[i].name.c_str());
    list[i] = &gFake->handles[i];
  }
  list[gFake->devices.size()] = nullptr;
  *count = (int)gFake->devices.size();
  return list;
}
void fakeFreeDeviceList(ibv_device** list) {
  gFake->freed++;
  delete[] list;
}
const char* fakeGetDeviceName(ibv_device* d) { return d->name; }
ibv_context* fakeOpenDevice(ibv_device* d) {
  const FakeDevice& f = gFake->devices[indexOf(d)];
  if (f.openErrno) {
    errno = f.openErrno;
    return nullptr;
  }
  gFake->opened++;
  ibv_context* c = &gFake->contexts[indexOf(d)];
  c->device = d;
  return c;
}
int fakeCloseDevice(ibv_context*) {
  gFake->closed++;
  return 0;
}
int fakeQueryDevice(ibv_context* c, ibv_device_attr* attr) {
  const FakeDevice& f = gFake->devices[indexOf(c)];
  if (f.queryDeviceRc) return f.queryDeviceRc;
  attr->node_guid = f.guidBigEndian;
  attr->phys_port_cnt = (uint8_t)f.ports.size();
  return 0;
}
int fakeQueryPort(ibv_context* c, uint8_t port, ibv_port_attr* attr) {
  const FakeDevice& f = gFake->devices[indexOf(c)];
  if (f.portRc[port - 1]) return f.portRc[port - 1];
  *attr = f.ports[port - 1];
  return 0;
}
int fakeQueryGid(ibv_context* c, uint8_t port, int index, ibv_gid* gid) {
  const FakeDevice& f = gFake->devices[indexOf(c)];
  if (index != 0 || f.gidRc[port - 1]) return f.gidRc[port - 1] ? f.gidRc[port - 1] : EINVAL;
  memset(gid->raw, 0, sizeof(gid->raw));
  gid->raw[0] = 0xfe;
  gid->raw[1] = 0x80;
  gid->raw[15] = port;
  return 0;
}

const VerbsApi kFakeApi = {fakeGetDeviceList, fakeFreeDeviceList, fakeGetDeviceName,
                           fakeOpenDevice,    fakeCloseDevice,    fakeQueryDevice,
                           fakeQueryPort,     fakeQueryGid};

ibv_port_attr portAttr(int state, int linkLayer, unsigned speed, unsigned width) {
  ibv_port_attr a;
  memset(&a, 0, sizeof(a));
  a.state = (ibv_port_state)state;
  a.link_layer = (uint8_t)linkLayer;
  a.active_speed = (uint8_t)speed;
  a.active_width = (uint8_t)width;
  return a;
}

class RdmaVerbsScan : public ::testing::Test {
 protected:
  void SetUp() override { gFake = &fake; }
  void TearDown() override { gFake = nullptr; }
  FakeVerbs fake;
};

TEST_F(RdmaVerbsScan, NoKernelSupportIsAnEmptyListNotAFailure) {
  fake.listErrno = ENOSYS;  // what libibverbs says on a host without an RDMA driver
  RdmaScan scan;
  scanRdmaDevices(kFakeApi, "/nonexistent", &scan);
  EXPECT_TRUE(scan.devices.empty());
  EXPECT_EQ(scan.status, "no RDMA devices (libibverbs found none)");
  EXPECT_EQ(fake.freed, 0);
}

TEST_F(RdmaVerbsScan, NoProviderLibraryIsAnEmptyListNotAFailure) {
  // Without provider libraries libibverbs lists no device at all.
  RdmaScan scan;
  scanRdmaDevices(kFakeApi, "/nonexistent", &scan);
  EXPECT_TRUE(scan.devices.empty());
  EXPECT_EQ(scan.status, "no RDMA devices (libibverbs found none)");
  EXPECT_EQ(fake.freed, 1);
}

TEST_F(RdmaVerbsScan, AListingErrorIsNamed) {
  fake.listErrno = EACCES;
  RdmaScan scan;
  scanRdmaDevices(kFakeApi, "/nonexistent", &scan);
  EXPECT_TRUE(scan.devices.empty());
  EXPECT_EQ(scan.status, "no RDMA devices (libibverbs could not list them: Permission denied)");
}

TEST_F(RdmaVerbsScan, DevicesPortsAndFailuresAreRecorded) {
  FakeDevice bad;
  bad.name = "mlx5_0";
  bad.openErrno = ENODEV;
  FakeDevice good;
  good.name = "mlx5_1";
  good.guidBigEndian = htobe64(0x0002c90300102030ull);
  good.ports = {portAttr(kActive, kInfiniBand, kHdr, k4x), portAttr(kDown, kEthernet, 1, 1),
                portAttr(kActive, kEthernet, kEdr, k4x)};
  good.portRc = {0, 0, EINVAL};
  good.gidRc = {0, ENOENT, 0};
  FakeDevice noQuery;
  noQuery.name = "mlx5_2";
  noQuery.queryDeviceRc = EIO;
  fake.devices = {bad, good, noQuery};
  RdmaScan scan;
  scanRdmaDevices(kFakeApi, "/nonexistent", &scan);
  ASSERT_EQ(scan.devices.size(), 3u);
  EXPECT_EQ(scan.devices[0].name, "mlx5_0");
  EXPECT_EQ(scan.devices[0].error, "ibv_open_device failed: No such device");
  EXPECT_TRUE(scan.devices[0].ports.empty());
  const RdmaDeviceFacts& g = scan.devices[1];
  EXPECT_EQ(g.error, "");
  EXPECT_EQ(g.nodeGuid, 0x0002c90300102030ull);  // host order after be64toh
  ASSERT_EQ(g.ports.size(), 3u);
  EXPECT_EQ(g.ports[0].port, 1);
  EXPECT_EQ(g.ports[0].state, kActive);
  EXPECT_EQ(g.ports[0].linkLayer, kInfiniBand);
  EXPECT_EQ(g.ports[0].activeSpeed, kHdr);
  EXPECT_EQ(g.ports[0].activeWidth, k4x);
  EXPECT_TRUE(g.ports[0].hasGid);
  EXPECT_EQ(g.ports[0].gid[15], 1);
  EXPECT_FALSE(g.ports[1].hasGid);       // no GID: unknown, not an error
  EXPECT_EQ(g.ports[1].error, "");
  EXPECT_EQ(g.ports[2].error, "ibv_query_port failed: Invalid argument");
  EXPECT_EQ(scan.devices[2].error, "ibv_query_device failed: Input/output error");
  // Every device that was opened is closed again; the list is freed once.
  EXPECT_EQ(fake.opened, 2);
  EXPECT_EQ(fake.closed, 2);
  EXPECT_EQ(fake.freed, 1);
  EXPECT_EQ(scan.status, "");
}

TEST(RdmaVerbs, TheSystemLibraryAnswersOnThisHost) {
  // Whatever this host has, the real calls return and never fail discovery.
  RdmaScan scan;
  scanRdmaDevices(systemVerbsApi(), "/sys", &scan);
  struct stat st;
  if (stat("/sys/class/infiniband", &st) != 0) {
    EXPECT_TRUE(scan.devices.empty());
    EXPECT_EQ(scan.status, "no RDMA devices (libibverbs found none)");
  }
  for (const RdmaDeviceFacts& d : scan.devices) EXPECT_FALSE(d.name.empty());
}

// ---------------------------------------------------------------------------------------------
// sysfs facts from a directory of sysfs' shape

int shell(const std::string& cmd) { return system(cmd.c_str()); }

struct FakeSysfs {
  std::string root;
  FakeSysfs() {
    char dir[] = "/tmp/mixccl_rdma_sysfs_XXXXXX";
    root = mkdtemp(dir) ? dir : "";
  }
  ~FakeSysfs() {
    if (!root.empty()) shell("rm -rf '" + root + "'");
  }
  void mkdirs(const std::string& rel) {
    ASSERT_EQ(shell("mkdir -p '" + root + "/" + rel + "'"), 0) << rel;
  }
  void write(const std::string& rel, const std::string& text) {
    FILE* f = fopen((root + "/" + rel).c_str(), "w");
    ASSERT_NE(f, nullptr) << rel;
    fputs(text.c_str(), f);
    fclose(f);
  }
  void link(const std::string& target, const std::string& rel) {
    ASSERT_EQ(symlink(target.c_str(), (root + "/" + rel).c_str()), 0) << rel;
  }
};

TEST(RdmaSysfs, PciFunctionNumaNodeAndInterfaces) {
  FakeSysfs fs;
  ASSERT_FALSE(fs.root.empty());
  const std::string fn = "devices/pci0000:00/0000:00:01.0/0000:03:00.0";
  fs.mkdirs(fn + "/net/ens3f0");
  fs.mkdirs(fn + "/net/ens3f1");
  fs.write(fn + "/numa_node", "1\n");
  fs.write(fn + "/net/ens3f0/dev_port", "0\n");
  fs.write(fn + "/net/ens3f1/dev_port", "1\n");
  fs.mkdirs("class/infiniband/mlx4_0/ports/1/gid_attrs/ndevs");
  fs.mkdirs("class/infiniband/mlx4_0/ports/2/gid_attrs/ndevs");
  fs.write("class/infiniband/mlx4_0/ports/1/gid_attrs/ndevs/0", "ens3f0\n");
  fs.link("../../../" + fn, "class/infiniband/mlx4_0/device");

  RdmaDeviceFacts f;
  f.name = "mlx4_0";
  f.ports.resize(2);
  f.ports[0].port = 1;
  f.ports[1].port = 2;
  readRdmaSysfs(fs.root, &f);
  EXPECT_EQ(f.pciBusId, "0000:03:00.0");
  EXPECT_EQ(f.sysfsNumaNode, 1);
  ASSERT_EQ(f.netdevs.size(), 2u);
  EXPECT_EQ(f.netdevs[0].name, "ens3f0");
  EXPECT_EQ(f.netdevs[0].devPort, 0);
  EXPECT_EQ(f.netdevs[1].name, "ens3f1");
  EXPECT_EQ(f.netdevs[1].devPort, 1);
  EXPECT_EQ(f.ports[0].gidNetdev, "ens3f0");
  EXPECT_EQ(f.ports[1].gidNetdev, "");  // no GID 0 interface (IB, or none yet)
}

TEST(RdmaSysfs, MissingFilesLeaveTheDefaults) {
  FakeSysfs fs;
  ASSERT_FALSE(fs.root.empty());
  // A device whose parent is not a PCI function (software RDMA) and no numa_node.
  fs.mkdirs("devices/virtual/rxe");
  fs.mkdirs("class/infiniband/rxe0");
  fs.link("../../../devices/virtual/rxe", "class/infiniband/rxe0/device");
  fs.write("devices/virtual/rxe/numa_node", "-1\n");
  RdmaDeviceFacts f;
  f.name = "rxe0";
  readRdmaSysfs(fs.root, &f);
  EXPECT_EQ(f.pciBusId, "");
  EXPECT_EQ(f.sysfsNumaNode, -1);
  EXPECT_TRUE(f.netdevs.empty());
  RdmaDeviceFacts g;
  g.name = "absent0";
  readRdmaSysfs(fs.root, &g);
  EXPECT_EQ(g.pciBusId, "");
  EXPECT_EQ(g.sysfsNumaNode, -1);
}

// ---------------------------------------------------------------------------------------------
// Reports

TEST(RdmaReport, JsonAndTextShowDevicesPortsAndNics) {
  LocalTopology t = loadSynthetic();
  RdmaScan scan;
  scan.devices.push_back(hca("mlx5_0", "0000:03:00.0", "ensA", port(1, kActive, kInfiniBand)));
  scan.devices[0].ports.push_back(port(2, kDown, kEthernet, 0, 0));
  scan.devices[0].ports[1].hasGid = false;
  placeRdmaDevices(scan, &t);
  TopologyView v;
  v.local = &t;
  json j = json::parse(topologyToJson(v));
  const json& r = j["local"]["rdma"];
  EXPECT_EQ(r["status"], "1 RDMA device(s) from libibverbs, 1 active port(s)");
  ASSERT_EQ(r["devices"].size(), 1u);
  const json& d = r["devices"][0];
  EXPECT_EQ(d["name"], "mlx5_0");
  EXPECT_EQ(d["nodeGuid"], "0002:c903:0010:2030");
  EXPECT_EQ(d["pciBusId"], "0000:03:00.0");
  EXPECT_EQ(d["onPciTree"], true);
  EXPECT_EQ(d["numaNode"], 0);
  EXPECT_TRUE(d["error"].is_null());
  EXPECT_EQ(d["netDevices"], json({"ensA"}));
  EXPECT_EQ(d["ports"][0]["state"], "active");
  EXPECT_EQ(d["ports"][0]["linkLayer"], "InfiniBand");
  EXPECT_EQ(d["ports"][0]["speed"], "HDR");
  EXPECT_EQ(d["ports"][0]["width"], 4);
  EXPECT_EQ(d["ports"][0]["gbps"], 200.0);
  EXPECT_EQ(d["ports"][0]["netDevice"], "ensA");
  EXPECT_EQ(d["ports"][1]["state"], "down");
  EXPECT_TRUE(d["ports"][1]["gbps"].is_null());
  EXPECT_TRUE(d["ports"][1]["gid"].is_null());
  EXPECT_EQ(j["local"]["counts"]["rdmaDevices"], 1);
  for (const json& n : j["local"]["nics"]) {
    if (n["name"] == "ensA") {
      EXPECT_EQ(n["rdmaDevice"], "mlx5_0");
      EXPECT_EQ(n["rdmaPort"], 1);
    } else {
      EXPECT_TRUE(n["rdmaDevice"].is_null()) << n;
      EXPECT_TRUE(n["rdmaPort"].is_null()) << n;
    }
  }
  std::string s = topologyToText(v);
  EXPECT_NE(s.find("RDMA: 1 RDMA device(s) from libibverbs, 1 active port(s)"), std::string::npos)
      << s;
  EXPECT_NE(s.find("port 1: active InfiniBand 4x HDR 200 Gb/s"), std::string::npos) << s;
  EXPECT_NE(s.find("port 2: down"), std::string::npos) << s;
  EXPECT_NE(s.find("rdma mlx5_0 port 1"), std::string::npos) << s;
}

TEST(RdmaReport, NoDevicesIsSaidPlainly) {
  LocalTopology t = loadSynthetic();
  t.rdma.clear();
  placeRdmaDevices(RdmaScan{}, &t);
  TopologyView v;
  v.local = &t;
  EXPECT_NE(topologyToText(v).find("RDMA: no RDMA devices (libibverbs found none)\n"),
            std::string::npos);
  json j = json::parse(topologyToJson(v));
  EXPECT_EQ(j["local"]["rdma"]["status"], "no RDMA devices (libibverbs found none)");
  EXPECT_TRUE(j["local"]["rdma"]["devices"].empty());
}

}  // namespace
}  // namespace mixccl
