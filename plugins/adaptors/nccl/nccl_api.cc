#include "nccl_api.h"

#include <dlfcn.h>
#include <link.h>

#include "nccl_library.h"

namespace mixccl_nccl {
namespace {

// The file a handle came from: a bare name ("libcudart.so.13") resolved by the loader is
// reported as the path it resolved to, so messages name the file that lacks a symbol.
std::string fileOf(void* handle, const std::string& opened) {
  struct link_map* map = nullptr;
  if (dlinfo(handle, RTLD_DI_LINKMAP, &map) == 0 && map != nullptr && map->l_name != nullptr &&
      map->l_name[0] != '\0')
    return map->l_name;
  return opened;
}

template <class F>
void bind(void* lib, const std::string& name, F* fn, std::string* missing) {
  *fn = reinterpret_cast<F>(dlsym(lib, name.c_str()));
  if (*fn == nullptr) *missing += (missing->empty() ? "" : ", ") + name;
}

}  // namespace

std::string loadApi(Api* api) {
  // NCCL first: in a process that runs mixccl's NCCL shim, "libnccl.so.2" is the shim, and the
  // adaptor must say so (nccl_library.h) whatever else the machine lacks.
  void* nccl = nullptr;
  std::string opened;
  std::string why = openRealNccl(defaultNcclSearch(), &nccl, &opened);
  if (nccl == nullptr) return "cannot load NCCL (" + why + ")";
  api->ncclFile = fileOf(nccl, opened);
  void* runtime = nullptr;
  why = openRuntime(defaultRuntimeSearch(), &runtime, &opened);
  if (runtime == nullptr) return "cannot load the CUDA runtime (" + why + ")";
  api->runtimeFile = fileOf(runtime, opened);

  // CUDA's names, or HIP's where the library is a HIP runtime (RCCL's pair).
  if (dlsym(runtime, "cudaGetDeviceCount") != nullptr) {
    api->runtimePrefix = "cuda";
  } else if (dlsym(runtime, "hipGetDeviceCount") != nullptr) {
    api->runtimePrefix = "hip";
  } else {
    return api->runtimeFile +
           " is not a CUDA or HIP runtime (it has neither cudaGetDeviceCount nor hipGetDeviceCount)";
  }
  std::string missing;
#define MIXCCL_NCCL_BIND_RUNTIME(s) bind(runtime, api->runtimePrefix + #s, &api->cuda##s, &missing);
  MIXCCL_NCCL_RUNTIME_FUNCTIONS(MIXCCL_NCCL_BIND_RUNTIME)
#undef MIXCCL_NCCL_BIND_RUNTIME
  if (!missing.empty()) return api->runtimeFile + ": missing " + missing;
#define MIXCCL_NCCL_BIND_LIBRARY(f) bind(nccl, #f, &api->f, &missing);
  MIXCCL_NCCL_LIBRARY_FUNCTIONS(MIXCCL_NCCL_BIND_LIBRARY)
#undef MIXCCL_NCCL_BIND_LIBRARY
  if (!missing.empty()) return api->ncclFile + ": missing " + missing;
  std::string absent;  // optional: left nullptr
#define MIXCCL_NCCL_BIND_OPTIONAL(f) bind(nccl, #f, &api->f, &absent);
  MIXCCL_NCCL_OPTIONAL_LIBRARY_FUNCTIONS(MIXCCL_NCCL_BIND_OPTIONAL)
#undef MIXCCL_NCCL_BIND_OPTIONAL
  return "";
}

}  // namespace mixccl_nccl
