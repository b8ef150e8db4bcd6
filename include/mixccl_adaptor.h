/*
 * mixccl device adaptor plugin ABI, version 2.
 *
 * An adaptor lets mixccl use one vendor's device runtime and collective library inside that
 * vendor's domain. A plugin is a shared object named libmixccl-adaptor-<name>.so that exports
 * one symbol, MIXCCL_ADAPTOR_SYMBOL ("mixcclAdaptor_v2"), a const mixcclAdaptor_v2_t. mixccl
 * finds plugins on MIXCCL_PLUGIN_PATH (colon-separated folders) and then in its install
 * directory, opens them with dlopen, and checks the table before using any entry: its size,
 * abiVersion, name and memory kind, and every entry the rules below require.
 *
 * Which entries a plugin must set (the rest may be NULL):
 *  - always: init, lastError;
 *  - the device runtime: adaptors of device memory set all of it; adaptors of host memory may
 *    leave any of it NULL, and mixccl fills those with its own host runtime (the one its
 *    built-in host adaptor uses: ordinary memory, work complete when a call returns);
 *  - the native library (supports, getUniqueId, commInitRank, commDestroy, commAbort): all or
 *    none. Without one, mixccl runs its own algorithms inside the adaptor's domain (host
 *    memory only: a device adaptor without a library can only join jobs with other domains);
 *  - each native collective is optional. Where one is NULL, mixccl runs its own algorithm
 *    (host memory), composes it from the library's send/recv (AlltoAll, Gather, Scatter on
 *    device memory), or refuses the call with an error that names the adaptor and the entry;
 *  - send, recv, groupStart, groupEnd: all or none.
 *  - entries appended after the first version 2 table (commGetAsyncError, commRegister,
 *    commDeregister): optional; mixccl reads one only where the table's size covers it.
 *    commRegister and commDeregister: both or none.
 *
 * Plugins built against version 1 (symbol "mixcclAdaptor_v1", every entry required,
 * collectives named by strings in supports()) still load: mixcclAdaptor_v1_t is kept below.
 *
 * Conventions of every entry:
 *  - It returns mixcclSuccess or an error code; on error, lastError() (same thread) returns a
 *    message saying what failed, with the vendor's own error text where there is one.
 *  - Counts are elements, not bytes. Datatypes and ops are mixccl's (mixccl.h).
 *  - "stream" is the adaptor's stream handle (cudaStream_t for nccl); NULL means the default
 *    stream. Adaptors with memoryKind == MIXCCL_ADAPTOR_HOST_MEMORY receive NULL and complete
 *    every call before it returns.
 *  - Collectives are issued by every rank of the adaptor communicator in the same order, like
 *    NCCL. mixccl passes mixcclAvg only where supports() says the library has it; otherwise
 *    it reduces with mixcclSum and divides once by the rank count.
 *  - Nothing here throws; plugins written in C++ catch everything at this boundary.
 */
#ifndef MIXCCL_ADAPTOR_H_
#define MIXCCL_ADAPTOR_H_

#include <stddef.h>
#include <stdint.h>

#include "mixccl.h"

#ifdef __cplusplus
extern "C" {
#endif

#define MIXCCL_ADAPTOR_ABI_VERSION 2
/* The one symbol a plugin exports: const mixcclAdaptor_v2_t mixcclAdaptor_v2. */
#define MIXCCL_ADAPTOR_SYMBOL "mixcclAdaptor_v2"
/* What plugins built against version 1 export (const mixcclAdaptor_v1_t mixcclAdaptor_v1). */
#define MIXCCL_ADAPTOR_ABI_VERSION_V1 1
#define MIXCCL_ADAPTOR_SYMBOL_V1 "mixcclAdaptor_v1"
/* Opaque bytes a native library needs to form a communicator (an ncclUniqueId is 128). */
#define MIXCCL_ADAPTOR_UNIQUE_ID_BYTES 256

typedef enum {
  MIXCCL_ADAPTOR_HOST_MEMORY = 0,   /* buffers are ordinary host pointers */
  MIXCCL_ADAPTOR_DEVICE_MEMORY = 1  /* buffers are device pointers of this adaptor */
} mixcclAdaptorMemoryKind_t;

typedef enum {
  mixcclCopyHostToHost = 0,
  mixcclCopyHostToDevice = 1,
  mixcclCopyDeviceToHost = 2,
  mixcclCopyDeviceToDevice = 3
} mixcclAdaptorCopyKind_t;

/* The collectives, as supports() names them. The values are mixccl's own numbering of its
 * collectives (checked at compile time inside mixccl); new ones are only ever appended. */
typedef enum {
  mixcclCollAllReduce = 0,
  mixcclCollBroadcast = 1,
  mixcclCollReduce = 2,
  mixcclCollAllGather = 3,
  mixcclCollReduceScatter = 4,
  mixcclCollAlltoAll = 5,
  mixcclCollGather = 6,
  mixcclCollScatter = 7
} mixcclAdaptorColl_t;

/*
 * What mixccl lends an adaptor while it forms a communicator and afterwards.
 * - allGather: every rank of the adaptor communicator contributes `bytes` bytes; `all`
 *   receives nranks * bytes in rank order. Collective over the adaptor communicator's ranks,
 *   carried by mixccl's own bootstrap (so Gloo-like libraries need no store of their own).
 * - reduce: dst[i] = a[i] op b[i] for count elements, every mixccl datatype and op except
 *   Avg (fp16/bf16/fp8 computed in fp32 and rounded once), so CPU libraries that accept a
 *   reduction function can support every datatype.
 * The pointers and ctx stay valid until commDestroy/commAbort returns.
 */
typedef struct {
  void* ctx;
  mixcclResult_t (*allGather)(void* ctx, const void* mine, void* all, size_t bytes);
  void (*reduce)(void* dst, const void* a, const void* b, size_t count,
                 mixcclDataType_t type, mixcclRedOp_t op);
} mixcclAdaptorServices_t;

typedef struct mixcclAdaptor_v2 {
  /* ---- version header: set by every plugin, checked first ---- */
  /* sizeof(mixcclAdaptor_v2_t) as the plugin was compiled. Entries are only ever appended to
   * this struct: mixccl reads the entries a plugin's size covers and treats later ones as NULL;
   * a size smaller than the first version 2 table is refused. */
  size_t size;
  int abiVersion;   /* MIXCCL_ADAPTOR_ABI_VERSION */
  const char* name; /* equals the <name> of libmixccl-adaptor-<name>.so */
  int memoryKind;   /* mixcclAdaptorMemoryKind_t */

  /* ---- required ---- */
  /* Loads the vendor runtime and library. Fails (with a message) when they are missing or no
   * device is usable; mixccl then reports the adaptor as unusable. Called once per process. */
  mixcclResult_t (*init)(void);
  /* The last error of the calling thread, "" if none. Never NULL. */
  const char* (*lastError)(void);

  /* ---- device runtime: required for device memory; host memory may leave any NULL ---- */
  mixcclResult_t (*getDeviceCount)(int* count);
  mixcclResult_t (*setDevice)(int device);
  mixcclResult_t (*getDevice)(int* device);
  /* "0000:3b:00.0" style bus id of device (host memory adaptors: ""). */
  mixcclResult_t (*getPciBusId)(int device, char* busId, size_t len);
  mixcclResult_t (*memAlloc)(void** ptr, size_t bytes);
  mixcclResult_t (*memFree)(void* ptr);
  /* Page-locked host memory for staging (host adaptors: ordinary memory). */
  mixcclResult_t (*hostAlloc)(void** ptr, size_t bytes);
  mixcclResult_t (*hostFree)(void* ptr);
  mixcclResult_t (*memcpyAsync)(void* dst, const void* src, size_t bytes,
                                mixcclAdaptorCopyKind_t kind, void* stream);
  mixcclResult_t (*streamCreate)(void** stream);
  mixcclResult_t (*streamDestroy)(void* stream);
  mixcclResult_t (*streamSynchronize)(void* stream);
  mixcclResult_t (*eventCreate)(void** event);
  mixcclResult_t (*eventDestroy)(void* event);
  mixcclResult_t (*eventRecord)(void* event, void* stream);
  /* *done = 1 once the work before the record has finished, 0 otherwise. */
  mixcclResult_t (*eventQuery)(void* event, int* done);
  mixcclResult_t (*streamWaitEvent)(void* stream, void* event);
  /* Runs fn(arg) on a runtime thread once the stream reaches this point; later work on the
   * stream waits for fn to return. */
  mixcclResult_t (*launchHostFunc)(void* stream, void (*fn)(void* arg), void* arg);

  /* ---- native library: all five or none ---- */
  /* 1 if the native library can run coll on this datatype and op (op ignored where the
   * collective has none). mixccl asks before each native AllReduce, Reduce and ReduceScatter
   * (Avg, or a datatype the library lacks, is then done otherwise), never for an entry that
   * is NULL. */
  int (*supports)(mixcclAdaptorColl_t coll, mixcclDataType_t type, mixcclRedOp_t op);
  /* Called on rank 0 of the adaptor communicator; mixccl hands the bytes to the others. */
  mixcclResult_t (*getUniqueId)(void* id /* MIXCCL_ADAPTOR_UNIQUE_ID_BYTES */);
  mixcclResult_t (*commInitRank)(void** comm, int nranks, const void* id, int rank,
                                 int device, const mixcclAdaptorServices_t* services);
  mixcclResult_t (*commDestroy)(void* comm);
  /* Stops the communicator's work at once; any thread. */
  mixcclResult_t (*commAbort)(void* comm);

  /* ---- native collectives: each optional (NULL: see the rules at the top) ---- */
  mixcclResult_t (*allReduce)(const void* sendbuf, void* recvbuf, size_t count,
                              mixcclDataType_t type, mixcclRedOp_t op, void* comm, void* stream);
  /* recvbuf holds nranks * sendcount elements in rank order. */
  mixcclResult_t (*allGather)(const void* sendbuf, void* recvbuf, size_t sendcount,
                              mixcclDataType_t type, void* comm, void* stream);
  /* sendbuf holds nranks * recvcount elements; rank r keeps the r-th block, reduced. */
  mixcclResult_t (*reduceScatter)(const void* sendbuf, void* recvbuf, size_t recvcount,
                                  mixcclDataType_t type, mixcclRedOp_t op, void* comm,
                                  void* stream);
  mixcclResult_t (*broadcast)(const void* sendbuf, void* recvbuf, size_t count,
                              mixcclDataType_t type, int root, void* comm, void* stream);
  mixcclResult_t (*reduce)(const void* sendbuf, void* recvbuf, size_t count,
                           mixcclDataType_t type, mixcclRedOp_t op, int root, void* comm,
                           void* stream);
  /* sendbuf and recvbuf hold nranks * count elements; block p goes to / came from rank p. */
  mixcclResult_t (*alltoAll)(const void* sendbuf, void* recvbuf, size_t count,
                             mixcclDataType_t type, void* comm, void* stream);
  /* recvbuf (root only) holds nranks * count elements in rank order. */
  mixcclResult_t (*gather)(const void* sendbuf, void* recvbuf, size_t count,
                           mixcclDataType_t type, int root, void* comm, void* stream);
  /* sendbuf (root only) holds nranks * count elements; rank r receives block r. */
  mixcclResult_t (*scatter)(const void* sendbuf, void* recvbuf, size_t count,
                            mixcclDataType_t type, int root, void* comm, void* stream);

  /* ---- point to point: all four or none ---- */
  mixcclResult_t (*send)(const void* sendbuf, size_t count, mixcclDataType_t type, int peer,
                         void* comm, void* stream);
  mixcclResult_t (*recv)(void* recvbuf, size_t count, mixcclDataType_t type, int peer,
                         void* comm, void* stream);
  /* Sends and receives between groupStart and groupEnd progress together (no deadlock when
   * two ranks send to each other first). */
  mixcclResult_t (*groupStart)(void);
  mixcclResult_t (*groupEnd)(void);

  /* ---- appended after the first version 2 table: NULL where a plugin's size ends earlier ---- */
  /* The native library's asynchronous error of comm: work it accepted earlier that failed
   * later (a peer that aborted or died, a network error), in *asyncError; mixcclSuccess while
   * there is none. On an error, lastError() says what it was. Optional (only with the native
   * library); mixccl asks it in mixcclCommGetAsyncError and fails the communicator with it. */
  mixcclResult_t (*commGetAsyncError)(void* comm, mixcclResult_t* asyncError);
  /* Registers bytes of buf (memory of this adaptor's kind) with the native library of comm, so
   * that its collectives on that memory may skip internal copies (ncclCommRegister); *handle
   * is the library's, passed back to commDeregister. Optional (only with the native library;
   * both or none): without them mixccl records the buffer and registers nothing. */
  mixcclResult_t (*commRegister)(void* comm, void* buf, size_t bytes, void** handle);
  mixcclResult_t (*commDeregister)(void* comm, void* handle);
} mixcclAdaptor_v2_t;

/*
 * Version 1 (legacy): still loaded, never needed for a new plugin. The entries mean what the
 * version 2 entries of the same names mean, but every entry is required, there is no size, and
 * supports() names collectives by strings ("allreduce", "allgather", "reducescatter",
 * "broadcast", "reduce", "sendrecv"); there are no AlltoAll/Gather/Scatter entries (mixccl
 * composes them and asks supports("sendrecv")).
 */
typedef struct mixcclAdaptor_v1 {
  int abiVersion;   /* MIXCCL_ADAPTOR_ABI_VERSION_V1 */
  const char* name;
  int memoryKind;
  mixcclResult_t (*init)(void);
  const char* (*lastError)(void);
  mixcclResult_t (*getDeviceCount)(int* count);
  mixcclResult_t (*setDevice)(int device);
  mixcclResult_t (*getDevice)(int* device);
  mixcclResult_t (*getPciBusId)(int device, char* busId, size_t len);
  mixcclResult_t (*memAlloc)(void** ptr, size_t bytes);
  mixcclResult_t (*memFree)(void* ptr);
  mixcclResult_t (*hostAlloc)(void** ptr, size_t bytes);
  mixcclResult_t (*hostFree)(void* ptr);
  mixcclResult_t (*memcpyAsync)(void* dst, const void* src, size_t bytes,
                                mixcclAdaptorCopyKind_t kind, void* stream);
  mixcclResult_t (*streamCreate)(void** stream);
  mixcclResult_t (*streamDestroy)(void* stream);
  mixcclResult_t (*streamSynchronize)(void* stream);
  mixcclResult_t (*eventCreate)(void** event);
  mixcclResult_t (*eventDestroy)(void* event);
  mixcclResult_t (*eventRecord)(void* event, void* stream);
  mixcclResult_t (*eventQuery)(void* event, int* done);
  mixcclResult_t (*streamWaitEvent)(void* stream, void* event);
  mixcclResult_t (*launchHostFunc)(void* stream, void (*fn)(void* arg), void* arg);
  int (*supports)(const char* coll, mixcclDataType_t type, mixcclRedOp_t op);
  mixcclResult_t (*getUniqueId)(void* id);
  mixcclResult_t (*commInitRank)(void** comm, int nranks, const void* id, int rank,
                                 int device, const mixcclAdaptorServices_t* services);
  mixcclResult_t (*commDestroy)(void* comm);
  mixcclResult_t (*commAbort)(void* comm);
  mixcclResult_t (*allReduce)(const void* sendbuf, void* recvbuf, size_t count,
                              mixcclDataType_t type, mixcclRedOp_t op, void* comm, void* stream);
  mixcclResult_t (*allGather)(const void* sendbuf, void* recvbuf, size_t sendcount,
                              mixcclDataType_t type, void* comm, void* stream);
  mixcclResult_t (*reduceScatter)(const void* sendbuf, void* recvbuf, size_t recvcount,
                                  mixcclDataType_t type, mixcclRedOp_t op, void* comm,
                                  void* stream);
  mixcclResult_t (*broadcast)(const void* sendbuf, void* recvbuf, size_t count,
                              mixcclDataType_t type, int root, void* comm, void* stream);
  mixcclResult_t (*reduce)(const void* sendbuf, void* recvbuf, size_t count,
                           mixcclDataType_t type, mixcclRedOp_t op, int root, void* comm,
                           void* stream);
  mixcclResult_t (*send)(const void* sendbuf, size_t count, mixcclDataType_t type, int peer,
                         void* comm, void* stream);
  mixcclResult_t (*recv)(void* recvbuf, size_t count, mixcclDataType_t type, int peer,
                         void* comm, void* stream);
  mixcclResult_t (*groupStart)(void);
  mixcclResult_t (*groupEnd)(void);
} mixcclAdaptor_v1_t;

/* The adaptor this rank of comm uses. Programs allocate their buffers with its memAlloc (device
 * memory) when memoryKind is MIXCCL_ADAPTOR_DEVICE_MEMORY, and copy and synchronise with its
 * runtime entries; the table stays valid for the life of the process. */
mixcclResult_t mixcclCommGetAdaptor(const mixcclComm_t comm, const mixcclAdaptor_v2_t** adaptor);

/* The adaptor a communicator made now in this process takes when its config names none:
 * MIXCCL_ADAPTOR, else detection (loaded and initialised at the first call, the same table the
 * communicators get). For memory a program allocates before it has a communicator (the NCCL
 * shim's ncclMemAlloc). A failed load is mixcclInvalidArgument or mixcclSystemError with the
 * loader's message (mixcclGetLastError(NULL)). */
mixcclResult_t mixcclGetProcessAdaptor(const mixcclAdaptor_v2_t** adaptor);

#ifdef __cplusplus
}
#endif

#endif /* MIXCCL_ADAPTOR_H_ */
