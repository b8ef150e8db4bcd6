// Discovering the host with hwloc, plus what hwloc leaves out: virtual network interfaces and
// their addresses (the kernel), and RDMA devices as libibverbs sees them (rdma_verbs.cc).
#include <arpa/inet.h>
#include <ifaddrs.h>
#include <limits.h>
#include <net/if.h>
#include <netinet/in.h>
#include <unistd.h>

#include <algorithm>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "bootstrap/peer_info.h"
#include "topology/rdma_facts.h"
#include "topology/rdma_verbs.h"
#include "topology/topology_internal.h"

namespace mixccl {
namespace {

thread_local std::string tlsTopoError;

const char* info(hwloc_obj_t obj, const char* name) {
  const char* v = hwloc_obj_get_info_by_name(obj, name);
  return v ? v : "";
}

std::string pciName(hwloc_obj_t obj) {
  std::string vendor = info(obj, "PCIVendor"), device = info(obj, "PCIDevice");
  if (vendor.empty()) return device;
  if (device.empty()) return vendor;
  return vendor + " " + device;
}

// Depth-first walk of the I/O tree hanging below one object.
void collectPci(hwloc_topology_t topo, hwloc_obj_t obj, int parent, int level,
                std::vector<TopoPciObject>* out) {
  for (hwloc_obj_t io = obj->io_first_child; io; io = io->next_sibling) {
    if (io->type != HWLOC_OBJ_BRIDGE && io->type != HWLOC_OBJ_PCI_DEVICE) continue;
    TopoPciObject p;
    p.parent = parent;
    p.level = level;
    p.numaNode = numaNodeOfIo(topo, io);
    if (io->type == HWLOC_OBJ_BRIDGE) {
      const auto& b = io->attr->bridge;
      p.kind = b.upstream_type == HWLOC_OBJ_BRIDGE_HOST ? TopoPciObject::kHostBridge
                                                        : TopoPciObject::kPciBridge;
      if (b.downstream_type == HWLOC_OBJ_BRIDGE_PCI) {
        char buf[32];
        snprintf(buf, sizeof(buf), "%04x:[%02x-%02x]", (unsigned)b.downstream.pci.domain,
                 (unsigned)b.downstream.pci.secondary_bus,
                 (unsigned)b.downstream.pci.subordinate_bus);
        p.downstream = buf;
      }
    } else {
      p.kind = TopoPciObject::kDevice;
    }
    if (p.kind != TopoPciObject::kHostBridge) {
      const auto& a = io->attr->pcidev;  // also the upstream side of a bridge
      p.busId = pciBusIdOf(io);
      p.classId = a.class_id;
      p.vendorId = a.vendor_id;
      p.deviceId = a.device_id;
      p.linkGBps = a.linkspeed;
      p.name = pciName(io);
    }
    for (hwloc_obj_t c = io->io_first_child; c; c = c->next_sibling)
      if (c->type == HWLOC_OBJ_OS_DEVICE && c->name) p.osDevices.push_back(c->name);
    out->push_back(p);
    collectPci(topo, io, (int)out->size() - 1, level + 1, out);
  }
}

void walkNormal(hwloc_topology_t topo, hwloc_obj_t obj, std::vector<TopoPciObject>* out) {
  collectPci(topo, obj, -1, 0, out);
  for (hwloc_obj_t c = obj->first_child; c; c = c->next_sibling) walkNormal(topo, c, out);
}

std::string parentPciBusId(hwloc_obj_t osdev) {
  hwloc_obj_t p = osdev->parent;
  if (p && (p->type == HWLOC_OBJ_PCI_DEVICE ||
            (p->type == HWLOC_OBJ_BRIDGE && p->attr->bridge.upstream_type == HWLOC_OBJ_BRIDGE_PCI)))
    return pciBusIdOf(p);
  return "";
}

bool isAcceleratorClass(unsigned classId) {
  unsigned base = classId >> 8;
  return base == 0x03 || base == 0x12 || classId == 0x0b40;
}

// The smallest instance of one cache level (hybrid CPUs mix sizes) and the cores sharing it.
void collectCacheLevel(hwloc_topology_t topo, hwloc_obj_type_t type, TopoCacheLevel* out) {
  int n = hwloc_get_nbobjs_by_type(topo, type);
  for (int i = 0; i < n; i++) {
    hwloc_obj_t c = hwloc_get_obj_by_type(topo, type, i);
    if (!c->attr || c->attr->cache.size == 0 || c->attr->cache.type == HWLOC_OBJ_CACHE_INSTRUCTION)
      continue;
    ++out->instances;
    if (out->bytes && c->attr->cache.size >= out->bytes) continue;
    out->bytes = c->attr->cache.size;
    out->cores = c->cpuset ? hwloc_get_nbobjs_inside_cpuset_by_type(topo, c->cpuset, HWLOC_OBJ_CORE)
                           : 0;
  }
}

void collectCpuSide(hwloc_topology_t topo, LocalTopology* out) {
  int npkg = hwloc_get_nbobjs_by_type(topo, HWLOC_OBJ_PACKAGE);
  int nnuma = hwloc_get_nbobjs_by_type(topo, HWLOC_OBJ_NUMANODE);
  for (int i = 0; i < nnuma; i++) {
    hwloc_obj_t n = hwloc_get_obj_by_type(topo, HWLOC_OBJ_NUMANODE, i);
    TopoNumaNode t;
    t.osIndex = (int)n->os_index;
    t.memoryBytes = n->attr->numanode.local_memory;
    t.cpus = bitmapList(n->cpuset);
    t.cores = hwloc_get_nbobjs_inside_cpuset_by_type(topo, n->cpuset, HWLOC_OBJ_CORE);
    t.pus = hwloc_get_nbobjs_inside_cpuset_by_type(topo, n->cpuset, HWLOC_OBJ_PU);
    out->numaNodes.push_back(t);
  }
  for (int i = 0; i < npkg; i++) {
    hwloc_obj_t p = hwloc_get_obj_by_type(topo, HWLOC_OBJ_PACKAGE, i);
    TopoPackage t;
    t.osIndex = (int)p->os_index;
    t.cpuModel = info(p, "CPUModel");
    t.cores = hwloc_get_nbobjs_inside_cpuset_by_type(topo, p->cpuset, HWLOC_OBJ_CORE);
    t.pus = hwloc_get_nbobjs_inside_cpuset_by_type(topo, p->cpuset, HWLOC_OBJ_PU);
    for (const TopoNumaNode& n : out->numaNodes)
      if (p->nodeset && hwloc_bitmap_isset(p->nodeset, (unsigned)n.osIndex))
        t.numaNodes.push_back(n.osIndex);
    out->packages.push_back(t);
  }
  out->cores = hwloc_get_nbobjs_by_type(topo, HWLOC_OBJ_CORE);
  out->pus = hwloc_get_nbobjs_by_type(topo, HWLOC_OBJ_PU);
  collectCacheLevel(topo, HWLOC_OBJ_L2CACHE, &out->caches.l2);
  collectCacheLevel(topo, HWLOC_OBJ_L3CACHE, &out->caches.l3);
}

void collectOsDevices(hwloc_topology_t topo, LocalTopology* out) {
  for (hwloc_obj_t o = hwloc_get_next_osdev(topo, nullptr); o; o = hwloc_get_next_osdev(topo, o)) {
    if (!o->name) continue;
    if (o->attr->osdev.type == HWLOC_OBJ_OSDEV_NETWORK) {
      TopoNic nic;
      nic.name = o->name;
      nic.pciBusId = parentPciBusId(o);
      nic.numaNode = numaNodeOfIo(topo, o);
      nic.mac = info(o, "Address");
      out->nics.push_back(nic);
    } else if (o->attr->osdev.type == HWLOC_OBJ_OSDEV_OPENFABRICS) {
      // Only the position and what hwloc recorded; on this system libibverbs replaces the
      // record (placeRdmaDevices), from XML it is all there is.
      TopoRdmaDevice r;
      r.name = o->name;
      r.pciBusId = parentPciBusId(o);
      r.onPciTree = !r.pciBusId.empty();
      r.numaNode = numaNodeOfIo(topo, o);
      r.nodeGuid = info(o, "NodeGUID");
      // hwloc records port states as "Port<N>State", the number of enum ibv_port_state.
      for (int port = 1; port <= 8; port++) {
        std::string key = "Port" + std::to_string(port) + "State";
        const char* st = hwloc_obj_get_info_by_name(o, key.c_str());
        if (!st) continue;
        TopoRdmaPort p;
        p.port = port;
        p.state = rdmaPortStateName(atoi(st));
        r.ports.push_back(p);
      }
      out->rdma.push_back(r);
    }
  }
  for (const TopoPciObject& p : out->pci) {
    if (p.kind != TopoPciObject::kDevice || !isAcceleratorClass(p.classId)) continue;
    TopoAccelerator a;
    a.pciBusId = p.busId;
    a.classId = p.classId;
    a.vendorId = p.vendorId;
    a.deviceId = p.deviceId;
    a.numaNode = p.numaNode;
    a.name = p.name;
    a.osDevices = p.osDevices;
    out->accelerators.push_back(a);
  }
}

// Interfaces the kernel has but hwloc does not report (no physical device), and the addresses
// and link state of all of them.
void mergeKernelInterfaces(LocalTopology* out) {
  if (struct if_nameindex* names = if_nameindex()) {
    for (struct if_nameindex* it = names; it->if_index != 0 && it->if_name; it++) {
      std::string name = it->if_name;
      bool known = false;
      for (const TopoNic& n : out->nics) known = known || n.name == name;
      if (known) continue;
      TopoNic nic;
      nic.name = name;
      nic.mac = readSysfsText("/sys/class/net/" + name + "/address");
      // A physical interface that hwloc filtered out still has a PCI device in sysfs.
      char real[PATH_MAX];
      std::string link = "/sys/class/net/" + name + "/device";
      if (realpath(link.c_str(), real)) {
        const char* base = strrchr(real, '/');
        if (base && looksLikePciBusId(base + 1)) nic.pciBusId = base + 1;
      }
      out->nics.push_back(nic);
    }
    if_freenameindex(names);
  }
  ifaddrs* list = nullptr;
  if (getifaddrs(&list) != 0) return;
  for (ifaddrs* it = list; it; it = it->ifa_next) {
    for (TopoNic& nic : out->nics) {
      if (nic.name != it->ifa_name) continue;
      if (it->ifa_flags & IFF_UP) nic.up = true;
      if (!it->ifa_addr) continue;
      char buf[INET6_ADDRSTRLEN] = {0};
      if (it->ifa_addr->sa_family == AF_INET)
        inet_ntop(AF_INET, &reinterpret_cast<sockaddr_in*>(it->ifa_addr)->sin_addr, buf,
                  sizeof(buf));
      else if (it->ifa_addr->sa_family == AF_INET6)
        inet_ntop(AF_INET6, &reinterpret_cast<sockaddr_in6*>(it->ifa_addr)->sin6_addr, buf,
                  sizeof(buf));
      if (buf[0] && std::find(nic.addresses.begin(), nic.addresses.end(), buf) ==
                        nic.addresses.end())
        nic.addresses.push_back(buf);
    }
  }
  freeifaddrs(list);
}

std::string versionString(unsigned v) {
  char buf[32];
  snprintf(buf, sizeof(buf), "%u.%u.%u", v >> 16, (v >> 8) & 0xff, v & 0xff);
  return buf;
}

Result build(const std::string* xml, LocalTopology* out) {
  clearTopoError();
  auto handle = std::make_shared<TopologyHandle>();
  if (hwloc_topology_init(&handle->topo) != 0) {
    handle->topo = nullptr;
    return topoError(mixcclSystemError, "hwloc_topology_init failed: %s", strerror(errno));
  }
  hwloc_topology_t topo = handle->topo;
  // Keep every bridge and PCI device: PCI distances count the bridges in between.
  hwloc_topology_set_io_types_filter(topo, HWLOC_TYPE_FILTER_KEEP_ALL);
  if (xml) {
    if (hwloc_topology_set_xmlbuffer(topo, xml->c_str(), (int)xml->size() + 1) != 0)
      return topoError(mixcclInvalidArgument, "hwloc cannot read the XML topology: %s",
                       strerror(errno));
  }
  if (hwloc_topology_load(topo) != 0)
    return topoError(xml ? mixcclInvalidArgument : mixcclSystemError,
                     "hwloc_topology_load failed: %s", strerror(errno));

  LocalTopology t;
  t.thisSystem = hwloc_topology_is_thissystem(topo) && !xml;
  // The release hwloc stamps into the root object (for XML: the release that wrote it); the
  // API version when it is missing.
  t.hwlocVersion = info(hwloc_get_root_obj(topo), "hwlocVersion");
  if (t.hwlocVersion.empty()) t.hwlocVersion = "API " + versionString(hwloc_get_api_version());
  if (t.thisSystem) {
    PeerInfo pi{};
    fillLocalHostInfo(&pi);
    t.hostname.assign(pi.hostname, strnlen(pi.hostname, sizeof(pi.hostname)));
    t.hostHash = pi.hostHash;
  } else {
    t.hostname = info(hwloc_get_root_obj(topo), "HostName");
  }
  collectCpuSide(topo, &t);
  walkNormal(topo, hwloc_get_root_obj(topo), &t.pci);
  collectOsDevices(topo, &t);
  t.handle = handle;
  if (t.thisSystem) {
    mergeKernelInterfaces(&t);
    RdmaScan scan;
    scanRdmaDevices(systemVerbsApi(), "/sys", &scan);
    placeRdmaDevices(scan, &t);
    hwloc_bitmap_t set = hwloc_bitmap_alloc();
    if (set && hwloc_get_cpubind(topo, set, HWLOC_CPUBIND_THREAD) == 0)
      t.threadCpus = bitmapList(set);
    hwloc_bitmap_free(set);
    t.threadNumaNode = currentNumaNode(t);
  } else {
    t.rdmaStatus = t.rdma.empty() ? "no RDMA devices in the XML topology"
                                  : std::to_string(t.rdma.size()) +
                                        " RDMA device(s) in the XML topology (hwloc's record)";
  }
  *out = std::move(t);
  return mixcclSuccess;
}

}  // namespace

const std::string& topologyLastError() { return tlsTopoError; }

Result topoError(Result code, const char* fmt, ...) {
  char buf[512];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(buf, sizeof(buf), fmt, ap);
  va_end(ap);
  tlsTopoError = buf;
  return code;
}

void clearTopoError() { tlsTopoError.clear(); }

std::string pciBusIdOf(hwloc_obj_t obj) {
  const auto& a = obj->attr->pcidev;
  char buf[32];
  snprintf(buf, sizeof(buf), "%04x:%02x:%02x.%x", (unsigned)a.domain, (unsigned)a.bus,
           (unsigned)a.dev, (unsigned)a.func);
  return buf;
}

hwloc_obj_t findPciObject(hwloc_topology_t topo, const std::string& busId) {
  unsigned dom = 0, bus, dev, fn;
  char tail;
  if (sscanf(busId.c_str(), "%x:%x:%x.%x%c", &dom, &bus, &dev, &fn, &tail) != 4) {
    dom = 0;
    if (sscanf(busId.c_str(), "%x:%x.%x%c", &bus, &dev, &fn, &tail) != 3) return nullptr;
  }
  hwloc_obj_t o = hwloc_get_pcidev_by_busid(topo, dom, bus, dev, fn);
  if (o) return o;
  // A PCI-PCI bridge is not a PCI device object but has the same upstream attributes.
  for (hwloc_obj_t b = hwloc_get_next_bridge(topo, nullptr); b; b = hwloc_get_next_bridge(topo, b)) {
    if (b->attr->bridge.upstream_type != HWLOC_OBJ_BRIDGE_PCI) continue;
    const auto& a = b->attr->bridge.upstream.pci;
    if (a.domain == dom && a.bus == bus && a.dev == dev && a.func == fn) return b;
  }
  return nullptr;
}

int numaNodeOfIo(hwloc_topology_t topo, hwloc_obj_t io) {
  hwloc_obj_t anc = hwloc_get_non_io_ancestor_obj(topo, io);
  if (!anc || !anc->nodeset || hwloc_bitmap_weight(anc->nodeset) != 1) return -1;
  return hwloc_bitmap_first(anc->nodeset);
}

std::string bitmapList(hwloc_const_bitmap_t set) {
  if (!set) return "";
  char* s = nullptr;
  if (hwloc_bitmap_list_asprintf(&s, set) < 0 || !s) return "";
  std::string out = s;
  free(s);
  return out;
}

Result discoverLocalTopology(LocalTopology* out) {
  if (!out) return topoError(mixcclInvalidArgument, "discoverLocalTopology: out is NULL");
  return build(nullptr, out);
}

Result loadTopologyFromXml(const std::string& xml, LocalTopology* out) {
  if (!out) return topoError(mixcclInvalidArgument, "loadTopologyFromXml: out is NULL");
  if (xml.empty()) return topoError(mixcclInvalidArgument, "loadTopologyFromXml: empty XML");
  return build(&xml, out);
}

int currentNumaNode(const LocalTopology& local) {
  if (!local.thisSystem || !local.handle || !local.handle->topo) return -1;
  hwloc_topology_t topo = local.handle->topo;
  if (local.numaNodes.size() == 1) return local.numaNodes[0].osIndex;
  hwloc_bitmap_t cpus = hwloc_bitmap_alloc();
  hwloc_bitmap_t nodes = hwloc_bitmap_alloc();
  int node = -1;
  if (cpus && nodes) {
    // The whole binding when it lies in one node, else where the thread last ran.
    if (hwloc_get_cpubind(topo, cpus, HWLOC_CPUBIND_THREAD) == 0) {
      hwloc_cpuset_to_nodeset(topo, cpus, nodes);
      if (hwloc_bitmap_weight(nodes) == 1) node = hwloc_bitmap_first(nodes);
    }
    if (node < 0 && hwloc_get_last_cpu_location(topo, cpus, HWLOC_CPUBIND_THREAD) == 0) {
      hwloc_cpuset_to_nodeset(topo, cpus, nodes);
      if (hwloc_bitmap_weight(nodes) >= 1) node = hwloc_bitmap_first(nodes);
    }
  }
  hwloc_bitmap_free(cpus);
  hwloc_bitmap_free(nodes);
  return node;
}

}  // namespace mixccl
