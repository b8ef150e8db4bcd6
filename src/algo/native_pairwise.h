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

// Device memory for AlltoAll in place: the library's receives would overwrite blocks that its
// sends, progressing in the same group, still read, so the input is first copied here on the
// stream. Kept for the communicator's life and reused; a call on another stream first waits,
// on the device, for the previous use to finish (an event), never on the host.
class NativeScratch {
 public:
  explicit NativeScratch(const AdaptorTable& table) : table_(table) {}
  ~NativeScratch();
  NativeScratch(const NativeScratch&) = delete;
  NativeScratch& operator=(const NativeScratch&) = delete;

  // At least `bytes` of device memory that work enqueued on stream from now on may use.
  Result acquire(size_t bytes, void* stream, void** buf);
  // The work using it has been enqueued on stream.
  Result release(void* stream);

 private:
  const AdaptorTable& table_;
  void* buf_ = nullptr;
  size_t bytes_ = 0;
  void* event_ = nullptr;  // recorded after the last use
};

// The library's communicator of this rank, and the stream its work is ordered on.
struct NativeComm {
  const AdaptorTable& table;  // hasPointToPoint()
  void* comm;
  int rank;
  int nranks;
  void* stream;
  NativeScratch* scratch;  // for AlltoAll in place
};

Result nativePairwiseAlltoAll(const NativeComm& nc, const void* sendbuf, void* recvbuf,
                              size_t count, mixcclDataType_t type);
Result nativeDirectGather(const NativeComm& nc, const void* sendbuf, void* recvbuf, size_t count,
                          mixcclDataType_t type, int root);
Result nativeDirectScatter(const NativeComm& nc, const void* sendbuf, void* recvbuf, size_t count,
                           mixcclDataType_t type, int root);

}  // namespace mixccl
