#include "perf_memory.h"

#include <cstdlib>
#include <cstring>

namespace mixperf {

PerfMemory::~PerfMemory() {
  if (stream_ != nullptr) adaptor_->streamDestroy(stream_);
}

std::string PerfMemory::failed(const char* what) const {
  return std::string(what) + " of the " + adaptor_->name + " adaptor failed: " +
         adaptor_->lastError();
}

std::string PerfMemory::init(const mixcclAdaptor_v2_t* adaptor) {
  adaptor_ = adaptor;
  device_ = adaptor->memoryKind == MIXCCL_ADAPTOR_DEVICE_MEMORY;
  if (device_ && adaptor_->streamCreate(&stream_) != mixcclSuccess) return failed("streamCreate");
  return "";
}

std::string PerfMemory::describe() const {
  return std::string("[") + adaptor_->name + (device_ ? ", device memory]" : ", host memory]");
}

std::string PerfMemory::alloc(size_t bytes, char** p) {
  void* q = nullptr;
  if (device_) {
    if (adaptor_->memAlloc(&q, bytes ? bytes : 1) != mixcclSuccess) return failed("memAlloc");
  } else {
    if (posix_memalign(&q, 4096, bytes ? bytes : 1) != 0)
      return "cannot allocate " + std::to_string(bytes) + " bytes of host memory";
    std::memset(q, 0, bytes);
  }
  *p = static_cast<char*>(q);
  return "";
}

void PerfMemory::release(char* p) {
  if (p == nullptr) return;
  if (device_) {
    adaptor_->memFree(p);
  } else {
    std::free(p);
  }
}

std::string PerfMemory::upload(void* dst, const void* hostSrc, size_t bytes) {
  if (!device_) {
    if (dst != hostSrc && bytes) std::memmove(dst, hostSrc, bytes);
    return "";
  }
  if (adaptor_->memcpyAsync(dst, hostSrc, bytes, mixcclCopyHostToDevice, stream_) != mixcclSuccess)
    return failed("memcpyAsync (host to device)");
  return synchronize();
}

std::string PerfMemory::download(void* hostDst, const void* src, size_t bytes) {
  if (!device_) {
    if (hostDst != src && bytes) std::memmove(hostDst, src, bytes);
    return "";
  }
  if (adaptor_->memcpyAsync(hostDst, src, bytes, mixcclCopyDeviceToHost, stream_) != mixcclSuccess)
    return failed("memcpyAsync (device to host)");
  return synchronize();
}

std::string PerfMemory::synchronize() {
  if (device_ && adaptor_->streamSynchronize(stream_) != mixcclSuccess)
    return failed("streamSynchronize");
  return "";
}

}  // namespace mixperf
