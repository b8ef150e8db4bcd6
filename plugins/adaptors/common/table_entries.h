// Fills the entries of a mixcclAdaptor_v2_t from functions in scope that carry the entries'
// own names, so every plugin lists its table the same way (and a new entry is added once).
// Groups follow the ABI's rules (mixccl_adaptor.h): a plugin sets the groups it has and leaves
// the others NULL.
#pragma once

#include <cstring>

#include "mixccl_adaptor.h"
#include "plugin_support.h"

namespace mixccl_plugin {

// What every plugin's lastError entry returns: the calling thread's last message.
inline const char* lastErrorEntry() { return lastErrorString().c_str(); }

// The start of every table: zeroed (every optional entry NULL), the size and ABI version this
// plugin is compiled with, its name, memory kind and init entry, and the shared lastError.
inline mixcclAdaptor_v2_t tableHeader(const char* name, mixcclAdaptorMemoryKind_t memoryKind,
                                      mixcclResult_t (*init)(void)) {
  mixcclAdaptor_v2_t t;
  std::memset(&t, 0, sizeof t);
  t.size = sizeof t;
  t.abiVersion = MIXCCL_ADAPTOR_ABI_VERSION;
  t.name = name;
  t.memoryKind = memoryKind;
  t.init = init;
  t.lastError = lastErrorEntry;
  return t;
}

}  // namespace mixccl_plugin

// The device runtime, for plugins with a real (or simulated) device runtime. Host-memory
// plugins leave it out: mixccl supplies its host runtime.
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

// The native library: its communicator and what it supports.
#define MIXCCL_NATIVE_LIBRARY_ENTRIES(t)  \
  do {                                    \
    (t).supports = supports;              \
    (t).getUniqueId = getUniqueId;        \
    (t).commInitRank = commInitRank;      \
    (t).commDestroy = commDestroy;        \
    (t).commAbort = commAbort;            \
  } while (0)

// NCCL's five collectives (AlltoAll, Gather and Scatter are set one by one where a library
// has them; mixccl composes them otherwise).
#define MIXCCL_NCCL_COLLECTIVE_ENTRIES(t) \
  do {                                    \
    (t).allReduce = allReduce;            \
    (t).allGather = allGather;            \
    (t).reduceScatter = reduceScatter;    \
    (t).broadcast = broadcast;            \
    (t).reduce = reduce;                  \
  } while (0)

// Point to point, grouped.
#define MIXCCL_POINT_TO_POINT_ENTRIES(t)  \
  do {                                    \
    (t).send = send;                      \
    (t).recv = recv;                      \
    (t).groupStart = groupStart;          \
    (t).groupEnd = groupEnd;              \
  } while (0)
