// The send/receive vocabulary algorithms are written in: nonblocking sends and receives to
// peers of one communicator, handed to its proxy, and waits bounded by the call's deadline.
// Every op started here is finished before the Transfers object goes away, so buffers can be
// released safely after it (also on errors).
#pragma once

#include <cstddef>
#include <deque>

#include "core/clock.h"
#include "core/result.h"
#include "proxy/proxy.h"
#include "proxy/proxy_op.h"

namespace mixccl {

class Transfers {
 public:
  Transfers(Proxy& proxy, const Deadline& deadline) : proxy_(proxy), deadline_(deadline) {}
  ~Transfers() { waitAll(); }
  Transfers(const Transfers&) = delete;
  Transfers& operator=(const Transfers&) = delete;

  ProxyOp* send(int peer, const void* buf, size_t bytes) {
    ops_.emplace_back(ProxyOp::Kind::Send, peer, const_cast<void*>(buf), bytes);
    proxy_.post(&ops_.back());
    return &ops_.back();
  }
  ProxyOp* recv(int peer, void* buf, size_t bytes) {
    ops_.emplace_back(ProxyOp::Kind::Recv, peer, buf, bytes);
    proxy_.post(&ops_.back());
    return &ops_.back();
  }
  Result wait(ProxyOp* op) { return op ? proxy_.wait(op, deadline_) : mixcclSuccess; }
  // Waits for every op started so far; the first error wins.
  Result waitAll() {
    Result first = mixcclSuccess;
    for (ProxyOp& op : ops_) {
      Result r = proxy_.wait(&op, deadline_);
      if (first == mixcclSuccess) first = r;
    }
    return first;
  }

 private:
  Proxy& proxy_;
  Deadline deadline_;
  std::deque<ProxyOp> ops_;
};

}  // namespace mixccl
