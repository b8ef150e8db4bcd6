// The sysfs facts of an RDMA device that libibverbs does not give: its PCI function, NUMA node
// and network interfaces.
//
// /sys/class/infiniband/<dev>/device is a link to the PCI function
// (../../../0000:03:00.0), whose net/ folder lists the interfaces of that function; with
// several ports on one function (mlx4) each interface's dev_port says which port it is.
#include <limits.h>
#include <stdlib.h>

#include <cstring>
#include <string>

#include "topology/rdma_facts.h"
#include "topology/topology_internal.h"

namespace mixccl {
namespace {

int parseIntOr(const std::string& s, int fallback) {
  if (s.empty()) return fallback;
  char* end = nullptr;
  long v = strtol(s.c_str(), &end, 0);
  return end && *end == '\0' ? (int)v : fallback;
}

bool parseBusId(const std::string& s, unsigned v[4]) {
  char tail;
  if (sscanf(s.c_str(), "%x:%x:%x.%x%c", &v[0], &v[1], &v[2], &v[3], &tail) == 4) return true;
  v[0] = 0;
  return sscanf(s.c_str(), "%x:%x.%x%c", &v[1], &v[2], &v[3], &tail) == 3;
}

}  // namespace

bool samePciBusId(const std::string& a, const std::string& b) {
  unsigned x[4], y[4];
  if (!parseBusId(a, x) || !parseBusId(b, y)) return false;
  return memcmp(x, y, sizeof(x)) == 0;
}

void readRdmaSysfs(const std::string& sysfsRoot, RdmaDeviceFacts* facts) {
  const std::string dev = sysfsRoot + "/class/infiniband/" + facts->name;
  const std::string fn = dev + "/device";
  char real[PATH_MAX];
  if (realpath(fn.c_str(), real)) {
    const char* base = strrchr(real, '/');
    if (base && looksLikePciBusId(base + 1)) facts->pciBusId = base + 1;
  }
  // The kernel writes -1 when the platform does not say.
  facts->sysfsNumaNode = parseIntOr(readSysfsText(fn + "/numa_node"), -1);
  if (facts->sysfsNumaNode < -1) facts->sysfsNumaNode = -1;
  facts->netdevs.clear();
  for (const std::string& nd : listSysfsDir(fn + "/net", nullptr)) {
    RdmaNetdevFacts n;
    n.name = nd;
    n.devPort = parseIntOr(readSysfsText(fn + "/net/" + nd + "/dev_port"), -1);
    facts->netdevs.push_back(n);
  }
  for (RdmaPortFacts& p : facts->ports)
    p.gidNetdev = readSysfsText(dev + "/ports/" + std::to_string(p.port) + "/gid_attrs/ndevs/0");
}

}  // namespace mixccl
