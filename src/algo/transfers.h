// The send/receive vocabulary algorithms are written in: nonblocking sends and receives to
// peers of one communicator, handed to its proxy, and waits bounded by the call's deadline.
// Every op started here is finished before the Transfers object goes away, so buffers can be
// released safely after it (also on errors).
#pragma once

#include <cstddef>
#include <deque>
#include <vector>

#include "core/clock.h"
#include "core/result.h"
#include "proxy/proxy.h"
#include "proxy/proxy_op.h"

namespace mixccl {

class Transfers {
 public:
  Transfers(Proxy& proxy, const Deadline& deadline) : proxy_(proxy), deadline_(deadline) {}
  // A view of a subset of the communicator: peer i of the algorithm is members[i] of the
  // communicator (a domain running mixccl's own algorithms among its ranks).
  Transfers(Proxy& proxy, const Deadline& deadline, const std::vector<int>& members)
      : proxy_(proxy), deadline_(deadline), members_(&members) {}
  ~Transfers() { waitAll(); }
  Transfers(const Transfers&) = delete;
  Transfers& operator=(const Transfers&) = delete;

  ProxyOp* send(int peer, const void* buf, size_t bytes) {
    ops_.emplace_back(ProxyOp::Kind::Send, commRank(peer), const_cast<void*>(buf), bytes);
    proxy_.post(&ops_.back());
    return &ops_.back();
  }
  ProxyOp* recv(int peer, void* buf, size_t bytes) {
    ops_.emplace_back(ProxyOp::Kind::Recv, commRank(peer), buf, bytes);
    proxy_.post(&ops_.back());
    return &ops_.back();
  }
  const Deadline& deadline() const { return deadline_; }
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
  int commRank(int peer) const { return members_ ? (*members_)[peer] : peer; }

  Proxy& proxy_;
  Deadline deadline_;
  const std::vector<int>* members_ = nullptr;
  std::deque<ProxyOp> ops_;
};

}  // namespace mixccl
