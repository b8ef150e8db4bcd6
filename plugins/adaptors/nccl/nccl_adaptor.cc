// The nccl adaptor: CUDA device memory and NCCL's collectives. NVIDIA's libnccl.so.2 (found by
// nccl_library.h, never mixccl's own NCCL shim) and the CUDA runtime are opened with dlopen at
// init(), so the plugin builds and loads without CUDA and
// fails init() with a clear message where there is no library or no device. The few CUDA and
// NCCL types are declared here; mixccl's datatype and op enums have NCCL's values.
#include <dlfcn.h>

#include <atomic>
#include <cstring>
#include <mutex>
#include <string>

#include "nccl_library.h"
#include "plugin_support.h"
#include "../common/table_entries.h"

using mixccl_plugin::setError;

namespace {

constexpr const char* kPrefix = "nccl adaptor";

// ---- the CUDA runtime and NCCL, as far as we use them ----
using cudaError_t = int;
using cudaStream_t = void*;
using cudaEvent_t = void*;
constexpr cudaError_t cudaSuccess = 0;
constexpr cudaError_t cudaErrorNotReady = 600;
constexpr unsigned cudaStreamNonBlocking = 1;
constexpr unsigned cudaEventDisableTiming = 2;
using ncclResult_t = int;
using ncclComm_t = void*;
struct ncclUniqueId {
  char internal[128];
};

struct Api {
  // CUDA runtime
  cudaError_t (*cudaGetDeviceCount)(int*);
  cudaError_t (*cudaSetDevice)(int);
  cudaError_t (*cudaGetDevice)(int*);
  cudaError_t (*cudaDeviceGetPCIBusId)(char*, int, int);
  cudaError_t (*cudaMalloc)(void**, size_t);
  cudaError_t (*cudaFree)(void*);
  cudaError_t (*cudaMallocHost)(void**, size_t);
  cudaError_t (*cudaFreeHost)(void*);
  cudaError_t (*cudaMemcpyAsync)(void*, const void*, size_t, int, cudaStream_t);
  cudaError_t (*cudaStreamCreateWithFlags)(cudaStream_t*, unsigned);
  cudaError_t (*cudaStreamDestroy)(cudaStream_t);
  cudaError_t (*cudaStreamSynchronize)(cudaStream_t);
  cudaError_t (*cudaEventCreateWithFlags)(cudaEvent_t*, unsigned);
  cudaError_t (*cudaEventDestroy)(cudaEvent_t);
  cudaError_t (*cudaEventRecord)(cudaEvent_t, cudaStream_t);
  cudaError_t (*cudaEventQuery)(cudaEvent_t);
  cudaError_t (*cudaStreamWaitEvent)(cudaStream_t, cudaEvent_t, unsigned);
  cudaError_t (*cudaLaunchHostFunc)(cudaStream_t, void (*)(void*), void*);
  const char* (*cudaGetErrorString)(cudaError_t);
  // NCCL
  ncclResult_t (*ncclGetVersion)(int*);
  ncclResult_t (*ncclGetUniqueId)(ncclUniqueId*);
  ncclResult_t (*ncclCommInitRank)(ncclComm_t*, int, ncclUniqueId, int);
  ncclResult_t (*ncclCommDestroy)(ncclComm_t);
  ncclResult_t (*ncclCommAbort)(ncclComm_t);
  ncclResult_t (*ncclAllReduce)(const void*, void*, size_t, int, int, ncclComm_t, cudaStream_t);
  ncclResult_t (*ncclAllGather)(const void*, void*, size_t, int, ncclComm_t, cudaStream_t);
  ncclResult_t (*ncclReduceScatter)(const void*, void*, size_t, int, int, ncclComm_t,
                                    cudaStream_t);
  ncclResult_t (*ncclBroadcast)(const void*, void*, size_t, int, int, ncclComm_t, cudaStream_t);
  ncclResult_t (*ncclReduce)(const void*, void*, size_t, int, int, int, ncclComm_t,
                             cudaStream_t);
  ncclResult_t (*ncclSend)(const void*, size_t, int, int, ncclComm_t, cudaStream_t);
  ncclResult_t (*ncclRecv)(void*, size_t, int, int, ncclComm_t, cudaStream_t);
  ncclResult_t (*ncclGroupStart)();
  ncclResult_t (*ncclGroupEnd)();
  const char* (*ncclGetErrorString)(ncclResult_t);
};
Api api;
int ncclVersion = 0;

// Opens the first library of the list that loads; "" on success, else what was tried.
std::string openFirst(const char* const* names, void** handle) {
  std::string tried;
  for (const char* const* n = names; *n; ++n) {
    *handle = dlopen(*n, RTLD_NOW | RTLD_LOCAL);
    if (*handle) return "";
    const char* why = dlerror();
    tried += std::string(tried.empty() ? "" : "; ") + *n + ": " + (why ? why : "not loadable");
  }
  return tried;
}

template <class F>
bool bind(void* lib, const char* name, F* fn, std::string* missing) {
  *fn = reinterpret_cast<F>(dlsym(lib, name));
  if (*fn == nullptr) *missing += std::string(missing->empty() ? "" : ", ") + name;
  return *fn != nullptr;
}

mixcclResult_t loadApi() {
  static const char* const cudartNames[] = {"libcudart.so", "libcudart.so.13", "libcudart.so.12",
                                            "libcudart.so.11.0", nullptr};
  void* cudart = nullptr;
  void* nccl = nullptr;
  // NCCL first: in a process that runs mixccl's NCCL shim, "libnccl.so.2" is the shim, and
  // the adaptor must say so (nccl_library.h) whatever else the machine lacks.
  std::string ncclPath;
  std::string why = mixccl_nccl::openRealNccl(mixccl_nccl::defaultNcclSearch(), &nccl, &ncclPath);
  if (!nccl) return setError(mixcclSystemError, kPrefix, "cannot load NCCL (%s)", why.c_str());
  why = openFirst(cudartNames, &cudart);
  if (!cudart)
    return setError(mixcclSystemError, kPrefix, "cannot load the CUDA runtime (%s)", why.c_str());
  std::string missing;
#define BIND(lib, f) bind(lib, #f, &api.f, &missing)
  BIND(cudart, cudaGetDeviceCount); BIND(cudart, cudaSetDevice); BIND(cudart, cudaGetDevice);
  BIND(cudart, cudaDeviceGetPCIBusId); BIND(cudart, cudaMalloc); BIND(cudart, cudaFree);
  BIND(cudart, cudaMallocHost); BIND(cudart, cudaFreeHost); BIND(cudart, cudaMemcpyAsync);
  BIND(cudart, cudaStreamCreateWithFlags); BIND(cudart, cudaStreamDestroy);
  BIND(cudart, cudaStreamSynchronize); BIND(cudart, cudaEventCreateWithFlags);
  BIND(cudart, cudaEventDestroy); BIND(cudart, cudaEventRecord); BIND(cudart, cudaEventQuery);
  BIND(cudart, cudaStreamWaitEvent); BIND(cudart, cudaLaunchHostFunc);
  BIND(cudart, cudaGetErrorString);
  BIND(nccl, ncclGetVersion); BIND(nccl, ncclGetUniqueId); BIND(nccl, ncclCommInitRank);
  BIND(nccl, ncclCommDestroy); BIND(nccl, ncclCommAbort); BIND(nccl, ncclAllReduce);
  BIND(nccl, ncclAllGather); BIND(nccl, ncclReduceScatter); BIND(nccl, ncclBroadcast);
  BIND(nccl, ncclReduce); BIND(nccl, ncclSend); BIND(nccl, ncclRecv);
  BIND(nccl, ncclGroupStart); BIND(nccl, ncclGroupEnd); BIND(nccl, ncclGetErrorString);
#undef BIND
  if (!missing.empty())
    return setError(mixcclSystemError, kPrefix, "symbols missing in the CUDA runtime or NCCL: %s",
                    missing.c_str());
  return mixcclSuccess;
}

// ---- error mapping ----
mixcclResult_t cuda(cudaError_t e, const char* what) {
  if (e == cudaSuccess) return mixcclSuccess;
  return setError(mixcclUnhandledDeviceError, kPrefix, "%s: CUDA error %d: %s", what, e,
                  api.cudaGetErrorString(e));
}
mixcclResult_t nccl(ncclResult_t r, const char* what) {
  if (r == 0) return mixcclSuccess;
  // NCCL's result codes have mixccl's values (ncclInProgress included).
  mixcclResult_t code = (r > 0 && r < mixcclNumResults) ? static_cast<mixcclResult_t>(r)
                                                         : mixcclInternalError;
  return setError(code, kPrefix, "%s: %s (NCCL %d, code %d)", what, api.ncclGetErrorString(r),
                  ncclVersion, r);
}

// ---- entries ----
std::atomic<bool> gInitOk{false};

mixcclResult_t init() {
  static std::once_flag once;
  static mixcclResult_t result = mixcclSuccess;
  static std::string error;
  std::call_once(once, [] {
    result = loadApi();
    if (result == mixcclSuccess) {
      int count = 0;
      cudaError_t e = api.cudaGetDeviceCount(&count);
      if (e != cudaSuccess || count <= 0) {
        result = setError(mixcclSystemError, kPrefix,
                          "no usable CUDA device (cudaGetDeviceCount: %s)",
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
  return cuda(api.cudaGetDeviceCount(count), "cudaGetDeviceCount");
}
mixcclResult_t setDevice(int d) { NEED_INIT("setDevice"); return cuda(api.cudaSetDevice(d), "cudaSetDevice"); }
mixcclResult_t getDevice(int* d) { NEED_INIT("getDevice"); return cuda(api.cudaGetDevice(d), "cudaGetDevice"); }
mixcclResult_t getPciBusId(int d, char* busId, size_t len) {
  NEED_INIT("getPciBusId");
  return cuda(api.cudaDeviceGetPCIBusId(busId, static_cast<int>(len), d), "cudaDeviceGetPCIBusId");
}
mixcclResult_t memAlloc(void** p, size_t n) { NEED_INIT("memAlloc"); return cuda(api.cudaMalloc(p, n), "cudaMalloc"); }
mixcclResult_t memFree(void* p) { NEED_INIT("memFree"); return cuda(api.cudaFree(p), "cudaFree"); }
mixcclResult_t hostAlloc(void** p, size_t n) { NEED_INIT("hostAlloc"); return cuda(api.cudaMallocHost(p, n), "cudaMallocHost"); }
mixcclResult_t hostFree(void* p) { NEED_INIT("hostFree"); return cuda(api.cudaFreeHost(p), "cudaFreeHost"); }
mixcclResult_t memcpyAsync(void* dst, const void* src, size_t n, mixcclAdaptorCopyKind_t kind,
                           void* stream) {
  NEED_INIT("memcpyAsync");
  // mixcclAdaptorCopyKind_t has cudaMemcpyKind's values (HostToHost 0 ... DeviceToDevice 3).
  return cuda(api.cudaMemcpyAsync(dst, src, n, static_cast<int>(kind), stream), "cudaMemcpyAsync");
}
mixcclResult_t streamCreate(void** s) {
  NEED_INIT("streamCreate");
  return cuda(api.cudaStreamCreateWithFlags(s, cudaStreamNonBlocking), "cudaStreamCreateWithFlags");
}
mixcclResult_t streamDestroy(void* s) { NEED_INIT("streamDestroy"); return cuda(api.cudaStreamDestroy(s), "cudaStreamDestroy"); }
mixcclResult_t streamSynchronize(void* s) { NEED_INIT("streamSynchronize"); return cuda(api.cudaStreamSynchronize(s), "cudaStreamSynchronize"); }
mixcclResult_t eventCreate(void** e) {
  NEED_INIT("eventCreate");
  return cuda(api.cudaEventCreateWithFlags(e, cudaEventDisableTiming), "cudaEventCreateWithFlags");
}
mixcclResult_t eventDestroy(void* e) { NEED_INIT("eventDestroy"); return cuda(api.cudaEventDestroy(e), "cudaEventDestroy"); }
mixcclResult_t eventRecord(void* e, void* s) { NEED_INIT("eventRecord"); return cuda(api.cudaEventRecord(e, s), "cudaEventRecord"); }
mixcclResult_t eventQuery(void* e, int* done) {
  NEED_INIT("eventQuery");
  cudaError_t r = api.cudaEventQuery(e);
  *done = r == cudaSuccess;
  return r == cudaErrorNotReady ? mixcclSuccess : cuda(r, "cudaEventQuery");
}
mixcclResult_t streamWaitEvent(void* s, void* e) {
  NEED_INIT("streamWaitEvent");
  return cuda(api.cudaStreamWaitEvent(s, e, 0), "cudaStreamWaitEvent");
}
mixcclResult_t launchHostFunc(void* s, void (*fn)(void*), void* arg) {
  NEED_INIT("launchHostFunc");
  return cuda(api.cudaLaunchHostFunc(s, fn, arg), "cudaLaunchHostFunc");
}

int supports(mixcclAdaptorColl_t, mixcclDataType_t type, mixcclRedOp_t op) {
  if (!gInitOk || type < 0 || type >= mixcclNumTypes || op < 0 || op >= mixcclNumOps) return 0;
  if (type == mixcclBfloat16 && ncclVersion < 21000) return 0;  // bf16: NCCL 2.10
  if ((type == mixcclFloat8e4m3 || type == mixcclFloat8e5m2) && ncclVersion < 21900) return 0;
  return 1;  // NCCL runs every collective of its table on every datatype and op it knows
}

mixcclResult_t getUniqueId(void* id) {
  NEED_INIT("getUniqueId");
  static_assert(sizeof(ncclUniqueId) <= MIXCCL_ADAPTOR_UNIQUE_ID_BYTES, "unique id too large");
  ncclUniqueId u;
  MIXCCL_PLUGIN_CHECK(nccl(api.ncclGetUniqueId(&u), "ncclGetUniqueId"));
  std::memset(id, 0, MIXCCL_ADAPTOR_UNIQUE_ID_BYTES);
  std::memcpy(id, &u, sizeof u);
  return mixcclSuccess;
}

mixcclResult_t commInitRank(void** comm, int nranks, const void* id, int rank, int device,
                            const mixcclAdaptorServices_t*) {
  NEED_INIT("commInitRank");
  if (device >= 0) MIXCCL_PLUGIN_CHECK(cuda(api.cudaSetDevice(device), "cudaSetDevice"));
  ncclUniqueId u;
  std::memcpy(&u, id, sizeof u);
  ncclComm_t c = nullptr;
  MIXCCL_PLUGIN_CHECK(nccl(api.ncclCommInitRank(&c, nranks, u, rank), "ncclCommInitRank"));
  *comm = c;
  return mixcclSuccess;
}
mixcclResult_t commDestroy(void* c) { NEED_INIT("commDestroy"); return nccl(api.ncclCommDestroy(c), "ncclCommDestroy"); }
mixcclResult_t commAbort(void* c) { NEED_INIT("commAbort"); return nccl(api.ncclCommAbort(c), "ncclCommAbort"); }

mixcclResult_t allReduce(const void* s, void* r, size_t n, mixcclDataType_t t, mixcclRedOp_t op,
                         void* c, void* st) {
  NEED_INIT("allReduce");
  return nccl(api.ncclAllReduce(s, r, n, t, op, c, st), "ncclAllReduce");
}
mixcclResult_t allGather(const void* s, void* r, size_t n, mixcclDataType_t t, void* c, void* st) {
  NEED_INIT("allGather");
  return nccl(api.ncclAllGather(s, r, n, t, c, st), "ncclAllGather");
}
mixcclResult_t reduceScatter(const void* s, void* r, size_t n, mixcclDataType_t t,
                             mixcclRedOp_t op, void* c, void* st) {
  NEED_INIT("reduceScatter");
  return nccl(api.ncclReduceScatter(s, r, n, t, op, c, st), "ncclReduceScatter");
}
mixcclResult_t broadcast(const void* s, void* r, size_t n, mixcclDataType_t t, int root, void* c,
                         void* st) {
  NEED_INIT("broadcast");
  return nccl(api.ncclBroadcast(s, r, n, t, root, c, st), "ncclBroadcast");
}
mixcclResult_t reduce(const void* s, void* r, size_t n, mixcclDataType_t t, mixcclRedOp_t op,
                      int root, void* c, void* st) {
  NEED_INIT("reduce");
  return nccl(api.ncclReduce(s, r, n, t, op, root, c, st), "ncclReduce");
}
mixcclResult_t send(const void* s, size_t n, mixcclDataType_t t, int peer, void* c, void* st) {
  NEED_INIT("send");
  return nccl(api.ncclSend(s, n, t, peer, c, st), "ncclSend");
}
mixcclResult_t recv(void* r, size_t n, mixcclDataType_t t, int peer, void* c, void* st) {
  NEED_INIT("recv");
  return nccl(api.ncclRecv(r, n, t, peer, c, st), "ncclRecv");
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
  return t;
}

}  // namespace

MIXCCL_EXPORT_ADAPTOR;
const mixcclAdaptor_v2_t mixcclAdaptor_v2 = makeTable();
