// The shared-memory transport's building blocks: a /dev/shm segment (ShmSegment) holding one
// single-producer/single-consumer byte ring (ShmRing). One segment carries one direction of one
// pair of ranks; the producer created it, the consumer maps it. Positions are 64-bit counters
// of bytes ever written/read, so full and empty never look alike and nothing wraps in practice.
#pragma once

#include <sys/uio.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <string>

#include "base/result.h"

namespace mixccl {

constexpr uint32_t kShmRingMagic = 0x4d52484d;  // "MHRM"
constexpr uint32_t kShmRingVersion = 1;
constexpr size_t kShmHeaderBytes = 4096;         // the data starts one page in

// The start of every segment. Fields written by one side only, except the sleeping flags,
// which the other side clears (exchange) when it rings the doorbell.
struct ShmRingHeader {
  std::atomic<uint32_t> magic;  // written last by the creator (release)
  uint32_t version;
  uint64_t capacity;            // ring bytes, a power of two
  uint64_t nonce;               // random; the consumer's cross-memory-attach probe reads it
  int32_t producerPid;
  int32_t reserved;
  uint64_t producerAddr;        // where this header lies in the producer's address space
  alignas(64) std::atomic<uint64_t> head;              // producer: bytes ever written
  alignas(64) std::atomic<uint64_t> tail;              // consumer: bytes ever read
  alignas(64) std::atomic<uint32_t> consumerSleeping;  // consumer waits for data
  std::atomic<uint32_t> cmaOk;                         // consumer: it can read producer memory
  alignas(64) std::atomic<uint32_t> producerSleeping;  // producer waits for room or cmaDone
  std::atomic<uint32_t> closed;                        // producer left cleanly; head is final
  alignas(64) std::atomic<uint64_t> cmaDone;           // consumer: descriptors completed
};
static_assert(sizeof(ShmRingHeader) <= kShmHeaderBytes, "header must fit its page");

// A view of a mapped segment as a ring. Each side uses only its own half of the operations.
class ShmRing {
 public:
  ShmRing() = default;
  // base: the mapping (kShmHeaderBytes + capacity bytes), header already initialised.
  explicit ShmRing(void* base);

  ShmRingHeader* header() const { return h_; }
  uint64_t capacity() const { return cap_; }

  // Producer: copies as much of iov as fits, publishes it; returns the bytes written.
  size_t writev(const iovec* iov, int n);
  size_t write(const void* p, size_t n);
  size_t writable() const;
  // Consumer: copies up to n bytes out and frees their room; returns the bytes read.
  size_t read(void* dst, size_t n);
  size_t readable() const;

  // Initialises a fresh segment's header (creator side) for capacity ring bytes.
  static void initHeader(void* base, uint64_t capacity, uint64_t nonce);

 private:
  ShmRingHeader* h_ = nullptr;
  char* data_ = nullptr;
  uint64_t cap_ = 0;
  uint64_t mask_ = 0;
};

// An mmap'ed /dev/shm object. Unmapped (not unlinked) on destruction.
class ShmSegment {
 public:
  ShmSegment() = default;
  ~ShmSegment();
  ShmSegment(ShmSegment&& o) noexcept;
  ShmSegment& operator=(ShmSegment&& o) noexcept;
  ShmSegment(const ShmSegment&) = delete;
  ShmSegment& operator=(const ShmSegment&) = delete;

  // Creates name (exclusively, mode 0600) with bytes reserved up front (posix_fallocate: a
  // /dev/shm that is too small fails here, not with SIGBUS later) and maps it.
  static Result create(const std::string& name, size_t bytes, ShmSegment* out);
  // Maps an existing segment; its size must be at least minBytes.
  static Result open(const std::string& name, size_t minBytes, ShmSegment* out);
  // shm_unlink; a name already gone is fine. Returns false on other errors.
  static bool unlink(const std::string& name);

  void* base() const { return base_; }
  size_t size() const { return size_; }

 private:
  void* base_ = nullptr;
  size_t size_ = 0;
};

}  // namespace mixccl
