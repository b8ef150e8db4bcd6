// The gloo adaptor: host memory, Gloo's TCP transport and Gloo's own collective algorithms.
// Every datatype and op works because Gloo takes the reduction as a function: ours calls
// mixccl's services->reduce (fp16/bf16/fp8 included).
#include <gloo/allgather.h>
#include <gloo/allreduce.h>
#include <gloo/broadcast.h>
#include <gloo/common/error.h>
#include <gloo/reduce.h>
#include <gloo/types.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <map>
#include <mutex>
#include <set>
#include <memory>
#include <string>
#include <vector>

#include "gloo_mesh.h"
#include "plugin_support.h"
#include "../common/table_entries.h"

using mixccl_plugin::setError;
using mixccl_plugin::typeName;
using mixccl_plugin::typeSize;

namespace {

constexpr const char* kPrefix = "gloo adaptor";
// Slot prefixes of our own messages; Gloo's collectives use prefixes 0x01..0x08.
constexpr uint8_t kP2pSlotPrefix = 0xA5;
constexpr uint8_t kReduceScatterSlotPrefix = 0xA6;

struct GlooComm : mixccl_plugin::CommBase {
  std::shared_ptr<mixccl_gloo::MeshContext> ctx;
  mixcclAdaptorServices_t services;
  std::chrono::milliseconds timeout;
  uint32_t nextTag = 0;                  // collectives: same sequence on every rank
  std::map<int, uint32_t> sendSeq, recvSeq;  // p2p: per peer and direction, matched in order
  // Buffers with a send or receive in flight, so commAbort can end their waits: closing
  // Gloo's connections does not wake a thread waiting on an unbound buffer.
  std::mutex inflightMutex;
  std::set<gloo::transport::UnboundBuffer*> inflight;
};

// Registers a buffer for the duration of its wait; a comm already aborted aborts it at once.
class Inflight {
 public:
  Inflight(GlooComm* c, gloo::transport::UnboundBuffer* b) : c_(c), b_(b) {
    std::lock_guard<std::mutex> lock(c_->inflightMutex);
    c_->inflight.insert(b_);
    if (c_->aborted.load()) {
      b_->abortWaitSend();
      b_->abortWaitRecv();
    }
  }
  ~Inflight() {
    std::lock_guard<std::mutex> lock(c_->inflightMutex);
    c_->inflight.erase(b_);
  }
  Inflight(const Inflight&) = delete;
  Inflight& operator=(const Inflight&) = delete;

 private:
  GlooComm* c_;
  gloo::transport::UnboundBuffer* b_;
};

// Waits for a posted send or receive; false (with the last error set) when it was aborted.
bool waitDone(GlooComm* c, gloo::transport::UnboundBuffer* b, bool isSend, const char* what) {
  bool done = isSend ? b->waitSend(c->timeout) : b->waitRecv(c->timeout);
  if (!done) setError(mixcclRemoteError, kPrefix, "%s: the communicator was aborted", what);
  return done;
}

GlooComm* asComm(void* comm) {
  return static_cast<GlooComm*>(static_cast<mixccl_plugin::CommBase*>(comm));
}

struct P2pOp {
  bool isSend;
  void* buf;
  size_t bytes;
  int peer;
  GlooComm* comm;
};
thread_local int tGroupDepth = 0;
thread_local std::vector<P2pOp> tGroupOps;

template <class Body>
mixcclResult_t guarded(const char* what, Body&& body) {
  // Gloo reports broken or timed-out connections as IoException: the peer's side.
  return mixccl_plugin::guarded(kPrefix, what, mixcclRemoteError, std::forward<Body>(body));
}

// Calls fn with a value of the unsigned type of the datatype's size, so Gloo's templates get
// the right element size whatever the mixccl datatype is.
template <class Fn>
void byElement(mixcclDataType_t type, Fn&& fn) {
  switch (typeSize(type)) {
    case 1: fn(uint8_t{}); break;
    case 2: fn(uint16_t{}); break;
    case 4: fn(uint32_t{}); break;
    default: fn(uint64_t{}); break;
  }
}

mixcclResult_t checkComm(void* comm, const char* what) {
  if (comm == nullptr) return setError(mixcclInvalidArgument, kPrefix, "%s: comm is NULL", what);
  if (asComm(comm)->aborted.load())
    return setError(mixcclInvalidUsage, kPrefix, "%s: the communicator was aborted", what);
  return mixcclSuccess;
}

mixcclResult_t checkType(mixcclDataType_t type, const char* what) {
  if (typeSize(type) == 0)
    return setError(mixcclInvalidArgument, kPrefix, "%s: datatype %d is invalid", what, type);
  return mixcclSuccess;
}

mixcclResult_t checkOp(mixcclRedOp_t op, const char* what) {
  if (op < mixcclSum || op > mixcclMin)
    return setError(mixcclInvalidArgument, kPrefix,
                    "%s: op %d is not supported (sum, prod, max, min; mixccl handles avg)", what,
                    op);
  return mixcclSuccess;
}

// Gloo's reduction callback: elementwise dst = a op b through mixccl's kernels.
gloo::AllreduceOptions::Func reduceFn(const GlooComm* c, mixcclDataType_t type,
                                      mixcclRedOp_t op) {
  auto fn = c->services.reduce;
  return [fn, type, op](void* dst, const void* a, const void* b, size_t n) {
    fn(dst, a, b, n, type, op);
  };
}

template <class T>
T* mut(const void* p) {
  return static_cast<T*>(const_cast<void*>(p));
}

// ---- init, runtime ----

mixcclResult_t init() { return mixcclSuccess; }

// Every datatype (reductions go through services->reduce); ops other than Avg (mixccl divides).
int supports(mixcclAdaptorColl_t coll, mixcclDataType_t type, mixcclRedOp_t op) {
  if (typeSize(type) == 0) return 0;
  switch (coll) {
    case mixcclCollAllGather: case mixcclCollBroadcast: return 1;
    case mixcclCollAllReduce: case mixcclCollReduceScatter: case mixcclCollReduce:
      return op >= mixcclSum && op <= mixcclMin;
    default: return 0;  // no entry: mixccl runs AlltoAll, Gather and Scatter itself
  }
}

mixcclResult_t getUniqueId(void* id) {
  // Gloo needs nothing beyond the address exchange in commInitRank.
  std::memset(id, 0, MIXCCL_ADAPTOR_UNIQUE_ID_BYTES);
  return mixcclSuccess;
}

mixcclResult_t commInitRank(void** comm, int nranks, const void*, int rank, int,
                            const mixcclAdaptorServices_t* services) {
  // A failure here is local (no interface, address exchange): a system error, not a peer's.
  return mixccl_plugin::guarded(kPrefix, "commInitRank", mixcclSystemError, [&] {
    if (comm == nullptr || services == nullptr || services->allGather == nullptr ||
        services->reduce == nullptr || nranks < 1 || rank < 0 || rank >= nranks)
      return setError(mixcclInvalidArgument, kPrefix,
                      "commInitRank: invalid arguments (nranks %d, rank %d)", nranks, rank);
    auto c = std::make_unique<GlooComm>();
    c->services = *services;
    c->timeout = std::chrono::seconds(mixccl_plugin::timeoutSeconds());
    c->ctx = std::make_shared<mixccl_gloo::MeshContext>(rank, nranks);
    c->ctx->setTimeout(c->timeout);
    c->ctx->connectFullMesh(mixccl_gloo::createTcpDevice(), c->services);
    *comm = static_cast<mixccl_plugin::CommBase*>(c.release());
    return mixcclSuccess;
  });
}

mixcclResult_t commDestroy(void* comm) {
  return guarded("commDestroy", [&] {
    mixccl_plugin::releaseComm(static_cast<mixccl_plugin::CommBase*>(comm));
    return mixcclSuccess;
  });
}

mixcclResult_t commAbort(void* comm) {
  return guarded("commAbort", [&] {
    if (comm == nullptr) return mixcclSuccess;
    GlooComm* c = asComm(comm);
    // Waits on our own buffers (send/recv, reduce-scatter) end at once; Gloo's collectives
    // hold buffers we cannot reach and end when their peers' connections close or at the
    // timeout. Calls still inside hold their own reference, so the memory outlives them.
    {
      std::lock_guard<std::mutex> lock(c->inflightMutex);
      c->aborted = true;
      for (auto* b : c->inflight) {
        b->abortWaitSend();
        b->abortWaitRecv();
      }
    }
    c->ctx->closeConnections();
    mixccl_plugin::releaseComm(c);
    return mixcclSuccess;
  });
}

// ---- collectives (Gloo's algorithms) ----

mixcclResult_t allReduce(const void* sendbuf, void* recvbuf, size_t count,
                         mixcclDataType_t type, mixcclRedOp_t op, void* comm, void*) {
  MIXCCL_PLUGIN_CHECK(checkComm(comm, "allReduce"));
  MIXCCL_PLUGIN_CHECK(checkType(type, "allReduce"));
  MIXCCL_PLUGIN_CHECK(checkOp(op, "allReduce"));
  if (count == 0) return mixcclSuccess;
  mixccl_plugin::CommRef ref(comm);
  GlooComm* c = ref.as<GlooComm>();
  return guarded("allReduce", [&] {
    gloo::AllreduceOptions opts(c->ctx);
    byElement(type, [&](auto e) {
      using T = decltype(e);
      if (sendbuf != recvbuf) opts.setInput(mut<T>(sendbuf), count);
      opts.setOutput(static_cast<T*>(recvbuf), count);
    });
    opts.setReduceFunction(reduceFn(c, type, op));
    opts.setTag(c->nextTag++);
    opts.setTimeout(c->timeout);
    gloo::allreduce(opts);
    return mixcclSuccess;
  });
}

mixcclResult_t allGather(const void* sendbuf, void* recvbuf, size_t sendcount,
                         mixcclDataType_t type, void* comm, void*) {
  MIXCCL_PLUGIN_CHECK(checkComm(comm, "allGather"));
  MIXCCL_PLUGIN_CHECK(checkType(type, "allGather"));
  if (sendcount == 0) return mixcclSuccess;
  mixccl_plugin::CommRef ref(comm);
  GlooComm* c = ref.as<GlooComm>();
  return guarded("allGather", [&] {
    gloo::AllgatherOptions opts(c->ctx);
    const size_t bytes = sendcount * typeSize(type);
    const bool inPlace = sendbuf == static_cast<char*>(recvbuf) + c->ctx->rank * bytes;
    byElement(type, [&](auto e) {
      using T = decltype(e);
      if (!inPlace) opts.setInput(mut<T>(sendbuf), sendcount);
      opts.setOutput(static_cast<T*>(recvbuf), sendcount * c->ctx->size);
    });
    opts.setTag(c->nextTag++);
    opts.setTimeout(c->timeout);
    gloo::allgather(opts);
    return mixcclSuccess;
  });
}

// Gloo has no reduce-scatter that takes a reduction function (ReduceScatterHalvingDoubling
// only knows its built-in types and sum/product/min/max), so this is a ring over Gloo's
// unbound-buffer primitives: n-1 steps; at step s rank r forwards its partial sum of block
// r-s-1 to r+1 and adds its own data to the partial of block r-s-2 arriving from r-1; after
// the last step the partial it holds is the complete block r.
mixcclResult_t reduceScatter(const void* sendbuf, void* recvbuf, size_t recvcount,
                             mixcclDataType_t type, mixcclRedOp_t op, void* comm, void*) {
  MIXCCL_PLUGIN_CHECK(checkComm(comm, "reduceScatter"));
  MIXCCL_PLUGIN_CHECK(checkType(type, "reduceScatter"));
  MIXCCL_PLUGIN_CHECK(checkOp(op, "reduceScatter"));
  if (recvcount == 0) return mixcclSuccess;
  mixccl_plugin::CommRef ref(comm);
  GlooComm* c = ref.as<GlooComm>();
  return guarded("reduceScatter", [&] {
    const int n = c->ctx->size, r = c->ctx->rank;
    const size_t bytes = recvcount * typeSize(type);
    const char* in = static_cast<const char*>(sendbuf);
    auto block = [&](int i) { return in + static_cast<size_t>((i % n + n) % n) * bytes; };
    if (n == 1) {
      std::memmove(recvbuf, in, bytes);
      return mixcclSuccess;
    }
    const int right = (r + 1) % n, left = (r - 1 + n) % n;
    // Two partial buffers: one being sent while the next arrives.
    std::vector<char> part[2] = {std::vector<char>(bytes), std::vector<char>(bytes)};
    const void* outgoing = block(r - 1);
    for (int s = 0; s < n - 1; ++s) {
      uint64_t slot = gloo::Slot::build(kReduceScatterSlotPrefix, c->nextTag++);
      auto sendBuf = c->ctx->createUnboundBuffer(const_cast<void*>(outgoing), bytes);
      auto recvBuf = c->ctx->createUnboundBuffer(part[s % 2].data(), bytes);
      Inflight r1(c, recvBuf.get()), s1(c, sendBuf.get());
      recvBuf->recv(left, slot);
      sendBuf->send(right, slot);
      if (!waitDone(c, recvBuf.get(), false, "reduceScatter") ||
          !waitDone(c, sendBuf.get(), true, "reduceScatter"))
        return mixcclRemoteError;
      char* partial = part[s % 2].data();
      void* dst = (s == n - 2) ? recvbuf : partial;
      c->services.reduce(dst, partial, block(r - s - 2), recvcount, type, op);
      outgoing = partial;
    }
    return mixcclSuccess;
  });
}

mixcclResult_t broadcast(const void* sendbuf, void* recvbuf, size_t count, mixcclDataType_t type,
                         int root, void* comm, void*) {
  MIXCCL_PLUGIN_CHECK(checkComm(comm, "broadcast"));
  MIXCCL_PLUGIN_CHECK(checkType(type, "broadcast"));
  if (count == 0) return mixcclSuccess;
  mixccl_plugin::CommRef ref(comm);
  GlooComm* c = ref.as<GlooComm>();
  return guarded("broadcast", [&] {
    gloo::BroadcastOptions opts(c->ctx);
    byElement(type, [&](auto e) {
      using T = decltype(e);
      if (c->ctx->rank == root && sendbuf != recvbuf) opts.setInput(mut<T>(sendbuf), count);
      opts.setOutput(static_cast<T*>(recvbuf), count);
    });
    opts.setRoot(root);
    opts.setTag(c->nextTag++);
    opts.setTimeout(c->timeout);
    gloo::broadcast(opts);
    return mixcclSuccess;
  });
}

mixcclResult_t reduce(const void* sendbuf, void* recvbuf, size_t count, mixcclDataType_t type,
                      mixcclRedOp_t op, int root, void* comm, void*) {
  MIXCCL_PLUGIN_CHECK(checkComm(comm, "reduce"));
  MIXCCL_PLUGIN_CHECK(checkType(type, "reduce"));
  MIXCCL_PLUGIN_CHECK(checkOp(op, "reduce"));
  if (count == 0) return mixcclSuccess;
  mixccl_plugin::CommRef ref(comm);
  GlooComm* c = ref.as<GlooComm>();
  return guarded("reduce", [&] {
    const size_t bytes = count * typeSize(type);
    // Gloo uses the output as scratch on every rank; recvbuf only matters on the root, so
    // the other ranks reduce in a buffer of their own and never write the caller's.
    std::vector<char> scratch;
    void* out = recvbuf;
    if (c->ctx->rank != root) {
      scratch.assign(static_cast<const char*>(sendbuf), static_cast<const char*>(sendbuf) + bytes);
      out = scratch.data();
    }
    gloo::ReduceOptions opts(c->ctx);
    byElement(type, [&](auto e) {
      using T = decltype(e);
      if (out != sendbuf && c->ctx->rank == root) opts.setInput(mut<T>(sendbuf), count);
      opts.setOutput(static_cast<T*>(out), count);
    });
    opts.setRoot(root);
    opts.setReduceFunction(reduceFn(c, type, op));
    opts.setTag(c->nextTag++);
    opts.setTimeout(c->timeout);
    gloo::reduce(opts);
    return mixcclSuccess;
  });
}

// ---- point to point ----

// Posts every op, then waits for all of them: a group's sends and receives progress together.
mixcclResult_t runP2p(const std::vector<P2pOp>& ops) {
  return guarded("send/recv", [&] {
    std::vector<std::unique_ptr<gloo::transport::UnboundBuffer>> bufs;
    std::vector<std::unique_ptr<Inflight>> guards;
    std::vector<const P2pOp*> posted;
    for (const auto& op : ops) {
      if (op.bytes == 0) continue;  // both sides skip it, so sequence numbers stay aligned
      GlooComm* c = op.comm;
      uint32_t seq = op.isSend ? c->sendSeq[op.peer]++ : c->recvSeq[op.peer]++;
      uint64_t slot = gloo::Slot::build(kP2pSlotPrefix, seq);
      bufs.push_back(c->ctx->createUnboundBuffer(op.buf, op.bytes));
      posted.push_back(&op);
      guards.push_back(std::make_unique<Inflight>(c, bufs.back().get()));
      if (op.isSend) bufs.back()->send(op.peer, slot);
      else bufs.back()->recv(op.peer, slot);
    }
    mixcclResult_t rc = mixcclSuccess;
    for (size_t i = 0; i < bufs.size(); ++i)
      if (!waitDone(posted[i]->comm, bufs[i].get(), posted[i]->isSend, "send/recv"))
        rc = mixcclRemoteError;  // keep waiting for the others: their buffers stay in use
    return rc;
  });
}

mixcclResult_t p2p(bool isSend, const void* buf, size_t count, mixcclDataType_t type, int peer,
                   void* comm) {
  const char* what = isSend ? "send" : "recv";
  MIXCCL_PLUGIN_CHECK(checkComm(comm, what));
  MIXCCL_PLUGIN_CHECK(checkType(type, what));
  mixccl_plugin::CommRef ref(comm);
  GlooComm* c = ref.as<GlooComm>();
  if (peer < 0 || peer >= c->ctx->size || peer == c->ctx->rank)
    return setError(mixcclInvalidArgument, kPrefix, "%s: peer %d is not another rank of %d",
                    what, peer, c->ctx->size);
  P2pOp op{isSend, const_cast<void*>(buf), count * typeSize(type), peer, c};
  if (tGroupDepth > 0) {
    tGroupOps.push_back(op);
    return mixcclSuccess;
  }
  return runP2p({op});
}

mixcclResult_t send(const void* sendbuf, size_t count, mixcclDataType_t type, int peer,
                    void* comm, void*) {
  return p2p(true, sendbuf, count, type, peer, comm);
}
mixcclResult_t recv(void* recvbuf, size_t count, mixcclDataType_t type, int peer, void* comm,
                    void*) {
  return p2p(false, recvbuf, count, type, peer, comm);
}

mixcclResult_t groupStart() {
  ++tGroupDepth;
  return mixcclSuccess;
}
mixcclResult_t groupEnd() {
  if (tGroupDepth == 0)
    return setError(mixcclInvalidUsage, kPrefix, "groupEnd without groupStart");
  if (--tGroupDepth > 0) return mixcclSuccess;
  std::vector<P2pOp> ops;
  ops.swap(tGroupOps);
  return runP2p(ops);
}

// Host memory: the device runtime is left out (mixccl's host runtime serves it).
mixcclAdaptor_v2_t makeTable() {
  mixcclAdaptor_v2_t t = mixccl_plugin::tableHeader("gloo", MIXCCL_ADAPTOR_HOST_MEMORY, init);
  MIXCCL_NATIVE_LIBRARY_ENTRIES(t);
  MIXCCL_NCCL_COLLECTIVE_ENTRIES(t);
  MIXCCL_POINT_TO_POINT_ENTRIES(t);
  return t;
}

}  // namespace

MIXCCL_EXPORT_ADAPTOR;
const mixcclAdaptor_v2_t mixcclAdaptor_v2 = makeTable();
