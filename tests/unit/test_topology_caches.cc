// Tests of the cache levels the topology layer reads from hwloc (TopoCaches: the smallest
// instance of L2 and L3 and the cores sharing it), which size the shared-memory rings
// (transport/shm_sizing.h), and their place in the topology JSON.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "test_topology_xml.h"
#include "topology/topology.h"

namespace mixccl {
namespace {

using nlohmann::json;

// One package: an 8 MiB L3 over three cores, core 0 with its own 2 MiB L2, cores 1-2 sharing a
// 1 MiB L2 (a hybrid CPU's cluster), and an L1i that must not count.
const char* kCachesXml = R"XML(<?xml version="1.0" encoding="UTF-8"?>
<!DOCTYPE topology SYSTEM "hwloc2.dtd">
<topology version="2.0">
  <object type="Machine" os_index="0" cpuset="0x00000007" complete_cpuset="0x00000007" allowed_cpuset="0x00000007" nodeset="0x00000001" complete_nodeset="0x00000001" allowed_nodeset="0x00000001" gp_index="1">
    <object type="Package" os_index="0" cpuset="0x00000007" complete_cpuset="0x00000007" nodeset="0x00000001" complete_nodeset="0x00000001" gp_index="2">
      <object type="NUMANode" os_index="0" cpuset="0x00000007" complete_cpuset="0x00000007" nodeset="0x00000001" complete_nodeset="0x00000001" gp_index="3" local_memory="1073741824"/>
      <object type="L3Cache" cpuset="0x00000007" complete_cpuset="0x00000007" nodeset="0x00000001" complete_nodeset="0x00000001" gp_index="4" cache_size="8388608" depth="3" cache_linesize="64" cache_associativity="16" cache_type="0">
        <object type="L2Cache" cpuset="0x00000001" complete_cpuset="0x00000001" nodeset="0x00000001" complete_nodeset="0x00000001" gp_index="5" cache_size="2097152" depth="2" cache_linesize="64" cache_associativity="8" cache_type="0">
          <object type="L1iCache" cpuset="0x00000001" complete_cpuset="0x00000001" nodeset="0x00000001" complete_nodeset="0x00000001" gp_index="6" cache_size="32768" depth="1" cache_linesize="64" cache_associativity="8" cache_type="2">
            <object type="Core" os_index="0" cpuset="0x00000001" complete_cpuset="0x00000001" nodeset="0x00000001" complete_nodeset="0x00000001" gp_index="7">
              <object type="PU" os_index="0" cpuset="0x00000001" complete_cpuset="0x00000001" nodeset="0x00000001" complete_nodeset="0x00000001" gp_index="8"/>
            </object>
          </object>
        </object>
        <object type="L2Cache" cpuset="0x00000006" complete_cpuset="0x00000006" nodeset="0x00000001" complete_nodeset="0x00000001" gp_index="9" cache_size="1048576" depth="2" cache_linesize="64" cache_associativity="8" cache_type="0">
          <object type="Core" os_index="1" cpuset="0x00000002" complete_cpuset="0x00000002" nodeset="0x00000001" complete_nodeset="0x00000001" gp_index="10">
            <object type="PU" os_index="1" cpuset="0x00000002" complete_cpuset="0x00000002" nodeset="0x00000001" complete_nodeset="0x00000001" gp_index="11"/>
          </object>
          <object type="Core" os_index="2" cpuset="0x00000004" complete_cpuset="0x00000004" nodeset="0x00000001" complete_nodeset="0x00000001" gp_index="12">
            <object type="PU" os_index="2" cpuset="0x00000004" complete_cpuset="0x00000004" nodeset="0x00000001" complete_nodeset="0x00000001" gp_index="13"/>
          </object>
        </object>
      </object>
    </object>
  </object>
</topology>
)XML";

TEST(TopologyXml, CachesTakeTheSmallestInstanceAndItsCores) {
  LocalTopology t;
  ASSERT_EQ(loadTopologyFromXml(kCachesXml, &t), mixcclSuccess) << topologyLastError();
  EXPECT_EQ(t.cores, 3);
  EXPECT_EQ(t.caches.l2.bytes, 1048576u);
  EXPECT_EQ(t.caches.l2.cores, 2);
  EXPECT_EQ(t.caches.l2.instances, 2);
  EXPECT_EQ(t.caches.l3.bytes, 8388608u);
  EXPECT_EQ(t.caches.l3.cores, 3);
  EXPECT_EQ(t.caches.l3.instances, 1);
  TopologyView v;
  v.local = &t;
  json j = json::parse(topologyToJson(v));
  EXPECT_EQ(j["local"]["caches"]["l2"]["bytes"], 1048576);
  EXPECT_EQ(j["local"]["caches"]["l3"]["cores"], 3);
}

TEST(TopologyXml, NoCachesReportedMeansZero) {
  LocalTopology t;  // the two-socket XML lists no caches
  ASSERT_EQ(loadTopologyFromXml(testdata::kTwoSocketXml, &t), mixcclSuccess) << topologyLastError();
  EXPECT_EQ(t.caches.l2.bytes, 0u);
  EXPECT_EQ(t.caches.l3.instances, 0);
  TopologyView v;
  v.local = &t;
  EXPECT_TRUE(json::parse(topologyToJson(v))["local"]["caches"].empty());
}

}  // namespace
}  // namespace mixccl
