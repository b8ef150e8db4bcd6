// Finding NVIDIA's libnccl.so.2 for the nccl adaptor, and never mixccl's own NCCL shim
// (compat/nccl), which has the same name and would send every call back into mixccl.
#pragma once

#include <string>
#include <vector>

namespace mixccl_nccl {

// The symbol only the shim exports; a library that has it is refused.
constexpr const char* kShimMarker = "mixcclNcclShimMarker";

struct NcclSearch {
  std::string explicitPath;              // MIXCCL_NCCL_LIBRARY: the only candidate when set
  std::vector<std::string> directories;  // searched in order for libnccl.so.2
  bool tryLoaderName = true;             // last: dlopen("libnccl.so.2") (ld.so cache, RPATH)
};

// The search the adaptor uses: MIXCCL_NCCL_LIBRARY, else LD_LIBRARY_PATH's folders, the CUDA
// toolkit's, the system's and the nvidia-nccl wheels' of the Python installs found.
NcclSearch defaultNcclSearch();

// Opens the first candidate that loads and is not the shim. Returns "" and sets *handle and
// *path, or returns why nothing fit (every candidate tried, with what was wrong with it).
std::string openRealNccl(const NcclSearch& search, void** handle, std::string* path);

}  // namespace mixccl_nccl
