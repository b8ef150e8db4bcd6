// A mixccl call made while --survive recovers: its failure (a second loss during the recovery,
// say) is not survived; it ends the run with the call's name and mixccl's last error.
#pragma once

#include <stdexcept>
#include <string>

#include "mixccl.h"

namespace mixccl::train {

inline void CheckRecoveryCall(mixcclResult_t r, const char* call, mixcclComm_t comm) {
  if (r == mixcclSuccess) return;
  const char* detail = mixcclGetLastError(comm);
  throw std::runtime_error(std::string(call) + " failed during the recovery: " +
                           mixcclGetErrorString(r) +
                           (detail && *detail ? std::string(": ") + detail : std::string()));
}

}  // namespace mixccl::train
