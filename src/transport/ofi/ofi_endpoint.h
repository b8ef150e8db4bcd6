// The libfabric objects of one communicator: fabric, domain, one reliable-datagram endpoint,
// its address vector and one completion queue, shared by every peer's OfiConnection. The
// completion queue is the only place progress happens (most providers progress manually, inside
// fi_cq_read), so reading it is this class's job; each completion goes back to the connection
// that posted the operation (OfiOp::owner).
#pragma once

#include <rdma/fabric.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_eq.h>

#include <atomic>
#include <cstdint>
#include <string>
#include <unordered_set>
#include <vector>

#include "base/clock.h"
#include "base/result.h"
#include "transport/ofi/ofi_mr_cache.h"
#include "transport/ofi/ofi_provider.h"
#include "transport/transport.h"

namespace mixccl {

class OfiOpOwner;

// One libfabric operation in flight (a piece of a request, or a bye). Its address is the
// operation's context, so it starts with the fi_context2 that FI_CONTEXT/FI_CONTEXT2
// providers may use as scratch space until the completion.
struct OfiOp {
  fi_context2 context;
  OfiOpOwner* owner = nullptr;  // null once the connection is gone: the completion is dropped
  TransportRequest* request = nullptr;  // null for a bye
  bool send = false;
  bool bye = false;
  size_t offset = 0, len = 0;   // the piece of the request's buffer
  uint64_t tag = 0;
  OfiMrCache::Entry* mr = nullptr;
  // A bye's payload lives here, not in the connection: a bye sent while the communicator is
  // destroyed completes after its connection is gone, and the endpoint owns this record.
  // [0]: messages the sender of the bye sent, [1]: messages it received.
  uint64_t scratch[2] = {0, 0};
};

// What a connection does with its operations' completions.
class OfiOpOwner {
 public:
  virtual ~OfiOpOwner() = default;
  // op finished; len: bytes received (receives) or sent; stamp: a receive's remote completion
  // data (the sender's call stamp), 0 where the message carried none.
  virtual void opDone(OfiOp* op, size_t len, uint64_t stamp) = 0;
  // op failed: err is libfabric's entry, text its explanation (fi_cq_strerror).
  virtual void opFailed(OfiOp* op, const fi_cq_err_entry& err, const std::string& text) = 0;
  // Room may have appeared in the queues: post what fi_tsend/fi_trecv refused (FI_EAGAIN).
  virtual void retryBacklog() = 0;
};

// Whether the provider's completion-queue wait fd wakes a sleeper when a peer's message
// arrives. Providers over sockets or verbs put their network fds (or completion channels)
// behind it. Others do not: libfabric 1.17's shm provider, for one, progresses only inside our
// own fi_cq_read calls and signals its fd only for completions it writes then, so a rank
// sleeping on it would never hear its peers. Those are polled (ofi_connection.h).
bool waitFdHearsPeers(const fi_info* info);

class OfiEndpoint {
 public:
  OfiEndpoint() = default;
  ~OfiEndpoint();
  OfiEndpoint(const OfiEndpoint&) = delete;
  OfiEndpoint& operator=(const OfiEndpoint&) = delete;

  // Opens everything for the chosen provider; rank names this rank in errors. Errors name the
  // provider and the step that failed. shmName: for the shm provider, the name of this
  // endpoint's region in /dev/shm (see unlinkShmName); ignored by other providers.
  Result open(OfiChoice choice, int rank, const std::string& shmName = "");
  // The shm provider keeps each endpoint's region in /dev/shm under the endpoint's name, and
  // a process killed with -9 never removes it. Once every peer has mapped it (after the init
  // handshake: peers map a region at their first message), the name can go, the way mixccl's
  // own shm segments go after setup: a crash then leaves nothing behind.
  void unlinkShmName();
  // This endpoint's address (fi_getname), what peers insert into their address vectors.
  const std::string& address() const { return address_; }
  // Removes the /dev/shm name of peer's region (the shm provider; nothing otherwise) when
  // that peer failed: a rank killed with -9 before every peer mapped its region (pairs that
  // connect on first use keep the name until then) cannot remove it itself.
  void unlinkPeerShmName(int peer) const;
  // Inserts a peer's address; false (with *error) if the provider rejects it.
  bool insert(const std::string& address, fi_addr_t* out, std::string* error);

  const fi_info* info() const { return choice_.info.get(); }
  bool directedRecv() const { return choice_.directedRecv; }
  bool hmem() const { return choice_.hmem; }
  size_t maxMessage() const { return maxMessage_; }
  // The completion queue's wait fd (an fd epoll can watch), or -1 where the provider has none:
  // then the engine polls.
  int waitFd() const { return waitFd_; }

  fid_ep* ep() { return ep_; }
  OfiMrCache& mrCache() { return mr_; }

  // Operation records: made here so that whatever is still in flight when the endpoint closes
  // is freed with it, whichever connection posted it.
  OfiOp* newOp(OfiOpOwner* owner);
  void freeOp(OfiOp* op);
  void addOwner(OfiOpOwner* o) { owners_.push_back(o); }
  // Pairs connected on first use (OfiTransport::connectOnFirstUse): the first connection the
  // engine starts owns the progress; true for exactly one caller.
  bool claimProgress() { return !progressClaimed_.exchange(true); }
  void removeOwner(OfiOpOwner* o);

  // Reads the completion queue (which is what makes most providers progress) and hands every
  // completion to its owner, then lets owners retry refused posts. Returns the number handled.
  int progress();
  // Before the engine blocks on waitFd(): true if it may (fi_trywait), false if completions are
  // already there and must be read first.
  bool tryWait();
  // Operations still in flight.
  size_t inFlight() const { return ops_.size(); }
  // An 8-byte tagged message owned by nobody (the init handshake): sent from, or received into,
  // the record's scratch. Retries while the provider says FI_EAGAIN until the deadline; false
  // with *error on any other failure. Its completion only frees the record; a failure is kept
  // in orphanError().
  bool postOrphan(bool send, fi_addr_t addr, uint64_t tag, const Deadline& deadline,
                  std::string* error);
  // Whether an operation with this tag is still in flight (the handshake's bookkeeping).
  bool tagInFlight(uint64_t tag) const;
  const std::string& orphanError() const { return orphanError_; }
  // The communicator failed: cancel every operation (fi_cancel) and close the endpoint at once,
  // without reading the queue again (a provider may wait forever for a dead peer there). No
  // completion reaches an owner afterwards. Idempotent.
  void abandon();
  bool closed() const { return closed_; }
  // A clean end: lets sends still in flight (byes) complete for up to maxMs, then closes.
  void closeGracefully(int maxMs);
  const std::string& provider() const { return provider_; }

 private:
  void closeAll();

  OfiChoice choice_;
  std::string provider_;
  int rank_ = 0;
  fid_fabric* fabric_ = nullptr;
  fid_domain* domain_ = nullptr;
  fid_ep* ep_ = nullptr;
  fid_av* av_ = nullptr;
  fid_cq* cq_ = nullptr;
  int waitFd_ = -1;
  size_t maxMessage_ = 0;
  std::string address_;
  OfiMrCache mr_;
  std::unordered_set<OfiOp*> ops_;
  std::vector<OfiOpOwner*> owners_;
  bool closed_ = false;
  std::atomic<bool> progressClaimed_{false};
  std::string orphanError_;
  std::string shmName_;  // set while the region's name exists
  // The shm provider: the names of this communicator's regions without the rank (every rank
  // names its own region this way), so that a failed peer's name can be removed.
  std::string shmNamePrefix_;
};

}  // namespace mixccl
