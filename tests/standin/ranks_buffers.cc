#include "ranks_buffers.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace ranks_test {

RankBuffers::RankBuffers(mixcclComm_t comm, int rank) : rank_(rank) {
  const mixcclAdaptor_v2_t* a = nullptr;
  if (!check(mixcclCommGetAdaptor(comm, &a), "mixcclCommGetAdaptor")) return;
  if (a->memoryKind != MIXCCL_ADAPTOR_DEVICE_MEMORY) return;
  dev_ = a;
  check(dev_->streamCreate(&stream_), "streamCreate");
}

RankBuffers::~RankBuffers() {
  if (dev_ && stream_) check(dev_->streamDestroy(stream_), "streamDestroy");
}

bool RankBuffers::check(mixcclResult_t r, const char* what) {
  if (r == mixcclSuccess) return true;
  ++failures_;
  std::fprintf(stderr, "rank %d: %s failed (%d): %s\n", rank_, what, static_cast<int>(r),
               dev_ ? dev_->lastError() : mixcclGetLastError(nullptr));
  return false;
}

void* RankBuffers::alloc(size_t bytes) {
  void* p = nullptr;
  if (dev_) {
    if (!check(dev_->memAlloc(&p, bytes ? bytes : 1), "memAlloc")) std::abort();
  } else {
    p = std::malloc(bytes ? bytes : 1);
  }
  return p;
}

void RankBuffers::release(void* p) {
  if (p == nullptr) return;
  if (dev_) check(dev_->memFree(p), "memFree");
  else std::free(p);
}

void RankBuffers::write(void* dst, const void* host, size_t bytes) {
  if (bytes == 0) return;
  if (!dev_) {
    std::memcpy(dst, host, bytes);
    return;
  }
  check(dev_->memcpyAsync(dst, host, bytes, mixcclCopyHostToDevice, stream_), "memcpyAsync H2D");
  check(dev_->streamSynchronize(stream_), "streamSynchronize");
}

void RankBuffers::read(void* host, const void* src, size_t bytes) {
  if (!dev_) {
    if (bytes) std::memcpy(host, src, bytes);
    return;
  }
  if (bytes) check(dev_->memcpyAsync(host, src, bytes, mixcclCopyDeviceToHost, stream_), "memcpyAsync D2H");
  check(dev_->streamSynchronize(stream_), "streamSynchronize");
}

}  // namespace ranks_test
