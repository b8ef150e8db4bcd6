#include "algo/native_pairwise.h"

#include "algo/reduce.h"

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

Result nativePairwiseAlltoAll(const NativeComm& nc, const void* sendbuf, void* recvbuf,
                              size_t count, mixcclDataType_t type) {
  const size_t blk = count * dataTypeSize(type);
  const AdaptorTable& t = nc.table;
  return inOneGroup(nc, [&](int p) {
    mixcclResult_t r = t.send(at(sendbuf, p, blk), count, type, p, nc.comm, nc.stream);
    return r != mixcclSuccess ? r : t.recv(at(recvbuf, p, blk), count, type, p, nc.comm, nc.stream);
  });
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
