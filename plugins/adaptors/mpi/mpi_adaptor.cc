// The mpi adaptor: host memory and the MPI library's collectives.
//
// MPI_Init: init() initialises MPI (MPI_THREAD_MULTIPLE requested, MPI_THREAD_SERIALIZED at
// least) unless the program already did, and then finalises it at exit. Open MPI's MPI_Init
// is collective over the whole mpirun job, so in a job that mixes adaptors every process must
// initialise MPI, also those whose ranks use another adaptor (docs/adaptors.md).
//
// The adaptor communicator holds exactly the ranks of this adaptor: each rank publishes its
// MPI_COMM_WORLD rank through services->allGather, and MPI_Comm_create_group (collective over
// the members only, unlike MPI_Comm_split) builds the communicator from the world ranks listed
// in adaptor-rank order, so MPI rank == adaptor rank.
//
// Datatypes MPI has (integers, float, double) use MPI's own types and ops; float16, bfloat16
// and the float8 types travel as contiguous bytes and reduce through MPI user ops that call
// mixccl's services->reduce. MPI user ops have no context argument, so that reduce function is
// kept in a global (it is the same function for every communicator of the process).
// The C API only (no MPI C++ bindings, which would need libmpi_cxx).
#define OMPI_SKIP_MPICXX 1
#define MPICH_SKIP_MPICXX 1
#include <mpi.h>

#include <atomic>
#include <algorithm>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "plugin_support.h"
#include "../common/table_entries.h"

using mixccl_plugin::setError;
using mixccl_plugin::typeName;
using mixccl_plugin::typeSize;

namespace {

constexpr const char* kPrefix = "mpi adaptor";
// MPI_Comm_create_group's tag: distinguishes concurrent creations by the same processes.
// Communicators are formed one at a time per process, so one value serves.
constexpr int kCreateGroupTag = 0x6d78;
constexpr int kP2pTag = 0;

struct MpiComm : mixccl_plugin::CommBase {
  MPI_Comm comm = MPI_COMM_NULL;
  int rank = 0, size = 0;
  ~MpiComm() override {
    int finalized = 0;
    MPI_Finalized(&finalized);
    if (!finalized && comm != MPI_COMM_NULL) MPI_Comm_free(&comm);
  }
};

std::atomic<void (*)(void*, const void*, const void*, size_t, mixcclDataType_t, mixcclRedOp_t)>
    gReduce{nullptr};
MPI_Datatype gBytes2 = MPI_DATATYPE_NULL, gBytes1 = MPI_DATATYPE_NULL;
MPI_Op gUserOps[mixcclNumTypes][4];  // [datatype][sum, prod, max, min], low precision only
std::atomic<bool> gInitOk{false};

thread_local int tGroupDepth = 0;
thread_local std::vector<MPI_Request> tRequests;

template <int T, int O>
void userOp(void* in, void* inout, int* len, MPI_Datatype*) {
  // MPI: inout = in op inout. Every op here is commutative.
  gReduce.load()(inout, in, inout, static_cast<size_t>(*len), static_cast<mixcclDataType_t>(T),
                 static_cast<mixcclRedOp_t>(O));
}

template <int T>
void createOps() {
  MPI_Op_create(&userOp<T, mixcclSum>, 1, &gUserOps[T][mixcclSum]);
  MPI_Op_create(&userOp<T, mixcclProd>, 1, &gUserOps[T][mixcclProd]);
  MPI_Op_create(&userOp<T, mixcclMax>, 1, &gUserOps[T][mixcclMax]);
  MPI_Op_create(&userOp<T, mixcclMin>, 1, &gUserOps[T][mixcclMin]);
}

bool lowPrecision(mixcclDataType_t t) {
  return t == mixcclFloat16 || t == mixcclBfloat16 || t == mixcclFloat8e4m3 ||
         t == mixcclFloat8e5m2;
}

MPI_Datatype mpiType(mixcclDataType_t t) {
  switch (t) {
    case mixcclInt8: return MPI_INT8_T;
    case mixcclUint8: return MPI_UINT8_T;
    case mixcclInt32: return MPI_INT32_T;
    case mixcclUint32: return MPI_UINT32_T;
    case mixcclInt64: return MPI_INT64_T;
    case mixcclUint64: return MPI_UINT64_T;
    case mixcclFloat32: return MPI_FLOAT;
    case mixcclFloat64: return MPI_DOUBLE;
    case mixcclFloat16: case mixcclBfloat16: return gBytes2;
    default: return gBytes1;
  }
}

MPI_Op mpiOp(mixcclDataType_t t, mixcclRedOp_t op) {
  if (lowPrecision(t)) return gUserOps[t][op];
  static const MPI_Op native[] = {MPI_SUM, MPI_PROD, MPI_MAX, MPI_MIN};
  return native[op];
}

mixcclResult_t mpi(int err, const char* what) {
  if (err == MPI_SUCCESS) return mixcclSuccess;
  char text[MPI_MAX_ERROR_STRING] = {0};
  int len = 0;
  MPI_Error_string(err, text, &len);
  return setError(mixcclSystemError, kPrefix, "%s: %s", what, text);
}

void finalizeAtExit() {
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (!finalized) MPI_Finalize();
}

mixcclResult_t init() {
  static std::once_flag once;
  static mixcclResult_t result = mixcclSuccess;
  static std::string error;
  std::call_once(once, [] {
    int initialized = 0, provided = 0;
    MPI_Initialized(&initialized);
    if (!initialized) {
      result = mpi(MPI_Init_thread(nullptr, nullptr, MPI_THREAD_MULTIPLE, &provided),
                   "MPI_Init_thread");
      if (result == mixcclSuccess) std::atexit(finalizeAtExit);
    } else {
      MPI_Query_thread(&provided);
    }
    if (result == mixcclSuccess && provided < MPI_THREAD_SERIALIZED)
      result = setError(mixcclSystemError, kPrefix,
                        "MPI was initialised with thread level %d; the adaptor needs "
                        "MPI_THREAD_SERIALIZED or higher (use MPI_Init_thread)",
                        provided);
    if (result == mixcclSuccess) {
      MPI_Type_contiguous(2, MPI_BYTE, &gBytes2);
      MPI_Type_commit(&gBytes2);
      MPI_Type_contiguous(1, MPI_BYTE, &gBytes1);
      MPI_Type_commit(&gBytes1);
      createOps<mixcclFloat16>();
      createOps<mixcclBfloat16>();
      createOps<mixcclFloat8e4m3>();
      createOps<mixcclFloat8e5m2>();
    }
    error = mixccl_plugin::lastErrorString();
    gInitOk = result == mixcclSuccess;
  });
  if (result != mixcclSuccess) mixccl_plugin::lastErrorString() = error;
  return result;
}

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
  std::memset(id, 0, MIXCCL_ADAPTOR_UNIQUE_ID_BYTES);  // MPI needs no id of its own
  return mixcclSuccess;
}

MpiComm* asComm(void* comm) {
  return static_cast<MpiComm*>(static_cast<mixccl_plugin::CommBase*>(comm));
}

mixcclResult_t check(void* comm, mixcclDataType_t type, const mixcclRedOp_t* op,
                     const char* what) {
  if (!gInitOk) return setError(mixcclInvalidUsage, kPrefix, "%s before a successful init()", what);
  if (comm == nullptr) return setError(mixcclInvalidArgument, kPrefix, "%s: comm is NULL", what);
  if (asComm(comm)->aborted.load())
    return setError(mixcclInvalidUsage, kPrefix, "%s: the communicator was aborted", what);
  if (typeSize(type) == 0)
    return setError(mixcclInvalidArgument, kPrefix, "%s: datatype %d is invalid", what, type);
  if (op && (*op < mixcclSum || *op > mixcclMin))
    return setError(mixcclInvalidArgument, kPrefix,
                    "%s: op %d is not supported (sum, prod, max, min; mixccl handles avg)", what,
                    *op);
  return mixcclSuccess;
}

mixcclResult_t commInitRank(void** comm, int nranks, const void*, int rank, int,
                            const mixcclAdaptorServices_t* services) {
  if (!gInitOk) return setError(mixcclInvalidUsage, kPrefix, "commInitRank before init()");
  if (comm == nullptr || services == nullptr || nranks < 1 || rank < 0 || rank >= nranks)
    return setError(mixcclInvalidArgument, kPrefix,
                    "commInitRank: invalid arguments (nranks %d, rank %d)", nranks, rank);
  return mixccl_plugin::guarded(kPrefix, "commInitRank", mixcclInternalError, [&] {
    gReduce = services->reduce;
    int worldRank = 0;
    MIXCCL_PLUGIN_CHECK(mpi(MPI_Comm_rank(MPI_COMM_WORLD, &worldRank), "MPI_Comm_rank"));
    std::vector<int> worldRanks(nranks);
    mixcclResult_t rc = services->allGather(services->ctx, &worldRank, worldRanks.data(),
                                            sizeof(int));
    if (rc != mixcclSuccess)
      return setError(rc, kPrefix, "commInitRank: world-rank exchange (services allGather) "
                                   "failed with code %d", rc);
    MPI_Group world, members;
    MIXCCL_PLUGIN_CHECK(mpi(MPI_Comm_group(MPI_COMM_WORLD, &world), "MPI_Comm_group"));
    int err = MPI_Group_incl(world, nranks, worldRanks.data(), &members);
    MPI_Group_free(&world);
    MIXCCL_PLUGIN_CHECK(mpi(err, "MPI_Group_incl"));
    auto c = std::make_unique<MpiComm>();
    err = MPI_Comm_create_group(MPI_COMM_WORLD, members, kCreateGroupTag, &c->comm);
    MPI_Group_free(&members);
    MIXCCL_PLUGIN_CHECK(mpi(err, "MPI_Comm_create_group"));
    MPI_Comm_set_errhandler(c->comm, MPI_ERRORS_RETURN);
    MPI_Comm_rank(c->comm, &c->rank);
    MPI_Comm_size(c->comm, &c->size);
    if (c->rank != rank || c->size != nranks)
      return setError(mixcclInternalError, kPrefix,
                      "commInitRank: MPI communicator has rank %d of %d, expected %d of %d",
                      c->rank, c->size, rank, nranks);
    *comm = static_cast<mixccl_plugin::CommBase*>(c.release());
    return mixcclSuccess;
  });
}

mixcclResult_t commDestroy(void* comm) {
  mixccl_plugin::releaseComm(static_cast<mixccl_plugin::CommBase*>(comm));
  return mixcclSuccess;
}

// MPI has no per-communicator abort (MPI_Abort ends the whole job): later calls fail, and the
// communicator is freed once calls in progress have returned; those are not interrupted.
mixcclResult_t commAbort(void* comm) {
  if (comm == nullptr) return mixcclSuccess;
  asComm(comm)->aborted = true;
  mixccl_plugin::releaseComm(static_cast<mixccl_plugin::CommBase*>(comm));
  return mixcclSuccess;
}

// MPI counts are int: the elementwise collectives run in chunks of at most INT_MAX elements.
constexpr size_t kMaxChunk = INT_MAX;

mixcclResult_t allReduce(const void* sendbuf, void* recvbuf, size_t count,
                         mixcclDataType_t type, mixcclRedOp_t op, void* comm, void*) {
  MIXCCL_PLUGIN_CHECK(check(comm, type, &op, "allReduce"));
  mixccl_plugin::CommRef ref(comm);
  MpiComm* c = ref.as<MpiComm>();
  const size_t es = typeSize(type);
  for (size_t off = 0; off < count; off += kMaxChunk) {
    int n = static_cast<int>(std::min(kMaxChunk, count - off));
    const void* in = sendbuf == recvbuf ? MPI_IN_PLACE : static_cast<const char*>(sendbuf) + off * es;
    MIXCCL_PLUGIN_CHECK(mpi(MPI_Allreduce(in, static_cast<char*>(recvbuf) + off * es, n,
                                          mpiType(type), mpiOp(type, op), c->comm),
                            "MPI_Allreduce"));
  }
  return mixcclSuccess;
}

mixcclResult_t tooLarge(const char* what, size_t count) {
  return setError(mixcclInvalidArgument, kPrefix,
                  "%s: count %zu exceeds INT_MAX, the largest count of an MPI call", what, count);
}

// True when [a, a+an) and [b, b+bn) share bytes.
bool overlaps(const void* a, size_t an, const void* b, size_t bn) {
  auto x = reinterpret_cast<uintptr_t>(a), y = reinterpret_cast<uintptr_t>(b);
  return x < y + bn && y < x + an;
}

mixcclResult_t allGather(const void* sendbuf, void* recvbuf, size_t sendcount,
                         mixcclDataType_t type, void* comm, void*) {
  MIXCCL_PLUGIN_CHECK(check(comm, type, nullptr, "allGather"));
  if (sendcount > kMaxChunk) return tooLarge("allGather", sendcount);
  mixccl_plugin::CommRef ref(comm);
  MpiComm* c = ref.as<MpiComm>();
  const size_t bytes = sendcount * typeSize(type);
  const void* in = sendbuf;
  std::vector<char> copy;
  if (sendbuf == static_cast<char*>(recvbuf) + c->rank * bytes) {
    in = MPI_IN_PLACE;
  } else if (overlaps(sendbuf, bytes, recvbuf, bytes * c->size)) {  // MPI forbids aliasing
    copy.assign(static_cast<const char*>(sendbuf), static_cast<const char*>(sendbuf) + bytes);
    in = copy.data();
  }
  int n = static_cast<int>(sendcount);
  return mpi(MPI_Allgather(in, n, mpiType(type), recvbuf, n, mpiType(type), c->comm),
             "MPI_Allgather");
}

mixcclResult_t reduceScatter(const void* sendbuf, void* recvbuf, size_t recvcount,
                             mixcclDataType_t type, mixcclRedOp_t op, void* comm, void*) {
  MIXCCL_PLUGIN_CHECK(check(comm, type, &op, "reduceScatter"));
  if (recvcount > kMaxChunk) return tooLarge("reduceScatter", recvcount);
  mixccl_plugin::CommRef ref(comm);
  MpiComm* c = ref.as<MpiComm>();
  const size_t bytes = recvcount * typeSize(type);
  const void* in = sendbuf;
  std::vector<char> copy;
  // NCCL's in-place form (recvbuf inside sendbuf) is aliasing to MPI: reduce from a copy.
  if (overlaps(sendbuf, bytes * c->size, recvbuf, bytes)) {
    copy.assign(static_cast<const char*>(sendbuf),
                static_cast<const char*>(sendbuf) + bytes * c->size);
    in = copy.data();
  }
  return mpi(MPI_Reduce_scatter_block(in, recvbuf, static_cast<int>(recvcount), mpiType(type),
                                      mpiOp(type, op), c->comm),
             "MPI_Reduce_scatter_block");
}

mixcclResult_t broadcast(const void* sendbuf, void* recvbuf, size_t count, mixcclDataType_t type,
                         int root, void* comm, void*) {
  MIXCCL_PLUGIN_CHECK(check(comm, type, nullptr, "broadcast"));
  mixccl_plugin::CommRef ref(comm);
  MpiComm* c = ref.as<MpiComm>();
  const size_t es = typeSize(type);
  if (c->rank == root && sendbuf != recvbuf && count > 0)
    std::memmove(recvbuf, sendbuf, count * es);  // MPI_Bcast has one buffer
  for (size_t off = 0; off < count; off += kMaxChunk) {
    int n = static_cast<int>(std::min(kMaxChunk, count - off));
    MIXCCL_PLUGIN_CHECK(mpi(MPI_Bcast(static_cast<char*>(recvbuf) + off * es, n, mpiType(type),
                                      root, c->comm),
                            "MPI_Bcast"));
  }
  return mixcclSuccess;
}

mixcclResult_t reduce(const void* sendbuf, void* recvbuf, size_t count, mixcclDataType_t type,
                      mixcclRedOp_t op, int root, void* comm, void*) {
  MIXCCL_PLUGIN_CHECK(check(comm, type, &op, "reduce"));
  mixccl_plugin::CommRef ref(comm);
  MpiComm* c = ref.as<MpiComm>();
  const size_t es = typeSize(type);
  const bool isRoot = c->rank == root;
  for (size_t off = 0; off < count; off += kMaxChunk) {
    int n = static_cast<int>(std::min(kMaxChunk, count - off));
    const void* in = (isRoot && sendbuf == recvbuf)
                         ? MPI_IN_PLACE
                         : static_cast<const char*>(sendbuf) + off * es;
    void* out = isRoot ? static_cast<char*>(recvbuf) + off * es : nullptr;  // ignored elsewhere
    MIXCCL_PLUGIN_CHECK(mpi(MPI_Reduce(in, out, n, mpiType(type), mpiOp(type, op), root, c->comm),
                            "MPI_Reduce"));
  }
  return mixcclSuccess;
}

// Waits for the requests collected by send/recv (at once outside a group, at groupEnd inside).
mixcclResult_t waitAll(std::vector<MPI_Request>* reqs) {
  if (reqs->empty()) return mixcclSuccess;
  int err = MPI_Waitall(static_cast<int>(reqs->size()), reqs->data(), MPI_STATUSES_IGNORE);
  reqs->clear();
  return mpi(err, "MPI_Waitall");
}

mixcclResult_t p2p(bool isSend, const void* buf, size_t count, mixcclDataType_t type, int peer,
                   void* comm) {
  const char* what = isSend ? "send" : "recv";
  MIXCCL_PLUGIN_CHECK(check(comm, type, nullptr, what));
  mixccl_plugin::CommRef ref(comm);
  MpiComm* c = ref.as<MpiComm>();
  if (peer < 0 || peer >= c->size || peer == c->rank)
    return setError(mixcclInvalidArgument, kPrefix, "%s: peer %d is not another rank of %d", what,
                    peer, c->size);
  const size_t es = typeSize(type);
  // Chunks of one message are posted in order on both sides, so they match in order.
  for (size_t off = 0; off < count; off += kMaxChunk) {
    int n = static_cast<int>(std::min(kMaxChunk, count - off));
    char* p = static_cast<char*>(const_cast<void*>(buf)) + off * es;
    MPI_Request req;
    int err = isSend ? MPI_Isend(p, n, mpiType(type), peer, kP2pTag, c->comm, &req)
                     : MPI_Irecv(p, n, mpiType(type), peer, kP2pTag, c->comm, &req);
    MIXCCL_PLUGIN_CHECK(mpi(err, isSend ? "MPI_Isend" : "MPI_Irecv"));
    tRequests.push_back(req);
  }
  return tGroupDepth > 0 ? mixcclSuccess : waitAll(&tRequests);
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
  if (tGroupDepth == 0) return setError(mixcclInvalidUsage, kPrefix, "groupEnd without groupStart");
  if (--tGroupDepth > 0) return mixcclSuccess;
  return waitAll(&tRequests);
}

// Host memory: the device runtime is left out (mixccl's host runtime serves it).
mixcclAdaptor_v2_t makeTable() {
  mixcclAdaptor_v2_t t = mixccl_plugin::tableHeader("mpi", MIXCCL_ADAPTOR_HOST_MEMORY, init);
  MIXCCL_NATIVE_LIBRARY_ENTRIES(t);
  MIXCCL_NCCL_COLLECTIVE_ENTRIES(t);
  MIXCCL_POINT_TO_POINT_ENTRIES(t);
  return t;
}

}  // namespace

MIXCCL_EXPORT_ADAPTOR;
const mixcclAdaptor_v2_t mixcclAdaptor_v2 = makeTable();
