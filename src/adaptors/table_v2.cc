#include "adaptors/table_v2.h"

#include <algorithm>
#include <cstring>
#include <vector>

#include "adaptors/host_runtime.h"
#include "adaptors/table_entry_lists.h"
#include "adaptors/table_header_check.h"

namespace mixccl {
namespace {

struct Field {
  const char* name;
  bool set;
};
#define MIXCCL_FIELD(f) {#f, v.f != nullptr},

// The name of the first entry of fields that is NULL (firstNull) or set (firstSet), or nullptr.
const char* firstNull(const std::vector<Field>& fields) {
  for (const Field& f : fields)
    if (!f.set) return f.name;
  return nullptr;
}
const char* firstSet(const std::vector<Field>& fields) {
  for (const Field& f : fields)
    if (f.set) return f.name;
  return nullptr;
}

// The rules of mixccl_adaptor.h on which entries must be set; "" when v follows them.
std::string checkRequiredEntries(const mixcclAdaptor_v2_t& v) {
  const char* missing = firstNull({{"init", v.init != nullptr},
                                    {"lastError", v.lastError != nullptr}});
  if (missing) return std::string("field '") + missing + "' is NULL";
  if (v.memoryKind == MIXCCL_ADAPTOR_DEVICE_MEMORY &&
      (missing = firstNull({MIXCCL_RUNTIME_ENTRIES(MIXCCL_FIELD)})))
    return std::string("field '") + missing +
           "' is NULL (an adaptor of device memory sets its whole device runtime)";
  const std::vector<Field> library = {{"supports", v.supports != nullptr},
                                      MIXCCL_LIBRARY_ENTRIES(MIXCCL_FIELD)};
  const std::vector<Field> p2p = {MIXCCL_POINT_TO_POINT_ENTRIES(MIXCCL_FIELD)};
  const char* inLibrary = firstSet(library);
  if (inLibrary && (missing = firstNull(library)))
    return std::string("field '") + missing + "' is NULL but '" + inLibrary +
           "' is set (the native library entries supports, getUniqueId, commInitRank, "
           "commDestroy and commAbort are set together)";
  const char* inP2p = firstSet(p2p);
  if (inP2p && (missing = firstNull(p2p)))
    return std::string("field '") + missing + "' is NULL but '" + inP2p +
           "' is set (send, recv, groupStart and groupEnd are set together)";
  // Native collectives and send/recv run on the library's communicator.
  const char* native = firstSet({MIXCCL_V1_COLLECTIVE_ENTRIES(MIXCCL_FIELD)
                                  MIXCCL_V2_ONLY_COLLECTIVE_ENTRIES(MIXCCL_FIELD)});
  if (!native) native = inP2p;
  if (native && !inLibrary)
    return std::string("field '") + native + "' is set but the native library entries "
           "(supports, getUniqueId, commInitRank, commDestroy, commAbort) are NULL";
  // A registration made must be undone by the same library.
  const std::vector<Field> registration = {{"commRegister", v.commRegister != nullptr},
                                           {"commDeregister", v.commDeregister != nullptr}};
  const char* inRegistration = firstSet(registration);
  if (inRegistration && (missing = firstNull(registration)))
    return std::string("field '") + missing + "' is NULL but '" + inRegistration +
           "' is set (commRegister and commDeregister are set together)";
  return "";
}
#undef MIXCCL_FIELD

}  // namespace

std::string adaptorTableFromV2(const mixcclAdaptor_v2_t* table, const std::string& expectedName,
                               AdaptorTable* out) {
  if (table == nullptr) return "the adaptor table is NULL";
  // Only the size is read before it is known to be large enough to hold the rest.
  if (table->size < kAdaptorTableV2MinSize)
    return "size " + std::to_string(table->size) + " is smaller than a version " +
           std::to_string(MIXCCL_ADAPTOR_ABI_VERSION) + " table (" +
           std::to_string(kAdaptorTableV2MinSize) + " bytes): not built against mixccl_adaptor.h " +
           "version " + std::to_string(MIXCCL_ADAPTOR_ABI_VERSION);
  // A plugin built against a later header has a larger table: the entries this mixccl knows
  // come first, the rest are ignored.
  mixcclAdaptor_v2_t v{};  // entries past a smaller table's size stay NULL
  std::memcpy(&v, table, std::min(table->size, sizeof v));
  std::string problem = checkTableHeader(v.abiVersion, MIXCCL_ADAPTOR_ABI_VERSION, v.name,
                                         v.memoryKind, expectedName);
  if (problem.empty()) problem = checkRequiredEntries(v);
  if (!problem.empty()) return problem;

  AdaptorTable t = copySharedEntries(v);
  t.supportsByKind = v.supports;
#define MIXCCL_COPY(f) t.f = v.f;
  MIXCCL_V2_ONLY_COLLECTIVE_ENTRIES(MIXCCL_COPY)
#undef MIXCCL_COPY
  if (t.hasNativeLibrary()) {  // only with a library
    t.commGetAsyncError = v.commGetAsyncError;
    t.commRegister = v.commRegister;
    t.commDeregister = v.commDeregister;
  }
  // Host memory: whatever runtime the plugin left out is mixccl's host runtime (device memory
  // set all of it, checked above).
  t.hostRuntimeFilled = fillHostRuntime(&t);
  *out = t;
  return "";
}

}  // namespace mixccl
