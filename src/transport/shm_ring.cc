#include "transport/shm_ring.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <new>

#include "base/error.h"

namespace mixccl {

ShmRing::ShmRing(void* base)
    : h_(static_cast<ShmRingHeader*>(base)),
      data_(static_cast<char*>(base) + kShmHeaderBytes),
      cap_(h_->capacity),
      mask_(h_->capacity - 1) {}

void ShmRing::initHeader(void* base, uint64_t capacity, uint64_t nonce) {
  ShmRingHeader* h = new (base) ShmRingHeader();
  h->version = kShmRingVersion;
  h->capacity = capacity;
  h->nonce = nonce;
  h->producerPid = (int32_t)getpid();
  h->producerAddr = (uint64_t)(uintptr_t)base;
  h->head.store(0, std::memory_order_relaxed);
  h->tail.store(0, std::memory_order_relaxed);
  h->consumerSleeping.store(0, std::memory_order_relaxed);
  h->cmaOk.store(0, std::memory_order_relaxed);
  h->producerSleeping.store(0, std::memory_order_relaxed);
  h->closed.store(0, std::memory_order_relaxed);
  h->cmaDone.store(0, std::memory_order_relaxed);
  h->magic.store(kShmRingMagic, std::memory_order_release);
}

size_t ShmRing::writable() const {
  uint64_t head = h_->head.load(std::memory_order_relaxed);
  uint64_t tail = h_->tail.load(std::memory_order_acquire);
  return (size_t)(cap_ - (head - tail));
}

size_t ShmRing::readable() const {
  uint64_t head = h_->head.load(std::memory_order_acquire);
  uint64_t tail = h_->tail.load(std::memory_order_relaxed);
  return (size_t)(head - tail);
}

size_t ShmRing::writev(const iovec* iov, int n) {
  uint64_t head = h_->head.load(std::memory_order_relaxed);
  uint64_t tail = h_->tail.load(std::memory_order_acquire);
  // A consumer that reports more consumed than was written is broken or hostile: write nothing.
  if (head - tail > cap_) return 0;
  size_t room = (size_t)(cap_ - (head - tail));
  size_t written = 0;
  for (int i = 0; i < n && room > 0; ++i) {
    const char* src = static_cast<const char*>(iov[i].iov_base);
    size_t len = std::min(iov[i].iov_len, room);
    while (len > 0) {
      size_t at = (size_t)((head + written) & mask_);
      size_t piece = std::min(len, (size_t)cap_ - at);
      memcpy(data_ + at, src, piece);
      src += piece;
      len -= piece;
      written += piece;
      room -= piece;
    }
  }
  // seq_cst: the store must be ordered before the producer's later load of consumerSleeping
  // (and the consumer's store of that flag before its re-check of head): no lost wake-up.
  if (written) h_->head.store(head + written, std::memory_order_seq_cst);
  return written;
}

size_t ShmRing::write(const void* p, size_t n) {
  iovec iov{const_cast<void*>(p), n};
  return writev(&iov, 1);
}

size_t ShmRing::read(void* dst, size_t n) {
  uint64_t tail = h_->tail.load(std::memory_order_relaxed);
  uint64_t head = h_->head.load(std::memory_order_acquire);
  if (head - tail > cap_) return 0;  // a producer claiming more than the ring holds
  size_t take = std::min(n, (size_t)(head - tail));
  char* out = static_cast<char*>(dst);
  size_t done = 0;
  while (done < take) {
    size_t at = (size_t)((tail + done) & mask_);
    size_t piece = std::min(take - done, (size_t)cap_ - at);
    memcpy(out + done, data_ + at, piece);
    done += piece;
  }
  if (take) h_->tail.store(tail + take, std::memory_order_seq_cst);
  return take;
}

ShmSegment::~ShmSegment() {
  if (base_) munmap(base_, size_);
}

ShmSegment::ShmSegment(ShmSegment&& o) noexcept : base_(o.base_), size_(o.size_) {
  o.base_ = nullptr;
  o.size_ = 0;
}

ShmSegment& ShmSegment::operator=(ShmSegment&& o) noexcept {
  if (this != &o) {
    if (base_) munmap(base_, size_);
    base_ = o.base_;
    size_ = o.size_;
    o.base_ = nullptr;
    o.size_ = 0;
  }
  return *this;
}

Result ShmSegment::create(const std::string& name, size_t bytes, ShmSegment* out) {
  int fd = shm_open(name.c_str(), O_CREAT | O_EXCL | O_RDWR | O_CLOEXEC, 0600);
  if (fd < 0)
    return raiseError(mixcclSystemError, "cannot create shared memory segment /dev/shm%s: %s",
                      name.c_str(), strerror(errno));
  int err = ftruncate(fd, (off_t)bytes) == 0 ? 0 : errno;
  // Reserve every page now: on a full tmpfs the first touch of a page would be SIGBUS.
  if (err == 0) err = posix_fallocate(fd, 0, (off_t)bytes);
  if (err != 0) {
    close(fd);
    shm_unlink(name.c_str());
    if (err == ENOSPC || err == EFBIG || err == ENOMEM)
      return raiseError(mixcclSystemError,
                        "/dev/shm is too small: cannot reserve %zu bytes for segment /dev/shm%s "
                        "(%s); enlarge /dev/shm (e.g. docker --shm-size=1g), lower "
                        "MIXCCL_SHM_BYTES, or set MIXCCL_SHM_DISABLE=1 to use sockets between "
                        "ranks of one host",
                        bytes, name.c_str(), strerror(err));
    return raiseError(mixcclSystemError, "cannot size shared memory segment /dev/shm%s: %s "
                      "(MIXCCL_SHM_DISABLE=1 avoids shared memory)", name.c_str(), strerror(err));
  }
  void* p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  err = errno;
  close(fd);
  if (p == MAP_FAILED) {
    shm_unlink(name.c_str());
    return raiseError(mixcclSystemError, "cannot map /dev/shm%s: %s", name.c_str(), strerror(err));
  }
  ShmSegment s;
  s.base_ = p;
  s.size_ = bytes;
  *out = std::move(s);
  return mixcclSuccess;
}

Result ShmSegment::open(const std::string& name, size_t minBytes, ShmSegment* out) {
  int fd = shm_open(name.c_str(), O_RDWR | O_CLOEXEC, 0);
  if (fd < 0)
    return raiseError(mixcclSystemError, "cannot open shared memory segment /dev/shm%s: %s",
                      name.c_str(), strerror(errno));
  struct stat st {};
  if (fstat(fd, &st) != 0 || (size_t)st.st_size < minBytes) {
    close(fd);
    return raiseError(mixcclRemoteError, "shared memory segment /dev/shm%s is too short",
                      name.c_str());
  }
  size_t bytes = (size_t)st.st_size;
  void* p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  int err = errno;
  close(fd);
  if (p == MAP_FAILED)
    return raiseError(mixcclSystemError, "cannot map /dev/shm%s: %s", name.c_str(), strerror(err));
  ShmSegment s;
  s.base_ = p;
  s.size_ = bytes;
  *out = std::move(s);
  return mixcclSuccess;
}

bool ShmSegment::unlink(const std::string& name) {
  return shm_unlink(name.c_str()) == 0 || errno == ENOENT;
}

}  // namespace mixccl
