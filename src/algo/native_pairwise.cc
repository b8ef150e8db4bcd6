#include "algo/native_pairwise.h"

#include "algo/reduce.h"
#include "base/error.h"

namespace mixccl {
namespace {

// Issues the sends and receives of post(p) for every peer p between the library's
// groupStart and groupEnd, so they progress together (every rank sends before it receives).
// The group is always closed, also after a failed post, so the library is left usable.
template <typename Post>
Result inOneGroup(const NativeComm& nc, Post post) {
  const AdaptorTable& t = nc.table;
  MIXCCL_CHECK(checkNative(t, "groupStart", t.groupStart()));
  mixcclResult_t posted = mixcclSuccess;
  for (int p = 0; p < nc.nranks && posted == mixcclSuccess; ++p) posted = post(p);
  mixcclResult_t end = t.groupEnd();
  MIXCCL_CHECK(checkNative(t, "send/recv", posted));
  return checkNative(t, "groupEnd", end);
}

const char* at(const void* buf, int block, size_t blockBytes) {
  return static_cast<const char*>(buf) + (size_t)block * blockBytes;
}
char* at(void* buf, int block, size_t blockBytes) {
  return static_cast<char*>(buf) + (size_t)block * blockBytes;
}

}  // namespace

NativeScratch::~NativeScratch() {
  if (buf_) table_.memFree(buf_);  // the runtime's free waits for the device to finish with it
  if (event_) table_.eventDestroy(event_);
}

Result NativeScratch::acquire(size_t bytes, void* stream, void** buf) {
  const AdaptorTable& t = table_;
  if (!event_) MIXCCL_CHECK(checkNative(t, "eventCreate", t.eventCreate(&event_)));
  if (bytes > bytes_) {
    if (buf_) MIXCCL_CHECK(checkNative(t, "memFree", t.memFree(buf_)));
    buf_ = nullptr;
    bytes_ = 0;
    MIXCCL_CHECK(checkNative(t, "memAlloc", t.memAlloc(&buf_, bytes)));
    bytes_ = bytes;
  }
  // The previous call may have used it on another stream; an event never recorded is complete.
  MIXCCL_CHECK(checkNative(t, "streamWaitEvent", t.streamWaitEvent(stream, event_)));
  *buf = buf_;
  return mixcclSuccess;
}

Result NativeScratch::release(void* stream) {
  return checkNative(table_, "eventRecord", table_.eventRecord(event_, stream));
}

Result nativePairwiseAlltoAll(const NativeComm& nc, const void* sendbuf, void* recvbuf,
                              size_t count, mixcclDataType_t type) {
  const size_t blk = count * dataTypeSize(type);
  const AdaptorTable& t = nc.table;
  const bool inPlace = sendbuf == recvbuf && blk > 0;
  if (inPlace) {
    if (!nc.scratch) return raiseError(mixcclInternalError, "AlltoAll in place: no scratch buffer");
    void* copy = nullptr;
    MIXCCL_CHECK(nc.scratch->acquire(blk * nc.nranks, nc.stream, &copy));
    MIXCCL_CHECK(checkNative(t, "memcpyAsync", t.memcpyAsync(copy, sendbuf, blk * nc.nranks,
                                                              mixcclCopyDeviceToDevice, nc.stream)));
    sendbuf = copy;
  }
  Result r = inOneGroup(nc, [&](int p) {
    mixcclResult_t r = t.send(at(sendbuf, p, blk), count, type, p, nc.comm, nc.stream);
    return r != mixcclSuccess ? r : t.recv(at(recvbuf, p, blk), count, type, p, nc.comm, nc.stream);
  });
  if (inPlace) {
    Result released = nc.scratch->release(nc.stream);
    if (r == mixcclSuccess) r = released;
  }
  return r;
}

Result nativeDirectGather(const NativeComm& nc, const void* sendbuf, void* recvbuf, size_t count,
                          mixcclDataType_t type, int root) {
  const size_t blk = count * dataTypeSize(type);
  const AdaptorTable& t = nc.table;
  return inOneGroup(nc, [&](int p) {
    mixcclResult_t r = mixcclSuccess;
    if (p == 0) r = t.send(sendbuf, count, type, root, nc.comm, nc.stream);
    if (r == mixcclSuccess && nc.rank == root)
      r = t.recv(at(recvbuf, p, blk), count, type, p, nc.comm, nc.stream);
    return r;
  });
}

Result nativeDirectScatter(const NativeComm& nc, const void* sendbuf, void* recvbuf, size_t count,
                           mixcclDataType_t type, int root) {
  const size_t blk = count * dataTypeSize(type);
  const AdaptorTable& t = nc.table;
  return inOneGroup(nc, [&](int p) {
    mixcclResult_t r = mixcclSuccess;
    if (nc.rank == root) r = t.send(at(sendbuf, p, blk), count, type, p, nc.comm, nc.stream);
    if (r == mixcclSuccess && p == 0) r = t.recv(recvbuf, count, type, root, nc.comm, nc.stream);
    return r;
  });
}

}  // namespace mixccl
