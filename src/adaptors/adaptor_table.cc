#include "adaptors/adaptor_table.h"

#include "adaptors/host_runtime.h"
#include "adaptors/table_v1.h"
#include "base/error.h"

namespace mixccl {

// The ABI names collectives by mixccl's own values, so a kind crosses the ABI as it is.
static_assert(mixcclCollAllReduce == (int)CollKind::AllReduce &&
                  mixcclCollBroadcast == (int)CollKind::Broadcast &&
                  mixcclCollReduce == (int)CollKind::Reduce &&
                  mixcclCollAllGather == (int)CollKind::AllGather &&
                  mixcclCollReduceScatter == (int)CollKind::ReduceScatter &&
                  mixcclCollAlltoAll == (int)CollKind::AlltoAll &&
                  mixcclCollGather == (int)CollKind::Gather &&
                  mixcclCollScatter == (int)CollKind::Scatter && kNumCollKinds == 8,
              "mixcclAdaptorColl_t (mixccl_adaptor.h) must number collectives as CollKind does");

const char* AdaptorTable::lastError() const {
  // A failure of the host runtime filled in for the plugin is recorded by that runtime, not by
  // the plugin. Every host-runtime call clears its record, so a message there means the
  // latest host-runtime call of this thread failed (callers read lastError right after).
  if (hostRuntimeFilled && *hostRuntimeLastError()) return hostRuntimeLastError();
  const char* why = pluginLastError ? pluginLastError() : nullptr;
  return why ? why : "";
}

bool AdaptorTable::hasNative(CollKind kind) const {
  switch (kind) {
    case CollKind::AllReduce: return allReduce != nullptr;
    case CollKind::Broadcast: return broadcast != nullptr;
    case CollKind::Reduce: return reduce != nullptr;
    case CollKind::AllGather: return allGather != nullptr;
    case CollKind::ReduceScatter: return reduceScatter != nullptr;
    case CollKind::AlltoAll: return alltoAll != nullptr;
    case CollKind::Gather: return gather != nullptr;
    case CollKind::Scatter: return scatter != nullptr;
  }
  return false;
}

bool AdaptorTable::supports(CollKind kind, mixcclDataType_t type, mixcclRedOp_t op) const {
  if (!hasNative(kind)) return false;
  if (supportsByKind) return supportsByKind((mixcclAdaptorColl_t)kind, type, op) != 0;
  if (supportsByName) return supportsByName(v1CollectiveName(kind), type, op) != 0;
  return false;
}

std::string nativeFailureText(const AdaptorTable& t, const char* what) {
  const char* why = t.lastError();
  return std::string(t.name) + " adaptor: native " + what + " failed: " + (*why ? why : "(no message)");
}

Result checkNative(const AdaptorTable& t, const char* what, mixcclResult_t r) {
  if (r == mixcclSuccess) return mixcclSuccess;
  return raiseError(r, "%s", nativeFailureText(t, what).c_str());
}

}  // namespace mixccl
