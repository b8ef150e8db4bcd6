// AlltoAll, Gather and Scatter composed from a native library's send and receive, for adaptors
// whose table leaves those collectives out (NCCL's plugin, every version 1 plugin). Device
// memory cannot take mixccl's own algorithms (the host never touches it), so the pattern of
// pairwise.cc is issued to the library instead: one group of its sends and receives per call.
#pragma once

#include <cstddef>

#include "adaptors/adaptor_table.h"
#include "base/result.h"
#include "mixccl.h"

namespace mixccl {

// The library's communicator of this rank, and the stream its work is ordered on.
struct NativeComm {
  const AdaptorTable& table;  // hasPointToPoint()
  void* comm;
  int rank;
  int nranks;
  void* stream;
};

Result nativePairwiseAlltoAll(const NativeComm& nc, const void* sendbuf, void* recvbuf,
                              size_t count, mixcclDataType_t type);
Result nativeDirectGather(const NativeComm& nc, const void* sendbuf, void* recvbuf, size_t count,
                          mixcclDataType_t type, int root);
Result nativeDirectScatter(const NativeComm& nc, const void* sendbuf, void* recvbuf, size_t count,
                           mixcclDataType_t type, int root);

}  // namespace mixccl
