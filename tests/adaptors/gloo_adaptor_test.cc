// The gloo plugin in 3 forked processes: loaded through the loader, a communicator formed over
// the test's allGather, every collective checked (coll_checks.cc). Exit 0 = pass.
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <thread>

#include "adaptors/adaptor_loader.h"
#include "coll_checks.h"
#include "core/error.h"
#include "fork_ranks.h"

namespace {

// --abort: rank 0 blocks in a receive nobody sends; commAbort from another thread must end it
// with an error well before the timeout.
int abortCheck(const mixcclAdaptor_v1_t* t, void* comm, int rank) {
  if (rank != 0) {
    std::this_thread::sleep_for(std::chrono::seconds(3));
    return t->commDestroy(comm) == mixcclSuccess ? 0 : 1;
  }
  std::thread aborter([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    t->commAbort(comm);
  });
  float x = 0;
  auto start = std::chrono::steady_clock::now();
  mixcclResult_t rc = t->recv(&x, 1, mixcclFloat32, 1, comm, nullptr);
  double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  aborter.join();
  std::printf("rank 0: recv after abort returned %d after %.2f s: %s\n", rc, s, t->lastError());
  return (rc != mixcclSuccess && s < 2.5) ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  const int nranks = argc > 1 ? std::atoi(argv[1]) : 3;
  const bool abortMode = argc > 2 && std::strcmp(argv[2], "--abort") == 0;
  int problems = adaptor_test::runForkedRanks(
      nranks, 100, [abortMode](int rank, int n, const mixcclAdaptorServices_t& services) {
        const mixccl::Adaptor* a = nullptr;
        if (mixccl::loadAdaptor("gloo", &a) != mixcclSuccess) {
          std::fprintf(stderr, "rank %d: %s\n", rank, mixccl::threadLastError().c_str());
          return 1;
        }
        const mixcclAdaptor_v1_t* t = a->table;
        char id[MIXCCL_ADAPTOR_UNIQUE_ID_BYTES];
        t->getUniqueId(id);
        void* comm = nullptr;
        if (t->commInitRank(&comm, n, id, rank, 0, &services) != mixcclSuccess) {
          std::fprintf(stderr, "rank %d: commInitRank: %s\n", rank, t->lastError());
          return 1;
        }
        if (abortMode) return abortCheck(t, comm, rank);
        int failures = adaptor_test::runCollectiveChecks(t, comm, rank, n);
        if (t->commDestroy(comm) != mixcclSuccess) ++failures;
        return failures;
      });
  std::printf("%s\n", problems == 0 ? "gloo adaptor: all checks passed" : "gloo adaptor: FAILED");
  return problems == 0 ? 0 : 1;
}
