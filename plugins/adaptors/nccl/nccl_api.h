// The nccl adaptor's view of the device runtime and the NCCL-API library: one table of function
// pointers bound with dlsym (so one build loads anywhere), typed by the real headers where the
// build found them (nccl_api_real.h) and by hand-typed declarations otherwise
// (nccl_api_fallback.h). The adaptor code sees the chosen types through `decl`.
#pragma once

#include <string>

#include "nccl_api_list.h"

#ifdef MIXCCL_NCCL_REAL_HEADERS
#include "nccl_api_real.h"
namespace mixccl_nccl {
namespace decl = real;
}
#else
#include "nccl_api_fallback.h"
namespace mixccl_nccl {
namespace decl = fallback;
}
#endif

namespace mixccl_nccl {

struct Api {
  // Runtime members keep CUDA's names; on a HIP runtime they hold hipMalloc, ... (same shapes).
#define MIXCCL_NCCL_RUNTIME_MEMBER(s) decl::cuda##s##_fn cuda##s = nullptr;
  MIXCCL_NCCL_RUNTIME_FUNCTIONS(MIXCCL_NCCL_RUNTIME_MEMBER)
#undef MIXCCL_NCCL_RUNTIME_MEMBER
#define MIXCCL_NCCL_LIBRARY_MEMBER(f) decl::f##_fn f = nullptr;
  MIXCCL_NCCL_LIBRARY_FUNCTIONS(MIXCCL_NCCL_LIBRARY_MEMBER)
  MIXCCL_NCCL_OPTIONAL_LIBRARY_FUNCTIONS(MIXCCL_NCCL_LIBRARY_MEMBER)  // nullptr where absent
#undef MIXCCL_NCCL_LIBRARY_MEMBER
  std::string runtimeFile;    // the runtime library opened (a path where the loader knows it)
  std::string runtimePrefix;  // "cuda" or "hip": the runtime's function names
  std::string ncclFile;       // the NCCL-API library opened
};

// Opens the NCCL-API library (openRealNccl) and the runtime (openRuntime), finds the runtime's
// prefix and binds every listed function. Returns "" or the reason, naming the file and every
// missing symbol.
std::string loadApi(Api* api);

}  // namespace mixccl_nccl
