// Placing scanned RDMA devices on the host topology: on the PCI tree beside the GPUs and NICs
// hwloc found, and onto the NIC records of their network interfaces. Pure logic over the facts
// (rdma_facts.h), so that tests can feed it any device description.
#include <string>
#include <vector>

#include "topology/rdma_facts.h"

namespace mixccl {
namespace {

const TopoRdmaDevice* hwlocRecord(const LocalTopology& local, const std::string& name) {
  for (const TopoRdmaDevice& r : local.rdma)
    if (r.name == name) return &r;
  return nullptr;
}

TopoNic* nicNamed(LocalTopology* local, const std::string& name) {
  for (TopoNic& n : local->nics)
    if (n.name == name) return &n;
  return nullptr;
}

// The interface a port is reached through: the GID's own interface when sysfs names it (RoCE),
// else the interface whose dev_port is this port, else the only interface of a one-port
// device that does not say (older kernels have no dev_port).
std::string portNetdev(const RdmaDeviceFacts& f, const RdmaPortFacts& p) {
  if (!p.gidNetdev.empty()) return p.gidNetdev;
  for (const RdmaNetdevFacts& n : f.netdevs)
    if (n.devPort >= 0 && n.devPort + 1 == p.port) return n.name;
  if (f.netdevs.size() == 1 && f.netdevs[0].devPort < 0 && f.ports.size() == 1)
    return f.netdevs[0].name;
  return "";
}

TopoRdmaPort decodePort(const RdmaDeviceFacts& f, const RdmaPortFacts& p) {
  TopoRdmaPort t;
  t.port = p.port;
  t.netDevice = portNetdev(f, p);
  if (!p.error.empty()) {
    t.error = p.error;
    return t;
  }
  t.state = rdmaPortStateName(p.state);
  t.linkLayer = rdmaLinkLayerName(p.linkLayer);
  t.speed = rdmaSpeedName(p.activeSpeed);
  t.width = rdmaWidthLanes(p.activeWidth);
  t.gbps = rdmaPortGbps(p.activeSpeed, p.activeWidth);
  if (p.hasGid) t.gid = rdmaGidText(p.gid);
  return t;
}

TopoRdmaDevice placeOne(const RdmaDeviceFacts& f, LocalTopology* local) {
  const TopoRdmaDevice* h = hwlocRecord(*local, f.name);
  TopoRdmaDevice r;
  r.name = f.name;
  r.error = f.error;
  if (f.nodeGuid) r.nodeGuid = rdmaGuidText(f.nodeGuid);
  else if (h) r.nodeGuid = h->nodeGuid;
  r.pciBusId = !f.pciBusId.empty() ? f.pciBusId : h ? h->pciBusId : "";
  for (TopoPciObject& p : local->pci) {
    if (p.kind == TopoPciObject::kHostBridge || r.pciBusId.empty() ||
        !samePciBusId(p.busId, r.pciBusId))
      continue;
    // hwloc's spelling of the bus id, so that every record of one function compares equal.
    r.pciBusId = p.busId;
    r.onPciTree = true;
    r.numaNode = p.numaNode;
    bool listed = false;
    for (const std::string& o : p.osDevices) listed = listed || o == f.name;
    if (!listed) p.osDevices.push_back(f.name);
    break;
  }
  if (!r.onPciTree) r.numaNode = h && h->numaNode >= 0 ? h->numaNode : f.sysfsNumaNode;
  for (const RdmaNetdevFacts& n : f.netdevs) r.netDevices.push_back(n.name);
  for (const RdmaPortFacts& p : f.ports) {
    r.ports.push_back(decodePort(f, p));
    const std::string& nd = r.ports.back().netDevice;
    bool listed = nd.empty();
    for (const std::string& n : r.netDevices) listed = listed || n == nd;
    if (!listed) r.netDevices.push_back(nd);
  }
  return r;
}

// Gives each NIC that is an interface of an RDMA device that device and port, and the
// device's PCI position when the NIC had none (hwloc filtered it; the kernel listed it).
void mergeIntoNics(const TopoRdmaDevice& d, LocalTopology* local) {
  for (const std::string& nd : d.netDevices) {
    TopoNic* nic = nicNamed(local, nd);
    if (!nic) continue;
    nic->rdmaDevice = d.name;
    nic->rdmaPort = 0;
    for (const TopoRdmaPort& p : d.ports)
      if (p.netDevice == nd) {
        nic->rdmaPort = p.port;
        break;
      }
    if (nic->pciBusId.empty() && d.onPciTree) nic->pciBusId = d.pciBusId;
    if (nic->numaNode < 0) nic->numaNode = d.numaNode;
  }
}

}  // namespace

void placeRdmaDevices(const RdmaScan& scan, LocalTopology* local) {
  std::vector<TopoRdmaDevice> placed;
  int activePorts = 0;
  for (const RdmaDeviceFacts& f : scan.devices) {
    placed.push_back(placeOne(f, local));
    for (const TopoRdmaPort& p : placed.back().ports) activePorts += p.active();
  }
  // hwloc sees devices of the kernel driver; libibverbs only those it has a provider for. The
  // difference is what a missing provider library looks like, so it is named.
  std::string hwlocOnly;
  for (const TopoRdmaDevice& h : local->rdma) {
    bool scanned = false;
    for (const RdmaDeviceFacts& f : scan.devices) scanned = scanned || f.name == h.name;
    if (!scanned) hwlocOnly += (hwlocOnly.empty() ? "" : ", ") + h.name;
  }
  for (TopoNic& n : local->nics) {
    n.rdmaDevice.clear();
    n.rdmaPort = 0;
  }
  for (const TopoRdmaDevice& d : placed) mergeIntoNics(d, local);
  local->rdma = placed;
  if (placed.empty())
    local->rdmaStatus = scan.status.empty() ? kRdmaNoneFound : scan.status;
  else
    local->rdmaStatus = std::to_string(placed.size()) + " RDMA device(s) from libibverbs, " +
                        std::to_string(activePorts) + " active port(s)";
  if (!hwlocOnly.empty())
    local->rdmaStatus += "; hwloc also lists " + hwlocOnly +
                         ", which libibverbs does not (no provider library for it?)";
}

const TopoRdmaPort* activeRdmaPortOfNic(const LocalTopology& local, const std::string& nicName,
                                        const TopoRdmaDevice** device) {
  if (device) *device = nullptr;
  const TopoNic* nic = nullptr;
  for (const TopoNic& n : local.nics)
    if (n.name == nicName) nic = &n;
  if (!nic || nic->rdmaDevice.empty() || nic->rdmaPort <= 0) return nullptr;
  for (const TopoRdmaDevice& d : local.rdma) {
    if (d.name != nic->rdmaDevice) continue;
    for (const TopoRdmaPort& p : d.ports)
      if (p.port == nic->rdmaPort && p.active()) {
        if (device) *device = &d;
        return &p;
      }
  }
  return nullptr;
}

}  // namespace mixccl
