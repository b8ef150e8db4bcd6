// What communicators do with the entries a version 2 table leaves NULL, on fake plugins of
// FAKE_DIR_A (tests/adaptors/CMakeLists.txt):
//   fakenoruntime  host memory, no runtime, no native library: mixccl's runtime and algorithms
//   fakedev        device memory, a one-rank native library with allReduce only
//   fakedevp2p     the same with send/recv: AlltoAll, Gather, Scatter composed from them
#include <dlfcn.h>
#include <gtest/gtest.h>

#include <string>
#include <thread>
#include <vector>

#include "mixccl.h"

namespace {

// Forms nranks communicators on adaptor, one thread per rank (init is collective).
std::vector<mixcclComm_t> formComms(int nranks, const char* adaptor) {
  mixcclUniqueId id;
  EXPECT_EQ(mixcclGetUniqueId(&id), mixcclSuccess);
  std::vector<mixcclComm_t> comms(nranks, nullptr);
  std::vector<mixcclResult_t> results(nranks, mixcclInternalError);
  std::vector<std::thread> threads;
  for (int r = 0; r < nranks; ++r)
    threads.emplace_back([&, r] {
      mixcclConfig_t config = MIXCCL_CONFIG_INITIALIZER;
      config.adaptor = adaptor;
      config.timeout = 30;
      results[r] = mixcclCommInitRankConfig(&comms[r], nranks, id, r, &config);
    });
  for (auto& t : threads) t.join();
  for (int r = 0; r < nranks; ++r)
    EXPECT_EQ(results[r], mixcclSuccess) << "rank " << r << ": " << mixcclGetLastError(nullptr);
  return comms;
}

void destroyAll(const std::vector<mixcclComm_t>& comms) {
  for (mixcclComm_t c : comms) {
    if (c == nullptr) continue;
    EXPECT_EQ(mixcclCommDestroy(c), mixcclSuccess);
  }
}

// A plugin with nothing but its name, memory kind, init and lastError is a working adaptor of
// host memory: mixccl's host runtime and mixccl's own algorithms serve its ranks.
TEST(OptionalEntries, HostPluginWithoutRuntimeOrLibraryRunsCollectives) {
  const int n = 2;
  std::vector<mixcclComm_t> comms = formComms(n, "fakenoruntime");
  ASSERT_TRUE(comms[0] && comms[1]);
  std::vector<std::vector<float>> out(n, std::vector<float>(2 * n));
  std::vector<mixcclResult_t> results(n, mixcclInternalError);
  std::vector<std::thread> threads;
  for (int r = 0; r < n; ++r)
    threads.emplace_back([&, r] {
      float in[4] = {float(r + 1), float(10 * (r + 1)), float(r), float(r)};
      results[r] = mixcclAllReduce(in, out[r].data(), 2, mixcclFloat32, mixcclSum, comms[r], nullptr);
      if (results[r] == mixcclSuccess)
        results[r] = mixcclAlltoAll(in, out[r].data() + 2, 1, mixcclFloat32, comms[r], nullptr);
    });
  for (auto& t : threads) t.join();
  for (int r = 0; r < n; ++r) {
    ASSERT_EQ(results[r], mixcclSuccess) << mixcclGetLastError(comms[r]);
    EXPECT_EQ(out[r][0], 3.0f);   // 1 + 2
    EXPECT_EQ(out[r][1], 30.0f);  // 10 + 20
    // AlltoAll of one element: block p of rank q is in[p] of q, i.e. q+1 (p 0) or 10(q+1).
    EXPECT_EQ(out[r][2], r == 0 ? 1.0f : 10.0f);
    EXPECT_EQ(out[r][3], r == 0 ? 2.0f : 20.0f);
  }
  destroyAll(comms);
}

// Device memory cannot take mixccl's own algorithms: a collective the library lacks is
// refused with a message naming the call, the adaptor and what is missing; the communicator
// stays usable.
TEST(OptionalEntries, DeviceCollectiveMissingFromTheLibraryIsRefused) {
  std::vector<mixcclComm_t> comms = formComms(1, "fakedev");
  mixcclComm_t comm = comms[0];
  ASSERT_NE(comm, nullptr);
  float in[2] = {4, 5}, out[2] = {0, 0};
  ASSERT_EQ(mixcclAllReduce(in, out, 2, mixcclFloat32, mixcclSum, comm, nullptr), mixcclSuccess)
      << mixcclGetLastError(comm);
  EXPECT_EQ(out[1], 5.0f);

  EXPECT_EQ(mixcclAllGather(in, out, 1, mixcclFloat32, comm, nullptr), mixcclInvalidUsage);
  EXPECT_STREQ(mixcclGetLastError(comm),
               "mixcclAllGather: the fakedev adaptor's native library has no allgather (its "
               "table leaves it NULL), and mixccl's own algorithms cannot run on device memory");
  EXPECT_EQ(mixcclAlltoAll(in, out, 1, mixcclFloat32, comm, nullptr), mixcclInvalidUsage);
  EXPECT_STREQ(mixcclGetLastError(comm),
               "mixcclAlltoAll: the fakedev adaptor's native library has no alltoall and no "
               "send/recv to compose it from (its table leaves them NULL), and mixccl's own "
               "algorithms cannot run on device memory");
  EXPECT_EQ(mixcclSend(in, 1, mixcclFloat32, 0, comm, nullptr), mixcclInvalidUsage);
  EXPECT_STREQ(mixcclGetLastError(comm),
               "mixcclSend: the fakedev adaptor's native library has no send/recv (its table "
               "leaves them NULL), and mixccl's own transport cannot move device memory");

  out[0] = 0;
  EXPECT_EQ(mixcclAllReduce(in, out, 2, mixcclFloat32, mixcclSum, comm, nullptr), mixcclSuccess);
  EXPECT_EQ(out[0], 4.0f);
  destroyAll(comms);
}

// AlltoAll, Gather and Scatter the library lacks are composed from its send/recv.
TEST(OptionalEntries, DeviceAlltoAllGatherScatterAreComposedFromSendRecv) {
  std::vector<mixcclComm_t> comms = formComms(1, "fakedevp2p");
  mixcclComm_t comm = comms[0];
  ASSERT_NE(comm, nullptr);
  // The plugin counts the send/recv pairs its groups matched (one rank: each call is one pair).
  void* plugin = dlopen(FAKE_DIR_A "/libmixccl-adaptor-fakedevp2p.so", RTLD_NOW | RTLD_NOLOAD);
  ASSERT_NE(plugin, nullptr) << dlerror();
  const int* matched = static_cast<const int*>(dlsym(plugin, "fakeSendsMatched"));
  ASSERT_NE(matched, nullptr) << dlerror();
  const int before = *matched;
  int32_t in[3] = {7, 8, 9}, out[3] = {0, 0, 0};
  ASSERT_EQ(mixcclAlltoAll(in, out, 3, mixcclInt32, comm, nullptr), mixcclSuccess)
      << mixcclGetLastError(comm);
  EXPECT_EQ(out[2], 9);
  out[0] = 0;
  ASSERT_EQ(mixcclGather(in, out, 1, mixcclInt32, 0, comm, nullptr), mixcclSuccess)
      << mixcclGetLastError(comm);
  EXPECT_EQ(out[0], 7);
  out[1] = 0;
  ASSERT_EQ(mixcclScatter(in + 1, out + 1, 1, mixcclInt32, 0, comm, nullptr), mixcclSuccess)
      << mixcclGetLastError(comm);
  EXPECT_EQ(out[1], 8);
  EXPECT_EQ(*matched - before, 3);
  dlclose(plugin);  // drops the reference RTLD_NOLOAD took; the loader's stays
  destroyAll(comms);
}

}  // namespace
