// The entries of the adaptor tables in groups, as X-macro lists, so that checking a plugin's
// table and copying it into mixccl's own (adaptor_table.h) name each entry once.
#pragma once

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
