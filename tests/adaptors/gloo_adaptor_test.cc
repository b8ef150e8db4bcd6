// The gloo plugin in 3 forked processes: loaded through the loader, a communicator formed over
// the test's allGather, every collective checked (coll_checks.cc). Exit 0 = pass.
#include <cstdio>
#include <cstdlib>

#include "adaptors/adaptor_loader.h"
#include "coll_checks.h"
#include "core/error.h"
#include "fork_ranks.h"

int main(int argc, char** argv) {
  const int nranks = argc > 1 ? std::atoi(argv[1]) : 3;
  int problems = adaptor_test::runForkedRanks(
      nranks, 100, [](int rank, int n, const mixcclAdaptorServices_t& services) {
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
        int failures = adaptor_test::runCollectiveChecks(t, comm, rank, n);
        if (t->commDestroy(comm) != mixcclSuccess) ++failures;
        return failures;
      });
  std::printf("%s\n", problems == 0 ? "gloo adaptor: all checks passed" : "gloo adaptor: FAILED");
  return problems == 0 ? 0 : 1;
}
