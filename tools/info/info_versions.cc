// Versions of mixccl and of the libraries it uses, as loaded at run time. The optional ones (UCX,
// libfabric, NCCL) are opened with dlopen, as mixccl itself opens them or as a job would find
// them: mixccl-info runs where they are missing, and says so.
#include <dlfcn.h>
#include <hwloc.h>

#include <cstdlib>
#include <string>
#include <vector>

#include "info_probes.h"
#include "mixccl.h"
#include "mixccl_adaptor.h"

namespace mixccl_info {
namespace {

std::string pathOfSymbol(void* symbol) {
  Dl_info info{};
  if (symbol == nullptr || dladdr(symbol, &info) == 0 || info.dli_fname == nullptr) return "";
  char real[4096];
  return realpath(info.dli_fname, real) ? real : info.dli_fname;
}

std::string dottedVersion(int code, int majorUnit, int minorUnit) {
  return std::to_string(code / majorUnit) + "." + std::to_string(code % majorUnit / minorUnit) +
         "." + std::to_string(code % minorUnit);
}

// dlopen of name; on failure version stays "" and note says why.
void* openLibrary(const char* name, LibraryVersion* out) {
  void* handle = dlopen(name, RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) {
    const char* err = dlerror();
    out->note = std::string("not found: ") + (err ? err : name);
  }
  return handle;
}

LibraryVersion mixcclVersion() {
  LibraryVersion v{"mixccl", "", "", ""};
  int code = 0;
  if (mixcclGetVersion(&code) == mixcclSuccess) v.version = dottedVersion(code, 10000, 100);
  v.path = pathOfSymbol(reinterpret_cast<void*>(&mixcclGetVersion));
  if (code != MIXCCL_VERSION_CODE)
    v.note = "this program was built for " + dottedVersion(MIXCCL_VERSION_CODE, 10000, 100);
  return v;
}

LibraryVersion hwlocVersion() {
  unsigned api = hwloc_get_api_version();
  LibraryVersion v{"hwloc", "", "", "host topology"};
  v.version = std::to_string(api >> 16) + "." + std::to_string((api >> 8) & 0xff) + "." +
              std::to_string(api & 0xff);
  v.path = pathOfSymbol(reinterpret_cast<void*>(&hwloc_get_api_version));
  return v;
}

LibraryVersion ucxVersion() {
  LibraryVersion v{"UCX", "", "", ""};
#ifdef MIXCCL_INFO_HAVE_UCX
  void* h = openLibrary("libucp.so.0", &v);
  if (h == nullptr) return v;
  using VersionString = const char* (*)();
  auto fn = reinterpret_cast<VersionString>(dlsym(h, "ucp_get_version_string"));
  if (fn) v.version = fn();
  v.path = pathOfSymbol(reinterpret_cast<void*>(fn));
  v.note = "MIXCCL_NET=ucx";
#else
  v.note = "this build of mixccl has no UCX transport (MIXCCL_WITH_UCX=OFF)";
#endif
  return v;
}

LibraryVersion libfabricVersion() {
  LibraryVersion v{"libfabric", "", "", ""};
#ifdef MIXCCL_HAVE_OFI
  void* h = openLibrary("libfabric.so.1", &v);
  if (h == nullptr) return v;
  using Version = uint32_t (*)();
  auto fn = reinterpret_cast<Version>(dlsym(h, "fi_version"));
  if (fn) {
    uint32_t code = fn();  // FI_VERSION(major, minor): major in the high 16 bits
    v.version = std::to_string(code >> 16) + "." + std::to_string(code & 0xffff);
  }
  v.path = pathOfSymbol(reinterpret_cast<void*>(fn));
  v.note = "MIXCCL_NET=ofi";
#else
  v.note = "this build of mixccl has no libfabric transport (MIXCCL_WITH_OFI=OFF)";
#endif
  return v;
}

// The NCCL a job's nccl adaptor would open: libnccl.so.2 by the loader's search (mixccl's own
// drop-in is not on this program's run path).
LibraryVersion ncclVersion() {
  LibraryVersion v{"NCCL", "", "", ""};
  void* h = openLibrary("libnccl.so.2", &v);
  if (h == nullptr) return v;
  using GetVersion = int (*)(int*);
  auto fn = reinterpret_cast<GetVersion>(dlsym(h, "ncclGetVersion"));
  int code = 0;
  if (fn && fn(&code) == 0) {
    // NCCL >= 2.9 codes versions as X*10000 + Y*100 + Z, older ones as X*1000 + Y*100 + Z.
    v.version = code >= 10000 ? dottedVersion(code, 10000, 100) : dottedVersion(code, 1000, 100);
  }
  v.path = pathOfSymbol(reinterpret_cast<void*>(fn));
  v.note = "the nccl adaptor's library";
  return v;
}

// What the pip-installed command passed: the installed torch and the one the extension was
// built for ("none" for either when there is none; "" when not given).
LibraryVersion torchVersion(const PythonSide& python) {
  LibraryVersion v{"torch", "", "", ""};
  std::vector<std::string> notes;
  if (python.torchVersion.empty()) {
    notes.push_back("not looked up: the pip-installed mixccl-info reports it");
  } else if (python.torchVersion == "none") {
    notes.push_back("not installed");
  } else {
    v.version = python.torchVersion;
  }
  if (python.torchBuiltFor == "none") {
    notes.push_back("this package has no torch backend extension");
  } else if (!python.torchBuiltFor.empty()) {
    notes.push_back("the backend extension was built for torch " + python.torchBuiltFor);
  }
  for (const auto& n : notes) v.note += (v.note.empty() ? "" : "; ") + n;
  return v;
}

}  // namespace

std::vector<LibraryVersion> probeVersions(const PythonSide& python, int* adaptorAbi) {
  *adaptorAbi = MIXCCL_ADAPTOR_ABI_VERSION;
  return {mixcclVersion(), torchVersion(python), ncclVersion(), ucxVersion(),
          libfabricVersion(), hwlocVersion()};
}

}  // namespace mixccl_info
