// Adaptor plugins: search, dlopen, table check and conversion (table_v2.h, table_v1.h), init,
// cache. See adaptor_loader.h and docs/adaptors.md.
#include "adaptors/adaptor_loader.h"
#include "adaptors/public_table.h"

#include <dlfcn.h>
#include <unistd.h>

#include <cctype>
#include <map>
#include <memory>
#include <mutex>

#include "adaptors/table_v1.h"
#include "adaptors/table_v2.h"
#include "base/env.h"
#include "base/error.h"
#include "base/log.h"

#ifndef MIXCCL_INSTALL_LIBDIR
#define MIXCCL_INSTALL_LIBDIR "/usr/local/lib"
#endif

namespace mixccl {
namespace {

// One load attempt's outcome, kept for the life of the process.
struct Entry {
  Result result = mixcclSuccess;
  std::string error;  // when result != success
  AdaptorTable table;  // what adaptor.table points to
  Adaptor adaptor;
};

std::mutex gMutex;
std::map<std::string, std::unique_ptr<Entry>>& cache() {
  static auto* m = new std::map<std::string, std::unique_ptr<Entry>>();  // never destroyed:
  return *m;  // plugins stay loaded until exit, and so do the tables pointing into them
}

bool fileExists(const std::string& path) { return access(path.c_str(), F_OK) == 0; }

std::string joinPaths(const std::vector<std::string>& paths) {
  std::string s;
  for (const auto& p : paths) s += (s.empty() ? "" : ", ") + p;
  return s;
}

// A name becomes part of a file name: refuse anything that could leave the folder.
bool validName(const std::string& name) {
  if (name.empty() || name.size() > 64) return false;
  for (char c : name)
    if (!(isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-')) return false;
  return true;
}

// Opens, checks and initialises one plugin file. Fills e; never logs.
void loadPluginFile(const std::string& name, const std::string& path, Entry* e) {
  e->result = mixcclInvalidArgument;
  void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) {
    const char* why = dlerror();
    e->error = "adaptor '" + name + "': dlopen(" + path + "): " + (why ? why : "unknown error");
    return;
  }
  // Never dlclose: a failed plugin may have started threads or registered handlers.
  std::string problem;
  dlerror();
  if (void* v2 = dlsym(handle, MIXCCL_ADAPTOR_SYMBOL)) {
    problem = adaptorTableFromV2(static_cast<const mixcclAdaptor_v2_t*>(v2), name, &e->table);
  } else {
    const char* why = dlerror();
    std::string missingV2 = why ? why : "symbol is NULL";
    void* v1 = dlsym(handle, MIXCCL_ADAPTOR_SYMBOL_V1);
    if (v1 == nullptr) {
      e->error = "adaptor '" + name + "': " + path + ": dlsym(" MIXCCL_ADAPTOR_SYMBOL "): " +
                 missingV2 + "; no " MIXCCL_ADAPTOR_SYMBOL_V1 " (ABI version 1) either";
      return;
    }
    problem = adaptorTableFromV1(static_cast<const mixcclAdaptor_v1_t*>(v1), name, &e->table);
  }
  if (!problem.empty()) {
    e->error = "adaptor '" + name + "': " + path + ": " + problem;
    return;
  }
  const AdaptorTable* table = &e->table;
  mixcclResult_t rc = table->init();
  if (rc != mixcclSuccess) {
    const char* why = table->lastError();
    e->result = mixcclSystemError;
    e->error = "adaptor '" + name + "': " + path + ": init failed: " +
               (why && *why ? why : "(the plugin gave no message)");
    return;
  }
  e->result = mixcclSuccess;
  e->adaptor = Adaptor{table, name, path, false, publicTableOf(*table)};
}

void loadEntry(const std::string& name, Entry* e) {
  if (name == "host") {
    e->adaptor = Adaptor{hostAdaptorTable(), "host", "built-in", true, publicTableOf(*hostAdaptorTable())};
    return;
  }
  if (!validName(name)) {
    e->result = mixcclInvalidArgument;
    e->error = "adaptor name '" + name + "' is invalid (letters, digits, '_' and '-' only)";
    return;
  }
  std::vector<std::string> tried;
  for (const auto& dir : adaptorSearchPath()) {
    std::string path = dir + "/" + adaptorFileName(name);
    tried.push_back(path);
    // The first file that exists is the plugin: a broken one is reported, not skipped.
    if (fileExists(path)) return loadPluginFile(name, path, e);
  }
  e->result = mixcclInvalidArgument;
  e->error = "adaptor '" + name + "': " + adaptorFileName(name) + " not found (tried " +
             joinPaths(tried) + "; set MIXCCL_PLUGIN_PATH)";
}

// Loads (or finds in the cache) without logging.
const Entry& lookup(const std::string& name) {
  std::lock_guard<std::mutex> lock(gMutex);
  auto& slot = cache()[name];
  if (!slot) {
    slot.reset(new Entry());
    loadEntry(name, slot.get());
    if (slot->result == mixcclSuccess)
      INFO(kLogInit, "adaptor '%s' loaded from %s", name.c_str(), slot->adaptor.path.c_str());
  }
  return *slot;
}

}  // namespace

std::string adaptorFileName(const std::string& name) {
  return "libmixccl-adaptor-" + name + ".so";
}

std::vector<std::string> adaptorSearchPath() {
  std::vector<std::string> dirs;
  const std::string& env = ::mixccl::env().pluginPath;
  size_t start = 0;
  while (start <= env.size()) {
    size_t end = env.find(':', start);
    if (end == std::string::npos) end = env.size();
    if (end > start) dirs.push_back(env.substr(start, end - start));
    start = end + 1;
  }
  // The folder of the object holding this code (libmixccl.so, or a program linking it
  // statically), so a build tree or an install tree works with no environment.
  Dl_info info;
  if (dladdr(reinterpret_cast<void*>(&adaptorSearchPath), &info) != 0 && info.dli_fname) {
    std::string self = info.dli_fname;
    size_t slash = self.rfind('/');
    if (slash != std::string::npos) dirs.push_back(slash == 0 ? "/" : self.substr(0, slash));
  }
  // Empty in the pip-installed package, whose libdir at build time was a temporary folder.
  if (MIXCCL_INSTALL_LIBDIR[0] != '\0') dirs.push_back(MIXCCL_INSTALL_LIBDIR);
  return dirs;
}

Result loadAdaptor(const std::string& name, const Adaptor** out) {
  const Entry& e = lookup(name);
  if (e.result != mixcclSuccess) return raiseError(e.result, "%s", e.error.c_str());
  *out = &e.adaptor;
  return mixcclSuccess;
}

std::string detectAdaptorName() {
  const Entry& e = lookup("nccl");
  if (e.result != mixcclSuccess) {
    INFO(kLogInit, "adaptor detection: host (nccl unusable: %s)", e.error.c_str());
    return "host";
  }
  int count = 0;
  mixcclResult_t rc = e.adaptor.table->getDeviceCount(&count);
  if (rc != mixcclSuccess || count <= 0) {
    INFO(kLogInit, "adaptor detection: host (nccl from %s sees no device: %s)",
         e.adaptor.path.c_str(), rc != mixcclSuccess ? e.adaptor.table->lastError() : "count 0");
    return "host";
  }
  INFO(kLogInit, "adaptor detection: nccl (%s, %d device(s))", e.adaptor.path.c_str(), count);
  return "nccl";
}

}  // namespace mixccl
