// The stand-in runtime behaves as CUDA does where mixccl depends on it: argument checks and
// their codes, device pointers that fault on the host, stream order, host functions, the
// legacy stream's implicit ordering, sticky asynchronous errors, injected faults. CTest runs
// every test in a process of its own (gtest_discover_tests), so the fault plans, read once per
// process, can be set at the start of a test.
#include <cuda_runtime_api.h>
#include <gtest/gtest.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <thread>
#include <vector>

namespace {

struct Gate {
  std::atomic<bool> open{false};
  static void hold(void* arg) {
    auto* g = static_cast<Gate*>(arg);
    while (!g->open.load()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
};

double secondsSince(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace

TEST(StandinRuntime, ArgumentsAreCheckedAsCudaChecksThem) {
  EXPECT_EQ(cudaMalloc(nullptr, 16), cudaErrorInvalidValue);
  int count = 0;
  EXPECT_EQ(cudaGetDeviceCount(&count), cudaSuccess);  // a success leaves the last error alone
  EXPECT_EQ(cudaPeekAtLastError(), cudaErrorInvalidValue);
  EXPECT_EQ(cudaGetLastError(), cudaErrorInvalidValue);
  EXPECT_EQ(cudaGetLastError(), cudaSuccess);  // taken and reset
  void* d = nullptr;
  ASSERT_EQ(cudaMalloc(&d, 256), cudaSuccess);
  std::vector<char> host(512);
  EXPECT_EQ(cudaFree(host.data()), cudaErrorInvalidValue);
  EXPECT_EQ(cudaFree(static_cast<char*>(d) + 8), cudaErrorInvalidValue);  // not the start
  EXPECT_EQ(cudaStreamDestroy(reinterpret_cast<cudaStream_t>(host.data())), cudaErrorInvalidResourceHandle);
  EXPECT_EQ(cudaEventRecord(reinterpret_cast<cudaEvent_t>(host.data()), nullptr), cudaErrorInvalidResourceHandle);
  EXPECT_EQ(cudaSetDevice(1), cudaErrorInvalidDevice);
  // The copy kind must describe the pointers, and the range must stay inside the allocation.
  EXPECT_EQ(cudaMemcpy(d, host.data(), 64, cudaMemcpyDeviceToHost), cudaErrorInvalidValue);
  EXPECT_EQ(cudaMemcpy(host.data(), host.data() + 64, 64, cudaMemcpyHostToDevice), cudaErrorInvalidValue);
  EXPECT_EQ(cudaMemcpy(d, host.data(), 257, cudaMemcpyHostToDevice), cudaErrorInvalidValue);
  EXPECT_EQ(cudaMemcpy(d, host.data(), 64, static_cast<cudaMemcpyKind>(9)), cudaErrorInvalidMemcpyDirection);
  EXPECT_EQ(cudaStreamCreateWithFlags(nullptr, 0), cudaErrorInvalidValue);
  cudaStream_t s = nullptr;
  EXPECT_EQ(cudaStreamCreateWithFlags(&s, 4), cudaErrorInvalidValue);
  EXPECT_EQ(cudaLaunchHostFunc(nullptr, nullptr, nullptr), cudaErrorInvalidValue);
  char bus[32];
  ASSERT_EQ(cudaDeviceGetPCIBusId(bus, sizeof bus, 0), cudaSuccess);
  EXPECT_STREQ(bus, "0000:e0:00.0");
  EXPECT_STREQ(cudaGetErrorString(cudaErrorInvalidValue), "invalid argument (stand-in runtime)");
  EXPECT_STREQ(cudaGetErrorName(cudaErrorNotReady), "cudaErrorNotReady");
  // cudaMemcpyDefault infers the direction; a round trip through device memory.
  for (size_t i = 0; i < host.size(); ++i) host[i] = static_cast<char>(i);
  std::vector<char> back(256);
  ASSERT_EQ(cudaMemcpy(d, host.data(), 256, cudaMemcpyDefault), cudaSuccess);
  ASSERT_EQ(cudaMemcpy(back.data(), d, 256, cudaMemcpyDeviceToHost), cudaSuccess);
  EXPECT_TRUE(std::equal(back.begin(), back.end(), host.begin()));
  EXPECT_EQ(cudaFree(d), cudaSuccess);
  EXPECT_EQ(cudaFree(d), cudaErrorInvalidValue);  // freed twice
}

TEST(StandinRuntimeDeathTest, DevicePointersFaultOnTheHost) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  void* d = nullptr;
  ASSERT_EQ(cudaMalloc(&d, 4096), cudaSuccess);
  cudaPointerAttributes a{};
  ASSERT_EQ(cudaPointerGetAttributes(&a, d), cudaSuccess);
  EXPECT_EQ(a.type, cudaMemoryTypeDevice);
  EXPECT_DEATH({ std::printf("%d\n", static_cast<volatile char*>(d)[100]); }, "");
}

TEST(StandinRuntime, WorkWaitsForItsStreamAndTheCallReturnsFirst) {
  cudaStream_t s = nullptr;
  ASSERT_EQ(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), cudaSuccess);
  void* d = nullptr;
  void* pinned = nullptr;
  ASSERT_EQ(cudaMalloc(&d, 4), cudaSuccess);
  ASSERT_EQ(cudaMallocHost(&pinned, 4), cudaSuccess);
  *static_cast<int*>(pinned) = 7;
  ASSERT_EQ(cudaMemset(d, 0, 4), cudaSuccess);
  Gate gate;
  cudaEvent_t e = nullptr;
  ASSERT_EQ(cudaEventCreateWithFlags(&e, cudaEventDisableTiming), cudaSuccess);
  EXPECT_EQ(cudaEventQuery(e), cudaSuccess);  // never recorded: complete
  ASSERT_EQ(cudaLaunchHostFunc(s, Gate::hold, &gate), cudaSuccess);
  // Pinned memory: the copy is only enqueued, behind the held host function.
  ASSERT_EQ(cudaMemcpyAsync(d, pinned, 4, cudaMemcpyHostToDevice, s), cudaSuccess);
  ASSERT_EQ(cudaEventRecord(e, s), cudaSuccess);
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  EXPECT_EQ(cudaEventQuery(e), cudaErrorNotReady);
  EXPECT_EQ(cudaStreamQuery(s), cudaErrorNotReady);
  int value = -1;
  ASSERT_EQ(cudaMemcpy(&value, d, 4, cudaMemcpyDeviceToHost), cudaSuccess);  // a non-blocking stream does not hold it
  EXPECT_EQ(value, 0);
  // Another stream that waits for the event waits for the hold too.
  cudaStream_t other = nullptr;
  ASSERT_EQ(cudaStreamCreateWithFlags(&other, cudaStreamNonBlocking), cudaSuccess);
  ASSERT_EQ(cudaStreamWaitEvent(other, e, 0), cudaSuccess);
  ASSERT_EQ(cudaMemcpyAsync(pinned, d, 4, cudaMemcpyDeviceToHost, other), cudaSuccess);
  EXPECT_EQ(cudaStreamQuery(other), cudaErrorNotReady);
  gate.open = true;
  ASSERT_EQ(cudaStreamSynchronize(other), cudaSuccess);
  EXPECT_EQ(*static_cast<int*>(pinned), 7);
  EXPECT_EQ(cudaEventQuery(e), cudaSuccess);
  EXPECT_EQ(cudaStreamDestroy(s), cudaSuccess);
  EXPECT_EQ(cudaStreamDestroy(other), cudaSuccess);
  EXPECT_EQ(cudaEventDestroy(e), cudaSuccess);
  EXPECT_EQ(cudaFreeHost(pinned), cudaSuccess);
  EXPECT_EQ(cudaFree(d), cudaSuccess);
}

TEST(StandinRuntime, PageableCopiesAndTheLegacyStreamWaitAsCudaDoes) {
  cudaStream_t blocking = nullptr;
  ASSERT_EQ(cudaStreamCreate(&blocking), cudaSuccess);
  void* d = nullptr;
  ASSERT_EQ(cudaMalloc(&d, 4), cudaSuccess);
  Gate gate;
  ASSERT_EQ(cudaLaunchHostFunc(blocking, Gate::hold, &gate), cudaSuccess);
  std::thread opener([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    gate.open = true;
  });
  // A copy from pageable memory returns only once done, and the legacy stream (cudaMemcpy)
  // waits for the blocking stream's earlier work: both wait for the hold.
  int v = 5;
  auto t0 = std::chrono::steady_clock::now();
  ASSERT_EQ(cudaMemcpy(d, &v, 4, cudaMemcpyHostToDevice), cudaSuccess);
  EXPECT_GE(secondsSince(t0), 0.15);
  opener.join();
  EXPECT_EQ(cudaStreamDestroy(blocking), cudaSuccess);
  EXPECT_EQ(cudaFree(d), cudaSuccess);
}

TEST(StandinRuntime, HostFunctionsMayNotCallTheRuntime) {
  static cudaError_t seen = cudaSuccess;
  ASSERT_EQ(cudaLaunchHostFunc(nullptr, [](void*) {
              void* p = nullptr;
              seen = cudaMalloc(&p, 16);
            }, nullptr), cudaSuccess);
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  EXPECT_EQ(seen, cudaErrorNotPermitted);
}

TEST(StandinRuntime, InjectedCallFaults) {
  setenv("MIXCCL_STANDIN_CUDA_FAIL", "cudaMalloc=2@2,cudaStreamCreate=999", 1);
  void* d = nullptr;
  EXPECT_EQ(cudaMalloc(&d, 16), cudaSuccess);
  void* e = nullptr;
  EXPECT_EQ(cudaMalloc(&e, 16), cudaErrorMemoryAllocation);
  void* f = nullptr;
  EXPECT_EQ(cudaMalloc(&f, 16), cudaSuccess);
  cudaStream_t s = nullptr;
  EXPECT_EQ(cudaStreamCreate(&s), cudaErrorUnknown);
  EXPECT_EQ(cudaStreamCreate(&s), cudaErrorUnknown);
}

TEST(StandinRuntime, AnAsynchronousFaultPoisonsTheRuntime) {
  setenv("MIXCCL_STANDIN_CUDA_ASYNC_FAIL", "memcpy=700@2", 1);
  cudaStream_t s = nullptr;
  ASSERT_EQ(cudaStreamCreate(&s), cudaSuccess);
  void* d = nullptr;
  void* pinned = nullptr;
  ASSERT_EQ(cudaMalloc(&d, 16), cudaSuccess);
  ASSERT_EQ(cudaMallocHost(&pinned, 16), cudaSuccess);
  EXPECT_EQ(cudaMemcpyAsync(d, pinned, 16, cudaMemcpyHostToDevice, s), cudaSuccess);
  EXPECT_EQ(cudaMemcpyAsync(pinned, d, 16, cudaMemcpyDeviceToHost, s), cudaSuccess);  // fails when it runs
  EXPECT_EQ(cudaStreamSynchronize(s), cudaErrorIllegalAddress);
  // Sticky, as a CUDA context after a fault: every later call answers with it.
  EXPECT_EQ(cudaMalloc(&d, 16), cudaErrorIllegalAddress);
  EXPECT_EQ(cudaGetLastError(), cudaErrorIllegalAddress);
  EXPECT_EQ(cudaGetLastError(), cudaErrorIllegalAddress);
}

TEST(StandinRuntime, AChildForkedAfterTheRuntimeStartedIsRefused) {
  cudaStream_t s = nullptr;
  ASSERT_EQ(cudaStreamCreate(&s), cudaSuccess);  // the runtime's threads exist now
  fflush(nullptr);
  pid_t child = fork();
  if (child == 0) {
    void* d = nullptr;
    _exit(cudaMalloc(&d, 16) == cudaErrorInitializationError ? 0 : 1);
  }
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << status;
  void* d = nullptr;
  EXPECT_EQ(cudaMalloc(&d, 16), cudaSuccess);  // the parent is unaffected
}
