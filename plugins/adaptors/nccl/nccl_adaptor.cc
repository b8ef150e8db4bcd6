// The nccl adaptor: device memory and an NCCL-API library's collectives. The library (NVIDIA's
// libnccl.so.2 by default, never mixccl's own NCCL shim; MIXCCL_NCCL_LIBRARY names another, e.g.
// RCCL) and the runtime (libcudart by default; MIXCCL_CUDA_RUNTIME_LIBRARY names another, e.g.
// HIP's) are opened with dlopen at init() (nccl_library.h, nccl_api.cc), so one build loads
// anywhere and init() fails with a message naming the file where a library or symbol is
// missing. The functions' types come from the real headers where the build found them
// (nccl_api.h); mixccl's datatype, op, result and copy-kind enums have NCCL's and CUDA's values.
#include <atomic>
#include <cstring>
#include <mutex>
#include <string>
#include <unordered_set>

#include "nccl_api.h"
#include "plugin_support.h"
#include "../common/table_entries.h"

using mixccl_plugin::setError;

namespace {

using namespace mixccl_nccl::decl;  // cudaError_t, cudaStream_t, ncclComm_t, ... as typed

constexpr const char* kPrefix = "nccl adaptor";

// The adaptor hands mixccl's enum values straight to the library and the runtime.
template <class A, class B>
constexpr bool same(A a, B b) {
  return static_cast<long long>(a) == static_cast<long long>(b);
}
static_assert(same(mixcclCopyHostToHost, cudaMemcpyHostToHost) &&
                  same(mixcclCopyHostToDevice, cudaMemcpyHostToDevice) &&
                  same(mixcclCopyDeviceToHost, cudaMemcpyDeviceToHost) &&
                  same(mixcclCopyDeviceToDevice, cudaMemcpyDeviceToDevice),
              "mixcclAdaptorCopyKind_t must have cudaMemcpyKind's values");
static_assert(sizeof(ncclUniqueId) <= MIXCCL_ADAPTOR_UNIQUE_ID_BYTES, "unique id too large");
#ifdef MIXCCL_NCCL_REAL_HEADERS
static_assert(same(mixcclInt8, ncclInt8) && same(mixcclUint8, ncclUint8) && same(mixcclInt32, ncclInt32) &&
                  same(mixcclUint32, ncclUint32) && same(mixcclInt64, ncclInt64) &&
                  same(mixcclUint64, ncclUint64) && same(mixcclFloat16, ncclFloat16) &&
                  same(mixcclFloat32, ncclFloat32) && same(mixcclFloat64, ncclFloat64) &&
                  same(mixcclBfloat16, ncclBfloat16),
              "mixcclDataType_t must have ncclDataType_t's values");
#if NCCL_VERSION_CODE >= NCCL_VERSION(2, 24, 0)
static_assert(same(mixcclFloat8e4m3, ncclFloat8e4m3) && same(mixcclFloat8e5m2, ncclFloat8e5m2),
              "mixccl's float8 types must have NCCL's values");
#endif
static_assert(same(mixcclSum, ncclSum) && same(mixcclProd, ncclProd) && same(mixcclMax, ncclMax) &&
                  same(mixcclMin, ncclMin) && same(mixcclAvg, ncclAvg),
              "mixcclRedOp_t must have ncclRedOp_t's values");
static_assert(same(mixcclUnhandledDeviceError, ncclUnhandledCudaError) &&
                  same(mixcclSystemError, ncclSystemError) && same(mixcclInternalError, ncclInternalError) &&
                  same(mixcclInvalidArgument, ncclInvalidArgument) &&
                  same(mixcclInvalidUsage, ncclInvalidUsage) && same(mixcclRemoteError, ncclRemoteError) &&
                  same(mixcclInProgress, ncclInProgress),
              "mixcclResult_t must have ncclResult_t's values");
#endif

mixccl_nccl::Api api;
int ncclVersion = 0;
std::string runtimeName = "CUDA";  // "HIP" on a HIP runtime: error messages say which

// The adaptor's void* handles as the library's types.
cudaStream_t asStream(void* s) { return static_cast<cudaStream_t>(s); }
cudaEvent_t asEvent(void* e) { return static_cast<cudaEvent_t>(e); }
ncclComm_t asComm(void* c) { return static_cast<ncclComm_t>(c); }
ncclDataType_t asType(mixcclDataType_t t) { return static_cast<ncclDataType_t>(t); }
ncclRedOp_t asOp(mixcclRedOp_t op) { return static_cast<ncclRedOp_t>(op); }

// Communicators of one rank. On them Avg equals Sum (x / 1 == x, also for integers), and Sum is
// what the adaptor asks for: NCCL runs a one-rank Avg through a separate kernel, which on an
// H100 with NCCL 2.28.9 left the last 9 of 40009 float and double elements unwritten out of
// place and refused float8e4m3 with ncclInvalidArgument (docs/gpu.md).
std::mutex oneRankMutex;
std::unordered_set<void*> oneRankComms;
ncclRedOp_t opFor(void* c, mixcclRedOp_t op) {
  if (op != mixcclAvg) return asOp(op);
  std::lock_guard<std::mutex> lock(oneRankMutex);
  return asOp(oneRankComms.count(c) ? mixcclSum : mixcclAvg);
}
void forgetComm(void* c) {
  std::lock_guard<std::mutex> lock(oneRankMutex);
  oneRankComms.erase(c);
}

// ---- error mapping ----
// `what` is the function's name after the runtime prefix ("Malloc"): messages name the
// function really called (cudaMalloc, or hipMalloc on HIP).
mixcclResult_t cuda(cudaError_t e, const char* what) {
  if (e == cudaSuccess) return mixcclSuccess;
  return setError(mixcclUnhandledDeviceError, kPrefix, "%s%s: %s error %d: %s",
                  api.runtimePrefix.c_str(), what, runtimeName.c_str(), static_cast<int>(e),
                  api.cudaGetErrorString(e));
}
mixcclResult_t nccl(ncclResult_t r, const char* what) {
  if (r == ncclSuccess) return mixcclSuccess;
  // NCCL's result codes have mixccl's values (ncclInProgress included).
  const int code = static_cast<int>(r);
  mixcclResult_t result = (code > 0 && code < mixcclNumResults) ? static_cast<mixcclResult_t>(code)
                                                                : mixcclInternalError;
  // The library's own detail where it has ncclGetLastError (its comm argument is unused).
  const char* detail = api.ncclGetLastError ? api.ncclGetLastError(nullptr) : nullptr;
  if (detail != nullptr && *detail != '\0')
    return setError(result, kPrefix, "%s: %s (NCCL %d, code %d; last error: %s)", what,
                    api.ncclGetErrorString(r), ncclVersion, code, detail);
  return setError(result, kPrefix, "%s: %s (NCCL %d, code %d)", what, api.ncclGetErrorString(r),
                  ncclVersion, code);
}

// ---- entries ----
std::atomic<bool> gInitOk{false};

mixcclResult_t init() {
  static std::once_flag once;
  static mixcclResult_t result = mixcclSuccess;
  static std::string error;
  std::call_once(once, [] {
    const std::string why = mixccl_nccl::loadApi(&api);
    if (!why.empty()) {
      result = setError(mixcclSystemError, kPrefix, "%s", why.c_str());
    } else {
      if (api.runtimePrefix == "hip") runtimeName = "HIP";
      int count = 0;
      cudaError_t e = api.cudaGetDeviceCount(&count);
      if (e != cudaSuccess || count <= 0) {
        result = setError(mixcclSystemError, kPrefix, "no usable %s device (%sGetDeviceCount: %s)",
                          runtimeName.c_str(), api.runtimePrefix.c_str(),
                          e != cudaSuccess ? api.cudaGetErrorString(e) : "0 devices");
      } else {
        api.ncclGetVersion(&ncclVersion);
      }
    }
    error = mixccl_plugin::lastErrorString();
    gInitOk = result == mixcclSuccess;
  });
  // A later caller (other thread) gets the same message.
  if (result != mixcclSuccess) mixccl_plugin::lastErrorString() = error;
  return result;
}

#define NEED_INIT(what)                                                                     \
  do {                                                                                      \
    if (!gInitOk)                                                                           \
      return setError(mixcclInvalidUsage, kPrefix, "%s called before a successful init()", \
                      what);                                                                \
  } while (0)

mixcclResult_t getDeviceCount(int* count) {
  NEED_INIT("getDeviceCount");
  return cuda(api.cudaGetDeviceCount(count), "GetDeviceCount");
}
mixcclResult_t setDevice(int d) { NEED_INIT("setDevice"); return cuda(api.cudaSetDevice(d), "SetDevice"); }
mixcclResult_t getDevice(int* d) { NEED_INIT("getDevice"); return cuda(api.cudaGetDevice(d), "GetDevice"); }
mixcclResult_t getPciBusId(int d, char* busId, size_t len) {
  NEED_INIT("getPciBusId");
  return cuda(api.cudaDeviceGetPCIBusId(busId, static_cast<int>(len), d), "DeviceGetPCIBusId");
}
mixcclResult_t memAlloc(void** p, size_t n) { NEED_INIT("memAlloc"); return cuda(api.cudaMalloc(p, n), "Malloc"); }
mixcclResult_t memFree(void* p) { NEED_INIT("memFree"); return cuda(api.cudaFree(p), "Free"); }
mixcclResult_t hostAlloc(void** p, size_t n) { NEED_INIT("hostAlloc"); return cuda(api.cudaMallocHost(p, n), "MallocHost"); }
mixcclResult_t hostFree(void* p) { NEED_INIT("hostFree"); return cuda(api.cudaFreeHost(p), "FreeHost"); }
mixcclResult_t memcpyAsync(void* dst, const void* src, size_t n, mixcclAdaptorCopyKind_t kind,
                           void* stream) {
  NEED_INIT("memcpyAsync");
  return cuda(api.cudaMemcpyAsync(dst, src, n, static_cast<cudaMemcpyKind>(kind), asStream(stream)), "MemcpyAsync");
}
mixcclResult_t streamCreate(void** s) {
  NEED_INIT("streamCreate");
  return cuda(api.cudaStreamCreateWithFlags(reinterpret_cast<cudaStream_t*>(s), kStreamNonBlocking), "StreamCreateWithFlags");
}
mixcclResult_t streamDestroy(void* s) { NEED_INIT("streamDestroy"); return cuda(api.cudaStreamDestroy(asStream(s)), "StreamDestroy"); }
mixcclResult_t streamSynchronize(void* s) { NEED_INIT("streamSynchronize"); return cuda(api.cudaStreamSynchronize(asStream(s)), "StreamSynchronize"); }
mixcclResult_t eventCreate(void** e) {
  NEED_INIT("eventCreate");
  return cuda(api.cudaEventCreateWithFlags(reinterpret_cast<cudaEvent_t*>(e), kEventDisableTiming), "EventCreateWithFlags");
}
mixcclResult_t eventDestroy(void* e) { NEED_INIT("eventDestroy"); return cuda(api.cudaEventDestroy(asEvent(e)), "EventDestroy"); }
mixcclResult_t eventRecord(void* e, void* s) { NEED_INIT("eventRecord"); return cuda(api.cudaEventRecord(asEvent(e), asStream(s)), "EventRecord"); }
mixcclResult_t eventQuery(void* e, int* done) {
  NEED_INIT("eventQuery");
  cudaError_t r = api.cudaEventQuery(asEvent(e));
  *done = r == cudaSuccess;
  return r == cudaErrorNotReady ? mixcclSuccess : cuda(r, "EventQuery");
}
mixcclResult_t streamWaitEvent(void* s, void* e) {
  NEED_INIT("streamWaitEvent");
  return cuda(api.cudaStreamWaitEvent(asStream(s), asEvent(e), 0), "StreamWaitEvent");
}
mixcclResult_t launchHostFunc(void* s, void (*fn)(void*), void* arg) {
  NEED_INIT("launchHostFunc");
  return cuda(api.cudaLaunchHostFunc(asStream(s), fn, arg), "LaunchHostFunc");
}

int supports(mixcclAdaptorColl_t, mixcclDataType_t type, mixcclRedOp_t op) {
  if (!gInitOk || type < 0 || type >= mixcclNumTypes || op < 0 || op >= mixcclNumOps) return 0;
  if (type == mixcclBfloat16 && ncclVersion < 21000) return 0;  // bf16: NCCL 2.10
  if ((type == mixcclFloat8e4m3 || type == mixcclFloat8e5m2) && ncclVersion < 21900) return 0;
  return 1;  // NCCL runs every collective of its table on every datatype and op it knows
}

mixcclResult_t getUniqueId(void* id) {
  NEED_INIT("getUniqueId");
  ncclUniqueId u;
  MIXCCL_PLUGIN_CHECK(nccl(api.ncclGetUniqueId(&u), "ncclGetUniqueId"));
  std::memset(id, 0, MIXCCL_ADAPTOR_UNIQUE_ID_BYTES);
  std::memcpy(id, &u, sizeof u);
  return mixcclSuccess;
}

mixcclResult_t commInitRank(void** comm, int nranks, const void* id, int rank, int device,
                            const mixcclAdaptorServices_t*) {
  NEED_INIT("commInitRank");
  if (device >= 0) MIXCCL_PLUGIN_CHECK(cuda(api.cudaSetDevice(device), "SetDevice"));
  ncclUniqueId u;
  std::memcpy(&u, id, sizeof u);
  ncclComm_t c = nullptr;
  MIXCCL_PLUGIN_CHECK(nccl(api.ncclCommInitRank(&c, nranks, u, rank), "ncclCommInitRank"));
  if (nranks == 1) {
    std::lock_guard<std::mutex> lock(oneRankMutex);
    oneRankComms.insert(c);
  }
  *comm = c;
  return mixcclSuccess;
}
// Work NCCL accepted and that failed later (a peer that aborted or died, a network error).
// ncclInProgress is a non-blocking communicator still forming: no error.
mixcclResult_t commGetAsyncError(void* c, mixcclResult_t* asyncError) {
  NEED_INIT("commGetAsyncError");
  *asyncError = mixcclSuccess;
  if (api.ncclCommGetAsyncError == nullptr) return mixcclSuccess;  // a library without it
  ncclResult_t r = ncclSuccess;
  MIXCCL_PLUGIN_CHECK(nccl(api.ncclCommGetAsyncError(asComm(c), &r), "ncclCommGetAsyncError"));
  if (r != ncclSuccess && static_cast<int>(r) != mixcclInProgress)
    *asyncError = nccl(r, "asynchronous error (ncclCommGetAsyncError)");
  return mixcclSuccess;
}
// Registration lets NCCL skip its internal copies on this buffer. A library without
// ncclCommRegister (NCCL before 2.19) has nothing to register: the handle stays NULL, which
// commDeregister then accepts.
mixcclResult_t commRegister(void* c, void* buf, size_t bytes, void** handle) {
  NEED_INIT("commRegister");
  *handle = nullptr;
  if (api.ncclCommRegister == nullptr) return mixcclSuccess;
  return nccl(api.ncclCommRegister(asComm(c), buf, bytes, handle), "ncclCommRegister");
}
mixcclResult_t commDeregister(void* c, void* handle) {
  NEED_INIT("commDeregister");
  if (handle == nullptr || api.ncclCommDeregister == nullptr) return mixcclSuccess;
  return nccl(api.ncclCommDeregister(asComm(c), handle), "ncclCommDeregister");
}
mixcclResult_t commDestroy(void* c) {
  NEED_INIT("commDestroy");
  forgetComm(c);
  return nccl(api.ncclCommDestroy(asComm(c)), "ncclCommDestroy");
}
mixcclResult_t commAbort(void* c) {
  NEED_INIT("commAbort");
  forgetComm(c);
  return nccl(api.ncclCommAbort(asComm(c)), "ncclCommAbort");
}

mixcclResult_t allReduce(const void* s, void* r, size_t n, mixcclDataType_t t, mixcclRedOp_t op,
                         void* c, void* st) {
  NEED_INIT("allReduce");
  return nccl(api.ncclAllReduce(s, r, n, asType(t), opFor(c, op), asComm(c), asStream(st)), "ncclAllReduce");
}
mixcclResult_t allGather(const void* s, void* r, size_t n, mixcclDataType_t t, void* c, void* st) {
  NEED_INIT("allGather");
  return nccl(api.ncclAllGather(s, r, n, asType(t), asComm(c), asStream(st)), "ncclAllGather");
}
mixcclResult_t reduceScatter(const void* s, void* r, size_t n, mixcclDataType_t t,
                             mixcclRedOp_t op, void* c, void* st) {
  NEED_INIT("reduceScatter");
  return nccl(api.ncclReduceScatter(s, r, n, asType(t), opFor(c, op), asComm(c), asStream(st)), "ncclReduceScatter");
}
mixcclResult_t broadcast(const void* s, void* r, size_t n, mixcclDataType_t t, int root, void* c,
                         void* st) {
  NEED_INIT("broadcast");
  return nccl(api.ncclBroadcast(s, r, n, asType(t), root, asComm(c), asStream(st)), "ncclBroadcast");
}
mixcclResult_t reduce(const void* s, void* r, size_t n, mixcclDataType_t t, mixcclRedOp_t op,
                      int root, void* c, void* st) {
  NEED_INIT("reduce");
  return nccl(api.ncclReduce(s, r, n, asType(t), opFor(c, op), root, asComm(c), asStream(st)), "ncclReduce");
}
mixcclResult_t send(const void* s, size_t n, mixcclDataType_t t, int peer, void* c, void* st) {
  NEED_INIT("send");
  return nccl(api.ncclSend(s, n, asType(t), peer, asComm(c), asStream(st)), "ncclSend");
}
mixcclResult_t recv(void* r, size_t n, mixcclDataType_t t, int peer, void* c, void* st) {
  NEED_INIT("recv");
  return nccl(api.ncclRecv(r, n, asType(t), peer, asComm(c), asStream(st)), "ncclRecv");
}
mixcclResult_t groupStart() { NEED_INIT("groupStart"); return nccl(api.ncclGroupStart(), "ncclGroupStart"); }
mixcclResult_t groupEnd() { NEED_INIT("groupEnd"); return nccl(api.ncclGroupEnd(), "ncclGroupEnd"); }

// AlltoAll, Gather and Scatter are left out: mixccl composes them from ncclSend/ncclRecv
// (older NCCL releases have no ncclAlltoAll/ncclGather/ncclScatter, and the table is fixed
// before init knows which library it loaded).
mixcclAdaptor_v2_t makeTable() {
  mixcclAdaptor_v2_t t = mixccl_plugin::tableHeader("nccl", MIXCCL_ADAPTOR_DEVICE_MEMORY, init);
  MIXCCL_DEVICE_RUNTIME_ENTRIES(t);
  MIXCCL_NATIVE_LIBRARY_ENTRIES(t);
  MIXCCL_NCCL_COLLECTIVE_ENTRIES(t);
  MIXCCL_POINT_TO_POINT_ENTRIES(t);
  t.commGetAsyncError = commGetAsyncError;
  t.commRegister = commRegister;
  t.commDeregister = commDeregister;
  return t;
}

}  // namespace

MIXCCL_EXPORT_ADAPTOR;
const mixcclAdaptor_v2_t mixcclAdaptor_v2 = makeTable();
