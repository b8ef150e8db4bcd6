// Result codes and the checking macros every internal call goes through.
#pragma once

#include "mixccl.h"

namespace mixccl {

using Result = mixcclResult_t;

}  // namespace mixccl

// Propagates a non-success result unchanged; the callee already logged it.
#define MIXCCL_CHECK(call)                      \
  do {                                          \
    ::mixccl::Result mixccl_res_ = (call);      \
    if (mixccl_res_ != mixcclSuccess) return mixccl_res_; \
  } while (0)
