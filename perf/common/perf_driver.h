// The shared driver of the *_perf tools. A tool describes its collective with a CollDesc and
// calls perfMain.
#ifndef MIXCCL_PERF_DRIVER_H_
#define MIXCCL_PERF_DRIVER_H_

#include <cstddef>

#include "mixccl.h"
#include "perf_data.h"

namespace mixperf {

// Element counts of one test size, as nccl-tests defines them.
struct Counts {
  size_t send = 0;              // elements in the send buffer
  size_t recv = 0;              // elements in the receive buffer
  size_t param = 0;             // the count argument of the call (and the table's count column)
  size_t sendInplaceOffset = 0; // in-place: sendbuff = recvbuff + sendInplaceOffset*rank
  size_t recvInplaceOffset = 0; // in-place: recvbuff = recvbuff + recvInplaceOffset*rank
};

// What one rank sends and expects for one checked run.
struct DataJob {
  const DataPlan* plan;
  int rank, nranks, root;
  Counts counts;
};

struct CollDesc {
  const char* name;   // "AllReduce" (messages)
  bool reduction;     // takes a reduction op (plans reduce data, the redop column shows the op)
  bool rooted;        // takes a root (-r applies, the root column shows it)
  bool inPlaceChecked;  // false: in-place results are timed but not checked (#wrong N/A)
  void (*getCounts)(size_t count, size_t eltSize, int nranks, Counts* c);
  // algbw = algBytesPerParam(nranks) * param * eltSize / time; busbw = algbw * busFactor(nranks).
  double (*algFactor)(int nranks);
  double (*busFactor)(int nranks);
  // stream: the rank's device stream (NULL on host memory).
  mixcclResult_t (*run)(const void* send, void* recv, size_t count, mixcclDataType_t type,
                        mixcclRedOp_t op, int root, mixcclComm_t comm, int rank, int nranks,
                        mixcclStream_t stream);
  // Writes this rank's send data (counts.send elements) at send (host memory: the driver copies
  // it to the device where the buffers live there).
  void (*fillSend)(const DataJob& job, void* send);
  // Writes the expected receive buffer (counts.recv elements) at expected. Returns false when this
  // rank's receive buffer is not checked (non-root ranks of Reduce and Gather).
  bool (*fillExpected)(const DataJob& job, void* expected);
};

// Parses the command line, becomes a rank (mixccl_launch), runs the sweep, prints the table and
// returns the process exit status.
int perfMain(int argc, char** argv, const CollDesc& coll);

}  // namespace mixperf

#endif  // MIXCCL_PERF_DRIVER_H_
