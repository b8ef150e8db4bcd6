// Transports this host can use, its RDMA ports and its GPUs. The topology comes from the same
// discovery a communicator runs (src/topology: hwloc, libibverbs, sysfs).
#include <dlfcn.h>
#include <unistd.h>
#ifdef MIXCCL_HAVE_OFI
#include <rdma/fabric.h>
#endif

#include <cstdio>
#include <cstdlib>
#include <set>
#include <string>

#include "info_probes.h"
#include "topology/topology.h"

namespace mixccl_info {
namespace {

std::string envOr(const char* name, const char* fallback) {
  const char* v = getenv(name);
  return v && *v ? v : fallback;
}

TransportProbe socketTransport() {
  return {"socket", true,
          "TCP; interfaces " + envOr("MIXCCL_SOCKET_IFNAME", "chosen automatically") +
              " (MIXCCL_SOCKET_IFNAME)"};
}

TransportProbe shmTransport() {
  TransportProbe t{"shm", false, ""};
  if (envOr("MIXCCL_SHM_DISABLE", "0") == "1") {
    t.detail = "turned off by MIXCCL_SHM_DISABLE=1";
  } else if (access("/dev/shm", W_OK) != 0) {
    t.detail = "/dev/shm is not writable";
  } else {
    t.available = true;
    t.detail = "/dev/shm rings between ranks of one host";
  }
  return t;
}

TransportProbe ucxTransport() {
  TransportProbe t{"ucx", false, ""};
#ifdef MIXCCL_INFO_HAVE_UCX
  if (dlopen("libucp.so.0", RTLD_NOW | RTLD_LOCAL) == nullptr) {
    t.detail = "libucp.so.0 cannot be loaded";
  } else {
    t.available = true;
    t.detail = "transports as UCX chooses them (UCX_TLS=" + envOr("UCX_TLS", "all") + ")";
  }
#else
  t.detail = "not in this build (MIXCCL_WITH_UCX=OFF)";
#endif
  return t;
}

TransportProbe ofiTransport() {
  TransportProbe t{"ofi", false, ""};
#ifdef MIXCCL_HAVE_OFI
  void* h = dlopen("libfabric.so.1", RTLD_NOW | RTLD_LOCAL);
  if (h == nullptr) {
    t.detail = "libfabric.so.1 cannot be loaded";
    return t;
  }
  using GetInfo = int (*)(uint32_t, const char*, const char*, uint64_t, const fi_info*, fi_info**);
  using DupInfo = fi_info* (*)(const fi_info*);
  using FreeInfo = void (*)(fi_info*);
  auto getinfo = reinterpret_cast<GetInfo>(dlsym(h, "fi_getinfo"));
  auto dupinfo = reinterpret_cast<DupInfo>(dlsym(h, "fi_dupinfo"));
  auto freeinfo = reinterpret_cast<FreeInfo>(dlsym(h, "fi_freeinfo"));
  if (!getinfo || !dupinfo || !freeinfo) {
    t.detail = "libfabric.so.1 lacks fi_getinfo, fi_dupinfo or fi_freeinfo";
    return t;
  }
  // What the ofi transport asks of a provider: reliable datagrams with tagged messages.
  fi_info* hints = dupinfo(nullptr);
  hints->ep_attr->type = FI_EP_RDM;
  hints->caps = FI_TAGGED | FI_MSG;
  fi_info* list = nullptr;
  int rc = getinfo(FI_VERSION(1, 9), nullptr, nullptr, 0, hints, &list);
  freeinfo(hints);
  std::set<std::string> providers;
  for (fi_info* i = list; i != nullptr; i = i->next) {
    if (i->fabric_attr && i->fabric_attr->prov_name) providers.insert(i->fabric_attr->prov_name);
  }
  if (list) freeinfo(list);
  if (rc != 0 || providers.empty()) {
    t.detail = "libfabric has no provider with tagged reliable datagrams";
    return t;
  }
  std::string names;
  for (const auto& p : providers) names += (names.empty() ? "" : ", ") + p;
  t.available = true;
  t.detail = "providers " + names + " (MIXCCL_OFI_PROVIDER picks)";
#else
  t.detail = "not in this build (MIXCCL_WITH_OFI=OFF)";
#endif
  return t;
}

std::string vendorName(unsigned id) {
  switch (id) {
    case 0x10de: return "NVIDIA";
    case 0x1002: return "AMD";
    case 0x8086: return "Intel";
    default: {
      char hex[16];
      snprintf(hex, sizeof hex, "0x%04x", id);
      return hex;
    }
  }
}

}  // namespace

void probeTransports(InfoFacts* facts) {
  facts->transports = {socketTransport(), shmTransport(), ucxTransport(), ofiTransport()};
  mixccl::LocalTopology local;
  mixccl::Result r = mixccl::discoverLocalTopology(&local);
  if (r != mixcclSuccess) {
    facts->rdmaStatus = "topology discovery failed: " + mixccl::topologyLastError();
    return;
  }
  facts->rdmaStatus = local.rdmaStatus;
  for (const auto& dev : local.rdma) {
    for (const auto& port : dev.ports) {
      facts->rdmaPorts.push_back({dev.name, port.port, port.state, port.linkLayer, port.netDevice});
    }
  }
  for (const auto& acc : local.accelerators) {
    facts->gpus.push_back({acc.pciBusId, vendorName(acc.vendorId), acc.name, acc.numaNode});
  }
}

}  // namespace mixccl_info
