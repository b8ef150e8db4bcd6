#include "algo/host_map.h"

#include <cstdlib>
#include <map>
#include <sstream>

#include "base/error.h"

namespace mixccl {

DomainMap groupRanksByHost(const std::vector<uint64_t>& hostKeys) {
  DomainMap map;
  std::map<uint64_t, int> indexOfKey;
  map.domainOf.resize(hostKeys.size());
  map.indexInDomain.resize(hostKeys.size());
  for (size_t r = 0; r < hostKeys.size(); ++r) {
    auto it = indexOfKey.find(hostKeys[r]);
    if (it == indexOfKey.end()) {
      it = indexOfKey.emplace(hostKeys[r], (int)map.domains.size()).first;
      map.domains.emplace_back();
      map.domains.back().color = it->second;
    }
    Domain& host = map.domains[it->second];
    map.domainOf[r] = it->second;
    map.indexInDomain[r] = (int)host.ranks.size();
    host.ranks.push_back((int)r);
  }
  return map;
}

Result parseHostSplit(const std::string& spec, int nranks, std::vector<uint64_t>* keys) {
  if (spec.empty()) return mixcclSuccess;
  std::vector<uint64_t> labels;
  std::stringstream in(spec);
  std::string item;
  while (std::getline(in, item, ',')) {
    char* end = nullptr;
    long long v = item.empty() ? -1 : strtoll(item.c_str(), &end, 10);
    if (item.empty() || *end != '\0' || v < 0)
      return raiseError(mixcclInvalidArgument,
                        "MIXCCL_HIER_HOSTS='%s': item %zu ('%s') is not a host label (an integer "
                        ">= 0)", spec.c_str(), labels.size(), item.c_str());
    labels.push_back((uint64_t)v);
  }
  if ((int)labels.size() != nranks)
    return raiseError(mixcclInvalidArgument,
                      "MIXCCL_HIER_HOSTS='%s' lists %zu host labels but the communicator has %d ranks "
                      "(one per rank)", spec.c_str(), labels.size(), nranks);
  *keys = labels;
  return mixcclSuccess;
}

uint64_t hostSplitHash(const std::string& spec) {
  if (spec.empty()) return 0;
  uint64_t h = 1469598103934665603ull;  // FNV-1a
  for (unsigned char c : spec) h = (h ^ c) * 1099511628211ull;
  return h ? h : 1;  // 0 stays "unset"
}

Result checkHostSplitAgreed(int rank, const std::string& spec, const std::vector<uint64_t>& hashes,
                            const std::vector<std::string>& names) {
  // At most this many ranks by name: the message stays readable at thousands of ranks.
  constexpr int kNamed = 4;
  std::string differ;
  int count = 0;
  for (size_t r = 1; r < hashes.size(); ++r) {
    if (hashes[r] == hashes[0]) continue;
    if (count < kNamed) differ += (count ? ", " : "") + names[r];
    ++count;
  }
  if (count == 0) return mixcclSuccess;
  if (count > kNamed) differ += " and " + std::to_string(count - kNamed) + " more";
  const std::string here = spec.empty() ? "unset" : "'" + spec + "'";
  return raiseError(mixcclInvalidUsage, "rank %d: MIXCCL_HIER_HOSTS must be the same on every rank, "
                    "but %s %s it differently from %s (here: %s)", rank, differ.c_str(),
                    count == 1 ? "sets" : "set", names[0].c_str(), here.c_str());
}

std::string describeHosts(const DomainMap& hosts) {
  std::string s = std::to_string(hosts.domains.size()) +
                  (hosts.domains.size() == 1 ? " host: " : " hosts: ");
  for (size_t h = 0; h < hosts.domains.size(); ++h) {
    if (h) s += " + ";
    s += "{";
    const std::vector<int>& ranks = hosts.domains[h].ranks;
    for (size_t i = 0; i < ranks.size(); ++i) s += (i ? "," : "") + std::to_string(ranks[i]);
    s += "}";
  }
  return s;
}

}  // namespace mixccl
