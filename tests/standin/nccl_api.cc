// The stand-in NCCL-API library's entry points, defined against the real nccl.h so the
// compiler checks each signature. A real multi-process implementation: the unique id names a
// shared-memory segment (nccl_segment.h) that the ranks' processes map, and every call is
// checked as NCCL checks it, then executed on the given stream's worker in stream order
// through the stand-in runtime (standin_bridge.h); device pointers are translated to the
// runtime's shadow mappings. Test-only: docs/adaptors.md, "The stand-in GPU".
#include <cuda_runtime_api.h>
#include <nccl.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "fault_plan.h"
#include "nccl_comm.h"
#include "nccl_reduce.h"
#include "standin_bridge.h"
#include "standin_export.h"

namespace standin {
namespace {

constexpr char kIdMagic[] = "mixccl-standin-nccl1:";

// What a handle points to: the communicator's state lives on while its enqueued work holds it.
struct CommHandle {
  std::shared_ptr<CommState> state;
};

std::mutex gCommsMutex;
std::set<CommHandle*>& liveComms() {
  static auto* s = new std::set<CommHandle*>;
  return *s;
}

thread_local std::string tLastError;
thread_local int tGroupDepth = 0;
thread_local std::vector<std::pair<std::shared_ptr<CommState>, std::pair<cudaStream_t, Op>>> tGroup;

FaultPlan& callFaults() {
  static auto* p = new FaultPlan("MIXCCL_STANDIN_NCCL_FAIL");
  return *p;
}

ncclResult_t fail(ncclResult_t r, const std::string& why) {
  tLastError = why;
  return r;
}

double timeoutSeconds() {
  for (const char* name : {"MIXCCL_STANDIN_NCCL_TIMEOUT_S", "MIXCCL_TIMEOUT_S"}) {
    const char* v = std::getenv(name);
    if (v && std::atof(v) > 0) return std::atof(v);
  }
  return 60;
}

// An injected failure of `name`, or ncclSuccess.
ncclResult_t injected(const char* name) {
  if (int code = callFaults().check(name))
    return fail(static_cast<ncclResult_t>(code),
                std::string(name) + ": failure injected by MIXCCL_STANDIN_NCCL_FAIL=" + callFaults().text());
  return ncclSuccess;
}

std::shared_ptr<CommState> stateOf(ncclComm_t comm) {
  auto* h = reinterpret_cast<CommHandle*>(comm);
  std::lock_guard<std::mutex> lock(gCommsMutex);
  return liveComms().count(h) ? h->state : nullptr;
}

std::string pointerText(const void* p) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%p", p);
  return buf;
}

// The host view of a buffer of `bytes` the call reads or writes, or an error naming it.
ncclResult_t view(const char* call, const char* which, const void* p, size_t bytes, char** out) {
  *out = static_cast<char*>(mixcclStandinHostView(p, bytes));
  if (bytes == 0) return ncclSuccess;
  if (*out == nullptr)
    return fail(ncclInvalidArgument, std::string(call) + ": " + which + " " + pointerText(p) +
                                         " is not " + std::to_string(bytes) +
                                         " bytes of the stand-in runtime's device memory");
  return ncclSuccess;
}

ncclResult_t enqueue(const std::shared_ptr<CommState>& c, cudaStream_t stream, std::vector<Op> ops) {
  auto* task = new Task{c, std::move(ops), 0};
  std::lock_guard<std::mutex> lock(c->m);
  task->ticket = c->nextTicket;
  cudaError_t e = mixcclStandinStreamEnqueue(
      stream, [](void* arg, int skipped) { runTask(static_cast<Task*>(arg), skipped != 0); }, task);
  if (e != cudaSuccess) {
    delete task;
    return fail(ncclUnhandledCudaError, std::string("enqueueing on stream ") + pointerText(stream) +
                                            ": CUDA error " + std::to_string(e));
  }
  ++c->nextTicket;
  return ncclSuccess;
}

// Checks a call as NCCL does, then runs it now or keeps it for ncclGroupEnd.
ncclResult_t submit(const char* call, ncclComm_t comm, cudaStream_t stream, Op op, size_t sendBytes,
                    size_t recvBytes, const void* sendbuff, const void* recvbuff) {
  if (ncclResult_t r = injected(call)) return r;
  std::shared_ptr<CommState> c = stateOf(comm);
  if (!c) return fail(ncclInvalidArgument, std::string(call) + ": comm " + pointerText(comm) + " is not a live communicator");
  // As NCCL's ncclCommEnsureReady does: through the exported ncclCommGetAsyncError, a call the
  // dynamic linker binds to the first definition in the global scope (mixccl's shim, when the
  // adaptor opened this library without RTLD_DEEPBIND under it).
  ncclResult_t ready = ncclSuccess;
  if (ncclResult_t r = ncclCommGetAsyncError(comm, &ready)) return r;
  if (typeBytes(op.type) == 0)
    return fail(ncclInvalidArgument, std::string(call) + ": invalid datatype " + std::to_string(op.type));
  const bool reduces = op.kind == OpKind::AllReduce || op.kind == OpKind::Reduce || op.kind == OpKind::ReduceScatter;
  if (reduces && (op.op < 0 || op.op >= ncclNumOps))
    return fail(ncclInvalidArgument, std::string(call) + ": invalid reduction op " + std::to_string(op.op));
  // NCCL 2.28.9 on an H100 refused a one-rank Avg on float8e4m3 (docs/gpu.md); so does this.
  if (reduces && op.op == ncclAvg && op.type == ncclFloat8e4m3 && c->nranks == 1)
    return fail(ncclInvalidArgument, std::string(call) + ": Avg on float8e4m3 with one rank (refused as NCCL 2.28.9 does)");
  if (op.root < 0 || op.root >= c->nranks)
    return fail(ncclInvalidArgument, std::string(call) + ": " +
                                         (op.kind == OpKind::Send || op.kind == OpKind::Recv ? "peer " : "root ") +
                                         std::to_string(op.root) + " is not a rank of " + std::to_string(c->nranks));
  {
    std::lock_guard<std::mutex> lock(c->m);
    if (c->asyncError != ncclSuccess)
      return fail(c->asyncError, std::string(call) + ": the communicator has failed: " + c->asyncMessage);
  }
  if (c->aborted.load()) return fail(ncclInvalidUsage, std::string(call) + ": the communicator was aborted");
  char* send = nullptr;
  char* recv = nullptr;
  if (ncclResult_t r = view(call, "sendbuff", sendbuff, sendBytes, &send)) return r;
  if (ncclResult_t r = view(call, "recvbuff", recvbuff, recvBytes, &recv)) return r;
  op.send = send;
  op.recv = recv;
  if (tGroupDepth > 0) {
    tGroup.push_back({c, {stream, op}});
    return ncclSuccess;
  }
  return enqueue(c, stream, {op});
}

std::string newSegmentName() {
  static std::atomic<unsigned> counter{0};
  std::random_device rd;
  char buf[96];
  std::snprintf(buf, sizeof buf, "/mixccl-standin-%d-%u-%08x%08x", static_cast<int>(getpid()),
                counter.fetch_add(1), rd(), rd());
  return buf;
}

}  // namespace
}  // namespace standin

using namespace standin;

extern "C" {

STANDIN_EXPORT ncclResult_t ncclGetVersion(int* version) {
  if (ncclResult_t r = injected("ncclGetVersion")) return r;
  if (version == nullptr) return fail(ncclInvalidArgument, "ncclGetVersion: version is NULL");
  *version = NCCL_VERSION_CODE;  // the API of the header it was built against
  return ncclSuccess;
}

STANDIN_EXPORT const char* ncclGetErrorString(ncclResult_t result) {
  switch (result) {
    case ncclSuccess: return "no error";
    case ncclUnhandledCudaError: return "unhandled CUDA error (stand-in NCCL)";
    case ncclSystemError: return "system error (stand-in NCCL)";
    case ncclInternalError: return "internal error (stand-in NCCL)";
    case ncclInvalidArgument: return "invalid argument (stand-in NCCL)";
    case ncclInvalidUsage: return "invalid usage (stand-in NCCL)";
    case ncclRemoteError: return "remote process failed or aborted (stand-in NCCL)";
    case ncclInProgress: return "operation in progress (stand-in NCCL)";
    default: return "unknown result code (stand-in NCCL)";
  }
}

STANDIN_EXPORT const char* ncclGetLastError(ncclComm_t comm) {
  if (!tLastError.empty()) return tLastError.c_str();
  if (auto c = stateOf(comm)) {
    std::lock_guard<std::mutex> lock(c->m);
    tLastError = c->asyncMessage;
  }
  return tLastError.c_str();
}

STANDIN_EXPORT ncclResult_t ncclGetUniqueId(ncclUniqueId* uniqueId) {
  if (ncclResult_t r = injected("ncclGetUniqueId")) return r;
  if (uniqueId == nullptr) return fail(ncclInvalidArgument, "ncclGetUniqueId: uniqueId is NULL");
  std::memset(uniqueId, 0, sizeof *uniqueId);
  std::snprintf(uniqueId->internal, sizeof uniqueId->internal, "%s%s", kIdMagic, newSegmentName().c_str());
  return ncclSuccess;
}

STANDIN_EXPORT ncclResult_t ncclCommInitRank(ncclComm_t* comm, int nranks, ncclUniqueId commId, int rank) {
  if (ncclResult_t r = injected("ncclCommInitRank")) return r;
  if (comm == nullptr) return fail(ncclInvalidArgument, "ncclCommInitRank: comm is NULL");
  *comm = nullptr;
  if (nranks < 1 || nranks > kMaxRanks)
    return fail(ncclInvalidArgument, "ncclCommInitRank: nranks " + std::to_string(nranks) +
                                         " (the stand-in runs 1 to " + std::to_string(kMaxRanks) + ")");
  if (rank < 0 || rank >= nranks)
    return fail(ncclInvalidArgument, "ncclCommInitRank: rank " + std::to_string(rank) + " of " + std::to_string(nranks));
  commId.internal[sizeof commId.internal - 1] = '\0';
  if (std::strncmp(commId.internal, kIdMagic, sizeof kIdMagic - 1) != 0)
    return fail(ncclInvalidArgument, "ncclCommInitRank: not a unique id of the stand-in NCCL (ncclGetUniqueId)");
  auto state = std::make_shared<CommState>();
  Segment* segment = nullptr;
  std::string why;
  ncclResult_t r = Segment::join(commId.internal + sizeof kIdMagic - 1, nranks, rank, timeoutSeconds(),
                                 &state->aborted, &segment, &why);
  if (r != ncclSuccess) return fail(r, "ncclCommInitRank: " + why);
  state->segment.reset(segment);
  state->rank = rank;
  state->nranks = nranks;
  auto* h = new CommHandle{state};
  std::lock_guard<std::mutex> lock(gCommsMutex);
  liveComms().insert(h);
  *comm = reinterpret_cast<ncclComm_t>(h);
  return ncclSuccess;
}

STANDIN_EXPORT ncclResult_t ncclCommFinalize(ncclComm_t comm) {
  if (ncclResult_t r = injected("ncclCommFinalize")) return r;
  auto c = stateOf(comm);
  if (!c) return fail(ncclInvalidArgument, "ncclCommFinalize: not a live communicator");
  std::unique_lock<std::mutex> lock(c->m);
  c->cv.wait(lock, [&] { return c->serving == c->nextTicket; });  // each task's waits are bounded
  return c->asyncError;
}

STANDIN_EXPORT ncclResult_t ncclCommDestroy(ncclComm_t comm) {
  if (ncclResult_t r = injected("ncclCommDestroy")) return r;
  auto* h = reinterpret_cast<CommHandle*>(comm);
  {
    std::lock_guard<std::mutex> lock(gCommsMutex);
    if (!liveComms().erase(h)) return fail(ncclInvalidArgument, "ncclCommDestroy: not a live communicator");
  }
  {
    // Destroy flushes the work already enqueued, as NCCL's implicit finalize does.
    std::unique_lock<std::mutex> lock(h->state->m);
    h->state->cv.wait(lock, [&] { return h->state->serving == h->state->nextTicket; });
  }
  delete h;
  return ncclSuccess;
}

STANDIN_EXPORT ncclResult_t ncclCommAbort(ncclComm_t comm) {
  if (ncclResult_t r = injected("ncclCommAbort")) return r;
  auto* h = reinterpret_cast<CommHandle*>(comm);
  {
    std::lock_guard<std::mutex> lock(gCommsMutex);
    if (!liveComms().erase(h)) return fail(ncclInvalidArgument, "ncclCommAbort: not a live communicator");
  }
  // Pending work ends at once (its waits see the flag); the peers' waits end too, reporting
  // this rank's abort. The state lives on until the last enqueued task has let go of it.
  h->state->aborted.store(true);
  h->state->segment->markFailed("rank " + std::to_string(h->state->rank) + " aborted the communicator");
  h->state->cv.notify_all();
  delete h;
  return ncclSuccess;
}

STANDIN_EXPORT ncclResult_t ncclCommGetAsyncError(ncclComm_t comm, ncclResult_t* asyncError) {
  auto c = stateOf(comm);
  if (!c || asyncError == nullptr) return fail(ncclInvalidArgument, "ncclCommGetAsyncError: bad argument");
  std::lock_guard<std::mutex> lock(c->m);
  *asyncError = c->asyncError;
  if (c->asyncError != ncclSuccess) tLastError = c->asyncMessage;  // ncclGetLastError says what
  return ncclSuccess;
}

STANDIN_EXPORT ncclResult_t ncclCommCount(const ncclComm_t comm, int* count) {
  auto c = stateOf(comm);
  if (!c || count == nullptr) return fail(ncclInvalidArgument, "ncclCommCount: bad argument");
  *count = c->nranks;
  return ncclSuccess;
}

STANDIN_EXPORT ncclResult_t ncclCommUserRank(const ncclComm_t comm, int* rank) {
  auto c = stateOf(comm);
  if (!c || rank == nullptr) return fail(ncclInvalidArgument, "ncclCommUserRank: bad argument");
  *rank = c->rank;
  return ncclSuccess;
}

STANDIN_EXPORT ncclResult_t ncclCommCuDevice(const ncclComm_t comm, int* device) {
  auto c = stateOf(comm);
  if (!c || device == nullptr) return fail(ncclInvalidArgument, "ncclCommCuDevice: bad argument");
  *device = c->device;
  return ncclSuccess;
}

// Memory through the stand-in runtime (NCCL's come from the CUDA driver's allocator).
STANDIN_EXPORT ncclResult_t ncclMemAlloc(void** ptr, size_t size) {
  if (ncclResult_t r = injected("ncclMemAlloc")) return r;
  if (ptr == nullptr) return fail(ncclInvalidArgument, "ncclMemAlloc: ptr is NULL");
  cudaError_t e = cudaMalloc(ptr, size);
  return e == cudaSuccess ? ncclSuccess
                          : fail(ncclUnhandledCudaError, "ncclMemAlloc: cudaMalloc: CUDA error " + std::to_string(e));
}

STANDIN_EXPORT ncclResult_t ncclMemFree(void* ptr) {
  if (ncclResult_t r = injected("ncclMemFree")) return r;
  cudaError_t e = cudaFree(ptr);
  return e == cudaSuccess ? ncclSuccess
                          : fail(ncclUnhandledCudaError, "ncclMemFree: cudaFree: CUDA error " + std::to_string(e));
}

// Registration checks the buffer (device memory of the stand-in runtime, of that size) and
// hands out a handle that only ncclCommDeregister of the same communicator takes back; the
// stand-in's collectives do not need it.
namespace {
struct Registration {
  CommState* comm;
  const void* buff;
  size_t size;
};
std::mutex gRegistrationsMutex;
std::set<Registration*>& registrations() {
  static auto* s = new std::set<Registration*>;
  return *s;
}
}  // namespace

STANDIN_EXPORT ncclResult_t ncclCommRegister(const ncclComm_t comm, void* buff, size_t size, void** handle) {
  if (ncclResult_t r = injected("ncclCommRegister")) return r;
  auto c = stateOf(comm);
  if (!c) return fail(ncclInvalidArgument, "ncclCommRegister: not a live communicator");
  if (handle == nullptr) return fail(ncclInvalidArgument, "ncclCommRegister: handle is NULL");
  char* view = nullptr;
  if (ncclResult_t r = standin::view("ncclCommRegister", "buff", buff, size, &view)) return r;
  auto* reg = new Registration{c.get(), buff, size};
  std::lock_guard<std::mutex> lock(gRegistrationsMutex);
  registrations().insert(reg);
  *handle = reg;
  return ncclSuccess;
}

STANDIN_EXPORT ncclResult_t ncclCommDeregister(const ncclComm_t comm, void* handle) {
  if (ncclResult_t r = injected("ncclCommDeregister")) return r;
  auto c = stateOf(comm);
  auto* reg = static_cast<Registration*>(handle);
  std::lock_guard<std::mutex> lock(gRegistrationsMutex);
  if (!c || !registrations().count(reg) || reg->comm != c.get())
    return fail(ncclInvalidArgument, "ncclCommDeregister: not a handle ncclCommRegister gave this communicator");
  registrations().erase(reg);
  delete reg;
  return ncclSuccess;
}

STANDIN_EXPORT ncclResult_t ncclAllReduce(const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype,
                                          ncclRedOp_t op, ncclComm_t comm, cudaStream_t stream) {
  const size_t bytes = count * typeBytes(datatype);
  return submit("ncclAllReduce", comm, stream, Op{OpKind::AllReduce, nullptr, nullptr, count, datatype, op, 0},
                bytes, bytes, sendbuff, recvbuff);
}

STANDIN_EXPORT ncclResult_t ncclAllGather(const void* sendbuff, void* recvbuff, size_t sendcount,
                                          ncclDataType_t datatype, ncclComm_t comm, cudaStream_t stream) {
  auto c = stateOf(comm);
  const size_t bytes = sendcount * typeBytes(datatype);
  return submit("ncclAllGather", comm, stream, Op{OpKind::AllGather, nullptr, nullptr, sendcount, datatype, ncclSum, 0},
                bytes, bytes * (c ? c->nranks : 0), sendbuff, recvbuff);
}

STANDIN_EXPORT ncclResult_t ncclReduceScatter(const void* sendbuff, void* recvbuff, size_t recvcount,
                                              ncclDataType_t datatype, ncclRedOp_t op, ncclComm_t comm,
                                              cudaStream_t stream) {
  auto c = stateOf(comm);
  const size_t bytes = recvcount * typeBytes(datatype);
  return submit("ncclReduceScatter", comm, stream, Op{OpKind::ReduceScatter, nullptr, nullptr, recvcount, datatype, op, 0},
                bytes * (c ? c->nranks : 0), bytes, sendbuff, recvbuff);
}

STANDIN_EXPORT ncclResult_t ncclBroadcast(const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype,
                                          int root, ncclComm_t comm, cudaStream_t stream) {
  auto c = stateOf(comm);
  const size_t bytes = count * typeBytes(datatype);
  const bool isRoot = c && c->rank == root;  // only the root's sendbuff is read
  return submit("ncclBroadcast", comm, stream, Op{OpKind::Broadcast, nullptr, nullptr, count, datatype, ncclSum, root},
                isRoot ? bytes : 0, bytes, sendbuff, recvbuff);
}

STANDIN_EXPORT ncclResult_t ncclBcast(void* buff, size_t count, ncclDataType_t datatype, int root, ncclComm_t comm,
                                      cudaStream_t stream) {
  return ncclBroadcast(buff, buff, count, datatype, root, comm, stream);
}

STANDIN_EXPORT ncclResult_t ncclReduce(const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype,
                                       ncclRedOp_t op, int root, ncclComm_t comm, cudaStream_t stream) {
  auto c = stateOf(comm);
  const size_t bytes = count * typeBytes(datatype);
  const bool isRoot = c && c->rank == root;  // only the root's recvbuff is written
  return submit("ncclReduce", comm, stream, Op{OpKind::Reduce, nullptr, nullptr, count, datatype, op, root},
                bytes, isRoot ? bytes : 0, sendbuff, recvbuff);
}

STANDIN_EXPORT ncclResult_t ncclSend(const void* sendbuff, size_t count, ncclDataType_t datatype, int peer,
                                     ncclComm_t comm, cudaStream_t stream) {
  return submit("ncclSend", comm, stream, Op{OpKind::Send, nullptr, nullptr, count, datatype, ncclSum, peer},
                count * typeBytes(datatype), 0, sendbuff, nullptr);
}

STANDIN_EXPORT ncclResult_t ncclRecv(void* recvbuff, size_t count, ncclDataType_t datatype, int peer,
                                     ncclComm_t comm, cudaStream_t stream) {
  return submit("ncclRecv", comm, stream, Op{OpKind::Recv, nullptr, nullptr, count, datatype, ncclSum, peer},
                0, count * typeBytes(datatype), nullptr, recvbuff);
}

STANDIN_EXPORT ncclResult_t ncclGroupStart() {
  if (ncclResult_t r = injected("ncclGroupStart")) return r;
  ++tGroupDepth;
  return ncclSuccess;
}

STANDIN_EXPORT ncclResult_t ncclGroupEnd() {
  if (ncclResult_t r = injected("ncclGroupEnd")) return r;
  if (tGroupDepth == 0) return fail(ncclInvalidUsage, "ncclGroupEnd: no ncclGroupStart");
  if (--tGroupDepth > 0) return ncclSuccess;
  auto calls = std::move(tGroup);
  tGroup.clear();
  // One task per communicator, run on the stream of its calls (the stand-in takes one stream
  // per communicator in a group; NCCL joins several).
  std::vector<std::shared_ptr<CommState>> order;
  std::map<CommState*, std::pair<cudaStream_t, std::vector<Op>>> tasks;
  for (auto& call : calls) {
    auto it = tasks.find(call.first.get());
    if (it == tasks.end()) {
      order.push_back(call.first);
      tasks[call.first.get()] = {call.second.first, {call.second.second}};
    } else if (it->second.first != call.second.first) {
      return fail(ncclInvalidUsage, "ncclGroupEnd: calls of one communicator on two streams in one group "
                                    "(the stand-in NCCL runs a communicator's group on one stream)");
    } else {
      it->second.second.push_back(call.second.second);
    }
  }
  for (auto& c : order) {
    auto& t = tasks[c.get()];
    if (ncclResult_t r = enqueue(c, t.first, std::move(t.second))) return r;
  }
  return ncclSuccess;
}

}  // extern "C"
