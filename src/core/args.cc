#include "core/args.h"

#include <cstdint>

#include "adaptors/adaptor_loader.h"
#include "algo/reduce.h"
#include "base/error.h"

namespace mixccl {

Result checkDataType(const char* fn, mixcclDataType_t type) {
  if (!isValidDataType((int)type))
    return raiseError(mixcclInvalidArgument, "%s: invalid datatype %d", fn, (int)type);
  return mixcclSuccess;
}

Result checkRedOp(const char* fn, mixcclRedOp_t op) {
  if (!isValidRedOp((int)op))
    return raiseError(mixcclInvalidArgument, "%s: invalid reduction op %d", fn, (int)op);
  return mixcclSuccess;
}

Result checkRank(const char* fn, const char* what, int r, int nranks) {
  if (r < 0 || r >= nranks)
    return raiseError(mixcclInvalidArgument, "%s: %s %d is out of range [0, %d)", fn, what, r,
                      nranks);
  return mixcclSuccess;
}

Result checkStream(const char* fn, mixcclStream_t stream) {
  if (stream != nullptr)
    return raiseError(mixcclInvalidArgument,
                      "%s: the host adaptor takes a NULL stream (got %p): buffers are host memory",
                      fn, stream);
  return mixcclSuccess;
}

Result checkBuffer(const char* fn, const char* what, const void* buf, size_t count,
                   size_t multiplier, mixcclDataType_t type, size_t* bytes) {
  size_t es = dataTypeSize(type);
  // Byte counts must fit comfortably in size_t and in the wire's 64-bit totals.
  const size_t limit = SIZE_MAX / 4;
  if (multiplier && count > limit / multiplier / es)
    return raiseError(mixcclInvalidArgument, "%s: count %zu of %s overflows the byte size", fn,
                      count, what);
  *bytes = count * multiplier * es;
  if (*bytes > 0 && buf == nullptr)
    return raiseError(mixcclInvalidArgument, "%s: %s is NULL", fn, what);
  return mixcclSuccess;
}

Result checkCommUsable(const char* fn, Comm* comm) {
  if (comm->finalized.load())
    return raiseError(mixcclInvalidUsage, "%s: the communicator was finalized", fn);
  return mixcclSuccess;
}

Result checkCommonArgs(const char* fn, Comm* comm, mixcclDataType_t type, mixcclStream_t stream) {
  MIXCCL_CHECK(checkCommUsable(fn, comm));
  MIXCCL_CHECK(checkDataType(fn, type));
  if (comm->adaptor && comm->adaptor->table->memoryKind == MIXCCL_ADAPTOR_DEVICE_MEMORY)
    return mixcclSuccess;
  return checkStream(fn, stream);
}

Result checkCollArgs(Comm* comm, const CollCall& call) {
  const CollKindSpec& s = call.spec();
  const char* fn = s.apiName;
  size_t bytes;
  MIXCCL_CHECK(checkCommonArgs(fn, comm, call.type, call.stream));
  if (s.reduces) MIXCCL_CHECK(checkRedOp(fn, call.op));
  if (s.rooted) MIXCCL_CHECK(checkRank(fn, "root", call.root, comm->nranks));
  if (s.send.heldBy(comm->rank, call.root))
    MIXCCL_CHECK(checkBuffer(fn, "sendbuff", call.sendbuf, call.count,
                             s.send.multiplier(comm->nranks), call.type, &bytes));
  if (s.recv.heldBy(comm->rank, call.root))
    MIXCCL_CHECK(checkBuffer(fn, "recvbuff", call.recvbuf, call.count,
                             s.recv.multiplier(comm->nranks), call.type, &bytes));
  return mixcclSuccess;
}

}  // namespace mixccl
