// Finding the two libraries of the nccl adaptor: the NCCL-API library (NVIDIA's libnccl.so.2 by
// default, never mixccl's own NCCL shim (compat/nccl), which has the same name and would send
// every call back into mixccl) and the device runtime (libcudart by default).
#pragma once

#include <string>
#include <vector>

namespace mixccl_nccl {

// The symbol only the shim exports; a library that has it is refused.
constexpr const char* kShimMarker = "mixcclNcclShimMarker";

struct NcclSearch {
  std::string explicitPath;              // MIXCCL_NCCL_LIBRARY (name or path): the only candidate
  std::vector<std::string> directories;  // searched in order for libnccl.so.2
  bool tryLoaderName = true;             // last: dlopen("libnccl.so.2") (ld.so cache, RPATH)
};

// The search the adaptor uses: MIXCCL_NCCL_LIBRARY, else LD_LIBRARY_PATH's folders, the CUDA
// toolkit's, the system's and the nvidia-nccl wheels' of the Python installs found.
NcclSearch defaultNcclSearch();

// Opens the first candidate that loads and is not the shim. Returns "" and sets *handle and
// *path, or returns why nothing fit (every candidate tried, with what was wrong with it).
std::string openRealNccl(const NcclSearch& search, void** handle, std::string* path);

struct RuntimeSearch {
  std::string explicitName;               // MIXCCL_CUDA_RUNTIME_LIBRARY (name or path): the only
                                          // candidate when set
  std::vector<std::string> loadedNames;   // first: one the process has loaded already (torch's)
  std::vector<std::string> directories;   // then: libcudart.so* in each, in order
  std::vector<std::string> loaderNames;   // last: the loader's own search
};

// MIXCCL_CUDA_RUNTIME_LIBRARY, else a libcudart.so.{13,12,11.0} already loaded, else
// libcudart.so* in LD_LIBRARY_PATH's folders, the CUDA toolkit's, the system's and the
// nvidia-cuda-runtime wheels', else the loader's search for those names.
RuntimeSearch defaultRuntimeSearch();

// Opens the first candidate that loads. Returns "" and sets *handle and *path, or returns every
// candidate tried with why it did not load.
std::string openRuntime(const RuntimeSearch& search, void** handle, std::string* path);

}  // namespace mixccl_nccl
