// mixcclCommRegister / mixcclCommDeregister: a buffer registered with this rank's domain's
// native library where its adaptor can (commRegister, e.g. ncclCommRegister), so the library
// may skip its internal copies on it; otherwise a checked handle that records the buffer.
#include "adaptors/adaptor_table.h"
#include "core/api_support.h"
#include "core/comm.h"

using namespace mixccl;

namespace {

// The domain's native communicator when its adaptor registers buffers, else nullptr.
const DomainComm* registeringDomain(const Comm* comm) {
  const DomainComm* d = comm->domainComm.get();
  return d && d->native() && d->table().commRegister ? d : nullptr;
}

Result registerBuffer(Comm* comm, void* buff, size_t size, void** handle) {
  const char* fn = "mixcclCommRegister";
  if (!handle) return raiseError(mixcclInvalidArgument, "%s: handle is NULL", fn);
  *handle = nullptr;
  if (!buff && size > 0)
    return raiseError(mixcclInvalidArgument, "%s: buff is NULL with size %zu", fn, size);
  MIXCCL_CHECK(checkCommReady(fn, comm));
  BufferRegistration reg{buff, size, nullptr};
  if (const DomainComm* d = registeringDomain(comm))
    MIXCCL_CHECK(checkNative(d->table(), "commRegister",
                             d->table().commRegister(d->native(), buff, size, &reg.nativeHandle)));
  *handle = comm->registrations.add(reg);
  return mixcclSuccess;
}

Result deregisterBuffer(Comm* comm, void* handle) {
  const char* fn = "mixcclCommDeregister";
  BufferRegistration reg;
  if (!comm->registrations.take(handle, &reg))
    return raiseError(mixcclInvalidArgument,
                      "%s: %p is not a live registration handle of this communicator", fn, handle);
  // Only a registration the library made goes back to it (same communicator: the domain's
  // native communicator lives as long as comm).
  const DomainComm* d = registeringDomain(comm);
  if (d && reg.nativeHandle)
    MIXCCL_CHECK(checkNative(d->table(), "commDeregister",
                             d->table().commDeregister(d->native(), reg.nativeHandle)));
  return mixcclSuccess;
}

}  // namespace

MIXCCL_API mixcclResult_t mixcclCommRegister(const mixcclComm_t comm, void* buff, size_t size,
                                             void** handle) {
  CommRef ref(comm);
  if (!ref) return badComm("mixcclCommRegister", comm);
  return finishCall(ref.get(), registerBuffer(ref.get(), buff, size, handle));
}

MIXCCL_API mixcclResult_t mixcclCommDeregister(const mixcclComm_t comm, void* handle) {
  CommRef ref(comm);
  if (!ref) return badComm("mixcclCommDeregister", comm);
  return finishCall(ref.get(), deregisterBuffer(ref.get(), handle));
}
