// Distances on the PCI tree, the choice of a rank's NIC, and binding a thread near a device.
#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "topology/rdma_facts.h"
#include "topology/topology_internal.h"

namespace mixccl {
namespace {

// hwloc's own common-ancestor helper compares depths, which I/O objects do not have in the
// normal sense; walk the parent chains instead.
PciDistance distanceBetween(hwloc_obj_t a, hwloc_obj_t b, int* hops) {
  if (a == b) {
    *hops = 0;
    return PciDistance::kSameDevice;
  }
  std::vector<hwloc_obj_t> chainA;
  for (hwloc_obj_t o = a; o; o = o->parent) chainA.push_back(o);
  hwloc_obj_t anc = nullptr;
  int stepsA = 0, stepsB = 0;
  for (hwloc_obj_t o = b; o; o = o->parent, stepsB++) {
    auto it = std::find(chainA.begin(), chainA.end(), o);
    if (it != chainA.end()) {
      anc = o;
      stepsA = (int)(it - chainA.begin());
      break;
    }
  }
  if (!anc) {
    *hops = -1;
    return PciDistance::kUnknown;
  }
  *hops = stepsA + stepsB;
  if (anc->type == HWLOC_OBJ_BRIDGE)
    return anc->attr->bridge.upstream_type == HWLOC_OBJ_BRIDGE_HOST ? PciDistance::kHostBridge
                                                                     : PciDistance::kPciSwitch;
  if (anc->type == HWLOC_OBJ_PCI_DEVICE) return PciDistance::kPciSwitch;
  if (anc->nodeset && hwloc_bitmap_weight(anc->nodeset) <= 1) return PciDistance::kNumaNode;
  return PciDistance::kSystem;
}

const TopoNic* findNic(const LocalTopology& local, const std::string& name) {
  for (const TopoNic& n : local.nics)
    if (n.name == name) return &n;
  return nullptr;
}

hwloc_topology_t topoOf(const LocalTopology& local) {
  return local.handle ? local.handle->topo : nullptr;
}

// An OS device with this name (network interface, RDMA device, GPU, ...).
hwloc_obj_t findOsDevice(hwloc_topology_t topo, const std::string& name) {
  for (hwloc_obj_t o = hwloc_get_next_osdev(topo, nullptr); o; o = hwloc_get_next_osdev(topo, o))
    if (o->name && name == o->name) return o;
  return nullptr;
}

// Resolves a NIC name or PCI bus id to the CPU-side object it hangs off.
Result nearObject(const LocalTopology& local, const std::string& target, hwloc_obj_t* anc,
                  BindPlan* plan) {
  *anc = nullptr;
  hwloc_topology_t topo = topoOf(local);
  if (!topo) return topoError(mixcclInvalidUsage, "the topology was not discovered");
  if (target.empty()) {
    plan->note = "no binding: no NIC or device to bind near";
    return mixcclSuccess;
  }
  hwloc_obj_t obj = findOsDevice(topo, target);
  if (!obj) {
    const TopoNic* nic = findNic(local, target);
    std::string bus = nic ? nic->pciBusId : target;
    if (!bus.empty()) obj = findPciObject(topo, bus);
  }
  if (!obj) {
    plan->note = "no binding: " + target + " has no position in the topology (virtual or unknown)";
    return mixcclSuccess;
  }
  *anc = hwloc_get_non_io_ancestor_obj(topo, obj);
  if (!*anc || !(*anc)->cpuset || hwloc_bitmap_iszero((*anc)->cpuset)) {
    *anc = nullptr;
    plan->note = "no binding: no CPUs are attached near " + target;
  }
  return mixcclSuccess;
}

// One candidate interface as the NIC choice sees it.
struct NicRank {
  int index = -1;                        // in the candidate list
  PciDistance distance = PciDistance::kUnknown;
  int hops = -1;
  const TopoRdmaDevice* device = nullptr;
  const TopoRdmaPort* port = nullptr;    // its active RDMA port, nullptr: a plain NIC
};

// The order of the NIC choice (docs/topology.md): the PCI distance class first, because
// crossing a host bridge or the CPU interconnect costs more than any NIC difference; within one
// class an active RDMA port beats a plain NIC (the transports can then bypass the kernel) and a
// faster port a slower one; then fewer hops; then the socket layer's order.
bool nicRankBefore(const NicRank& a, const NicRank& b) {
  if (a.distance != b.distance) return a.distance < b.distance;
  if ((a.port != nullptr) != (b.port != nullptr)) return a.port != nullptr;
  double ga = a.port ? a.port->gbps : 0, gb = b.port ? b.port->gbps : 0;
  if (ga != gb) return ga > gb;
  if (a.hops != b.hops) return a.hops < b.hops;
  return a.index < b.index;
}

}  // namespace

const char* pciDistanceName(PciDistance d) {
  switch (d) {
    case PciDistance::kSameDevice: return "same-device";
    case PciDistance::kPciSwitch: return "pci-switch";
    case PciDistance::kHostBridge: return "host-bridge";
    case PciDistance::kNumaNode: return "numa-node";
    case PciDistance::kSystem: return "system";
    case PciDistance::kUnknown: return "unknown";
  }
  return "unknown";
}

PciDistance pciDistance(const LocalTopology& local, const std::string& busIdA,
                        const std::string& busIdB, int* hops) {
  int h = -1;
  PciDistance d = PciDistance::kUnknown;
  hwloc_topology_t topo = topoOf(local);
  hwloc_obj_t a = topo && !busIdA.empty() ? findPciObject(topo, busIdA) : nullptr;
  hwloc_obj_t b = topo && !busIdB.empty() ? findPciObject(topo, busIdB) : nullptr;
  if (a && b) d = distanceBetween(a, b, &h);
  if (hops) *hops = h;
  return d;
}

Result chooseNic(const LocalTopology& local, const std::string& devicePciBusId,
                 const std::vector<std::string>& candidates, const std::string& fallback,
                 NicChoice* out) {
  clearTopoError();
  if (!out) return topoError(mixcclInvalidArgument, "chooseNic: out is NULL");
  std::string fb = !fallback.empty() ? fallback : candidates.empty() ? "" : candidates[0];
  if (fb.empty())
    return topoError(mixcclInvalidArgument, "chooseNic: no candidate interface and no fallback");

  auto takeFallback = [&](const std::string& why) {
    NicChoice c;
    c.name = fb;
    if (const TopoNic* n = findNic(local, fb)) {
      c.pciBusId = n->pciBusId;
      c.numaNode = n->numaNode;
    }
    c.distance = pciDistance(local, devicePciBusId, c.pciBusId, &c.hops);
    c.byPciDistance = false;
    c.reason = why + "; using the socket layer's interface " + fb;
    *out = c;
    return mixcclSuccess;
  };

  hwloc_topology_t topo = topoOf(local);
  if (devicePciBusId.empty()) return takeFallback("no device PCI bus id");
  if (!topo) return takeFallback("no topology");
  hwloc_obj_t dev = findPciObject(topo, devicePciBusId);
  if (!dev) return takeFallback("device " + devicePciBusId + " is not in the topology");

  std::vector<NicRank> ranked;
  for (size_t i = 0; i < candidates.size(); i++) {
    const TopoNic* nic = findNic(local, candidates[i]);
    if (!nic || nic->pciBusId.empty()) continue;
    hwloc_obj_t o = findPciObject(topo, nic->pciBusId);
    if (!o) continue;
    NicRank r;
    r.index = (int)i;
    r.distance = distanceBetween(dev, o, &r.hops);
    if (r.distance == PciDistance::kUnknown) continue;
    r.port = activeRdmaPortOfNic(local, nic->name, &r.device);
    ranked.push_back(r);
  }
  if (ranked.empty()) return takeFallback("no candidate interface has a PCI position");
  const NicRank* best = &ranked[0];
  for (const NicRank& r : ranked)
    if (nicRankBefore(r, *best)) best = &r;
  // Name the plain NIC an RDMA port won against, so that the log explains a surprising pick.
  const NicRank* plainTie = nullptr;
  for (const NicRank& r : ranked)
    if (best->port && !r.port && r.distance == best->distance &&
        (!plainTie || r.index < plainTie->index))
      plainTie = &r;
  const TopoNic* nic = findNic(local, candidates[best->index]);
  NicChoice c;
  c.name = nic->name;
  c.pciBusId = nic->pciBusId;
  c.numaNode = nic->numaNode;
  c.distance = best->distance;
  c.hops = best->hops;
  c.byPciDistance = true;
  c.reason = "nearest to device " + devicePciBusId + ": " + pciDistanceName(best->distance) +
             ", " + std::to_string(best->hops) + " hops";
  if (best->port) {
    c.rdmaDevice = best->device->name;
    c.rdmaPort = best->port->port;
    c.rdmaGbps = best->port->gbps;
    char rate[32] = "rate unknown";
    if (best->port->gbps > 0) snprintf(rate, sizeof(rate), "%g Gb/s", best->port->gbps);
    c.reason += "; RDMA " + c.rdmaDevice + " port " + std::to_string(c.rdmaPort) + " active (" +
                best->port->linkLayer + ", " + rate + ")";
    if (plainTie)
      c.reason += ", preferred to " + candidates[plainTie->index] + " at the same distance";
  }
  *out = c;
  return mixcclSuccess;
}

Result planBindNear(const LocalTopology& local, const std::string& target, BindPlan* out) {
  clearTopoError();
  if (!out) return topoError(mixcclInvalidArgument, "planBindNear: out is NULL");
  BindPlan plan;
  hwloc_obj_t anc = nullptr;
  MIXCCL_CHECK(nearObject(local, target, &anc, &plan));
  if (!anc) {
    *out = plan;
    return mixcclSuccess;
  }
  hwloc_topology_t topo = topoOf(local);
  plan.cpus = bitmapList(anc->cpuset);
  plan.numaNode =
      anc->nodeset && hwloc_bitmap_weight(anc->nodeset) == 1 ? hwloc_bitmap_first(anc->nodeset) : -1;
  if (local.numaNodes.size() <= 1) {
    plan.note = "no binding: one NUMA node, every CPU is equally near " + target;
  } else if (hwloc_bitmap_isincluded(hwloc_get_root_obj(topo)->cpuset, anc->cpuset)) {
    plan.note = "no binding: " + target + " is equally near all CPUs";
  } else {
    plan.bind = true;
    plan.note = "bind near " + target + ": CPUs " + plan.cpus +
                (plan.numaNode >= 0 ? " (NUMA node " + std::to_string(plan.numaNode) + ")" : "");
  }
  *out = plan;
  return mixcclSuccess;
}

Result bindThreadNear(const LocalTopology& local, const std::string& target, BindPlan* out) {
  MIXCCL_CHECK(planBindNear(local, target, out));
  if (!out->bind) return mixcclSuccess;
  if (!local.thisSystem)
    return topoError(mixcclInvalidUsage,
                     "cannot bind near %s: the topology was not discovered on this system",
                     target.c_str());
  hwloc_topology_t topo = topoOf(local);
  hwloc_bitmap_t set = hwloc_bitmap_alloc();
  if (!set) return topoError(mixcclSystemError, "out of memory");
  int rc = hwloc_bitmap_list_sscanf(set, out->cpus.c_str());
  if (rc == 0) rc = hwloc_set_cpubind(topo, set, HWLOC_CPUBIND_THREAD);
  int err = errno;
  hwloc_bitmap_free(set);
  if (rc != 0) {
    out->bind = false;
    return topoError(mixcclSystemError, "binding the thread to CPUs %s near %s failed: %s",
                     out->cpus.c_str(), target.c_str(), strerror(err));
  }
  out->note = "bound the thread near " + target + ": CPUs " + out->cpus +
              (out->numaNode >= 0 ? " (NUMA node " + std::to_string(out->numaNode) + ")" : "");
  return mixcclSuccess;
}

}  // namespace mixccl
