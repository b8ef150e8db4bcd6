#include "p2p_engine.h"

#include <c10/util/Exception.h>

#include <cstdlib>
#include <cstring>
#include <thread>

namespace mixccl_torch {

namespace {

// Before every message: what the receiver needs to pick its receive. Validated on arrival.
struct Header {
  uint32_t magic;
  int32_t tag;
  uint64_t bytes;
};
constexpr uint32_t kMagic = 0x6d703270;  // "mp2p"
// Where rank 0 publishes the unique id of direction d's communicator.
std::string storeKey(int d) { return "mixccl/p2p-uid-" + std::to_string(d); }

std::exception_ptr backendError(const std::string& msg) {
  try {
    C10_THROW_ERROR(DistBackendError, msg);
  } catch (...) {
    return std::current_exception();
  }
}

const char* opNameOf(const PendingRecv& r) { return r.peer < 0 ? "recv (any source)" : "recv"; }

std::exception_ptr sizeError(const PendingRecv& r, int from, size_t bytes) {
  return backendError(std::string("mixccl ") + opNameOf(r) + ": rank " + std::to_string(from) +
                      " sent " + std::to_string(bytes) + " bytes with tag " +
                      std::to_string(r.tag) + " to a receive of " + std::to_string(r.bytes()) +
                      " bytes (the message stays for a receive of its size)");
}

}  // namespace

// Members in this order: the workers are joined (receives first) before anything else goes.
struct P2PEngine::Peer {
  Worker out;
  Worker in;
  explicit Peer(int p)
      : out("mixccl>" + std::to_string(p)), in("mixccl<" + std::to_string(p)) {}
};

bool p2pOnGroupCommunicators() {
  const char* raw = std::getenv("MIXCCL_TORCH_P2P");
  const std::string value = raw ? raw : "";
  TORCH_CHECK(value.empty() || value == "group" || value == "lanes", "mixccl: MIXCCL_TORCH_P2P=",
              value, " is not one of group, lanes");
  return value != "lanes";
}

P2PEngine::P2PEngine(c10::intrusive_ptr<c10d::Store> store, int rank, int size,
                     std::chrono::milliseconds timeout, const Comm* group)
    : store_(std::move(store)), rank_(rank), size_(size), timeout_(timeout), group_(group) {
  // A group of one has no peer to talk to.
  if (size_ > 1)
    for (int d = 0; d < kDirections; ++d)
      // Lazily connected whatever MIXCCL_CONNECT says: a group that never sends holds no pair,
      // one that does only the pairs it uses (as the lanes, formed on first use, did).
      directions_[d].comm = Comm::viaStore(*store_, storeKey(d), rank_, size_, timeout_,
                                           "torch-p2p", /*blocking=*/false, "lazy");
}

P2PEngine::~P2PEngine() {
  stopping_.store(true);  // a probing receive from any source gives up instead of its timeout
  std::map<int, std::unique_ptr<Peer>> peers;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    peers.swap(peers_);
  }
  for (auto& entry : peers) {
    entry.second->out.drain();
    entry.second->in.drain();
  }
  peers.clear();
  // A group freed right after it formed (and never used for point-to-point) may still be
  // initialising its communicator: let the init finish rather than cancel it, since every
  // rank of the group takes part in it (so it ends soon), while a rank that cancels leaves the
  // others' inits to fail, each at its own pace. A failed or aborted init ends it at once.
  bool aborted;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    aborted = aborted_;
  }
  // Not when the group has failed (a peer died: the init may never end), and never past the
  // group's timeout. Rank 0 then removes the id, if ready() has not, so that a later group on
  // the same store cannot find it.
  for (int i = 0; i < kDirections; ++i) {
    Direction& d = directions_[i];
    if (d.comm && !d.ready.load()) {
      try {
        if (!aborted) d.comm->waitReady(timeout_, [this] { return group_ && !group_->healthy(); });
      } catch (...) {
      }
      try {
        if (rank_ == 0) store_->deleteKey(storeKey(i));
      } catch (...) {
      }
    }
    d.comm.reset();
  }
}

P2PEngine::Peer& P2PEngine::peer(int p) {
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = peers_.find(p);
  if (it == peers_.end()) it = peers_.emplace(p, std::make_unique<Peer>(p)).first;
  return *it->second;
}

Comm& P2PEngine::ready(Direction& d, int index) {
  if (d.ready.load()) return *d.comm;
  std::lock_guard<std::mutex> lock(d.readyMutex);
  if (!d.ready.load()) {
    d.comm->waitReady(timeout_);
    if (rank_ == 0) store_->deleteKey(storeKey(index));
    d.ready.store(true);
  }
  return *d.comm;
}

Comm& P2PEngine::comm(int from, int to) {
  const int index = from < to ? 0 : 1;
  return ready(directions_[index], index);
}

std::string P2PEngine::inspect(const std::string& key, int direction) {
  TORCH_CHECK(directions_[0].comm, "mixccl: a group of one has no point-to-point communicator");
  TORCH_CHECK(direction == 0 || direction == 1, "mixccl: direction must be 0 (to higher ranks) "
              "or 1 (to lower ranks), not ", direction);
  return ready(directions_[direction], direction).inspect(key);
}

void P2PEngine::checkOpen(const char* opName) {
  std::lock_guard<std::mutex> lock(mutex_);
  TORCH_CHECK(!aborted_, "mixccl ", opName, ": the process group was aborted");
}

c10::intrusive_ptr<MixcclWork> P2PEngine::send(const at::Tensor& tensor, int peerRank, int tag) {
  checkOpen("send");
  auto work = c10::make_intrusive<MixcclWork>(rank_, c10d::OpType::SEND, "send",
                                              std::vector<at::Tensor>{tensor}, timeout_);
  peer(peerRank).out.submit([this, peerRank, work, tensor, tag] {
    runSend(peerRank, work, tensor, tag);
  });
  return work;
}

void P2PEngine::runSend(int peerRank, const c10::intrusive_ptr<MixcclWork>& work,
                        const at::Tensor& tensor, int tag) {
  try {
    checkOpen("send");
    Comm& c = comm(rank_, peerRank);
    at::Tensor buf = tensor.contiguous();
    Header h{kMagic, tag, static_cast<uint64_t>(buf.nbytes())};
    // One group: the header and the message leave together, one wait for both. Bytes, not
    // elements: point-to-point needs no arithmetic, so every dtype travels.
    mixcclGroupStart();
    mixcclResult_t r = mixcclSend(&h, sizeof(h), mixcclUint8, peerRank, c.get(), nullptr);
    if (r == mixcclSuccess && h.bytes)
      r = mixcclSend(buf.data_ptr(), h.bytes, mixcclUint8, peerRank, c.get(), nullptr);
    mixcclResult_t end = mixcclGroupEnd();
    c.check(r, "send");
    c.check(end, "send");
    work->markDone();
  } catch (...) {
    work->markFailed(std::current_exception());
  }
}

std::shared_ptr<PendingRecv> P2PEngine::pending(const at::Tensor& tensor, int peerRank, int tag,
                                                c10d::OpType type, const char* opName,
                                                std::chrono::milliseconds workTimeout) {
  auto r = std::make_shared<PendingRecv>();
  r->work = c10::make_intrusive<MixcclWork>(rank_, type, opName, std::vector<at::Tensor>{tensor},
                                            workTimeout);
  r->tensor = tensor;
  r->buffer = tensor.is_contiguous() ? tensor : at::empty(tensor.sizes(), tensor.options());
  r->peer = peerRank;
  r->tag = tag;
  r->order = order_.fetch_add(1);
  r->deadline = std::chrono::steady_clock::now() + timeout_;
  return r;
}

c10::intrusive_ptr<MixcclWork> P2PEngine::recv(const at::Tensor& tensor, int peerRank, int tag) {
  checkOpen("recv");
  std::shared_ptr<PendingRecv> r =
      pending(tensor, peerRank, tag, c10d::OpType::RECV, "recv", timeout_);
  inbox_.post(r);
  peer(peerRank).in.submit([this, peerRank, r] { runRecv(peerRank, r); });
  return r->work;
}

bool P2PEngine::finishFromKept(PendingRecv& r) {
  at::Tensor payload;
  int from = -1;
  size_t bytes = 0;
  switch (inbox_.takeKept(r, &payload, &from, &bytes)) {
    case P2PInbox::Kept::Taken:
      if (bytes) std::memcpy(r.buffer.data_ptr(), payload.data_ptr(), bytes);
      r.finish(from);
      return true;
    case P2PInbox::Kept::Mismatch:
      r.work->markFailed(sizeError(r, from, bytes));
      return true;
    case P2PInbox::Kept::None:
      break;
  }
  return false;
}

void P2PEngine::runRecv(int peerRank, const std::shared_ptr<PendingRecv>& r) {
  try {
    if (r->claimed.load()) return;  // an earlier receive's reading took its message
    checkOpen("recv");
    if (finishFromKept(*r)) return;
    // Blocked in mixcclRecv on the next header: no polling. Messages of other tags met on the
    // way go to their receives or are kept.
    while (!r->claimed.load()) readOne(peerRank);
  } catch (...) {
    if (r->claim()) r->work->markFailed(std::current_exception());
  }
}

void P2PEngine::readOne(int peerRank) {
  Comm& c = comm(peerRank, rank_);
  Header h{};
  c.check(mixcclRecv(&h, sizeof(h), mixcclUint8, peerRank, c.get(), nullptr), "recv");
  TORCH_CHECK(h.magic == kMagic, "mixccl recv: rank ", peerRank, " sent a message without a "
              "point-to-point header (magic 0x", std::hex, h.magic, ")");
  std::shared_ptr<PendingRecv> target = inbox_.match(peerRank, h.tag);
  const bool fits = target && target->bytes() == h.bytes;
  at::Tensor payload;
  try {
    void* into = nullptr;
    if (fits) {
      into = target->buffer.data_ptr();
    } else {
      payload = at::empty({static_cast<int64_t>(h.bytes)}, at::kByte);
      into = payload.data_ptr();
    }
    if (h.bytes) c.check(mixcclRecv(into, h.bytes, mixcclUint8, peerRank, c.get(), nullptr), "recv");
  } catch (...) {
    if (target) target->work->markFailed(std::current_exception());
    throw;
  }
  if (fits) {
    target->finish(peerRank);
    return;
  }
  inbox_.keep(peerRank, h.tag, std::move(payload));
  if (target) target->work->markFailed(sizeError(*target, peerRank, h.bytes));
}

c10::intrusive_ptr<MixcclWork> P2PEngine::recvAnySource(const at::Tensor& tensor, int tag) {
  const char* opName = "recv (any source)";
  checkOpen(opName);
  TORCH_CHECK(size_ > 1, "mixccl recv (any source): rank ", rank_,
              " is alone in its group: no rank could send to it");
  // An empty tensor's send moves a header only, which says nothing a receive could need; as
  // the lanes did, name the source for one.
  TORCH_CHECK(tensor.numel() > 0, "mixccl recv (any source): the tensor is empty; a receive "
              "from any source needs at least one element (name the source for an empty one)");
  // The probes end it at the group's timeout with a message saying what was waited for;
  // wait() gives them a second more before its own, plainer, timeout.
  std::shared_ptr<PendingRecv> r = pending(tensor, -1, tag, c10d::OpType::RECVANYSOURCE, opName,
                                           timeout_ + std::chrono::seconds(1));
  inbox_.post(r);
  if (finishFromKept(*r)) return r->work;
  for (int p = 0; p < size_; ++p)
    if (p != rank_) peer(p).in.submit([this, p, r] { probeFor(p, r); });
  return r->work;
}

void P2PEngine::probeFor(int peerRank, const std::shared_ptr<PendingRecv>& r) {
  // mixccl has no receive from any source: each peer's thread probes (mixcclIprobe), pausing
  // between looks, as the lanes did. Named receives never poll.
  auto pause = std::chrono::microseconds(20);
  try {
    while (!r->claimed.load()) {
      if (stopping_.load()) {
        if (r->claim())
          r->work->markFailed(backendError("mixccl recv (any source): the process group was "
                                           "aborted or shut down"));
        return;
      }
      Comm& c = comm(peerRank, rank_);
      int flag = 0;
      size_t bytes = 0;
      c.check(mixcclIprobe(peerRank, &flag, &bytes, c.get()), "recv (any source)");
      if (flag) {
        readOne(peerRank);  // perhaps r's message, perhaps another receive's
        pause = std::chrono::microseconds(20);
        continue;
      }
      if (std::chrono::steady_clock::now() >= r->deadline) {
        if (r->claim())
          r->work->markFailed(backendError(
              "mixccl recv (any source): rank " + std::to_string(rank_) + " got no message " +
              "with tag " + std::to_string(r->tag) + " from any rank within " +
              std::to_string(timeout_.count()) + " ms (the process group's timeout)"));
        return;
      }
      std::this_thread::sleep_for(pause);
      pause = std::min(pause * 2, std::chrono::microseconds(1000));
    }
  } catch (...) {
    if (r->claim()) r->work->markFailed(std::current_exception());
  }
}

void P2PEngine::abort() {
  stopping_.store(true);
  std::lock_guard<std::mutex> lock(mutex_);
  if (aborted_) return;
  aborted_ = true;
  for (Direction& d : directions_)
    if (d.comm) d.comm->abort();
}

}  // namespace mixccl_torch
