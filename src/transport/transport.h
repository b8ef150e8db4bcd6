// The transport interface: what the proxy (src/proxy) sees of anything that moves bytes between
// two ranks. A transport serves a set of peers of one communicator with one Connection each;
// the proxy posts sends and receives of (buffer, bytes, memory kind) to a connection in order,
// and the connection completes them through TransportEvents. Matching is the transport's own
// business: stream transports (socket, shm) number messages and frame them; tag-matching
// libraries (UCX, libfabric) put the number in the tag. docs/transports.md says how to write
// one; registry.h says how one is chosen for a pair.
#pragma once

#include <sys/epoll.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "base/clock.h"
#include "base/result.h"
#include "bootstrap/peer_info.h"
#include "bootstrap/socket.h"

namespace mixccl {

enum class MemoryKind : uint8_t { Host = 0, Device = 1 };

// One send or receive. The poster owns it and keeps it (and its buffer) alive until state is
// no longer Pending; the proxy finishes every request it was given, also on abort.
struct TransportRequest {
  enum class Kind : uint8_t { Send, Recv };
  enum State : int { Pending = 0, Done = 1, Failed = 2 };

  TransportRequest() = default;
  TransportRequest(Kind k, int p, void* b, size_t n, MemoryKind m = MemoryKind::Host)
      : kind(k), peer(p), buf(static_cast<char*>(b)), bytes(n), memory(m) {}
  TransportRequest(const TransportRequest&) = delete;
  TransportRequest& operator=(const TransportRequest&) = delete;

  Kind kind = Kind::Send;
  int peer = -1;
  char* buf = nullptr;
  size_t bytes = 0;
  MemoryKind memory = MemoryKind::Host;
  // The call stamp (base/call_stamp.h) this message carries and the one a receive expects
  // (0: no collective). Set by the poster before post().
  uint64_t stamp = 0;
  // The first message of its call between the two ranks in this direction (both ranks agree
  // for matching calls): a transport that pays for carrying the stamp may carry it only here,
  // since the first message of another call already differs (UCX, ucx_stamped.h).
  bool callStart = true;

  // The transport's bookkeeping, touched only by whoever drives progress.
  uint32_t seq = 0;          // message number of this (peer, direction)
  size_t assigned = 0;       // send: bytes already cut into frames
  bool headerSent = false;   // send: the first frame exists (covers 0-byte messages)
  size_t done = 0;           // bytes fully sent or received
  uint64_t knownTotal = UINT64_MAX;
  Result result = mixcclSuccess;

  std::atomic<int> state{Pending};
  int stateNow() const { return state.load(std::memory_order_acquire); }
};

class Connection;

// What a connection may ask of the engine that drives it. Called only from progress calls.
class TransportEvents {
 public:
  virtual ~TransportEvents() = default;
  // r is finished (result mixcclSuccess or the error); the engine tells the poster.
  virtual void complete(TransportRequest* r, Result result) = 0;
  // The connection to peer broke (closed, reset, failed I/O): fails the communicator, naming it.
  virtual void peerFailed(int peer, const std::string& what) = 0;
  // The peer broke the protocol (invalid frame, ...): fails the communicator with message.
  virtual void protocolError(int peer, const std::string& what) = 0;
  // A message from peer carries the call stamp theirs where the receive posted for it expects
  // mine: the ranks made different calls. Fails the communicator with mixcclInvalidUsage.
  virtual void callMismatch(int peer, uint64_t theirs, uint64_t mine) = 0;
  // A message from peer ("more than N" bytes: sent) was too large for a receive of posted
  // bytes of the collective stamped mine (nonzero), so its stamp could not be read (a library
  // transport truncated it): mismatched calls. The peer, whose receive then meets this rank's
  // smaller message, can name both calls: the engine waits briefly for its notice first.
  virtual void callSizeMismatch(int peer, uint64_t mine, const std::string& sent,
                                size_t posted) = 0;
  // The peer's stream ended cleanly (its goodbye); pendingWork: it left with ours outstanding.
  virtual void peerLeft(int peer, bool pendingWork) = 0;
  // Readiness the connection wants to hear of on fd (EPOLLIN/EPOLLOUT/EPOLLRDHUP; 0: none),
  // delivered as onEvent(lane, events). Safe to call repeatedly with the same mask.
  virtual void setInterest(Connection* c, int lane, int fd, uint32_t events) = 0;
  // Asks the peer's engine to look at this pair (a doorbell on the control connection), for
  // transports whose progress no fd tells of (shared-memory rings).
  virtual void ringDoorbell(int peer) = 0;
  virtual bool failed() const = 0;
  virtual const std::string& peerName(int peer) const = 0;
  virtual int rank() const = 0;
};

// One peer served by one transport.
class Connection {
 public:
  explicit Connection(int peer) : peer_(peer) {}
  virtual ~Connection() = default;
  Connection(const Connection&) = delete;
  Connection& operator=(const Connection&) = delete;

  int peer() const { return peer_; }
  virtual const char* transportName() const = 0;
  virtual bool canMove(MemoryKind kind) const { return kind == MemoryKind::Host; }

  // Called once before any post: register fds (events->setInterest), keep events for later.
  virtual Result start(TransportEvents* events) = 0;
  // The i-th send posted here matches the peer's i-th receive posted for this rank.
  virtual void postSend(TransportRequest* r) = 0;
  virtual void postRecv(TransportRequest* r) = 0;
  // fd of lane (as registered) is ready with events.
  virtual void onEvent(int lane, uint32_t events) = 0;
  // True when the engine must call poll() every round: progress that no fd announces.
  virtual bool needsPolling() const { return false; }
  // One look for such progress; true when something moved (a waiting call keeps polling while
  // data flows instead of sleeping between pieces).
  virtual bool poll() { return false; }
  // Before the engine blocks: arrange to be woken (doorbell flags); false if work came in
  // meanwhile and the engine must not block. afterBlock() undoes the arrangement.
  virtual bool prepareToBlock() { return true; }
  virtual void afterBlock() {}
  // The peer rang the doorbell for this pair.
  virtual void onDoorbell() { poll(); }
  // The peer's goodbye arrived on the control connection (it sends it after its data stream's
  // goodbye): a stream transport looks for the rest of its stream; a library transport whose
  // own goodbye may be overtaken learns that the link's end is no failure.
  virtual void onControlGoodbye() { onDoorbell(); }
  // Leaving cleanly: end the stream in a way the peer can tell from a crash. Never blocks.
  virtual void goodbye() = 0;
  // The communicator failed: forget every request (the engine fails them) and cut the link.
  virtual void abandon() = 0;
  // The peer failed (it caused this communicator's failure, or a shrink excluded it): it will
  // never end the link itself. A transport whose peer keeps state outside its process by a name
  // (a region in /dev/shm) removes that name, which a process killed with -9 leaves behind.
  virtual void peerGone() {}
  // Bytes moved so far (tests and logs).
  virtual uint64_t bytesMoved() const { return 0; }
  // mixcclIprobe: whether this transport can tell that the peer's next message, which no posted
  // receive matches yet, has begun to arrive; then nextUnmatchedMessage says so (and its size).
  virtual bool canProbe() const { return false; }
  virtual bool nextUnmatchedMessage(uint64_t* bytes) const { return false; }
  // What the link is made of beyond the transport's name ("2 connections", "ring 1024 KiB,
  // cross-memory attach off", UCX's transports "tcp"): INFO and mixcclCommInspect
  // "transport_detail.<peer>".
  virtual std::string detail() const { return ""; }

 private:
  int peer_;
};

// What a transport gets to connect the pairs chosen for it (registry.h).
struct TransportSetup {
  int rank = 0;
  int nranks = 1;
  uint64_t commHash = 0;
  const std::vector<PeerInfo>* peers = nullptr;
  // The authenticated connections of the mesh to each peer: [0] is the pair's control
  // connection (owned by the proxy afterwards; transports may use it for their own
  // handshake before the proxy starts), [1..] data connections a stream transport may take.
  std::vector<std::vector<Socket>>* conns = nullptr;
  Deadline deadline = Deadline::afterSeconds(0);
  size_t frameBytes = 256 << 10;  // socket frame size (MIXCCL_SOCKET_FRAME_BYTES)
};

// A kind of transport: decides which pairs it can serve and connects them.
class Transport {
 public:
  virtual ~Transport() = default;
  virtual const char* name() const = 0;
  // Whether this transport can serve the pair at all (from the exchanged peer info only, so
  // both ranks of the pair answer alike).
  virtual bool canConnect(const PeerInfo& local, const PeerInfo& peer) const = 0;
  // Connects the candidate pairs (collective over every rank's candidates, in rank order);
  // (*out)[p] stays null for a pair the transport declined after all (both sides agree), which
  // the next transport in the registry then gets.
  virtual Result connect(const TransportSetup& setup, const std::vector<int>& candidates,
                         std::vector<std::unique_ptr<Connection>>* out) = 0;
  // Connects the one pair with peer on first use (core/lazy_connector.h). Both ranks call it,
  // each on whichever thread builds its side (the proxy's for a dial, the acceptor's for an
  // answer) while the engine may be driving other pairs of the same transport: so it talks only
  // over the pair's control connection setup.conns[peer][0], and leaves what touches state the
  // engine drives (an endpoint on a shared worker) to the connection's start(), which runs under
  // the engine's progress. Transports that cannot connect that way refuse (the default).
  virtual Result connectOnFirstUse(const TransportSetup& setup, int peer,
                                   std::unique_ptr<Connection>* out);
  // Whether this transport can move memory of this kind at all (device memory: the library
  // offers GPU registration, e.g. libfabric's FI_HMEM); each Connection::canMove decides per
  // pair. Host memory by default.
  virtual bool supportsMemory(MemoryKind kind) const { return kind == MemoryKind::Host; }
};

}  // namespace mixccl
