#include "ranks_shrink.h"

#include <signal.h>
#include <time.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

namespace ranks_test {
namespace {

std::string inspect(mixcclComm_t comm, const char* key) {
  char value[256] = "";
  if (mixcclCommInspect(comm, key, value, sizeof value) != mixcclSuccess) return std::string("?") + key;
  return value;
}

// AllReduce of count floats, rank r giving r + 1 in every element (small integers: exact in
// fp32 in any order of terms); 0 when every element is the sum over the ranks.
long exactAllReduce(mixcclComm_t comm, RankBuffers& b, int rank, int nranks, size_t count, const char* when) {
  std::vector<float> mine(count, static_cast<float>(rank + 1)), got(count);
  void* buf = b.alloc(count * sizeof(float));
  b.write(buf, mine.data(), count * sizeof(float));
  const mixcclResult_t r = mixcclAllReduce(buf, buf, count, mixcclFloat32, mixcclSum, comm, b.stream());
  if (r == mixcclSuccess) b.read(got.data(), buf, count * sizeof(float));
  b.release(buf);
  const float want = static_cast<float>(nranks * (nranks + 1) / 2);
  size_t wrong = 0;
  for (float v : got) wrong += v != want;
  if (r != mixcclSuccess || wrong) {
    std::fprintf(stderr, "rank %d: AllReduce %s: %s\n", rank, when,
                 r != mixcclSuccess ? mixcclGetLastError(comm) : (std::to_string(wrong) + " wrong").c_str());
    return 1;
  }
  return 0;
}

double secondsNow() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec + ts.tv_nsec * 1e-9;
}

// Waits for the work on the rank's stream the way NCCL's users do: an event recorded after it,
// polled, and mixcclCommGetAsyncError asked meanwhile. Work a native library accepted is not
// released when a peer dies (the library may never notice); the application hears of the
// failure here and aborts (the shrink below does, with MIXCCL_SHRINK_ABORT).
mixcclResult_t waitOrAsyncError(mixcclComm_t comm, RankBuffers& b) {
  const mixcclAdaptor_v2_t* t = b.adaptor();
  void* event = nullptr;
  if (t && !b.check(t->eventCreate(&event), "eventCreate")) return mixcclInternalError;
  if (t && !b.check(t->eventRecord(event, b.stream()), "eventRecord")) return mixcclInternalError;
  mixcclResult_t async = mixcclSuccess;
  for (int done = t ? 0 : 1;;) {
    if (t && !b.check(t->eventQuery(event, &done), "eventQuery")) break;
    if (mixcclCommGetAsyncError(comm, &async) != mixcclSuccess) async = mixcclInternalError;
    if (done || (async != mixcclSuccess && async != mixcclInProgress)) break;
    usleep(1000);
  }
  // The event stays pending while the native work waits: it goes with the stream's work.
  if (t && async == mixcclSuccess) b.check(t->eventDestroy(event), "eventDestroy");
  return async;
}

}  // namespace

long runShrink(mixcclComm_t comm, RankBuffers& b, int rank, int nranks) {
  const int victim = shrinkVictim(nranks);
  // Every rank has joined before anyone is lost (a loss inside init fails init instead).
  long failures = exactAllReduce(comm, b, rank, nranks, 1000, "before the loss");
  if (failures) return failures;
  if (rank == victim) {
    // The others are inside the next AllReduce by then, waiting for this rank.
    usleep(300 * 1000);
    std::fflush(stdout);
    kill(getpid(), SIGKILL);
  }
  const double start = secondsNow();
  const size_t count = 1 << 20;
  void* buf = b.alloc(count * sizeof(float));
  mixcclResult_t r = mixcclAllReduce(buf, buf, count, mixcclFloat32, mixcclSum, comm, b.stream());
  if (r == mixcclSuccess) r = waitOrAsyncError(comm, b);
  const double failedAt = secondsNow();
  const std::string message = r != mixcclSuccess ? mixcclGetLastError(comm) : "";
  const std::string named = "rank " + std::to_string(victim) + " (";
  const bool namesVictim = message.find(named) != std::string::npos;
  std::printf("rank %d: AllReduce with rank %d killed: %s (%d)%s (after %.2f s)\n", rank, victim,
              mixcclGetErrorString(r), static_cast<int>(r), namesVictim ? ", the error names it" : "",
              failedAt - start);
  // Most survivors hear of the victim itself; one may instead hear first of another survivor's
  // abort (its shrink below aborts the native communicator, which the library reports as a
  // remote failure). Either way the call failed as a remote error and the survivors shrink.
  const bool nativeAbort = message.find("aborted the communicator") != std::string::npos;
  if (r != mixcclRemoteError || (!namesVictim && !nativeAbort)) {
    std::fprintf(stderr, "rank %d: expected mixcclRemoteError naming rank %d or a peer's abort, got: %s\n",
                 rank, victim, message.c_str());
    return failures + 1;
  }
  const std::string domainsBefore = inspect(comm, "domains");
  const int exclude[] = {victim};
  mixcclComm_t next = nullptr;
  r = mixcclCommShrink(comm, exclude, 1, &next, nullptr, MIXCCL_SHRINK_ABORT);
  if (r != mixcclSuccess) {
    std::fprintf(stderr, "rank %d: mixcclCommShrink: %s\n", rank, mixcclGetLastError(comm));
    return failures + 1;
  }
  const double shrunkAt = secondsNow();
  // Freeing device memory waits for the device's work, as cudaFree does: only once the abort
  // has released the stream.
  b.release(buf);
  int newRank = -1, newCount = -1;
  mixcclCommUserRank(next, &newRank);
  mixcclCommCount(next, &newCount);
  if (newRank != rank || newCount != nranks - 1) {
    std::fprintf(stderr, "rank %d: shrunk to rank %d of %d\n", rank, newRank, newCount);
    ++failures;
  }
  // A small and a large AllReduce: the tree and ring paths where the survivors span domains,
  // the native library's where they are one nccl domain.
  failures += exactAllReduce(next, b, newRank, newCount, 1000, "after the shrink (small)");
  failures += exactAllReduce(next, b, newRank, newCount, 1 << 18, "after the shrink (large)");
  std::printf("rank %d: shrunk to rank %d of %d in %.2f s, domains %s -> %s, allreduce.4096 %s, AllReduce "
              "exact: %s\n", rank, newRank, newCount, shrunkAt - failedAt, domainsBefore.c_str(),
              inspect(next, "domains").c_str(), inspect(next, "algo.allreduce.4096").c_str(), failures ? "no" : "yes");
  if (mixcclCommDestroy(next) != mixcclSuccess) {
    std::fprintf(stderr, "rank %d: destroying the shrunk communicator: %s\n", rank, mixcclGetLastError(nullptr));
    ++failures;
  }
  return failures;
}

}  // namespace ranks_test
