// Builders of the RDMA device descriptions the RDMA tests inject (what a libibverbs scan would
// report), libibverbs' raw port values, and the synthetic two-socket topology
// (test_topology_xml.h) they are placed on.
#pragma once

#include <gtest/gtest.h>

#include <string>

#include "test_topology_xml.h"
#include "topology/rdma_facts.h"
#include "topology/topology.h"

namespace mixccl {
namespace rdmatest {

// libibverbs' raw values (ibv_query_port(3)).
constexpr int kDown = 1, kInit = 2, kActive = 4;
constexpr int kInfiniBand = 1, kEthernet = 2;
constexpr unsigned kEdr = 32, kHdr = 64;
constexpr unsigned k4x = 2;

inline LocalTopology loadSynthetic() {
  LocalTopology t;
  EXPECT_EQ(loadTopologyFromXml(testdata::kTwoSocketXml, &t), mixcclSuccess) << topologyLastError();
  return t;
}

inline RdmaPortFacts port(int n, int state, int linkLayer, unsigned speed = kHdr,
                          unsigned width = k4x) {
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
inline RdmaDeviceFacts hca(const std::string& name, const std::string& bus,
                           const std::string& netdev, RdmaPortFacts p) {
  RdmaDeviceFacts d;
  d.name = name;
  d.nodeGuid = 0x0002c90300102030ull;
  d.pciBusId = bus;
  if (!netdev.empty()) d.netdevs.push_back({netdev, 0});
  d.ports.push_back(p);
  return d;
}

}  // namespace rdmatest
}  // namespace mixccl
