#include "adaptors/table_v1.h"

#include "adaptors/table_entry_lists.h"
#include "adaptors/table_header_check.h"

namespace mixccl {

std::string adaptorTableFromV1(const mixcclAdaptor_v1_t* table, const std::string& expectedName,
                               AdaptorTable* out) {
  if (table == nullptr) return "the adaptor table is NULL";
  const mixcclAdaptor_v1_t& v = *table;
  std::string problem = checkTableHeader(v.abiVersion, MIXCCL_ADAPTOR_ABI_VERSION_V1, v.name,
                                         v.memoryKind, expectedName);
  if (!problem.empty()) return problem;
  // Version 1 requires every entry (its plugins carried a runtime even for host memory).
  struct Field {
    const char* name;
    bool set;
  };
#define MIXCCL_FIELD(f) {#f, v.f != nullptr},
  const Field fields[] = {{"init", v.init != nullptr}, {"lastError", v.lastError != nullptr},
                          MIXCCL_RUNTIME_ENTRIES(MIXCCL_FIELD)
                          {"supports", v.supports != nullptr},
                          MIXCCL_LIBRARY_ENTRIES(MIXCCL_FIELD)
                          MIXCCL_V1_COLLECTIVE_ENTRIES(MIXCCL_FIELD)
                          MIXCCL_POINT_TO_POINT_ENTRIES(MIXCCL_FIELD)};
#undef MIXCCL_FIELD
  for (const Field& f : fields)
    if (!f.set) return std::string("field '") + f.name + "' is NULL";

  AdaptorTable t = copySharedEntries(v);
  t.supportsByName = v.supports;
  *out = t;
  return "";
}

const char* v1CollectiveName(CollKind kind) {
  switch (kind) {
    case CollKind::AllReduce: return "allreduce";
    case CollKind::Broadcast: return "broadcast";
    case CollKind::Reduce: return "reduce";
    case CollKind::AllGather: return "allgather";
    case CollKind::ReduceScatter: return "reducescatter";
    case CollKind::AlltoAll:
    case CollKind::Gather:
    case CollKind::Scatter: return "sendrecv";
  }
  return "";
}

}  // namespace mixccl
