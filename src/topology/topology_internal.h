// Shared by the files of src/topology only.
#pragma once

#include <hwloc.h>

#include <string>
#include <vector>

#include "topology/topology.h"

namespace mixccl {

struct TopologyHandle {
  hwloc_topology_t topo = nullptr;
  ~TopologyHandle() {
    if (topo) hwloc_topology_destroy(topo);
  }
};

// Stores the message for topologyLastError() and returns code.
Result topoError(Result code, const char* fmt, ...) __attribute__((format(printf, 2, 3)));
void clearTopoError();

// "0000:03:00.0" for a PCI device or PCI-PCI bridge.
std::string pciBusIdOf(hwloc_obj_t obj);

// The PCI function with this bus id (accepts "03:00.0" as domain 0), nullptr if absent.
hwloc_obj_t findPciObject(hwloc_topology_t topo, const std::string& busId);

// NUMA node os index of the CPU-side object an I/O object hangs off (-1: several or none).
int numaNodeOfIo(hwloc_topology_t topo, hwloc_obj_t io);

// The list form of a bitmap ("0-3,8").
std::string bitmapList(hwloc_const_bitmap_t set);

// sysfs.cc: a one-line attribute file without its trailing newline ("" when unreadable); the
// sorted entries of a directory (exists: whether it could be opened); "dddd:bb:dd.f".
std::string readSysfsText(const std::string& path);
std::vector<std::string> listSysfsDir(const std::string& path, bool* exists);
bool looksLikePciBusId(const std::string& s);

}  // namespace mixccl
