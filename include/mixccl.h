/*
 * mixccl: a unified heterogeneous collective communication library.
 *
 * The public C ABI. It has NCCL's shape: a program written against NCCL ports by renaming
 * the "nccl" prefix to "mixccl"; result codes, datatypes and reduction ops have NCCL's values.
 *
 * Completion semantics on host memory
 * -----------------------------------
 * A stream argument is a vendor stream (cudaStream_t, hipStream_t, ...) passed through to the
 * rank's device adaptor. On host (CPU) memory the stream must be NULL, and then every
 * communication call returns only once the operation is complete: the receive buffers hold the
 * result and the send buffers may be reused. Inside mixcclGroupStart/mixcclGroupEnd the calls
 * are only recorded; they are executed, and complete, when the outermost mixcclGroupEnd returns.
 *
 * Errors
 * ------
 * Every call returns a mixcclResult_t. A failed call logs one message (see MIXCCL_DEBUG) and
 * stores it for mixcclGetLastError. Bad arguments return mixcclInvalidArgument or
 * mixcclInvalidUsage, send nothing, and leave the communicator usable. A failed or unreachable
 * peer turns pending and later operations into mixcclRemoteError or mixcclTimeout within the
 * communicator's timeout (MIXCCL_TIMEOUT_S or mixcclConfig_t.timeout).
 *
 * Thread safety: like NCCL, a communicator must not be used by two threads at once, except for
 * mixcclCommAbort, mixcclCommRevoke and mixcclCommGetAsyncError, which may be called from any
 * thread, and for point-to-point on host memory: mixcclSend, mixcclRecv (also in groups of
 * them only) and mixcclIprobe may run on several threads at once, as long as the sends to one
 * peer are made by one thread at a time, and the receives from one peer likewise (their order
 * is what matches them). One of the waiting threads moves the bytes of all of them.
 */
#ifndef MIXCCL_H_
#define MIXCCL_H_

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define MIXCCL_MAJOR 0
#define MIXCCL_MINOR 1
#define MIXCCL_PATCH 0
#define MIXCCL_SUFFIX ""
#define MIXCCL_VERSION(X, Y, Z) ((X) * 10000 + (Y) * 100 + (Z))
#define MIXCCL_VERSION_CODE MIXCCL_VERSION(MIXCCL_MAJOR, MIXCCL_MINOR, MIXCCL_PATCH)

/* Opaque communicator handle. */
typedef struct mixcclComm* mixcclComm_t;

/* A vendor stream (cudaStream_t, ...); NULL on host memory. */
typedef void* mixcclStream_t;

#define MIXCCL_UNIQUE_ID_BYTES 128
/* Identifies one rendezvous. Holds the root's address and a random secret that every
 * connection of the communicator must prove it knows; treat it like a password. */
typedef struct {
  char internal[MIXCCL_UNIQUE_ID_BYTES];
} mixcclUniqueId;

typedef enum {
  mixcclSuccess = 0,
  mixcclUnhandledDeviceError = 1,
  mixcclSystemError = 2,
  mixcclInternalError = 3,
  mixcclInvalidArgument = 4,
  mixcclInvalidUsage = 5,
  mixcclRemoteError = 6,
  mixcclInProgress = 7,
  mixcclTimeout = 8,
  mixcclNumResults = 9
} mixcclResult_t;

typedef enum {
  mixcclInt8 = 0,
  mixcclChar = 0,
  mixcclUint8 = 1,
  mixcclInt32 = 2,
  mixcclInt = 2,
  mixcclUint32 = 3,
  mixcclInt64 = 4,
  mixcclUint64 = 5,
  mixcclFloat16 = 6,
  mixcclHalf = 6,
  mixcclFloat32 = 7,
  mixcclFloat = 7,
  mixcclFloat64 = 8,
  mixcclDouble = 8,
  mixcclBfloat16 = 9,
  mixcclFloat8e4m3 = 10,
  mixcclFloat8e5m2 = 11,
  mixcclNumTypes = 12
} mixcclDataType_t;

/* Integer Avg truncates like integer division. Float16, Bfloat16 and the Float8 types are
 * converted to float32 for each reduction and rounded once to the wire type. */
typedef enum {
  mixcclSum = 0,
  mixcclProd = 1,
  mixcclMax = 2,
  mixcclMin = 3,
  mixcclAvg = 4,
  mixcclNumOps = 5
} mixcclRedOp_t;

/* Where the scalar of mixcclRedOpCreatePreMulSum lives (NCCL's values). */
typedef enum {
  mixcclScalarDevice = 0,        /* a pointer into the rank's memory, read when each call runs */
  mixcclScalarHostImmediate = 1  /* a host pointer, read once at creation */
} mixcclScalarResidence_t;

#define MIXCCL_SPLIT_NOCOLOR (-1)
#define MIXCCL_CONFIG_UNDEF_INT INT32_MIN
#define MIXCCL_CONFIG_UNDEF_PTR NULL

/* Per-communicator configuration. Always start from MIXCCL_CONFIG_INITIALIZER; fields left
 * undefined take their value from the environment (docs/environment.md) or the default. */
typedef struct mixcclConfig_v1 {
  size_t size;           /* sizeof(mixcclConfig_t), set by the initializer */
  unsigned int magic;    /* MIXCCL_CONFIG_MAGIC */
  unsigned int version;  /* MIXCCL_VERSION_CODE of the header the caller compiled against */
  int blocking;          /* 1 (default): init and calls block; 0: they may return InProgress */
  int timeout;           /* seconds every wait is bounded by; default MIXCCL_TIMEOUT_S or 300 */
  const char* netName;   /* transport: "socket" or "shm"; unset: shm within a host, else socket */
  const char* commName;  /* a name shown in logs */
  const char* adaptor;   /* device adaptor: "host" (default); see MIXCCL_ADAPTOR */
  int nsocksPerPeer;     /* TCP connections to each peer served by sockets, 1..16; default
                            MIXCCL_NSOCKS_PERPEER, else 1 on the same host and 2 across hosts */
  const char* connect;   /* when pairs connect: "auto", "eager" (at init) or "lazy" (on first
                            use), as MIXCCL_CONNECT, which it overrides; every rank must agree */
} mixcclConfig_t;

#define MIXCCL_CONFIG_MAGIC 0x6d697863u /* "mixc" */
#define MIXCCL_CONFIG_INITIALIZER                                                          \
  {                                                                                        \
    sizeof(mixcclConfig_t), MIXCCL_CONFIG_MAGIC, MIXCCL_VERSION_CODE,                      \
        MIXCCL_CONFIG_UNDEF_INT, MIXCCL_CONFIG_UNDEF_INT, MIXCCL_CONFIG_UNDEF_PTR,         \
        MIXCCL_CONFIG_UNDEF_PTR, MIXCCL_CONFIG_UNDEF_PTR, MIXCCL_CONFIG_UNDEF_INT,         \
        MIXCCL_CONFIG_UNDEF_PTR                                                            \
  }

/* Version of the library that is loaded, as MIXCCL_VERSION_CODE. */
mixcclResult_t mixcclGetVersion(int* version);

/* Creates a unique id and starts the rendezvous root in this process. Call it on one rank and
 * pass the id to all the others. With MIXCCL_COMM_ID=host:port set, every rank may call it
 * and gets the same id, and rank 0 hosts the root at that address. */
mixcclResult_t mixcclGetUniqueId(mixcclUniqueId* uniqueId);

mixcclResult_t mixcclCommInitRank(mixcclComm_t* comm, int nranks, mixcclUniqueId commId, int rank);
mixcclResult_t mixcclCommInitRankConfig(mixcclComm_t* comm, int nranks, mixcclUniqueId commId,
                                        int rank, mixcclConfig_t* config);
/* mixcclCommInitRankConfig with nId rendezvous roots instead of one (NCCL's
 * ncclCommInitRankScalable), so that no one process serves every rank at init: commIds holds nId
 * ids, each from mixcclGetUniqueId (best on different hosts), in the same order on every rank.
 * The ranks form nId contiguous blocks, as even as possible (block k: ranks k*nranks/nId to
 * (k+1)*nranks/nId - 1), and block k rendezvous through commIds[k]. 1 <= nId <= nranks;
 * config NULL: the defaults. */
mixcclResult_t mixcclCommInitRankScalable(mixcclComm_t* newcomm, int nranks, int myrank, int nId,
                                          mixcclUniqueId* commIds, mixcclConfig_t* config);
/* One process, one rank per entry of devlist (NULL: devices 0..ndev-1). */
mixcclResult_t mixcclCommInitAll(mixcclComm_t* comms, int ndev, const int* devlist);
/* Collective over comm: ranks with the same color form a new communicator, ordered by key then
 * by old rank. color MIXCCL_SPLIT_NOCOLOR gives *newcomm = NULL. config NULL: inherit comm's. */
mixcclResult_t mixcclCommSplit(mixcclComm_t comm, int color, int key, mixcclComm_t* newcomm,
                               mixcclConfig_t* config);
/* Flags of mixcclCommShrink (NCCL's values). */
#define MIXCCL_SHRINK_DEFAULT 0x00 /* comm is healthy: it stays usable beside the new one */
#define MIXCCL_SHRINK_ABORT 0x01   /* first stop comm's work (peers may have failed); comm can
                                      then only be destroyed */
/* Flags of mixcclCommRevoke: must be MIXCCL_REVOKE_DEFAULT. */
#define MIXCCL_REVOKE_DEFAULT 0x00
/* A new communicator of the ranks of comm that are not in excludeRanks (n entries, ranks of
 * comm), renumbered in their order in comm. Every surviving rank calls it with the same list;
 * excluded ranks do not call it. With MIXCCL_SHRINK_ABORT it works on a communicator whose peers
 * have failed (its pending work is stopped first); without, comm must be healthy and stays
 * usable. A survivor whose list differs makes it fail on the survivors (mixcclInvalidUsage,
 * naming both lists) within comm's timeout. config NULL: inherit comm's. It runs blocking:
 * *newcomm is ready when it returns. */
mixcclResult_t mixcclCommShrink(mixcclComm_t comm, const int* excludeRanks, int n,
                                mixcclComm_t* newcomm, mixcclConfig_t* config, int flags);
/* Stops all pending and future work on comm on this rank and on every rank it can still
 * reach (callable from any thread): their blocked and later calls return an error saying that
 * comm was revoked, and by which rank. comm can then be shrunk or destroyed. */
mixcclResult_t mixcclCommRevoke(mixcclComm_t comm, int flags);
/* An id for mixcclCommGrow, made on one rank of comm (its rendezvous root runs in this
 * process); hand it to the joining ranks like any unique id. One grow per id. */
mixcclResult_t mixcclCommGetUniqueId(mixcclComm_t comm, mixcclUniqueId* uniqueId);
/* A communicator of nranks ranks: comm's ranks keep their numbers and new ranks join. Every rank
 * of comm calls it with rank -1 (the one that made the id passes it, the others NULL); each
 * joining rank calls it with comm NULL, the id and its rank (comm's size or more). Joining ranks
 * authenticate with the id's secret. config NULL: comm's (a joining rank: the defaults; give it
 * the transport comm's ranks use). It runs blocking. comm stays usable. */
mixcclResult_t mixcclCommGrow(mixcclComm_t comm, int nranks, const mixcclUniqueId* uniqueId,
                              int rank, mixcclComm_t* newcomm, mixcclConfig_t* config);
/* Completes all outstanding operations; the communicator accepts no more work afterwards. */
mixcclResult_t mixcclCommFinalize(mixcclComm_t comm);
/* Frees the communicator. Never hangs, also after an error. */
mixcclResult_t mixcclCommDestroy(mixcclComm_t comm);
/* Stops all work at once (callable from any thread); blocked calls return with an error. */
mixcclResult_t mixcclCommAbort(mixcclComm_t comm);
/* Reports the state of asynchronous work: mixcclSuccess, mixcclInProgress, or the error (whose
 * message mixcclGetLastError then returns, for comm and for the calling thread). */
mixcclResult_t mixcclCommGetAsyncError(mixcclComm_t comm, mixcclResult_t* asyncError);
/* Registers size bytes at buff for comm's collectives: with this rank's domain's native library
 * where its adaptor can (the nccl adaptor: ncclCommRegister, NCCL 2.19 and later), so the library
 * may skip internal copies on that memory; otherwise the handle only records the buffer. *handle
 * is valid until mixcclCommDeregister(comm, *handle) or until comm is destroyed. */
mixcclResult_t mixcclCommRegister(const mixcclComm_t comm, void* buff, size_t size, void** handle);
mixcclResult_t mixcclCommDeregister(const mixcclComm_t comm, void* handle);

const char* mixcclGetErrorString(mixcclResult_t result);
/* The message of the last error on comm (or, with comm NULL, of the calling thread). */
const char* mixcclGetLastError(mixcclComm_t comm);

mixcclResult_t mixcclCommCount(const mixcclComm_t comm, int* count);
mixcclResult_t mixcclCommUserRank(const mixcclComm_t comm, int* rank);
mixcclResult_t mixcclCommDevice(const mixcclComm_t comm, int* device);

/* What the communicator chose, as text: writes the value of key (NUL-terminated) into value.
 * Keys:
 *   "transport.<peer>"        transport to that rank: "shm" or "socket"
 *   "algo.allreduce.<bytes>"  algorithm of an AllReduce of <bytes> per rank: "ring", "rd"
 *                             (recursive doubling), "rh" (recursive halving), "hierarchical"
 *                             (several domains) or "native" (the domain's own library)
 *   "algo.allgather.<bytes>"  algorithm of an AllGather whose whole result is <bytes>:
 *                             "ring", "rd", or "native"
 *   "algo.broadcast.<bytes>"  algorithm of a Broadcast (and "algo.reduce.<bytes>" of a
 *                             Reduce) of <bytes>: "tree" (binomial), "chain", "slots",
 *                             "hierarchical" or "native"
 *   "domains"                 the domain index of every rank, comma-separated ("0,1,1,1")
 *   "adaptor.<rank>"          that rank's device adaptor ("host", "gloo", ...)
 *   "memory"                  the memory this rank's buffers are in: "host" or "device"
 *                             (the adaptor's)
 *   "connect"                 "eager" (every pair connected at init) or "lazy" (on first
 *                             use; MIXCCL_CONNECT)
 *   "connected_peers"         how many peers this rank is connected to now
 * An unknown key, a rank out of range (or this rank for "transport."), or a value longer than
 * valueSize - 1 gives mixcclInvalidArgument with a message naming the key; value is then left
 * as it was and the communicator stays usable. Numbers are decimal. */
mixcclResult_t mixcclCommInspect(mixcclComm_t comm, const char* key, char* value,
                                 size_t valueSize);

/* Collectives. count is the element count per rank where NCCL says so (AllGather,
 * ReduceScatter, AlltoAll, Gather, Scatter). In-place when the buffers are the same pointer
 * (AllGather: sendbuff == recvbuff + rank*count; ReduceScatter: recvbuff == sendbuff +
 * rank*count; Gather and Scatter likewise at the root). */
mixcclResult_t mixcclAllReduce(const void* sendbuff, void* recvbuff, size_t count,
                               mixcclDataType_t datatype, mixcclRedOp_t op, mixcclComm_t comm,
                               mixcclStream_t stream);
mixcclResult_t mixcclBroadcast(const void* sendbuff, void* recvbuff, size_t count,
                               mixcclDataType_t datatype, int root, mixcclComm_t comm,
                               mixcclStream_t stream);
/* recvbuff may be NULL on ranks other than root. */
mixcclResult_t mixcclReduce(const void* sendbuff, void* recvbuff, size_t count,
                            mixcclDataType_t datatype, mixcclRedOp_t op, int root,
                            mixcclComm_t comm, mixcclStream_t stream);
mixcclResult_t mixcclAllGather(const void* sendbuff, void* recvbuff, size_t sendcount,
                               mixcclDataType_t datatype, mixcclComm_t comm,
                               mixcclStream_t stream);
mixcclResult_t mixcclReduceScatter(const void* sendbuff, void* recvbuff, size_t recvcount,
                                   mixcclDataType_t datatype, mixcclRedOp_t op,
                                   mixcclComm_t comm, mixcclStream_t stream);
/* count elements go to each peer: sendbuff and recvbuff hold nranks*count elements. */
mixcclResult_t mixcclAlltoAll(const void* sendbuff, void* recvbuff, size_t count,
                              mixcclDataType_t datatype, mixcclComm_t comm,
                              mixcclStream_t stream);
/* recvbuff (nranks*count elements) is used at root only. */
mixcclResult_t mixcclGather(const void* sendbuff, void* recvbuff, size_t count,
                            mixcclDataType_t datatype, int root, mixcclComm_t comm,
                            mixcclStream_t stream);
/* sendbuff (nranks*count elements) is used at root only. */
mixcclResult_t mixcclScatter(const void* sendbuff, void* recvbuff, size_t count,
                             mixcclDataType_t datatype, int root, mixcclComm_t comm,
                             mixcclStream_t stream);

/* A pre-multiplied sum: every rank's input is multiplied by *scalar (of datatype), then summed.
 * The op is valid on comm only, for collectives of that datatype, until mixcclRedOpDestroy.
 * mixcclScalarDevice reads the scalar from the rank's memory when each call runs (host memory on
 * host adaptors, device memory on device adaptors: copied on the call's stream). Scaling runs in
 * host memory: a collective on device memory with such an op is staged through host memory
 * (in stream order), also where the vendor's library would run it otherwise. Integers multiply modulo 2^bits; Float16, Bfloat16 and Float8 multiply in
 * float32 and round once (the product), then the sum rounds as for mixcclSum. */
mixcclResult_t mixcclRedOpCreatePreMulSum(mixcclRedOp_t* op, void* scalar,
                                          mixcclDataType_t datatype,
                                          mixcclScalarResidence_t residence, mixcclComm_t comm);
mixcclResult_t mixcclRedOpDestroy(mixcclRedOp_t op, mixcclComm_t comm);

/* Point to point. Sends and receives between two ranks match in the order they are issued.
 * Put matching sends and receives into one group to avoid deadlock. */
mixcclResult_t mixcclSend(const void* sendbuff, size_t count, mixcclDataType_t datatype,
                          int peer, mixcclComm_t comm, mixcclStream_t stream);
mixcclResult_t mixcclRecv(void* recvbuff, size_t count, mixcclDataType_t datatype, int peer,
                          mixcclComm_t comm, mixcclStream_t stream);

/* Like MPI_Iprobe for one source, without tags: without blocking, whether the next message from
 * peer that no receive posted so far matches has begun to arrive (*flag 1, *bytes its size in
 * bytes) or not (*flag 0, *bytes 0). Nothing is received: the next mixcclRecv from peer takes
 * it. Zero-byte sends carry no message. A mixccl extension (NCCL has no probe), for receives
 * from any source built above the library; host-memory adaptors over the socket or
 * shared-memory transport only (others: mixcclInvalidUsage), never inside a group. */
mixcclResult_t mixcclIprobe(int peer, int* flag, size_t* bytes, mixcclComm_t comm);

/* Groups nest; the work recorded inside runs at the outermost GroupEnd, point-to-point
 * operations of the group all in flight together. */
mixcclResult_t mixcclGroupStart(void);
mixcclResult_t mixcclGroupEnd(void);

#ifdef __cplusplus
}
#endif

#endif /* MIXCCL_H_ */
