// A rank's buffers in the multi-rank stand-in tests: device memory of its adaptor on a stream
// when the rank uses a device adaptor (nccl), ordinary memory and the NULL stream otherwise.
// Every runtime call is checked; a failure is printed and counted.
#pragma once

#include <cstddef>
#include <string>

#include "mixccl_adaptor.h"

namespace ranks_test {

class RankBuffers {
 public:
  // Takes comm's adaptor; on device memory creates the rank's stream.
  RankBuffers(mixcclComm_t comm, int rank);
  ~RankBuffers();

  bool device() const { return dev_ != nullptr; }
  const mixcclAdaptor_v2_t* adaptor() const { return dev_; }
  void* stream() const { return stream_; }

  void* alloc(size_t bytes);
  void release(void* p);
  // Host bytes into a buffer, ordered on the stream; returns once they are there.
  void write(void* dst, const void* host, size_t bytes);
  // A buffer's bytes once the work enqueued on the stream before has finished.
  void read(void* host, const void* src, size_t bytes);

  long failures() const { return failures_; }
  // Counts a failed runtime call and prints it with the adaptor's message.
  bool check(mixcclResult_t r, const char* what);

 private:
  const mixcclAdaptor_v2_t* dev_ = nullptr;
  void* stream_ = nullptr;
  int rank_;
  long failures_ = 0;
};

}  // namespace ranks_test
