// Point-to-point traffic of one process group on two communicators of its own, besides the
// group's (its collectives keep theirs, so the two never share an ordered stream): the messages
// from a lower to a higher rank go on the first, the others on the second, so the two
// directions between a pair have a progress of their own (one waiting thread moves the bytes of
// a communicator, proxy.h: with one communicator, 64 MiB each way over sockets took 0.65x the
// time of the earlier lanes). Formed when the group is, in the background (non-blocking
// inits), their pairs connected on first use. Tags are matched inside, as Gloo matches them
// (p2p_inbox.h): each message goes out behind a small header naming its tag and size, in one
// group call with it, so a message costs no round trip more than a plain mixcclSend.
//
// Threads: one per peer and direction, made on first use. A send that waits for its receiver
// holds up only later sends to that peer (which are behind it in the stream anyway), so two
// ranks that each isend a large tensor before their irecv do not deadlock; a receive waits on
// its own thread, blocked in mixcclRecv, with no polling. The threads of one direction share
// its communicator (mixccl.h allows point-to-point from several threads, one per peer and
// direction): whichever of them waits moves the bytes of all.
//
// Host memory only: a group whose adaptor takes device memory, and CUDA tensors, keep the
// lanes (p2p_lanes.h), whose CUDA ordering this engine does not repeat.
#pragma once

#include "comm.h"
#include "p2p_inbox.h"
#include "worker.h"
#include "work.h"

#include <torch/csrc/distributed/c10d/Store.hpp>

#include <atomic>
#include <chrono>
#include <map>
#include <memory>
#include <mutex>
#include <string>

namespace mixccl_torch {

// MIXCCL_TORCH_P2P: "group" (unset: the default) runs host point-to-point on this engine,
// "lanes" on the lanes as device memory does (a communicator per peer, direction and tag: more
// descriptors and threads, and a few microseconds less per small message, docs/scale.md).
// Throws, naming the value, on anything else.
bool p2pOnGroupCommunicators();

class P2PEngine {
 public:
  // Every rank of the group makes it when the group forms (its communicator is the group's).
  // group: the group's communicator (outlives this): freed while the init goes on, the engine
  // waits for it only while group is healthy.
  P2PEngine(c10::intrusive_ptr<c10d::Store> store, int rank, int size,
            std::chrono::milliseconds timeout, const Comm* group = nullptr);
  ~P2PEngine();  // finishes queued transfers, then frees the threads and the communicator

  c10::intrusive_ptr<MixcclWork> send(const at::Tensor& tensor, int peer, int tag);
  c10::intrusive_ptr<MixcclWork> recv(const at::Tensor& tensor, int peer, int tag);
  // From whichever other rank sends with tag first; the Work's sourceRank() names it.
  c10::intrusive_ptr<MixcclWork> recvAnySource(const at::Tensor& tensor, int tag);
  // Aborts the communicator: transfers in flight and queued ones fail at once.
  void abort();
  // Communicators point-to-point uses (for tests): one, whatever the peers and tags.
  size_t commCount() const { return directions_[0].comm ? kDirections : 0; }
  // mixcclCommInspect on the communicator of one direction (0: lower to higher ranks, 1: the
  // others; docs/inspect.md), once its init finished.
  std::string inspect(const std::string& key, int direction);

 private:
  struct Peer;
  Peer& peer(int p);
  // The communicator of messages from rank `from` to rank `to`, once its background init
  // finished (waits for it the first time).
  Comm& comm(int from, int to);
  void checkOpen(const char* opName);
  void runSend(int peer, const c10::intrusive_ptr<MixcclWork>& work, const at::Tensor& tensor,
               int tag);
  // A kept message for r, taken (or r failed: its size differs); false when none is kept.
  bool finishFromKept(PendingRecv& r);
  // A receive from peer: a kept message, else messages from peer until one is its.
  void runRecv(int peer, const std::shared_ptr<PendingRecv>& r);
  // peer's share of a receive from any source: probes until a message from peer arrives (then
  // reads it) or the receive is taken, times out or is stopped.
  void probeFor(int peer, const std::shared_ptr<PendingRecv>& r);
  // The next header from peer and its message, into the receive the inbox picks or kept.
  void readOne(int peer);
  std::shared_ptr<PendingRecv> pending(const at::Tensor& tensor, int peer, int tag,
                                       c10d::OpType type, const char* opName,
                                       std::chrono::milliseconds workTimeout);

  c10::intrusive_ptr<c10d::Store> store_;
  int rank_;
  int size_;
  std::chrono::milliseconds timeout_;
  const Comm* group_;
  // Messages from a lower to a higher rank go on the first, the others on the second: the two
  // directions of a pair have a communicator each, so each has its own progress.
  static constexpr int kDirections = 2;
  struct Direction {
    std::unique_ptr<Comm> comm;
    std::mutex readyMutex;
    std::atomic<bool> ready{false};
  };
  Direction directions_[kDirections];
  Comm& ready(Direction& d, int index);
  P2PInbox inbox_;
  std::atomic<uint64_t> order_{0};
  std::atomic<bool> stopping_{false};  // aborted or being destroyed: probes give up
  std::mutex mutex_;
  bool aborted_ = false;
  std::map<int, std::unique_ptr<Peer>> peers_;
};

}  // namespace mixccl_torch
