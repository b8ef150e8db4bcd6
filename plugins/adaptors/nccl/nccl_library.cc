#include "nccl_library.h"

#include <dlfcn.h>
#include <glob.h>
#include <limits.h>
#include <stdlib.h>
#include <unistd.h>

#include <set>

namespace mixccl_nccl {
namespace {

constexpr const char* kLibName = "libnccl.so.2";

void split(const char* list, std::vector<std::string>* out) {
  if (list == nullptr) return;
  std::string s(list);
  size_t start = 0;
  while (start <= s.size()) {
    size_t end = s.find(':', start);
    if (end == std::string::npos) end = s.size();
    if (end > start) out->push_back(s.substr(start, end - start));
    start = end + 1;
  }
}

void globInto(const std::string& pattern, std::vector<std::string>* out) {
  glob_t g;
  if (glob(pattern.c_str(), 0, nullptr, &g) == 0)
    for (size_t i = 0; i < g.gl_pathc; ++i) out->push_back(g.gl_pathv[i]);
  globfree(&g);
}

void append(std::string* tried, const std::string& what) {
  *tried += (tried->empty() ? "" : "; ") + what;
}

// With mixccl's shim in the process's global scope (linked or preloaded as libnccl.so.2), NCCL
// must be opened with RTLD_DEEPBIND: NCCL calls its own exported functions (ncclCommEnsureReady
// calls ncclCommGetAsyncError before every collective), and without it the dynamic linker binds
// those calls to the shim's definitions, which refuse NCCL's communicator (seen on a GPU: every
// ncclAllReduce through the drop-in failed with ncclInvalidUsage). The address sanitizer refuses
// RTLD_DEEPBIND, so an ASan build keeps the plain flags (and the shim over real NCCL fails there).
int vendorOpenFlags() {
#if defined(__SANITIZE_ADDRESS__)
  return RTLD_NOW | RTLD_LOCAL;
#else
  return RTLD_NOW | RTLD_LOCAL | (dlsym(RTLD_DEFAULT, kShimMarker) != nullptr ? RTLD_DEEPBIND : 0);
#endif
}

// Opens path (a file path or the bare loader name). Returns "" with *handle set, or why not.
std::string tryOne(const std::string& path, void** handle) {
  void* h = dlopen(path.c_str(), vendorOpenFlags());
  if (h == nullptr) {
    const char* why = dlerror();
    return path + ": " + (why ? why : "not loadable");
  }
  // The bare name resolves to whatever libnccl.so.2 is loaded already: with the shim linked or
  // preloaded, that is the shim. dlsym on the handle searches that library (and its needed
  // libraries, which for NVIDIA's NCCL never include the shim).
  if (dlsym(h, kShimMarker) != nullptr) {
    dlclose(h);
    return path + ": mixccl's NCCL shim (exports " + kShimMarker + "), not NVIDIA's NCCL";
  }
  *handle = h;
  return "";
}

// LD_LIBRARY_PATH's folders, then the CUDA toolkit's and the system's.
std::vector<std::string> libraryDirectories() {
  std::vector<std::string> dirs;
  split(getenv("LD_LIBRARY_PATH"), &dirs);
  for (const char* d : {"/usr/local/cuda/lib64", "/usr/local/cuda/lib", "/usr/lib/x86_64-linux-gnu",
                        "/usr/lib/aarch64-linux-gnu", "/usr/lib64", "/usr/lib", "/usr/local/lib"})
    dirs.push_back(d);
  return dirs;
}

// The folder `sub` (e.g. nvidia/nccl/lib) of pip's nvidia wheels: in a virtual environment,
// conda, the user's and the system's site-packages.
void wheelDirectories(const std::string& sub, std::vector<std::string>* out) {
  std::vector<std::string> prefixes;
  if (const char* v = getenv("VIRTUAL_ENV")) prefixes.push_back(v);
  if (const char* c = getenv("CONDA_PREFIX")) prefixes.push_back(c);
  if (const char* h = getenv("HOME")) prefixes.push_back(std::string(h) + "/.local");
  prefixes.push_back("/usr/local");
  prefixes.push_back("/usr");
  for (const std::string& p : prefixes) {
    globInto(p + "/lib/python3*/site-packages/" + sub, out);
    globInto(p + "/lib/python3*/dist-packages/" + sub, out);
  }
  globInto("/usr/lib/python3/dist-packages/" + sub, out);
}

std::string realKey(const std::string& file) {
  char real[PATH_MAX];
  return realpath(file.c_str(), real) ? real : file;
}

}  // namespace

NcclSearch defaultNcclSearch() {
  NcclSearch s;
  if (const char* p = getenv("MIXCCL_NCCL_LIBRARY"); p != nullptr && *p) {
    s.explicitPath = p;
    return s;
  }
  s.directories = libraryDirectories();
  wheelDirectories("nvidia/nccl/lib", &s.directories);
  return s;
}

std::string openRealNccl(const NcclSearch& search, void** handle, std::string* path) {
  *handle = nullptr;
  if (!search.explicitPath.empty()) {
    std::string why = tryOne(search.explicitPath, handle);
    if (why.empty()) {
      *path = search.explicitPath;
      return "";
    }
    return "MIXCCL_NCCL_LIBRARY=" + why;
  }
  std::string tried;
  std::set<std::string> seen;  // one file reached through several folders is tried once
  for (const std::string& dir : search.directories) {
    const std::string file = dir + "/" + kLibName;
    if (access(file.c_str(), F_OK) != 0) continue;
    if (!seen.insert(realKey(file)).second) continue;
    std::string why = tryOne(file, handle);
    if (why.empty()) {
      *path = file;
      return "";
    }
    append(&tried, why);
  }
  if (search.tryLoaderName) {
    std::string why = tryOne(kLibName, handle);
    if (why.empty()) {
      *path = kLibName;
      return "";
    }
    append(&tried, why);
  }
  if (tried.empty()) tried = std::string("no ") + kLibName + " in the folders searched";
  return tried + "; set MIXCCL_NCCL_LIBRARY to NVIDIA's libnccl.so.2";
}

RuntimeSearch defaultRuntimeSearch() {
  RuntimeSearch s;
  if (const char* p = getenv("MIXCCL_CUDA_RUNTIME_LIBRARY"); p != nullptr && *p) {
    s.explicitName = p;
    return s;
  }
  // Newest first. A runtime the process already uses (torch loads its wheel's) is preferred:
  // a second copy of libcudart would keep its own state beside it.
  s.loaderNames = {"libcudart.so.13", "libcudart.so.12", "libcudart.so.11.0", "libcudart.so"};
  s.loadedNames = s.loaderNames;
  s.directories = libraryDirectories();
  wheelDirectories("nvidia/cu13/lib", &s.directories);          // CUDA 13 wheels
  wheelDirectories("nvidia/cuda_runtime/lib", &s.directories);  // CUDA 12 wheels
  return s;
}

std::string openRuntime(const RuntimeSearch& search, void** handle, std::string* path) {
  *handle = nullptr;
  auto open = [&](const std::string& name, int extra, std::string* tried) {
    void* h = dlopen(name.c_str(), RTLD_NOW | RTLD_LOCAL | extra);
    if (h != nullptr) {
      *handle = h;
      *path = name;
      return true;
    }
    const char* why = dlerror();
    if (tried != nullptr) append(tried, name + ": " + (why ? why : "not loadable"));
    return false;
  };
  std::string tried;
  if (!search.explicitName.empty()) {
    if (open(search.explicitName, 0, &tried)) return "";
    return "MIXCCL_CUDA_RUNTIME_LIBRARY=" + tried;
  }
  for (const std::string& name : search.loadedNames)
    if (open(name, RTLD_NOLOAD, nullptr)) return "";
  std::set<std::string> seen;
  for (const std::string& dir : search.directories) {
    std::vector<std::string> files;
    globInto(dir + "/libcudart.so*", &files);
    for (const std::string& file : files) {
      if (!seen.insert(realKey(file)).second) continue;
      if (open(file, 0, &tried)) return "";
    }
  }
  for (const std::string& name : search.loaderNames)
    if (open(name, 0, &tried)) return "";
  if (tried.empty()) tried = "no libcudart.so* in the folders searched";
  return tried + "; set MIXCCL_CUDA_RUNTIME_LIBRARY to the runtime's library";
}

}  // namespace mixccl_nccl
