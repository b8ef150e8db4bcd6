// The send/receive vocabulary algorithms are written in: nonblocking sends and receives to
// peers of one communicator, handed to its proxy, and waits bounded by the call's deadline.
// Every op started here is finished before the Transfers object goes away, so buffers can be
// released safely after it (also on errors).
#pragma once

#include <cstddef>
#include <deque>
#include <unordered_set>
#include <vector>

#include "base/clock.h"
#include "base/result.h"
#include "proxy/proxy.h"
#include "transport/transport.h"

namespace mixccl {

// A started send or receive as an algorithm sees it: something to wait for, nothing more.
// Default-constructed: no transfer (waiting for it succeeds at once).
class Transfer {
 public:
  Transfer() = default;

 private:
  friend class Transfers;
  explicit Transfer(TransportRequest* r) : request_(r) {}
  TransportRequest* request_ = nullptr;
};

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

  // The memory kind of every buffer posted from now on (device memory only where the pair's
  // connections agreed to move it, core/device_direct.h).
  void setMemory(MemoryKind m) { memory_ = m; }
  // The call stamp (base/call_stamp.h) of every op posted from now on: the collective these
  // transfers belong to (0, the default: none). A receive fails with mixcclInvalidUsage when
  // the matching message carries another.
  void setStamp(uint64_t stamp) { stamp_ = stamp; }
  uint64_t stamp() const { return stamp_; }

  Transfer send(int peer, const void* buf, size_t bytes) {
    ops_.emplace_back(TransportRequest::Kind::Send, commRank(peer), const_cast<void*>(buf), bytes,
                      memory_);
    ops_.back().stamp = stamp_;
    ops_.back().callStart = sentTo_.insert(commRank(peer)).second;
    proxy_.post(&ops_.back());
    return Transfer(&ops_.back());
  }
  Transfer recv(int peer, void* buf, size_t bytes) {
    ops_.emplace_back(TransportRequest::Kind::Recv, commRank(peer), buf, bytes, memory_);
    ops_.back().stamp = stamp_;
    ops_.back().callStart = receivedFrom_.insert(commRank(peer)).second;
    proxy_.post(&ops_.back());
    return Transfer(&ops_.back());
  }
  const Deadline& deadline() const { return deadline_; }
  Result wait(Transfer t) { return t.request_ ? proxy_.wait(t.request_, deadline_) : mixcclSuccess; }
  // Waits for every op started so far; the first error wins.
  Result waitAll() {
    Result first = mixcclSuccess;
    for (TransportRequest& op : ops_) {
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
  MemoryKind memory_ = MemoryKind::Host;
  uint64_t stamp_ = 0;
  // Peers posted to so far, per direction: the first op to each starts the call there.
  std::unordered_set<int> sentTo_, receivedFrom_;
  std::deque<TransportRequest> ops_;
};

}  // namespace mixccl
