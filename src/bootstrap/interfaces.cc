#include "bootstrap/interfaces.h"

#include <ifaddrs.h>
#include <net/if.h>
#include <netinet/in.h>

#include <cstring>

#include "base/env.h"
#include "base/error.h"
#include "base/log.h"

namespace mixccl {
namespace {

bool isLinkLocalV6(const SocketAddress& a) {
  if (a.family() != AF_INET6) return false;
  const auto* in6 = reinterpret_cast<const sockaddr_in6*>(&a.storage);
  return IN6_IS_ADDR_LINKLOCAL(&in6->sin6_addr);
}

}  // namespace

std::vector<NetInterface> listInterfaces(const std::string& spec, const std::string& family) {
  std::vector<NetInterface> out;
  ifaddrs* list = nullptr;
  if (getifaddrs(&list) != 0) return out;
  for (ifaddrs* it = list; it; it = it->ifa_next) {
    if (!it->ifa_addr || !(it->ifa_flags & IFF_UP)) continue;
    int fam = it->ifa_addr->sa_family;
    if (fam != AF_INET && fam != AF_INET6) continue;
    if (family == "AF_INET" && fam != AF_INET) continue;
    if (family == "AF_INET6" && fam != AF_INET6) continue;
    if (!interfaceMatches(spec, it->ifa_name)) continue;
    NetInterface ni;
    ni.name = it->ifa_name;
    ni.address.length = fam == AF_INET ? sizeof(sockaddr_in) : sizeof(sockaddr_in6);
    memcpy(&ni.address.storage, it->ifa_addr, ni.address.length);
    if (isLinkLocalV6(ni.address)) continue;
    ni.address.setPort(0);
    out.push_back(ni);
  }
  freeifaddrs(list);
  return out;
}

Result selectInterface(NetInterface* out) {
  static const NetInterface chosen = [] {
    const std::string& spec = env().socketIfname;
    const std::string& family = env().socketFamily;
    std::vector<NetInterface> found = listInterfaces(spec, family);
    if (found.empty() && spec.empty()) found = listInterfaces("lo", family);
    NetInterface best;
    for (const NetInterface& ni : found) {
      if (!best.address.valid() || (family.empty() && ni.address.family() == AF_INET &&
                                    best.address.family() != AF_INET))
        best = ni;
    }
    if (best.address.valid())
      INFO(kLogInit | kLogNet, "using interface %s address %s", best.name.c_str(),
           best.address.toString().c_str());
    return best;
  }();
  if (!chosen.address.valid())
    return raiseError(mixcclSystemError,
                      "no usable network interface matches MIXCCL_SOCKET_IFNAME='%s' "
                      "(MIXCCL_SOCKET_FAMILY='%s')",
                      env().socketIfname.c_str(), env().socketFamily.c_str());
  *out = chosen;
  return mixcclSuccess;
}

}  // namespace mixccl
