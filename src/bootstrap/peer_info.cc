#include "bootstrap/peer_info.h"

#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <string>

namespace mixccl {
namespace {

// FNV-1a: a stable hash that only needs to tell hosts apart.
uint64_t fnv1a(const std::string& s) {
  uint64_t h = 1469598103934665603ull;
  for (unsigned char c : s) { h ^= c; h *= 1099511628211ull; }
  return h;
}

std::string readFirstLine(const char* path) {
  FILE* f = fopen(path, "r");
  if (!f) return "";
  char buf[128] = {0};
  if (!fgets(buf, sizeof(buf), f)) buf[0] = 0;
  fclose(f);
  return buf;
}

}  // namespace

std::string describePeer(const std::vector<PeerInfo>& peers, int r) {
  if (r < 0 || r >= (int)peers.size()) return "rank " + std::to_string(r);
  const PeerInfo& p = peers[r];
  return "rank " + std::to_string(r) + " (" +
         std::string(p.hostname, strnlen(p.hostname, sizeof(p.hostname))) + " pid " +
         std::to_string(p.pid) + ")";
}

void fillLocalHostInfo(PeerInfo* info) {
  char host[64] = {0};
  gethostname(host, sizeof(host) - 1);
  memcpy(info->hostname, host, sizeof(info->hostname));
  // Network namespaces on one machine count as different hosts (they cannot share sockets'
  // addresses), so the hash includes the namespace identity next to the boot id.
  char nsLink[128] = {0};
  ssize_t n = readlink("/proc/self/ns/net", nsLink, sizeof(nsLink) - 1);
  if (n < 0) nsLink[0] = 0;
  info->hostHash = fnv1a(std::string(host) + "|" +
                         readFirstLine("/proc/sys/kernel/random/boot_id") + "|" + nsLink);
  info->pid = (int32_t)getpid();
}

}  // namespace mixccl
