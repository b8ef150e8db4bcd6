// Tests of placing injected RDMA device descriptions (test_rdma_facts.h) on the synthetic
// two-socket topology, and of the NIC choice that follows: merging with the NICs hwloc knows,
// NUMA nodes on and off the PCI tree, active against down ports, the status line and the errors
// kept per device and port.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "test_rdma_facts.h"
#include "topology/rdma_facts.h"
#include "topology/topology.h"

namespace mixccl {
namespace {

using namespace rdmatest;

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

}  // namespace
}  // namespace mixccl
