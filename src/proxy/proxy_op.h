// One send or receive handed to the proxy thread. The caller owns the op and must keep it (and
// its buffer) alive until state() is no longer Pending; the proxy finishes every op it was
// given, with success or an error, also on abort.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>

#include "core/result.h"

namespace mixccl {

struct ProxyOp {
  enum class Kind : uint8_t { Send, Recv };
  enum State : int { Pending = 0, Done = 1, Failed = 2 };

  ProxyOp() = default;
  ProxyOp(Kind k, int p, void* b, size_t n) : kind(k), peer(p), buf(static_cast<char*>(b)), bytes(n) {}
  ProxyOp(const ProxyOp&) = delete;
  ProxyOp& operator=(const ProxyOp&) = delete;

  Kind kind = Kind::Send;
  int peer = -1;
  char* buf = nullptr;
  size_t bytes = 0;

  // Written by the proxy thread only.
  uint32_t seq = 0;
  size_t assigned = 0;     // send: bytes already cut into frames
  bool headerSent = false; // send: the first frame exists (covers 0-byte messages)
  size_t done = 0;         // bytes fully sent or received
  uint64_t knownTotal = UINT64_MAX;
  Result result = mixcclSuccess;

  std::atomic<int> state{Pending};
  int stateNow() const { return state.load(std::memory_order_acquire); }
};

}  // namespace mixccl
