// The nccl plugin: its table passes the loader's check whatever the machine; without a GPU its
// init() fails with a message that says why; with one, a 1-rank AllReduce on device memory
// gives the right result.
#include <dlfcn.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstring>
#include <string>
#include <vector>

#include "adaptors/adaptor_loader.h"
#include "adaptors/table_v2.h"
#include "base/error.h"

#ifndef NCCL_PLUGIN_FILE
#error "NCCL_PLUGIN_FILE (path of libmixccl-adaptor-nccl.so) must be defined"
#endif

namespace {

// A GPU driver node is what makes a CUDA device usable at all.
bool machineHasGpu() { return access("/dev/nvidiactl", F_OK) == 0; }

const mixcclAdaptor_v2_t* openTable() {
  void* h = dlopen(NCCL_PLUGIN_FILE, RTLD_NOW | RTLD_LOCAL);
  if (h == nullptr) return nullptr;
  return static_cast<const mixcclAdaptor_v2_t*>(dlsym(h, MIXCCL_ADAPTOR_SYMBOL));
}

mixcclResult_t singleAllGather(void*, const void* mine, void* all, size_t bytes) {
  std::memcpy(all, mine, bytes);
  return mixcclSuccess;
}

}  // namespace

TEST(NcclAdaptor, TableIsValid) {
  const mixcclAdaptor_v2_t* t = openTable();
  ASSERT_NE(t, nullptr) << dlerror();
  mixccl::AdaptorTable converted;
  EXPECT_EQ(mixccl::adaptorTableFromV2(t, "nccl", &converted), "");
  EXPECT_EQ(t->size, sizeof(mixcclAdaptor_v2_t));
  EXPECT_EQ(t->memoryKind, MIXCCL_ADAPTOR_DEVICE_MEMORY);
  // Its own runtime, library, NCCL's five collectives and send/recv; AlltoAll, Gather and
  // Scatter are left to mixccl (composed from send/recv).
  EXPECT_FALSE(converted.hostRuntimeFilled);
  EXPECT_TRUE(converted.hasNativeLibrary());
  EXPECT_TRUE(converted.hasPointToPoint());
  EXPECT_NE(converted.reduceScatter, nullptr);
  EXPECT_EQ(converted.alltoAll, nullptr);
}

TEST(NcclAdaptor, InitFailsClearlyWithoutGpu) {
  if (machineHasGpu()) GTEST_SKIP() << "a GPU is present: see OneRankAllReduceOnGpu";
  const mixccl::Adaptor* a = nullptr;
  ASSERT_EQ(mixccl::loadAdaptor("nccl", &a), mixcclSystemError);
  const std::string msg = mixccl::threadLastError();
  EXPECT_NE(msg.find("libmixccl-adaptor-nccl.so"), std::string::npos) << msg;
  EXPECT_NE(msg.find("init failed: nccl adaptor: "), std::string::npos) << msg;
  // Either a library is missing (named) or the runtime says why there is no device.
  bool clear = msg.find("no usable CUDA device (cudaGetDeviceCount: ") != std::string::npos ||
               msg.find("cannot load the CUDA runtime (libcudart") != std::string::npos ||
               msg.find("cannot load NCCL (libnccl") != std::string::npos;
  EXPECT_TRUE(clear) << msg;
  // Cached: the second call gives the same answer without a second init.
  EXPECT_EQ(mixccl::loadAdaptor("nccl", &a), mixcclSystemError);
  EXPECT_EQ(mixccl::threadLastError(), msg);
  EXPECT_EQ(mixccl::detectAdaptorName(), "host");
}

TEST(NcclAdaptor, OneRankAllReduceOnGpu) {
  if (!machineHasGpu()) GTEST_SKIP() << "no GPU on this machine";
  const mixccl::Adaptor* a = nullptr;
  ASSERT_EQ(mixccl::loadAdaptor("nccl", &a), mixcclSuccess) << mixccl::threadLastError();
  const mixccl::AdaptorTable* t = a->table;
  EXPECT_EQ(mixccl::detectAdaptorName(), "nccl");
  int count = 0;
  ASSERT_EQ(t->getDeviceCount(&count), mixcclSuccess) << t->lastError();
  ASSERT_GT(count, 0);
  char bus[64] = {0};
  ASSERT_EQ(t->getPciBusId(0, bus, sizeof bus), mixcclSuccess) << t->lastError();
  EXPECT_GT(std::strlen(bus), 0u);
  char id[MIXCCL_ADAPTOR_UNIQUE_ID_BYTES];
  ASSERT_EQ(t->getUniqueId(id), mixcclSuccess) << t->lastError();
  mixcclAdaptorServices_t services{nullptr, singleAllGather, nullptr};
  void* comm = nullptr;
  ASSERT_EQ(t->commInitRank(&comm, 1, id, 0, 0, &services), mixcclSuccess) << t->lastError();
  void* stream = nullptr;
  ASSERT_EQ(t->streamCreate(&stream), mixcclSuccess) << t->lastError();
  const size_t n = 1 << 20;
  std::vector<float> host(n);
  for (size_t i = 0; i < n; ++i) host[i] = static_cast<float>(i % 1000);
  void *dsend = nullptr, *drecv = nullptr;
  ASSERT_EQ(t->memAlloc(&dsend, n * sizeof(float)), mixcclSuccess) << t->lastError();
  ASSERT_EQ(t->memAlloc(&drecv, n * sizeof(float)), mixcclSuccess) << t->lastError();
  ASSERT_EQ(t->memcpyAsync(dsend, host.data(), n * sizeof(float), mixcclCopyHostToDevice, stream),
            mixcclSuccess);
  ASSERT_EQ(t->allReduce(dsend, drecv, n, mixcclFloat32, mixcclSum, comm, stream), mixcclSuccess)
      << t->lastError();
  // A host function and an event after the collective, as mixccl's completion path uses them.
  static int hostFnRan = 0;
  ASSERT_EQ(t->launchHostFunc(stream, [](void* p) { *static_cast<int*>(p) = 1; }, &hostFnRan),
            mixcclSuccess);
  void* event = nullptr;
  ASSERT_EQ(t->eventCreate(&event), mixcclSuccess);
  ASSERT_EQ(t->eventRecord(event, stream), mixcclSuccess);
  std::vector<float> out(n, -1.0f);
  ASSERT_EQ(t->memcpyAsync(out.data(), drecv, n * sizeof(float), mixcclCopyDeviceToHost, stream),
            mixcclSuccess);
  ASSERT_EQ(t->streamSynchronize(stream), mixcclSuccess) << t->lastError();
  int done = 0;
  ASSERT_EQ(t->eventQuery(event, &done), mixcclSuccess);
  EXPECT_EQ(done, 1);
  EXPECT_EQ(hostFnRan, 1);
  EXPECT_EQ(out, host);  // one rank: the sum is the input
  t->eventDestroy(event);
  t->memFree(dsend);
  t->memFree(drecv);
  t->streamDestroy(stream);
  EXPECT_EQ(t->commDestroy(comm), mixcclSuccess) << t->lastError();
}
