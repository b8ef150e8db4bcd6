// The entries of the adaptor tables in groups, as X-macro lists, so that checking a plugin's
// table and copying it into mixccl's own (adaptor_table.h) name each entry once.
#pragma once

#include "adaptors/adaptor_table.h"

#define MIXCCL_RUNTIME_ENTRIES(X)                                                          \
  X(getDeviceCount) X(setDevice) X(getDevice) X(getPciBusId) X(memAlloc) X(memFree)        \
  X(hostAlloc) X(hostFree) X(memcpyAsync) X(streamCreate) X(streamDestroy)                 \
  X(streamSynchronize) X(eventCreate) X(eventDestroy) X(eventRecord) X(eventQuery)         \
  X(streamWaitEvent) X(launchHostFunc)

// supports is not listed: its signature differs between versions 1 and 2.
#define MIXCCL_LIBRARY_ENTRIES(X) X(getUniqueId) X(commInitRank) X(commDestroy) X(commAbort)

// The collectives of both versions (NCCL's five), then those version 2 added.
#define MIXCCL_V1_COLLECTIVE_ENTRIES(X) \
  X(allReduce) X(allGather) X(reduceScatter) X(broadcast) X(reduce)
#define MIXCCL_V2_ONLY_COLLECTIVE_ENTRIES(X) X(alltoAll) X(gather) X(scatter)

#define MIXCCL_POINT_TO_POINT_ENTRIES(X) X(send) X(recv) X(groupStart) X(groupEnd)

namespace mixccl {

// What a plugin table of either version (V: mixcclAdaptor_v1_t or _v2_t) shares with
// mixccl's: the header fields and the entries both versions have. supports and the
// version-2-only collectives are the caller's.
template <typename V>
AdaptorTable copySharedEntries(const V& v) {
  AdaptorTable t;
  t.abiVersion = v.abiVersion;
  t.name = v.name;
  t.memoryKind = v.memoryKind;
  t.init = v.init;
  t.pluginLastError = v.lastError;
#define MIXCCL_COPY(f) t.f = v.f;
  MIXCCL_RUNTIME_ENTRIES(MIXCCL_COPY)
  MIXCCL_LIBRARY_ENTRIES(MIXCCL_COPY)
  MIXCCL_V1_COLLECTIVE_ENTRIES(MIXCCL_COPY)
  MIXCCL_POINT_TO_POINT_ENTRIES(MIXCCL_COPY)
#undef MIXCCL_COPY
  return t;
}

}  // namespace mixccl
