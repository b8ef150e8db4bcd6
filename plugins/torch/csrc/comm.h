// One mixccl communicator owned by the torch backend (RAII), formed through torch's Store
// or split from a parent, and the one place mixccl result codes become C++ exceptions.
#pragma once

#include <mixccl.h>

#include <c10/core/Device.h>
#include <torch/csrc/distributed/c10d/Store.hpp>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace mixccl_torch {

class Comm {
 public:
  // Rank 0 of the group creates the unique id (starting the rendezvous root in this process)
  // and publishes it under key; the others wait for it (bounded by timeout), then all init.
  // blocking false: the init goes on in the background (config.blocking = 0); waitReady()
  // before the first call, and rank 0 then removes the key (the caller's business).
  // connect: config.connect ("lazy": pairs on first use whatever MIXCCL_CONNECT; nullptr: as
  // MIXCCL_CONNECT says).
  static std::unique_ptr<Comm> viaStore(c10d::Store& store, const std::string& key, int rank,
                                        int size, std::chrono::milliseconds timeout,
                                        const std::string& name, bool blocking = true,
                                        const char* connect = nullptr);
  // mixcclCommSplit of parent: every rank of parent calls it; color < 0 leaves this rank out
  // (returns nullptr).
  static std::unique_ptr<Comm> split(Comm& parent, int color, int key,
                                     std::chrono::milliseconds timeout, const std::string& name);
  // mixcclCommShrink of parent without the excluded ranks (parent's ranks): every surviving
  // rank calls it with the same list. flags: MIXCCL_SHRINK_DEFAULT (parent healthy, stays
  // usable) or MIXCCL_SHRINK_ABORT (parent's work stopped first; it can then only be freed).
  static std::unique_ptr<Comm> shrink(Comm& parent, const std::vector<int>& excluded, int flags,
                                      std::chrono::milliseconds timeout, const std::string& name);

  ~Comm();
  Comm(const Comm&) = delete;
  Comm& operator=(const Comm&) = delete;

  mixcclComm_t get() const { return comm_; }
  int rank() const { return rank_; }
  int size() const { return size_; }
  // Throws c10::DistBackendError "mixccl <what>: <the communicator's last error>" when r is not
  // mixcclSuccess.
  void check(mixcclResult_t r, const char* what) const;
  // check() of a collective call on this communicator (a grouped exchange is one), counted:
  // tests see through collectiveCalls() how many mixccl calls an operation made.
  void checkCollective(mixcclResult_t r, const char* what) {
    ++collectiveCalls_;
    check(r, what);
  }
  uint64_t collectiveCalls() const { return collectiveCalls_.load(); }
  // After a non-blocking init: returns once it finished, throws its error, or a timeout after
  // timeout. Any thread.
  void waitReady(std::chrono::milliseconds timeout) const;
  // The same, giving up (false) as soon as stop() says so.
  bool waitReady(std::chrono::milliseconds timeout, const std::function<bool()>& stop) const;
  // No failure reported on it (mixcclCommGetAsyncError). Any thread.
  bool healthy() const;
  // From any thread: every call blocked on this communicator returns with an error soon after.
  void abort();
  // mixcclCommRevoke, from any thread: this rank's calls on it and those of every rank it
  // reaches fail at once; it can then be shrunk (MIXCCL_SHRINK_ABORT) or destroyed.
  void revoke();
  // mixcclCommInspect(key): what mixccl chose for this communicator (docs/inspect.md).
  std::string inspect(const std::string& key) const;
  // The adaptor this rank uses ("host", "gloo", ...).
  std::string adaptor() const;
  // Where its buffers live: "host" or "device".
  std::string memory() const;
  // The data bytes of each shared-memory slot, 0 without slots (agreed over the ranks at init:
  // mixcclCommInspect key shm_slot_bytes).
  size_t shmSlotBytes() const;
  // memory() == "device", asked once.
  bool deviceMemory() const { return deviceMemory_; }

  // The current operation's buffers and the stream its mixccl calls take: set by runOrdered
  // (op_order.h) on the worker for one operation; host memory and NULL otherwise.
  void setOpBuffers(c10::Device device, mixcclStream_t stream) {
    bufferDevice_ = device;
    stream_ = stream;
  }
  c10::Device bufferDevice() const { return bufferDevice_; }
  mixcclStream_t stream() const { return stream_; }

 private:
  // initialised: false while a non-blocking init goes on (nothing is asked of it then; such
  // a communicator is taken as host memory).
  Comm(mixcclComm_t comm, int rank, int size, bool initialised = true);
  mixcclComm_t comm_;
  int rank_;
  int size_;
  bool deviceMemory_;
  bool aborted_ = false;
  c10::Device bufferDevice_{c10::kCPU};
  mixcclStream_t stream_ = nullptr;
  std::atomic<uint64_t> collectiveCalls_{0};
};

// mixccl's timeout is whole seconds; torch's is milliseconds. Rounds up, at least 1.
int timeoutSeconds(std::chrono::milliseconds timeout);

}  // namespace mixccl_torch
