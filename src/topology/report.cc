// Reports of the topology: JSON (schema "mixccl-topology/1", docs/topology.md) and text, and the
// dump file written at init.
#include <unistd.h>

#include <cerrno>
#include <cstdarg>
#include <cstdio>
#include <cstring>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

#include "topology/topology_internal.h"

namespace mixccl {
namespace {

using Json = nlohmann::ordered_json;

const char* kSchema = "mixccl-topology/1";

std::string hex(unsigned v, int width) {
  char buf[16];
  snprintf(buf, sizeof(buf), "%0*x", width, v);
  return buf;
}

std::string hash16(uint64_t h) {
  char buf[24];
  snprintf(buf, sizeof(buf), "0x%016llx", (unsigned long long)h);
  return buf;
}

Json numaOrNull(int n) { return n >= 0 ? Json(n) : Json(nullptr); }
Json textOrNull(const std::string& s) { return s.empty() ? Json(nullptr) : Json(s); }

std::string fieldText(const char* f, size_t n) { return std::string(f, strnlen(f, n)); }
#define FIELD(x) fieldText((x), sizeof(x))

const char* pciKindName(TopoPciObject::Kind k) {
  switch (k) {
    case TopoPciObject::kHostBridge: return "host-bridge";
    case TopoPciObject::kPciBridge: return "pci-bridge";
    case TopoPciObject::kDevice: return "device";
  }
  return "device";
}

Json localJson(const LocalTopology& t) {
  Json j;
  j["hostname"] = t.hostname;
  j["hostHash"] = hash16(t.hostHash);
  j["thisSystem"] = t.thisSystem;
  j["hwloc"] = t.hwlocVersion;
  int pciDevices = 0;
  for (const TopoPciObject& p : t.pci) pciDevices += p.kind == TopoPciObject::kDevice;
  j["counts"] = {{"packages", t.packages.size()}, {"numaNodes", t.numaNodes.size()},
                 {"cores", t.cores},           {"pus", t.pus},
                 {"pciDevices", pciDevices},   {"nics", t.nics.size()},
                 {"rdmaDevices", t.rdma.size()}, {"accelerators", t.accelerators.size()}};
  j["caches"] = Json::object();
  for (const auto& level : {std::make_pair("l2", &t.caches.l2), std::make_pair("l3", &t.caches.l3)})
    if (level.second->bytes)
      j["caches"][level.first] = {{"bytes", level.second->bytes},
                                  {"cores", level.second->cores},
                                  {"instances", level.second->instances}};
  j["packages"] = Json::array();
  for (const TopoPackage& p : t.packages)
    j["packages"].push_back({{"index", p.osIndex},
                             {"cpuModel", textOrNull(p.cpuModel)},
                             {"cores", p.cores},
                             {"pus", p.pus},
                             {"numaNodes", p.numaNodes}});
  j["numaNodes"] = Json::array();
  for (const TopoNumaNode& n : t.numaNodes)
    j["numaNodes"].push_back({{"index", n.osIndex},
                              {"memoryBytes", n.memoryBytes},
                              {"cpus", n.cpus},
                              {"cores", n.cores},
                              {"pus", n.pus}});
  j["pci"] = Json::array();
  for (const TopoPciObject& p : t.pci) {
    Json o;
    o["kind"] = pciKindName(p.kind);
    o["busId"] = textOrNull(p.busId);
    o["downstream"] = textOrNull(p.downstream);
    o["parent"] = p.parent >= 0 ? Json(p.parent) : Json(nullptr);
    o["level"] = p.level;
    if (p.kind != TopoPciObject::kHostBridge) {
      o["class"] = hex(p.classId, 4);
      o["vendor"] = hex(p.vendorId, 4);
      o["device"] = hex(p.deviceId, 4);
      o["linkGBps"] = p.linkGBps;
      o["name"] = textOrNull(p.name);
    }
    o["numaNode"] = numaOrNull(p.numaNode);
    o["osDevices"] = p.osDevices;
    j["pci"].push_back(o);
  }
  j["nics"] = Json::array();
  for (const TopoNic& n : t.nics)
    j["nics"].push_back({{"name", n.name},
                         {"pciBusId", textOrNull(n.pciBusId)},
                         {"virtual", n.pciBusId.empty()},
                         {"numaNode", numaOrNull(n.numaNode)},
                         {"mac", textOrNull(n.mac)},
                         {"up", n.up},
                         {"addresses", n.addresses},
                         {"rdmaDevice", textOrNull(n.rdmaDevice)},
                         {"rdmaPort", n.rdmaPort > 0 ? Json(n.rdmaPort) : Json(nullptr)}});
  Json rdma;
  rdma["status"] = t.rdmaStatus;
  rdma["devices"] = Json::array();
  for (const TopoRdmaDevice& r : t.rdma) {
    Json ports = Json::array();
    for (const TopoRdmaPort& p : r.ports)
      ports.push_back({{"port", p.port},
                       {"state", textOrNull(p.state)},
                       {"linkLayer", textOrNull(p.linkLayer)},
                       {"speed", textOrNull(p.speed)},
                       {"width", p.width > 0 ? Json(p.width) : Json(nullptr)},
                       {"gbps", p.gbps > 0 ? Json(p.gbps) : Json(nullptr)},
                       {"gid", textOrNull(p.gid)},
                       {"netDevice", textOrNull(p.netDevice)},
                       {"error", textOrNull(p.error)}});
    rdma["devices"].push_back({{"name", r.name},
                               {"nodeGuid", textOrNull(r.nodeGuid)},
                               {"pciBusId", textOrNull(r.pciBusId)},
                               {"onPciTree", r.onPciTree},
                               {"numaNode", numaOrNull(r.numaNode)},
                               {"ports", ports},
                               {"netDevices", r.netDevices},
                               {"error", textOrNull(r.error)}});
  }
  j["rdma"] = rdma;
  j["accelerators"] = Json::array();
  for (const TopoAccelerator& a : t.accelerators)
    j["accelerators"].push_back({{"pciBusId", a.pciBusId},
                                 {"class", hex(a.classId, 4)},
                                 {"vendor", hex(a.vendorId, 4)},
                                 {"device", hex(a.deviceId, 4)},
                                 {"numaNode", numaOrNull(a.numaNode)},
                                 {"name", textOrNull(a.name)},
                                 {"osDevices", a.osDevices}});
  j["thread"] = {{"numaNode", numaOrNull(t.threadNumaNode)}, {"cpus", textOrNull(t.threadCpus)}};
  return j;
}

struct HostGroup {
  uint64_t hash;
  std::string hostname;
  std::vector<int> ranks;
};

std::vector<HostGroup> groupHosts(const std::vector<RankTopology>& ranks) {
  std::vector<HostGroup> hosts;
  for (const RankTopology& r : ranks) {
    HostGroup* g = nullptr;
    for (HostGroup& h : hosts)
      if (h.hash == r.hostHash) g = &h;
    if (!g) {
      hosts.push_back({r.hostHash, FIELD(r.hostname), {}});
      g = &hosts.back();
    }
    g->ranks.push_back(r.rank);
  }
  return hosts;
}

int hostIndexOf(const std::vector<HostGroup>& hosts, uint64_t hash) {
  for (size_t i = 0; i < hosts.size(); i++)
    if (hosts[i].hash == hash) return (int)i;
  return -1;
}

Json globalJson(const std::vector<RankTopology>& ranks) {
  std::vector<HostGroup> hosts = groupHosts(ranks);
  Json j;
  j["nranks"] = ranks.size();
  j["nhosts"] = hosts.size();
  j["hosts"] = Json::array();
  for (const HostGroup& h : hosts)
    j["hosts"].push_back({{"hostHash", hash16(h.hash)}, {"hostname", h.hostname}, {"ranks", h.ranks}});
  j["ranks"] = Json::array();
  for (const RankTopology& r : ranks) {
    Json nic = {{"name", textOrNull(FIELD(r.nicName))},
                {"pciBusId", textOrNull(FIELD(r.nicPciBusId))},
                {"numaNode", numaOrNull(r.nicNumaNode)},
                {"distance", pciDistanceName(r.nicDistance)},
                {"hops", r.nicHops >= 0 ? Json(r.nicHops) : Json(nullptr)},
                {"selectedBy", r.nicByPci ? "pci-distance" : "socket-default"}};
    j["ranks"].push_back({{"rank", r.rank},
                          {"host", hostIndexOf(hosts, r.hostHash)},
                          {"hostname", FIELD(r.hostname)},
                          {"hostHash", hash16(r.hostHash)},
                          {"numaNode", numaOrNull(r.numaNode)},
                          {"adaptor", FIELD(r.adaptor)},
                          {"device", r.device >= 0 ? Json(r.device) : Json(nullptr)},
                          {"devicePciBusId", textOrNull(FIELD(r.devicePciBusId))},
                          {"deviceNumaNode", numaOrNull(r.deviceNumaNode)},
                          {"nic", nic}});
  }
  return j;
}

std::string numaText(int n) { return n >= 0 ? std::to_string(n) : "-"; }
std::string orDash(const std::string& s) { return s.empty() ? "-" : s; }

std::string join(const std::vector<std::string>& v, const char* sep) {
  std::string out;
  for (size_t i = 0; i < v.size(); i++) out += (i ? sep : "") + v[i];
  return out;
}

std::string joinInts(const std::vector<int>& v) {
  std::vector<std::string> s;
  for (int x : v) s.push_back(std::to_string(x));
  return join(s, ",");
}

std::string bytesText(uint64_t b) {
  char buf[32];
  if (b >= (1ull << 30)) snprintf(buf, sizeof(buf), "%.1f GiB", b / 1073741824.0);
  else snprintf(buf, sizeof(buf), "%.1f MiB", b / 1048576.0);
  return buf;
}

void appendf(std::string* s, const char* fmt, ...) __attribute__((format(printf, 2, 3)));
void appendf(std::string* s, const char* fmt, ...) {
  char buf[1024];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(buf, sizeof(buf), fmt, ap);
  va_end(ap);
  *s += buf;
}

std::string localText(const LocalTopology& t) {
  std::string s;
  appendf(&s, "host %s (hash %s)%s, hwloc %s\n", t.hostname.c_str(), hash16(t.hostHash).c_str(),
          t.thisSystem ? "" : " [from XML]", t.hwlocVersion.c_str());
  appendf(&s, "  %zu package(s), %zu NUMA node(s), %d core(s), %d PU(s)\n", t.packages.size(),
          t.numaNodes.size(), t.cores, t.pus);
  for (const TopoPackage& p : t.packages)
    appendf(&s, "  package %d: %s, %d cores, %d PUs, NUMA nodes %s\n", p.osIndex,
            orDash(p.cpuModel).c_str(), p.cores, p.pus, orDash(joinInts(p.numaNodes)).c_str());
  for (const TopoNumaNode& n : t.numaNodes)
    appendf(&s, "  NUMA node %d: %s, CPUs %s (%d cores)\n", n.osIndex,
            bytesText(n.memoryBytes).c_str(), orDash(n.cpus).c_str(), n.cores);
  if (t.thisSystem)
    appendf(&s, "  this thread: NUMA node %s, CPUs %s\n", numaText(t.threadNumaNode).c_str(),
            orDash(t.threadCpus).c_str());
  s += "PCI:\n";
  if (t.pci.empty()) s += "  none reported\n";
  for (const TopoPciObject& p : t.pci) {
    std::string indent(2 + 2 * p.level, ' ');
    if (p.kind == TopoPciObject::kHostBridge) {
      appendf(&s, "%shost bridge %s (NUMA %s)\n", indent.c_str(), orDash(p.downstream).c_str(),
              numaText(p.numaNode).c_str());
    } else {
      appendf(&s, "%s%s %s class %04x [%04x:%04x]%s%s%s%s\n", indent.c_str(),
              p.kind == TopoPciObject::kPciBridge ? "bridge" : "device", p.busId.c_str(),
              p.classId, p.vendorId, p.deviceId, p.downstream.empty() ? "" : " to ",
              p.downstream.c_str(), p.name.empty() ? "" : (" " + p.name).c_str(),
              p.osDevices.empty() ? "" : (" -> " + join(p.osDevices, ", ")).c_str());
    }
  }
  s += "NICs:\n";
  if (t.nics.empty()) s += "  none\n";
  for (const TopoNic& n : t.nics)
    appendf(&s, "  %-12s %-14s NUMA %-2s %-4s %s%s%s\n", n.name.c_str(),
            n.pciBusId.empty() ? "virtual" : n.pciBusId.c_str(), numaText(n.numaNode).c_str(),
            n.up ? "up" : (t.thisSystem ? "down" : ""), join(n.addresses, " ").c_str(),
            n.rdmaDevice.empty() ? "" : " rdma ",
            n.rdmaDevice.empty()  ? ""
            : n.rdmaPort > 0      ? (n.rdmaDevice + " port " + std::to_string(n.rdmaPort)).c_str()
                                  : n.rdmaDevice.c_str());
  appendf(&s, "RDMA: %s\n", t.rdmaStatus.c_str());
  for (const TopoRdmaDevice& r : t.rdma) {
    appendf(&s, "  %-12s %-14s NUMA %-2s guid %s net %s%s%s\n", r.name.c_str(),
            orDash(r.pciBusId).c_str(), numaText(r.numaNode).c_str(), orDash(r.nodeGuid).c_str(),
            orDash(join(r.netDevices, ",")).c_str(), r.error.empty() ? "" : " error: ",
            r.error.c_str());
    for (const TopoRdmaPort& p : r.ports) {
      if (!p.error.empty()) {
        appendf(&s, "    port %d: error: %s\n", p.port, p.error.c_str());
        continue;
      }
      std::string rate = "-";
      if (p.gbps > 0) {
        char buf[48];
        snprintf(buf, sizeof(buf), "%dx %s %g Gb/s", p.width, p.speed.c_str(), p.gbps);
        rate = buf;
      }
      appendf(&s, "    port %d: %-6s %-10s %-18s gid %s net %s\n", p.port, orDash(p.state).c_str(),
              orDash(p.linkLayer).c_str(), rate.c_str(), orDash(p.gid).c_str(),
              orDash(p.netDevice).c_str());
    }
  }
  s += "Accelerators:";
  s += t.accelerators.empty() ? " none\n" : "\n";
  for (const TopoAccelerator& a : t.accelerators)
    appendf(&s, "  %s class %04x [%04x:%04x] NUMA %s%s%s\n", a.pciBusId.c_str(), a.classId,
            a.vendorId, a.deviceId, numaText(a.numaNode).c_str(),
            a.name.empty() ? "" : (" " + a.name).c_str(),
            a.osDevices.empty() ? "" : (" -> " + join(a.osDevices, ", ")).c_str());
  return s;
}

std::string globalText(const std::vector<RankTopology>& ranks) {
  std::vector<HostGroup> hosts = groupHosts(ranks);
  std::string s;
  appendf(&s, "job: %zu rank(s) on %zu host(s)\n", ranks.size(), hosts.size());
  for (size_t i = 0; i < hosts.size(); i++)
    appendf(&s, "  host %zu: %s (%s) ranks %s\n", i, hosts[i].hostname.c_str(),
            hash16(hosts[i].hash).c_str(), joinInts(hosts[i].ranks).c_str());
  appendf(&s, "%-5s %-4s %-16s %-4s %-10s %-6s %-14s %-12s %-14s %-11s %s\n", "rank", "host",
          "hostname", "numa", "adaptor", "device", "device-pci", "nic", "nic-pci", "distance",
          "nic-chosen-by");
  for (const RankTopology& r : ranks)
    appendf(&s, "%-5d %-4d %-16s %-4s %-10s %-6s %-14s %-12s %-14s %-11s %s\n", (int)r.rank,
            hostIndexOf(hosts, r.hostHash), FIELD(r.hostname).c_str(),
            numaText(r.numaNode).c_str(), FIELD(r.adaptor).c_str(),
            r.device >= 0 ? std::to_string(r.device).c_str() : "-",
            orDash(FIELD(r.devicePciBusId)).c_str(), orDash(FIELD(r.nicName)).c_str(),
            orDash(FIELD(r.nicPciBusId)).c_str(), pciDistanceName(r.nicDistance),
            r.nicByPci ? "pci-distance" : "socket-default");
  return s;
}

}  // namespace

std::string topologyToJson(const TopologyView& view) {
  Json j;
  j["schema"] = kSchema;
  j["rank"] = view.rank >= 0 ? Json(view.rank) : Json(nullptr);
  if (view.local) j["local"] = localJson(*view.local);
  if (view.ranks) j["global"] = globalJson(*view.ranks);
  if (view.transports) {
    j["transports"] = Json::array();
    for (const TopologyTransport& t : *view.transports)
      j["transports"].push_back({{"peer", t.peer}, {"transport", t.transport}, {"why", t.why}});
  }
  return j.dump(2) + "\n";
}

std::string topologyToText(const TopologyView& view) {
  std::string s;
  if (view.local) s += localText(*view.local);
  if (view.local && view.ranks) s += "\n";
  if (view.ranks) s += globalText(*view.ranks);
  return s;
}

bool topologyDumpPath(const std::string& pattern, int rank,
                      const std::vector<RankTopology>& ranks, std::string* path) {
  if (pattern.empty() || rank < 0) return false;
  bool perRank = false, perHost = false;
  std::string hostname;
  uint64_t myHash = 0;
  bool known = false;
  for (const RankTopology& r : ranks)
    if (r.rank == rank) {
      hostname = FIELD(r.hostname);
      myHash = r.hostHash;
      known = true;
    }
  std::string out;
  for (size_t i = 0; i < pattern.size(); i++) {
    if (pattern[i] != '%' || i + 1 == pattern.size()) {
      out += pattern[i];
      continue;
    }
    char c = pattern[++i];
    if (c == 'r') {
      out += std::to_string(rank);
      perRank = true;
    } else if (c == 'p') {
      out += std::to_string((long)getpid());
      perRank = true;
    } else if (c == 'h') {
      out += hostname.empty() ? "unknown-host" : hostname;
      perHost = true;
    } else if (c == '%') {
      out += '%';
    } else {
      out += '%';
      out += c;
    }
  }
  bool writes;
  if (perRank) {
    writes = true;
  } else if (perHost) {
    int lowest = -1;
    for (const RankTopology& r : ranks)
      if (r.hostHash == myHash && (lowest < 0 || r.rank < lowest)) lowest = r.rank;
    writes = !known || lowest == rank;
  } else {
    writes = rank == 0;
  }
  if (writes && path) *path = out;
  return writes;
}

Result writeTopologyDump(const std::string& path, const TopologyView& view) {
  clearTopoError();
  if (path.empty()) return topoError(mixcclInvalidArgument, "topology dump: empty path");
  std::string text = topologyToJson(view);
  std::string tmp = path + ".tmp." + std::to_string((long)getpid());
  FILE* f = fopen(tmp.c_str(), "w");
  if (!f)
    return topoError(mixcclSystemError, "topology dump: cannot create %s: %s", tmp.c_str(),
                     strerror(errno));
  size_t n = fwrite(text.data(), 1, text.size(), f);
  int err = n == text.size() ? 0 : errno;
  if (fclose(f) != 0 && !err) err = errno;
  if (n != text.size() || err) {
    unlink(tmp.c_str());
    return topoError(mixcclSystemError, "topology dump: writing %s failed: %s", tmp.c_str(),
                     strerror(err ? err : EIO));
  }
  if (rename(tmp.c_str(), path.c_str()) != 0) {
    int e = errno;
    unlink(tmp.c_str());
    return topoError(mixcclSystemError, "topology dump: cannot rename to %s: %s", path.c_str(),
                     strerror(e));
  }
  return mixcclSuccess;
}

}  // namespace mixccl
