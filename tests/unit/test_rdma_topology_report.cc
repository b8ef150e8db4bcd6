// Tests of the RDMA part of the topology report: devices, ports and the NICs they serve in the
// JSON and the text, and a host without devices said plainly.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>

#include "test_rdma_facts.h"
#include "topology/rdma_facts.h"
#include "topology/topology.h"

namespace mixccl {
namespace {

using namespace rdmatest;
using nlohmann::json;

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
