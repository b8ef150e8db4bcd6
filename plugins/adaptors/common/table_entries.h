// Fills the entries of a mixcclAdaptor_v1_t from functions in scope that carry the entries'
// own names, so every plugin lists its table the same way (and a new entry is added once).
#pragma once

#include "mixccl_adaptor.h"

// The device runtime, for plugins with a real (or simulated) device runtime.
#define MIXCCL_DEVICE_RUNTIME_ENTRIES(t)  \
  do {                                    \
    (t).getDeviceCount = getDeviceCount;  \
    (t).setDevice = setDevice;            \
    (t).getDevice = getDevice;            \
    (t).getPciBusId = getPciBusId;        \
    (t).memAlloc = memAlloc;              \
    (t).memFree = memFree;                \
    (t).hostAlloc = hostAlloc;            \
    (t).hostFree = hostFree;              \
    (t).memcpyAsync = memcpyAsync;        \
    (t).streamCreate = streamCreate;      \
    (t).streamDestroy = streamDestroy;    \
    (t).streamSynchronize = streamSynchronize; \
    (t).eventCreate = eventCreate;        \
    (t).eventDestroy = eventDestroy;      \
    (t).eventRecord = eventRecord;        \
    (t).eventQuery = eventQuery;          \
    (t).streamWaitEvent = streamWaitEvent; \
    (t).launchHostFunc = launchHostFunc;  \
  } while (0)

// The native collectives.
#define MIXCCL_COLLECTIVE_ENTRIES(t)      \
  do {                                    \
    (t).supports = supports;              \
    (t).getUniqueId = getUniqueId;        \
    (t).commInitRank = commInitRank;      \
    (t).commDestroy = commDestroy;        \
    (t).commAbort = commAbort;            \
    (t).allReduce = allReduce;            \
    (t).allGather = allGather;            \
    (t).reduceScatter = reduceScatter;    \
    (t).broadcast = broadcast;            \
    (t).reduce = reduce;                  \
    (t).send = send;                      \
    (t).recv = recv;                      \
    (t).groupStart = groupStart;          \
    (t).groupEnd = groupEnd;              \
  } while (0)
