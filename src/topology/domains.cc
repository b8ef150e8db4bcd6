#include "topology/domains.h"

#include <cerrno>
#include <cstring>
#include <cstdlib>
#include <map>
#include <utility>

#include "base/error.h"

namespace mixccl {

Result parseDomainSplit(const std::string& spec, int rank, int nranks, int* color) {
  *color = 0;
  if (spec.empty()) return mixcclSuccess;
  std::vector<long> colors;
  size_t pos = 0;
  while (pos <= spec.size()) {
    size_t comma = spec.find(',', pos);
    std::string item = spec.substr(pos, comma == std::string::npos ? std::string::npos : comma - pos);
    char* end = nullptr;
    errno = 0;
    long v = item.empty() ? -1 : strtol(item.c_str(), &end, 10);
    if (item.empty() || errno || *end != '\0' || v < 0 || v > 1000000)
      return raiseError(mixcclInvalidArgument,
                        "MIXCCL_DOMAIN_SPLIT='%s': item %zu ('%s') is not a color (an integer "
                        ">= 0); expected one color per rank, e.g. 0,1,1,1",
                        spec.c_str(), colors.size(), item.c_str());
    colors.push_back(v);
    if (comma == std::string::npos) break;
    pos = comma + 1;
  }
  if ((int)colors.size() != nranks)
    return raiseError(mixcclInvalidArgument,
                      "MIXCCL_DOMAIN_SPLIT='%s' lists %zu colors but the communicator has %d "
                      "ranks (one color per rank expected)", spec.c_str(), colors.size(), nranks);
  *color = (int)colors[rank];
  return mixcclSuccess;
}

DomainMap buildDomainMap(const std::vector<PeerInfo>& peers) {
  DomainMap map;
  const int n = (int)peers.size();
  map.domainOf.assign(n, -1);
  map.indexInDomain.assign(n, -1);
  std::map<std::pair<std::string, int>, int> index;
  for (int r = 0; r < n; ++r) {
    std::string adaptor(peers[r].adaptor, strnlen(peers[r].adaptor, sizeof(peers[r].adaptor)));
    auto key = std::make_pair(adaptor, (int)peers[r].domainColor);
    auto it = index.find(key);
    if (it == index.end()) {
      it = index.emplace(key, (int)map.domains.size()).first;
      Domain d;
      d.adaptor = adaptor;
      d.color = key.second;
      map.domains.push_back(d);
    }
    Domain& d = map.domains[it->second];
    map.domainOf[r] = it->second;
    map.indexInDomain[r] = (int)d.ranks.size();
    d.ranks.push_back(r);
  }
  return map;
}

std::string describeDomains(const DomainMap& map) {
  std::string s = std::to_string(map.domains.size()) +
                  (map.domains.size() == 1 ? " domain: " : " domains: ");
  for (size_t i = 0; i < map.domains.size(); ++i) {
    const Domain& d = map.domains[i];
    if (i) s += " + ";
    s += d.adaptor + " {";
    for (size_t k = 0; k < d.ranks.size(); ++k) s += (k ? "," : "") + std::to_string(d.ranks[k]);
    s += "}";
  }
  return s;
}

}  // namespace mixccl
