// The set of live communicators. API calls hold a reference while they run, so that
// mixcclCommAbort/Destroy from another thread never frees a communicator under a caller, and
// calls on a destroyed handle are recognised and refused instead of touching freed memory.
#pragma once

#include "core/comm.h"

namespace mixccl {

void registerComm(Comm* comm);
// Removes comm from the live set; false if it was not live. The caller then drops the owner's
// reference with releaseComm.
bool unregisterComm(Comm* comm);

// A reference held for the duration of an API call; false if comm is not a live communicator.
class CommRef {
 public:
  explicit CommRef(Comm* comm);
  ~CommRef();
  CommRef(const CommRef&) = delete;
  CommRef& operator=(const CommRef&) = delete;
  explicit operator bool() const { return comm_ != nullptr; }
  Comm* operator->() const { return comm_; }
  Comm* get() const { return comm_; }

 private:
  Comm* comm_ = nullptr;
};

void releaseComm(Comm* comm);

}  // namespace mixccl
