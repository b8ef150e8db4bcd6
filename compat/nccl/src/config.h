// ncclConfig_t read like NCCL reads it: by the size and version the caller's header gave it.
#pragma once

#include "shim.h"

namespace nccl_shim {

// Translates *in into *out for fn. in NULL: not called (callers pass NULL on). Fields beyond
// in->size (an older, smaller ncclConfig_t) and fields set to NCCL_CONFIG_UNDEF_INT/PTR take
// mixccl's defaults; the GPU tuning fields (CTAs, CGA, NVLS, collnet, ...) are accepted and have
// no effect. A config not made by NCCL_CONFIG_INITIALIZER, a blocking other than 0/1 or a
// netName mixccl has no transport for is refused with ncclInvalidArgument.
ncclResult_t translateConfig(const char* fn, const ncclConfig_t* in, mixcclConfig_t* out);

}  // namespace nccl_shim
