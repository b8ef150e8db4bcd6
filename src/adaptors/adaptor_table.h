// The table mixccl calls an adaptor through, whatever ABI version its plugin was built with:
// the plugin's entries (a version 1 table converted, a version 2 table copied), the host
// runtime where a host-memory plugin left its runtime out, and NULL for the native entries the
// plugin does not have (dispatch composes or refuses those). Field names are the ABI's.
#pragma once

#include <cstddef>
#include <string>

#include "base/collective_kind.h"
#include "base/result.h"
#include "mixccl_adaptor.h"

namespace mixccl {

struct AdaptorTable {
  int abiVersion = 0;  // of the plugin's own table: 1 or 2
  const char* name = nullptr;
  int memoryKind = MIXCCL_ADAPTOR_HOST_MEMORY;
  // Some runtime entries are mixccl's host runtime (host_runtime.h), not the plugin's.
  bool hostRuntimeFilled = false;

  mixcclResult_t (*init)(void) = nullptr;

  // ---- device runtime: never NULL ----
  mixcclResult_t (*getDeviceCount)(int* count) = nullptr;
  mixcclResult_t (*setDevice)(int device) = nullptr;
  mixcclResult_t (*getDevice)(int* device) = nullptr;
  mixcclResult_t (*getPciBusId)(int device, char* busId, size_t len) = nullptr;
  mixcclResult_t (*memAlloc)(void** ptr, size_t bytes) = nullptr;
  mixcclResult_t (*memFree)(void* ptr) = nullptr;
  mixcclResult_t (*hostAlloc)(void** ptr, size_t bytes) = nullptr;
  mixcclResult_t (*hostFree)(void* ptr) = nullptr;
  mixcclResult_t (*memcpyAsync)(void* dst, const void* src, size_t bytes,
                                mixcclAdaptorCopyKind_t kind, void* stream) = nullptr;
  mixcclResult_t (*streamCreate)(void** stream) = nullptr;
  mixcclResult_t (*streamDestroy)(void* stream) = nullptr;
  mixcclResult_t (*streamSynchronize)(void* stream) = nullptr;
  mixcclResult_t (*eventCreate)(void** event) = nullptr;
  mixcclResult_t (*eventDestroy)(void* event) = nullptr;
  mixcclResult_t (*eventRecord)(void* event, void* stream) = nullptr;
  mixcclResult_t (*eventQuery)(void* event, int* done) = nullptr;
  mixcclResult_t (*streamWaitEvent)(void* stream, void* event) = nullptr;
  mixcclResult_t (*launchHostFunc)(void* stream, void (*fn)(void* arg), void* arg) = nullptr;

  // ---- native library: all set or all NULL ----
  mixcclResult_t (*getUniqueId)(void* id) = nullptr;
  mixcclResult_t (*commInitRank)(void** comm, int nranks, const void* id, int rank, int device,
                                 const mixcclAdaptorServices_t* services) = nullptr;
  mixcclResult_t (*commDestroy)(void* comm) = nullptr;
  mixcclResult_t (*commAbort)(void* comm) = nullptr;
  // Optional (version 2 tables that have it): the library's asynchronous error of comm.
  mixcclResult_t (*commGetAsyncError)(void* comm, mixcclResult_t* asyncError) = nullptr;
  // Optional (version 2 tables that have them, both or none): the library's registration.
  mixcclResult_t (*commRegister)(void* comm, void* buf, size_t bytes, void** handle) = nullptr;
  mixcclResult_t (*commDeregister)(void* comm, void* handle) = nullptr;

  // ---- native collectives: NULL where the library has none ----
  mixcclResult_t (*allReduce)(const void* sendbuf, void* recvbuf, size_t count,
                              mixcclDataType_t type, mixcclRedOp_t op, void* comm,
                              void* stream) = nullptr;
  mixcclResult_t (*allGather)(const void* sendbuf, void* recvbuf, size_t sendcount,
                              mixcclDataType_t type, void* comm, void* stream) = nullptr;
  mixcclResult_t (*reduceScatter)(const void* sendbuf, void* recvbuf, size_t recvcount,
                                  mixcclDataType_t type, mixcclRedOp_t op, void* comm,
                                  void* stream) = nullptr;
  mixcclResult_t (*broadcast)(const void* sendbuf, void* recvbuf, size_t count,
                              mixcclDataType_t type, int root, void* comm,
                              void* stream) = nullptr;
  mixcclResult_t (*reduce)(const void* sendbuf, void* recvbuf, size_t count,
                           mixcclDataType_t type, mixcclRedOp_t op, int root, void* comm,
                           void* stream) = nullptr;
  mixcclResult_t (*alltoAll)(const void* sendbuf, void* recvbuf, size_t count,
                             mixcclDataType_t type, void* comm, void* stream) = nullptr;
  mixcclResult_t (*gather)(const void* sendbuf, void* recvbuf, size_t count,
                           mixcclDataType_t type, int root, void* comm, void* stream) = nullptr;
  mixcclResult_t (*scatter)(const void* sendbuf, void* recvbuf, size_t count,
                            mixcclDataType_t type, int root, void* comm, void* stream) = nullptr;

  // ---- point to point: all set or all NULL ----
  mixcclResult_t (*send)(const void* sendbuf, size_t count, mixcclDataType_t type, int peer,
                         void* comm, void* stream) = nullptr;
  mixcclResult_t (*recv)(void* recvbuf, size_t count, mixcclDataType_t type, int peer,
                         void* comm, void* stream) = nullptr;
  mixcclResult_t (*groupStart)(void) = nullptr;
  mixcclResult_t (*groupEnd)(void) = nullptr;

  // ---- the plugin's own entries behind the methods below ----
  const char* (*pluginLastError)(void) = nullptr;
  int (*supportsByKind)(mixcclAdaptorColl_t, mixcclDataType_t, mixcclRedOp_t) = nullptr;  // v2
  int (*supportsByName)(const char*, mixcclDataType_t, mixcclRedOp_t) = nullptr;          // v1

  // The calling thread's last error of this adaptor ("" if none; never NULL).
  const char* lastError() const;
  // The adaptor forms communicators of its own library (else mixccl runs its own algorithms).
  bool hasNativeLibrary() const { return commInitRank != nullptr; }
  // The native library has an entry for kind.
  bool hasNative(CollKind kind) const;
  bool hasPointToPoint() const { return send != nullptr; }
  // The native library runs kind on type with op (op ignored for kinds that take none); false
  // where the entry of kind is NULL.
  bool supports(CollKind kind, mixcclDataType_t type, mixcclRedOp_t op) const;
};

// mixcclSuccess, or r raised as "<adaptor> adaptor: native <what> failed: <its lastError()>".
// "<adaptor> adaptor: native <what> failed: <the adaptor's last error>", for a caller that
// logs it another way (Health::fail).
std::string nativeFailureText(const AdaptorTable& t, const char* what);
Result checkNative(const AdaptorTable& t, const char* what, mixcclResult_t r);

}  // namespace mixccl
