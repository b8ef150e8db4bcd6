// The mpi plugin under mpirun: the plugin's init() initialises MPI (the test does not), the
// services allGather is MPI_Allgather, and every collective is checked on two adaptor
// communicators: the whole world, and the first nranks-1 processes while the last one takes no
// part (it stands for a rank on another adaptor; MPI_Comm_create_group must not need it).
// Exit 0 = pass.
#define OMPI_SKIP_MPICXX 1
#include <mpi.h>

#include <cstdio>

#include "adaptors/adaptor_loader.h"
#include "coll_checks.h"
#include "base/error.h"

namespace {

struct WorldGather {
  MPI_Comm comm;
};

mixcclResult_t worldAllGather(void* ctx, const void* mine, void* all, size_t bytes) {
  auto* g = static_cast<WorldGather*>(ctx);
  int rc = MPI_Allgather(mine, static_cast<int>(bytes), MPI_BYTE, all, static_cast<int>(bytes),
                         MPI_BYTE, g->comm);
  return rc == MPI_SUCCESS ? mixcclSuccess : mixcclSystemError;
}

int runOn(const mixccl::AdaptorTable* t, MPI_Comm members, const char* label) {
  int rank = 0, n = 0;
  MPI_Comm_rank(members, &rank);
  MPI_Comm_size(members, &n);
  WorldGather g{members};
  mixcclAdaptorServices_t services{&g, worldAllGather, adaptor_test::servicesReduce};
  char id[MIXCCL_ADAPTOR_UNIQUE_ID_BYTES];
  t->getUniqueId(id);
  void* comm = nullptr;
  if (t->commInitRank(&comm, n, id, rank, 0, &services) != mixcclSuccess) {
    std::fprintf(stderr, "%s rank %d: commInitRank: %s\n", label, rank, t->lastError());
    return 1;
  }
  int failures = adaptor_test::runCollectiveChecks(t, comm, rank, n).failures();
  if (t->commDestroy(comm) != mixcclSuccess) ++failures;
  if (failures) std::fprintf(stderr, "%s rank %d: %d failure(s)\n", label, rank, failures);
  return failures;
}

}  // namespace

int main() {
  const mixccl::Adaptor* a = nullptr;
  if (mixccl::loadAdaptor("mpi", &a) != mixcclSuccess) {
    std::fprintf(stderr, "%s\n", mixccl::threadLastError().c_str());
    return 1;
  }
  int initialized = 0, worldRank = 0, worldSize = 0;
  MPI_Initialized(&initialized);
  if (!initialized) {
    std::fprintf(stderr, "the plugin's init() did not initialise MPI\n");
    return 1;
  }
  MPI_Comm_rank(MPI_COMM_WORLD, &worldRank);
  MPI_Comm_size(MPI_COMM_WORLD, &worldSize);
  int failures = runOn(a->table, MPI_COMM_WORLD, "world");
  // A communicator of a subset: the last world rank is on "another adaptor" and takes no part.
  if (worldSize >= 3) {
    MPI_Comm subset;
    MPI_Comm_split(MPI_COMM_WORLD, worldRank < worldSize - 1 ? 0 : MPI_UNDEFINED, worldRank,
                   &subset);
    if (subset != MPI_COMM_NULL) {
      failures += runOn(a->table, subset, "subset");
      MPI_Comm_free(&subset);
    }
  }
  int total = 0;
  MPI_Allreduce(&failures, &total, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  if (worldRank == 0)
    std::printf("%s\n", total == 0 ? "mpi adaptor: all checks passed" : "mpi adaptor: FAILED");
  // MPI_Finalize is the plugin's (at exit), since it initialised MPI.
  return total == 0 ? 0 : 1;
}
