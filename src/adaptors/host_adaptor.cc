// The built-in host adaptor: a version 2 table with nothing but its name and memory kind. It
// has no native library (on host ranks mixccl runs its own algorithms over its transports),
// and its runtime is the host runtime that also serves host-memory plugins (host_runtime.h).
#include <cstring>

#include "adaptors/adaptor_loader.h"
#include "adaptors/host_runtime.h"
#include "adaptors/table_v2.h"

namespace mixccl {
namespace {

mixcclResult_t init() { return mixcclSuccess; }

AdaptorTable makeTable() {
  mixcclAdaptor_v2_t v;
  std::memset(&v, 0, sizeof v);
  v.size = sizeof v;
  v.abiVersion = MIXCCL_ADAPTOR_ABI_VERSION;
  v.name = "host";
  v.memoryKind = MIXCCL_ADAPTOR_HOST_MEMORY;
  v.init = init;
  v.lastError = hostRuntimeLastError;  // its only failures are the runtime's
  AdaptorTable t;
  // The same path as a plugin's table: a change to it cannot miss the host adaptor.
  adaptorTableFromV2(&v, "host", &t);
  return t;
}

}  // namespace

const AdaptorTable* hostAdaptorTable() {
  static const AdaptorTable table = makeTable();
  return &table;
}

}  // namespace mixccl
