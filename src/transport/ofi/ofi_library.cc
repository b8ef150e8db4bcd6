#include "transport/ofi/ofi_library.h"

#include <dlfcn.h>

#include <mutex>
#include <string>

#include "base/error.h"

namespace mixccl {
namespace {

struct Libfabric {
  int (*getinfo)(uint32_t, const char*, const char*, uint64_t, const fi_info*, fi_info**) = nullptr;
  void (*freeinfo)(fi_info*) = nullptr;
  fi_info* (*dupinfo)(const fi_info*) = nullptr;
  int (*fabric)(fi_fabric_attr*, fid_fabric**, void*) = nullptr;
  const char* (*strerror)(int) = nullptr;
  std::string failure;  // empty: loaded
};

Libfabric gLib;
std::once_flag gOnce;

// The symbol at the version a program linked against these headers would bind (fi_getinfo
// and the fi_info functions changed their structures at FABRIC_1.3), else the library's
// default. Binding the default alone could hand 1.3-sized structures to a newer layout.
template <typename F>
bool bind(void* handle, const char* name, const char* version, F* out) {
  void* p = dlvsym(handle, name, version);
  if (!p) p = dlsym(handle, name);
  *out = reinterpret_cast<F>(p);
  return p != nullptr;
}

void open() {
  // RTLD_LOCAL: its symbols stay out of the global namespace, so a program that links its own
  // libfabric is not affected.
  void* h = dlopen("libfabric.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!h) {
    const char* e = dlerror();
    gLib.failure = std::string("libfabric.so.1 could not be loaded: ") + (e ? e : "unknown error");
    return;
  }
  if (!bind(h, "fi_getinfo", "FABRIC_1.3", &gLib.getinfo) ||
      !bind(h, "fi_freeinfo", "FABRIC_1.3", &gLib.freeinfo) ||
      !bind(h, "fi_dupinfo", "FABRIC_1.3", &gLib.dupinfo) ||
      !bind(h, "fi_fabric", "FABRIC_1.1", &gLib.fabric) ||
      !bind(h, "fi_strerror", "FABRIC_1.0", &gLib.strerror)) {
    gLib.failure = "libfabric.so.1 lacks fi_getinfo, fi_freeinfo, fi_dupinfo, fi_fabric or "
                   "fi_strerror (not a libfabric 1.x?)";
    dlclose(h);
    return;
  }
  // Never closed: libfabric's providers keep threads and atexit handlers of their own.
}

}  // namespace

Result loadLibfabric(int rank) {
  std::call_once(gOnce, open);
  if (!gLib.failure.empty())
    return raiseError(mixcclSystemError, "rank %d: MIXCCL_NET=ofi: %s", rank, gLib.failure.c_str());
  return mixcclSuccess;
}

int ofiGetinfo(uint32_t version, const char* node, const char* service, uint64_t flags,
               const fi_info* hints, fi_info** info) {
  return gLib.getinfo(version, node, service, flags, hints, info);
}

void ofiFreeinfo(fi_info* info) {
  if (info) gLib.freeinfo(info);
}

fi_info* ofiDupinfo(const fi_info* info) { return gLib.dupinfo(info); }

int ofiFabric(fi_fabric_attr* attr, fid_fabric** fabric, void* context) {
  return gLib.fabric(attr, fabric, context);
}

const char* ofiStrerror(int errnum) {
  return gLib.strerror ? gLib.strerror(errnum) : "(libfabric not loaded)";
}

}  // namespace mixccl
