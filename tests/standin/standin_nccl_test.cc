// The stand-in NCCL-API library's own behaviour across processes: NCCL's argument checks,
// calls that do not match across ranks, a Send/Recv size mismatch, abort and timeout ending a
// peer's wait, and the small floats' rounding. Each two-rank test forks before either process
// touches the runtime (its stream threads do not survive a fork).
#include <cuda_runtime_api.h>
#include <gtest/gtest.h>
#include <nccl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <thread>
#include <cmath>
#include <cstring>
#include <functional>
#include <string>

#include "nccl_reduce.h"

namespace {

// Runs body(rank, id) as rank 0 here and rank 1 in a child; the child's failures come back
// as its exit status. Returns the child's status.
int twoRanks(const std::function<void(int, const ncclUniqueId&)>& body) {
  ncclUniqueId id;
  EXPECT_EQ(ncclGetUniqueId(&id), ncclSuccess);
  fflush(stdout);
  pid_t child = fork();
  if (child == 0) {
    alarm(30);
    body(1, id);
    _exit(::testing::Test::HasFailure() ? 1 : 0);
  }
  body(0, id);
  int status = 0;
  waitpid(child, &status, 0);
  return status;
}

ncclComm_t join(int rank, int nranks, const ncclUniqueId& id) {
  ncclComm_t c = nullptr;
  EXPECT_EQ(ncclCommInitRank(&c, nranks, id, rank), ncclSuccess) << ncclGetLastError(nullptr);
  return c;
}

double seconds(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace

TEST(StandinNccl, ArgumentsAreCheckedAsNcclChecksThem) {
  ncclUniqueId id;
  ASSERT_EQ(ncclGetUniqueId(&id), ncclSuccess);
  ncclComm_t c = join(0, 1, id);
  void* d = nullptr;
  ASSERT_EQ(cudaMalloc(&d, 64), cudaSuccess);
  float host[16] = {};
  EXPECT_EQ(ncclAllReduce(d, d, 16, static_cast<ncclDataType_t>(12), ncclSum, c, nullptr), ncclInvalidArgument);
  EXPECT_STREQ(ncclGetLastError(c), "ncclAllReduce: invalid datatype 12");
  EXPECT_EQ(ncclAllReduce(d, d, 16, ncclFloat32, static_cast<ncclRedOp_t>(5), c, nullptr), ncclInvalidArgument);
  EXPECT_STREQ(ncclGetLastError(c), "ncclAllReduce: invalid reduction op 5");
  EXPECT_EQ(ncclBroadcast(d, d, 16, ncclFloat32, 1, c, nullptr), ncclInvalidArgument);
  EXPECT_STREQ(ncclGetLastError(c), "ncclBroadcast: root 1 is not a rank of 1");
  // Host memory is not device memory; a range past the allocation is not either.
  EXPECT_EQ(ncclAllReduce(host, d, 16, ncclFloat32, ncclSum, c, nullptr), ncclInvalidArgument);
  EXPECT_EQ(std::string(ncclGetLastError(c)).find("ncclAllReduce: sendbuff 0x"), 0u) << ncclGetLastError(c);
  EXPECT_EQ(ncclAllReduce(d, d, 17, ncclFloat32, ncclSum, c, nullptr), ncclInvalidArgument);
  EXPECT_EQ(ncclGroupEnd(), ncclInvalidUsage);
  ncclComm_t bad = nullptr;
  EXPECT_EQ(ncclCommInitRank(&bad, 2, id, 2), ncclInvalidArgument);
  ncclUniqueId bogus{};
  ncclComm_t other = nullptr;
  EXPECT_EQ(ncclCommInitRank(&other, 1, bogus, 0), ncclInvalidArgument);
  EXPECT_STREQ(ncclGetLastError(nullptr), "ncclCommInitRank: not a unique id of the stand-in NCCL (ncclGetUniqueId)");
  // The communicator still works.
  EXPECT_EQ(ncclAllReduce(d, d, 16, ncclFloat32, ncclSum, c, nullptr), ncclSuccess);
  EXPECT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  ncclResult_t async = ncclInternalError;
  EXPECT_EQ(ncclCommGetAsyncError(c, &async), ncclSuccess);
  EXPECT_EQ(async, ncclSuccess);
  EXPECT_EQ(ncclCommDestroy(c), ncclSuccess);
  EXPECT_EQ(ncclCommDestroy(c), ncclInvalidArgument);
}

TEST(StandinNccl, RanksCallingDifferentCollectivesAllFail) {
  int child = twoRanks([](int rank, const ncclUniqueId& id) {
    ncclComm_t c = join(rank, 2, id);
    void* d = nullptr;
    ASSERT_EQ(cudaMalloc(&d, 64), cudaSuccess);
    ASSERT_EQ(ncclAllReduce(d, d, rank == 0 ? 10 : 11, ncclFloat32, ncclSum, c, nullptr), ncclSuccess);
    ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
    ncclResult_t async = ncclSuccess;
    ASSERT_EQ(ncclCommGetAsyncError(c, &async), ncclSuccess);
    EXPECT_EQ(async, ncclInvalidUsage);
    const std::string mine = std::string("ncclAllReduce(count ") + (rank == 0 ? "10" : "11");
    const std::string theirs = std::string("ncclAllReduce(count ") + (rank == 0 ? "11" : "10");
    EXPECT_EQ(std::string(ncclGetLastError(c)),
              "rank " + std::to_string(rank) + " called " + mine + ", datatype 7, op 0, root 0) as call 1, rank " +
                  std::to_string(1 - rank) + " called " + theirs + ", datatype 7, op 0, root 0) as call 1");
    // A failed communicator refuses further calls with its error.
    EXPECT_EQ(ncclAllReduce(d, d, 1, ncclFloat32, ncclSum, c, nullptr), ncclInvalidUsage);
    ncclCommAbort(c);
  });
  EXPECT_EQ(child, 0);
}

TEST(StandinNccl, ASendAndARecvOfDifferentSizesFail) {
  int child = twoRanks([](int rank, const ncclUniqueId& id) {
    ncclComm_t c = join(rank, 2, id);
    void* d = nullptr;
    ASSERT_EQ(cudaMalloc(&d, 64), cudaSuccess);
    if (rank == 0) ASSERT_EQ(ncclSend(d, 10, ncclFloat32, 1, c, nullptr), ncclSuccess);
    else ASSERT_EQ(ncclRecv(d, 12, ncclFloat32, 0, c, nullptr), ncclSuccess);
    ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
    if (rank == 1) {
      ncclResult_t async = ncclSuccess;
      ASSERT_EQ(ncclCommGetAsyncError(c, &async), ncclSuccess);
      EXPECT_EQ(async, ncclInvalidUsage);
      EXPECT_STREQ(ncclGetLastError(c), "rank 1: a Recv of 48 bytes from rank 0 met a Send of 40 bytes");
    }
    ncclCommAbort(c);
  });
  EXPECT_EQ(child, 0);
}

TEST(StandinNccl, AbortEndsAPeersWaitAtOnce) {
  int child = twoRanks([](int rank, const ncclUniqueId& id) {
    ncclComm_t c = join(rank, 2, id);
    void* d = nullptr;
    ASSERT_EQ(cudaMalloc(&d, 64), cudaSuccess);
    if (rank == 0) {
      std::this_thread::sleep_for(std::chrono::milliseconds(200));
      EXPECT_EQ(ncclCommAbort(c), ncclSuccess);
      return;
    }
    auto t0 = std::chrono::steady_clock::now();
    ASSERT_EQ(ncclAllReduce(d, d, 16, ncclFloat32, ncclSum, c, nullptr), ncclSuccess);
    ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
    EXPECT_LT(seconds(t0), 2.0);  // the timeout is 60 s: the abort ended it
    ncclResult_t async = ncclSuccess;
    ASSERT_EQ(ncclCommGetAsyncError(c, &async), ncclSuccess);
    EXPECT_EQ(async, ncclRemoteError);
    EXPECT_STREQ(ncclGetLastError(c), "rank 0 failed: rank 0 aborted the communicator");
    ncclCommDestroy(c);
  });
  EXPECT_EQ(child, 0);
}

TEST(StandinNccl, AWaitForAnAbsentPeerEndsAtTheTimeout) {
  setenv("MIXCCL_STANDIN_NCCL_TIMEOUT_S", "1", 1);
  ncclUniqueId id;
  ASSERT_EQ(ncclGetUniqueId(&id), ncclSuccess);
  ncclComm_t c = nullptr;
  auto t0 = std::chrono::steady_clock::now();
  EXPECT_EQ(ncclCommInitRank(&c, 2, id, 0), ncclSystemError);
  EXPECT_LT(seconds(t0), 3.0);
  EXPECT_STREQ(ncclGetLastError(nullptr), "ncclCommInitRank: only 1 of 2 ranks joined within 1 s");
}

TEST(StandinNccl, SmallFloatsRoundToNearestEven) {
  using standin::floatToSmallFloat;
  using standin::smallFloatToFloat;
  // Halfway cases go to the even neighbour; just above goes up.
  EXPECT_EQ(floatToSmallFloat(1.0f + std::ldexp(1.0f, -11), ncclFloat16), 0x3c00u);
  EXPECT_EQ(floatToSmallFloat(1.0f + 3 * std::ldexp(1.0f, -11), ncclFloat16), 0x3c02u);
  EXPECT_EQ(floatToSmallFloat(std::ldexp(1.0f, -24), ncclFloat16), 0x0001u);  // smallest subnormal
  EXPECT_EQ(floatToSmallFloat(std::ldexp(1.0f, -25), ncclFloat16), 0x0000u);  // a tie, to even
  EXPECT_EQ(floatToSmallFloat(70000.0f, ncclFloat16), 0x7c00u);               // overflow: infinity
  EXPECT_EQ(floatToSmallFloat(1.0f + std::ldexp(1.0f, -8), ncclBfloat16), 0x3f80u);
  EXPECT_EQ(floatToSmallFloat(500.0f, ncclFloat8e4m3), 0x7eu);  // e4m3 saturates at 448
  EXPECT_EQ(floatToSmallFloat(-448.0f, ncclFloat8e4m3), 0xfeu);
  EXPECT_EQ(floatToSmallFloat(70000.0f, ncclFloat8e5m2), 0x7cu);  // e5m2 has infinity
  // Every finite code of every small format survives a round trip.
  const ncclDataType_t types[] = {ncclFloat16, ncclBfloat16, ncclFloat8e4m3, ncclFloat8e5m2};
  for (ncclDataType_t t : types) {
    const unsigned codes = standin::typeBytes(t) == 2 ? 65536 : 256;
    for (unsigned c = 0; c < codes; ++c) {
      const float v = smallFloatToFloat(c, t);
      if (std::isnan(v)) continue;
      ASSERT_EQ(floatToSmallFloat(v, t), c) << "type " << t << " code " << c;
    }
  }
}

TEST(StandinNccl, MemoryAndRegistration) {
  ncclUniqueId id;
  ASSERT_EQ(ncclGetUniqueId(&id), ncclSuccess);
  ncclComm_t c = join(0, 1, id);
  void* d = nullptr;
  ASSERT_EQ(ncclMemAlloc(&d, 1024), ncclSuccess);
  cudaPointerAttributes a{};
  ASSERT_EQ(cudaPointerGetAttributes(&a, d), cudaSuccess);
  EXPECT_EQ(a.type, cudaMemoryTypeDevice);
  void* handle = nullptr;
  ASSERT_EQ(ncclCommRegister(c, d, 1024, &handle), ncclSuccess);
  float host[4];
  void* bad = nullptr;
  EXPECT_EQ(ncclCommRegister(c, host, sizeof host, &bad), ncclInvalidArgument);
  EXPECT_EQ(ncclCommRegister(c, d, 1025, &bad), ncclInvalidArgument);
  EXPECT_EQ(ncclCommDeregister(c, handle), ncclSuccess);
  EXPECT_EQ(ncclCommDeregister(c, handle), ncclInvalidArgument);  // twice
  EXPECT_EQ(ncclMemFree(d), ncclSuccess);
  EXPECT_EQ(ncclCommDestroy(c), ncclSuccess);
}
