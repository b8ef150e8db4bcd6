// Small readers of sysfs (and of any directory of its shape, for tests): one-line attribute
// files, directory listings, and PCI bus ids as the last component of a device path.
#include <dirent.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "topology/topology_internal.h"

namespace mixccl {

std::string readSysfsText(const std::string& path) {
  FILE* f = fopen(path.c_str(), "r");
  if (!f) return "";
  char buf[256] = {0};
  size_t n = fread(buf, 1, sizeof(buf) - 1, f);
  fclose(f);
  std::string s(buf, n);
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ' || s.back() == '\r')) s.pop_back();
  return s;
}

std::vector<std::string> listSysfsDir(const std::string& path, bool* exists) {
  std::vector<std::string> out;
  DIR* d = opendir(path.c_str());
  if (exists) *exists = d != nullptr;
  if (!d) return out;
  while (dirent* e = readdir(d)) {
    if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0) continue;
    out.push_back(e->d_name);
  }
  closedir(d);
  std::sort(out.begin(), out.end());
  return out;
}

bool looksLikePciBusId(const std::string& s) {
  unsigned dom, bus, dev, fn;
  char tail;
  return sscanf(s.c_str(), "%x:%x:%x.%x%c", &dom, &bus, &dev, &fn, &tail) == 4;
}

}  // namespace mixccl
