#include "adaptors/public_table.h"

#include "adaptors/host_runtime.h"

namespace mixccl {

mixcclAdaptor_v2_t publicTableOf(const AdaptorTable& t) {
  mixcclAdaptor_v2_t p{};
  p.size = sizeof(p);
  p.abiVersion = MIXCCL_ADAPTOR_ABI_VERSION;
  p.name = t.name;
  p.memoryKind = t.memoryKind;
  // A program calls the runtime entries; where they are mixccl's host runtime, so is the
  // message of their failures.
  p.lastError = t.hostRuntimeFilled ? &hostRuntimeLastError : t.pluginLastError;
  p.supports = t.supportsByKind;  // NULL for a version 1 plugin (it names collectives by string)
  p.init = t.init;
  p.getDeviceCount = t.getDeviceCount;
  p.setDevice = t.setDevice;
  p.getDevice = t.getDevice;
  p.getPciBusId = t.getPciBusId;
  p.memAlloc = t.memAlloc;
  p.memFree = t.memFree;
  p.hostAlloc = t.hostAlloc;
  p.hostFree = t.hostFree;
  p.memcpyAsync = t.memcpyAsync;
  p.streamCreate = t.streamCreate;
  p.streamDestroy = t.streamDestroy;
  p.streamSynchronize = t.streamSynchronize;
  p.eventCreate = t.eventCreate;
  p.eventDestroy = t.eventDestroy;
  p.eventRecord = t.eventRecord;
  p.eventQuery = t.eventQuery;
  p.streamWaitEvent = t.streamWaitEvent;
  p.launchHostFunc = t.launchHostFunc;
  p.getUniqueId = t.getUniqueId;
  p.commInitRank = t.commInitRank;
  p.commDestroy = t.commDestroy;
  p.commAbort = t.commAbort;
  p.allReduce = t.allReduce;
  p.allGather = t.allGather;
  p.reduceScatter = t.reduceScatter;
  p.broadcast = t.broadcast;
  p.reduce = t.reduce;
  p.alltoAll = t.alltoAll;
  p.gather = t.gather;
  p.scatter = t.scatter;
  p.send = t.send;
  p.recv = t.recv;
  p.groupStart = t.groupStart;
  p.groupEnd = t.groupEnd;
  return p;
}

}  // namespace mixccl
