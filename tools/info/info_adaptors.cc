// Adaptors: each one known by name or found as a plugin file is tried the way a job would use
// it, with a one-rank communicator (mixcclCommInitRankConfig, config.adaptor). So "usable" and
// the reason a plugin is not are the library's own loader, version check and device check, not
// a second opinion.
#include <dirent.h>
#include <dlfcn.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <string>
#include <vector>

#include "info_probes.h"
#include "mixccl.h"

namespace mixccl_info {
namespace {

constexpr const char* kPluginPrefix = "libmixccl-adaptor-";
constexpr const char* kPluginSuffix = ".so";
// The adaptors of this project; other plugins are found by their file names.
const std::vector<std::string> kKnownAdaptors = {"host", "gloo", "mpi", "nccl"};
// A probe that cannot finish (a device library that hangs at init) fails after this.
constexpr int kProbeTimeoutS = 20;

std::string dirOf(const std::string& path) {
  size_t slash = path.rfind('/');
  return slash == std::string::npos ? "." : path.substr(0, slash);
}

bool isFile(const std::string& path) { return access(path.c_str(), R_OK) == 0; }

std::string findPlugin(const std::string& name, const std::vector<std::string>& searchPath) {
  for (const auto& dir : searchPath) {
    std::string path = dir + "/" + kPluginPrefix + name + kPluginSuffix;
    if (isFile(path)) return path;
  }
  return "";
}

// Names of the plugin files in the search path (libmixccl-adaptor-<name>.so).
std::vector<std::string> pluginNames(const std::vector<std::string>& searchPath) {
  std::vector<std::string> names;
  std::string prefix = kPluginPrefix, suffix = kPluginSuffix;
  for (const auto& dir : searchPath) {
    DIR* d = opendir(dir.c_str());
    if (d == nullptr) continue;
    while (dirent* e = readdir(d)) {
      std::string f = e->d_name;
      if (f.size() > prefix.size() + suffix.size() && f.compare(0, prefix.size(), prefix) == 0 &&
          f.compare(f.size() - suffix.size(), suffix.size(), suffix) == 0) {
        names.push_back(f.substr(prefix.size(), f.size() - prefix.size() - suffix.size()));
      }
    }
    closedir(d);
  }
  return names;
}

AdaptorProbe tryAdaptor(const std::string& name, const std::vector<std::string>& searchPath) {
  AdaptorProbe p;
  p.name = name;
  p.file = name == "host" ? "built-in" : findPlugin(name, searchPath);
  mixcclUniqueId id;
  if (mixcclGetUniqueId(&id) != mixcclSuccess) {
    p.why = std::string("mixcclGetUniqueId failed: ") + mixcclGetLastError(nullptr);
    return p;
  }
  mixcclConfig_t config = MIXCCL_CONFIG_INITIALIZER;
  config.adaptor = name.c_str();
  config.timeout = kProbeTimeoutS;
  config.commName = "mixccl-info";
  mixcclComm_t comm = nullptr;
  mixcclResult_t r = mixcclCommInitRankConfig(&comm, 1, id, 0, &config);
  if (r == mixcclSuccess) {
    p.usable = true;
    mixcclCommDestroy(comm);
  } else {
    p.why = mixcclGetLastError(nullptr);
    if (p.why.empty()) p.why = mixcclGetErrorString(r);
  }
  return p;
}

}  // namespace

std::vector<std::string> pluginSearchPath() {
  std::vector<std::string> dirs;
  if (const char* env = getenv("MIXCCL_PLUGIN_PATH")) {
    std::string list = env;
    size_t start = 0;
    while (start <= list.size()) {
      size_t colon = list.find(':', start);
      if (colon == std::string::npos) colon = list.size();
      if (colon > start) dirs.push_back(list.substr(start, colon - start));
      start = colon + 1;
    }
  }
  Dl_info info{};
  if (dladdr(reinterpret_cast<void*>(&mixcclGetVersion), &info) && info.dli_fname) {
    char real[4096];
    dirs.push_back(dirOf(realpath(info.dli_fname, real) ? real : info.dli_fname));
  }
  std::string installDir = MIXCCL_INFO_PLUGIN_INSTALL_DIR;
  if (!installDir.empty()) dirs.push_back(installDir);
  return dirs;
}

std::vector<AdaptorProbe> probeAdaptors(const std::vector<std::string>& searchPath,
                                        std::string* defaultAdaptor) {
  std::vector<std::string> names = kKnownAdaptors;
  for (const auto& n : pluginNames(searchPath)) {
    if (std::find(names.begin(), names.end(), n) == names.end()) names.push_back(n);
  }
  std::vector<AdaptorProbe> probes;
  bool ncclUsable = false;
  for (const auto& n : names) {
    probes.push_back(tryAdaptor(n, searchPath));
    if (n == "nccl") ncclUsable = probes.back().usable;
  }
  const char* configured = getenv("MIXCCL_ADAPTOR");
  if (configured && *configured) {
    *defaultAdaptor = std::string(configured) + " (MIXCCL_ADAPTOR)";
  } else if (ncclUsable) {
    *defaultAdaptor = "nccl (MIXCCL_ADAPTOR unset: the nccl adaptor loads and sees a device)";
  } else {
    *defaultAdaptor = "host (MIXCCL_ADAPTOR unset and the nccl adaptor is not usable)";
  }
  return probes;
}

}  // namespace mixccl_info
