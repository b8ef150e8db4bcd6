#include "config.h"

#include <strings.h>

#include <cstddef>

namespace nccl_shim {
namespace {

constexpr unsigned kConfigMagic = 0xcafebeef;  // NCCL_CONFIG_INITIALIZER's magic
// The first NCCL with ncclConfig_t (2.14); anything older is not a config.
constexpr unsigned kFirstConfigVersion = 21400;

static_assert(NCCL_CONFIG_UNDEF_INT == MIXCCL_CONFIG_UNDEF_INT,
              "NCCL's and mixccl's 'default' markers must agree");

// Whether the caller's config (in->size bytes) reaches field [offset, offset + size).
bool has(const ncclConfig_t* in, size_t offset, size_t size) { return offset + size <= in->size; }
#define HAS(in, field) has(in, offsetof(ncclConfig_t, field), sizeof(in->field))

}  // namespace

ncclResult_t translateConfig(const char* fn, const ncclConfig_t* in, mixcclConfig_t* out) {
  *out = MIXCCL_CONFIG_INITIALIZER;
  const size_t smallest = offsetof(ncclConfig_t, blocking) + sizeof(int);
  if (in->size < smallest)
    return refuse(ncclInvalidArgument,
                  "%s: config size %zu is below the smallest ncclConfig_t (%zu bytes): "
                  "initialise it with NCCL_CONFIG_INITIALIZER", fn, in->size, smallest);
  if (in->magic != kConfigMagic)
    return refuse(ncclInvalidArgument,
                  "%s: config magic 0x%x is not NCCL_CONFIG_INITIALIZER's 0x%x", fn, in->magic,
                  kConfigMagic);
  if (in->version < kFirstConfigVersion)
    return refuse(ncclInvalidArgument, "%s: config version %u predates ncclConfig_t (%u)", fn,
                  in->version, kFirstConfigVersion);
  if (in->blocking != NCCL_CONFIG_UNDEF_INT && in->blocking != 0 && in->blocking != 1)
    return refuse(ncclInvalidArgument, "%s: config blocking %d is not 0 or 1", fn, in->blocking);
  out->blocking = in->blocking;
  if (HAS(in, netName) && in->netName != NCCL_CONFIG_UNDEF_PTR) {
    // NCCL's "Socket" is mixccl's socket transport; mixccl adds "shm". NCCL's IB and plugin
    // networks have no mixccl transport of that name.
    if (strcasecmp(in->netName, "socket") == 0) out->netName = "socket";
    else if (strcasecmp(in->netName, "shm") == 0) out->netName = "shm";
    else
      return refuse(ncclInvalidArgument,
                    "%s: config netName \"%s\" is not a mixccl transport (Socket or shm)", fn,
                    in->netName);
  }
  if (HAS(in, commName) && in->commName != NCCL_CONFIG_UNDEF_PTR) out->commName = in->commName;
  return ncclSuccess;
}

}  // namespace nccl_shim
