#include "vendor_caller.h"

#include <dlfcn.h>

#include <map>
#include <mutex>
#include <string>
#include <utility>

namespace nccl_shim {

void* vendorOwnDefinition(const char* name, const void* caller) {
  Dl_info from;
  if (dladdr(caller, &from) == 0 || from.dli_fname == nullptr || from.dli_fbase == nullptr)
    return nullptr;
  Dl_info self;
  if (dladdr(reinterpret_cast<void*>(&vendorOwnDefinition), &self) != 0 &&
      self.dli_fbase == from.dli_fbase)
    return nullptr;
  // One lookup per (library, name): a user's calls come from one or two libraries.
  static std::mutex mutex;
  static std::map<std::pair<const void*, std::string>, void*> known;
  std::lock_guard<std::mutex> lock(mutex);
  auto key = std::make_pair(static_cast<const void*>(from.dli_fbase), std::string(name));
  auto it = known.find(key);
  if (it != known.end()) return it->second;
  void* own = nullptr;
  // The library is loaded (it called us): RTLD_NOLOAD only takes a reference, dropped below.
  // dlsym on its handle looks in the library first; the definition must be its own.
  if (void* h = dlopen(from.dli_fname, RTLD_NOLOAD | RTLD_LAZY)) {
    void* f = dlsym(h, name);
    Dl_info where;
    if (f != nullptr && dladdr(f, &where) != 0 && where.dli_fbase == from.dli_fbase) own = f;
    dlclose(h);
  }
  known.emplace(key, own);
  return own;
}

}  // namespace nccl_shim
