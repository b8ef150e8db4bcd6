#include "ranks_errors.h"

#include <nccl.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include <cstdlib>

namespace ranks_test {
namespace {

// The stand-in reports the NCCL version of the header it was built against.
const std::string kVersion = std::to_string(NCCL_VERSION_CODE);
const std::string kAsyncFaults = "MIXCCL_STANDIN_NCCL_ASYNC_FAIL=ncclAllReduce=6@2";
const std::string kLibraryFaults = "MIXCCL_STANDIN_NCCL_FAIL=ncclAllReduce=1@2,ncclBroadcast=2@1";

long expectCall(int rank, const char* what, mixcclResult_t got, const char* message, mixcclResult_t want,
                const std::string& wantMessage) {
  const bool ok = got == want && (want == mixcclSuccess || wantMessage == message);
  std::printf("rank %d: %s: %s (%d)%s%s\n", rank, what, mixcclGetErrorString(got), static_cast<int>(got),
              got == mixcclSuccess ? "" : ": ", got == mixcclSuccess ? "" : message);
  if (!ok)
    std::fprintf(stderr, "rank %d: %s: expected %s (%d)%s%s\n", rank, what, mixcclGetErrorString(want),
                 static_cast<int>(want), want == mixcclSuccess ? "" : " with message: ", wantMessage.c_str());
  return ok ? 0 : 1;
}

// A small AllReduce whose result is checked: the communicator still works.
long allReduceWorks(mixcclComm_t comm, RankBuffers& b, int rank, int nranks, const char* when) {
  const size_t count = 1000;
  std::vector<float> ones(count, 1.0f), got(count);
  void* buf = b.alloc(count * sizeof(float));
  b.write(buf, ones.data(), count * sizeof(float));
  mixcclResult_t r = mixcclAllReduce(buf, buf, count, mixcclFloat32, mixcclSum, comm, b.stream());
  b.read(got.data(), buf, count * sizeof(float));
  b.release(buf);
  const bool ok = r == mixcclSuccess && got == std::vector<float>(count, static_cast<float>(nranks));
  if (!ok) std::fprintf(stderr, "rank %d: AllReduce %s: %s\n", rank, when, r ? mixcclGetLastError(comm) : "wrong result");
  return ok ? 0 : 1;
}

long libraryErrors(mixcclComm_t comm, RankBuffers& b, int rank, int nranks) {
  long failures = allReduceWorks(comm, b, rank, nranks, "before the injected failures");
  void* buf = b.alloc(64 * sizeof(float));
  mixcclResult_t r = mixcclAllReduce(buf, buf, 64, mixcclFloat32, mixcclSum, comm, b.stream());
  failures += expectCall(rank, "AllReduce (ncclAllReduce fails)", r, mixcclGetLastError(comm), mixcclUnhandledDeviceError,
                         "nccl adaptor: native AllReduce failed: nccl adaptor: ncclAllReduce: unhandled CUDA error (stand-in NCCL) "
                         "(NCCL " + kVersion + ", code 1; last error: ncclAllReduce: failure injected by " + kLibraryFaults + ")");
  r = mixcclBroadcast(buf, buf, 64, mixcclFloat32, 0, comm, b.stream());
  failures += expectCall(rank, "Broadcast (ncclBroadcast fails)", r, mixcclGetLastError(comm), mixcclSystemError,
                         "nccl adaptor: native Broadcast failed: nccl adaptor: ncclBroadcast: system error (stand-in NCCL) "
                         "(NCCL " + kVersion + ", code 2; last error: ncclBroadcast: failure injected by " + kLibraryFaults + ")");
  b.release(buf);
  return failures + allReduceWorks(comm, b, rank, nranks, "after the injected failures");
}

long asyncError(mixcclComm_t comm, RankBuffers& b, int rank, int nranks) {
  long failures = allReduceWorks(comm, b, rank, nranks, "before the stream fault");
  const mixcclAdaptor_v2_t* t = b.adaptor();
  void* buf = b.alloc(64 * sizeof(float));
  mixcclResult_t r = mixcclAllReduce(buf, buf, 64, mixcclFloat32, mixcclSum, comm, b.stream());
  failures += expectCall(rank, "AllReduce (its stream operation will fail)", r, mixcclGetLastError(comm), mixcclSuccess, "");
  r = t->streamSynchronize(b.stream());
  const std::string poisoned = "CUDA error 719: stream operation failed (stand-in runtime)";
  failures += expectCall(rank, "streamSynchronize", r, t->lastError(), mixcclUnhandledDeviceError,
                         "nccl adaptor: cudaStreamSynchronize: " + poisoned);
  // Like a CUDA context after a fault, the runtime answers every later call with the error.
  r = t->memFree(buf);
  failures += expectCall(rank, "memFree after the fault", r, t->lastError(), mixcclUnhandledDeviceError,
                         "nccl adaptor: cudaFree: " + poisoned);
  return failures;
}

long nativeAsyncError(mixcclComm_t comm, RankBuffers& b, int rank, int nranks) {
  long failures = allReduceWorks(comm, b, rank, nranks, "before the library's asynchronous failure");
  void* buf = b.alloc(64 * sizeof(float));
  // The first rank to find its library's error fails the communicator and tells the others,
  // who may hear of it (or of that rank ending) before they call or ask their own library:
  // each step then names a peer's failure (mixcclRemoteError). CTest's pattern requires one
  // rank to have reported its own library's message.
  auto fromPeer = [](const std::string& m) {
    return m.find("failed (reported by rank ") != std::string::npos ||
           m.find(") failed: it closed the connection") != std::string::npos;
  };
  mixcclResult_t r = mixcclAllReduce(buf, buf, 64, mixcclFloat32, mixcclSum, comm, b.stream());
  std::string message = r ? mixcclGetLastError(comm) : "";
  failures += expectCall(rank, "AllReduce (it will fail on its stream)", r, message.c_str(),
                         fromPeer(message) ? mixcclRemoteError : mixcclSuccess, message);
  b.check(b.adaptor()->streamSynchronize(b.stream()), "streamSynchronize");  // the runtime is fine
  mixcclResult_t async = mixcclSuccess;
  mixcclCommGetAsyncError(comm, &async);
  const std::string why = "nccl adaptor: native work failed: nccl adaptor: asynchronous error (ncclCommGetAsyncError): "
                          "remote process failed or aborted (stand-in NCCL) (NCCL " + kVersion +
                          ", code 6; last error: rank " + std::to_string(rank) +
                          ": ncclAllReduce failed on its stream: failure injected by " + kAsyncFaults + ")";
  message = mixcclGetLastError(comm);
  failures += expectCall(rank, "mixcclCommGetAsyncError", async, message.c_str(), mixcclRemoteError,
                         fromPeer(message) ? message : why);
  // The communicator has failed: later calls say so.
  r = mixcclAllReduce(buf, buf, 64, mixcclFloat32, mixcclSum, comm, b.stream());
  if (r != mixcclRemoteError) {
    std::fprintf(stderr, "rank %d: AllReduce after the failure gave %d\n", rank, static_cast<int>(r));
    ++failures;
  }
  b.release(buf);
  return failures;
}

long runtimeErrors(mixcclComm_t comm, RankBuffers& b, int rank, int nranks) {
  if (!b.device()) {
    // A good AllReduce, then one that meets the device rank whose call failed. The host ranks
    // learn of the failure from its notice or from its connection closing, whichever comes
    // first, and may learn it while they still finish the good call (a failure ends every
    // call of the communicator): mixcclRemoteError naming rank 0 either way (host names and
    // pids vary).
    std::vector<float> data(1000, 1.0f);
    mixcclResult_t r = mixcclAllReduce(data.data(), data.data(), data.size(), mixcclFloat32, mixcclSum, comm, nullptr);
    long failures = 0;
    if (r == mixcclSuccess) {
      if (data != std::vector<float>(data.size(), static_cast<float>(nranks))) ++failures;
      r = mixcclAllReduce(data.data(), data.data(), data.size(), mixcclFloat32, mixcclSum, comm, nullptr);
    }
    const std::string message = r ? mixcclGetLastError(comm) : "";
    const std::string head = "rank " + std::to_string(rank) + ": ";
    const size_t named = message.find("rank 0 (");
    const bool ok = r == mixcclRemoteError && message.compare(0, head.size(), head) == 0 &&
                    named != std::string::npos && message.find(") failed", named) != std::string::npos;
    std::printf("rank %d: AllReduce beside the failed device rank: %s (%d): %s\n", rank, mixcclGetErrorString(r),
                static_cast<int>(r), message.c_str());
    if (!ok) std::fprintf(stderr, "rank %d: expected mixcclRemoteError naming rank 0\n", rank);
    return failures + (ok ? 0 : 1);
  }
  // First a good AllReduce: every rank has finished joining before rank 0 fails (a failure
  // notice that reached a rank still in mixcclCommInitRank would fail its init instead).
  long failures = allReduceWorks(comm, b, rank, nranks, "before the injected failures");
  const mixcclAdaptor_v2_t* t = b.adaptor();
  void* p = nullptr;
  mixcclResult_t r = t->memAlloc(&p, 1 << 20);
  failures += expectCall(rank, "memAlloc (cudaMalloc fails)", r, t->lastError(), mixcclUnhandledDeviceError,
                             "nccl adaptor: cudaMalloc: CUDA error 2: out of memory (stand-in runtime)");
  std::vector<float> ones(1000, 1.0f);
  void* buf = b.alloc(ones.size() * sizeof(float));
  b.write(buf, ones.data(), ones.size() * sizeof(float));
  r = mixcclAllReduce(buf, buf, ones.size(), mixcclFloat32, mixcclSum, comm, b.stream());
  const std::string why = "nccl adaptor: native memcpy before the job failed: nccl adaptor: cudaMemcpyAsync: "
                          "CUDA error 1: invalid argument (stand-in runtime)";
  failures += expectCall(rank, "AllReduce (its staging copy fails)", r, mixcclGetLastError(comm),
                         mixcclUnhandledDeviceError, why);
  // Its peers were already inside the collective: the communicator has failed, as NCCL's
  // asynchronous errors fail it.
  mixcclResult_t async = mixcclSuccess;
  r = mixcclCommGetAsyncError(comm, &async);
  failures += expectCall(rank, "mixcclCommGetAsyncError", async, mixcclGetLastError(comm), mixcclUnhandledDeviceError,
                         why);
  b.release(buf);
  return failures;
}

void runtimeFaultsOnRankZero(int rank) {
  // Rank 0's 2nd cudaMalloc fails (the 1st is the good AllReduce's buffer), and its 6th
  // cudaMemcpyAsync: the good AllReduce makes 4 (the test's write, the staging copies out and
  // back, the test's read), the next the test's write, then AllReduce's staging copy out.
  if (rank == 0) setenv("MIXCCL_STANDIN_CUDA_FAIL", "cudaMalloc=2@2,cudaMemcpyAsync=1@6", 1);
}

}  // namespace

bool knownSuite(const std::string& s) {
  return s == "matrix" || s == "order" || s == "errors-library" || s == "errors-async" || s == "errors-runtime" ||
         s == "errors-native-async";
}

RankSetup prepareErrorCase(const std::string& suite) {
  if (suite == "errors-library") putenv(const_cast<char*>(kLibraryFaults.c_str()));
  if (suite == "errors-async") setenv("MIXCCL_STANDIN_CUDA_ASYNC_FAIL", "nccl=719@2", 1);
  if (suite == "errors-native-async") putenv(const_cast<char*>(kAsyncFaults.c_str()));
  return suite == "errors-runtime" ? runtimeFaultsOnRankZero : nullptr;
}

long runErrorCase(const std::string& suite, mixcclComm_t comm, RankBuffers& b, int rank, int nranks) {
  if (suite == "errors-library") return libraryErrors(comm, b, rank, nranks);
  if (suite == "errors-async") return asyncError(comm, b, rank, nranks);
  if (suite == "errors-native-async") return nativeAsyncError(comm, b, rank, nranks);
  return runtimeErrors(comm, b, rank, nranks);
}

}  // namespace ranks_test
