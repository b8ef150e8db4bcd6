// A hand-made hwloc XML topology for the topology tests: two packages, one NUMA node and two
// cores each.
//
// Package 0 (NUMA 0, CPUs 0-1):
//   host bridge 0000:[00-0f]
//     PCI bridge 0000:00:01.0 -> [01-03]            (the upstream port of a PCIe switch)
//       PCI bridge 0000:01:00.0 -> [02-02]
//         0000:02:00.0 GPU card0                    <- the device of the NIC tests
//       PCI bridge 0000:01:01.0 -> [03-03]
//         0000:03:00.0 NIC ensA + RDMA mlx5_0       (same switch as the GPU: 4 hops)
//         0000:03:00.1 NIC ensA2                    (same switch, same hops)
//     0000:00:02.0 NIC ensB                         (same host bridge: 4 hops)
//   host bridge 0000:[20-2f]
//     0000:20:00.0 NIC ensD                         (another host bridge, same NUMA node)
// Package 1 (NUMA 1, CPUs 2-3):
//   host bridge 0000:[10-1f]
//     0000:10:00.0 NIC ensC                         (other package)
//     0000:10:01.0 GPU card1
#pragma once

namespace mixccl {
namespace testdata {

inline const char* kTwoSocketXml = R"XML(<?xml version="1.0" encoding="UTF-8"?>
<!DOCTYPE topology SYSTEM "hwloc2.dtd">
<topology version="2.0">
  <object type="Machine" os_index="0" cpuset="0x0000000f" complete_cpuset="0x0000000f" allowed_cpuset="0x0000000f" nodeset="0x00000003" complete_nodeset="0x00000003" allowed_nodeset="0x00000003" gp_index="1">
    <info name="HostName" value="synthhost"/>
    <object type="Package" os_index="0" cpuset="0x00000003" complete_cpuset="0x00000003" nodeset="0x00000001" complete_nodeset="0x00000001" gp_index="2">
      <info name="CPUModel" value="Test CPU A"/>
      <object type="NUMANode" os_index="0" cpuset="0x00000003" complete_cpuset="0x00000003" nodeset="0x00000001" complete_nodeset="0x00000001" gp_index="3" local_memory="1073741824"/>
      <object type="Core" os_index="0" cpuset="0x00000001" complete_cpuset="0x00000001" nodeset="0x00000001" complete_nodeset="0x00000001" gp_index="4">
        <object type="PU" os_index="0" cpuset="0x00000001" complete_cpuset="0x00000001" nodeset="0x00000001" complete_nodeset="0x00000001" gp_index="5"/>
      </object>
      <object type="Core" os_index="1" cpuset="0x00000002" complete_cpuset="0x00000002" nodeset="0x00000001" complete_nodeset="0x00000001" gp_index="6">
        <object type="PU" os_index="1" cpuset="0x00000002" complete_cpuset="0x00000002" nodeset="0x00000001" complete_nodeset="0x00000001" gp_index="7"/>
      </object>
      <object type="Bridge" gp_index="20" bridge_type="0-1" depth="0" bridge_pci="0000:[00-0f]">
        <object type="Bridge" gp_index="21" bridge_type="1-1" depth="1" bridge_pci="0000:[01-03]" pci_busid="0000:00:01.0" pci_type="0604 [10b5:8747] [0000:0000] 00" pci_link_speed="15.75">
          <object type="Bridge" gp_index="22" bridge_type="1-1" depth="2" bridge_pci="0000:[02-02]" pci_busid="0000:01:00.0" pci_type="0604 [10b5:8747] [0000:0000] 00" pci_link_speed="15.75">
            <object type="PCIDev" gp_index="23" pci_busid="0000:02:00.0" pci_type="0302 [10de:20b0] [10de:134f] a1" pci_link_speed="15.75">
              <object type="OSDev" gp_index="24" name="card0" osdev_type="1"/>
            </object>
          </object>
          <object type="Bridge" gp_index="25" bridge_type="1-1" depth="2" bridge_pci="0000:[03-03]" pci_busid="0000:01:01.0" pci_type="0604 [10b5:8747] [0000:0000] 00" pci_link_speed="15.75">
            <object type="PCIDev" gp_index="26" pci_busid="0000:03:00.0" pci_type="0200 [15b3:1017] [15b3:0007] 00" pci_link_speed="15.75">
              <object type="OSDev" gp_index="27" name="ensA" osdev_type="2">
                <info name="Address" value="02:00:00:00:00:0a"/>
              </object>
              <object type="OSDev" gp_index="28" name="mlx5_0" osdev_type="3">
                <info name="Port1State" value="4"/>
              </object>
            </object>
            <object type="PCIDev" gp_index="29" pci_busid="0000:03:00.1" pci_type="0200 [15b3:1017] [15b3:0007] 00" pci_link_speed="15.75">
              <object type="OSDev" gp_index="30" name="ensA2" osdev_type="2"/>
            </object>
          </object>
        </object>
        <object type="PCIDev" gp_index="31" pci_busid="0000:00:02.0" pci_type="0200 [8086:1521] [8086:0001] 01" pci_link_speed="1.0">
          <object type="OSDev" gp_index="32" name="ensB" osdev_type="2"/>
        </object>
      </object>
      <object type="Bridge" gp_index="33" bridge_type="0-1" depth="0" bridge_pci="0000:[20-2f]">
        <object type="PCIDev" gp_index="34" pci_busid="0000:20:00.0" pci_type="0200 [8086:1521] [8086:0001] 01" pci_link_speed="1.0">
          <object type="OSDev" gp_index="35" name="ensD" osdev_type="2"/>
        </object>
      </object>
    </object>
    <object type="Package" os_index="1" cpuset="0x0000000c" complete_cpuset="0x0000000c" nodeset="0x00000002" complete_nodeset="0x00000002" gp_index="8">
      <info name="CPUModel" value="Test CPU A"/>
      <object type="NUMANode" os_index="1" cpuset="0x0000000c" complete_cpuset="0x0000000c" nodeset="0x00000002" complete_nodeset="0x00000002" gp_index="9" local_memory="2147483648"/>
      <object type="Core" os_index="2" cpuset="0x00000004" complete_cpuset="0x00000004" nodeset="0x00000002" complete_nodeset="0x00000002" gp_index="10">
        <object type="PU" os_index="2" cpuset="0x00000004" complete_cpuset="0x00000004" nodeset="0x00000002" complete_nodeset="0x00000002" gp_index="11"/>
      </object>
      <object type="Core" os_index="3" cpuset="0x00000008" complete_cpuset="0x00000008" nodeset="0x00000002" complete_nodeset="0x00000002" gp_index="12">
        <object type="PU" os_index="3" cpuset="0x00000008" complete_cpuset="0x00000008" nodeset="0x00000002" complete_nodeset="0x00000002" gp_index="13"/>
      </object>
      <object type="Bridge" gp_index="40" bridge_type="0-1" depth="0" bridge_pci="0000:[10-1f]">
        <object type="PCIDev" gp_index="41" pci_busid="0000:10:00.0" pci_type="0200 [15b3:1017] [15b3:0007] 00" pci_link_speed="15.75">
          <object type="OSDev" gp_index="42" name="ensC" osdev_type="2"/>
        </object>
        <object type="PCIDev" gp_index="43" pci_busid="0000:10:01.0" pci_type="0302 [10de:20b0] [10de:134f] a1" pci_link_speed="15.75">
          <object type="OSDev" gp_index="44" name="card1" osdev_type="1"/>
        </object>
      </object>
    </object>
  </object>
</topology>
)XML";

}  // namespace testdata
}  // namespace mixccl
