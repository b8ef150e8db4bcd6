#include "transport/ofi/ofi_provider.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <rdma/fi_errno.h>

#include <cstring>

#include "base/error.h"
#include "transport/ofi/ofi_library.h"

namespace mixccl {
namespace {

// The hints: tagged and untagged messages over reliable datagram endpoints, every memory
// registration mode mixccl can honour (ofi_mr_cache.h), and the per-operation context it
// always supplies (its operation records begin with an fi_context2).
OfiInfoPtr makeHints(const std::string& providers, uint64_t extraCaps) {
  OfiInfoPtr hints(ofiDupinfo(nullptr));
  if (!hints) return hints;
  hints->ep_attr->type = FI_EP_RDM;
  hints->caps = FI_TAGGED | FI_MSG | extraCaps;
  hints->mode = FI_CONTEXT | FI_CONTEXT2;
  hints->domain_attr->mr_mode = FI_MR_LOCAL | FI_MR_ENDPOINT | FI_MR_VIRT_ADDR |
                                FI_MR_ALLOCATED | FI_MR_PROV_KEY;
  if (extraCaps & FI_HMEM) hints->domain_attr->mr_mode |= FI_MR_HMEM;
  // Every call into libfabric happens under the proxy's progress lock: one thread at a time.
  hints->domain_attr->threading = FI_THREAD_DOMAIN;
  // Every data message carries its call stamp (base/call_stamp.h) as 8 bytes of remote
  // completion data: providers that cannot deliver them are not offered.
  hints->domain_attr->cq_data_size = sizeof(uint64_t);
  hints->fabric_attr->prov_name = strdup(providers.c_str());  // fi_freeinfo frees it
  return hints;
}

int query(const std::string& providers, uint64_t extraCaps, fi_info** out) {
  OfiInfoPtr hints = makeHints(providers, extraCaps);
  if (!hints || !hints->fabric_attr->prov_name) return -FI_ENOMEM;
  return ofiGetinfo(kOfiApiVersion, nullptr, nullptr, 0, hints.get(), out);
}

// Whether the entry's own address is the IP address the rest of mixccl listens on.
bool sameAddress(const fi_info* i, const WireAddress& w) {
  if (!i->src_addr) return false;
  if (i->addr_format == FI_SOCKADDR_IN && w.family == AF_INET &&
      i->src_addrlen >= sizeof(sockaddr_in)) {
    const sockaddr_in* a = static_cast<const sockaddr_in*>(i->src_addr);
    return memcmp(&a->sin_addr, w.addr, 4) == 0;
  }
  if (i->addr_format == FI_SOCKADDR_IN6 && w.family == AF_INET6 &&
      i->src_addrlen >= sizeof(sockaddr_in6)) {
    const sockaddr_in6* a = static_cast<const sockaddr_in6*>(i->src_addr);
    return memcmp(&a->sin6_addr, w.addr, 16) == 0;
  }
  return false;
}

}  // namespace

std::string describeOfiInfo(const fi_info* info) {
  std::string s = info->fabric_attr && info->fabric_attr->prov_name ? info->fabric_attr->prov_name : "?";
  s += " (fabric ";
  s += info->fabric_attr && info->fabric_attr->name ? info->fabric_attr->name : "?";
  s += ", domain ";
  s += info->domain_attr && info->domain_attr->name ? info->domain_attr->name : "?";
  s += ")";
  return s;
}

Result chooseOfiProvider(const std::string& providers, const PeerInfo& local, OfiChoice* out) {
  MIXCCL_CHECK(loadLibfabric(local.rank));
  if (providers.empty())
    return raiseError(mixcclInvalidArgument, "rank %d: libfabric: MIXCCL_OFI_PROVIDER is empty "
                      "(try \"tcp;ofi_rxm\")", local.rank);
  fi_info* list = nullptr;
  bool directed = true;
  int rc = query(providers, FI_DIRECTED_RECV, &list);
  if (rc == -FI_ENODATA) {
    directed = false;  // the sender rank in the tag still tells sources apart (ofi_tag.h)
    rc = query(providers, 0, &list);
  }
  if (rc == -FI_ENODATA || (rc == 0 && !list))
    return raiseError(mixcclInvalidArgument, "rank %d: libfabric: no provider matches "
                      "MIXCCL_OFI_PROVIDER=\"%s\" with reliable datagram endpoints and tagged "
                      "messages (fi_info -l lists the providers of this host)", local.rank,
                      providers.c_str());
  if (rc != 0)
    return raiseError(mixcclSystemError, "rank %d: libfabric: fi_getinfo for provider \"%s\" "
                      "failed: %s", local.rank, providers.c_str(), ofiStrerror(-rc));
  const fi_info* pick = list;
  for (const fi_info* i = list; i; i = i->next)
    if (sameAddress(i, local.listenAddr)) {
      pick = i;
      break;
    }
  out->info.reset(ofiDupinfo(pick));
  ofiFreeinfo(list);
  if (!out->info)
    return raiseError(mixcclSystemError, "rank %d: libfabric: fi_dupinfo failed (out of memory)",
                      local.rank);
  out->info->next = nullptr;  // fi_dupinfo copies one entry, never the list after it
  out->directedRecv = directed;
  // FI_HMEM is asked for separately: asking in the main query could exclude a provider that
  // serves host memory fine. The answer is only reported (Transport::supportsMemory).
  fi_info* hm = nullptr;
  std::string exact = out->info->fabric_attr->prov_name ? out->info->fabric_attr->prov_name : providers;
  out->hmem = query(exact, FI_HMEM | (directed ? FI_DIRECTED_RECV : 0), &hm) == 0 && hm;
  if (hm) ofiFreeinfo(hm);
  return mixcclSuccess;
}

}  // namespace mixccl
